// ctorch_tensor_format: Python's str(tensor), byte for byte.
//
// The specification is torch/_tensor_str.py of the libtorch built against
// (the two supported versions differ in two places, see compat.h's
// CTORCH_COMPAT_PRINT_*): the summarised layout (threshold, edgeitems:
// "..." rows and items), one _Formatter per tensor (per real and imaginary
// part of a complex tensor) measured over the summarised data only, its
// int_mode / sci_mode choice and column width, Python's number formatting
// ("{:.4f}", "{:.4e}", "{:.0f}", str(int), True/False), the line breaking
// of _vector_str at linewidth, and _str_intern's prefix and suffixes
// (device, size of empty and meta tensors, dtype when it is not a default
// one, grad_fn / requires_grad). What is printed is computed from a small
// summarised copy (at most 2*edgeitems per dimension when summarising), so
// printing a huge tensor costs what Python's does, not a pass over it.
#include "internal.h"
#include "materialize.h"
#include "text/text.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace ctorch {
namespace tensor_format {

// torch.set_printoptions' fields (sci: -1 None, 0 False, 1 True).
struct Options {
  int64_t precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80;
  int sci = -1;
};

std::string printf_text(const char *fmt, int width, int precision, double v) {
  char small[64];
  int n = std::snprintf(small, sizeof small, fmt, width, precision, v);
  if (n < 0) fail(CTORCH_RUNTIME, "cannot format a number");
  if (static_cast<size_t>(n) < sizeof small) return std::string(small, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(&big[0], big.size(), fmt, width, precision, v);
  big.resize(static_cast<size_t>(n));
  return big;
}

// Python's format(float, spec) for spec "{width}.{precision}{f|e}": C's
// printf, except that NaN is "nan" whatever its sign bit.
std::string py_float(double v, char conv, int width, int64_t precision) {
  if (std::isnan(v)) {
    std::string s = "nan";
    return s.size() < static_cast<size_t>(width) ? std::string(static_cast<size_t>(width) - s.size(), ' ') + s : s;
  }
  return printf_text(conv == 'e' ? "%*.*e" : "%*.*f", width, static_cast<int>(precision), v);
}

std::string pad(const std::string &s, size_t width) {
  return s.size() < width ? std::string(width - s.size(), ' ') + s : s;
}

// _Formatter of a floating tensor (the values of its summarised data).
class FloatFormatter {
 public:
  FloatFormatter(const std::vector<double> &vals, const Options &o) : o_(o) {
    std::vector<double> nz;
    for (double v : vals)
      if (std::isfinite(v) && v != 0) nz.push_back(v);
    if (nz.empty()) return;  // "no valid number": int_mode, width 1, never sci
    double lo = std::fabs(nz[0]), hi = lo;
    for (double v : nz) {
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    const bool auto_sci = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
    const bool forced = o.sci >= 0;
    // Which form the column width is measured in (compat.h).
    const bool width_sci = CTORCH_COMPAT_PRINT_SCI_WIDTH_AUTO ? auto_sci : (forced ? o.sci == 1 : auto_sci);
    for (double v : nz) {
      size_t w = width_sci ? py_float(v, 'e', 0, o.precision).size()
                 : int_mode_ ? py_float(v, 'f', 0, 0).size() + 1
                             : py_float(v, 'f', 0, o.precision).size();
      width_ = std::max(width_, w);
    }
    sci_ = forced ? o.sci == 1 : auto_sci;
  }
  size_t width() const { return width_; }
  std::string format(double v) const {
    std::string r;
    if (sci_) {
      r = py_float(v, 'e', static_cast<int>(width_), o_.precision);
    } else if (int_mode_) {
      r = py_float(v, 'f', 0, 0);
      if (std::isfinite(v)) r += '.';
    } else {
      r = py_float(v, 'f', 0, o_.precision);
    }
    return pad(r, width_);
  }

 private:
  Options o_;
  bool int_mode_ = true, sci_ = false;
  size_t width_ = 1;
};

// The summarised tensor's values, with the original sizes beside the kept
// ones.
struct Summary {
  std::vector<int64_t> sizes, kept, strides;  // strides of the kept (contiguous) data
  bool summarize = false;
  int64_t edge = 3;
  c10::ScalarType st;
  std::vector<double> re, im;      // floating and complex
  std::vector<std::string> text;   // integers and bools: str(value)
};

// get_summarized_data, keeping the dimensions: along every dimension longer
// than 2*edge, its first and last edge entries.
at::Tensor summarized(at::Tensor t, int64_t edge) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t n = t.size(d);
    if (n > 2 * edge) t = at::cat({t.narrow(d, 0, edge), t.narrow(d, n - edge, edge)}, d);
  }
  return t;
}

std::string int_text(int64_t v) { return std::to_string(v); }

void read_values(Summary &s, const at::Tensor &k) {
  const at::Tensor c = k.contiguous();
  const int64_t n = c.numel();
  if (c.is_complex()) {
    at::Tensor d = at::view_as_real(c.to(at::kComplexDouble)).contiguous();
    const double *p = d.data_ptr<double>();
    for (int64_t i = 0; i < n; ++i) s.re.push_back(p[2 * i]), s.im.push_back(p[2 * i + 1]);
  } else if (c.is_floating_point()) {
    at::Tensor d = c.to(at::kDouble).contiguous();
    s.re.assign(d.data_ptr<double>(), d.data_ptr<double>() + n);
  } else if (c.scalar_type() == at::kBool) {
    at::Tensor d = c.to(at::kByte).contiguous();
    for (int64_t i = 0; i < n; ++i) s.text.push_back(d.data_ptr<uint8_t>()[i] ? "True" : "False");
  } else if (!at::isSignedType(c.scalar_type()) && c.element_size() == 8) {  // uint64 (PyTorch >= 2.3)
    const auto *p = static_cast<const uint64_t *>(c.data_ptr());
    for (int64_t i = 0; i < n; ++i) s.text.push_back(std::to_string(p[i]));
  } else {
    at::Tensor d = c.to(at::kLong).contiguous();
    for (int64_t i = 0; i < n; ++i) s.text.push_back(int_text(d.data_ptr<int64_t>()[i]));
  }
}

class Printer {
 public:
  Printer(const Summary &s, const Options &o) : s_(s), o_(o) {
    if (!s.re.empty() || at::isFloatingType(s.st) || at::isComplexType(s.st)) {
      f1_.reset(new FloatFormatter(s.re, o));
      if (at::isComplexType(s.st)) f2_.reset(new FloatFormatter(s.im, o));
    } else {
      for (const auto &t : s.text) iwidth_ = std::max(iwidth_, t.size());
    }
  }

  std::string body(int64_t indent) const {
    if (s_.sizes.empty()) return item(0);
    return level(0, 0, indent);
  }

 private:
  const Summary &s_;
  Options o_;
  std::unique_ptr<FloatFormatter> f1_, f2_;
  size_t iwidth_ = 1;

  size_t width() const {
    if (!f1_) return iwidth_;
    return f2_ ? f1_->width() + f2_->width() + 1 : f1_->width();
  }

  // _val_formatter / _scalar_str: the element at offset of the kept data.
  std::string item(int64_t off) const {
    if (!f1_) return pad(s_.text[static_cast<size_t>(off)], iwidth_);
    std::string re = f1_->format(s_.re[static_cast<size_t>(off)]);
    if (!f2_) return re;
    std::string im = f2_->format(s_.im[static_cast<size_t>(off)]) + "j";
    im.erase(0, im.find_first_not_of(' '));  // lstrip
    return (im[0] == '+' || im[0] == '-') ? re + im : re + "+" + im;
  }

  // The kept indices of dimension d, in order; -1 marks the "..." entry.
  std::vector<int64_t> indices(size_t d) const {
    std::vector<int64_t> out;
    const int64_t n = s_.sizes[d], e = s_.edge;
    if (s_.summarize && n > 2 * e) {
      for (int64_t i = 0; i < e; ++i) out.push_back(i);
      out.push_back(-1);
      for (int64_t i = 0; i < e; ++i) out.push_back(e + i);
    } else {
      for (int64_t i = 0; i < n; ++i) out.push_back(i);
    }
    return out;
  }

  std::string level(size_t d, int64_t off, int64_t indent) const {
    const size_t ndim = s_.sizes.size();
    if (d + 1 == ndim) return vector(off, indent);
    std::string sep = "," + std::string(ndim - d - 1, '\n') + std::string(static_cast<size_t>(indent + 1), ' ');
    std::string out = "[";
    bool first = true;
    for (int64_t i : indices(d)) {
      if (!first) out += sep;
      first = false;
      out += i < 0 ? std::string("...") : level(d + 1, off + i * s_.strides[d], indent + 1);
    }
    return out + "]";
  }

  std::string vector(int64_t off, int64_t indent) const {
    const size_t d = s_.sizes.size() - 1;
    const int64_t element_length = static_cast<int64_t>(width()) + 2;
    // max(1, floor((linewidth - indent) / element_length)), Python's floor.
    int64_t num = o_.linewidth - indent;
    int64_t per_line = num >= 0 ? num / element_length : -((-num + element_length - 1) / element_length);
    per_line = std::max<int64_t>(1, per_line);
    std::vector<std::string> data;
    for (int64_t i : indices(d)) data.push_back(i < 0 ? std::string(" ...") : item(off + i * s_.strides[d]));
    std::string out = "[";
    for (size_t i = 0; i < data.size(); ++i) {
      if (i) out += (static_cast<int64_t>(i) % per_line == 0) ? ",\n" + std::string(static_cast<size_t>(indent + 1), ' ') : ", ";
      out += data[i];
    }
    return out + "]";
  }
};

std::string python_dtype(c10::ScalarType st) {
  switch (st) {
    case at::kFloat: return "torch.float32";
    case at::kDouble: return "torch.float64";
    case at::kHalf: return "torch.float16";
    case at::kBFloat16: return "torch.bfloat16";
    case at::kLong: return "torch.int64";
    case at::kInt: return "torch.int32";
    case at::kShort: return "torch.int16";
    case at::kChar: return "torch.int8";
    case at::kByte: return "torch.uint8";
    case at::kBool: return "torch.bool";
    case at::kComplexHalf: return "torch.complex32";
    case at::kComplexFloat: return "torch.complex64";
    case at::kComplexDouble: return "torch.complex128";
    default: {  // the dtypes PyTorch 2.x added: c10's name in lower case (UInt16, Float8_e4m3fn)
      return "torch." + text::ascii_lower(c10::toString(st));
    }
  }
}

std::string size_tuple(at::IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

// _add_suffixes.
std::string add_suffixes(const std::string &text, const std::vector<std::string> &suffixes, int64_t indent,
                         int64_t linewidth) {
  std::string out = text;
  size_t nl = text.rfind('\n');
  int64_t last = static_cast<int64_t>(text.size()) - (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const auto &suf : suffixes) {
    const int64_t len = static_cast<int64_t>(suf.size());
    if (last + len + 2 > linewidth) {
      out += ",\n" + std::string(static_cast<size_t>(indent), ' ') + suf;
      last = indent + len;
    } else {
      out += ", " + suf;
      last += len + 2;
    }
  }
  return out + ")";
}

std::string grad_fn_name(const at::Tensor &t) {
  const auto &fn = t.grad_fn();
  if (!fn) return "";
  std::string n = fn->name();
  size_t colon = n.rfind("::");
  return colon == std::string::npos ? n : n.substr(colon + 2);
}

std::string format(const at::Tensor &input, const Options &o) {
  if (input.layout() != c10::kStrided || input.is_quantized())
    fail(CTORCH_NOT_IMPLEMENTED, "argument 't': only dense (strided, not quantized) tensors are formatted as Python does; "
                                 "use ctorch_tensor_to_string");
  const int64_t indent = 7;  // len("tensor(")
  std::vector<std::string> suffixes;
  if (!input.device().is_cpu()) suffixes.push_back("device='" + input.device().str() + "'");
  const c10::ScalarType st = input.scalar_type();
  const c10::ScalarType def = c10::typeMetaToScalarType(at::get_default_dtype());
  const c10::ScalarType def_complex = def == at::kDouble ? at::kComplexDouble : at::kComplexFloat;
  const bool default_dtype = st == def || st == def_complex || st == at::kLong || st == at::kBool;
  std::string body;
  if (input.is_meta()) {
    suffixes.push_back("size=" + size_tuple(input.sizes()));
    if (st != def) suffixes.push_back("dtype=" + python_dtype(st));
    body = "...";
  } else if (input.numel() == 0) {
    if (input.dim() != 1) suffixes.push_back("size=" + size_tuple(input.sizes()));
    if (st != def) suffixes.push_back("dtype=" + python_dtype(st));
    body = "[]";
  } else {
    if (o.edgeitems == 0 && CTORCH_COMPAT_PRINT_EDGEITEMS_ZERO) suffixes.push_back("size=" + size_tuple(input.sizes()));
    if (o.edgeitems == 0 && !CTORCH_COMPAT_PRINT_EDGEITEMS_ZERO && input.numel() > o.threshold && input.dim() > 0)
      fail(CTORCH_VALUE, "argument 'edgeitems': 0 with a summarised tensor is not printed by this libtorch's Python "
                         "(PyTorch 1.13 fails on it or prints every item; 2.x prints '...')");
    if (!default_dtype) suffixes.push_back("dtype=" + python_dtype(st));
    at::NoGradGuard no_grad;
    at::Tensor t = materialize_zero(input.detach()).resolve_neg().resolve_conj();
    Summary s;
    s.sizes = t.sizes().vec();
    s.summarize = t.numel() > o.threshold;
    s.edge = o.edgeitems;
    s.st = st;
    if (s.summarize && o.edgeitems == 0 && t.dim() > 0) {
      body = "[...]";
    } else {
      at::Tensor k = s.summarize ? summarized(t, o.edgeitems) : t;
      k = k.cpu();
      s.kept = k.sizes().vec();
      s.strides.assign(s.kept.size(), 1);
      for (size_t d = s.kept.size(); d-- > 1;) s.strides[d - 1] = s.strides[d] * s.kept[d];
      read_values(s, k);
      body = Printer(s, o).body(indent);
    }
  }
  std::string g = grad_fn_name(input);
  if (!g.empty()) suffixes.push_back("grad_fn=<" + g + ">");
  else if (input.requires_grad()) suffixes.push_back("requires_grad=True");
  return add_suffixes("tensor(" + body, suffixes, indent, o.linewidth);
}

}  // namespace tensor_format
}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_tensor_format(char **out, ctorch_tensor t, int64_t precision, int64_t threshold,
                                              int64_t edgeitems, int64_t linewidth, int sci_mode) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_tensor(t, "t");
  ctorch::tensor_format::Options o;
  // Negative: PyTorch's default. Precision is bounded so one number's text
  // stays small (Python takes any; nobody prints 10,000 digits).
  if (precision > 1000) ctorch::fail_arg("precision", "must be at most 1000 (got " + std::to_string(precision) + ")");
  if (precision >= 0) o.precision = precision;
  if (threshold >= 0) o.threshold = threshold;
  if (edgeitems >= 0) o.edgeitems = edgeitems;
  if (linewidth >= 0) o.linewidth = linewidth;
  if (sci_mode < -1 || sci_mode > 1)
    ctorch::fail_arg("sci_mode", "must be -1 (automatic), 0 (off) or 1 (on), got " + std::to_string(sci_mode));
  // A summarised tensor keeps 2*edgeitems entries per dimension: bounded so
  // that their product cannot overflow nor allocate without limit.
  if (o.edgeitems > (int64_t(1) << 20))
    ctorch::fail_arg("edgeitems", "must be at most 1048576 (got " + std::to_string(edgeitems) + ")");
  o.sci = sci_mode;
  std::string s = ctorch::tensor_format::format(ctorch::own(t, "t"), o);
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  *out = p;
  CTORCH_CATCH
}

}  // extern "C"
