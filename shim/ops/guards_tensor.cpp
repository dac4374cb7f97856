// Guards of tensor-manipulation, indexing, sampling and math operators
// (why each exists: guards.h).
#include "guards_util.h"

#include "core/internal.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace ctorch {
namespace guard {

using namespace util;

void util::min_max(const at::Tensor &t, double *lo, double *hi) {
  at::Tensor d = t.detach().to(at::kDouble);
  *lo = d.min().item<double>();
  *hi = d.max().item<double>();
}

void align_tensors(at::TensorList tensors) { non_empty(tensors, "tensors"); }
void concat_names(at::TensorList tensors, at::Dimname) { non_empty(tensors, "tensors"); }
void concat_names_out(at::TensorList tensors, at::Dimname, const at::Tensor &) { non_empty(tensors, "tensors"); }
void concatenate_names(at::TensorList tensors, at::Dimname) { non_empty(tensors, "tensors"); }
void concatenate_names_out(at::TensorList tensors, at::Dimname, const at::Tensor &) {
  non_empty(tensors, "tensors");
}
void _stack(at::TensorList tensors, int64_t) { non_empty(tensors, "tensors"); }
void _stack_out(at::TensorList tensors, int64_t, const at::Tensor &) { non_empty(tensors, "tensors"); }

void align_to_ellipsis_idx(const at::Tensor &, at::DimnameList order, int64_t ellipsis_idx) {
  in_range(ellipsis_idx, 0, static_cast<int64_t>(order.size()), "ellipsis_idx");
}

void flatten_named_out_dim(const at::Tensor &self, int64_t start_dim, int64_t end_dim, at::Dimname) {
  if (self.dim() == 0) fail_arg("self", "a 0-dim tensor has no dimensions to flatten");
  in_range(start_dim, 0, self.dim() - 1, "start_dim");
  in_range(end_dim, start_dim, self.dim() - 1, "end_dim");
}

void sum_to_size(const at::Tensor &, Ints size) {
  all_in_range(size, 0, std::numeric_limits<int64_t>::max(), "size");
}

void set__source_Tensor(const at::Tensor &self, const at::Tensor &source) {
  if (self.scalar_type() != source.scalar_type())
    fail_arg("source", std::string("has dtype ") + c10::toString(source.scalar_type()) + ", self has " +
                           c10::toString(self.scalar_type()) + " (set_ shares memory, it does not convert)");
  if (self.device() != source.device()) fail_arg("source", "is on another device than self");
}

void set__source_Tensor_storage_offset(const at::Tensor &self, const at::Tensor &source, int64_t storage_offset,
                                       Ints size, Ints stride) {
  set__source_Tensor(self, source);
  if (!source.defined() || !source.has_storage()) return;  // libtorch reports these
  in_range(storage_offset, 0, std::numeric_limits<int64_t>::max(), "storage_offset");
  all_in_range(size, 0, std::numeric_limits<int64_t>::max(), "size");
  if (!stride.empty() && stride.size() != size.size())
    fail_arg("stride", "has " + std::to_string(stride.size()) + " values for " + std::to_string(size.size()) +
                           " sizes");
  all_in_range(stride, 0, std::numeric_limits<int64_t>::max(), "stride");
  for (int64_t v : size)
    if (v == 0) return;  // no element: nothing can be read
  __int128 last = last_index(static_cast<__int128>(storage_offset) + source.storage_offset(), size, stride);
  __int128 need = (last + 1) * static_cast<__int128>(self.element_size());
  __int128 have = static_cast<__int128>(source.storage().nbytes());
  if (need > have)
    fail_arg("size", "with storage_offset " + std::to_string(storage_offset) + " (plus source's own " +
                         std::to_string(source.storage_offset()) + ") and these strides needs " +
                         (need > (static_cast<__int128>(1) << 62) ? std::string("more than 2^62")
                                                                   : std::to_string(static_cast<int64_t>(need))) +
                         " bytes; source's storage has " + std::to_string(static_cast<int64_t>(have)) +
                         " (libtorch 1.13 would make a tensor reaching past it)");
}

namespace {
// See guards.h (resize_): the restride libtorch does for an unchanged size.
void resize_same_size(const at::Tensor &self, at::IntArrayRef size, c10::optional<at::MemoryFormat> mf) {
  if (self.defined() && self._is_zerotensor())
    fail_arg("self", "is a zero tensor (_efficientzerotensor), which has no memory to resize: resize a clone");
  if (!mf.has_value() || !self.defined() || self.layout() != c10::kStrided || !self.has_storage()) return;
  if (self.sizes() != size) return;  // a real resize grows the storage as needed
  int64_t need = (self.storage_offset() + self.numel()) * static_cast<int64_t>(self.element_size());
  if (self.numel() && need > static_cast<int64_t>(self.storage().nbytes()))
    fail_arg("self", "its memory is smaller than its sizes (an expanded view); a memory_format would restride it "
                     "past its storage: resize a clone");
}
}  // namespace

void resize_(const at::Tensor &self, c10::SymIntArrayRef size, c10::optional<at::MemoryFormat> memory_format) {
  c10::SmallVector<int64_t, 8> s;
  for (const auto &v : size) s.push_back(v.expect_int());
  resize_same_size(self, s, memory_format);
}

void resize_as_(const at::Tensor &self, const at::Tensor &the_template, c10::optional<at::MemoryFormat> mf) {
  resize_same_size(self, the_template.sizes(), mf);
}

void index_Tensor_out(const at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &, const at::Tensor &out) {
  if (out.scalar_type() != self.scalar_type())
    fail_arg("out", std::string("has dtype ") + c10::toString(out.scalar_type()) + ", expected self's " +
                        c10::toString(self.scalar_type()));
}

void _logcumsumexp_out(const at::Tensor &self, int64_t, const at::Tensor &out) {
  if (out.scalar_type() != self.scalar_type())
    fail_arg("out", std::string("has dtype ") + c10::toString(out.scalar_type()) + ", expected self's " +
                        c10::toString(self.scalar_type()));
}

void median_dim(const at::Tensor &self, int64_t, bool) { no_overlap(self, "self"); }
void median_dim_values(const at::Tensor &self, int64_t, bool, const at::Tensor &, const at::Tensor &) {
  no_overlap(self, "self");
}
void nanmedian_dim(const at::Tensor &self, int64_t, bool) { no_overlap(self, "self"); }
void nanmedian_dim_values(const at::Tensor &self, int64_t, bool, const at::Tensor &, const at::Tensor &) {
  no_overlap(self, "self");
}

void from_file(c10::string_view, c10::optional<bool>, c10::optional<int64_t> size,
               c10::optional<at::ScalarType> dtype, c10::optional<at::Layout>, c10::optional<at::Device>,
               c10::optional<bool>) {
  if (!size.has_value()) return;
  int64_t item = static_cast<int64_t>(c10::elementSize(dtype.value_or(c10::get_default_dtype_as_scalartype())));
  in_range(*size, 0, std::numeric_limits<int64_t>::max() / item, "size");
}

void random__from(const at::Tensor &, int64_t from, c10::optional<int64_t> to, c10::optional<at::Generator>) {
  if (!to.has_value() && from == std::numeric_limits<int64_t>::max())
    fail_arg("from", "INT64_MAX leaves no value to draw when to is None");
}

void binomial(const at::Tensor &count, const at::Tensor &prob, c10::optional<at::Generator>) {
  double lo, hi;
  if (readable(count) && !c10::isComplexType(count.scalar_type())) {
    min_max(count, &lo, &hi);
    if (!std::isfinite(lo) || !std::isfinite(hi)) fail_arg("count", "holds NaN or infinite values");
  }
  if (readable(prob) && !c10::isComplexType(prob.scalar_type())) {
    min_max(prob, &lo, &hi);
    if (std::isnan(lo) || std::isnan(hi)) fail_arg("prob", "holds NaN values");
  }
}

namespace {
void searchsorted_sorter(const at::Tensor &sorted_sequence, const OptTensor &sorter) {
  if (!sorter.has_value() || !sorter->defined()) return;
  if (sorter->sizes() != sorted_sequence.sizes()) fail_arg("sorter", "must have the sizes of sorted_sequence");
  if (sorter->scalar_type() != at::kLong) fail_arg("sorter", "must be an int64 tensor");
  if (!readable(*sorter)) return;
  double lo, hi;
  min_max(*sorter, &lo, &hi);
  int64_t n = sorted_sequence.dim() ? sorted_sequence.size(-1) : 1;
  if (lo < 0 || hi >= static_cast<double>(n))
    fail_arg("sorter", "holds indices outside [0, " + str(n) + ") (the last dimension of sorted_sequence)");
}
}  // namespace

void searchsorted_Tensor(const at::Tensor &sorted_sequence, const at::Tensor &, bool, bool,
                         c10::optional<c10::string_view>, const OptTensor &sorter) {
  searchsorted_sorter(sorted_sequence, sorter);
}
void searchsorted_Tensor_out(const at::Tensor &sorted_sequence, const at::Tensor &, bool, bool,
                             c10::optional<c10::string_view>, const OptTensor &sorter, const at::Tensor &) {
  searchsorted_sorter(sorted_sequence, sorter);
}
void searchsorted_Scalar(const at::Tensor &sorted_sequence, const at::Scalar &, bool, bool,
                         c10::optional<c10::string_view>, const OptTensor &sorter) {
  searchsorted_sorter(sorted_sequence, sorter);
}

namespace {
// histogramdd: one bin specification per column of the (..., N) input.
void histogram_bins(const at::Tensor &self, size_t nbins) {
  if (self.dim() < 1) fail_arg("self", "expected at least 1 dimension (..., N)");
  if (static_cast<int64_t>(nbins) != self.size(-1))
    fail_arg("bins", "expected " + str(self.size(-1)) + " entries (one per column of self), got " +
                         str(static_cast<int64_t>(nbins)));
}
}  // namespace

void histogramdd(const at::Tensor &self, Ints bins, c10::optional<at::ArrayRef<double>>, const OptTensor &,
                 bool) {
  histogram_bins(self, bins.size());
}
void histogramdd_TensorList_bins(const at::Tensor &self, at::TensorList bins, c10::optional<at::ArrayRef<double>>,
                                 const OptTensor &, bool) {
  histogram_bins(self, bins.size());
}
void _histogramdd_bin_edges(const at::Tensor &self, Ints bins, c10::optional<at::ArrayRef<double>>,
                            const OptTensor &, bool) {
  histogram_bins(self, bins.size());
}
void _histogramdd_from_bin_cts(const at::Tensor &self, Ints bins, c10::optional<at::ArrayRef<double>>,
                               const OptTensor &, bool) {
  histogram_bins(self, bins.size());
}
void _histogramdd_from_bin_tensors(const at::Tensor &self, at::TensorList bins, const OptTensor &, bool) {
  histogram_bins(self, bins.size());
}

void choose_qparams_optimized(const at::Tensor &input, int64_t numel, int64_t n_bins, double ratio,
                              int64_t bit_width) {
  if (!input.is_contiguous()) fail_arg("input", "must be contiguous (its first numel elements are read)");
  if (!input.device().is_cpu())
    fail_arg("input", "must be a CPU tensor (the kernel reads it on the host; a CUDA one: SIGSEGV, libtorch 2.11)");
  in_range(numel, 1, input.numel(), "numel");
  in_range(n_bins, 1, int64_t(1) << 20, "n_bins");
  if (!(ratio >= 0.0 && ratio <= 1.0)) fail_arg("ratio", "must be in [0, 1]");
  in_range(bit_width, 1, 16, "bit_width");
}

void _local_scalar_dense(const at::Tensor &self) {
  // More than one element: libtorch returns the first (1.13 and 2.15).
  if (self.numel() == 0) fail_arg("self", "is empty (there is no element to read)");
}

void _new_zeros_with_same_feature_meta(const at::Tensor &self, const at::Tensor &other,
                                       int64_t self_num_batch_dims) {
  in_range(self_num_batch_dims, 0, self.dim(), "self_num_batch_dims");
  (void)other;
}

namespace {
// The kernels take dims as torch.fft passes them: wrapped and unique.
// A negative one is not counted from the end but indexes before the sizes
// (1.13 and 2.15: SIGSEGV in r2c/c2r, sizes read from the heap in c2c on
// 2.15); a repeated one makes 2.15's MKL plan read past its arrays
// (SIGSEGV in r2c with dim [1, 1]; c2c/c2r return heap-dependent results),
// which 1.13's pocketfft refuses ("axis specified repeatedly").
void fft_dims(const at::Tensor &self, Ints dim) {
  const int64_t n = self.dim();
  for (size_t i = 0; i < dim.size(); ++i) {
    if (dim[i] < 0 || dim[i] >= n)
      fail_arg("dim", "dimension " + str(dim[i]) + " is out of range [0, " + str(n - 1) + "] for a tensor of " +
                          str(n) + " dimensions (these kernels take dims already wrapped, as torch.fft passes " +
                          "them: a negative one is not counted from the end)");
    for (size_t j = 0; j < i; ++j)
      if (dim[j] == dim[i])
        fail_arg("dim", "dimension " + str(dim[i]) + " is repeated (torch.fft refuses it too: FFT dims must be unique)");
  }
}
}  // namespace

void _fft_r2c(const at::Tensor &self, Ints dim, int64_t, bool) { fft_dims(self, dim); }
void _fft_r2c_out(const at::Tensor &self, Ints dim, int64_t, bool, const at::Tensor &) {
  fft_dims(self, dim);
}
void _fft_c2r(const at::Tensor &self, Ints dim, int64_t, int64_t) { fft_dims(self, dim); }
void _fft_c2r_out(const at::Tensor &self, Ints dim, int64_t, int64_t, const at::Tensor &) {
  fft_dims(self, dim);
}
void _fft_c2c(const at::Tensor &self, Ints dim, int64_t, bool) { fft_dims(self, dim); }
void _fft_c2c_out(const at::Tensor &self, Ints dim, int64_t, bool, const at::Tensor &) {
  fft_dims(self, dim);
}

void nanmean_out(const at::Tensor &self, at::OptionalIntArrayRef, bool, c10::optional<at::ScalarType>,
                 const at::Tensor &) {
  if (self._is_zerotensor()) fail_arg("self", "is a zero tensor (_efficientzerotensor); materialise it (clone) first");
}

namespace {
void not_quantized(const at::Tensor &self) {
  if (c10::isQIntType(self.scalar_type())) fail_arg("self", "is quantized; dequantize it first");
}
}  // namespace

void _neg_view(const at::Tensor &self) { not_quantized(self); }
void _neg_view_copy(const at::Tensor &self) { not_quantized(self); }
void _neg_view_copy_out(const at::Tensor &self, const at::Tensor &) { not_quantized(self); }
void view_dtype(const at::Tensor &self, at::ScalarType dtype) {
  not_quantized(self);
  if (c10::isQIntType(dtype)) fail_arg("dtype", "a quantized dtype needs a scale and zero point; use quantize_per_tensor");
}
void view_copy_dtype(const at::Tensor &self, at::ScalarType dtype) { view_dtype(self, dtype); }
void view_copy_dtype_out(const at::Tensor &self, at::ScalarType dtype, const at::Tensor &) { view_dtype(self, dtype); }

void matrix_exp_backward(const at::Tensor &self, const at::Tensor &grad) {
  if (self.dim() < 2 || self.size(-1) != self.size(-2)) fail_arg("self", "expected square matrices");
  if (grad.sizes() != self.sizes()) fail_arg("grad", "must have the sizes of self");
}

// ---- orthogonal polynomials ------------------------------------------------

namespace {
constexpr double kMaxDegree = 1 << 20;

void degree(const at::Scalar &n) {
  if (n.isComplex()) return;  // the kernel refuses complex degrees itself
  double v = n.toDouble();
  if (!(std::fabs(v) <= kMaxDegree)) fail_arg("n", "degree must be finite and at most 2^20 in magnitude");
}

void degree(const at::Tensor &n) {
  if (!n.defined() || n.numel() == 0 || c10::isComplexType(n.scalar_type())) return;
  double lo, hi;
  if (readable(n)) {
    min_max(n, &lo, &hi);
  } else if (n.layout() == c10::kStrided && n.device().is_cuda() && !c10::isQIntType(n.scalar_type()) &&
             !n._is_zerotensor()) {
    // On a GPU a NaN or huge degree hangs the kernel (the CUDA sweep, H100:
    // laguerre/legendre/shifted-chebyshev with n = NaN or 2^62 gave
    // no answer in 40 s), so the range is read back: one synchronisation, on
    // functions nobody calls in a hot loop. NaN propagates through max.
    lo = 0;
    hi = n.to(at::kDouble).abs().max().item<double>();
  } else {
    return;
  }
  if (!(std::fabs(lo) <= kMaxDegree && std::fabs(hi) <= kMaxDegree))
    fail_arg("n", "degrees must be finite and at most 2^20 in magnitude");
}
}  // namespace

#define CTORCH_GUARD_POLYNOMIAL_DEF(name)                                                          \
  void name(const at::Tensor &, const at::Tensor &n) { degree(n); }                               \
  void name##_out(const at::Tensor &, const at::Tensor &n, const at::Tensor &) { degree(n); }     \
  void name##_x_scalar(const at::Scalar &, const at::Tensor &n) { degree(n); }                    \
  void name##_x_scalar_out(const at::Scalar &, const at::Tensor &n, const at::Tensor &) { degree(n); } \
  void name##_n_scalar(const at::Tensor &, const at::Scalar &n) { degree(n); }                    \
  void name##_n_scalar_out(const at::Tensor &, const at::Scalar &n, const at::Tensor &) { degree(n); }
CTORCH_GUARD_POLYNOMIAL_DEF(special_chebyshev_polynomial_t)
CTORCH_GUARD_POLYNOMIAL_DEF(special_chebyshev_polynomial_u)
CTORCH_GUARD_POLYNOMIAL_DEF(special_chebyshev_polynomial_v)
CTORCH_GUARD_POLYNOMIAL_DEF(special_chebyshev_polynomial_w)
CTORCH_GUARD_POLYNOMIAL_DEF(special_shifted_chebyshev_polynomial_t)
CTORCH_GUARD_POLYNOMIAL_DEF(special_shifted_chebyshev_polynomial_u)
CTORCH_GUARD_POLYNOMIAL_DEF(special_shifted_chebyshev_polynomial_v)
CTORCH_GUARD_POLYNOMIAL_DEF(special_shifted_chebyshev_polynomial_w)
CTORCH_GUARD_POLYNOMIAL_DEF(special_hermite_polynomial_h)
CTORCH_GUARD_POLYNOMIAL_DEF(special_hermite_polynomial_he)
CTORCH_GUARD_POLYNOMIAL_DEF(special_laguerre_polynomial_l)
CTORCH_GUARD_POLYNOMIAL_DEF(special_legendre_polynomial_p)

namespace {
// The view (offset, size, stride) lies inside `capacity` bytes of storage
// (see guards.h, as_strided). Computed in 128 bits, saturated far past any
// storage, so nothing wraps the way libtorch 1.13's size_t arithmetic does.
void view_in_storage(const at::Tensor &self, Ints size, Ints stride, int64_t offset, __int128 capacity) {
  if (size.size() != stride.size()) return;  // libtorch reports the mismatch
  in_range(offset, 0, std::numeric_limits<int64_t>::max(), "storage_offset");
  all_in_range(size, 0, std::numeric_limits<int64_t>::max(), "size");
  all_in_range(stride, 0, std::numeric_limits<int64_t>::max(), "stride");
  // A view without elements reads nothing, so it is in bounds at any
  // offset: libtorch's own check (checkInBoundsForStorage, 1.13 and 2.x)
  // returns early for it, its slice makes such views past a 0-byte storage
  // (empty([1,0,6])[:, :, 2::2] has offset 2), and ctorch_tensor_data_ptr
  // gives NULL for it. Refusing it refused what torch accepts.
  for (int64_t v : size)
    if (v == 0) return;
  const __int128 item = static_cast<__int128>(self.element_size());
  __int128 need = (last_index(offset, size, stride) + 1) * item;
  if (need > capacity)
    fail_arg("size",
             "the view (storage_offset " + std::to_string(offset) + ", size " + c10::str(size.ref()) + ", stride " +
                 c10::str(stride.ref()) + ") reaches past its storage of " +
                 std::to_string(static_cast<int64_t>(capacity)) + " bytes");
}

void strided_view(const at::Tensor &self, Ints size, Ints stride, c10::optional<c10::SymInt> storage_offset) {
  if (!self.defined() || !self.has_storage() || self.layout() != c10::kStrided) return;
  int64_t offset = storage_offset.has_value() ? storage_offset->expect_int() : self.storage_offset();
  view_in_storage(self, size, stride, offset, static_cast<__int128>(self.storage().nbytes()));
}

// A list result of `n` tensors (guards.h, tensor_split_sections).
constexpr int64_t kMaxListResult = int64_t(1) << 24;
void list_result(int64_t n, const char *arg) {
  if (n > kMaxListResult)
    fail_arg(arg, str(n) + " would return that many tensors; ctorch returns at most " + str(kMaxListResult) +
                      " from one call");
}
}  // namespace

void as_strided(const at::Tensor &self, Ints size, Ints stride, c10::optional<c10::SymInt> storage_offset) {
  strided_view(self, size, stride, storage_offset);
}
void as_strided_(const at::Tensor &self, Ints size, Ints stride, c10::optional<c10::SymInt> storage_offset) {
  strided_view(self, size, stride, storage_offset);
}
void as_strided_copy(const at::Tensor &self, Ints size, Ints stride, c10::optional<c10::SymInt> storage_offset) {
  strided_view(self, size, stride, storage_offset);
}
void as_strided_copy_out(const at::Tensor &self, Ints size, Ints stride, c10::optional<c10::SymInt> storage_offset,
                         const at::Tensor &) {
  strided_view(self, size, stride, storage_offset);
}
void as_strided_scatter(const at::Tensor &self, const at::Tensor &, Ints size, Ints stride,
                        c10::optional<c10::SymInt> storage_offset) {
  // The view is taken of self's clone, whose storage holds exactly numel
  // elements (dense), starting at offset 0.
  if (!self.defined() || self.layout() != c10::kStrided) return;
  int64_t offset = storage_offset.has_value() ? storage_offset->expect_int() : self.storage_offset();
  view_in_storage(self, size, stride, offset, static_cast<__int128>(self.numel()) * self.element_size());
}
void _reshape_alias(const at::Tensor &self, Ints size, Ints stride) { strided_view(self, size, stride, {}); }
void _reshape_alias_copy(const at::Tensor &self, Ints size, Ints stride) { strided_view(self, size, stride, {}); }
void _reshape_alias_copy_out(const at::Tensor &self, Ints size, Ints stride, const at::Tensor &) {
  strided_view(self, size, stride, {});
}

void tensor_split_sections(const at::Tensor &, int64_t sections, int64_t) { list_result(sections, "sections"); }
void hsplit_int(const at::Tensor &, int64_t sections) { list_result(sections, "sections"); }
void vsplit_int(const at::Tensor &, int64_t sections) { list_result(sections, "sections"); }
void dsplit_int(const at::Tensor &, int64_t sections) { list_result(sections, "sections"); }

void cat_out(at::TensorList tensors, int64_t, const at::Tensor &) { non_empty(tensors, "tensors"); }
void concat_out(at::TensorList tensors, int64_t, const at::Tensor &) { non_empty(tensors, "tensors"); }
void concatenate_out(at::TensorList tensors, int64_t, const at::Tensor &) { non_empty(tensors, "tensors"); }

void _lazy_clone(const at::Tensor &self) {
  if (self.defined() && self.is_quantized())
    fail_arg("self", "is quantized: a copy-on-write clone of it has no quantizer (use clone)");
}

namespace {
void mkldnn_zeroed(c10::optional<at::Layout> layout, c10::optional<at::ScalarType> dtype, const char *arg) {
  if (layout.value_or(at::kStrided) != at::kMkldnn) return;
  at::ScalarType st = dtype.value_or(at::typeMetaToScalarType(at::get_default_dtype()));
  if (st != at::kFloat)
    fail_arg(arg, std::string("an MKLDNN tensor of ") + c10::toString(st) +
                      " cannot be zeroed: libtorch writes float32 zeros over it, past its memory");
}
}  // namespace

void zero_(const at::Tensor &self) {
  if (self.defined()) mkldnn_zeroed(self.layout(), self.scalar_type(), "self");
}
void zeros(Ints, c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout, c10::optional<at::Device>,
           c10::optional<bool>) {
  mkldnn_zeroed(layout, dtype, "layout");
}
void zeros_names(Ints, c10::optional<at::DimnameList>, c10::optional<at::ScalarType> dtype,
                 c10::optional<at::Layout> layout, c10::optional<at::Device>, c10::optional<bool>) {
  mkldnn_zeroed(layout, dtype, "layout");
}
void zeros_out(Ints, const at::Tensor &out) { zero_(out); }
void new_zeros(const at::Tensor &self, Ints, c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
               c10::optional<at::Device>, c10::optional<bool>) {
  if (self.defined()) mkldnn_zeroed(layout.value_or(self.layout()), dtype.value_or(self.scalar_type()), "layout");
}

void permute(const at::Tensor &self, Ints) {
#if !CTORCH_TORCH_AT_LEAST(2, 0)
  if (self.defined() && self.layout() == at::kSparse && self.dim() == 0)
    fail_arg("self", "permute of a 0-dim sparse tensor crashes libtorch 1.x (it is its own permutation)");
#else
  (void)self;
#endif
}

}  // namespace guard
}  // namespace ctorch
