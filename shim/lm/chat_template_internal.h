// The chat-template interpreter's parts (private to chat_template*.cpp):
// the value type, the syntax tree, the parser and the evaluator's state.
// Values follow Python's semantics where templates see them (jinja2 runs on
// Python objects): ints are 64-bit (a result past that is refused, never
// wrapped), strings are UTF-8 and index by code point, lists and dicts are
// shared and immutable once made (transformers renders in jinja2's
// ImmutableSandboxedEnvironment), a namespace() is the one mutable object.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "json/json.h"
#include "chat_template.h"

namespace ctorch {
namespace lm {
namespace tmpl {

struct Value;
struct Node;
class Renderer;
using ValueList = std::vector<Value>;
using ValueDict = std::vector<std::pair<std::string, Value>>;  // insertion order, keys distinct

// A call's arguments: positional, then keyword.
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};
using Builtin = std::function<Value(Renderer &, Args &)>;

struct Callable {
  const Node *macro = nullptr;  // a {% macro %} (its node), or
  Builtin builtin;              // a global function or a bound method
  std::string name;
  std::shared_ptr<Callable> caller;  // the {% call %} body a macro sees as caller()
};

struct Value {
  enum Kind : uint8_t { Undefined, None, Bool, Int, Float, Str, List, Dict, Func } kind = Undefined;
  bool b = false;
  bool ns = false;     // a namespace(): a Dict whose attributes {% set %} may assign
  bool tuple = false;  // a List made as a tuple (prints as one; never equals a list)
  bool holds_ns = false;  // a List or Dict with a namespace inside (may not go into a namespace: no cycles)
  uint16_t nest = 0;      // List/Dict nesting depth (bounded: printing and comparing recurse)
  int64_t i = 0;
  double f = 0;
  std::string s;  // Str; for Undefined, the name that was looked up (for messages)
  std::shared_ptr<ValueList> l;
  std::shared_ptr<ValueDict> d;
  std::shared_ptr<Callable> fn;

  static Value undefined(std::string name = "") {
    Value v;
    v.s = std::move(name);
    return v;
  }
  static Value none() { Value v; v.kind = None; return v; }
  static Value boolean(bool x) { Value v; v.kind = Bool; v.b = x; return v; }
  static Value integer(int64_t x) { Value v; v.kind = Int; v.i = x; return v; }
  static Value number(double x) { Value v; v.kind = Float; v.f = x; return v; }
  static Value str(std::string x) { Value v; v.kind = Str; v.s = std::move(x); return v; }
  static Value list(ValueList x) {
    Value v;
    v.kind = List;
    for (const auto &e : x) v.absorb(e);
    v.l = std::make_shared<ValueList>(std::move(x));
    return v;
  }
  static Value tuple_of(ValueList x) {
    Value v = list(std::move(x));
    v.tuple = true;
    return v;
  }
  static Value dict(ValueDict x) {
    Value v;
    v.kind = Dict;
    for (const auto &e : x) v.absorb(e.second);
    v.d = std::make_shared<ValueDict>(std::move(x));
    return v;
  }
  // A container's nesting and namespace flags from one of its items.
  void absorb(const Value &item) {
    holds_ns = holds_ns || item.ns || item.holds_ns;
    if (item.nest + 1 > nest) nest = static_cast<uint16_t>(std::min<int>(item.nest + 1, 60000));
  }
  static Value func(std::shared_ptr<Callable> c) { Value v; v.kind = Func; v.fn = std::move(c); return v; }

  const Value *find(const std::string &key) const {
    if (kind != Dict) return nullptr;
    for (const auto &m : *d)
      if (m.first == key) return &m.second;
    return nullptr;
  }
};

// The syntax tree: one node type for statements and expressions.
enum class NK : uint8_t {
  // statements
  Body, Text, Output, If, For, Set, SetBlock, Macro, CallBlock, Break, Continue, FilterBlock,
  // expressions
  Literal, Name, Attr, Item, Slice, Call, Filter, Test, Neg, Pos, Not, And, Or, Binary, Compare, Cond,
  ListLit, TupleLit, DictLit, Missing,
};

using NodePtr = std::unique_ptr<Node>;
struct Node {
  NK kind;
  int line = 0;
  std::string str;                 // Text, Name, Attr's name, Filter/Test/Macro name, Binary's operator
  std::vector<std::string> names;  // For's targets, Set's target (name or ns, attr), Macro's parameters
  Value lit;                       // Literal
  bool flag = false;               // Test: negated ("is not"); Set: a namespace attribute
  std::vector<NodePtr> kids;       // children: bodies, operands, arguments, list items
  std::vector<std::pair<std::string, NodePtr>> kw;  // keyword arguments, macro parameter defaults
  std::vector<std::string> ops;    // Compare's operators (between kids)
  int height = 1;                  // of the subtree (bounded: evaluating and freeing it recurse)
  explicit Node(NK k, int ln) : kind(k), line(ln) {}
};

// Limits on what one template may make or do.
struct Bounds {
  uint64_t steps = 5000000;          // expression and statement evaluations
  uint64_t output_bytes = 16u << 20; // the rendered text, and any one string or list made on the way
  int depth = 64;                    // nesting of the parsed text (statements and expressions)
  int macro_depth = 16;              // macro calls within macro calls
  int value_depth = 200;             // lists and dicts within lists and dicts (JSON brings up to 128)
};

// The lexer's tokens (chat_template_lex.cpp).
enum class TK : uint8_t { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, Str, Int, Float, Op, End };

struct Tok {
  TK kind;
  std::string text;  // Text: the text; Name/Op: the name or operator; Str: the decoded string; numbers: the literal
  int line;
};
std::vector<Tok> lex_template(const std::string &text, const std::string &source);
// INVALID_ARGUMENT "chat template SOURCE: line N: MSG" for the text's errors.
[[noreturn]] void syntax_error(const std::string &source, int line, const std::string &msg);

// render_chat_template under the given bounds (the fuzz harness's are tighter).
std::string render_bounded(const std::string &text, const ChatInputs &in, const std::string &source,
                           const Bounds &b);

// Parses a template's text into a Body. Throws StatusError naming `source`.
NodePtr parse_template(const std::string &text, const std::string &source, const Bounds &b);

// Python-compatible helpers shared by the evaluator and the built-ins.
std::string py_str(const Value &v);          // str(v)
std::string py_repr(const Value &v);         // repr(v)
std::string py_ascii(const Value &v);        // ascii(v): repr with non-ASCII escaped
bool truthy(const Value &v);
bool values_equal(const Value &a, const Value &b);
std::string type_name(const Value &v);
size_t utf8_length(const std::string &s);    // code points
std::vector<uint32_t> utf8_decode(const std::string &s);
std::string utf8_encode(const std::vector<uint32_t> &cps, size_t from, size_t to);
Value from_json(const json::Value &j);
// json.dumps(v, ensure_ascii, indent (<0: none), separators as Python
// chooses them, sort_keys), as transformers' tojson filter calls it.
void to_json(std::string &out, const Value &v, bool ensure_ascii, int indent, bool sort_keys, int level,
             Renderer &r);

// Python's text operations (chat_template_text.cpp).
enum class Case { Lower, Upper, Title, Capitalize };
std::string py_case(Renderer &r, const std::string &s, Case how);  // str.lower/upper/title/capitalize
std::string jinja_title(Renderer &r, const std::string &s);         // jinja2's title filter
bool py_is_case(const std::string &s, bool upper);                  // str.isupper / str.islower
bool py_space(uint32_t c);                                          // str.isspace of one character
// str.format(*a.pos, **a.kw).
std::string py_format(Renderer &r, const std::string &fmt, const Args &a);
// fmt % args: a tuple's items, a mapping's keys (%(name)s), or one value.
std::string py_percent(Renderer &r, const std::string &fmt, const Value &args, const std::string &what);

// The globals every template sees: range, namespace, dict, raise_exception, strftime_now.
ValueDict builtin_globals();

class Renderer {
 public:
  Renderer(const std::string &source, const Bounds &b) : source_(source), bounds_(b) {}
  std::string render(const Node &body, ValueDict globals);

  // Errors: INVALID_ARGUMENT "chat template SOURCE: line N: MSG".
  [[noreturn]] void fail(const std::string &msg) const;
  void step();
  // n more steps at once: work proportional to a value's size (a copy, a
  // scan, a decode) counts toward the step bound.
  void charge(uint64_t n);
  void check_size(uint64_t bytes) const;
  // Refuses a value nested deeper than the depth bound.
  void check_nest(const Value &v) const;
  int line = 0;

  // The built-ins (chat_template_lib.cpp).
  Value call_filter(const std::string &name, Value v, Args &a);
  Value sort_filter(const std::string &name, const Value &v, Args &a);  // sort, dictsort
  bool call_test(const std::string &name, const Value &v, Args &a);
  Value method(const Value &obj, const std::string &name);  // obj.name as a bound method, or undefined
  Value call(const Value &f, Args &a);

 private:
  struct Frame {
    ValueDict vars;
    Frame *parent;
  };
  struct Loop;
  enum class Flow { Normal, Break, Continue };

  Flow exec(const Node &n, std::string &out);
  Flow exec_body(const Node &body, std::string &out);
  Flow exec_for(const Node &n, std::string &out);
  Value eval(const Node &n);
  Value eval_binary(const std::string &op, const Value &a, const Value &b);
  bool compare(const std::string &op, const Value &a, const Value &b);
  Value getattr(const Value &obj, const std::string &name);
  Value getitem(const Value &obj, const Value &key);
  Value slice(const Value &obj, const Value &a, const Value &b, const Value &c);
  Value call_macro(const Callable &c, Args &a);
  Value lookup(const std::string &name);
  void assign(const std::string &name, Value v);
  void append(std::string &out, const std::string &s);

  const std::string &source_;
  Bounds bounds_;
  uint64_t steps_ = 0;
  int depth_ = 0;
  Frame *frame_ = nullptr;
  Frame *root_ = nullptr;
};

}  // namespace tmpl
}  // namespace lm
}  // namespace ctorch
