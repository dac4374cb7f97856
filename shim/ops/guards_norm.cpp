// Guards of batch norm's out= forms (why: guards_norm.h).
#include "guards_util.h"

#include "core/internal.h"

namespace ctorch {
namespace guard {

void batch_norm_out_input(const at::Tensor &input) {
#if CTORCH_COMPAT_BATCH_NORM_OUT_NONCONTIGUOUS
  if (input.defined() && input.layout() == c10::kStrided && !input.is_contiguous())
    fail_arg("input", "must be contiguous for the out= form: libtorch " TORCH_VERSION
                      " returns wrong statistics and outputs for other layouts (pass input.contiguous(), "
                      "or call the functional form)");
#else
  (void)input;
#endif
}

void _native_batch_norm_legit_out(const at::Tensor &input, const OptTensor &, const OptTensor &, const at::Tensor &,
                                  const at::Tensor &, bool, double, double, const at::Tensor &, const at::Tensor &,
                                  const at::Tensor &) {
  batch_norm_out_input(input);
}
void _native_batch_norm_legit_no_stats_out(const at::Tensor &input, const OptTensor &, const OptTensor &, bool,
                                           double, double, const at::Tensor &, const at::Tensor &,
                                           const at::Tensor &) {
  batch_norm_out_input(input);
}
void _batch_norm_with_update_out(const at::Tensor &input, const OptTensor &, const OptTensor &, const at::Tensor &,
                                 const at::Tensor &, double, double, const at::Tensor &, const at::Tensor &,
                                 const at::Tensor &, const at::Tensor &) {
  batch_norm_out_input(input);
}

}  // namespace guard
}  // namespace ctorch
