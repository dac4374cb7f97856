// NumPy's .npy format (numpy/lib/format.py), read and written by ctorch:
// magic "\x93NUMPY", version, header length (2 bytes in 1.0, 4 in 2.0 and
// 3.0), a Python dict literal {'descr', 'fortran_order', 'shape'} padded
// with spaces and a newline to a multiple of 64 bytes, then the data. The
// writer produces numpy.save's bytes (keys sorted, the spare space NumPy
// leaves for the first axis to grow); the reader parses the literal with a
// small strict grammar (never eval), checks every size against the data
// before anything is allocated, and takes Fortran order and big-endian
// descrs.
#include "numpy.h"
#include "files/files.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstring>

namespace ctorch {
namespace npy {
namespace {

[[noreturn]] void bad(const std::string &what, const std::string &why) {
  fail(CTORCH_VALUE, what + " is not a readable .npy array: " + why);
}

// The unsigned dtypes wider than a byte that this libtorch has (2.3+),
// Undefined-terminated (compat.h).
const c10::ScalarType kWideUnsigned[] = {
#define CTORCH_NPY_X(e, member) c10::ScalarType::member,
    CTORCH_COMPAT_DTYPES_2_3(CTORCH_NPY_X)
#undef CTORCH_NPY_X
        c10::ScalarType::Undefined};

// NumPy's descr of st ('<f4', '|b1', ...), or "" when NumPy has none.
std::string descr_of(c10::ScalarType st) {
  switch (st) {
    case at::kBool: return "|b1";
    case at::kChar: return "|i1";
    case at::kByte: return "|u1";
    case at::kShort: return "<i2";
    case at::kInt: return "<i4";
    case at::kLong: return "<i8";
    case at::kHalf: return "<f2";
    case at::kFloat: return "<f4";
    case at::kDouble: return "<f8";
    case at::kComplexFloat: return "<c8";
    case at::kComplexDouble: return "<c16";
    default: break;
  }
  for (const c10::ScalarType *u = kWideUnsigned; *u != c10::ScalarType::Undefined; ++u)
    if (*u == st) return "<u" + std::to_string(c10::elementSize(st));
  return "";
}

// The dtype of a descr's kind and size; NOT_IMPLEMENTED for NumPy's
// unsigned dtypes a libtorch before 2.3 lacks, VALUE for the others.
c10::ScalarType dtype_of(char kind, size_t size, const std::string &descr, const std::string &what) {
  switch (kind) {
    case 'b': if (size == 1) return at::kBool; break;
    case 'i':
      if (size == 1) return at::kChar;
      if (size == 2) return at::kShort;
      if (size == 4) return at::kInt;
      if (size == 8) return at::kLong;
      break;
    case 'u':
      if (size == 1) return at::kByte;
      if (size == 2 || size == 4 || size == 8) {
        for (const c10::ScalarType *u = kWideUnsigned; *u != c10::ScalarType::Undefined; ++u)
          if (c10::elementSize(*u) == size) return *u;
        fail(CTORCH_NOT_IMPLEMENTED, what + " holds uint" + std::to_string(8 * size) +
                                         " data, which this libtorch has no dtype for (PyTorch >= 2.3 has)");
      }
      break;
    case 'f':
      if (size == 2) return at::kHalf;
      if (size == 4) return at::kFloat;
      if (size == 8) return at::kDouble;
      break;
    case 'c':
      if (size == 8) return at::kComplexFloat;
      if (size == 16) return at::kComplexDouble;
      break;
    default: break;
  }
  bad(what, "dtype '" + descr + "' has no torch dtype (bool, int8-64, uint8-64, float16-64, complex64/128 are read)");
}

std::string shape_repr(at::IntArrayRef s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// ---- the header's dict literal ----------------------------------------------

struct Header {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
};

class Parser {
 public:
  Parser(const std::string &s, const std::string &what) : s_(s), what_(what) {}

  Header run() {
    Header h;
    bool seen[3] = {false, false, false};
    skip();
    expect('{');
    for (;;) {
      skip();
      if (peek() == '}') break;
      std::string key = string();
      skip();
      expect(':');
      skip();
      if (key == "descr" && !seen[0]) {
        if (peek() != '\'' && peek() != '"') bad(what_, "its descr is not a plain dtype string (structured arrays are not read)");
        h.descr = string();
        seen[0] = true;
      } else if (key == "fortran_order" && !seen[1]) {
        h.fortran = boolean();
        seen[1] = true;
      } else if (key == "shape" && !seen[2]) {
        h.shape = tuple();
        seen[2] = true;
      } else {
        bad(what_, "its header has an unexpected or repeated key '" + key + "'");
      }
      skip();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip();
      if (peek() != '}') bad(what_, "its header is not a dict literal");
    }
    ++i_;
    skip();
    if (i_ != s_.size()) bad(what_, "its header has text after the dict");
    if (!seen[0] || !seen[1] || !seen[2]) bad(what_, "its header lacks one of 'descr', 'fortran_order', 'shape'");
    return h;
  }

 private:
  const std::string &s_;
  const std::string &what_;
  size_t i_ = 0;

  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) bad(what_, std::string("its header is not a dict literal (expected '") + c + "')");
    ++i_;
  }
  std::string string() {
    char q = peek();
    if (q != '\'' && q != '"') bad(what_, "its header has a key or value that is not a string");
    size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) bad(what_, "its header has an unterminated string");
    std::string out = s_.substr(i_ + 1, end - i_ - 1);
    if (out.find('\\') != std::string::npos) bad(what_, "its header has an escape in a string");
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) return i_ += 4, true;
    if (s_.compare(i_, 5, "False") == 0) return i_ += 5, false;
    bad(what_, "its fortran_order is not True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> out;
    expect('(');
    for (;;) {
      skip();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) bad(what_, "its shape holds something else than sizes >= 0");
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        int d = peek() - '0';
        if (v > (INT64_MAX - d) / 10) bad(what_, "a size in its shape overflows int64");
        v = v * 10 + d;
        ++i_;
      }
      if (peek() == 'L') ++i_;  // Python 2's long literal (old NumPy files)
      out.push_back(v);
      if (out.size() > 64) bad(what_, "its shape has more than 64 dimensions");
      skip();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip();
      if (peek() != ')') bad(what_, "its shape is not a tuple of sizes");
    }
    ++i_;
    return out;
  }
};

uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

// Reverses the bytes of each unit-byte word (a big-endian file's elements;
// a complex element is two words).
void swap_words(unsigned char *p, size_t nbytes, size_t unit) {
  for (size_t i = 0; i + unit <= nbytes; i += unit) std::reverse(p + i, p + i + unit);
}

}  // namespace

void write(const Sink &sink, const at::Tensor &input) {
  if (input.layout() != c10::kStrided || input.is_quantized())
    fail(CTORCH_NOT_IMPLEMENTED, "only dense (strided) tensors can be saved as .npy; convert it (to_dense) first");
  const c10::ScalarType st = input.scalar_type();
  const std::string descr = descr_of(st);
  if (descr.empty())
    fail(CTORCH_NOT_IMPLEMENTED, std::string("NumPy has no dtype for ") + c10::toString(st) +
                                     " (bfloat16, complex32 and the float8 types have none); convert it first");
  for (int64_t d : input.sizes())
    if (d < 0) fail(CTORCH_VALUE, "a tensor with a negative size cannot be saved");
  at::Tensor t = input.detach().resolve_conj().resolve_neg().cpu().contiguous();
  // _write_array_header: sorted keys, repr of each value, the spare space
  // for the first axis' digits, then _wrap_header's padding to 64.
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_repr(t.sizes()) + ", }";
  if (t.dim() > 0) h += std::string(21 - std::min<size_t>(21, std::to_string(t.size(0)).size()), ' ');
  // _wrap_header_guess_version: 1.0 unless its 2-byte length cannot hold it.
  const size_t hlen = h.size() + 1;
  const bool v1 = hlen + (64 - ((10 + hlen) % 64)) <= 65535;
  const size_t prefix = v1 ? 10 : 12;
  const size_t pad = 64 - ((prefix + hlen) % 64);
  std::string out = "\x93NUMPY";
  out += static_cast<char>(v1 ? 1 : 2);
  out += '\0';
  const uint64_t total = hlen + pad;
  for (size_t k = 0; k < prefix - 8; ++k) out += static_cast<char>((total >> (8 * k)) & 0xFF);
  out += h;
  out += std::string(pad, ' ');
  out += '\n';
  sink(out.data(), out.size());
  const size_t nbytes = static_cast<size_t>(t.numel()) * t.element_size();
  const char *p = static_cast<const char *>(t.data_ptr());
  for (size_t done = 0; done < nbytes;) {  // in chunks: a sink takes size_t, a storage may be huge
    size_t n = std::min<size_t>(nbytes - done, size_t(1) << 30);
    sink(p + done, n);
    done += n;
  }
}

at::Tensor read(const zip::Source &src, const std::string &what, LoadBudget &budget) {
  const uint64_t size = src.size();
  unsigned char pre[12];
  if (size < 10) bad(what, "it is shorter than the .npy preamble");
  src.read(0, pre, 10);
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0) bad(what, "it does not start with the .npy magic");
  const int major = pre[6], minor = pre[7];
  if (minor != 0 || major < 1 || major > 3)
    bad(what, "format version " + std::to_string(major) + "." + std::to_string(minor) + " is not 1.0, 2.0 or 3.0");
  uint64_t hlen, start;
  if (major == 1) {
    hlen = le(pre + 8, 2);
    start = 10;
  } else {
    if (size < 12) bad(what, "it is shorter than the .npy preamble");
    src.read(10, pre + 10, 2);
    hlen = le(pre + 8, 4);
    start = 12;
  }
  if (hlen > kMaxHeader)
    bad(what, "its header of " + std::to_string(hlen) + " bytes is longer than NumPy's bound of " +
                  std::to_string(kMaxHeader));
  if (hlen > size - start) bad(what, "its header runs past the end of the data");
  std::string text(static_cast<size_t>(hlen), '\0');
  if (hlen) src.read(start, &text[0], text.size());
  // Versions 1.0 and 2.0 are latin-1, 3.0 UTF-8: a valid header is ASCII.
  for (unsigned char c : text)
    if (c >= 0x80 || (c < 0x20 && c != '\n' && c != '\t' && c != '\r')) bad(what, "its header is not ASCII text");
  Header h = Parser(text, what).run();
  // descr: a byte order and a kind/size ('<f4', '>i8', '|b1', '=u2').
  const std::string &d = h.descr;
  if (d.size() < 3 || std::string("<>|=").find(d[0]) == std::string::npos)
    bad(what, "its dtype '" + d + "' is not a plain NumPy dtype");
  size_t item = 0;
  for (size_t i = 2; i < d.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(d[i])) || item > 64) bad(what, "its dtype '" + d + "' is not a plain NumPy dtype");
    item = item * 10 + static_cast<size_t>(d[i] - '0');
  }
  const c10::ScalarType st = dtype_of(d[1], item, d, what);
  const bool big = d[0] == '>';
  // The element count, checked against the data before anything is allocated.
  uint64_t numel = 1;
  for (int64_t s : h.shape) {
    if (s != 0 && numel > UINT64_MAX / static_cast<uint64_t>(s)) bad(what, "its shape " + shape_repr(h.shape) + " overflows");
    numel *= static_cast<uint64_t>(s);
  }
  const uint64_t data_at = start + hlen;
  if (numel > (size - data_at) / item)
    bad(what, "its shape " + shape_repr(h.shape) + " needs " + std::to_string(numel) + " elements of " +
                  std::to_string(item) + " bytes, and only " + std::to_string(size - data_at) + " bytes of data follow");
  const uint64_t nbytes = numel * item;
  budget.charge_data(nbytes);
  std::vector<int64_t> shape = h.shape;
  if (h.fortran) std::reverse(shape.begin(), shape.end());  // read as the transpose, in C order
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(st));
  auto *p = static_cast<unsigned char *>(t.data_ptr());
  if (nbytes) src.read(data_at, p, static_cast<size_t>(nbytes));
  if (big && item > 1) swap_words(p, static_cast<size_t>(nbytes), c10::isComplexType(st) ? item / 2 : item);
  if (st == at::kBool)  // a bool byte other than 0/1 is not a bool: normalise, as NumPy's view would not
    for (uint64_t i = 0; i < nbytes; ++i) p[i] = p[i] != 0;
  if (h.fortran && t.dim() > 1) {
    std::vector<int64_t> perm(static_cast<size_t>(t.dim()));
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
    t = t.permute(perm).contiguous();
  }
  return t;
}

}  // namespace npy
}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_npy_save(const char *path, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_ptr(path, "path");
  if (!*path) ctorch::fail_arg("path", "is empty");
  ctorch::require_tensor(t, "t");
  at::Tensor x = ctorch::own(t, "t");
  ctorch::atomic_write_with(path, [&](const ctorch::Sink &s) { ctorch::npy::write(s, x); });
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_npy_save_to_buffer(size_t *out_len, void *buf, size_t cap, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_buffer_args(out_len, buf, cap);
  ctorch::require_tensor(t, "t");
  at::Tensor x = ctorch::own(t, "t");
  ctorch::write_to_buffer(out_len, buf, cap, [&](const ctorch::Sink &s) { ctorch::npy::write(s, x); });
  CTORCH_CATCH
}

}  // extern "C"

namespace {
ctorch_tensor npy_load(const ctorch::ByteSource &src) {
  std::unique_ptr<ctorch::zip::Source> in = ctorch::open_source(src);
  ctorch::LoadBudget budget(src.name(), 0);
  return ctorch::give(ctorch::npy::read(*in, src.name(), budget));
}
}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_npy_load(ctorch_tensor *out, const char *path) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(path, "path");
  if (!*path) ctorch::fail_arg("path", "is empty");
  *out = npy_load(ctorch::ByteSource::file(path));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_npy_load_from_buffer(ctorch_tensor *out, const void *data, size_t len) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (!data && len) ctorch::fail_arg("data", "is NULL with len " + std::to_string(len));
  *out = npy_load(ctorch::ByteSource::memory(data, len));
  CTORCH_CATCH
}

}  // extern "C"
