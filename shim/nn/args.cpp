// Python call-argument text -> Args, checked against a kind's signature
// (the same text api.json's catalogue is generated from), Value::repr (what
// extra_repr prints), the registry of built-in kinds, and the torch.nn.init
// helpers every layer's reset_parameters uses.
#include "nn/nn_internal.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <c10/util/irange.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>

namespace ctorch {
namespace nn {

// ---- Value::repr -----------------------------------------------------------

// Python's repr(float): the shortest digits that read back as the same
// double, in exponent form when the decimal point would sit more than 16
// places right or 4 places left of the first digit (float_repr_style 'short').
static std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // "-1.2345e-05"
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t e = sci.find('e');
  int exp = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (size_t k = 0; k < e; ++k)
    if (sci[k] != '.') digits += sci[k];
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else {
    size_t ip = static_cast<size_t>(exp) + 1;
    if (digits.size() <= ip) out = digits + std::string(ip - digits.size(), '0') + ".0";
    else out = digits.substr(0, ip) + "." + digits.substr(ip);
  }
  return neg ? "-" + out : out;
}

// Python's names of the dtypes a module option can take.
static const std::pair<const char *, c10::ScalarType> kDtypeNames[] = {
    {"float32", c10::kFloat},   {"float", c10::kFloat},      {"float64", c10::kDouble},
    {"double", c10::kDouble},   {"float16", c10::kHalf},     {"half", c10::kHalf},
    {"bfloat16", c10::kBFloat16}, {"complex64", c10::kComplexFloat}, {"cfloat", c10::kComplexFloat},
    {"complex128", c10::kComplexDouble}, {"cdouble", c10::kComplexDouble}, {"uint8", c10::kByte},
    {"int8", c10::kChar},       {"int16", c10::kShort},      {"short", c10::kShort},
    {"int32", c10::kInt},       {"int", c10::kInt},          {"int64", c10::kLong},
    {"long", c10::kLong},       {"bool", c10::kBool},
};

std::string dtype_name(c10::ScalarType t) {
  for (const auto &p : kDtypeNames)
    if (p.second == t) return p.first;  // the first name listed is Python's repr
  return c10::toString(t);
}

static bool dtype_of_name(const std::string &n, c10::ScalarType *out) {
  for (const auto &p : kDtypeNames)
    if (n == p.first) {
      *out = p.second;
      return true;
    }
  return false;
}

static std::string str_repr(const std::string &s) {
  // Python prefers single quotes, double ones when the text has a ' and no ".
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == '\\' || c == q) out += '\\';
    out += c;
  }
  return out + q;
}

std::string Value::repr() const {
  switch (kind) {
    case None: return "None";
    case Bool: return b ? "True" : "False";
    case Int: return std::to_string(i);
    case Float: return float_repr(f);
    case Str: return str_repr(s);
    case Dtype: return "torch." + dtype_name(dtype);
    case Device: {
      std::string out = "device(type='" + c10::DeviceTypeName(device.type(), true) + "'";
      if (device.has_index()) out += ", index=" + std::to_string(device.index());
      return out + ")";
    }
    case Seq: {
      std::string out = is_list ? "[" : "(";
      for (size_t k = 0; k < items.size(); ++k) out += (k ? ", " : "") + items[k].repr();
      if (!is_list && items.size() == 1) out += ",";
      return out + (is_list ? "]" : ")");
    }
    case Mod: return mod ? mod->kind() + "(...)" : "None";
  }
  return "?";
}

// ---- the literal reader ----------------------------------------------------

namespace {

// Nesting of tuples, lists and module arguments, across the readers of
// nested modules: text from elsewhere ("((((...") must not exhaust the stack.
thread_local int tl_nesting = 0;
constexpr int kMaxNesting = 32;

struct Reader {
  const std::string &text;
  const std::string &what;
  size_t pos = 0;

  [[noreturn]] void error(const std::string &msg) const {
    fail(CTORCH_INVALID_ARGUMENT, what + ": " + msg + " at offset " + std::to_string(pos) + " of \"" + text + "\"");
  }
  void skip() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  }
  bool at_end() {
    skip();
    return pos >= text.size();
  }
  char peek() {
    skip();
    return pos < text.size() ? text[pos] : '\0';
  }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos;
    return true;
  }
  std::string ident() {
    skip();
    size_t start = pos;
    while (pos < text.size() && (std::isalnum(static_cast<unsigned char>(text[pos])) || text[pos] == '_' || text[pos] == '.'))
      ++pos;
    return text.substr(start, pos - start);
  }

  struct Nest {
    const Reader &r;
    explicit Nest(const Reader &reader) : r(reader) {
      if (++tl_nesting > kMaxNesting) {
        --tl_nesting;
        r.error("nested more than " + std::to_string(kMaxNesting) + " levels deep");
      }
    }
    ~Nest() { --tl_nesting; }
    Nest(const Nest &) = delete;
    Nest &operator=(const Nest &) = delete;
  };

  Value value() {
    Value v;
    char c = peek();
    if (c == '(' || c == '[') {
      Nest nest(*this);
      ++pos;
      char close = c == '(' ? ')' : ']';
      v.kind = Value::Seq;
      v.is_list = c == '[';
      bool comma = false;
      while (!eat(close)) {
        if (at_end()) error(std::string("missing '") + close + "'");
        v.items.push_back(value());
        comma = eat(',');
        if (!comma && peek() != close) error(std::string("expected ',' or '") + close + "'");
      }
      // (x) is x in Python, not a tuple.
      if (c == '(' && v.items.size() == 1 && !comma) return v.items[0];
      return v;
    }
    if (c == '\'' || c == '"') {
      ++pos;
      v.kind = Value::Str;
      while (pos < text.size() && text[pos] != c) {
        if (text[pos] == '\\' && pos + 1 < text.size()) ++pos;
        v.s += text[pos++];
      }
      if (pos >= text.size()) error("unterminated string");
      ++pos;
      return v;
    }
    bool neg = false;
    if (c == '-' || c == '+') {
      neg = c == '-';
      ++pos;
      c = peek();
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      size_t start = pos;
      bool is_float = false;
      while (pos < text.size()) {
        char d = text[pos];
        if (std::isdigit(static_cast<unsigned char>(d)) || d == '_') {
          ++pos;
        } else if (d == '.' ) {
          is_float = true;
          ++pos;
        } else if ((d == 'e' || d == 'E')) {
          is_float = true;
          ++pos;
          if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) ++pos;
        } else {
          break;
        }
      }
      std::string num = text.substr(start, pos - start);
      num.erase(std::remove(num.begin(), num.end(), '_'), num.end());
      if (is_float) {
        char *end = nullptr;
        double d = std::strtod(num.c_str(), &end);
        if (num.empty() || *end) error("bad number '" + num + "'");
        v.kind = Value::Float;
        v.f = neg ? -d : d;
      } else {
        int64_t x = 0;
        auto r = std::from_chars(num.data(), num.data() + num.size(), x);
        if (r.ec != std::errc() || r.ptr != num.data() + num.size()) error("bad integer '" + num + "'");
        v.kind = Value::Int;
        v.i = neg ? -x : x;
      }
      return v;
    }
    std::string id = ident();
    if (id.empty()) error(std::string("unexpected '") + (c ? std::string(1, c) : std::string("end of text")) + "'");
    if (id == "inf" || id == "math.inf" || id == "float.inf") {
      v.kind = Value::Float;
      v.f = neg ? -INFINITY : INFINITY;
      return v;
    }
    if (id == "nan" || id == "math.nan") {
      v.kind = Value::Float;
      v.f = NAN;
      return v;
    }
    if (id == "float" && eat('(')) {  // float('inf'), float("nan"), float(1)
      Value inner = value();
      if (!eat(')')) error("expected ')'");
      v.kind = Value::Float;
      if (inner.kind == Value::Str) {
        std::string t = inner.s;
        char *end = nullptr;
        v.f = std::strtod(t.c_str(), &end);
        if (t.empty() || *end) error("float('" + t + "') is not a number");
      } else if (inner.kind == Value::Int || inner.kind == Value::Float) {
        v.f = inner.kind == Value::Int ? static_cast<double>(inner.i) : inner.f;
      } else {
        error("float() of a non-number");
      }
      if (neg) v.f = -v.f;
      return v;
    }
    if (neg) error("'-' before '" + id + "'");
    if ((id.rfind("torch.nn.", 0) == 0 || id.rfind("nn.", 0) == 0) && peek() == '(') return module(id);
    if (id == "True" || id == "False") {
      v.kind = Value::Bool;
      v.b = id == "True";
      return v;
    }
    if (id == "None") return v;
    if (id.rfind("torch.", 0) == 0) {
      std::string n = id.substr(6);
      if (dtype_of_name(n, &v.dtype)) {
        v.kind = Value::Dtype;
        return v;
      }
      if (n == "device" && eat('(')) {  // torch.device('cuda:0')
        Value inner = value();
        if (!eat(')') || inner.kind != Value::Str) error("expected torch.device('...')");
        v.kind = Value::Device;
        try {
          v.device = c10::Device(inner.s);
        } catch (const std::exception &) {
          error("bad device '" + inner.s + "'");
        }
        return v;
      }
    }
    error("unknown name '" + id + "'");
  }

  // "torch.nn.Kind(args)": the module, built now (Python evaluates an
  // argument before the call it is passed to: its random draws come first).
  Value module(const std::string &id) {
    Nest nest(*this);
    std::string name = id.substr(id.rfind('.') + 1);
    const Kind *k = find_kind(name);
    if (!k) error("no module kind '" + name + "'");
    ++pos;  // '('
    size_t start = pos;
    int depth = 1;
    for (char quote = 0; pos < text.size(); ++pos) {
      char c = text[pos];
      if (quote) {
        if (c == '\\') ++pos;
        else if (c == quote) quote = 0;
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '(' || c == '[') {
        ++depth;
      } else if ((c == ')' || c == ']') && --depth == 0) {
        break;
      }
    }
    if (pos >= text.size()) error("missing ')' of " + name + "(");
    std::string inner = text.substr(start, pos - start);
    ++pos;
    Value v;
    v.kind = Value::Mod;
    v.mod = build(*k, parse_args(k->init, inner.c_str(), name));
    return v;
  }
};

}  // namespace

// ---- signatures ------------------------------------------------------------

static std::string trim(const std::string &s) {
  size_t a = s.find_first_not_of(" \t\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\n");
  return s.substr(a, b - a + 1);
}

// Splits at top-level commas (defaults may hold tuples).
static std::vector<std::string> split_top(const std::string &s, char sep) {
  std::vector<std::string> out;
  int depth = 0;
  bool quote = false;
  char q = 0;
  std::string cur;
  for (char c : s) {
    if (quote) {
      if (c == q) quote = false;
    } else if (c == '\'' || c == '"') {
      quote = true;
      q = c;
    } else if (c == '(' || c == '[') {
      ++depth;
    } else if (c == ')' || c == ']') {
      --depth;
    } else if (c == sep && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!trim(cur).empty() || !out.empty()) out.push_back(trim(cur));
  return out;
}

static Param parse_param(const std::string &text, bool kw_only, const char *sig) {
  Param p;
  p.kw_only = kw_only;
  std::string head = text;
  size_t eq = std::string::npos;
  {
    int depth = 0;
    for (size_t k = 0; k < text.size(); ++k) {
      char c = text[k];
      if (c == '(' || c == '[') ++depth;
      if (c == ')' || c == ']') --depth;
      if (c == '=' && depth == 0) {
        eq = k;
        break;
      }
    }
  }
  if (eq != std::string::npos) {
    head = trim(text.substr(0, eq));
    std::string def = trim(text.substr(eq + 1));
    p.def_text = def;
    Reader r{def, std::string("signature")};
    p.def = r.value();
    if (!r.at_end()) fail(CTORCH_RUNTIME, std::string("bad default in the signature (a bug in ctorch): ") + sig);
    p.has_default = true;
  }
  size_t colon = head.find(':');
  if (colon == std::string::npos) {
    p.name = trim(head);
  } else {
    p.name = trim(head.substr(0, colon));
    p.type = trim(head.substr(colon + 1));
  }
  if (!p.type.empty() && p.type.back() == '?') {
    p.optional = true;
    p.type.pop_back();
  }
  for (const auto &alt : split_top(p.type, '|')) p.alts.push_back(trim(alt));
  return p;
}

Sig parse_sig(const char *text) {
  Sig s;
  std::string t = text ? text : "";
  size_t arrow = t.find("->");
  std::string in = t;
  if (arrow != std::string::npos) {
    in = t.substr(0, arrow);
    for (const auto &o : split_top(trim(t.substr(arrow + 2)), ',')) {
      Param p = parse_param(o.find(':') == std::string::npos ? "output: " + o : o, false, text);
      s.outputs.push_back(p);
    }
  }
  size_t semi = in.find(';');
  std::string pos_part = semi == std::string::npos ? in : in.substr(0, semi);
  for (const auto &a : split_top(trim(pos_part), ','))
    if (!a.empty()) s.params.push_back(parse_param(a, false, text));
  if (semi != std::string::npos)
    for (const auto &a : split_top(trim(in.substr(semi + 1)), ','))
      if (!a.empty()) s.params.push_back(parse_param(a, true, text));
  return s;
}

const Sig &sig_of(const char *text) {
  // Signatures are static string literals: parsed once, keyed by address.
  static std::mutex mu;
  static std::map<const char *, Sig> cache;
  std::lock_guard<std::mutex> g(mu);
  auto it = cache.find(text);
  if (it == cache.end()) it = cache.emplace(text, parse_sig(text)).first;
  return it->second;
}

// ---- type checks -----------------------------------------------------------

static bool is_num(const Value &v) { return v.kind == Value::Int || v.kind == Value::Float; }

// Whether v fits one alternative of a type; may normalise it ('float64' ->
// torch.float64, 'cuda:0' -> a device).
static bool fits(Value &v, const std::string &type) {
  if (type == "int") return v.kind == Value::Int;
  if (type == "float") return is_num(v);
  if (type == "bool") return v.kind == Value::Bool;
  if (type == "str") return v.kind == Value::Str;
  if (type == "ScalarType") {
    if (v.kind == Value::Dtype) return true;
    if (v.kind == Value::Str && dtype_of_name(v.s, &v.dtype)) {
      v.kind = Value::Dtype;
      return true;
    }
    return false;
  }
  if (type == "Module") return v.kind == Value::Mod;
  if (type == "Device") {
    if (v.kind == Value::Device) return true;
    if (v.kind == Value::Str) {
      try {
        v.device = c10::Device(v.s);
      } catch (const std::exception &) {
        return false;
      }
      v.kind = Value::Device;
      return true;
    }
    return false;
  }
  size_t br = type.find('[');
  if (br != std::string::npos) {
    std::string elem = type.substr(0, br);
    std::string n = type.substr(br + 1, type.size() - br - 2);
    size_t want = n.empty() ? 0 : static_cast<size_t>(std::stoul(n));
    auto elem_ok = [&](const Value &e) { return elem == "int" ? e.kind == Value::Int : is_num(e); };
    if (elem_ok(v)) return true;  // an int stands for N copies (_size_n_t)
    if (v.kind != Value::Seq) return false;
    if (want && v.items.size() != want) return false;
    for (const auto &e : v.items)
      if (!elem_ok(e)) return false;
    return true;
  }
  return false;  // Tensor: not writable as text
}

static std::string kind_name(const Value &v) {
  switch (v.kind) {
    case Value::None: return "None";
    case Value::Bool: return "bool";
    case Value::Int: return "int";
    case Value::Float: return "float";
    case Value::Str: return "str";
    case Value::Seq: return v.is_list ? "list" : "tuple";
    case Value::Dtype: return "dtype";
    case Value::Device: return "device";
    case Value::Mod: return "module";
  }
  return "?";
}

void check_value(Value &v, const Param &p, const std::string &what) {
  if (v.kind == Value::None) {
    if (p.optional) return;
    fail(CTORCH_INVALID_ARGUMENT, what + ": argument '" + p.name + "' may not be None (expected " + p.type + ")");
  }
  for (const auto &alt : p.alts)
    if (fits(v, alt)) return;
  std::string want = p.type;
  size_t br = want.find('[');
  if (br != std::string::npos && want.find(']') == want.size() - 1 && want.find('|') == std::string::npos &&
      br + 2 < want.size())
    want += " (an int or a tuple of " + want.substr(br + 1, want.size() - br - 2) + ")";
  fail(CTORCH_INVALID_ARGUMENT,
       what + ": argument '" + p.name + "' expected " + want + ", got " + kind_name(v) + " " + v.repr());
}

Args parse_args(const char *signature, const char *text, const std::string &what,
                const std::vector<std::pair<std::string, Value>> &preset) {
  const Sig &sig = sig_of(signature);
  return parse_args_sig(sig, text, what, false, preset);
}

Args parse_args_sig(const Sig &sig, const char *text, const std::string &what, bool kw_only_part,
                    const std::vector<std::pair<std::string, Value>> &preset) {
  std::vector<const Param *> ps;
  for (const auto &p : sig.params) {
    if (kw_only_part && !p.kw_only) continue;
    if (!kw_only_part && p.alts.size() == 1 && p.alts[0] == "Tensor") continue;
    ps.push_back(&p);
  }
  Args a;
  for (const Param *p : ps) a.values.emplace_back(p->name, p->def);
  a.was_given.assign(ps.size(), false);
  for (const auto &pv : preset) {
    size_t k = 0;
    while (k < ps.size() && ps[k]->name != pv.first) ++k;
    if (k == ps.size()) fail(CTORCH_INVALID_ARGUMENT, what + ": unexpected keyword argument '" + pv.first + "'");
    if (a.was_given[k]) fail(CTORCH_INVALID_ARGUMENT, what + ": argument '" + pv.first + "' given twice");
    Value v = pv.second;
    check_value(v, *ps[k], what);
    a.values[k].second = v;
    a.was_given[k] = true;
  }
  std::string t = text ? text : "";
  Reader r{t, what};
  size_t npos = 0;
  bool seen_kw = false;
  while (!r.at_end()) {
    // A keyword is an identifier followed by '=' (and not '==').
    size_t save = r.pos;
    std::string id = r.ident();
    Value v;
    if (!id.empty() && id.find('.') == std::string::npos && r.peek() == '=' &&
        !(r.pos + 1 < t.size() && t[r.pos + 1] == '=')) {
      r.eat('=');
      v = r.value();
      size_t k = 0;
      while (k < ps.size() && ps[k]->name != id) ++k;
      if (k == ps.size())
        fail(CTORCH_INVALID_ARGUMENT, what + ": unexpected keyword argument '" + id + "'");
      if (a.was_given[k]) fail(CTORCH_INVALID_ARGUMENT, what + ": argument '" + id + "' given twice");
      check_value(v, *ps[k], what);
      a.values[k].second = v;
      a.was_given[k] = true;
      seen_kw = true;
    } else {
      r.pos = save;
      v = r.value();
      if (seen_kw) fail(CTORCH_INVALID_ARGUMENT, what + ": positional argument " + v.repr() + " follows keyword arguments");
      if (kw_only_part) fail(CTORCH_INVALID_ARGUMENT, what + ": forward takes keyword arguments only here, got " + v.repr());
      if (npos >= ps.size() || ps[npos]->kw_only)
        fail(CTORCH_INVALID_ARGUMENT, what + ": takes " + std::to_string(npos) + " positional arguments but more were given");
      if (a.was_given[npos])  // a module handle passed by name took this place
        fail(CTORCH_INVALID_ARGUMENT, what + ": argument '" + ps[npos]->name + "' given twice");
      check_value(v, *ps[npos], what);
      a.values[npos].second = v;
      a.was_given[npos] = true;
      ++npos;
    }
    if (r.at_end()) break;
    if (!r.eat(',')) r.error("expected ','");
  }
  for (size_t k = 0; k < ps.size(); ++k)
    if (!a.was_given[k] && !ps[k]->has_default)
      fail(CTORCH_INVALID_ARGUMENT, what + ": missing required argument '" + ps[k]->name + "'");
  return a;
}

// ---- Args accessors --------------------------------------------------------

const Value &Args::get(const char *name) const {
  for (const auto &p : values)
    if (p.first == name) return p.second;
  fail(CTORCH_INVALID_ARGUMENT, std::string("no argument '") + name + "'");
}

bool Args::is_none(const char *name) const { return get(name).kind == Value::None; }

bool Args::given(const char *name) const {
  for (size_t k = 0; k < values.size(); ++k)
    if (values[k].first == name) return was_given[k];
  get(name);  // throws
  return false;
}

[[noreturn]] static void bad(const char *name, const char *want, const Value &v) {
  fail(CTORCH_INVALID_ARGUMENT, std::string("argument '") + name + "' expected " + want + ", got " + v.repr());
}

int64_t Args::i(const char *name) const {
  const Value &v = get(name);
  if (v.kind != Value::Int) bad(name, "int", v);
  return v.i;
}

double Args::f(const char *name) const {
  const Value &v = get(name);
  if (v.kind == Value::Int) return static_cast<double>(v.i);
  if (v.kind != Value::Float) bad(name, "float", v);
  return v.f;
}

bool Args::b(const char *name) const {
  const Value &v = get(name);
  if (v.kind != Value::Bool) bad(name, "bool", v);
  return v.b;
}

std::string Args::s(const char *name) const {
  const Value &v = get(name);
  if (v.kind != Value::Str) bad(name, "str", v);
  return v.s;
}

std::vector<int64_t> Args::ints(const char *name, size_t n) const {
  const Value &v = get(name);
  if (v.kind == Value::Int) return std::vector<int64_t>(n ? n : 1, v.i);
  if (v.kind != Value::Seq) bad(name, "int or a tuple of ints", v);
  if (n && v.items.size() != n) bad(name, ("a tuple of " + std::to_string(n) + " ints").c_str(), v);
  std::vector<int64_t> out;
  for (const auto &e : v.items) {
    if (e.kind != Value::Int) bad(name, "ints", v);
    out.push_back(e.i);
  }
  return out;
}

std::vector<double> Args::floats(const char *name, size_t n) const {
  const Value &v = get(name);
  if (is_num(v)) return std::vector<double>(n ? n : 1, v.kind == Value::Int ? static_cast<double>(v.i) : v.f);
  if (v.kind != Value::Seq) bad(name, "float or a tuple of floats", v);
  if (n && v.items.size() != n) bad(name, ("a tuple of " + std::to_string(n) + " floats").c_str(), v);
  std::vector<double> out;
  for (const auto &e : v.items) {
    if (!is_num(e)) bad(name, "floats", v);
    out.push_back(e.kind == Value::Int ? static_cast<double>(e.i) : e.f);
  }
  return out;
}

c10::optional<c10::ScalarType> Args::dtype(const char *name) const {
  const Value &v = get(name);
  if (v.kind == Value::None) return c10::nullopt;
  if (v.kind != Value::Dtype) bad(name, "a dtype", v);
  return v.dtype;
}

c10::optional<c10::Device> Args::device(const char *name) const {
  const Value &v = get(name);
  if (v.kind == Value::None) return c10::nullopt;
  if (v.kind != Value::Device) bad(name, "a device", v);
  return v.device;
}

at::TensorOptions Args::factory(const char *device_name, const char *dtype_name_) const {
  at::TensorOptions o;
  if (auto d = device(device_name)) o = o.device(*d);
  if (auto t = dtype(dtype_name_)) o = o.dtype(*t);
  return o;
}

// ---- kinds -----------------------------------------------------------------

static std::vector<Kind> &kind_table() {
  static std::vector<Kind> table;  // filled during static initialisation
  return table;
}

bool register_kind(Kind k) {
  kind_table().push_back(std::move(k));
  return true;
}

const Kind *find_kind(const std::string &name) {
  for (const auto &k : kind_table())
    if (name == k.name) return &k;
  return nullptr;
}

const std::vector<Kind> &kinds() { return kind_table(); }

// ---- torch.nn.init ---------------------------------------------------------

// torch.nn.init._calculate_fan_in_and_fan_out's fan_in.
int64_t fan_in(const at::Tensor &t) {
  if (t.dim() < 2)
    fail(CTORCH_VALUE, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return t.size(1) * receptive;
}

static int64_t fan_out(const at::Tensor &t) {
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return t.size(0) * receptive;
}

void uniform_(at::Tensor &t, double lo, double hi) {
  at::NoGradGuard g;
  t.uniform_(lo, hi);
}

// kaiming_uniform_(t, a, mode='fan_in', nonlinearity='leaky_relu'), with
// Python's arithmetic step by step (gain, std, bound) so the bound is the
// same double.
void kaiming_uniform_(at::Tensor &t, double a) {
  if (t.numel() == 0) return;  // Python warns and returns the tensor untouched
  int64_t fan = fan_in(t);
  double gain = std::sqrt(2.0 / (1 + std::pow(a, 2)));
  double std_ = gain / std::sqrt(static_cast<double>(fan));
  double bound = std::sqrt(3.0) * std_;
  uniform_(t, -bound, bound);
}

void xavier_uniform_(at::Tensor &t, double gain) {
  int64_t fi = fan_in(t), fo = fan_out(t);
  double std_ = gain * std::sqrt(2.0 / static_cast<double>(fi + fo));
  double a = std::sqrt(3.0) * std_;
  uniform_(t, -a, a);
}

}  // namespace nn
}  // namespace ctorch
