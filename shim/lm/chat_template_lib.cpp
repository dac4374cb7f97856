// The built-ins templates call: jinja2's filters and tests (the ones chat
// templates use), the str/dict methods the sandbox lets them call, and the
// globals transformers adds (raise_exception, strftime_now). Anything else
// is refused by name rather than guessed at.
#include <algorithm>
#include <ctime>

#include "chat_template_internal.h"
#include "core/internal.h"

namespace ctorch {
namespace lm {
namespace tmpl {
namespace {

// The argument `name` at position `pos` (or by keyword), or nullptr.
const Value *arg(const Args &a, size_t pos, const char *name) {
  for (const auto &kw : a.kw)
    if (kw.first == name) return &kw.second;
  return pos < a.pos.size() ? &a.pos[pos] : nullptr;
}
void check_args(Renderer &r, const Args &a, size_t max_pos, std::initializer_list<const char *> names,
                const std::string &what) {
  if (a.pos.size() > max_pos) r.fail(what + " takes at most " + std::to_string(max_pos) + " positional arguments");
  for (const auto &kw : a.kw) {
    bool ok = false;
    for (const char *n : names) ok = ok || kw.first == n;
    if (!ok) r.fail(what + " has no argument '" + kw.first + "'");
  }
}
const std::string &need_str(Renderer &r, const Value &v, const std::string &what) {
  if (v.kind != Value::Str) r.fail(what + " needs a string, not " + type_name(v));
  return v.s;
}

// str.strip / lstrip / rstrip (chars: None = whitespace)
std::string strip(const std::string &s, const Value *chars, bool left, bool right) {
  std::vector<uint32_t> cps = utf8_decode(s);
  std::vector<uint32_t> set;
  bool ws = !chars || chars->kind == Value::None || chars->kind == Value::Undefined;
  if (!ws) set = utf8_decode(chars->s);
  auto strip_it = [&](uint32_t c) { return ws ? py_space(c) : std::find(set.begin(), set.end(), c) != set.end(); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) b++;
  if (right)
    while (e > b && strip_it(cps[e - 1])) e--;
  return utf8_encode(cps, b, e);
}
std::string replace_all(const std::string &s, const std::string &from, const std::string &to, int64_t count,
                        Renderer &r) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between every character
    std::vector<uint32_t> cps = utf8_decode(s);
    for (size_t k = 0; k <= cps.size(); k++) {
      if (count < 0 || static_cast<int64_t>(k) < count) out += to;
      if (k < cps.size()) out += utf8_encode(cps, k, k + 1);
      r.check_size(out.size());
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  for (;;) {
    size_t f = s.find(from, pos);
    if (f == std::string::npos || (count >= 0 && done >= count)) break;
    out.append(s, pos, f - pos);
    out += to;
    r.check_size(out.size());
    pos = f + from.size();
    done++;
  }
  out.append(s, pos, std::string::npos);
  return out;
}
std::vector<std::string> py_split(const std::string &s, const Value *sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep || sep->kind == Value::None) {
    std::vector<uint32_t> cps = utf8_decode(s);
    size_t k = 0;
    while (k < cps.size()) {
      while (k < cps.size() && py_space(cps[k])) k++;
      if (k == cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(utf8_encode(cps, k, cps.size()));  // the rest keeps its trailing space
        break;
      }
      size_t b = k;
      while (k < cps.size() && !py_space(cps[k])) k++;
      out.push_back(utf8_encode(cps, b, k));
    }
    return out;
  }
  size_t pos = 0;
  for (;;) {
    size_t f = maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit ? std::string::npos : s.find(sep->s, pos);
    if (f == std::string::npos) {
      out.push_back(s.substr(pos));
      return out;
    }
    out.push_back(s.substr(pos, f - pos));
    pos = f + sep->s.size();
  }
}
Value str_list(const std::vector<std::string> &v) {
  ValueList l;
  for (const auto &s : v) l.push_back(Value::str(s));
  return Value::list(std::move(l));
}
ValueList iterate(Renderer &r, const Value &v, const std::string &what) {
  r.charge(v.kind == Value::List ? v.l->size() : v.kind == Value::Dict ? v.d->size() : v.s.size() / 16);
  switch (v.kind) {
    case Value::List: return *v.l;
    case Value::Undefined: return {};
    case Value::Dict: {
      ValueList l;
      for (const auto &e : *v.d) l.push_back(Value::str(e.first));
      return l;
    }
    case Value::Str: {
      std::vector<uint32_t> cps = utf8_decode(v.s);
      ValueList l;
      for (size_t k = 0; k < cps.size(); k++) l.push_back(Value::str(utf8_encode(cps, k, k + 1)));
      return l;
    }
    default: r.fail(what + ": '" + type_name(v) + "' object is not iterable");
  }
}
// jinja2's environment.getitem for a dotted attribute path (map, selectattr,
// join, sort): each part a key, or a list's index where it is all digits.
// A part of an undefined value is an error, as indexing jinja2's Undefined is.
Value attr_path(Renderer &r, const Value &v, const std::string &path) {
  Value cur = v;
  size_t pos = 0;
  for (;;) {
    if (cur.kind == Value::Undefined) r.fail("'" + (cur.s.empty() ? std::string("value") : cur.s) + "' is undefined");
    size_t dot = path.find('.', pos);
    std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    const Value *next = cur.find(part);
    bool digits = !part.empty() && part.size() < 10 && part.find_first_not_of("0123456789") == std::string::npos;
    if (!next && digits && cur.kind == Value::List && std::stoul(part) < cur.l->size()) next = &(*cur.l)[std::stoul(part)];
    if (!next && dot != std::string::npos)  // a part of the undefined value this gives is an error
      r.fail("'" + type_name(cur) + " object' has no attribute '" + part + "'");
    if (!next) return Value::undefined(part);
    cur = *next;
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}
std::shared_ptr<Callable> builtin(const std::string &name, Builtin f) {
  auto c = std::make_shared<Callable>();
  c->name = name;
  c->builtin = std::move(f);
  return c;
}
bool starts_or_ends(Renderer &r, const std::string &s, const Value &x, bool ends, const std::string &what) {
  if (x.kind == Value::List) {
    for (const auto &e : *x.l)
      if (starts_or_ends(r, s, e, ends, what)) return true;
    return false;
  }
  const std::string &p = need_str(r, x, what);
  if (p.size() > s.size()) return false;
  return ends ? s.compare(s.size() - p.size(), p.size(), p) == 0 : s.compare(0, p.size(), p) == 0;
}

}  // namespace

Value Renderer::method(const Value &obj, const std::string &name) {
  charge(obj.kind == Value::Str ? obj.s.size() / 64 : 0);
  Value self = obj;
  auto bound = [&](Builtin f) { return Value::func(builtin(name, std::move(f))); };
  if (obj.kind == Value::Str) {
    if (name == "strip" || name == "lstrip" || name == "rstrip")
      return bound([self, name](Renderer &r, Args &a) {
        check_args(r, a, 1, {}, "str." + name + "()");
        const Value *c = arg(a, 0, "chars");
        if (c && c->kind != Value::None) need_str(r, *c, "str." + name + "()");
        return Value::str(strip(self.s, c, name != "rstrip", name != "lstrip"));
      });
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize")
      return bound([self, name](Renderer &r, Args &a) {
        check_args(r, a, 0, {}, "str." + name + "()");
        Case how = name == "upper" ? Case::Upper : name == "lower" ? Case::Lower : name == "title" ? Case::Title : Case::Capitalize;
        return Value::str(py_case(r, self.s, how));
      });
    if (name == "format")
      return bound([self](Renderer &r, Args &a) { return Value::str(py_format(r, self.s, a)); });
    if (name == "startswith" || name == "endswith")
      return bound([self, name](Renderer &r, Args &a) {
        check_args(r, a, 1, {}, "str." + name + "()");
        if (a.pos.empty()) r.fail("str." + name + "() takes one argument");
        return Value::boolean(starts_or_ends(r, self.s, a.pos[0], name == "endswith", "str." + name + "()"));
      });
    if (name == "split" || name == "rsplit")
      return bound([self, name](Renderer &r, Args &a) {
        check_args(r, a, 2, {"sep", "maxsplit"}, "str." + name + "()");
        const Value *sep = arg(a, 0, "sep");
        const Value *m = arg(a, 1, "maxsplit");
        if (sep && sep->kind != Value::None && need_str(r, *sep, "str.split()").empty()) r.fail("str.split(): empty separator");
        int64_t maxsplit = m ? m->i : -1;
        if (name == "rsplit" && maxsplit >= 0) r.fail("str.rsplit() with maxsplit is not supported");
        return str_list(py_split(self.s, sep, maxsplit));
      });
    if (name == "replace")
      return bound([self](Renderer &r, Args &a) {
        check_args(r, a, 3, {}, "str.replace()");
        if (a.pos.size() < 2) r.fail("str.replace() takes two or three arguments");
        int64_t count = a.pos.size() > 2 ? a.pos[2].i : -1;
        return Value::str(replace_all(self.s, need_str(r, a.pos[0], "str.replace()"),
                                      need_str(r, a.pos[1], "str.replace()"), count, r));
      });
    if (name == "find" || name == "count")
      return bound([self, name](Renderer &r, Args &a) {
        check_args(r, a, 1, {}, "str." + name + "()");
        if (a.pos.empty()) r.fail("str." + name + "() takes one argument");
        const std::string &sub = need_str(r, a.pos[0], "str." + name + "()");
        if (name == "find") {
          size_t f = self.s.find(sub);
          return Value::integer(f == std::string::npos ? -1 : static_cast<int64_t>(utf8_length(self.s.substr(0, f))));
        }
        if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_length(self.s)) + 1);
        int64_t n = 0;
        for (size_t p = self.s.find(sub); p != std::string::npos; p = self.s.find(sub, p + sub.size())) n++;
        return Value::integer(n);
      });
    if (name == "join")
      return bound([self](Renderer &r, Args &a) {
        check_args(r, a, 1, {}, "str.join()");
        if (a.pos.empty()) r.fail("str.join() takes one argument");
        std::string out;
        ValueList items = iterate(r, a.pos[0], "str.join()");
        for (size_t k = 0; k < items.size(); k++) {
          if (k) out += self.s;
          out += need_str(r, items[k], "str.join()");
          r.check_size(out.size());
        }
        return Value::str(std::move(out));
      });
    return Value::undefined(name);
  }
  if (obj.kind == Value::Dict && !obj.ns) {
    if (name == "items" || name == "keys" || name == "values")
      return bound([self, name](Renderer &r, Args &) {
        r.charge(self.d->size());
        ValueList l;
        for (const auto &e : *self.d) {
          if (name == "items") l.push_back(Value::tuple_of({Value::str(e.first), e.second}));
          else l.push_back(name == "keys" ? Value::str(e.first) : e.second);
        }
        return Value::list(std::move(l));
      });
    if (name == "get")
      return bound([self](Renderer &r, Args &a) {
        check_args(r, a, 2, {}, "dict.get()");
        if (a.pos.empty()) r.fail("dict.get() takes one or two arguments");
        if (a.pos[0].kind == Value::Str)
          if (const Value *v = self.find(a.pos[0].s)) return *v;
        return a.pos.size() > 1 ? a.pos[1] : Value::none();
      });
    return Value::undefined(name);
  }
  if (obj.kind == Value::List) {
    static const char *mutators[] = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
    for (const char *m : mutators)
      if (name == m) fail("access to attribute '" + name + "' of 'list' object is unsafe (the template may not change a list)");
  }
  return Value::undefined(name);
}

Value Renderer::call_filter(const std::string &name, Value v, Args &a) {
  charge(v.kind == Value::Str ? v.s.size() / 64 : v.kind == Value::List ? v.l->size() : v.kind == Value::Dict ? v.d->size() : 0);
  const std::string what = "filter '" + name + "'";
  if (name == "trim") {
    check_args(*this, a, 1, {"chars"}, what);
    const Value *c = arg(a, 0, "chars");
    return Value::str(strip(py_str(v), c, true, true));
  }
  if (name == "upper" || name == "lower") return Value::str(py_case(*this, py_str(v), name == "upper" ? Case::Upper : Case::Lower));
  if (name == "capitalize") return Value::str(py_case(*this, py_str(v), Case::Capitalize));
  if (name == "title") return Value::str(jinja_title(*this, py_str(v)));
  if (name == "format") {
    // jinja2's do_format: soft_str(value) % (kwargs or args)
    if (!a.pos.empty() && !a.kw.empty()) fail(what + ": can't handle positional and keyword arguments at the same time");
    Value args = a.kw.empty() ? Value::tuple_of(a.pos) : Value::dict(ValueDict(a.kw.begin(), a.kw.end()));
    return Value::str(py_percent(*this, py_str(v), args, what));
  }
  if (name == "sort" || name == "dictsort") return sort_filter(name, v, a);
  if (name == "string") return Value::str(py_str(v));
  if (name == "safe") return v;
  if (name == "e" || name == "escape") {
    std::string out;
    for (char c : py_str(v)) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
      }
    }
    return Value::str(std::move(out));
  }
  if (name == "length" || name == "count") {
    switch (v.kind) {
      case Value::Str: return Value::integer(static_cast<int64_t>(utf8_length(v.s)));
      case Value::List: return Value::integer(static_cast<int64_t>(v.l->size()));
      case Value::Dict: return Value::integer(static_cast<int64_t>(v.d->size()));
      case Value::Undefined: return Value::integer(0);
      default: fail(what + ": object of type '" + type_name(v) + "' has no len()");
    }
  }
  if (name == "tojson") {
    // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
    check_args(*this, a, 4, {"ensure_ascii", "indent", "separators", "sort_keys"}, what);
    const Value *ea = arg(a, 0, "ensure_ascii"), *ind = arg(a, 1, "indent"), *sep = arg(a, 2, "separators"),
                *sk = arg(a, 3, "sort_keys");
    if (sep && sep->kind != Value::None) fail(what + ": separators are not supported");
    int indent = -1;
    if (ind && ind->kind != Value::None) {
      if (ind->kind != Value::Int || ind->i < 0 || ind->i > 64) fail(what + ": indent must be an integer in [0, 64]");
      indent = static_cast<int>(ind->i);
    }
    std::string out;
    to_json(out, v, ea && truthy(*ea), indent, sk && truthy(*sk), 0, *this);
    return Value::str(std::move(out));
  }
  if (name == "default" || name == "d") {
    check_args(*this, a, 2, {"default_value", "boolean"}, what);
    const Value *dv = arg(a, 0, "default_value"), *b = arg(a, 1, "boolean");
    bool use = v.kind == Value::Undefined || (b && truthy(*b) && !truthy(v));
    return use ? (dv ? *dv : Value::str("")) : v;
  }
  if (name == "join") {
    check_args(*this, a, 2, {"d", "attribute"}, what);
    const Value *d = arg(a, 0, "d"), *at = arg(a, 1, "attribute");
    std::string sep = d ? py_str(*d) : "";
    std::string out;
    ValueList items = iterate(*this, v, what);
    for (size_t k = 0; k < items.size(); k++) {
      if (k) out += sep;
      out += py_str(at ? attr_path(*this, items[k], py_str(*at)) : items[k]);
      check_size(out.size());
    }
    return Value::str(std::move(out));
  }
  if (name == "first" || name == "last") {
    ValueList items = iterate(*this, v, what);
    if (items.empty()) return Value::undefined(name);
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value::list(iterate(*this, v, what));
  if (name == "reverse") {
    if (v.kind == Value::Str) {
      std::vector<uint32_t> cps = utf8_decode(v.s);
      std::reverse(cps.begin(), cps.end());
      return Value::str(utf8_encode(cps, 0, cps.size()));
    }
    ValueList items = iterate(*this, v, what);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "int" || name == "float") {
    check_args(*this, a, 2, {"default", "base"}, what);
    const Value *dflt = arg(a, 0, "default");
    Value fallback = dflt ? *dflt : (name == "int" ? Value::integer(0) : Value::number(0.0));
    double f;
    if (v.kind == Value::Int || v.kind == Value::Bool) f = v.kind == Value::Bool ? v.b : static_cast<double>(v.i);
    else if (v.kind == Value::Float) f = v.f;
    else if (v.kind == Value::Str) {
      std::string t = strip(v.s, nullptr, true, true);
      char *end = nullptr;
      errno = 0;
      if (name == "int") {
        long long x = strtoll(t.c_str(), &end, 10);
        if (!t.empty() && end && *end == 0 && errno == 0) return Value::integer(x);
      }
      f = strtod(t.c_str(), &end);
      if (t.empty() || !end || *end != 0) return fallback;
    } else {
      return fallback;
    }
    if (name == "float") return Value::number(f);
    if (!(f > -9.2e18 && f < 9.2e18)) return fallback;
    return Value::integer(static_cast<int64_t>(f));
  }
  if (name == "abs") {
    if (v.kind == Value::Int) return Value::integer(v.i < 0 ? -v.i : v.i);
    if (v.kind == Value::Float) return Value::number(v.f < 0 ? -v.f : v.f);
    fail(what + ": bad operand type '" + type_name(v) + "'");
  }
  if (name == "replace") {
    check_args(*this, a, 3, {"old", "new", "count"}, what);
    const Value *o = arg(a, 0, "old"), *n = arg(a, 1, "new"), *c = arg(a, 2, "count");
    if (!o || !n) fail(what + " takes old and new");
    int64_t count = c && c->kind == Value::Int ? c->i : -1;
    return Value::str(replace_all(py_str(v), py_str(*o), py_str(*n), count, *this));
  }
  if (name == "items") {
    if (v.kind == Value::Undefined) return Value::list({});
    if (v.kind != Value::Dict) fail(what + ": can only get item pairs from a mapping");
    ValueList l;
    for (const auto &e : *v.d) l.push_back(Value::tuple_of({Value::str(e.first), e.second}));
    return Value::list(std::move(l));
  }
  if (name == "indent") {
    check_args(*this, a, 3, {"width", "first", "blank"}, what);
    const Value *w = arg(a, 0, "width"), *fi = arg(a, 1, "first"), *bl = arg(a, 2, "blank");
    std::string pad = w ? (w->kind == Value::Str ? w->s : std::string(static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(w->i, 1024))), ' '))
                        : std::string(4, ' ');
    // jinja2's do_indent: lines after the first get the padding (blank
    // ones only with blank=True); the first with first=True.
    std::string s = py_str(v) + "\n", out;
    std::vector<std::string> lines;
    for (size_t pos = 0; pos < s.size();) {
      size_t nl = s.find('\n', pos);
      lines.push_back(s.substr(pos, nl - pos));
      pos = nl + 1;
    }
    bool first = fi && truthy(*fi), blank = bl && truthy(*bl);
    for (size_t k = 0; k < lines.size(); k++) {
      if (k) out += '\n';
      if (k && (blank || !lines[k].empty())) out += pad;
      out += lines[k];
      check_size(out.size());
    }
    if (first) out = pad + out;
    return Value::str(std::move(out));
  }
  if (name == "map" || name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
    ValueList items = iterate(*this, v, what), out;
    if (items.empty()) return Value::list({});  // jinja2 reads the arguments at the first item
    if (name == "map") {
      const Value *at = arg(a, 99, "attribute");
      if (at) {
        const Value *dflt = arg(a, 99, "default");
        for (const auto &x : items) {
          Value y = attr_path(*this, x, py_str(*at));
          out.push_back(y.kind == Value::Undefined && dflt ? *dflt : y);
        }
      } else {
        if (a.pos.empty()) fail(what + " needs a filter name or attribute=");
        std::string f = need_str(*this, a.pos[0], what);
        Args rest;
        rest.pos.assign(a.pos.begin() + 1, a.pos.end());
        rest.kw = a.kw;
        for (const auto &x : items) {
          Args copy = rest;
          out.push_back(call_filter(f, x, copy));
        }
      }
      return Value::list(std::move(out));
    }
    bool attr = name == "selectattr" || name == "rejectattr", keep_if = name == "select" || name == "selectattr";
    size_t k = 0;
    std::string path;
    if (attr) {
      if (a.pos.empty()) fail(what + " needs an attribute");
      path = need_str(*this, a.pos[k++], what);
    }
    std::string test = k < a.pos.size() ? need_str(*this, a.pos[k++], what) : "";
    Args targs;
    targs.pos.assign(a.pos.begin() + std::min(k, a.pos.size()), a.pos.end());
    for (const auto &x : items) {
      Value y = attr ? attr_path(*this, x, path) : x;
      Args copy = targs;
      bool t = test.empty() ? truthy(y) : call_test(test, y, copy);
      if (t == keep_if) out.push_back(x);
    }
    return Value::list(std::move(out));
  }
  if (name == "unique") {
    ValueList items = iterate(*this, v, what), out;
    for (const auto &x : items) {
      charge(out.size());
      bool seen = false;
      for (const auto &y : out) seen = seen || values_equal(x, y);
      if (!seen) out.push_back(x);
    }
    return Value::list(std::move(out));
  }
  fail("unknown filter '" + name + "'");
}

// jinja2's sort (reverse, case_sensitive, attribute: comma-separated
// dotted paths, the key a list of their values) and dictsort
// (case_sensitive, by "key" or "value", reverse): Python's stable sorted()
// on those keys, strings lowered unless case_sensitive.
Value Renderer::sort_filter(const std::string &name, const Value &v, Args &a) {
  const std::string what = "filter '" + name + "'";
  bool dict = name == "dictsort";
  const Value *rev, *cs, *at = nullptr, *by = nullptr;
  if (dict) {
    check_args(*this, a, 3, {"case_sensitive", "by", "reverse"}, what);
    cs = arg(a, 0, "case_sensitive"), by = arg(a, 1, "by"), rev = arg(a, 2, "reverse");
  } else {
    check_args(*this, a, 3, {"reverse", "case_sensitive", "attribute"}, what);
    rev = arg(a, 0, "reverse"), cs = arg(a, 1, "case_sensitive"), at = arg(a, 2, "attribute");
  }
  // sorted() takes reverse as an integer (a bool is one)
  if (rev && rev->kind != Value::Bool && rev->kind != Value::Int)
    fail(what + ": reverse must be a boolean or an integer, not " + type_name(*rev));
  bool reverse = rev && truthy(*rev), case_sensitive = cs && truthy(*cs);
  auto fold = [&](Value k) { return !case_sensitive && k.kind == Value::Str ? Value::str(py_case(*this, k.s, Case::Lower)) : k; };
  ValueList items, keys;
  if (dict) {
    if (v.kind != Value::Dict || v.ns) fail(what + " needs a mapping, not " + type_name(v));
    std::string pos = by ? py_str(*by) : "key";
    if (pos != "key" && pos != "value") fail(what + ": you can only sort by either \"key\" or \"value\"");
    for (const auto &e : *v.d) {
      items.push_back(Value::tuple_of({Value::str(e.first), e.second}));
      keys.push_back(fold(pos == "key" ? Value::str(e.first) : e.second));
    }
  } else {
    items = iterate(*this, v, what);
    std::vector<std::string> paths;
    if (at && at->kind != Value::None) {
      std::string s = py_str(*at);
      for (size_t p = 0;;) {
        size_t comma = s.find(',', p);
        paths.push_back(s.substr(p, comma == std::string::npos ? std::string::npos : comma - p));
        if (comma == std::string::npos) break;
        p = comma + 1;
      }
    }
    for (const auto &x : items) {
      ValueList k;
      if (paths.empty()) k.push_back(fold(x));
      for (const auto &p : paths) k.push_back(fold(attr_path(*this, x, p)));
      keys.push_back(Value::list(std::move(k)));
    }
  }
  uint64_t n = items.size(), lg = 1;
  while ((uint64_t(1) << lg) < n) lg++;
  charge(n * lg);
  std::vector<size_t> order(items.size());
  for (size_t k = 0; k < order.size(); k++) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    step();
    return reverse ? compare("<", keys[y], keys[x]) : compare("<", keys[x], keys[y]);
  });
  ValueList out;
  for (size_t k : order) out.push_back(items[k]);
  return Value::list(std::move(out));
}

bool Renderer::call_test(const std::string &name, const Value &v, Args &a) {
  step();
  auto num = [](const Value &x) { return x.kind == Value::Int || x.kind == Value::Float || x.kind == Value::Bool; };
  static const char *unary[] = {"defined", "undefined", "none", "string", "mapping", "sequence", "iterable", "number",
                                "integer", "float", "boolean", "true", "false", "callable", "lower", "upper", "odd", "even"};
  for (const char *u : unary)
    if (name == u && (!a.pos.empty() || !a.kw.empty())) fail("test '" + name + "' takes no arguments");
  if (name == "defined") return v.kind != Value::Undefined;
  if (name == "undefined") return v.kind == Value::Undefined;
  if (name == "none") return v.kind == Value::None;
  if (name == "string") return v.kind == Value::Str;
  if (name == "mapping") return v.kind == Value::Dict && !v.ns;
  if (name == "sequence") return v.kind == Value::Str || v.kind == Value::List || (v.kind == Value::Dict && !v.ns);
  if (name == "iterable") return v.kind == Value::Str || v.kind == Value::List || (v.kind == Value::Dict && !v.ns);
  if (name == "number") return num(v);
  if (name == "integer") return v.kind == Value::Int;
  if (name == "float") return v.kind == Value::Float;
  if (name == "boolean") return v.kind == Value::Bool;
  if (name == "true") return v.kind == Value::Bool && v.b;
  if (name == "false") return v.kind == Value::Bool && !v.b;
  if (name == "callable") return v.kind == Value::Func;
  if (name == "lower" || name == "upper") return py_is_case(py_str(v), name == "upper");
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (v.kind != Value::Int) fail("test '" + name + "' needs an integer");
    if (name == "divisibleby") {
      if (a.pos.empty() || a.pos[0].kind != Value::Int || a.pos[0].i == 0) fail("test 'divisibleby' needs a nonzero integer");
      return v.i % a.pos[0].i == 0;
    }
    return (v.i % 2 != 0) == (name == "odd");
  }
  static const char *cmp[][2] = {{"equalto", "=="}, {"eq", "=="}, {"==", "=="}, {"sameas", "=="},
                                 {"ne", "!="}, {"!=", "!="}, {"lt", "<"}, {"<", "<"}, {"lessthan", "<"},
                                 {"le", "<="}, {"<=", "<="}, {"gt", ">"}, {">", ">"}, {"greaterthan", ">"},
                                 {"ge", ">="}, {">=", ">="}, {"in", "in"}};
  for (const auto &c : cmp)
    if (name == c[0]) {
      if (a.pos.size() != 1) fail("test '" + name + "' takes one argument");
      if (name == "sameas") {
        const Value &b = a.pos[0];
        if (v.kind != b.kind) return false;
        if (v.kind == Value::None || v.kind == Value::Undefined) return true;
        if (v.kind == Value::Bool) return v.b == b.b;
        return values_equal(v, b) && (v.kind != Value::List || v.l == b.l) && (v.kind != Value::Dict || v.d == b.d);
      }
      return compare(c[1], v, a.pos[0]);
    }
  fail("unknown test '" + name + "'");
}

ValueDict builtin_globals() {
  ValueDict g;
  g.emplace_back("range", Value::func(builtin("range", [](Renderer &r, Args &a) {
    if (!a.kw.empty() || a.pos.empty() || a.pos.size() > 3) r.fail("range() takes 1 to 3 integers");
    for (const auto &x : a.pos)
      if (x.kind != Value::Int && x.kind != Value::Bool) r.fail("range(): '" + type_name(x) + "' is not an integer");
    auto I = [](const Value &x) { return x.kind == Value::Bool ? int64_t(x.b) : x.i; };
    int64_t start = a.pos.size() > 1 ? I(a.pos[0]) : 0, stop = a.pos.size() > 1 ? I(a.pos[1]) : I(a.pos[0]);
    int64_t stepv = a.pos.size() > 2 ? I(a.pos[2]) : 1;
    if (stepv == 0) r.fail("range() arg 3 must not be zero");
    // jinja2's sandbox refuses ranges of more than 100000 items (MAX_RANGE).
    double n = stepv > 0 ? (double(stop) - double(start)) / double(stepv) : (double(start) - double(stop)) / double(-stepv);
    if (n > 100000) r.fail("range() of more than 100000 items (the sandbox's bound)");
    if (n > 0) r.charge(static_cast<uint64_t>(n));
    ValueList l;
    for (int64_t k = start; stepv > 0 ? k < stop : k > stop; k += stepv) l.push_back(Value::integer(k));
    return Value::list(std::move(l));
  })));
  g.emplace_back("namespace", Value::func(builtin("namespace", [](Renderer &r, Args &a) {
    ValueDict d;
    for (const auto &p : a.pos) {
      if (p.kind != Value::Dict) r.fail("namespace() takes a mapping or keyword arguments");
      for (const auto &e : *p.d) d.push_back(e);
    }
    for (const auto &kw : a.kw) {
      bool found = false;
      for (auto &e : d)
        if (e.first == kw.first) {
          e.second = kw.second;
          found = true;
        }
      if (!found) d.push_back(kw);
    }
    Value v = Value::dict(std::move(d));
    if (v.holds_ns) r.fail("a namespace may not hold a namespace");
    r.check_nest(v);
    v.ns = true;
    return v;
  })));
  g.emplace_back("dict", Value::func(builtin("dict", [](Renderer &r, Args &a) {
    if (!a.pos.empty()) r.fail("dict() takes keyword arguments only");
    ValueDict d(a.kw.begin(), a.kw.end());
    return Value::dict(std::move(d));
  })));
  g.emplace_back("raise_exception", Value::func(builtin("raise_exception", [](Renderer &r, Args &a) -> Value {
    r.fail("the template raised an error: " + (a.pos.empty() ? std::string() : py_str(a.pos[0])));
  })));
  g.emplace_back("strftime_now", Value::func(builtin("strftime_now", [](Renderer &r, Args &a) {
    if (a.pos.size() != 1 || a.pos[0].kind != Value::Str) r.fail("strftime_now() takes one format string");
    time_t now = time(nullptr);
    struct tm tmv;
    localtime_r(&now, &tmv);
    char buf[512];
    size_t n = strftime(buf, sizeof buf, a.pos[0].s.c_str(), &tmv);
    return Value::str(std::string(buf, n));
  })));
  return g;
}

}  // namespace tmpl
}  // namespace lm
}  // namespace ctorch
