// Tokens into a syntax tree: a recursive-descent parser with jinja2's
// precedence and statements. Nesting is bounded (the parser's recursion and
// the tree's height) so that a hostile text cannot exhaust the stack.
#include "chat_template_internal.h"

#include <cstring>

#include "core/internal.h"

namespace ctorch {
namespace lm {
namespace tmpl {
namespace {

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
        syntax_error(p_.source_, p_.cur().line, "nesting deeper than the bound of " + std::to_string(p_.max_depth_) + " levels");
    }
    ~Deeper() { --p_.depth_; }
    Parser &p_;
  };

  const Tok &cur() const { return t_[i_]; }
  const Tok &peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  bool is_op(const char *op) const { return cur().kind == TK::Op && cur().text == op; }
  bool is_name(const char *n) const { return cur().kind == TK::Name && cur().text == n; }
  [[noreturn]] void error(const std::string &msg) const { syntax_error(source_, cur().line, msg); }
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
      if (cur().kind == TK::VarEnd || cur().kind == TK::BlockEnd || is_name("if") || is_op(")")) break;  // (a,)
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
  Parser p(lex_template(text, source), source, b);
  return p.parse();
}

}  // namespace tmpl
}  // namespace lm
}  // namespace ctorch
