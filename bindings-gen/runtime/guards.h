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

#include <ATen/core/Tensor.h>
#include <ATen/core/ATen_fwd.h>
#include <c10/core/Scalar.h>
#include <c10/util/Optional.h>

#include <array>

namespace ctorch {
namespace guard {

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

}  // namespace guard
}  // namespace ctorch
