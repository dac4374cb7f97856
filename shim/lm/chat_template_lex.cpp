// The template's text into tokens, as jinja2's lexer makes them under
// transformers' settings: newlines normalised and one final newline dropped
// (keep_trailing_newline off), "{%-"/"-%}" whitespace control, trim_blocks
// (the newline after a block or comment tag) and lstrip_blocks (the spaces
// before one on its line), {% raw %} blocks, string literals decoded as
// Python's unicode-escape decodes them.
#include "chat_template_internal.h"

#include <cstring>

#include "core/internal.h"

namespace ctorch {
namespace lm {
namespace tmpl {

void syntax_error(const std::string &source, int line, const std::string &msg) {
  throw StatusError(CTORCH_INVALID_ARGUMENT,
                    "chat template " + source + ": line " + std::to_string(line) + ": " + msg);
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Python's unicode-escape decoding of a string literal's body (what jinja2
// applies to it): \n \t \r \\ \' \" \a \b \f \v, octal, \xhh, \uXXXX,
// \UXXXXXXXX; any other backslash stays as written.
std::string unescape(const std::string &s, const std::string &source, int line) {
  std::string out;
  auto put = [&](uint32_t cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) syntax_error(source, line, "a string escapes a lone surrogate");
    if (cp > 0x10FFFF) syntax_error(source, line, "a string escapes a code point past U+10FFFF");
    out += utf8_encode({cp}, 0, 1);
  };
  for (size_t i = 0; i < s.size(); i++) {
    char c = s[i];
    if (c != '\\' || i + 1 == s.size()) {
      out += c;
      continue;
    }
    char e = s[++i];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case '\n': break;  // a backslash-newline continues the line
      case 'x': case 'u': case 'U': {
        size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t k = 1; k <= n; k++) {
          if (i + k >= s.size() || !isxdigit(static_cast<unsigned char>(s[i + k])))
            syntax_error(source, line, "a truncated \\" + std::string(1, e) + " escape");
          char h = s[i + k];
          cp = cp * 16 + (isdigit(static_cast<unsigned char>(h)) ? h - '0' : (tolower(h) - 'a' + 10));
        }
        i += n;
        put(cp);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = 0;
          size_t k = 0;
          while (k < 3 && i + k < s.size() && s[i + k] >= '0' && s[i + k] <= '7') cp = cp * 8 + (s[i + k++] - '0');
          i += k - 1;
          put(cp);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(const std::string &text, const std::string &source) : source_(source) {
    // jinja2 normalises the source's newlines to \n and, without
    // keep_trailing_newline, drops one final newline.
    src_.reserve(text.size());
    for (size_t i = 0; i < text.size(); i++) {
      if (text[i] == '\r') {
        src_ += '\n';
        if (i + 1 < text.size() && text[i + 1] == '\n') i++;
      } else {
        src_ += text[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  std::vector<Tok> run() {
    size_t pos = 0;
    bool strip_next = false, line_starting = true;
    while (pos <= src_.size()) {
      size_t start = find_tag(pos);
      std::string text = src_.substr(pos, start - pos);
      if (strip_next) {
        size_t k = 0;
        while (k < text.size() && is_space(text[k])) k++;
        text.erase(0, k);
      }
      if (start == src_.size()) {
        emit_text(text, pos);
        break;
      }
      char kind = src_[start + 1];  // '{', '%' or '#'
      char sign = start + 2 < src_.size() ? src_[start + 2] : 0;
      if (sign == '-') {
        size_t k = text.size();
        while (k > 0 && is_space(text[k - 1])) k--;
        text.resize(k);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: only whitespace between the line's start and the tag
        size_t nl = text.rfind('\n');
        size_t l = nl == std::string::npos ? 0 : nl + 1;
        if ((l > 0 || line_starting) && l < text.size()) {
          bool ws = true;
          for (size_t k = l; k < text.size(); k++) ws = ws && is_space(text[k]);
          if (ws) text.resize(l);
        }
      }
      emit_text(text, pos);
      line_ = line_at(start);
      size_t p = start + 2 + (sign == '-' || sign == '+' ? 1 : 0);
      char close_sign = 0;
      if (kind == '#') {
        size_t e = src_.find("#}", p);
        if (e == std::string::npos) syntax_error(source_, line_, "a comment is not closed");
        close_sign = e > p && (src_[e - 1] == '-' || src_[e - 1] == '+') ? src_[e - 1] : 0;
        pos = e + 2;
      } else if (kind == '%' && is_raw(p)) {
        pos = raw_block(p, &close_sign);
      } else {
        toks_.push_back({kind == '{' ? TK::VarBegin : TK::BlockBegin, "", line_});
        pos = tag_body(p, kind, &close_sign);
        toks_.push_back({kind == '{' ? TK::VarEnd : TK::BlockEnd, "", line_});
      }
      strip_next = close_sign == '-';
      line_starting = false;
      if (!strip_next && close_sign != '+' && kind != '{' && pos < src_.size() && src_[pos] == '\n') {
        pos++;  // trim_blocks
        line_starting = true;
      }
      if (strip_next) {
        // jinja2 consumes the whitespace with the tag ("-%}\s*")
        size_t q = pos;
        while (q < src_.size() && is_space(src_[q])) q++;
        line_starting = q > pos && src_[q - 1] == '\n';
        pos = q;
        strip_next = false;
      }
    }
    toks_.push_back({TK::End, "", line_at(src_.size())});
    return std::move(toks_);
  }

 private:
  size_t find_tag(size_t pos) const {
    for (size_t i = pos; i + 1 < src_.size(); i++)
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return src_.size();
  }
  int line_at(size_t pos) {
    while (line_pos_ < pos && line_pos_ < src_.size()) {
      if (src_[line_pos_] == '\n') line_count_++;
      line_pos_++;
    }
    return line_count_;
  }
  void emit_text(const std::string &text, size_t pos) {
    if (!text.empty()) toks_.push_back({TK::Text, text, line_at(pos)});
  }
  bool is_raw(size_t p) const {
    while (p < src_.size() && is_space(src_[p])) p++;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) p++;
    return src_.compare(p, 2, "%}") == 0 || src_.compare(p, 3, "-%}") == 0;
  }
  // {% raw %}...{% endraw %}: the text between, as is.
  size_t raw_block(size_t p, char *close_sign) {
    size_t e = src_.find("%}", p);
    size_t body = e + 2;
    if (src_[e - 1] == '-')
      while (body < src_.size() && is_space(src_[body])) body++;
    for (size_t q = src_.find("{%", body); q != std::string::npos; q = src_.find("{%", q + 2)) {
      size_t r = q + 2;
      bool minus = r < src_.size() && src_[r] == '-';
      if (minus || (r < src_.size() && src_[r] == '+')) r++;
      while (r < src_.size() && is_space(src_[r])) r++;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && is_space(src_[r])) r++;
      char sign = src_[r] == '-' || src_[r] == '+' ? src_[r++] : 0;
      if (src_.compare(r, 2, "%}") != 0) continue;
      std::string text = src_.substr(body, q - body);
      if (minus)
        while (!text.empty() && is_space(text.back())) text.pop_back();
      emit_text(text, body);
      *close_sign = sign;
      return r + 2;
    }
    syntax_error(source_, line_, "{% raw %} without {% endraw %}");
  }
  // The tokens of an expression or statement up to its closing delimiter.
  size_t tag_body(size_t p, char kind, char *close_sign) {
    int depth = 0;
    const char close = kind == '{' ? '}' : '%';
    for (;;) {
      while (p < src_.size() && is_space(src_[p])) {
        if (src_[p] == '\n') line_++;
        p++;
      }
      if (p >= src_.size()) syntax_error(source_, line_, kind == '{' ? "'{{' is not closed" : "'{%' is not closed");
      if (depth == 0) {
        if (src_[p] == '-' && src_.compare(p + 1, 2, std::string(1, close) + "}") == 0) {
          *close_sign = '-';
          return p + 3;
        }
        if (kind == '%' && src_[p] == '+' && src_.compare(p + 1, 2, "%}") == 0) {
          *close_sign = '+';
          return p + 3;
        }
        if (src_[p] == close && p + 1 < src_.size() && src_[p + 1] == '}') return p + 2;
      }
      char c = src_[p];
      if (isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t q = p;
        while (q < src_.size() && (isalnum(static_cast<unsigned char>(src_[q])) || src_[q] == '_')) q++;
        toks_.push_back({TK::Name, src_.substr(p, q - p), line_});
        p = q;
      } else if (isdigit(static_cast<unsigned char>(c))) {
        size_t q = p;
        bool is_float = false;
        while (q < src_.size() && (isdigit(static_cast<unsigned char>(src_[q])) || src_[q] == '_')) q++;
        if (q + 1 < src_.size() && src_[q] == '.' && isdigit(static_cast<unsigned char>(src_[q + 1]))) {
          is_float = true;
          q++;
          while (q < src_.size() && (isdigit(static_cast<unsigned char>(src_[q])) || src_[q] == '_')) q++;
        }
        if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
          size_t r = q + 1;
          if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) r++;
          if (r < src_.size() && isdigit(static_cast<unsigned char>(src_[r]))) {
            is_float = true;
            q = r;
            while (q < src_.size() && isdigit(static_cast<unsigned char>(src_[q]))) q++;
          }
        }
        std::string lit;
        for (size_t k = p; k < q; k++)
          if (src_[k] != '_') lit += src_[k];
        toks_.push_back({is_float ? TK::Float : TK::Int, lit, line_});
        p = q;
      } else if (c == '\'' || c == '"') {
        size_t q = p + 1;
        while (q < src_.size() && src_[q] != c) q += src_[q] == '\\' ? 2 : 1;
        if (q >= src_.size()) syntax_error(source_, line_, "a string is not closed");
        toks_.push_back({TK::Str, unescape(src_.substr(p + 1, q - p - 1), source_, line_), line_});
        for (size_t k = p; k < q; k++) line_ += src_[k] == '\n';
        p = q + 1;
      } else {
        static const char *two[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op;
        for (const char *t : two)
          if (src_.compare(p, 2, t) == 0) op = t;
        if (op.empty()) {
          if (c == 0 || !strchr("+-*/%~<>=()[]{},.:|", c)) {
            // the whole character in the message (the text is valid UTF-8)
            size_t n = 1;
            while (p + n < src_.size() && (static_cast<unsigned char>(src_[p + n]) & 0xC0) == 0x80) n++;
            syntax_error(source_, line_, "unexpected character '" + src_.substr(p, n) + "'");
          }
          op = std::string(1, c);
        }
        if (op == "(" || op == "[" || op == "{") depth++;
        if (op == ")" || op == "]" || op == "}") depth--;
        toks_.push_back({TK::Op, op, line_});
        p += op.size();
      }
    }
  }

  std::string src_;
  const std::string &source_;
  std::vector<Tok> toks_;
  int line_ = 1;
  size_t line_pos_ = 0;
  int line_count_ = 1;
};

}  // namespace

std::vector<Tok> lex_template(const std::string &text, const std::string &source) {
  Lexer lex(text, source);
  return lex.run();
}

}  // namespace tmpl
}  // namespace lm
}  // namespace ctorch
