#include "json.h"
#include "text/utf8.h"

#include <algorithm>
#include <cstring>

namespace ctorch {
namespace json {
namespace {

[[noreturn]] void error(size_t at, const std::string &what) {
  throw JsonError("invalid JSON at byte " + std::to_string(at) + ": " + what);
}

using ctorch::utf8_len;  // text/utf8.h: the library's one UTF-8 check

void put_utf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  Parser(const char *p, size_t n, Charge charge, void *ctx)
      : p_(reinterpret_cast<const unsigned char *>(p)), n_(n), charge_(charge), ctx_(ctx) {}

  Value document() {
    skip_ws();
    Value v = value(0);
    skip_ws();
    if (i_ != n_) error(i_, "trailing characters after the value");
    return v;
  }

 private:
  const unsigned char *p_;
  size_t n_, i_ = 0;
  Charge charge_;
  void *ctx_;

  void charge(uint64_t bytes) {
    if (charge_) charge_(ctx_, bytes);
  }
  void skip_ws() {
    while (i_ < n_ && (p_[i_] == ' ' || p_[i_] == '\t' || p_[i_] == '\n' || p_[i_] == '\r')) ++i_;
  }
  void expect(const char *word) {
    size_t len = std::strlen(word);
    if (n_ - i_ < len || std::memcmp(p_ + i_, word, len) != 0) error(i_, "unexpected character");
    i_ += len;
  }

  Value value(int depth) {
    if (i_ >= n_) error(i_, "unexpected end of input");
    charge(sizeof(Value));
    Value v;
    switch (p_[i_]) {
      case '{': object(v, depth + 1); break;
      case '[': array(v, depth + 1); break;
      case '"':
        v.kind = Value::String;
        v.text = string();
        break;
      case 't': expect("true"), v.kind = Value::Bool, v.boolean = true; break;
      case 'f': expect("false"), v.kind = Value::Bool; break;
      case 'n': expect("null"); break;
      default:
        if (p_[i_] == '-' || (p_[i_] >= '0' && p_[i_] <= '9')) number(v);
        else error(i_, "unexpected character");
    }
    return v;
  }

  void nest(int depth) {
    if (depth > kMaxDepth) error(i_, "nested more than " + std::to_string(kMaxDepth) + " levels deep");
  }

  void object(Value &v, int depth) {
    nest(depth);
    v.kind = Value::Object;
    ++i_;
    skip_ws();
    if (i_ < n_ && p_[i_] == '}') {
      ++i_;
      return;
    }
    for (;;) {
      skip_ws();
      if (i_ >= n_ || p_[i_] != '"') error(i_, "expected a string key");
      std::string key = string();
      skip_ws();
      if (i_ >= n_ || p_[i_] != ':') error(i_, "expected ':'");
      ++i_;
      skip_ws();
      v.members.emplace_back(std::move(key), value(depth));
      charge(sizeof(v.members.back()));
      skip_ws();
      if (i_ < n_ && p_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < n_ && p_[i_] == '}') {
        ++i_;
        refuse_duplicates(v);
        return;
      }
      error(i_, "expected ',' or '}'");
    }
  }

  // Sorted, not compared pairwise: a header may have millions of keys.
  void refuse_duplicates(const Value &v) {
    if (v.members.size() < 2) return;
    std::vector<const std::string *> keys;
    keys.reserve(v.members.size());
    for (const auto &m : v.members) keys.push_back(&m.first);
    std::sort(keys.begin(), keys.end(), [](const std::string *a, const std::string *b) { return *a < *b; });
    for (size_t k = 1; k < keys.size(); ++k)
      if (*keys[k] == *keys[k - 1]) error(i_ - 1, "duplicate key \"" + *keys[k] + "\" in the object ending here");
  }

  void array(Value &v, int depth) {
    nest(depth);
    v.kind = Value::Array;
    ++i_;
    skip_ws();
    if (i_ < n_ && p_[i_] == ']') {
      ++i_;
      return;
    }
    for (;;) {
      skip_ws();
      v.items.push_back(value(depth));
      skip_ws();
      if (i_ < n_ && p_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < n_ && p_[i_] == ']') {
        ++i_;
        return;
      }
      error(i_, "expected ',' or ']'");
    }
  }

  void number(Value &v) {
    size_t start = i_;
    if (p_[i_] == '-') ++i_;
    auto digits = [&] {
      size_t s = i_;
      while (i_ < n_ && p_[i_] >= '0' && p_[i_] <= '9') ++i_;
      if (i_ == s) error(i_, "expected a digit");
      return i_ - s;
    };
    size_t int_start = i_;
    size_t nd = digits();
    if (nd > 1 && p_[int_start] == '0') error(int_start, "leading zero in a number");
    if (i_ < n_ && p_[i_] == '.') {
      ++i_;
      digits();
    }
    if (i_ < n_ && (p_[i_] == 'e' || p_[i_] == 'E')) {
      ++i_;
      if (i_ < n_ && (p_[i_] == '+' || p_[i_] == '-')) ++i_;
      digits();
    }
    v.kind = Value::Number;
    v.text.assign(reinterpret_cast<const char *>(p_ + start), i_ - start);
    charge(v.text.size());
  }

  uint32_t hex4() {
    if (n_ - i_ < 4) error(i_, "truncated \\u escape");
    uint32_t cp = 0;
    for (int k = 0; k < 4; ++k) {
      unsigned char c = p_[i_++];
      cp <<= 4;
      if (c >= '0' && c <= '9') cp |= c - '0';
      else if (c >= 'a' && c <= 'f') cp |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') cp |= c - 'A' + 10;
      else error(i_ - 1, "bad hex digit in a \\u escape");
    }
    return cp;
  }

  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    for (;;) {
      if (i_ >= n_) error(i_, "unterminated string");
      unsigned char c = p_[i_];
      if (c == '"') {
        ++i_;
        break;
      }
      if (c < 0x20) error(i_, "control character in a string");
      if (c == '\\') {
        if (++i_ >= n_) error(i_, "unterminated escape");
        unsigned char e = p_[i_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            size_t at = i_ - 2;
            uint32_t cp = hex4();
            if (cp >= 0xDC00 && cp <= 0xDFFF) error(at, "lone trailing surrogate in a \\u escape");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (n_ - i_ < 6 || p_[i_] != '\\' || p_[i_ + 1] != 'u') error(at, "lone leading surrogate in a \\u escape");
              i_ += 2;
              uint32_t lo = hex4();
              if (lo < 0xDC00 || lo > 0xDFFF) error(at, "lone leading surrogate in a \\u escape");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            put_utf8(out, cp);
            break;
          }
          default: error(i_ - 1, "unknown escape");
        }
        continue;
      }
      size_t len = utf8_len(p_ + i_, n_ - i_);
      if (!len) error(i_, "invalid UTF-8");
      out.append(reinterpret_cast<const char *>(p_ + i_), len);
      i_ += len;
    }
    charge(out.size());
    return out;
  }
};

}  // namespace

bool as_u64(const Value &v, uint64_t *out) {
  if (v.kind != Value::Number || v.text.empty() || v.text.size() > 20) return false;
  if (v.text.size() > 1 && v.text[0] == '0') return false;
  uint64_t x = 0;
  for (char c : v.text) {
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (x > (UINT64_MAX - d) / 10) return false;
    x = x * 10 + d;
  }
  *out = x;
  return true;
}

bool valid_utf8(const char *p, size_t n, size_t *bad_at) { return ctorch::valid_utf8(p, n, bad_at); }

Value parse(const char *p, size_t n, Charge charge, void *ctx) { return Parser(p, n, charge, ctx).document(); }

void append_string(std::string &out, const std::string &s) {
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

}  // namespace json
}  // namespace ctorch
