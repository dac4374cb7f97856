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
// Each declaration says which libtorch version crashes and how; found by
// the sweep (tests/sweep, scripts/sweep) or reported in issue 15. Keep one
// declaration per line start (`void NAME(`): the generator matches that.
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

// libtorch 1.13: batch_norm_cpu with training false reads running_mean and
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

// libtorch 1.13: batch_norm_backward_cpu reads save_mean/save_invstd
// (train) or running_mean/running_var (eval) unchecked: NULL reads
// (SIGSEGV) when absent, reads past their end when shorter than the
// channel count; grad_out is walked with input's sizes.
void native_batch_norm_backward(const at::Tensor &grad_out, const at::Tensor &input, const OptTensor &weight,
                                const OptTensor &running_mean, const OptTensor &running_var,
                                const OptTensor &save_mean, const OptTensor &save_invstd, bool train, double eps,
                                std::array<bool, 3> output_mask);
// libtorch 1.13: forwards to native_batch_norm_backward (impl_index 0)
// with the same unchecked reads (SIGSEGV with [2,3] inputs and no stats).
void _batch_norm_impl_index_backward(int64_t impl_index, const at::Tensor &input, const at::Tensor &grad_output,
                                     const OptTensor &weight, const OptTensor &running_mean,
                                     const OptTensor &running_var, const OptTensor &save_mean,
                                     const OptTensor &save_var_transform, bool train, double eps,
                                     std::array<bool, 3> output_mask, const at::Tensor &reservedSpace);

// libtorch 1.13: the RNN cells chunk input @ w_ih.t() into 3 (GRU) or 4
// (LSTM) gates without checking that w_ih/w_hh have that many rows: with
// [2,3] weights the chunk list is short and gru_cell reads past it
// (SIGSEGV in mul_). lstm_cell and quantized_lstm_cell also read hx[1]
// without checking that hx has two tensors (SIGSEGV with hx of length 1).
void gru_cell(const at::Tensor &input, const at::Tensor &hx, const at::Tensor &w_ih, const at::Tensor &w_hh,
              const OptTensor &b_ih, const OptTensor &b_hh);
void lstm_cell(const at::Tensor &input, at::TensorList hx, const at::Tensor &w_ih, const at::Tensor &w_hh,
               const OptTensor &b_ih, const OptTensor &b_hh);
// libtorch 2.x: lstm.input on CPU takes oneDNN's path (lstm_mkldnn), which
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

// libtorch 1.13: _symeig_helper_cpu hands LAPACK's ?syev the matrix with
// n = size(-1) and no square check: a [2,3] input makes ssytd2_/sorgtr_
// write past the 6-float buffer (silent heap corruption; a later, unrelated
// call aborts in malloc). Returns CTORCH_OK otherwise.
void _symeig_helper(const at::Tensor &self, bool eigenvectors, bool upper);

// libtorch 1.13: batch_norm_update_stats divides by the channel count and
// by the values per channel (SIGFPE for inputs of sizes [2, 0] or [0, 3, 4]).
void batch_norm_update_stats(const at::Tensor &input, const OptTensor &running_mean, const OptTensor &running_var,
                             double momentum);

// ---- tensor lists, names, shapes (guards_tensor.cpp) ----------------------

// libtorch 1.13: these read tensors[0] of an empty list (SIGSEGV).
void align_tensors(at::TensorList tensors);
void concat_names(at::TensorList tensors, at::Dimname dim);
void concat_names_out(at::TensorList tensors, at::Dimname dim, const at::Tensor &out);
void concatenate_names(at::TensorList tensors, at::Dimname dim);
void concatenate_names_out(at::TensorList tensors, at::Dimname dim, const at::Tensor &out);
void _stack(at::TensorList tensors, int64_t dim);
void _stack_out(at::TensorList tensors, int64_t dim, const at::Tensor &out);
// libtorch 1.13: an ellipsis_idx outside [0, len(order)] writes past the
// permutation it builds (heap corruption, "free(): invalid pointer").
void align_to_ellipsis_idx(const at::Tensor &self, at::DimnameList order, int64_t ellipsis_idx);
// libtorch 1.13: flatten of a 0-dim tensor, or with start/end dims out of
// range, copies sizes from outside the tensor's (SIGSEGV in memcpy); a
// negative dim is not wrapped on every path (heap corruption): dims must be
// in [0, dim).
void flatten_named_out_dim(const at::Tensor &self, int64_t start_dim, int64_t end_dim, at::Dimname out_dim);
// libtorch 1.13: sizes in SymInt's reserved range (< -2^62) are read as
// pointers (SIGSEGV in SymInt::operator==).
void sum_to_size(const at::Tensor &self, Ints size);
// libtorch 1.13: set_ shares source's storage under self's dtype: a wider
// dtype reads past the storage.
void set__source_Tensor(const at::Tensor &self, const at::Tensor &source);
// libtorch 1.13: set_(source, storage_offset, size, stride) sizes the result
// without counting the storage offset: storage_offset=1, size=[2,3] over a
// 6-element source gives a tensor reaching one element past the storage
// (found by the sweep: SEGV reading it). 2.x refuses it ("setStorage: ... out
// of bounds for storage of size"); ctorch refuses it on every version.
void set__source_Tensor_storage_offset(const at::Tensor &self, const at::Tensor &source, int64_t storage_offset,
                                       Ints size, Ints stride);
// libtorch 1.13: resize_ to the tensor's own sizes with a memory_format
// restrides it without growing the storage: an expanded view then claims
// more memory than it has (every later read overruns it).
void resize_(const at::Tensor &self, c10::SymIntArrayRef size, c10::optional<at::MemoryFormat> memory_format);
void resize_as_(const at::Tensor &self, const at::Tensor &the_template, c10::optional<at::MemoryFormat> memory_format);
// libtorch 1.13: index.Tensor_out writes self's dtype into out unconverted
// (SIGSEGV when out's dtype is wider).
void index_Tensor_out(const at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices,
                      const at::Tensor &out);
// libtorch 1.13: _logcumsumexp.out, likewise.
void _logcumsumexp_out(const at::Tensor &self, int64_t dim, const at::Tensor &out);
// libtorch 1.13: median/nanmedian along a dim read an expanded input as if
// dense, past its storage.
void median_dim(const at::Tensor &self, int64_t dim, bool keepdim);
void median_dim_values(const at::Tensor &self, int64_t dim, bool keepdim, const at::Tensor &values,
                       const at::Tensor &indices);
void nanmedian_dim(const at::Tensor &self, int64_t dim, bool keepdim);
void nanmedian_dim_values(const at::Tensor &self, int64_t dim, bool keepdim, const at::Tensor &values,
                          const at::Tensor &indices);
// libtorch 1.13: from_file multiplies size by the element size unchecked: a
// huge size overflows to a tiny storage and the tensor claims 2^62 elements
// over a NULL data pointer.
void from_file(c10::string_view filename, c10::optional<bool> shared, c10::optional<int64_t> size,
               c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
               c10::optional<at::Device> device, c10::optional<bool> pin_memory);
// libtorch 1.13: random_(from=INT64_MAX, to=None) computes from + 1 (signed
// overflow) and then loops forever shifting a negative number.
void random__from(const at::Tensor &self, int64_t from, c10::optional<int64_t> to,
                  c10::optional<at::Generator> generator);
// libtorch 1.13: binomial's sampler loops forever on a NaN or infinite
// count or a NaN probability.
void binomial(const at::Tensor &count, const at::Tensor &prob, c10::optional<at::Generator> generator);
// libtorch 1.13: searchsorted reads sorted_sequence at the sorter's values
// unchecked (SIGSEGV for out-of-range sorter indices).
void searchsorted_Tensor(const at::Tensor &sorted_sequence, const at::Tensor &self, bool out_int32, bool right,
                         c10::optional<c10::string_view> side, const OptTensor &sorter);
void searchsorted_Tensor_out(const at::Tensor &sorted_sequence, const at::Tensor &self, bool out_int32, bool right,
                             c10::optional<c10::string_view> side, const OptTensor &sorter, const at::Tensor &out);
void searchsorted_Scalar(const at::Tensor &sorted_sequence, const at::Scalar &self, bool out_int32, bool right,
                         c10::optional<c10::string_view> side, const OptTensor &sorter);
// libtorch 1.13: histogramdd reads one bin count per input column without
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
// libtorch 1.13: choose_qparams_optimized reads `numel` floats from the
// input's data pointer unchecked (SIGSEGV for -1 or more than it has) and
// loops without end for n_bins <= 0 or huge, or a non-finite ratio.
void choose_qparams_optimized(const at::Tensor &input, int64_t numel, int64_t n_bins, double ratio,
                              int64_t bit_width);
// libtorch 1.13: _local_scalar_dense reads one element of an empty tensor.
void _local_scalar_dense(const at::Tensor &self);
// libtorch 1.13: _new_zeros_with_same_feature_meta indexes sizes with an
// unchecked self_num_batch_dims (SIGSEGV for -1).
void _new_zeros_with_same_feature_meta(const at::Tensor &self, const at::Tensor &other, int64_t self_num_batch_dims);
// libtorch 1.13: _fft_r2c/_c2r/_c2c index the tensor's sizes with unchecked
// dims (SIGSEGV for dim 2^31).
void _fft_r2c(const at::Tensor &self, Ints dim, int64_t normalization, bool onesided);
void _fft_r2c_out(const at::Tensor &self, Ints dim, int64_t normalization, bool onesided,
                  const at::Tensor &out);
void _fft_c2r(const at::Tensor &self, Ints dim, int64_t normalization, int64_t last_dim_size);
void _fft_c2r_out(const at::Tensor &self, Ints dim, int64_t normalization, int64_t last_dim_size,
                  const at::Tensor &out);
void _fft_c2c(const at::Tensor &self, Ints dim, int64_t normalization, bool forward);
void _fft_c2c_out(const at::Tensor &self, Ints dim, int64_t normalization, bool forward,
                  const at::Tensor &out);
// libtorch 1.13: nanmean.out of a zero tensor (_efficientzerotensor) runs
// nansum's kernel over its NULL data (SIGSEGV).
void nanmean_out(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                 c10::optional<at::ScalarType> dtype, const at::Tensor &out);
// libtorch 1.13: a negative or dtype view of a quantized tensor recurses
// without end (_neg_view: stack overflow in quantized_clone) or makes a
// tensor without a quantizer (view.dtype: SIGSEGV when it is read).
void _neg_view(const at::Tensor &self);
void _neg_view_copy(const at::Tensor &self);
void _neg_view_copy_out(const at::Tensor &self, const at::Tensor &out);
void view_dtype(const at::Tensor &self, at::ScalarType dtype);
void view_copy_dtype(const at::Tensor &self, at::ScalarType dtype);
void view_copy_dtype_out(const at::Tensor &self, at::ScalarType dtype, const at::Tensor &out);
// libtorch 1.13: matrix_exp_backward of a non-matrix reads sizes it lacks.
void matrix_exp_backward(const at::Tensor &self, const at::Tensor &grad);

// The orthogonal-polynomial families evaluate P_n by a recurrence of n steps
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

// libtorch 1.13: the embedding_bag kernels trust their index tensors:
// offsets that decrease or pass the end, indices outside the weight's rows,
// 2-d indices and zero-size weights are read through unchecked (SIGSEGV,
// heap corruption "malloc_consolidate(): invalid chunk size").
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
// libtorch 1.13: the linear upsampling kernels take a given scale at its
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
// libtorch 1.13: slow_conv3d divides by weight sizes that may be 0
// (SIGFPE for a zero-size weight).
void slow_conv3d(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size, const OptTensor &bias,
                 Ints stride, Ints padding);
void slow_conv3d_out(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size,
                     const OptTensor &bias, Ints stride, Ints padding, const at::Tensor &out);
void slow_conv3d_forward(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size,
                         const OptTensor &bias, Ints stride, Ints padding);
void slow_conv3d_forward_output(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size,
                                const OptTensor &bias, Ints stride, Ints padding,
                                const at::Tensor &output);
// libtorch 1.13: mkldnn_convolution indexes padding/stride/dilation by the
// input's spatial dims without checking their lengths (SIGSEGV).
void mkldnn_convolution(const at::Tensor &self, const at::Tensor &weight, const OptTensor &bias,
                        Ints padding, Ints stride, Ints dilation, int64_t groups);
// libtorch 1.13: col2im/im2col compute block counts with overflowing
// products of huge window sizes and divide by them (SIGFPE).
void col2im(const at::Tensor &self, c10::SymIntArrayRef output_size, Ints kernel_size,
            Ints dilation, Ints padding, Ints stride);
void col2im_out(const at::Tensor &self, c10::SymIntArrayRef output_size, Ints kernel_size,
                Ints dilation, Ints padding, Ints stride, const at::Tensor &out);
void im2col(const at::Tensor &self, Ints kernel_size, Ints dilation, Ints padding,
            Ints stride);
// libtorch 1.13: max_pool1d with a window wider than the padded input still
// makes one output and scans the whole window (~forever for 2^31).
void max_pool1d(const at::Tensor &self, Ints kernel_size, Ints stride, Ints padding,
                Ints dilation, bool ceil_mode);
void max_pool1d_with_indices(const at::Tensor &self, Ints kernel_size, Ints stride,
                             Ints padding, Ints dilation, bool ceil_mode);
// libtorch 1.13: reflection/replication padding adds the pads to the size
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
// libtorch 1.13: channel shuffles divide by the channel count per group
// and by the batch (SIGFPE with 0 channels, 0 groups or an empty input).
void native_channel_shuffle(const at::Tensor &self, int64_t groups);
void channel_shuffle(const at::Tensor &self, int64_t groups);
// libtorch 1.13: weight norm of an empty v, or with a g that does not match
// v's dim, divides by zero sizes / reads past g (SIGFPE, SIGSEGV).
void _weight_norm(const at::Tensor &v, const at::Tensor &g, int64_t dim);
void _weight_norm_interface(const at::Tensor &v, const at::Tensor &g, int64_t dim);

}  // namespace guard
}  // namespace ctorch
