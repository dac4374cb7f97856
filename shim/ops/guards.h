// Hand-written input checks for the generated operators whose libtorch
// kernels crash or corrupt memory on inputs Python's front end would have
// refused first. THE ONE PLACE for such checks.
//
// How it works: the generator (bindings-gen/ctorch_gen/plan.py,
// guarded_names) reads this file; for every `void NAME(` declared below, the
// wrapper of the operator whose unambiguous name (`name` or
// `name_overload`, the at::_ops struct name) is NAME calls
// ctorch::guard::NAME with the same arguments it is about to pass to
// at::_ops::NAME::call, right before that call. A guard throws (through
// ctorch::fail_arg: INVALID_ARGUMENT naming the argument) or returns.
// Operators without a guard get no call at all: the hot path (add, mul,
// relu, ...) is untouched. A guard declared for an operator the installed
// libtorch lacks is simply never called.
//
// THE RULE: a guard refuses an input only where
//   [crash]   libtorch would crash, hang, or corrupt or read past memory on
//             it (a result that changes with the heap's contents counts), or
//   [pytorch] PyTorch itself refuses it: its Python front end for the same
//             call, or a newer libtorch's own check (quoted),
// and otherwise lets libtorch compute, even where the result is odd. Each
// declaration's comment starts with the tag(s) it stands on and says which
// libtorch version crashes and how, or which check it mirrors; found by the
// sweep (tests/sweep, scripts/sweep), the first binding authors' placeholder
// inputs, or the differential test against torch.ops.aten (re-checked in Python under two
// MALLOC_PERTURB_ heaps: "deterministic" means both gave the same bytes).
// Keep one declaration per line start (`void NAME(`): the generator
// matches that.
#pragma once

#include <ATen/core/ATen_fwd.h>
#include <ATen/core/Dimname.h>
#include <ATen/core/Generator.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/Scalar.h>
#include <c10/core/SymIntArrayRef.h>
#include <type_traits>
#include <vector>
#include <c10/util/Optional.h>
#include <c10/util/string_view.h>

#include <array>

namespace ctorch {
namespace guard {

// A guard's int-list parameter. Several schemas say int[] in one libtorch
// and SymInt[] in another (_fft_c2c's dim, reflection_pad*'s padding,
// slow_conv3d's sizes, sum_to_size: int[] in 1.13, SymInt[] in 2.15), so the
// generated call passes an IntArrayRef or a SymIntArrayRef; both convert.
// The values always come from C int64s that ctorch already checked, so
// viewing SymInts as plain ints is exact.
class Ints {
 public:
  template <class T, class = typename std::enable_if<std::is_convertible<const T &, at::IntArrayRef>::value>::type>
  Ints(const T &a) : r_(a) {}  // NOLINT: implicit on purpose (IntArrayRef, SmallVector, vector)
  Ints(c10::SymIntArrayRef a) : r_(c10::asIntArrayRefUnchecked(a)) {}  // NOLINT
  operator at::IntArrayRef() const { return r_; }  // NOLINT
  size_t size() const { return r_.size(); }
  bool empty() const { return r_.empty(); }
  const int64_t *begin() const { return r_.begin(); }
  const int64_t *end() const { return r_.end(); }
  const int64_t *data() const { return r_.data(); }
  const int64_t &operator[](size_t i) const { return r_[i]; }
  std::vector<int64_t> vec() const { return r_.vec(); }
  at::IntArrayRef ref() const { return r_; }

 private:
  at::IntArrayRef r_;
};

using OptTensor = c10::optional<at::Tensor>;

// [crash] libtorch 1.13: batch_norm_cpu with training false reads running_mean and
// running_var through the data pointers of undefined tensors (SIGSEGV);
// per-channel tensors shorter than the channel count are read past their
// end. Python's F.batch_norm goes through _batch_norm_impl_index, which
// checks both; native_batch_norm itself checks neither.
void native_batch_norm(const at::Tensor &input, const OptTensor &weight, const OptTensor &bias,
                       const OptTensor &running_mean, const OptTensor &running_var, bool training,
                       double momentum, double eps);
void native_batch_norm_out(const at::Tensor &input, const OptTensor &weight, const OptTensor &bias,
                           const OptTensor &running_mean, const OptTensor &running_var, bool training,
                           double momentum, double eps, const at::Tensor &out, const at::Tensor &save_mean,
                           const at::Tensor &save_invstd);

// [crash] libtorch 1.13: batch_norm_backward_cpu reads save_mean/save_invstd
// (train) or running_mean/running_var (eval) unchecked: NULL reads
// (SIGSEGV) when absent, reads past their end when shorter than the
// channel count; grad_out is walked with input's sizes.
void native_batch_norm_backward(const at::Tensor &grad_out, const at::Tensor &input, const OptTensor &weight,
                                const OptTensor &running_mean, const OptTensor &running_var,
                                const OptTensor &save_mean, const OptTensor &save_invstd, bool train, double eps,
                                std::array<bool, 3> output_mask);
// [crash] libtorch 1.13 and 2.15: forwards to native_batch_norm_backward
// (impl_index 0) with the same unchecked reads (SIGSEGV with [2,3] inputs
// and no stats, train or eval). Under the rule: per-channel tensors with more
// than C elements are computed alike (their first C are read), so only
// fewer than C, or a non-contiguous one (read as a flat array: results
// change with the heap), is refused; both backward guards share this.
void _batch_norm_impl_index_backward(int64_t impl_index, const at::Tensor &input, const at::Tensor &grad_output,
                                     const OptTensor &weight, const OptTensor &running_mean,
                                     const OptTensor &running_var, const OptTensor &save_mean,
                                     const OptTensor &save_var_transform, bool train, double eps,
                                     std::array<bool, 3> output_mask, const at::Tensor &reservedSpace);

// [crash][pytorch] libtorch 2.x's own check: "weight_ih first dim must be
// 3 * hidden_size" (and weight_hh), which 1.13 lacks. Under the rule: kept:
// 1.13 computes some such weights (w_ih [4,3] for an LSTM of hidden 3) but
// 2.15 refuses every one of them, and 1.13 crashes on others. In detail,
// libtorch 1.13: the RNN cells chunk input @ w_ih.t() into 3 (GRU) or 4
// (LSTM) gates without checking that w_ih/w_hh have that many rows: with
// [2,3] weights the chunk list is short and gru_cell reads past it
// (SIGSEGV in mul_). lstm_cell and quantized_lstm_cell also read hx[1]
// without checking that hx has two tensors (SIGSEGV with hx of length 1).
void gru_cell(const at::Tensor &input, const at::Tensor &hx, const at::Tensor &w_ih, const at::Tensor &w_hh,
              const OptTensor &b_ih, const OptTensor &b_hh);
void lstm_cell(const at::Tensor &input, at::TensorList hx, const at::Tensor &w_ih, const at::Tensor &w_hh,
               const OptTensor &b_ih, const OptTensor &b_hh);
// [crash] libtorch 2.x: lstm.input on CPU takes oneDNN's path (lstm_mkldnn), which
// reorders each layer's weights by the shapes it derives from hx and input
// without checking the weights have them: params of the wrong count or
// shapes read past their memory (SIGSEGV in jit_blk_reorder_t, found by the
// sweep on 2.15.0). The count, shapes and dtypes nn.LSTM would give are
// required on every version: per layer and direction w_ih [4H, in], w_hh
// [4H, P], then b_ih, b_hh [4H] when has_biases, then w_hr [P, H] when hx[0]
// (P) and hx[1] (H) differ in size (proj_size).
void lstm_input(const at::Tensor &input, at::TensorList hx, at::TensorList params, bool has_biases,
                int64_t num_layers, double dropout, bool train, bool bidirectional, bool batch_first);
void quantized_lstm_cell(const at::Tensor &input, at::TensorList hx, const at::Tensor &w_ih,
                         const at::Tensor &w_hh, const at::Tensor &b_ih, const at::Tensor &b_hh,
                         const at::Tensor &packed_ih, const at::Tensor &packed_hh, const at::Tensor &col_offsets_ih,
                         const at::Tensor &col_offsets_hh, const at::Scalar &scale_ih, const at::Scalar &scale_hh,
                         const at::Scalar &zero_point_ih, const at::Scalar &zero_point_hh);
void quantized_gru_cell(const at::Tensor &input, const at::Tensor &hx, const at::Tensor &w_ih,
                        const at::Tensor &w_hh, const at::Tensor &b_ih, const at::Tensor &b_hh,
                        const at::Tensor &packed_ih, const at::Tensor &packed_hh, const at::Tensor &col_offsets_ih,
                        const at::Tensor &col_offsets_hh, const at::Scalar &scale_ih, const at::Scalar &scale_hh,
                        const at::Scalar &zero_point_ih, const at::Scalar &zero_point_hh);

// [crash] libtorch 1.13: _symeig_helper_cpu hands LAPACK's ?syev the matrix with
// n = size(-1) and no square check: a [2,3] input makes ssytd2_/sorgtr_
// write past the 6-float buffer (silent heap corruption; a later, unrelated
// call aborts in malloc). Returns CTORCH_OK otherwise.
void _symeig_helper(const at::Tensor &self, bool eigenvectors, bool upper);

// [crash] libtorch 1.13: batch_norm_update_stats divides by the channel count and
// by the values per channel (SIGFPE for inputs of sizes [2, 0] or [0, 3, 4]).
void batch_norm_update_stats(const at::Tensor &input, const OptTensor &running_mean, const OptTensor &running_var,
                             double momentum);

// ---- tensor lists, names, shapes (guards_tensor.cpp) ----------------------

// [crash] libtorch 1.13: these read tensors[0] of an empty list (SIGSEGV).
void align_tensors(at::TensorList tensors);
void concat_names(at::TensorList tensors, at::Dimname dim);
void concat_names_out(at::TensorList tensors, at::Dimname dim, const at::Tensor &out);
void concatenate_names(at::TensorList tensors, at::Dimname dim);
void concatenate_names_out(at::TensorList tensors, at::Dimname dim, const at::Tensor &out);
void _stack(at::TensorList tensors, int64_t dim);
void _stack_out(at::TensorList tensors, int64_t dim, const at::Tensor &out);
// [crash] libtorch 1.13: an ellipsis_idx outside [0, len(order)] writes past the
// permutation it builds (heap corruption, "free(): invalid pointer").
void align_to_ellipsis_idx(const at::Tensor &self, at::DimnameList order, int64_t ellipsis_idx);
// [crash] libtorch 1.13: flatten of a 0-dim tensor, or with start/end dims out of
// range, copies sizes from outside the tensor's (SIGSEGV in memcpy); a
// negative dim is not wrapped on every path (heap corruption): dims must be
// in [0, dim).
void flatten_named_out_dim(const at::Tensor &self, int64_t start_dim, int64_t end_dim, at::Dimname out_dim);
// [crash] libtorch 1.13: sizes in SymInt's reserved range (< -2^62) are read as
// pointers (SIGSEGV in SymInt::operator==).
void sum_to_size(const at::Tensor &self, Ints size);
// [crash] libtorch 1.13: set_ shares source's storage under self's dtype: a wider
// dtype reads past the storage.
void set__source_Tensor(const at::Tensor &self, const at::Tensor &source);
// [crash][pytorch] libtorch 1.13: set_(source, storage_offset, size, stride) sizes the result
// without counting the storage offset: storage_offset=1, size=[2,3] over a
// 6-element source gives a tensor reaching one element past the storage
// (found by the sweep: SEGV reading it). 2.x refuses it ("setStorage: ... out
// of bounds for storage of size"); ctorch refuses it on every version.
void set__source_Tensor_storage_offset(const at::Tensor &self, const at::Tensor &source, int64_t storage_offset,
                                       Ints size, Ints stride);
// [crash] libtorch 1.13: resize_ to the tensor's own sizes with a memory_format
// restrides it without growing the storage: an expanded view then claims
// more memory than it has (every later read overruns it). A zero tensor
// (_efficientzerotensor) has no memory at all: resize_ with a memory_format
// restrides it over a NULL pointer (SIGSEGV, found by the sweep).
void resize_(const at::Tensor &self, c10::SymIntArrayRef size, c10::optional<at::MemoryFormat> memory_format);
void resize_as_(const at::Tensor &self, const at::Tensor &the_template, c10::optional<at::MemoryFormat> memory_format);
// [crash] libtorch 1.13: index.Tensor_out writes self's dtype into out unconverted
// (SIGSEGV when out's dtype is wider).
void index_Tensor_out(const at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices,
                      const at::Tensor &out);
// [crash] libtorch 1.13: _logcumsumexp.out, likewise.
void _logcumsumexp_out(const at::Tensor &self, int64_t dim, const at::Tensor &out);
// [crash] libtorch 1.13: median/nanmedian along a dim read an expanded input as if
// dense, past its storage.
void median_dim(const at::Tensor &self, int64_t dim, bool keepdim);
void median_dim_values(const at::Tensor &self, int64_t dim, bool keepdim, const at::Tensor &values,
                       const at::Tensor &indices);
void nanmedian_dim(const at::Tensor &self, int64_t dim, bool keepdim);
void nanmedian_dim_values(const at::Tensor &self, int64_t dim, bool keepdim, const at::Tensor &values,
                          const at::Tensor &indices);
// [crash] libtorch 1.13: from_file multiplies size by the element size unchecked: a
// huge size overflows to a tiny storage and the tensor claims 2^62 elements
// over a NULL data pointer.
void from_file(c10::string_view filename, c10::optional<bool> shared, c10::optional<int64_t> size,
               c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
               c10::optional<at::Device> device, c10::optional<bool> pin_memory);
// [crash] libtorch 1.13: random_(from=INT64_MAX, to=None) computes from + 1 (signed
// overflow) and then loops forever shifting a negative number.
void random__from(const at::Tensor &self, int64_t from, c10::optional<int64_t> to,
                  c10::optional<at::Generator> generator);
// [crash] libtorch 1.13: binomial's sampler loops forever on a NaN or infinite
// count or a NaN probability.
void binomial(const at::Tensor &count, const at::Tensor &prob, c10::optional<at::Generator> generator);
// [crash] libtorch 1.13: searchsorted reads sorted_sequence at the sorter's values
// unchecked (SIGSEGV for out-of-range sorter indices).
void searchsorted_Tensor(const at::Tensor &sorted_sequence, const at::Tensor &self, bool out_int32, bool right,
                         c10::optional<c10::string_view> side, const OptTensor &sorter);
void searchsorted_Tensor_out(const at::Tensor &sorted_sequence, const at::Tensor &self, bool out_int32, bool right,
                             c10::optional<c10::string_view> side, const OptTensor &sorter, const at::Tensor &out);
void searchsorted_Scalar(const at::Tensor &sorted_sequence, const at::Scalar &self, bool out_int32, bool right,
                         c10::optional<c10::string_view> side, const OptTensor &sorter);
// [crash] libtorch 1.13: histogramdd reads one bin count per input column without
// checking that bins has that many (SIGSEGV with bins=[]).
void histogramdd(const at::Tensor &self, Ints bins, c10::optional<at::ArrayRef<double>> range,
                 const OptTensor &weight, bool density);
void histogramdd_TensorList_bins(const at::Tensor &self, at::TensorList bins,
                                 c10::optional<at::ArrayRef<double>> range, const OptTensor &weight, bool density);
void _histogramdd_bin_edges(const at::Tensor &self, Ints bins, c10::optional<at::ArrayRef<double>> range,
                            const OptTensor &weight, bool density);
void _histogramdd_from_bin_cts(const at::Tensor &self, Ints bins,
                               c10::optional<at::ArrayRef<double>> range, const OptTensor &weight, bool density);
void _histogramdd_from_bin_tensors(const at::Tensor &self, at::TensorList bins, const OptTensor &weight,
                                   bool density);
// [crash] libtorch 1.13: choose_qparams_optimized reads `numel` floats from the
// input's data pointer unchecked (SIGSEGV for -1 or more than it has) and
// loops without end for n_bins <= 0 or huge, or a non-finite ratio. It
// reads on the host: a CUDA input crashes (SIGSEGV, 2.11, CUDA sweep).
void choose_qparams_optimized(const at::Tensor &input, int64_t numel, int64_t n_bins, double ratio,
                              int64_t bit_width);
// [crash] libtorch 1.13: _local_scalar_dense reads one element of an empty
// tensor (SIGSEGV; 2.15 refuses it: "Empty tensor not supported"). Under the rule:
// lifted for more than one element: both versions return the first
// (Tensor.item() refuses that, but item is another operator).
void _local_scalar_dense(const at::Tensor &self);
// [crash] libtorch 1.13: _new_zeros_with_same_feature_meta indexes sizes with an
// unchecked self_num_batch_dims (SIGSEGV for -1).
void _new_zeros_with_same_feature_meta(const at::Tensor &self, const at::Tensor &other, int64_t self_num_batch_dims);
// [crash] libtorch 1.13: _fft_r2c/_c2r/_c2c index the tensor's sizes with unchecked
// dims (SIGSEGV for dim 2^31). [crash][pytorch] 1.13 and 2.15: a negative dim
// is not wrapped (SIGSEGV in r2c and c2r on both; sizes read from before
// the tensor's in c2c on 2.15: results change with the heap), and a
// repeated dim (dim [1, 1]) makes 2.15's MKL path crash (SIGSEGV in r2c,
// found by the boxed sweep) or return heap-dependent results (c2c, c2r);
// 1.13 refuses it. torch.fft passes dims wrapped and refuses repeated
// ones ("FFT dims must be unique"): dims must be distinct, in [0, dim).
void _fft_r2c(const at::Tensor &self, Ints dim, int64_t normalization, bool onesided);
void _fft_r2c_out(const at::Tensor &self, Ints dim, int64_t normalization, bool onesided,
                  const at::Tensor &out);
void _fft_c2r(const at::Tensor &self, Ints dim, int64_t normalization, int64_t last_dim_size);
void _fft_c2r_out(const at::Tensor &self, Ints dim, int64_t normalization, int64_t last_dim_size,
                  const at::Tensor &out);
void _fft_c2c(const at::Tensor &self, Ints dim, int64_t normalization, bool forward);
void _fft_c2c_out(const at::Tensor &self, Ints dim, int64_t normalization, bool forward,
                  const at::Tensor &out);
// [crash] libtorch 1.13: nanmean.out of a zero tensor (_efficientzerotensor) runs
// nansum's kernel over its NULL data (SIGSEGV).
void nanmean_out(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                 c10::optional<at::ScalarType> dtype, const at::Tensor &out);
// [crash] libtorch 1.13: a negative or dtype view of a quantized tensor recurses
// without end (_neg_view: stack overflow in quantized_clone) or makes a
// tensor without a quantizer (view.dtype: SIGSEGV when it is read).
void _neg_view(const at::Tensor &self);
void _neg_view_copy(const at::Tensor &self);
void _neg_view_copy_out(const at::Tensor &self, const at::Tensor &out);
void view_dtype(const at::Tensor &self, at::ScalarType dtype);
void view_copy_dtype(const at::Tensor &self, at::ScalarType dtype);
void view_copy_dtype_out(const at::Tensor &self, at::ScalarType dtype, const at::Tensor &out);
// [crash] libtorch 1.13: matrix_exp_backward of a non-matrix reads sizes it lacks.
void matrix_exp_backward(const at::Tensor &self, const at::Tensor &grad);

// [crash] The orthogonal-polynomial families evaluate P_n by a recurrence of n steps
// per element: libtorch 1.13 loops ~forever for n = 2^62 (and converts a
// non-finite n to int64, undefined). n is limited to 2^20 in magnitude.
// Each family has six schemas (Tensor/Scalar x and n, each with .out); the
// generator expands CTORCH_GUARD_POLYNOMIAL(name) to all six names.
#define CTORCH_GUARD_POLYNOMIAL(name)                                                            \
  void name(const at::Tensor &x, const at::Tensor &n);                                          \
  void name##_out(const at::Tensor &x, const at::Tensor &n, const at::Tensor &out);             \
  void name##_x_scalar(const at::Scalar &x, const at::Tensor &n);                               \
  void name##_x_scalar_out(const at::Scalar &x, const at::Tensor &n, const at::Tensor &out);    \
  void name##_n_scalar(const at::Tensor &x, const at::Scalar &n);                               \
  void name##_n_scalar_out(const at::Tensor &x, const at::Scalar &n, const at::Tensor &out);
CTORCH_GUARD_POLYNOMIAL(special_chebyshev_polynomial_t)
CTORCH_GUARD_POLYNOMIAL(special_chebyshev_polynomial_u)
CTORCH_GUARD_POLYNOMIAL(special_chebyshev_polynomial_v)
CTORCH_GUARD_POLYNOMIAL(special_chebyshev_polynomial_w)
CTORCH_GUARD_POLYNOMIAL(special_shifted_chebyshev_polynomial_t)
CTORCH_GUARD_POLYNOMIAL(special_shifted_chebyshev_polynomial_u)
CTORCH_GUARD_POLYNOMIAL(special_shifted_chebyshev_polynomial_v)
CTORCH_GUARD_POLYNOMIAL(special_shifted_chebyshev_polynomial_w)
CTORCH_GUARD_POLYNOMIAL(special_hermite_polynomial_h)
CTORCH_GUARD_POLYNOMIAL(special_hermite_polynomial_he)
CTORCH_GUARD_POLYNOMIAL(special_laguerre_polynomial_l)
CTORCH_GUARD_POLYNOMIAL(special_legendre_polynomial_p)

// ---- neural-network kernels (guards_nn.cpp) --------------------------------

// [crash] libtorch 1.13: the embedding_bag kernels trust their index
// tensors: offsets that decrease or pass the end, indices outside the
// weight's rows and zero-size weights are read through unchecked (SIGSEGV,
// heap corruption "malloc_consolidate(): invalid chunk size"). [pytorch]
// indices of 3 or more dims and 2-D offsets: 2.x's own check ("input has
// to be a 1D or 2D Tensor"). Under the rule: 2-D indices lifted for sum and mean
// (computed deterministically by 1.13 and 2.15); kept for mode max, which
// crashes on both (SIGSEGV / abort with indices [2,3], offsets [0,1]).
void embedding_bag(const at::Tensor &weight, const at::Tensor &indices, const at::Tensor &offsets,
                   bool scale_grad_by_freq, int64_t mode, bool sparse, const OptTensor &per_sample_weights,
                   bool include_last_offset);
void embedding_bag_padding_idx(const at::Tensor &weight, const at::Tensor &indices, const at::Tensor &offsets,
                               bool scale_grad_by_freq, int64_t mode, bool sparse,
                               const OptTensor &per_sample_weights, bool include_last_offset,
                               c10::optional<int64_t> padding_idx);
void _embedding_bag(const at::Tensor &weight, const at::Tensor &indices, const at::Tensor &offsets,
                    bool scale_grad_by_freq, int64_t mode, bool sparse, const OptTensor &per_sample_weights,
                    bool include_last_offset, int64_t padding_idx);
void _embedding_bag_forward_only(const at::Tensor &weight, const at::Tensor &indices, const at::Tensor &offsets,
                                 bool scale_grad_by_freq, int64_t mode, bool sparse,
                                 const OptTensor &per_sample_weights, bool include_last_offset,
                                 int64_t padding_idx);
// [crash] libtorch 1.13: the linear upsampling kernels take a given scale at its
// word: a scale below output/input puts source indices past the input
// (SIGSEGV; Python's interpolate always passes matching sizes and scales).
void upsample_linear1d(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                       c10::optional<double> scales);
void upsample_linear1d_out(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                           c10::optional<double> scales, const at::Tensor &out);
void upsample_bilinear2d(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                         c10::optional<double> scales_h, c10::optional<double> scales_w);
void upsample_bilinear2d_out(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                             c10::optional<double> scales_h, c10::optional<double> scales_w, const at::Tensor &out);
void upsample_trilinear3d(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                          c10::optional<double> scales_d, c10::optional<double> scales_h,
                          c10::optional<double> scales_w);
void upsample_trilinear3d_out(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                              c10::optional<double> scales_d, c10::optional<double> scales_h,
                              c10::optional<double> scales_w, const at::Tensor &out);
void _upsample_bilinear2d_aa(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                             c10::optional<double> scales_h, c10::optional<double> scales_w);
void _upsample_bilinear2d_aa_out(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                                 c10::optional<double> scales_h, c10::optional<double> scales_w,
                                 const at::Tensor &out);
void _upsample_bicubic2d_aa(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                            c10::optional<double> scales_h, c10::optional<double> scales_w);
void _upsample_bicubic2d_aa_out(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                                c10::optional<double> scales_h, c10::optional<double> scales_w,
                                const at::Tensor &out);
// [crash] libtorch 1.13: slow_conv3d divides by weight sizes that may be 0
// (SIGFPE for a zero-size weight). Under the rule: a kernel_size other than the
// weight's was refused; now only one whose product exceeds the weight's
// spatial size, which is read past the weight (results change with the
// heap, 1.13 and 2.15); smaller ones compute deterministically on both.
void slow_conv3d(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size, const OptTensor &bias,
                 Ints stride, Ints padding);
void slow_conv3d_out(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size,
                     const OptTensor &bias, Ints stride, Ints padding, const at::Tensor &out);
void slow_conv3d_forward(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size,
                         const OptTensor &bias, Ints stride, Ints padding);
void slow_conv3d_forward_output(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size,
                                const OptTensor &bias, Ints stride, Ints padding,
                                const at::Tensor &output);
// [crash] libtorch 1.13: mkldnn_convolution indexes padding/stride/dilation by the
// input's spatial dims without checking their lengths (SIGSEGV).
void mkldnn_convolution(const at::Tensor &self, const at::Tensor &weight, const OptTensor &bias,
                        Ints padding, Ints stride, Ints dilation, int64_t groups);
// [crash] libtorch 1.13 and 2.15: a stride of 0 divides by zero in oneDNN's
// choice of the weight's layout (SIGFPE; PyTorch's Python crashes the same
// way). 1.13 takes no input_size.
void mkldnn_reorder_conv2d_weight(const at::Tensor &self, Ints padding, Ints stride, Ints dilation,
                                  c10::SymInt groups);
void mkldnn_reorder_conv2d_weight(const at::Tensor &self, Ints padding, Ints stride, Ints dilation,
                                  c10::SymInt groups, at::OptionalSymIntArrayRef input_size);
void mkldnn_reorder_conv3d_weight(const at::Tensor &self, Ints padding, Ints stride, Ints dilation,
                                  c10::SymInt groups);
void mkldnn_reorder_conv3d_weight(const at::Tensor &self, Ints padding, Ints stride, Ints dilation,
                                  c10::SymInt groups, at::OptionalSymIntArrayRef input_size);
// [crash] libtorch 1.13: col2im/im2col compute block counts with overflowing
// products of huge window sizes and divide by them (SIGFPE).
void col2im(const at::Tensor &self, c10::SymIntArrayRef output_size, Ints kernel_size,
            Ints dilation, Ints padding, Ints stride);
void col2im_out(const at::Tensor &self, c10::SymIntArrayRef output_size, Ints kernel_size,
                Ints dilation, Ints padding, Ints stride, const at::Tensor &out);
void im2col(const at::Tensor &self, Ints kernel_size, Ints dilation, Ints padding,
            Ints stride);
// [crash] libtorch 1.13: max_pool1d with a window wider than the padded input still
// makes one output and scans the whole window (~forever for 2^31).
void max_pool1d(const at::Tensor &self, Ints kernel_size, Ints stride, Ints padding,
                Ints dilation, bool ceil_mode);
void max_pool1d_with_indices(const at::Tensor &self, Ints kernel_size, Ints stride,
                             Ints padding, Ints dilation, bool ceil_mode);
// [crash] libtorch 1.13: reflection/replication padding adds the pads to the size
// unchecked: INT64_MIN overflows into a small output written out of bounds.
void reflection_pad1d(const at::Tensor &self, Ints padding);
void reflection_pad1d_out(const at::Tensor &self, Ints padding, const at::Tensor &out);
void reflection_pad2d(const at::Tensor &self, Ints padding);
void reflection_pad2d_out(const at::Tensor &self, Ints padding, const at::Tensor &out);
void reflection_pad3d(const at::Tensor &self, Ints padding);
void reflection_pad3d_out(const at::Tensor &self, Ints padding, const at::Tensor &out);
void replication_pad1d(const at::Tensor &self, Ints padding);
void replication_pad1d_out(const at::Tensor &self, Ints padding, const at::Tensor &out);
void replication_pad2d(const at::Tensor &self, Ints padding);
void replication_pad2d_out(const at::Tensor &self, Ints padding, const at::Tensor &out);
void replication_pad3d(const at::Tensor &self, Ints padding);
void replication_pad3d_out(const at::Tensor &self, Ints padding, const at::Tensor &out);
// [crash] libtorch 1.13: channel shuffles divide by the channel count per
// group and by the batch (SIGFPE with 0 channels, 0 groups or an empty
// input, e.g. [0, 4]). [pytorch] fewer than 3 dims: 2.x's own check
// ("channel_shuffle expects input with > 2 dims"), which 1.13's
// channel_shuffle (what F.channel_shuffle calls) has too. Under the rule: kept
// for 2-D input (1.13's
// native_channel_shuffle computes it; 2.15 refuses it).
void native_channel_shuffle(const at::Tensor &self, int64_t groups);
void channel_shuffle(const at::Tensor &self, int64_t groups);
// [crash] libtorch 1.13: weight norm of an empty v divides by zero sizes
// (SIGFPE). 1.13 and 2.15: the fused kernel (_weight_norm_interface, and
// _weight_norm for dim 0 or the last dim) reads v and g through their data
// pointers without the ZeroTensor fallback: a zero tensor
// (_efficientzerotensor) there is read as the heap behind it (results
// change with MALLOC_PERTURB_; _weight_norm with a zero g: glibc "memory
// corruption" abort, found by the sweep, typed and boxed). Python's
// torch._weight_norm does the same. Refused (INVALID_ARGUMENT naming v or
// g: "materialise it (clone) first"). For dim 0 or the last dim the fused kernel reads one g per
// slice: fewer is read past (results change with the heap, 1.13 and 2.15).
// _weight_norm lifted otherwise (a larger g is read in its first
// elements; other dims broadcast g or libtorch refuses it itself).
// _weight_norm_interface keeps g of exactly one element per slice: it also
// returns the norms in g's shape, of which it writes only one per slice
// (the rest is uninitialized memory: differs between heaps).
void _weight_norm(const at::Tensor &v, const at::Tensor &g, int64_t dim);
void _weight_norm_interface(const at::Tensor &v, const at::Tensor &g, int64_t dim);


// ---- neural-network kernels, continued (guards_pool.cpp) -------------------

// [crash] libtorch 1.13: the convolution front ends multiply and divide by groups
// unchecked: groups = 2^62 overflows to a zero divisor (SIGFPE in
// _convolution, found by the sweep through conv1d.padding). groups must
// be in [1, 2^31] on every entry point that takes it.
void convolution(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride, Ints padding,
                 Ints dilation, bool transposed, Ints output_padding, int64_t groups);
void convolution_overrideable(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride,
                              Ints padding, Ints dilation, bool transposed, Ints output_padding, int64_t groups);
void _convolution(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride,
                  Ints padding, Ints dilation, bool transposed, Ints output_padding, int64_t groups, bool benchmark,
                  bool deterministic, bool cudnn_enabled, bool allow_tf32);
void _convolution_deprecated(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride,
                             Ints padding, Ints dilation, bool transposed, Ints output_padding, int64_t groups,
                             bool benchmark, bool deterministic, bool cudnn_enabled);
void _convolution_mode(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride,
                       c10::string_view padding, Ints dilation, int64_t groups);
void conv1d(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride, Ints padding,
            Ints dilation, int64_t groups);
void conv2d(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride, Ints padding,
            Ints dilation, int64_t groups);
void conv3d(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride, Ints padding,
            Ints dilation, int64_t groups);
void conv1d_padding(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride,
                    c10::string_view padding, Ints dilation, int64_t groups);
void conv2d_padding(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride,
                    c10::string_view padding, Ints dilation, int64_t groups);
void conv3d_padding(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride,
                    c10::string_view padding, Ints dilation, int64_t groups);
void conv_transpose1d(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride,
                      Ints padding, Ints output_padding, int64_t groups, Ints dilation);
void conv_transpose2d_input(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride,
                            Ints padding, Ints output_padding, int64_t groups, Ints dilation);
void conv_transpose3d_input(const at::Tensor &input, const at::Tensor &weight, const OptTensor &bias, Ints stride,
                            Ints padding, Ints output_padding, int64_t groups, Ints dilation);
// [crash] libtorch 1.13: pixel_shuffle/unshuffle divide the channels by factor^2,
// which overflows to 0 for factor 2^62 (SIGFPE). factor in [1, 2^31].
void pixel_shuffle(const at::Tensor &self, int64_t upscale_factor);
void pixel_unshuffle(const at::Tensor &self, int64_t downscale_factor);
// [crash][pytorch] libtorch 1.13: fractional max pooling reads
// random_samples as a flat [N, C, 2|3] array without checking it
// (random_samples [2, 0]: SIGSEGV; a smaller batch: read past) and scans
// empty windows for kernel 0 (SIGSEGV). 2.x's own check: 3 dims, size(0) no
// less than the batch, size(1) the channels, size(2) 2|3. Under the rule: narrowed
// to exactly that check: a larger batch is computed (1.13 and 2.15); other
// sizes 1.13 computes but 2.15 refuses stay refused. Non-contiguous samples:
// refused on 1.13 only (2.x pools with their contiguous copy).
void fractional_max_pool2d(const at::Tensor &self, Ints kernel_size, Ints output_size,
                           const at::Tensor &random_samples);
void fractional_max_pool2d_output(const at::Tensor &self, Ints kernel_size, Ints output_size,
                                  const at::Tensor &random_samples, const at::Tensor &output,
                                  const at::Tensor &indices);
void fractional_max_pool3d(const at::Tensor &self, Ints kernel_size, Ints output_size,
                           const at::Tensor &random_samples);
void fractional_max_pool3d_output(const at::Tensor &self, Ints kernel_size, Ints output_size,
                                  const at::Tensor &random_samples, const at::Tensor &output,
                                  const at::Tensor &indices);
// [crash] libtorch 1.13: the adaptive pools take negative output sizes: the .out
// forms resize out/indices to size -2^63 (a corrupt tensor, found by the
// sweep), _adaptive_avg_pool2d returns one of size -1. Every output size
// must be in [0, 2^31].
void adaptive_avg_pool1d(const at::Tensor &self, Ints output_size);
void adaptive_avg_pool2d(const at::Tensor &self, Ints output_size);
void adaptive_avg_pool2d_out(const at::Tensor &self, Ints output_size, const at::Tensor &out);
void adaptive_avg_pool3d(const at::Tensor &self, Ints output_size);
void adaptive_avg_pool3d_out(const at::Tensor &self, Ints output_size, const at::Tensor &out);
void _adaptive_avg_pool2d(const at::Tensor &self, Ints output_size);
void _adaptive_avg_pool3d(const at::Tensor &self, Ints output_size);
void mkldnn_adaptive_avg_pool2d(const at::Tensor &self, Ints output_size);
void mkldnn_adaptive_avg_pool2d_out(const at::Tensor &self, Ints output_size, const at::Tensor &out);
void adaptive_max_pool1d(const at::Tensor &self, Ints output_size);
void adaptive_max_pool2d(const at::Tensor &self, Ints output_size);
void adaptive_max_pool2d_out(const at::Tensor &self, Ints output_size, const at::Tensor &out, const at::Tensor &indices);
void adaptive_max_pool3d(const at::Tensor &self, Ints output_size);
void adaptive_max_pool3d_out(const at::Tensor &self, Ints output_size, const at::Tensor &out, const at::Tensor &indices);
// [crash] libtorch 1.13: in training, rrelu_with_noise writes self.numel() random
// factors through noise's data pointer: a noise of another shape, or an
// expanded one, is written past its end (SIGSEGV, found by the sweep).
// Python's F.rrelu passes torch.empty_like(input).
void rrelu_with_noise(const at::Tensor &self, const at::Tensor &noise, const at::Scalar &lower,
                      const at::Scalar &upper, bool training, c10::optional<at::Generator> generator);
void rrelu_with_noise_(const at::Tensor &self, const at::Tensor &noise, const at::Scalar &lower,
                       const at::Scalar &upper, bool training, c10::optional<at::Generator> generator);
void rrelu_with_noise_out(const at::Tensor &self, const at::Tensor &noise, const at::Scalar &lower,
                          const at::Scalar &upper, bool training, c10::optional<at::Generator> generator,
                          const at::Tensor &out);
void rrelu_with_noise_functional(const at::Tensor &self, const at::Tensor &noise, const at::Scalar &lower,
                                 const at::Scalar &upper, bool training, c10::optional<at::Generator> generator);
// [crash] libtorch 1.13: quantized_max_pool1d/2d take any padding: 2^62 makes the
// output size computation overflow and the kernel read at NULL (SIGSEGV).
// The rules of max_pool*d apply: kernel, dilation >= 1, stride >= 1 when
// given, padding in [0, kernel / 2].
void quantized_max_pool1d(const at::Tensor &self, Ints kernel_size, Ints stride, Ints padding, Ints dilation,
                          bool ceil_mode);
void quantized_max_pool2d(const at::Tensor &self, Ints kernel_size, Ints stride, Ints padding, Ints dilation,
                          bool ceil_mode);
void quantized_max_pool3d(const at::Tensor &self, Ints kernel_size, Ints stride, Ints padding, Ints dilation,
                          bool ceil_mode);

// [crash] libtorch 1.13: the backward kernels of the max pools that return indices
// scatter grad_output into grad_input at `indices` without checking them:
// indices outside the input's plane, or grad_output/indices of other
// shapes, write past grad_input (SIGSEGV, found by the sweep). indices must
// have grad_output's sizes, the batch and channel sizes must be self's, and
// every index must be inside self's plane (one min/max pass over indices).
void adaptive_max_pool2d_backward(const at::Tensor &grad_output, const at::Tensor &self, const at::Tensor &indices);
void adaptive_max_pool2d_backward_grad_input(const at::Tensor &grad_output, const at::Tensor &self,
                                             const at::Tensor &indices, const at::Tensor &grad_input);
void adaptive_max_pool3d_backward(const at::Tensor &grad_output, const at::Tensor &self, const at::Tensor &indices);
void adaptive_max_pool3d_backward_grad_input(const at::Tensor &grad_output, const at::Tensor &self,
                                             const at::Tensor &indices, const at::Tensor &grad_input);
void fractional_max_pool2d_backward(const at::Tensor &grad_output, const at::Tensor &self, Ints kernel_size,
                                    Ints output_size, const at::Tensor &indices);
void fractional_max_pool2d_backward_grad_input(const at::Tensor &grad_output, const at::Tensor &self,
                                               Ints kernel_size, Ints output_size, const at::Tensor &indices,
                                               const at::Tensor &grad_input);
void fractional_max_pool3d_backward(const at::Tensor &grad_output, const at::Tensor &self, Ints kernel_size,
                                    Ints output_size, const at::Tensor &indices);
void fractional_max_pool3d_backward_grad_input(const at::Tensor &grad_output, const at::Tensor &self,
                                               Ints kernel_size, Ints output_size, const at::Tensor &indices,
                                               const at::Tensor &grad_input);
void max_pool2d_with_indices_backward(const at::Tensor &grad_output, const at::Tensor &self, Ints kernel_size,
                                      Ints stride, Ints padding, Ints dilation, bool ceil_mode,
                                      const at::Tensor &indices);
void max_pool2d_with_indices_backward_grad_input(const at::Tensor &grad_output, const at::Tensor &self,
                                                 Ints kernel_size, Ints stride, Ints padding, Ints dilation,
                                                 bool ceil_mode, const at::Tensor &indices,
                                                 const at::Tensor &grad_input);
void max_pool3d_with_indices_backward(const at::Tensor &grad_output, const at::Tensor &self, Ints kernel_size,
                                      Ints stride, Ints padding, Ints dilation, bool ceil_mode,
                                      const at::Tensor &indices);
void max_pool3d_with_indices_backward_grad_input(const at::Tensor &grad_output, const at::Tensor &self,
                                                 Ints kernel_size, Ints stride, Ints padding, Ints dilation,
                                                 bool ceil_mode, const at::Tensor &indices,
                                                 const at::Tensor &grad_input);

// [crash] Found by the sweep with CUDA tensors (libtorch 2.11 on an H100; these
// checks are device-independent, so they hold on every version):
// the cudnn_convolution entry points index padding/stride/dilation by the
// input's spatial dimensions and build cuDNN descriptors from the ranks
// unchecked: a 0-d, 1-d or mismatched-rank input/weight, or lists shorter
// than the spatial dims, crash (SIGSEGV, "free(): invalid pointer"). self
// and weight must be 3-d to 5-d of one rank, each list one value per
// spatial dimension, groups in [1, 2^31].
void cudnn_convolution(const at::Tensor &self, const at::Tensor &weight, Ints padding, Ints stride, Ints dilation,
                       int64_t groups, bool benchmark, bool deterministic, bool allow_tf32);
void cudnn_convolution_transpose(const at::Tensor &self, const at::Tensor &weight, Ints padding, Ints output_padding,
                                 Ints stride, Ints dilation, int64_t groups, bool benchmark, bool deterministic,
                                 bool allow_tf32);
void cudnn_convolution_relu(const at::Tensor &self, const at::Tensor &weight, const OptTensor &bias, Ints stride,
                            Ints padding, Ints dilation, int64_t groups);
void cudnn_convolution_add_relu(const at::Tensor &self, const at::Tensor &weight, const at::Tensor &z,
                                const c10::optional<at::Scalar> &alpha, const OptTensor &bias, Ints stride,
                                Ints padding, Ints dilation, int64_t groups);
// [crash] The CUDA batch-norm statistics kernels divide by the elements per
// channel: a zero-size input is SIGFPE. batch_norm_elemt reads a mean and an
// invstd per channel: fewer elements than channels read out of bounds on the
// device (illegal memory access; the second GPU run's sweep).
void batch_norm_stats(const at::Tensor &input, double eps);
void batch_norm_elemt(const at::Tensor &input, const OptTensor &weight, const OptTensor &bias, const at::Tensor &mean,
                      const at::Tensor &invstd, double eps);
void batch_norm_elemt_out(const at::Tensor &input, const OptTensor &weight, const OptTensor &bias,
                          const at::Tensor &mean, const at::Tensor &invstd, double eps, const at::Tensor &out);
// [crash] range.out_ (no step) calls the CPU range kernel directly, whatever out's
// device: a CUDA out is written from the host (SIGSEGV on every recipe).
// out must be a CPU tensor; range.out (with step) works on CUDA.
void range_out_(const at::Scalar &start, const at::Scalar &end, const at::Tensor &out);

// ---- views, lists, shapes (guards_tensor.cpp) ------------------------------

// [crash] libtorch 1.13: as_strided checks the view against its storage with size_t
// arithmetic that wraps: storage_offset 2^63-1 passes and the view's data
// pointer is computed past the address space (UBSan: pointer overflow; any
// read is wild; found by the 30-minute sweep). The view must lie inside
// the storage (inside the clone's storage for the _copy/_scatter forms):
// offset, sizes and strides non-negative, the last element's byte in it.
// A view with no element reads nothing: any offset, as libtorch allows.
void as_strided(const at::Tensor &self, Ints size, Ints stride, c10::optional<c10::SymInt> storage_offset);
void as_strided_(const at::Tensor &self, Ints size, Ints stride, c10::optional<c10::SymInt> storage_offset);
void as_strided_copy(const at::Tensor &self, Ints size, Ints stride, c10::optional<c10::SymInt> storage_offset);
void as_strided_copy_out(const at::Tensor &self, Ints size, Ints stride, c10::optional<c10::SymInt> storage_offset,
                         const at::Tensor &out);
void as_strided_scatter(const at::Tensor &self, const at::Tensor &src, Ints size, Ints stride,
                        c10::optional<c10::SymInt> storage_offset);
// [crash] libtorch 1.13: _reshape_alias makes a view with the given strides and no
// bounds check at all (size [2,3] stride [1,1] over one element: SIGSEGV
// reading it). Same rule as as_strided.
void _reshape_alias(const at::Tensor &self, Ints size, Ints stride);
void _reshape_alias_copy(const at::Tensor &self, Ints size, Ints stride);
void _reshape_alias_copy_out(const at::Tensor &self, Ints size, Ints stride, const at::Tensor &out);
// [crash] libtorch 1.13 and 2.x: tensor_split(sections) returns `sections` tensors,
// however few elements there are: 2^31 sections reserve 16 GiB of handles
// before anything is checked (ASan: allocator out of memory; without it the
// process is OOM-killed). ctorch returns at most 2^24 tensors from one call.
void tensor_split_sections(const at::Tensor &self, int64_t sections, int64_t dim);
void hsplit_int(const at::Tensor &self, int64_t sections);
void vsplit_int(const at::Tensor &self, int64_t sections);
void dsplit_int(const at::Tensor &self, int64_t sections);
// [crash] libtorch 1.13: cat.out with a quantized out reads tensors[0] of an empty
// list (cat_out_quantized_cpu: SIGSEGV at NULL).
void cat_out(at::TensorList tensors, int64_t dim, const at::Tensor &out);
void concat_out(at::TensorList tensors, int64_t dim, const at::Tensor &out);
void concatenate_out(at::TensorList tensors, int64_t dim, const at::Tensor &out);

// [crash] Found by the second 30-minute sweep (libtorch 1.13): sizes taken from
// ints that are never checked against negative values where the tensor
// is empty, so the result or a resized out gets a negative size (a tensor
// that is corrupt to read): unfold's size (step >= 1 as libtorch wants),
// max_unpool's output_size, embedding backward's num_weights.
void unfold(const at::Tensor &self, int64_t dimension, int64_t size, int64_t step);
void unfold_copy(const at::Tensor &self, int64_t dimension, int64_t size, int64_t step);
void unfold_copy_out(const at::Tensor &self, int64_t dimension, int64_t size, int64_t step, const at::Tensor &out);
void max_unpool2d(const at::Tensor &self, const at::Tensor &indices, Ints output_size);
void max_unpool2d_out(const at::Tensor &self, const at::Tensor &indices, Ints output_size, const at::Tensor &out);
void max_unpool3d(const at::Tensor &self, const at::Tensor &indices, Ints output_size, Ints stride, Ints padding);
void max_unpool3d_out(const at::Tensor &self, const at::Tensor &indices, Ints output_size, Ints stride, Ints padding,
                      const at::Tensor &out);
void embedding_backward(const at::Tensor &grad, const at::Tensor &indices, int64_t num_weights, int64_t padding_idx,
                        bool scale_grad_by_freq, bool sparse);
void embedding_dense_backward(const at::Tensor &grad_output, const at::Tensor &indices, int64_t num_weights,
                              int64_t padding_idx, bool scale_grad_by_freq);
void embedding_sparse_backward(const at::Tensor &grad, const at::Tensor &indices, int64_t num_weights,
                               int64_t padding_idx, bool scale_grad_by_freq);
// [crash] libtorch 1.13: linalg_tensorinv copies self's sizes up to `ind` without
// checking ind <= self.dim() (ind = INT64_MAX: heap-buffer-overflow in
// memcpy, ASan). ind must be in [1, self.dim()].
void linalg_tensorinv(const at::Tensor &self, int64_t ind);
void linalg_tensorinv_out(const at::Tensor &self, int64_t ind, const at::Tensor &out);

// [crash] libtorch 2.x: _lazy_clone (copy-on-write) of a quantized tensor makes a
// tensor without a quantizer (SIGSEGV reading it; found by the 2.15 sweep
// once its quantized inputs were real). A quantized self is refused.
void _lazy_clone(const at::Tensor &self);

}  // namespace guard
}  // namespace ctorch

// Sparse constructors and index converters: their own header.
#include "guards_sparse.h"
// batch norm out= forms against a libtorch 2.x wrong-result defect.
#include "guards_norm.h"
// Arithmetic, linear algebra and the factories: their own header, for size.
#include "guards_math.h"
