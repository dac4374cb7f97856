// Python's view of the template's values: str() and repr() (float repr the
// shortest text that reads back, as Python prints it), truth, equality,
// UTF-8 by code point, JSON in (the messages) and out (json.dumps, as
// transformers' tojson filter calls it).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "chat_template_internal.h"
#include "core/internal.h"

namespace ctorch {
namespace lm {
namespace tmpl {

std::vector<uint32_t> utf8_decode(const std::string &s) {
  // Strings here are valid UTF-8 (the messages are checked by the JSON
  // reader; the template's text by the entry point).
  std::vector<uint32_t> out;
  out.reserve(s.size());
  const auto *p = reinterpret_cast<const unsigned char *>(s.data());
  size_t n = s.size();
  for (size_t i = 0; i < n;) {
    unsigned c = p[i];
    size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; k < len && i + k < n; k++) cp = (cp << 6) | (p[i + k] & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string utf8_encode(const std::vector<uint32_t> &cps, size_t from, size_t to) {
  std::string out;
  for (size_t k = from; k < to && k < cps.size(); k++) {
    uint32_t c = cps[k];
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

size_t utf8_length(const std::string &s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

namespace {

// repr(float): the shortest digits that read back, in Python's layout.
std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  if (x == 0) return std::signbit(x) ? "-0.0" : "0.0";
  char buf[64];
  int prec = 1;
  for (; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
    if (strtod(buf, nullptr) == x) break;
  }
  // buf: [-]d[.ddd]e[+-]XX
  std::string s(buf);
  bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  size_t e = s.find('e');
  int exp10 = atoi(s.c_str() + e + 1);
  std::string digits;
  for (size_t k = 0; k < e; k++)
    if (s[k] != '.') digits += s[k];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  int decpt = exp10 + 1;  // digits' decimal point position
  if (decpt > 16 || decpt < -3) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += eb;
  } else if (decpt <= 0) {
    out = "0." + std::string(-decpt, '0') + digits;
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    out = digits + std::string(decpt - digits.size(), '0') + ".0";
  } else {
    out = digits.substr(0, decpt) + "." + digits.substr(decpt);
  }
  return neg ? "-" + out : out;
}

// Python's str.isprintable, closely enough for repr of text: controls,
// format characters, separators other than ' ' and private use escape.
bool printable(uint32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x206F)) return false;
  if (c == 0x3000 || c == 0xFEFF || c == 0x1680 || c == 0x180E) return false;
  if ((c >= 0xE000 && c <= 0xF8FF) || c >= 0xF0000 || (c >= 0xFFF0 && c <= 0xFFFB)) return false;
  return true;
}

std::string str_repr(const std::string &s) {
  char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  std::vector<uint32_t> cps = utf8_decode(s);
  char buf[16];
  for (size_t k = 0; k < cps.size(); k++) {
    uint32_t c = cps[k];
    if (c == static_cast<uint32_t>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (!printable(c)) {
      if (c < 0x100) snprintf(buf, sizeof buf, "\\x%02x", c);
      else if (c < 0x10000) snprintf(buf, sizeof buf, "\\u%04x", c);
      else snprintf(buf, sizeof buf, "\\U%08x", c);
      out += buf;
    } else {
      out += utf8_encode(cps, k, k + 1);
    }
  }
  return out + q;
}

}  // namespace

std::string py_repr(const Value &v) {
  switch (v.kind) {
    case Value::Str: return str_repr(v.s);
    case Value::Undefined: return "Undefined";  // jinja2's Undefined inside a printed list
    case Value::List: {
      std::string out = v.tuple ? "(" : "[";
      for (size_t k = 0; k < v.l->size(); k++) out += (k ? ", " : "") + py_repr((*v.l)[k]);
      if (v.tuple) return out + (v.l->size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Value::Dict: {
      if (v.ns) {
        std::string out = "<Namespace {";
        for (size_t k = 0; k < v.d->size(); k++)
          out += (k ? ", " : "") + str_repr((*v.d)[k].first) + ": " + py_repr((*v.d)[k].second);
        return out + "}>";
      }
      std::string out = "{";
      for (size_t k = 0; k < v.d->size(); k++)
        out += (k ? ", " : "") + str_repr((*v.d)[k].first) + ": " + py_repr((*v.d)[k].second);
      return out + "}";
    }
    default: return py_str(v);
  }
}

std::string py_ascii(const Value &v) {
  std::vector<uint32_t> cps = utf8_decode(py_repr(v));
  std::string out;
  char buf[16];
  for (uint32_t c : cps) {
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    snprintf(buf, sizeof buf, c < 0x100 ? "\\x%02x" : c < 0x10000 ? "\\u%04x" : "\\U%08x", c);
    out += buf;
  }
  return out;
}

std::string py_str(const Value &v) {
  switch (v.kind) {
    case Value::Undefined: return "";
    case Value::None: return "None";
    case Value::Bool: return v.b ? "True" : "False";
    case Value::Int: return std::to_string(v.i);
    case Value::Float: return float_repr(v.f);
    case Value::Str: return v.s;
    case Value::Func: return "<function " + v.fn->name + ">";
    default: return py_repr(v);
  }
}

bool truthy(const Value &v) {
  switch (v.kind) {
    case Value::Undefined: case Value::None: return false;
    case Value::Bool: return v.b;
    case Value::Int: return v.i != 0;
    case Value::Float: return v.f != 0;
    case Value::Str: return !v.s.empty();
    case Value::List: return !v.l->empty();
    case Value::Dict: return v.ns || !v.d->empty();
    case Value::Func: return true;
  }
  return false;
}

bool values_equal(const Value &a, const Value &b) {
  auto num = [](const Value &v) { return v.kind == Value::Int || v.kind == Value::Bool || v.kind == Value::Float; };
  if (num(a) && num(b)) {
    if (a.kind != Value::Float && b.kind != Value::Float)
      return (a.kind == Value::Bool ? a.b : a.i) == (b.kind == Value::Bool ? b.b : b.i);
    double x = a.kind == Value::Float ? a.f : a.kind == Value::Bool ? a.b : static_cast<double>(a.i);
    double y = b.kind == Value::Float ? b.f : b.kind == Value::Bool ? b.b : static_cast<double>(b.i);
    return x == y;
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Undefined: case Value::None: return true;
    case Value::Str: return a.s == b.s;
    case Value::List:
      if (a.tuple != b.tuple || a.l->size() != b.l->size()) return false;
      for (size_t k = 0; k < a.l->size(); k++)
        if (!values_equal((*a.l)[k], (*b.l)[k])) return false;
      return true;
    case Value::Dict:
      if (a.ns || b.ns) return a.d == b.d;
      if (a.d->size() != b.d->size()) return false;
      for (const auto &e : *a.d) {
        const Value *o = b.find(e.first);
        if (!o || !values_equal(e.second, *o)) return false;
      }
      return true;
    case Value::Func: return a.fn == b.fn;
    default: return false;
  }
}

std::string type_name(const Value &v) {
  switch (v.kind) {
    case Value::Undefined: return "Undefined";
    case Value::None: return "NoneType";
    case Value::Bool: return "bool";
    case Value::Int: return "int";
    case Value::Float: return "float";
    case Value::Str: return "str";
    case Value::List: return "list";
    case Value::Dict: return v.ns ? "Namespace" : "dict";
    case Value::Func: return "function";
  }
  return "?";
}

Value from_json(const json::Value &j) {
  switch (j.kind) {
    case json::Value::Null: return Value::none();
    case json::Value::Bool: return Value::boolean(j.boolean);
    case json::Value::String: return Value::str(j.text);
    case json::Value::Number: {
      const std::string &t = j.text;
      bool integral = t.find_first_of(".eE") == std::string::npos;
      if (integral) {
        errno = 0;
        long long v = strtoll(t.c_str(), nullptr, 10);
        if (errno == ERANGE)
          throw StatusError(CTORCH_INVALID_ARGUMENT, "a message holds the integer " + t + ", past 64 bits");
        return Value::integer(v);
      }
      return Value::number(strtod(t.c_str(), nullptr));
    }
    case json::Value::Array: {
      ValueList l;
      l.reserve(j.items.size());
      for (const auto &x : j.items) l.push_back(from_json(x));
      return Value::list(std::move(l));
    }
    case json::Value::Object: {
      ValueDict d;
      d.reserve(j.members.size());
      for (const auto &m : j.members) d.emplace_back(m.first, from_json(m.second));
      return Value::dict(std::move(d));
    }
  }
  return Value::none();
}

namespace {
void json_string(std::string &out, const std::string &s, bool ensure_ascii) {
  out += '"';
  char buf[16];
  std::vector<uint32_t> cps = utf8_decode(s);
  for (size_t k = 0; k < cps.size(); k++) {
    uint32_t c = cps[k];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else if (c > 0x7E && ensure_ascii) {
          if (c == 0x7F) {
            out += '\x7f';
          } else if (c < 0x10000) {
            snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
          } else {
            uint32_t v = c - 0x10000;
            snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            out += buf;
          }
        } else {
          out += utf8_encode(cps, k, k + 1);
        }
    }
  }
  out += '"';
}
}  // namespace

void to_json(std::string &out, const Value &v, bool ensure_ascii, int indent, bool sort_keys, int level,
             Renderer &r) {
  r.step();
  r.check_size(out.size());
  if (level > 128) r.fail("tojson: a value nested deeper than 128 levels");
  auto newline = [&](int lvl) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * lvl, ' ');
  };
  switch (v.kind) {
    case Value::None: out += "null"; return;
    case Value::Bool: out += v.b ? "true" : "false"; return;
    case Value::Int: out += std::to_string(v.i); return;
    case Value::Float:
      if (std::isnan(v.f)) out += "NaN";
      else if (std::isinf(v.f)) out += v.f < 0 ? "-Infinity" : "Infinity";
      else out += float_repr(v.f);
      return;
    case Value::Str: json_string(out, v.s, ensure_ascii); return;
    case Value::List: {
      if (v.l->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t k = 0; k < v.l->size(); k++) {
        if (k) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(level + 1);
        to_json(out, (*v.l)[k], ensure_ascii, indent, sort_keys, level + 1, r);
      }
      if (indent >= 0) newline(level);
      out += ']';
      return;
    }
    case Value::Dict: {
      if (v.ns) r.fail("tojson: Object of type Namespace is not JSON serializable");
      if (v.d->empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value> *> items;
      for (const auto &e : *v.d) items.push_back(&e);
      if (sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto *a, auto *b) {
          return utf8_decode(a->first) < utf8_decode(b->first);
        });
      out += '{';
      for (size_t k = 0; k < items.size(); k++) {
        if (k) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(level + 1);
        json_string(out, items[k]->first, ensure_ascii);
        out += ": ";
        to_json(out, items[k]->second, ensure_ascii, indent, sort_keys, level + 1, r);
      }
      if (indent >= 0) newline(level);
      out += '}';
      return;
    }
    case Value::Undefined: r.fail("tojson: Object of type Undefined is not JSON serializable");
    case Value::Func: r.fail("tojson: Object of type function is not JSON serializable");
  }
}

}  // namespace tmpl
}  // namespace lm
}  // namespace ctorch
