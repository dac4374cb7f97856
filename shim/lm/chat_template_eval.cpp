// The evaluator: statements and expressions over Values, with jinja2's
// scoping (a for loop's body gets a fresh frame each iteration, so a
// {% set %} inside it does not outlive the iteration; a macro sees the
// template's variables as they are when it is called; namespace() objects
// carry values out of loops) and every bound checked as it is reached.
#include <cmath>

#include "chat_template_internal.h"
#include "core/internal.h"

namespace ctorch {
namespace lm {
namespace tmpl {

void Renderer::fail(const std::string &msg) const {
  throw StatusError(CTORCH_INVALID_ARGUMENT,
                    "chat template " + source_ + ": line " + std::to_string(line) + ": " + msg);
}

void Renderer::step() {
  if (++steps_ > bounds_.steps)
    fail("rendering exceeds the step bound (" + std::to_string(bounds_.steps) + " steps): a loop too long or endless");
}

void Renderer::charge(uint64_t n) {
  steps_ += n;
  step();
}

void Renderer::check_nest(const Value &v) const {
  if (v.nest > bounds_.value_depth)
    fail("a value nests deeper than the bound of " + std::to_string(bounds_.value_depth) + " levels");
}

void Renderer::check_size(uint64_t bytes) const {
  if (bytes > bounds_.output_bytes)
    fail("rendering exceeds the output bound (" + std::to_string(bounds_.output_bytes) + " bytes)");
}

void Renderer::append(std::string &out, const std::string &s) {
  check_size(uint64_t(out.size()) + s.size());
  charge(s.size() / 64);
  out += s;
}

std::string Renderer::render(const Node &body, ValueDict globals) {
  Frame root{std::move(globals), nullptr};
  root_ = frame_ = &root;
  std::string out;
  Flow f = exec_body(body, out);
  if (f != Flow::Normal) fail("'break' or 'continue' outside a loop");
  root_ = frame_ = nullptr;
  return out;
}

Value Renderer::lookup(const std::string &name) {
  for (Frame *f = frame_; f; f = f->parent)
    for (auto &v : f->vars)
      if (v.first == name) return v.second;
  return Value::undefined(name);
}

void Renderer::assign(const std::string &name, Value v) {
  for (auto &e : frame_->vars)
    if (e.first == name) {
      e.second = std::move(v);
      return;
    }
  frame_->vars.emplace_back(name, std::move(v));
}

Renderer::Flow Renderer::exec_body(const Node &body, std::string &out) {
  for (const auto &k : body.kids) {
    Flow f = exec(*k, out);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Renderer::Flow Renderer::exec(const Node &n, std::string &out) {
  step();
  line = n.line;
  switch (n.kind) {
    case NK::Body: return exec_body(n, out);
    case NK::Text: append(out, n.str); return Flow::Normal;
    case NK::Output: {
      Value v = eval(*n.kids[0]);
      line = n.line;
      append(out, py_str(v));
      return Flow::Normal;
    }
    case NK::If: {
      size_t k = 0;
      for (; k + 1 < n.kids.size(); k += 2) {
        if (!n.kids[k]) return exec_body(*n.kids[k + 1], out);  // else
        if (truthy(eval(*n.kids[k]))) return exec_body(*n.kids[k + 1], out);
      }
      return Flow::Normal;
    }
    case NK::For: return exec_for(n, out);
    case NK::Set: {
      Value v = eval(*n.kids[0]);
      line = n.line;
      if (n.flag) {
        Value obj = lookup(n.names[0]);
        if (!obj.ns) fail("cannot assign attribute '" + n.names[1] + "' of " + type_name(obj) + " (only of a namespace)");
        if (v.ns || v.holds_ns) fail("a namespace may not hold a namespace");
        check_nest(v);
        for (auto &e : *obj.d)
          if (e.first == n.names[1]) {
            e.second = std::move(v);
            return Flow::Normal;
          }
        obj.d->emplace_back(n.names[1], std::move(v));
      } else {
        assign(n.names[0], std::move(v));
      }
      return Flow::Normal;
    }
    case NK::SetBlock: {
      std::string text;
      Flow f = exec_body(*n.kids[0], text);
      if (f != Flow::Normal) return f;
      Value v = Value::str(std::move(text));
      std::vector<const Node *> chain;
      for (const Node *p = n.kids[1].get(); p; p = p->kids[0].get()) chain.push_back(p);
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        Args a;
        for (const auto &k : (*it)->kids)
          if (k.get() != (*it)->kids[0].get()) a.pos.push_back(eval(*k));
        for (const auto &kw : (*it)->kw) a.kw.emplace_back(kw.first, eval(*kw.second));
        v = call_filter((*it)->str, std::move(v), a);
      }
      assign(n.names[0], std::move(v));
      return Flow::Normal;
    }
    case NK::FilterBlock: {
      std::string text;
      Flow f = exec_body(*n.kids[0], text);
      if (f != Flow::Normal) return f;
      std::vector<const Node *> chain;
      for (const Node *p = n.kids[1].get(); p; p = p->kids[0].get()) chain.push_back(p);
      Value v = Value::str(std::move(text));
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        Args a;
        for (size_t k = 1; k < (*it)->kids.size(); k++) a.pos.push_back(eval(*(*it)->kids[k]));
        for (const auto &kw : (*it)->kw) a.kw.emplace_back(kw.first, eval(*kw.second));
        v = call_filter((*it)->str, std::move(v), a);
      }
      append(out, py_str(v));
      return Flow::Normal;
    }
    case NK::Macro: {
      auto c = std::make_shared<Callable>();
      c->macro = &n;
      c->name = n.str;
      assign(n.str, Value::func(std::move(c)));
      return Flow::Normal;
    }
    case NK::CallBlock: {
      const Node &call = *n.kids[0];
      Value f = eval(*call.kids[0]);
      if (f.kind != Value::Func || !f.fn->macro) fail("{% call %} needs a macro");
      Args a;
      for (size_t k = 1; k < call.kids.size(); k++) a.pos.push_back(eval(*call.kids[k]));
      for (const auto &kw : call.kw) a.kw.emplace_back(kw.first, eval(*kw.second));
      auto caller = std::make_shared<Callable>();
      caller->macro = n.kids[1].get();
      caller->name = "caller";
      Callable with = *f.fn;
      with.caller = caller;
      append(out, py_str(call_macro(with, a)));
      return Flow::Normal;
    }
    case NK::Break: return Flow::Break;
    case NK::Continue: return Flow::Continue;
    default: fail("internal: not a statement");
  }
}

Renderer::Flow Renderer::exec_for(const Node &n, std::string &out) {
  Value seq = eval(*n.kids[0]);
  line = n.line;
  ValueList items;
  switch (seq.kind) {
    case Value::List:
      charge(seq.l->size());  // the copy below
      items = *seq.l;
      break;
    case Value::Dict:
      for (const auto &e : *seq.d) items.push_back(Value::str(e.first));
      break;
    case Value::Str: {
      std::vector<uint32_t> cps = utf8_decode(seq.s);
      for (size_t k = 0; k < cps.size(); k++) items.push_back(Value::str(utf8_encode(cps, k, k + 1)));
      break;
    }
    case Value::Undefined: break;  // jinja2 iterates an undefined value as empty
    default: fail("'" + type_name(seq) + "' object is not iterable");
  }
  auto bind = [&](Frame &f, const Value &item) {
    if (n.names.size() == 1) {
      f.vars.emplace_back(n.names[0], item);
      return;
    }
    if (item.kind != Value::List || item.l->size() != n.names.size())
      fail("cannot unpack " + type_name(item) + " into " + std::to_string(n.names.size()) + " loop variables");
    for (size_t k = 0; k < n.names.size(); k++) f.vars.emplace_back(n.names[k], (*item.l)[k]);
  };
  if (n.kids[1]) {  // {% for x in xs if cond %}: the loop sees only the kept items
    ValueList kept;
    for (const auto &it : items) {
      step();
      Frame f{{}, frame_};
      bind(f, it);
      frame_ = &f;
      bool keep;
      try {
        keep = truthy(eval(*n.kids[1]));
      } catch (...) {
        frame_ = f.parent;
        throw;
      }
      frame_ = f.parent;
      if (keep) kept.push_back(it);
    }
    items.swap(kept);
  }
  if (items.empty()) {
    if (n.kids[3]) exec_body(*n.kids[3], out);
    return Flow::Normal;
  }
  // One loop object per loop, updated in place each iteration (as jinja2's
  // LoopContext is): building a new one per iteration was most of a step.
  const int64_t len = static_cast<int64_t>(items.size());
  auto at = std::make_shared<int64_t>(0);
  auto cycle = std::make_shared<Callable>();
  cycle->name = "loop.cycle";
  cycle->builtin = [at](Renderer &r, Args &a) {
    if (a.pos.empty()) r.fail("loop.cycle() needs at least one value");
    return a.pos[static_cast<size_t>(*at) % a.pos.size()];
  };
  static const char *const kFields[] = {"index", "index0", "revindex", "revindex0", "first", "last",
                                        "previtem", "nextitem", "length", "depth", "depth0", "cycle"};
  ValueDict fields;
  for (const char *name : kFields) fields.emplace_back(name, Value());
  Value loop = Value::dict(std::move(fields));
  ValueDict &lv = *loop.d;
  lv[8].second = Value::integer(len);
  lv[9].second = Value::integer(1);
  lv[10].second = Value::integer(0);
  lv[11].second = Value::func(cycle);
  for (int64_t k = 0; k < len; k++) {
    step();
    *at = k;
    lv[0].second = Value::integer(k + 1);
    lv[1].second = Value::integer(k);
    lv[2].second = Value::integer(len - k);
    lv[3].second = Value::integer(len - k - 1);
    lv[4].second = Value::boolean(k == 0);
    lv[5].second = Value::boolean(k == len - 1);
    lv[6].second = k > 0 ? items[k - 1] : Value::undefined("previtem");
    lv[7].second = k + 1 < len ? items[k + 1] : Value::undefined("nextitem");
    Frame f{{}, frame_};
    f.vars.reserve(n.names.size() + 1);
    bind(f, items[k]);
    f.vars.emplace_back("loop", loop);
    frame_ = &f;
    Flow fl;
    try {
      fl = exec_body(*n.kids[2], out);
    } catch (...) {
      frame_ = f.parent;
      throw;
    }
    frame_ = f.parent;
    if (fl == Flow::Break) break;
  }
  return Flow::Normal;
}

Value Renderer::call_macro(const Callable &c, Args &a) {
  const Node &m = *c.macro;
  if (++depth_ > bounds_.macro_depth)
    fail("macro calls nest deeper than the bound of " + std::to_string(bounds_.macro_depth));
  Frame f{{}, root_};
  size_t np = m.names.size();
  if (a.pos.size() > np) fail("macro '" + c.name + "' takes " + std::to_string(np) + " arguments, " +
                              std::to_string(a.pos.size()) + " given");
  for (size_t k = 0; k < np; k++) {
    const std::string &p = m.names[k];
    Value v = Value::undefined(p);
    bool given = false;
    if (k < a.pos.size()) {
      v = a.pos[k];
      given = true;
    }
    for (auto &kw : a.kw)
      if (kw.first == p) {
        if (given) fail("macro '" + c.name + "' got argument '" + p + "' twice");
        v = kw.second;
        given = true;
      }
    if (!given)
      for (const auto &d : m.kw)
        if (d.first == p) {
          Frame *saved = frame_;
          frame_ = &f;
          v = eval(*d.second);
          frame_ = saved;
        }
    f.vars.emplace_back(p, std::move(v));
  }
  for (auto &kw : a.kw) {
    bool known = false;
    for (const auto &p : m.names) known = known || p == kw.first;
    if (!known) fail("macro '" + c.name + "' has no parameter '" + kw.first + "'");
  }
  if (c.caller) f.vars.emplace_back("caller", Value::func(c.caller));
  Frame *saved = frame_;
  frame_ = &f;
  std::string out;
  int saved_line = line;
  try {
    exec_body(*m.kids[0], out);
  } catch (...) {
    frame_ = saved;
    throw;
  }
  frame_ = saved;
  line = saved_line;
  depth_--;
  return Value::str(std::move(out));
}

Value Renderer::call(const Value &f, Args &a) {
  if (f.kind == Value::Undefined) fail("'" + f.s + "' is undefined");
  if (f.kind != Value::Func) fail("'" + type_name(f) + "' object is not callable");
  if (f.fn->macro) return call_macro(*f.fn, a);
  return f.fn->builtin(*this, a);
}

Value Renderer::getattr(const Value &obj, const std::string &name) {
  // jinja2: an attribute, else the item of that name; methods of str, dict, list
  if (obj.kind == Value::Dict) {
    if (const Value *v = obj.find(name)) return *v;
    if (!obj.ns) {
      Value m = method(obj, name);
      if (m.kind != Value::Undefined) return m;
    }
    return Value::undefined(name);
  }
  if (obj.kind == Value::Undefined) fail("'" + (obj.s.empty() ? std::string("value") : obj.s) + "' is undefined");
  Value m = method(obj, name);
  if (m.kind == Value::Undefined) m.s = name;
  return m;
}

Value Renderer::getitem(const Value &obj, const Value &key) {
  if (obj.kind == Value::Str) charge(obj.s.size() / 64);
  if (obj.kind == Value::Undefined) fail("'" + (obj.s.empty() ? std::string("value") : obj.s) + "' is undefined");
  if (obj.kind == Value::Dict) {
    if (key.kind == Value::Str) {
      if (const Value *v = obj.find(key.s)) return *v;
      return Value::undefined(key.s);
    }
    return Value::undefined(py_str(key));
  }
  if (obj.kind == Value::List || obj.kind == Value::Str) {
    if (key.kind == Value::Str) return getattr(obj, key.s);
    if (key.kind != Value::Int && key.kind != Value::Bool) fail("indices must be integers, not " + type_name(key));
    int64_t idx = key.kind == Value::Bool ? key.b : key.i;
    if (obj.kind == Value::List) {
      int64_t n = static_cast<int64_t>(obj.l->size());
      if (idx < 0) idx += n;
      if (idx < 0 || idx >= n) return Value::undefined("[" + std::to_string(key.i) + "]");
      return (*obj.l)[idx];
    }
    std::vector<uint32_t> cps = utf8_decode(obj.s);
    int64_t n = static_cast<int64_t>(cps.size());
    if (idx < 0) idx += n;
    if (idx < 0 || idx >= n) return Value::undefined("[" + std::to_string(key.i) + "]");
    return Value::str(utf8_encode(cps, idx, idx + 1));
  }
  if (key.kind == Value::Str) return getattr(obj, key.s);
  return Value::undefined(py_str(key));
}

Value Renderer::slice(const Value &obj, const Value &a, const Value &b, const Value &c) {
  auto get = [&](const Value &v, bool *has) -> int64_t {
    *has = v.kind != Value::Undefined && v.kind != Value::None;
    if (!*has) return 0;
    if (v.kind != Value::Int) fail("slice indices must be integers or None");
    return v.i;
  };
  bool ha, hb, hc;
  int64_t start = get(a, &ha), stop = get(b, &hb), stepv = get(c, &hc);
  if (!hc) stepv = 1;
  if (stepv == 0) fail("slice step cannot be zero");
  std::vector<uint32_t> cps;
  int64_t n;
  charge(obj.kind == Value::Str ? obj.s.size() / 64 : obj.kind == Value::List ? obj.l->size() : 0);
  if (obj.kind == Value::List) n = static_cast<int64_t>(obj.l->size());
  else if (obj.kind == Value::Str) n = static_cast<int64_t>((cps = utf8_decode(obj.s)).size());
  else fail("'" + type_name(obj) + "' object is not subscriptable");
  // Python's slice.indices
  auto clamp = [&](int64_t v, bool has, int64_t dflt) {
    if (!has) return dflt;
    if (v < 0) v += n;
    if (stepv > 0) return std::min(std::max<int64_t>(v, 0), n);
    return std::min(std::max<int64_t>(v, -1), n - 1);
  };
  int64_t s0 = clamp(start, ha, stepv > 0 ? 0 : n - 1), s1 = clamp(stop, hb, stepv > 0 ? n : -1);
  std::vector<int64_t> idx;
  for (int64_t k = s0; stepv > 0 ? k < s1 : k > s1; k += stepv) idx.push_back(k);
  if (obj.kind == Value::List) {
    ValueList out;
    for (int64_t k : idx) out.push_back((*obj.l)[k]);
    Value r = Value::list(std::move(out));
    r.tuple = obj.tuple;
    return r;
  }
  std::string out;
  for (int64_t k : idx) out += utf8_encode(cps, k, k + 1);
  return Value::str(std::move(out));
}

Value Renderer::eval(const Node &n) {
  step();
  line = n.line;
  switch (n.kind) {
    case NK::Literal: return n.lit;
    case NK::Name: {
      Value v = lookup(n.str);
      return v;
    }
    case NK::Attr: return getattr(eval(*n.kids[0]), n.str);
    case NK::Item: {
      Value o = eval(*n.kids[0]);
      return getitem(o, eval(*n.kids[1]));
    }
    case NK::Slice: {
      Value o = eval(*n.kids[0]);
      Value p[3];
      for (int k = 0; k < 3; k++)
        if (n.kids[k + 1]) p[k] = eval(*n.kids[k + 1]);
      return slice(o, p[0], p[1], p[2]);
    }
    case NK::Call: {
      Value f = eval(*n.kids[0]);
      Args a;
      for (size_t k = 1; k < n.kids.size(); k++) a.pos.push_back(eval(*n.kids[k]));
      for (const auto &kw : n.kw) a.kw.emplace_back(kw.first, eval(*kw.second));
      line = n.line;
      if (f.kind == Value::Undefined && n.kids[0]->kind == NK::Name) fail("'" + n.kids[0]->str + "' is undefined");
      return call(f, a);
    }
    case NK::Filter: {
      Value v = eval(*n.kids[0]);
      Args a;
      for (size_t k = 1; k < n.kids.size(); k++) a.pos.push_back(eval(*n.kids[k]));
      for (const auto &kw : n.kw) a.kw.emplace_back(kw.first, eval(*kw.second));
      line = n.line;
      return call_filter(n.str, std::move(v), a);
    }
    case NK::Test: {
      Value v = eval(*n.kids[0]);
      Args a;
      for (size_t k = 1; k < n.kids.size(); k++) a.pos.push_back(eval(*n.kids[k]));
      for (const auto &kw : n.kw) a.kw.emplace_back(kw.first, eval(*kw.second));
      line = n.line;
      return Value::boolean(call_test(n.str, v, a) != n.flag);
    }
    case NK::Neg: case NK::Pos: {
      Value v = eval(*n.kids[0]);
      if (v.kind == Value::Bool) v = Value::integer(v.b);
      if (v.kind == Value::Int) {
        if (n.kind == NK::Neg && v.i == INT64_MIN) fail("integer overflow");
        return n.kind == NK::Neg ? Value::integer(-v.i) : v;
      }
      if (v.kind == Value::Float) return n.kind == NK::Neg ? Value::number(-v.f) : v;
      fail("bad operand type for unary " + std::string(n.kind == NK::Neg ? "-" : "+") + ": '" + type_name(v) + "'");
    }
    case NK::Not: return Value::boolean(!truthy(eval(*n.kids[0])));
    case NK::And: {
      Value a = eval(*n.kids[0]);
      return truthy(a) ? eval(*n.kids[1]) : a;
    }
    case NK::Or: {
      Value a = eval(*n.kids[0]);
      return truthy(a) ? a : eval(*n.kids[1]);
    }
    case NK::Binary: {
      Value a = eval(*n.kids[0]);
      Value b = eval(*n.kids[1]);
      line = n.line;
      return eval_binary(n.str, a, b);
    }
    case NK::Compare: {
      Value a = eval(*n.kids[0]);
      for (size_t k = 0; k < n.ops.size(); k++) {
        Value b = eval(*n.kids[k + 1]);
        line = n.line;
        if (!compare(n.ops[k], a, b)) return Value::boolean(false);
        a = std::move(b);
      }
      return Value::boolean(true);
    }
    case NK::Cond: {
      if (truthy(eval(*n.kids[0]))) return eval(*n.kids[1]);
      return n.kids[2] ? eval(*n.kids[2]) : Value::undefined();
    }
    case NK::ListLit: case NK::TupleLit: {
      ValueList items;
      for (const auto &k : n.kids) items.push_back(eval(*k));
      Value v = n.kind == NK::TupleLit ? Value::tuple_of(std::move(items)) : Value::list(std::move(items));
      check_nest(v);
      return v;
    }
    case NK::DictLit: {
      ValueDict d;
      for (size_t k = 0; k + 1 < n.kids.size(); k += 2) {
        Value key = eval(*n.kids[k]);
        if (key.kind != Value::Str) fail("dict keys other than strings are not supported");
        Value v = eval(*n.kids[k + 1]);
        bool found = false;
        for (auto &e : d)
          if (e.first == key.s) {
            e.second = v;
            found = true;
          }
        if (!found) d.emplace_back(key.s, std::move(v));
      }
      Value v = Value::dict(std::move(d));
      check_nest(v);
      return v;
    }
    default: fail("internal: not an expression");
  }
}

namespace {
bool as_number(const Value &v, double *f, int64_t *i, bool *is_int) {
  if (v.kind == Value::Int || v.kind == Value::Bool) {
    *i = v.kind == Value::Bool ? v.b : v.i;
    *f = static_cast<double>(*i);
    *is_int = true;
    return true;
  }
  if (v.kind == Value::Float) {
    *f = v.f;
    *is_int = false;
    return true;
  }
  return false;
}
}  // namespace

Value Renderer::eval_binary(const std::string &op, const Value &a, const Value &b) {
  auto size_of = [](const Value &v) -> uint64_t {
    return v.kind == Value::Str ? v.s.size() / 64 : v.kind == Value::List ? v.l->size() : 0;
  };
  charge(size_of(a) + size_of(b));
  if (op == "~") {
    std::string s = py_str(a) + py_str(b);
    check_size(s.size());
    return Value::str(std::move(s));
  }
  // str % x: printf-style formatting (an undefined x prints as '')
  if (op == "%" && a.kind == Value::Str) return Value::str(py_percent(*this, a.s, b, "'%' formatting"));
  if (a.kind == Value::Undefined || b.kind == Value::Undefined) {
    const Value &u = a.kind == Value::Undefined ? a : b;
    fail("'" + (u.s.empty() ? std::string("value") : u.s) + "' is undefined");
  }
  double fa = 0, fb = 0;
  int64_t ia = 0, ib = 0;
  bool inta = false, intb = false;
  bool na = as_number(a, &fa, &ia, &inta), nb = as_number(b, &fb, &ib, &intb);
  if (na && nb) {
    bool ints = inta && intb;
    int64_t r;
    if (op == "+") {
      if (!ints) return Value::number(fa + fb);
      if (__builtin_add_overflow(ia, ib, &r)) fail("integer overflow");
      return Value::integer(r);
    }
    if (op == "-") {
      if (!ints) return Value::number(fa - fb);
      if (__builtin_sub_overflow(ia, ib, &r)) fail("integer overflow");
      return Value::integer(r);
    }
    if (op == "*") {
      if (!ints) return Value::number(fa * fb);
      if (__builtin_mul_overflow(ia, ib, &r)) fail("integer overflow");
      return Value::integer(r);
    }
    if (op == "/") {
      if (fb == 0) fail("division by zero");
      return Value::number(fa / fb);
    }
    if (op == "//" || op == "%") {
      if (fb == 0) fail(op == "//" ? "integer division or modulo by zero" : "modulo by zero");
      if (ints) {
        if (ia == INT64_MIN && ib == -1) fail("integer overflow");
        int64_t q = ia / ib, m = ia % ib;
        if (m != 0 && ((m < 0) != (ib < 0))) {
          q -= 1;
          m += ib;
        }
        return Value::integer(op == "//" ? q : m);
      }
      // Python's float divmod
      double mod = std::fmod(fa, fb), div = (fa - mod) / fb;
      if (mod != 0 && ((fb < 0) != (mod < 0))) {
        mod += fb;
        div -= 1.0;
      }
      if (op == "%") return Value::number(mod != 0 ? mod : std::copysign(0.0, fb));
      double fd = std::floor(div);
      if (div - fd > 0.5) fd += 1.0;
      return Value::number(div != 0 ? fd : std::copysign(0.0, fa / fb));
    }
    if (op == "**") {
      if (ints && ib >= 0) {
        int64_t acc = 1;
        for (int64_t k = 0; k < ib; k++) {
          step();
          if (__builtin_mul_overflow(acc, ia, &acc)) fail("integer overflow");
        }
        return Value::integer(acc);
      }
      return Value::number(std::pow(fa, fb));
    }
  }
  if (op == "+" && a.kind == Value::Str && b.kind == Value::Str) {
    check_size(uint64_t(a.s.size()) + b.s.size());
    return Value::str(a.s + b.s);
  }
  if (op == "+" && a.kind == Value::List && b.kind == Value::List) {
    check_size(uint64_t(a.l->size()) + b.l->size());
    ValueList out(*a.l);
    out.insert(out.end(), b.l->begin(), b.l->end());
    return Value::list(std::move(out));
  }
  if (op == "*" && ((a.kind == Value::Str || a.kind == Value::List) && (b.kind == Value::Int || b.kind == Value::Bool))) {
    int64_t times = std::max<int64_t>(b.kind == Value::Bool ? b.b : b.i, 0);
    uint64_t unit = a.kind == Value::Str ? a.s.size() : a.l->size();
    if (unit && uint64_t(times) > bounds_.output_bytes / unit) check_size(bounds_.output_bytes + 1);
    charge(uint64_t(times) * unit / (a.kind == Value::Str ? 64 : 1));
    if (a.kind == Value::Str) {
      std::string s;
      for (int64_t k = 0; k < times; k++) s += a.s;
      return Value::str(std::move(s));
    }
    ValueList out;
    for (int64_t k = 0; k < times; k++) out.insert(out.end(), a.l->begin(), a.l->end());
    return Value::list(std::move(out));
  }
  if (op == "*" && (b.kind == Value::Str || b.kind == Value::List) && (a.kind == Value::Int || a.kind == Value::Bool))
    return eval_binary(op, b, a);
  if (op == "+" && a.kind == Value::Str)
    fail("can only concatenate str (not \"" + type_name(b) + "\") to str");
  fail("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

bool Renderer::compare(const std::string &op, const Value &a, const Value &b) {
  if (op == "==" || op == "!=") {
    charge(a.kind == Value::List ? a.l->size() : a.kind == Value::Dict ? a.d->size() : 0);
    return values_equal(a, b) == (op == "==");
  }
  if (op == "in" || op == "notin") {
    bool found = false;
    charge(b.kind == Value::Str ? b.s.size() / 64 : b.kind == Value::List ? b.l->size() : 0);
    if (b.kind == Value::Str) {
      if (a.kind != Value::Str) fail("'in <string>' requires string as left operand, not " + type_name(a));
      found = b.s.find(a.s) != std::string::npos;
    } else if (b.kind == Value::List) {
      for (const auto &x : *b.l) found = found || values_equal(a, x);
    } else if (b.kind == Value::Dict) {
      found = a.kind == Value::Str && b.find(a.s);
    } else if (b.kind == Value::Undefined) {
      fail("'" + (b.s.empty() ? std::string("value") : b.s) + "' is undefined");
    } else {
      fail("argument of type '" + type_name(b) + "' is not iterable");
    }
    return op == "in" ? found : !found;
  }
  double fa = 0, fb = 0;
  int64_t ia = 0, ib = 0;
  bool inta = false, intb = false;
  int c;
  if (as_number(a, &fa, &ia, &inta) && as_number(b, &fb, &ib, &intb)) {
    if (inta && intb) c = ia < ib ? -1 : ia > ib;
    else {
      if (std::isnan(fa) || std::isnan(fb)) return false;
      c = fa < fb ? -1 : fa > fb;
    }
  } else if (a.kind == Value::Str && b.kind == Value::Str) {
    c = a.s.compare(b.s);  // UTF-8 byte order is code point order
    c = c < 0 ? -1 : c > 0;
  } else if (a.kind == Value::List && b.kind == Value::List && a.tuple == b.tuple) {
    // Python's sequences: the first items that differ decide, else the lengths.
    size_t n = std::min(a.l->size(), b.l->size());
    charge(n);
    for (size_t k = 0; k < n; k++)
      if (!values_equal((*a.l)[k], (*b.l)[k])) return compare(op, (*a.l)[k], (*b.l)[k]);
    c = a.l->size() < b.l->size() ? -1 : a.l->size() > b.l->size();
  } else {
    if (a.kind == Value::Undefined || b.kind == Value::Undefined) {
      const Value &u = a.kind == Value::Undefined ? a : b;
      fail("'" + (u.s.empty() ? std::string("value") : u.s) + "' is undefined");
    }
    fail("'" + op + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
  }
  if (op == "<") return c < 0;
  if (op == ">") return c > 0;
  if (op == "<=") return c <= 0;
  return c >= 0;
}

}  // namespace tmpl
}  // namespace lm
}  // namespace ctorch
