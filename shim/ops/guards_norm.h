// Guards of batch norm's out= forms against a wrong-result defect of
// libtorch 2.x (guards_norm.cpp; included at the end of guards.h and read by
// the generator like it). Listed with the other upstream defects in
// docs/guarantees.md, "Upstream defects and the guards that cover them".
//
// [crash] libtorch 2.x (seen on 2.15.0; 1.13 has no CPU kernel
// for these out forms): with an input that is not contiguous (transposed,
// sliced, expanded, channels-last), native_batch_norm.out,
// _native_batch_norm_legit.out, _native_batch_norm_legit.no_stats_out and
// _batch_norm_with_update.out return wrong results: in training mode
// save_mean/save_invstd are garbage (7.5e28, 0, 4.6e-41: read from memory
// the kernel allocated and never wrote, so they change with the heap; issue
// 51 saw save_mean 0, 0 where the answer is 1.5, -0.25), and a
// channels-last input gives a permuted `out` in both modes. torch's own
// calls do the same; the functional forms (native_batch_norm, ...) are right
// on the same inputs. Refused on 2.x unless the input is contiguous (pass
// input.contiguous(): the results then equal the functional form's, which
// is what tests/test_soundness.c checks, every form on transposed, expanded
// and channels-last input); contiguous input is passed through untouched.
// The other out forms (_native_batch_norm_legit_no_training.out,
// _batch_norm_no_update.out) compute the functional form and copy: right on
// the same inputs (checked in Python on 2.15.0).
#pragma once

namespace ctorch {
namespace guard {

void _native_batch_norm_legit_out(const at::Tensor &input, const OptTensor &weight, const OptTensor &bias,
                                  const at::Tensor &running_mean, const at::Tensor &running_var, bool training,
                                  double momentum, double eps, const at::Tensor &out, const at::Tensor &save_mean,
                                  const at::Tensor &save_invstd);
void _native_batch_norm_legit_no_stats_out(const at::Tensor &input, const OptTensor &weight, const OptTensor &bias,
                                           bool training, double momentum, double eps, const at::Tensor &out,
                                           const at::Tensor &save_mean, const at::Tensor &save_invstd);
void _batch_norm_with_update_out(const at::Tensor &input, const OptTensor &weight, const OptTensor &bias,
                                 const at::Tensor &running_mean, const at::Tensor &running_var, double momentum,
                                 double eps, const at::Tensor &out, const at::Tensor &save_mean,
                                 const at::Tensor &save_invstd, const at::Tensor &reserve);
// Shared with native_batch_norm_out (guards.cpp): the refusal itself.
void batch_norm_out_input(const at::Tensor &input);

}  // namespace guard
}  // namespace ctorch
