// Python's text operations that templates reach: letter case over all of
// Unicode (str.lower/upper/title/capitalize/islower/isupper and jinja2's
// title filter; ICU's full case mappings, which are the Unicode tables
// Python's own come from), str.format (the format mini-language, fields
// looked up as jinja2's sandbox looks them up) and printf-style `%`
// formatting (the `%` operator on a string and the format filter).
#include <unicode/uchar.h>
#include <unicode/ucasemap.h>
#include <unicode/stringoptions.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "chat_template_internal.h"

namespace ctorch {
namespace lm {
namespace tmpl {
namespace {

struct CaseMap {
  UCaseMap *m = nullptr;
  CaseMap(Renderer &r, uint32_t options) {
    UErrorCode e = U_ZERO_ERROR;
    m = ucasemap_open("", options, &e);
    if (U_FAILURE(e)) r.fail(std::string("ICU's case mapping: ") + u_errorName(e));
  }
  ~CaseMap() { ucasemap_close(m); }
  CaseMap(const CaseMap &) = delete;
  CaseMap &operator=(const CaseMap &) = delete;
};

using MapFn = int32_t (*)(const UCaseMap *, char *, int32_t, const char *, int32_t, UErrorCode *);

// One ICU mapping of UTF-8 text (a full mapping may lengthen it: ß -> SS).
std::string icu_map(Renderer &r, const CaseMap &cm, MapFn fn, const char *s, size_t n) {
  if (n > INT32_MAX / 4) r.fail("a string too long to change its case");
  std::string out(n + 16, '\0');
  UErrorCode e = U_ZERO_ERROR;
  int32_t len = fn(cm.m, &out[0], int32_t(out.size()), s, int32_t(n), &e);
  if (e == U_BUFFER_OVERFLOW_ERROR) {
    r.check_size(uint64_t(len));
    out.assign(size_t(len) + 1, '\0');
    e = U_ZERO_ERROR;
    len = fn(cm.m, &out[0], int32_t(out.size()), s, int32_t(n), &e);
  }
  if (U_FAILURE(e)) r.fail(std::string("ICU's case mapping: ") + u_errorName(e));
  out.resize(size_t(len));
  r.check_size(out.size());
  return out;
}
int32_t to_lower(const UCaseMap *m, char *d, int32_t c, const char *s, int32_t n, UErrorCode *e) {
  return ucasemap_utf8ToLower(m, d, c, s, n, e);
}
int32_t to_upper(const UCaseMap *m, char *d, int32_t c, const char *s, int32_t n, UErrorCode *e) {
  return ucasemap_utf8ToUpper(m, d, c, s, n, e);
}
int32_t to_title(const UCaseMap *m, char *d, int32_t c, const char *s, int32_t n, UErrorCode *e) {
  return ucasemap_utf8ToTitle(const_cast<UCaseMap *>(m), d, c, s, n, e);
}

bool cased(uint32_t c) { return u_hasBinaryProperty(UChar32(c), UCHAR_CASED); }
bool case_ignorable(uint32_t c) { return u_hasBinaryProperty(UChar32(c), UCHAR_CASE_IGNORABLE); }

// Python's lower of cps[i] alone, with capital sigma's final form decided
// on the whole text (Unicode's Final_Sigma, as CPython's handle_capital_sigma).
std::string lower_at(Renderer &r, const CaseMap &lower, const std::vector<uint32_t> &cps, size_t i) {
  uint32_t c = cps[i];
  if (c < 0x80) return std::string(1, char(c >= 'A' && c <= 'Z' ? c + 32 : c));
  if (c == 0x3A3) {
    size_t j = i;
    while (j > 0 && case_ignorable(cps[j - 1])) j--;
    bool final_sigma = j > 0 && cased(cps[j - 1]);
    if (final_sigma) {
      size_t k = i + 1;
      while (k < cps.size() && case_ignorable(cps[k])) k++;
      final_sigma = k == cps.size() || !cased(cps[k]);
    }
    return final_sigma ? "\xCF\x82" : "\xCF\x83";
  }
  std::string one = utf8_encode(cps, i, i + 1);
  return icu_map(r, lower, to_lower, one.data(), one.size());
}
std::string title_at(Renderer &r, const CaseMap &title, const std::vector<uint32_t> &cps, size_t i) {
  uint32_t c = cps[i];
  if (c < 0x80) return std::string(1, char(c >= 'a' && c <= 'z' ? c - 32 : c));
  std::string one = utf8_encode(cps, i, i + 1);
  return icu_map(r, title, to_title, one.data(), one.size());
}

}  // namespace

std::string py_case(Renderer &r, const std::string &s, Case how) {
  r.charge(s.size() / 16);
  if (how == Case::Lower || how == Case::Upper) {
    CaseMap cm(r, 0);
    return icu_map(r, cm, how == Case::Lower ? to_lower : to_upper, s.data(), s.size());
  }
  // title: a cased character after an uncased one is titlecased, the rest
  // lowered; capitalize: the first titlecased, the rest lowered.
  CaseMap lower(r, 0), title(r, U_TITLECASE_WHOLE_STRING | U_TITLECASE_NO_LOWERCASE | U_TITLECASE_NO_BREAK_ADJUSTMENT);
  std::vector<uint32_t> cps = utf8_decode(s);
  std::string out;
  bool prev_cased = false;
  for (size_t i = 0; i < cps.size(); i++) {
    bool up = how == Case::Title ? !prev_cased : i == 0;
    out += up ? title_at(r, title, cps, i) : lower_at(r, lower, cps, i);
    if (how == Case::Title) prev_cased = cps[i] < 0x80 ? ((cps[i] | 32) >= 'a' && (cps[i] | 32) <= 'z') : cased(cps[i]);
    r.check_size(out.size());
  }
  return out;
}

// jinja2's title filter: the text split at runs of '-', whitespace, '(',
// '{', '[', '<'; each piece's first character upper-cased, the rest lowered.
std::string jinja_title(Renderer &r, const std::string &s) {
  std::vector<uint32_t> cps = utf8_decode(s);
  auto sep = [](uint32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_space(c); };
  std::string out;
  for (size_t i = 0; i < cps.size();) {
    size_t j = i;
    bool is_sep = sep(cps[i]);
    while (j < cps.size() && sep(cps[j]) == is_sep) j++;
    std::string first = utf8_encode(cps, i, i + 1), rest = utf8_encode(cps, i + 1, j);
    out += is_sep ? first + rest : py_case(r, first, Case::Upper) + py_case(r, rest, Case::Lower);
    r.check_size(out.size());
    i = j;
  }
  return out;
}

bool py_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool py_is_case(const std::string &s, bool upper) {
  bool any = false;
  for (uint32_t c : utf8_decode(s)) {
    bool lo = u_hasBinaryProperty(UChar32(c), UCHAR_LOWERCASE), up = u_hasBinaryProperty(UChar32(c), UCHAR_UPPERCASE);
    if ((upper ? lo : up) || u_charType(UChar32(c)) == U_TITLECASE_LETTER) return false;
    any = any || (upper ? up : lo);
  }
  return any;
}

// ---- the format specification both formatters share ----
namespace {

struct Spec {
  uint32_t fill = ' ';
  char align = 0;  // '<', '>', '^', '=' or 0 (the type's default)
  char sign = 0;  // '+', ' ', '-' or 0 (none given)
  bool alt = false, zero = false;
  char group = 0;  // ',' or '_'
  int64_t width = -1, precision = -1;
  char type = 0;
  bool empty = true;  // no specifier at all
};

const int64_t kMaxWidth = 1 << 20;

std::string pad(Renderer &r, const std::string &body, const Spec &sp, char default_align, size_t prefix_len) {
  size_t n = utf8_length(body);
  if (sp.width < 0 || int64_t(n) >= sp.width) return body;
  r.check_size(uint64_t(sp.width) + body.size());
  size_t fill_n = size_t(sp.width) - n;
  std::string f, one = utf8_encode({sp.fill}, 0, 1);
  for (size_t k = 0; k < fill_n; k++) f += one;
  char a = sp.align ? sp.align : default_align;
  if (a == '<') return body + f;
  if (a == '>') return f + body;
  if (a == '=') return body.substr(0, prefix_len) + f + body.substr(prefix_len);
  std::vector<uint32_t> fcp(fill_n, sp.fill);
  return utf8_encode(fcp, 0, fill_n / 2) + body + utf8_encode(fcp, fill_n / 2, fill_n);
}

std::string group_digits(const std::string &digits, char sep, size_t every) {
  std::string out;
  for (size_t k = 0; k < digits.size(); k++) {
    if (k && (digits.size() - k) % every == 0) out += sep;
    out += digits[k];
  }
  return out;
}

// A number under a spec: ints in bases and as floats, floats in f/e/g/%.
std::string format_number(Renderer &r, const Value &v, Spec sp, const std::string &what, bool printf_style) {
  bool is_int = v.kind == Value::Int || v.kind == Value::Bool;
  int64_t iv = v.kind == Value::Bool ? v.b : v.i;
  double fv = is_int ? double(iv) : v.f;
  char t = sp.type;
  bool neg;
  std::string prefix, digits;
  if (is_int && (t == 0 || t == 'd' || t == 'n' || t == 'b' || t == 'o' || t == 'x' || t == 'X')) {
    if (sp.precision >= 0 && !printf_style) r.fail(what + ": precision not allowed in integer format specifier");
    neg = iv < 0;
    uint64_t u = neg ? uint64_t(0) - uint64_t(iv) : uint64_t(iv);
    int base = t == 'b' ? 2 : t == 'o' ? 8 : (t == 'x' || t == 'X') ? 16 : 10;
    const char *dig = t == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    do {
      digits.insert(digits.begin(), dig[u % base]);
      u /= base;
    } while (u);
    if (printf_style && sp.precision > int64_t(digits.size())) digits.insert(0, size_t(sp.precision) - digits.size(), '0');
    if (sp.group) digits = group_digits(digits, sp.group, base == 10 ? 3 : 4);
    if (sp.alt && base != 10) prefix = base == 2 ? "0b" : base == 8 ? "0o" : t == 'X' ? "0X" : "0x";
  } else {
    char ft = t == 0 || t == 'n' ? 'g' : t == '%' ? 'f' : t;
    if (!strchr("eEfFgG", ft)) r.fail(what + ": unknown format code '" + std::string(1, t) + "' for " + type_name(v));
    if (t == '%') fv *= 100;
    neg = std::signbit(fv) && !std::isnan(fv);
    double a = std::fabs(fv);
    int64_t p = sp.precision < 0 ? 6 : sp.precision;
    if (p > 1000) r.fail(what + ": precision too large");
    char buf[1400];  // the largest double in %f (309 digits) and the bounded precision
    if (t == 0 && sp.precision < 0) {
      digits = py_str(Value::number(a));  // repr
    } else if (t == 0 && std::isfinite(a)) {
      // 'g', except that a fixed-point result keeps a decimal and the
      // exponent form starts at precision - 1 (Python's general format).
      p = std::max<int64_t>(p, 1);
      snprintf(buf, sizeof buf, "%.*e", int(p - 1), a);
      int e10 = atoi(strchr(buf, 'e') + 1);
      if (e10 >= -4 && e10 < p - 1) {
        snprintf(buf, sizeof buf, "%.*f", int(p - 1 - e10), a);
        digits = buf;
        while (digits.back() == '0' && digits[digits.size() - 2] != '.') digits.pop_back();
        if (digits.find('.') == std::string::npos) digits += ".0";
      } else {
        std::string m(buf, strchr(buf, 'e')), e(strchr(buf, 'e'));
        if (m.find('.') != std::string::npos) {
          while (m.back() == '0') m.pop_back();
          if (m.back() == '.') m.pop_back();
        }
        digits = m + e;
      }
    } else {
      char fmt[16];
      snprintf(fmt, sizeof fmt, "%%%s.*%c", sp.alt ? "#" : "", ft);
      snprintf(buf, sizeof buf, fmt, int(p), a);
      digits = buf;
    }
    if (sp.group) {
      size_t end = digits.find_first_of(".e");
      std::string ip = digits.substr(0, end);
      if (ip.find_first_not_of("0123456789") == std::string::npos)
        digits = group_digits(ip, sp.group, 3) + (end == std::string::npos ? "" : digits.substr(end));
    }
    if (t == '%') digits += '%';
  }
  prefix = (neg ? "-" : sp.sign == '+' ? "+" : sp.sign == ' ' ? " " : "") + prefix;  // '-' is the default
  if (sp.zero && !sp.align) {
    sp.fill = '0';
    sp.align = '=';
  }
  return pad(r, prefix + digits, sp, '>', prefix.size());
}

// One value under a spec, as Python's format(value, spec) (printf_style:
// as one %-conversion).
std::string format_value(Renderer &r, const Value &v, Spec sp, const std::string &what, bool printf_style) {
  if (!printf_style && sp.empty) return py_str(v);  // format(v, '') is str(v)
  bool number = v.kind == Value::Int || v.kind == Value::Float || v.kind == Value::Bool;
  char t = sp.type;
  char text_align = printf_style ? '>' : '<';
  if (t == 'c') {
    if (v.kind == Value::Str && utf8_length(v.s) == 1 && printf_style) return pad(r, v.s, sp, text_align, 0);
    if (v.kind != Value::Int || v.i < 0 || v.i > 0x10FFFF || (v.i >= 0xD800 && v.i < 0xE000))
      r.fail(what + ": %c needs a character or a code point");
    return pad(r, utf8_encode({uint32_t(v.i)}, 0, 1), sp, '>', 0);
  }
  if (printf_style ? (t == 's' || t == 'r' || t == 'a') : !number) {
    if (!printf_style && v.kind != Value::Str)
      r.fail(what + ": unsupported format string passed to " + type_name(v) + ".__format__");
    if (!printf_style && ((t && t != 's') || sp.sign || sp.align == '=' || sp.alt || sp.group))
      r.fail(what + ": this format specifier is not allowed for a string");
    std::string s = t == 'r' ? py_repr(v) : t == 'a' ? py_ascii(v) : py_str(v);
    if (sp.precision >= 0) {
      std::vector<uint32_t> cps = utf8_decode(s);
      if (sp.precision < int64_t(cps.size())) s = utf8_encode(cps, 0, size_t(sp.precision));
    }
    if (!printf_style && sp.zero && !sp.align) sp.fill = '0';
    return pad(r, s, sp, text_align, 0);
  }
  if (!number) r.fail(what + ": format code '" + std::string(1, t) + "' needs a number, not " + type_name(v));
  if (t == 's') r.fail(what + ": unknown format code 's' for " + type_name(v));
  if (v.kind == Value::Float && t && strchr("dboxXc", t)) {
    if (!printf_style || t != 'd') r.fail(what + ": format code '" + std::string(1, t) + "' needs an integer, not float");
    if (!(v.f > -9.2e18 && v.f < 9.2e18)) r.fail(what + ": %d of a float out of range");
    return format_number(r, Value::integer(int64_t(v.f)), sp, what, true);
  }
  return format_number(r, v, sp, what, printf_style);
}

// [[fill]align][sign][#][0][width][grouping][.precision][type]
Spec parse_spec(Renderer &r, const std::string &s, const std::string &what) {
  Spec sp;
  sp.empty = s.empty();
  std::vector<uint32_t> c = utf8_decode(s);
  size_t i = 0;
  auto is_align = [](uint32_t x) { return x == '<' || x == '>' || x == '^' || x == '='; };
  if (c.size() >= 2 && is_align(c[1])) {
    sp.fill = c[0];
    sp.align = char(c[1]);
    i = 2;
  } else if (!c.empty() && is_align(c[0])) {
    sp.align = char(c[0]);
    i = 1;
  }
  if (i < c.size() && (c[i] == '+' || c[i] == '-' || c[i] == ' ')) sp.sign = char(c[i++]);
  if (i < c.size() && c[i] == '#') sp.alt = (++i, true);
  if (i < c.size() && c[i] == '0') sp.zero = (++i, true);
  auto number = [&](int64_t *out) {
    if (i >= c.size() || c[i] < '0' || c[i] > '9') return;
    int64_t n = 0;
    while (i < c.size() && c[i] >= '0' && c[i] <= '9') {
      n = n * 10 + (c[i++] - '0');
      if (n > kMaxWidth) r.fail(what + ": a width or precision past " + std::to_string(kMaxWidth));
    }
    *out = n;
  };
  number(&sp.width);
  if (i < c.size() && (c[i] == ',' || c[i] == '_')) sp.group = char(c[i++]);
  if (i < c.size() && c[i] == '.') {
    i++;
    if (i >= c.size() || c[i] < '0' || c[i] > '9') r.fail(what + ": format specifier missing precision");
    number(&sp.precision);
  }
  if (i < c.size() && c[i] < 0x80 && strchr("bcdeEfFgGnosxX%", char(c[i])) && c[i]) sp.type = char(c[i++]);
  if (i != c.size()) r.fail(what + ": invalid format specifier '" + s + "'");
  return sp;
}

// A field's value: its first name from the arguments, then .attr and [key]
// parts, looked up as the sandbox does (a missing one is undefined).
Value field_value(Renderer &r, const std::string &field, const Args &a, int *auto_index, const std::string &what) {
  // string.Formatter's rules (the sandbox formats through it): only an
  // empty field is numbered automatically and only an all-digit one
  // manually; a first part of digits is a position, else a keyword.
  bool all_digits = !field.empty() && field.find_first_not_of("0123456789") == std::string::npos;
  std::string name = field;
  if (field.empty()) {
    if (*auto_index < 0) r.fail(what + ": cannot switch from manual field specification to automatic field numbering");
    name = std::to_string((*auto_index)++);
  } else if (all_digits) {
    if (*auto_index > 0) r.fail(what + ": cannot switch from automatic field numbering to manual field specification");
    *auto_index = -1;
  }
  size_t end = name.find_first_of(".[");
  std::string first = name.substr(0, end);
  Value v;
  if (!first.empty() && first.find_first_not_of("0123456789") == std::string::npos) {
    size_t idx = first.size() > 6 ? SIZE_MAX : size_t(std::stoul(first));
    if (idx >= a.pos.size()) r.fail(what + ": replacement index " + first + " out of range for positional args tuple");
    v = a.pos[idx];
  } else {
    const Value *kw = nullptr;
    for (const auto &k : a.kw)
      if (k.first == first) kw = &k.second;
    if (!kw) r.fail(what + ": KeyError: '" + first + "'");
    v = *kw;
  }
  size_t p = end;
  while (p != std::string::npos && p < field.size()) {
    r.step();
    if (v.kind == Value::Undefined) r.fail(what + ": '" + (v.s.empty() ? std::string("value") : v.s) + "' is undefined");
    std::string key;
    bool index = field[p] == '[';
    if (index) {
      size_t close = field.find(']', p);
      if (close == std::string::npos) r.fail(what + ": missing ']' in format string");
      key = field.substr(p + 1, close - p - 1);
      p = close + 1;
      if (p < field.size() && field[p] != '.' && field[p] != '[')
        r.fail(what + ": only '.' or '[' may follow ']' in format field specifier");
    } else {
      size_t next = field.find_first_of(".[", p + 1);
      key = field.substr(p + 1, next == std::string::npos ? std::string::npos : next - p - 1);
      p = next;
    }
    if (key.empty()) r.fail(what + ": empty attribute in format string");
    bool digits = index && key.find_first_not_of("0123456789") == std::string::npos && key.size() < 10;
    if (v.kind == Value::List && digits && std::stoul(key) < v.l->size()) v = (*v.l)[std::stoul(key)];
    else if (v.kind == Value::Str && digits && std::stoul(key) < utf8_length(v.s))
      v = Value::str(utf8_encode(utf8_decode(v.s), std::stoul(key), std::stoul(key) + 1));
    else if (const Value *m = v.find(key)) v = *m;
    else v = Value::undefined(key);
  }
  return v;
}

std::string format_fields(Renderer &r, const std::string &fmt, const Args &a, int *auto_index, int depth,
                          const std::string &what) {
  std::string out;
  for (size_t i = 0; i < fmt.size();) {
    char ch = fmt[i];
    if (ch == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        i += 2;
        continue;
      }
      r.fail(what + ": single '}' encountered in format string");
    }
    if (ch != '{') {
      out += ch;
      i++;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      i += 2;
      continue;
    }
    // the field up to its matching '}': braces in a [key] are the key's,
    // nested ones (in the spec) are counted
    size_t j = i + 1;
    int level = 1;
    bool in_spec = false, in_key = false;
    for (; j < fmt.size(); j++) {
      char c = fmt[j];
      if (in_key) {
        in_key = c != ']';
        continue;
      }
      if (!in_spec && c == '[') in_key = true;
      else if (!in_spec && c == ':') in_spec = true;
      else if (c == '{') level++;
      else if (c == '}' && --level == 0) break;
    }
    if (j >= fmt.size()) r.fail(what + ": expected '}' before end of string");
    if (depth > 1) r.fail(what + ": max string recursion exceeded");
    std::string field = fmt.substr(i + 1, j - i - 1), spec, conv;
    size_t colon = std::string::npos, bang = std::string::npos;
    for (size_t k = 0, br = 0; k < field.size(); k++) {
      if (field[k] == '[') br = 1;
      else if (field[k] == ']') br = 0;
      else if (!br && field[k] == '!' && bang == std::string::npos && colon == std::string::npos) bang = k;
      else if (!br && field[k] == ':') {
        colon = k;
        break;
      }
    }
    if (bang != std::string::npos) {
      conv = field.substr(bang + 1, (colon == std::string::npos ? field.size() : colon) - bang - 1);
      if (conv != "s" && conv != "r" && conv != "a") r.fail(what + ": unknown conversion specifier '" + conv + "'");
    }
    // the field's own argument is numbered before those nested in its spec
    Value v = field_value(r, field.substr(0, std::min(bang, colon)), a, auto_index, what);
    if (colon != std::string::npos) spec = format_fields(r, field.substr(colon + 1), a, auto_index, depth + 1, what);
    if (!conv.empty()) v = Value::str(conv == "r" ? py_repr(v) : conv == "a" ? py_ascii(v) : py_str(v));
    out += format_value(r, v, parse_spec(r, spec, what), what, false);
    r.check_size(out.size());
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string py_format(Renderer &r, const std::string &fmt, const Args &a) {
  r.charge(fmt.size() / 16);
  int auto_index = 0;
  return format_fields(r, fmt, a, &auto_index, 0, "str.format()");
}

std::string py_percent(Renderer &r, const std::string &fmt, const Value &args, const std::string &what) {
  r.charge(fmt.size() / 16);
  bool tuple = args.kind == Value::List && args.tuple;
  bool mapping = args.kind == Value::Dict && !args.ns;
  // Python takes any subscriptable right operand (a list, jinja2's
  // Undefined) as a mapping that need not be used up.
  bool mapping_like = mapping || args.kind == Value::List || args.kind == Value::Undefined;
  size_t next = 0;
  auto take = [&]() -> Value {
    if (!tuple) {
      if (next++ > 0) r.fail(what + ": not enough arguments for format string");
      return args;
    }
    if (next >= args.l->size()) r.fail(what + ": not enough arguments for format string");
    return (*args.l)[next++];
  };
  std::string out;
  for (size_t i = 0; i < fmt.size();) {
    if (fmt[i] != '%') {
      out += fmt[i++];
      continue;
    }
    if (++i >= fmt.size()) r.fail(what + ": incomplete format");
    Spec sp;
    Value v;
    bool have = false;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos) r.fail(what + ": incomplete format key");
      if (!mapping) r.fail(what + ": format requires a mapping");
      const Value *m = args.find(fmt.substr(i + 1, close - i - 1));
      if (!m) r.fail(what + ": KeyError: '" + fmt.substr(i + 1, close - i - 1) + "'");
      v = *m;
      have = true;
      i = close + 1;
    }
    for (; i < fmt.size() && fmt[i] && strchr("-+ #0", fmt[i]); i++) {
      if (fmt[i] == '-') sp.align = '<';
      else if (fmt[i] == '+' || (fmt[i] == ' ' && sp.sign != '+')) sp.sign = fmt[i];
      else if (fmt[i] == '#') sp.alt = true;
      else if (fmt[i] == '0') sp.zero = true;
    }
    auto number = [&](int64_t *n) {
      if (i < fmt.size() && fmt[i] == '*') {
        Value w = take();
        if (w.kind != Value::Int) r.fail(what + ": * wants int");
        if (w.i > kMaxWidth || w.i < -kMaxWidth) r.fail(what + ": width or precision too big");
        *n = w.i;
        i++;
      } else if (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
        *n = 0;
        while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9')
          if ((*n = *n * 10 + (fmt[i++] - '0')) > kMaxWidth) r.fail(what + ": width or precision too big");
      }
    };
    number(&sp.width);
    if (sp.width < -1) {
      sp.align = '<';
      sp.width = -sp.width;
    }
    if (i < fmt.size() && fmt[i] == '.') {
      i++;
      sp.precision = 0;
      number(&sp.precision);
    }
    while (i < fmt.size() && fmt[i] && strchr("hlL", fmt[i])) i++;
    if (i >= fmt.size()) r.fail(what + ": incomplete format");
    bool bare = fmt[i - 1] == '%';  // "%%" only: flags, a key or a width before '%' are an error
    char t = fmt[i++];
    if (t == '%' && bare) {
      out += '%';
      continue;
    }
    if (!t || !strchr("diouxXeEfFgGcrsa", t)) {
      size_t n = 1;  // the whole character in the message
      while (i - 1 + n < fmt.size() && (static_cast<unsigned char>(fmt[i - 1 + n]) & 0xC0) == 0x80) n++;
      r.fail(what + ": unsupported format character '" + fmt.substr(i - 1, n) + "'");
    }
    if (sp.align == '<') sp.zero = false;
    sp.type = t == 'i' || t == 'u' ? 'd' : t;
    if (!have) v = take();
    if (strchr("doxX", sp.type) && v.kind != Value::Int && v.kind != Value::Bool && v.kind != Value::Float)
      r.fail(what + ": %" + std::string(1, t) + " format: a real number is required, not " + type_name(v));
    if (strchr("eEfFgG", sp.type) && v.kind != Value::Int && v.kind != Value::Bool && v.kind != Value::Float)
      r.fail(what + ": must be real number, not " + type_name(v));
    if (strchr("eEfFgG", sp.type) && v.kind != Value::Float) v = Value::number(double(v.kind == Value::Bool ? v.b : v.i));
    if (strchr("dxXo", sp.type) && v.kind == Value::Bool) v = Value::integer(v.b);
    out += format_value(r, v, sp, what, true);
    r.check_size(out.size());
  }
  if (tuple && next < args.l->size()) r.fail(what + ": not all arguments converted during string formatting");
  if (!tuple && !mapping_like && next == 0)
    r.fail(what + ": not all arguments converted during string formatting");
  return out;
}

}  // namespace tmpl
}  // namespace lm
}  // namespace ctorch
