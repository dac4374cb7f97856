// Gradient clipping: torch.nn.utils.clip_grad_norm_ and clip_grad_value_,
// written op for op as the installed PyTorch's Python does them (the total
// norm's version differences are in compat.h), so that the clipped
// gradients and the returned norm are bit-identical to Python's
// (tests/train/clip_vs_torch.py).
#define CTORCH_COMPAT_CLIP_GRAD
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#include "core/exclusive.h"
#include "core/internal.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <vector>

namespace {

// The parameters, and the .grad of every one that has one (Python's `if
// p.grad is not None`). The caller holds ctorch::GradLocks over the
// parameters first: a backward on another thread replaces a .grad under
// that lock (AccumulateGrad), and reading the pointer meanwhile is the
// double free optimizer steps and zero_grad were fixed for.
std::vector<at::Tensor> params_of(const ctorch_tensor *params, size_t n) {
  ctorch::require_list(params, n, "params");
  std::vector<at::Tensor> ps;
  ps.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!params[i]) ctorch::fail_arg("params", "entry " + std::to_string(i) + " is NULL");
    ps.push_back(ctorch::own(params[i], "params"));
  }
  return ps;
}

std::vector<at::Tensor> grads_of(const std::vector<at::Tensor> &ps) {
  std::vector<at::Tensor> grads;
  for (size_t i = 0; i < ps.size(); ++i) {
    const at::Tensor &g = ps[i].grad();
    if (!g.defined()) continue;
    if (g.is_sparse()) ctorch::fail(CTORCH_NOT_IMPLEMENTED, "argument 'params': entry " + std::to_string(i) +
                                                                 " has a sparse gradient");
    grads.push_back(g);
  }
  return grads;
}

}  // namespace

CTORCH_API ctorch_status ctorch_clip_grad_norm_(double *total_norm, const ctorch_tensor *params, size_t n,
                                                double max_norm, double norm_type, int error_if_nonfinite) {
  CTORCH_TRY
  if (total_norm) *total_norm = 0;
  if (std::isnan(max_norm)) ctorch::fail_arg("max_norm", "is NaN");
  if (std::isnan(norm_type)) ctorch::fail_arg("norm_type", "is NaN");
  std::vector<at::Tensor> ps = params_of(params, n);
  ctorch::GradLocks locks(ps);  // until the gradients are scaled: a backward elsewhere waits
  std::vector<at::Tensor> grads = grads_of(ps);
  if (grads.empty()) return CTORCH_OK;  // Python returns torch.tensor(0.)
  at::NoGradGuard no_grad;
  at::Tensor total = ctorch::compat::clip_grad_total_norm(grads, norm_type);
  double value = total.item<double>();
  if (error_if_nonfinite && !std::isfinite(value))
    ctorch::fail(CTORCH_VALUE, "the total norm of order " + std::to_string(norm_type) +
                                   " of the gradients is non-finite (" + std::to_string(value) +
                                   "), so it cannot be clipped; gradients unchanged (pass error_if_nonfinite = 0 "
                                   "to scale them by it anyway)");
  // Python: max_norm / (total_norm + 1e-6), i.e. Tensor.__rtruediv__:
  // reciprocal() * max_norm; then clamp(max=1.0), one multiply per gradient.
  at::Tensor coef = at::clamp((total + 1e-6).reciprocal() * max_norm, c10::nullopt, 1.0);
  for (auto &g : grads) g.mul_(coef.to(g.device()));
  if (total_norm) *total_norm = value;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_clip_grad_value_(const ctorch_tensor *params, size_t n, double clip_value) {
  CTORCH_TRY
  if (std::isnan(clip_value)) ctorch::fail_arg("clip_value", "is NaN");
  std::vector<at::Tensor> ps = params_of(params, n);
  ctorch::GradLocks locks(ps);  // as in clip_grad_norm_
  std::vector<at::Tensor> grads = grads_of(ps);
  at::NoGradGuard no_grad;
  // 2.x: _foreach_clamp_min_(-v) then _foreach_clamp_max_(v); 1.13:
  // clamp_(min=-v, max=v). The same values, NaN kept, for every v (a
  // negative v sets every element to v in both).
  for (auto &g : grads) g.clamp_(-clip_value, clip_value);
  CTORCH_CATCH
}
