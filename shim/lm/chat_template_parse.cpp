// The template's text into a syntax tree: jinja2's lexer as transformers
// configures it (trim_blocks, lstrip_blocks, keep_trailing_newline off), then
// a recursive-descent parser with jinja2's precedence. Nesting is bounded so
// that a hostile text cannot exhaust the stack.
#include "chat_template_internal.h"

#include <cstring>

#include "core/internal.h"

namespace ctorch {
namespace lm {
namespace tmpl {
namespace {

enum class TK : uint8_t { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, Str, Int, Float, Op, End };

struct Tok {
  TK kind;
  std::string text;  // Text: the text; Name/Op: the name or operator; Str: the decoded string; numbers: the literal
  int line;
};

[[noreturn]] void syntax(const std::string &source, int line, const std::string &msg) {
  throw StatusError(CTORCH_INVALID_ARGUMENT,
                    "chat template " + source + ": line " + std::to_string(line) + ": " + msg);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Python's unicode-escape decoding of a string literal's body (what jinja2
// applies to it): \n \t \r \\ \' \" \a \b \f \v, octal, \xhh, \uXXXX,
// \UXXXXXXXX; any other backslash stays as written.
std::string unescape(const std::string &s, const std::string &source, int line) {
  std::string out;
  auto put = [&](uint32_t cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) syntax(source, line, "a string escapes a lone surrogate");
    if (cp > 0x10FFFF) syntax(source, line, "a string escapes a code point past U+10FFFF");
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
            syntax(source, line, "a truncated \\" + std::string(1, e) + " escape");
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
        if (e == std::string::npos) syntax(source_, line_, "a comment is not closed");
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
    syntax(source_, line_, "{% raw %} without {% endraw %}");
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
      if (p >= src_.size()) syntax(source_, line_, kind == '{' ? "'{{' is not closed" : "'{%' is not closed");
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
        if (q >= src_.size()) syntax(source_, line_, "a string is not closed");
        toks_.push_back({TK::Str, unescape(src_.substr(p + 1, q - p - 1), source_, line_), line_});
        for (size_t k = p; k < q; k++) line_ += src_[k] == '\n';
        p = q + 1;
      } else {
        static const char *two[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op;
        for (const char *t : two)
          if (src_.compare(p, 2, t) == 0) op = t;
        if (op.empty()) {
          if (!strchr("+-*/%~<>=()[]{},.:|", c)) syntax(source_, line_, std::string("unexpected character '") + c + "'");
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

class Parser {
 public:
  Parser(std::vector<Tok> toks, const std::string &source, const Bounds &b)
      : t_(std::move(toks)), source_(source), max_depth_(b.depth) {}

  NodePtr parse() {
    std::string end;
    NodePtr body = parse_body({}, &end);
    return body;
  }

 private:
  // Nesting guard for the recursive descent.
  struct Deeper {
    explicit Deeper(Parser &p) : p_(p) {
      if (++p_.depth_ > p_.max_depth_)
        syntax(p_.source_, p_.cur().line, "nesting deeper than the bound of " + std::to_string(p_.max_depth_) + " levels");
    }
    ~Deeper() { --p_.depth_; }
    Parser &p_;
  };

  const Tok &cur() const { return t_[i_]; }
  const Tok &peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  bool is_op(const char *op) const { return cur().kind == TK::Op && cur().text == op; }
  bool is_name(const char *n) const { return cur().kind == TK::Name && cur().text == n; }
  [[noreturn]] void error(const std::string &msg) const { syntax(source_, cur().line, msg); }
  void expect_op(const char *op) {
    if (!is_op(op)) error(std::string("expected '") + op + "', found " + describe(cur()));
    i_++;
  }
  std::string expect_name() {
    if (cur().kind != TK::Name) error("expected a name, found " + describe(cur()));
    return t_[i_++].text;
  }
  static std::string describe(const Tok &t) {
    switch (t.kind) {
      case TK::End: return "the end of the template";
      case TK::BlockEnd: return "the end of the statement";
      case TK::VarEnd: return "the end of the expression";
      case TK::Text: return "text";
      default: return "'" + t.text + "'";
    }
  }
  NodePtr node(NK k) { return std::make_unique<Node>(k, cur().line); }
  // Sets n's height from its children's; refuses a tree deeper than the
  // bound (chains such as a + b + c ... grow it without recursion here).
  NodePtr grown(NodePtr n) {
    int h = 0;
    for (const auto &k : n->kids)
      if (k) h = std::max(h, k->height);
    for (const auto &k : n->kw)
      if (k.second) h = std::max(h, k.second->height);
    n->height = h + 1;
    if (n->height > max_depth_)
      error("an expression nested deeper than the bound of " + std::to_string(max_depth_) + " levels (nesting deeper)");
    return n;
  }

  // Statements until one of `ends` ({% elif %}, {% endfor %}, ...); its name in *end.
  NodePtr parse_body(const std::vector<std::string> &ends, std::string *end) {
    Deeper d(*this);
    NodePtr body = node(NK::Body);
    for (;;) {
      const Tok &t = cur();
      if (t.kind == TK::End) {
        if (!ends.empty()) error("the template ends inside a block (expected {% " + ends.back() + " %})");
        return body;
      }
      if (t.kind == TK::Text) {
        NodePtr n = node(NK::Text);
        n->str = t.text;
        body->kids.push_back(std::move(n));
        i_++;
      } else if (t.kind == TK::VarBegin) {
        i_++;
        NodePtr n = node(NK::Output);
        n->kids.push_back(parse_tuple_or_expr());
        if (cur().kind != TK::VarEnd) error("expected '}}', found " + describe(cur()));
        i_++;
        body->kids.push_back(std::move(n));
      } else if (t.kind == TK::BlockBegin) {
        i_++;
        std::string kw = expect_name();
        for (const auto &e : ends)
          if (kw == e) {
            *end = kw;
            return body;
          }
        body->kids.push_back(parse_statement(kw));
      } else {
        error("unexpected " + describe(t));
      }
    }
  }
  void end_block() {
    if (cur().kind != TK::BlockEnd) error("expected '%}', found " + describe(cur()));
    i_++;
  }

  NodePtr parse_statement(const std::string &kw) {
    std::string end;
    if (kw == "if") {
      NodePtr n = node(NK::If);
      // kids: cond, body, cond, body, ..., [else body]
      n->kids.push_back(parse_expr());
      end_block();
      for (;;) {
        n->kids.push_back(parse_body({"elif", "else", "endif"}, &end));
        if (end == "elif") {
          n->kids.push_back(parse_expr());
          end_block();
        } else if (end == "else") {
          end_block();
          n->kids.push_back(nullptr);  // the else marker
          n->kids.push_back(parse_body({"endif"}, &end));
          end_block();
          return n;
        } else {
          end_block();
          return n;
        }
      }
    }
    if (kw == "for") {
      NodePtr n = node(NK::For);
      n->names.push_back(expect_name());
      while (is_op(",")) {
        i_++;
        n->names.push_back(expect_name());
      }
      if (!is_name("in")) error("expected 'in' in a for loop");
      i_++;
      n->kids.push_back(parse_tuple_or_expr(/*no_cond=*/true));
      NodePtr filter;
      if (is_name("if")) {
        i_++;
        filter = parse_expr();
      }
      if (is_name("recursive")) error("recursive for loops are not supported");
      end_block();
      n->kids.push_back(std::move(filter));
      n->kids.push_back(parse_body({"else", "endfor"}, &end));
      if (end == "else") {
        end_block();
        n->kids.push_back(parse_body({"endfor"}, &end));
      } else {
        n->kids.push_back(nullptr);
      }
      end_block();
      return n;
    }
    if (kw == "set") {
      std::string name = expect_name();
      std::string attr;
      if (is_op(".")) {
        i_++;
        attr = expect_name();
      }
      if (is_op("=")) {
        i_++;
        NodePtr n = node(NK::Set);
        n->names = {name};
        if (!attr.empty()) {
          n->flag = true;
          n->names.push_back(attr);
        }
        n->kids.push_back(parse_tuple_or_expr());
        end_block();
        return n;
      }
      if (!attr.empty() || is_op(",")) error("expected '=' in {% set %}");
      NodePtr n = node(NK::SetBlock);
      n->names = {name};
      NodePtr filters;  // {% set x | upper %}
      while (is_op("|")) {
        i_++;
        NodePtr f = parse_filter_call(nullptr);
        f->kids[0] = std::move(filters);
        filters = std::move(f);
      }
      end_block();
      n->kids.push_back(parse_body({"endset"}, &end));
      n->kids.push_back(std::move(filters));
      end_block();
      return n;
    }
    if (kw == "macro") {
      NodePtr n = node(NK::Macro);
      n->str = expect_name();
      parse_params(*n);
      end_block();
      n->kids.push_back(parse_body({"endmacro"}, &end));
      end_block();
      return n;
    }
    if (kw == "call") {
      NodePtr n = node(NK::CallBlock);
      NodePtr params = node(NK::Macro);
      params->str = "caller";
      if (is_op("(")) parse_params(*params);
      n->kids.push_back(parse_expr());
      if (n->kids[0]->kind != NK::Call) error("{% call %} needs a macro call");
      end_block();
      params->kids.push_back(parse_body({"endcall"}, &end));
      end_block();
      n->kids.push_back(std::move(params));
      return n;
    }
    if (kw == "filter") {
      NodePtr n = node(NK::FilterBlock);
      NodePtr f = parse_filter_call(nullptr);
      while (is_op("|")) {
        i_++;
        NodePtr g = parse_filter_call(nullptr);
        g->kids[0] = std::move(f);
        f = std::move(g);
      }
      end_block();
      n->kids.push_back(parse_body({"endfilter"}, &end));
      n->kids.push_back(std::move(f));
      end_block();
      return n;
    }
    if (kw == "generation") {  // transformers' assistant-mask marker: renders its body
      end_block();
      NodePtr body = parse_body({"endgeneration"}, &end);
      end_block();
      return body;
    }
    if (kw == "break" || kw == "continue") {
      NodePtr n = node(kw == "break" ? NK::Break : NK::Continue);
      end_block();
      return n;
    }
    error("unknown statement '" + kw + "'");
  }

  void parse_params(Node &n) {
    expect_op("(");
    while (!is_op(")")) {
      std::string p = expect_name();
      n.names.push_back(p);
      if (is_op("=")) {
        i_++;
        n.kw.emplace_back(p, parse_expr());
      } else if (!n.kw.empty()) {
        error("a parameter without a default follows one with a default");
      }
      if (!is_op(",")) break;
      i_++;
    }
    expect_op(")");
  }

  // An expression, or several separated by commas (a tuple).
  NodePtr parse_tuple_or_expr(bool no_cond = false) {
    NodePtr first = no_cond ? parse_or() : parse_expr();
    if (!is_op(",")) return first;
    NodePtr t = node(NK::TupleLit);
    t->kids.push_back(std::move(first));
    while (is_op(",")) {
      i_++;
      if (cur().kind == TK::VarEnd || cur().kind == TK::BlockEnd || is_name("if")) break;
      t->kids.push_back(no_cond ? parse_or() : parse_expr());
    }
    return grown(std::move(t));
  }

  NodePtr parse_expr() {
    Deeper d(*this);
    NodePtr x = parse_or();
    while (is_name("if")) {
      i_++;
      NodePtr n = node(NK::Cond);
      NodePtr cond = parse_or();
      NodePtr other;
      if (is_name("else")) {
        i_++;
        other = parse_expr();
      }
      n->kids.push_back(std::move(cond));
      n->kids.push_back(std::move(x));
      n->kids.push_back(std::move(other));
      x = grown(std::move(n));
    }
    return x;
  }
  NodePtr parse_or() {
    NodePtr x = parse_and();
    while (is_name("or")) {
      i_++;
      NodePtr n = node(NK::Or);
      n->kids.push_back(std::move(x));
      n->kids.push_back(parse_and());
      x = grown(std::move(n));
    }
    return x;
  }
  NodePtr parse_and() {
    NodePtr x = parse_not();
    while (is_name("and")) {
      i_++;
      NodePtr n = node(NK::And);
      n->kids.push_back(std::move(x));
      n->kids.push_back(parse_not());
      x = grown(std::move(n));
    }
    return x;
  }
  NodePtr parse_not() {
    Deeper d(*this);
    if (is_name("not")) {
      i_++;
      NodePtr n = node(NK::Not);
      n->kids.push_back(parse_not());
      return grown(std::move(n));
    }
    return parse_compare();
  }
  NodePtr parse_compare() {
    NodePtr x = parse_math1();
    NodePtr cmp;
    for (;;) {
      std::string op;
      if (cur().kind == TK::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                   cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
        op = cur().text;
        i_++;
      } else if (is_name("in")) {
        op = "in";
        i_++;
      } else if (is_name("not") && peek().kind == TK::Name && peek().text == "in") {
        op = "notin";
        i_ += 2;
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(NK::Compare);
        cmp->kids.push_back(std::move(x));
      }
      cmp->ops.push_back(op);
      cmp->kids.push_back(parse_math1());
    }
    return cmp ? grown(std::move(cmp)) : std::move(x);
  }
  NodePtr binary(const std::string &op, NodePtr a, NodePtr b) {
    NodePtr n = node(NK::Binary);
    n->str = op;
    n->kids.push_back(std::move(a));
    n->kids.push_back(std::move(b));
    return grown(std::move(n));
  }
  NodePtr parse_math1() {
    NodePtr x = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = t_[i_++].text;
      x = binary(op, std::move(x), parse_concat());
    }
    return x;
  }
  NodePtr parse_concat() {
    NodePtr x = parse_math2();
    while (is_op("~")) {
      i_++;
      x = binary("~", std::move(x), parse_math2());
    }
    return x;
  }
  NodePtr parse_math2() {
    NodePtr x = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = t_[i_++].text;
      x = binary(op, std::move(x), parse_pow());
    }
    return x;
  }
  NodePtr parse_pow() {
    NodePtr x = parse_unary();
    while (is_op("**")) {
      i_++;
      x = binary("**", std::move(x), parse_unary());
    }
    return x;
  }
  NodePtr parse_unary() {
    Deeper d(*this);
    if (is_op("-") || is_op("+")) {
      // jinja2: the operand of a sign takes no filters ("-3 | abs" is (-3) | abs)
      NodePtr n = node(is_op("-") ? NK::Neg : NK::Pos);
      i_++;
      n->kids.push_back(parse_unary_operand());
      return parse_filters(grown(std::move(n)));
    }
    NodePtr x = parse_postfix(parse_primary());
    return parse_filters(std::move(x));
  }
  NodePtr parse_unary_operand() {
    Deeper d(*this);
    if (is_op("-") || is_op("+")) {
      NodePtr n = node(is_op("-") ? NK::Neg : NK::Pos);
      i_++;
      n->kids.push_back(parse_unary_operand());
      return grown(std::move(n));
    }
    return parse_postfix(parse_primary());
  }
  NodePtr parse_primary() {
    Deeper d(*this);
    const Tok &t = cur();
    if (t.kind == TK::Name) {
      i_++;
      NodePtr n = node(NK::Literal);
      if (t.text == "true" || t.text == "True") n->lit = Value::boolean(true);
      else if (t.text == "false" || t.text == "False") n->lit = Value::boolean(false);
      else if (t.text == "none" || t.text == "None") n->lit = Value::none();
      else {
        n->kind = NK::Name;
        n->str = t.text;
      }
      return n;
    }
    if (t.kind == TK::Str) {
      NodePtr n = node(NK::Literal);
      std::string s;
      while (cur().kind == TK::Str) s += t_[i_++].text;  // adjacent literals join
      n->lit = Value::str(std::move(s));
      return n;
    }
    if (t.kind == TK::Int || t.kind == TK::Float) {
      NodePtr n = node(NK::Literal);
      i_++;
      if (t.kind == TK::Float) {
        n->lit = Value::number(strtod(t.text.c_str(), nullptr));
      } else {
        errno = 0;
        long long v = strtoll(t.text.c_str(), nullptr, 10);
        if (errno == ERANGE) error("integer literal " + t.text + " is past 64 bits");
        n->lit = Value::integer(v);
      }
      return n;
    }
    if (is_op("(")) {
      i_++;
      if (is_op(")")) {
        i_++;
        return node(NK::TupleLit);
      }
      NodePtr x = parse_tuple_or_expr();
      expect_op(")");
      return x;
    }
    if (is_op("[")) {
      i_++;
      NodePtr n = node(NK::ListLit);
      while (!is_op("]")) {
        n->kids.push_back(parse_expr());
        if (!is_op(",")) break;
        i_++;
      }
      expect_op("]");
      return grown(std::move(n));
    }
    if (is_op("{")) {
      i_++;
      NodePtr n = node(NK::DictLit);  // kids: key, value, key, value, ...
      while (!is_op("}")) {
        n->kids.push_back(parse_expr());
        expect_op(":");
        n->kids.push_back(parse_expr());
        if (!is_op(",")) break;
        i_++;
      }
      expect_op("}");
      return grown(std::move(n));
    }
    error("unexpected " + describe(t));
  }
  void parse_call_args(Node &n) {
    expect_op("(");
    while (!is_op(")")) {
      if (cur().kind == TK::Name && peek().kind == TK::Op && peek().text == "=") {
        std::string k = t_[i_].text;
        i_ += 2;
        n.kw.emplace_back(k, parse_expr());
      } else {
        if (!n.kw.empty()) error("a positional argument follows a keyword argument");
        n.kids.push_back(parse_expr());
      }
      if (!is_op(",")) break;
      i_++;
    }
    expect_op(")");
  }
  NodePtr parse_postfix(NodePtr x) {
    for (;;) {
      Deeper d(*this);
      if (is_op(".")) {
        i_++;
        NodePtr n = node(NK::Attr);
        if (cur().kind == TK::Int) {  // x.0: an item
          n->kind = NK::Item;
          NodePtr k = node(NK::Literal);
          k->lit = Value::integer(strtoll(cur().text.c_str(), nullptr, 10));
          i_++;
          n->kids.push_back(std::move(x));
          n->kids.push_back(std::move(k));
        } else {
          n->str = expect_name();
          n->kids.push_back(std::move(x));
        }
        x = grown(std::move(n));
      } else if (is_op("[")) {
        i_++;
        NodePtr parts[3];
        int colons = 0;
        for (;;) {
          if (is_op(":")) {
            if (++colons > 2) error("a slice has at most two ':'");
            i_++;
          } else if (is_op("]")) {
            break;
          } else {
            if (parts[colons]) error("expected ']' or ':'");
            parts[colons] = parse_expr();
          }
        }
        expect_op("]");
        NodePtr n = node(colons ? NK::Slice : NK::Item);
        n->kids.push_back(std::move(x));
        if (colons) {
          for (auto &p : parts) n->kids.push_back(p ? std::move(p) : nullptr);
        } else {
          if (!parts[0]) error("an empty subscript");
          n->kids.push_back(std::move(parts[0]));
        }
        x = grown(std::move(n));
      } else if (is_op("(")) {
        NodePtr n = node(NK::Call);
        n->kids.push_back(std::move(x));
        parse_call_args(*n);
        x = grown(std::move(n));
      } else {
        return x;
      }
    }
  }
  // name[(args)] of a filter; kids[0] is its operand (set by the caller).
  NodePtr parse_filter_call(NodePtr operand) {
    NodePtr n = node(NK::Filter);
    n->str = expect_name();
    while (is_op(".")) {  // dotted filter names
      i_++;
      n->str += "." + expect_name();
    }
    n->kids.push_back(std::move(operand));
    if (is_op("(")) parse_call_args(*n);
    return n;
  }
  NodePtr parse_filters(NodePtr x) {
    for (;;) {
      Deeper d(*this);
      if (is_op("|")) {
        i_++;
        x = grown(parse_filter_call(std::move(x)));
      } else if (is_name("is")) {
        i_++;
        NodePtr n = node(NK::Test);
        if (is_name("not")) {
          n->flag = true;
          i_++;
        }
        n->str = expect_name();
        n->kids.push_back(std::move(x));
        if (is_op("(")) {
          parse_call_args(*n);
        } else if ((cur().kind == TK::Name || cur().kind == TK::Str || cur().kind == TK::Int ||
                    cur().kind == TK::Float || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and") && !is_name("if") &&
                   !is_name("in") && !is_name("not") && !is_name("is")) {
          n->kids.push_back(parse_postfix(parse_primary()));
        }
        x = grown(std::move(n));
      } else if (is_op("(") ) {
        NodePtr n = node(NK::Call);
        n->kids.push_back(std::move(x));
        parse_call_args(*n);
        x = grown(std::move(n));
      } else {
        return x;
      }
    }
  }

  std::vector<Tok> t_;
  size_t i_ = 0;
  const std::string &source_;
  int max_depth_;
  int depth_ = 0;
};

}  // namespace

NodePtr parse_template(const std::string &text, const std::string &source, const Bounds &b) {
  Lexer lex(text, source);
  Parser p(lex.run(), source, b);
  return p.parse();
}

}  // namespace tmpl
}  // namespace lm
}  // namespace ctorch
