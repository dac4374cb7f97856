// The multi-tensor ("foreach") and fused optimizer steps: every
// first-order kind as the installed PyTorch's torch.optim does it with
// foreach=True (the functions _multi_tensor_<kind> of torch/optim/<kind>.py)
// or fused=True (_fused_<kind>), op for op with the same ATen calls and the
// same Python-float arithmetic, so that the parameters equal Python's bit for
// bit. The state lives where the one-at-a-time step keeps it (libtorch's
// AdamParamState ..., optim_py.h's PyState), so state files, state dicts and
// the implementation chosen for the next step are independent.
//
// 1.13 and 2.x differ (compat.h's CTORCH_COMPAT_OPTIM_FOREACH): 2.x writes
// exp_avg with _foreach_lerp_, decays out of place, groups the tensors by
// device and dtype (1.13 passes a group's list whole; the values are the same
// on the CPU, where each foreach op runs tensor by tensor), and has fused CPU
// kernels. Python keeps `step` as a float32 tensor, ctorch as an int64 (a
// count below 2^24 is exact in both); where Python reads step.item() this
// file uses double(step).
#define CTORCH_COMPAT_OPTIM_STATE    // compat::optim_state_key
#define CTORCH_COMPAT_OPTIM_FOREACH  // CTORCH_FOREACH_2X
#include "compat/compat.h"  // directly: a unity build may have read it already without these sections
#include "optim_py.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

namespace ctorch {
namespace optim {
namespace foreach_impl {

using TL = std::vector<at::Tensor>;
using SL = std::vector<at::Scalar>;

// Which kinds have a fused kernel in this libtorch, for a device type.
bool has_fused(ctorch_optimizer_kind k, c10::DeviceType dev) {
#if CTORCH_FOREACH_2X
  (void)dev;  // 2.x: CPU and CUDA kernels for these four
  return k == CTORCH_OPTIM_ADAM || k == CTORCH_OPTIM_ADAMW || k == CTORCH_OPTIM_SGD || k == CTORCH_OPTIM_ADAGRAD;
#else
  // 1.13: _fused_adam_ only, CUDA only (Python 1.13's Adam(fused=True)); this
  // file does not call it (ctorch's 1.13 builds are CPU-only): refused.
  (void)k;
  (void)dev;
  return false;
#endif
}

std::string fused_missing(ctorch_optimizer_kind k, const char *dev) {
  return std::string("fused ") + kind_name(k) + " is not implemented for " + dev + " in libtorch " +
         std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
         (CTORCH_FOREACH_2X ? " (its fused kernels: Adam, AdamW, SGD, Adagrad)"
                            : " (1.13 has _fused_adam_ for CUDA only; use FOREACH)");
}

// Refuses FUSED for opt's current parameters as Python's constructor does
// (floating point, a device with the kernel).
void check_fused(const Optim &o) {
  if (!has_fused(o.kind, c10::DeviceType::CPU) && !has_fused(o.kind, c10::DeviceType::CUDA))
    ctorch::fail(CTORCH_NOT_IMPLEMENTED, fused_missing(o.kind, "any device"));
  for (auto &g : o.opt->param_groups())
    for (auto &p : g.params()) {
      if (!has_fused(o.kind, p.device().type()))
        ctorch::fail(CTORCH_NOT_IMPLEMENTED, fused_missing(o.kind, c10::DeviceTypeName(p.device().type()).c_str()));
      if (!at::isFloatingType(p.scalar_type()))
        ctorch::fail(CTORCH_NOT_IMPLEMENTED, std::string("fused ") + kind_name(o.kind) +
                                                  " requires floating-point parameters, as PyTorch's fused=True; got " +
                                                  c10::toString(p.scalar_type()));
    }
}

// One bucket: the parameters of one group that have a grad, of one device
// and dtype (Python's _group_tensors_by_device_and_dtype), with their states.
struct Bucket {
  TL params, grads;
  std::vector<torch::optim::OptimizerParamState *> states;
};

template <class S>
S &st(Bucket &b, size_t i) {
  return static_cast<S &>(*b.states[i]);
}

// Python's `[torch.view_as_real(x) if torch.is_complex(x) else x for x in xs]`.
TL real(const TL &xs) {
  TL r;
  r.reserve(xs.size());
  for (auto &x : xs) r.push_back(x.is_complex() ? at::view_as_real(x) : x);
  return r;
}

// Coupled weight decay: 1.13 adds to the grads in place (p.grad changes, as
// in Python 1.13), 2.x makes new grads. SGD decays out of place in both.
TL decay(TL grads, const TL &params, double wd, bool in_place_113) {
  if (wd == 0) return grads;
#if CTORCH_FOREACH_2X
  (void)in_place_113;
  return at::_foreach_add(grads, params, wd);
#else
  if (!in_place_113) return at::_foreach_add(grads, params, wd);
  at::_foreach_add_(grads, params, wd);
  return grads;
#endif
}

// exp_avg <- beta1 * exp_avg + (1 - beta1) * grad, as the installed Python writes it.
void exp_avg_update(const TL &exp_avgs, const TL &grads, double beta1) {
#if CTORCH_FOREACH_2X
  at::_foreach_lerp_(exp_avgs, grads, 1 - beta1);
#else
  at::_foreach_mul_(exp_avgs, beta1);
  at::_foreach_add_(exp_avgs, grads, 1 - beta1);
#endif
}

double sqrt_py(double x) {  // 1.13: math.sqrt(x); 2.x: x ** 0.5 (pow)
  return CTORCH_FOREACH_2X ? std::pow(x, 0.5) : std::sqrt(x);
}

template <class S>
TL field(Bucket &b, at::Tensor &(*get)(S &)) {
  TL r;
  r.reserve(b.states.size());
  for (size_t i = 0; i < b.states.size(); ++i) r.push_back(get(st<S>(b, i)));
  return r;
}

// ---- the kinds ----------------------------------------------------------

void sgd(Bucket &b, const torch::optim::SGDOptions &o, bool fused) {
  const double momentum = o.momentum();
  std::vector<at::Tensor *> bufs;  // the states' buffers (undefined: none yet)
  for (size_t i = 0; momentum != 0 && i < b.states.size(); ++i)
    bufs.push_back(&st<torch::optim::SGDParamState>(b, i).momentum_buffer());
  if (fused) {
#if CTORCH_FOREACH_2X
    for (auto &g : b.grads)
      if (g.is_sparse()) ctorch::fail(CTORCH_VALUE, "`_fused_sgd` does not support sparse gradients");
    bool first = momentum != 0;
    for (auto *p : bufs) first = first && !p->defined();
    TL list;
    for (size_t i = 0; i < bufs.size(); ++i) {
      if (first) *bufs[i] = at::empty_like(b.grads[i]);
      list.push_back(*bufs[i]);
    }
    at::_fused_sgd_(b.params, b.grads, list, o.weight_decay(), momentum, o.lr(), o.dampening(), o.nesterov(), false,
                    first);
    return;
#endif
  }
  bool sparse = false;
  for (auto &g : b.grads) sparse = sparse || g.is_sparse();
  TL grads = decay(b.grads, b.params, o.weight_decay(), false);
  if (momentum != 0) {
    bool all = true;
    for (auto *p : bufs) all = all && p->defined();
    TL list;
    if (all) {
      for (auto *p : bufs) list.push_back(*p);
      at::_foreach_mul_(list, momentum);
      at::_foreach_add_(list, grads, 1 - o.dampening());
    } else {
      for (size_t i = 0; i < bufs.size(); ++i) {
        if (!bufs[i]->defined()) *bufs[i] = grads[i].detach().clone();
        else bufs[i]->mul_(momentum).add_(grads[i], 1 - o.dampening());
        list.push_back(*bufs[i]);
      }
    }
    if (o.nesterov()) at::_foreach_add_(grads, list, momentum);
    else grads = list;
  }
  if (!sparse) {
    at::_foreach_add_(b.params, grads, -o.lr());
  } else {
    for (size_t i = 0; i < b.params.size(); ++i) b.params[i].add_(grads[i], -o.lr());
  }
}

// Adam and AdamW (2.x: one function, AdamW = decoupled weight decay).
template <class S>
void adam(Bucket &b, double lr, double beta1, double beta2, double eps, double wd, bool amsgrad, bool decoupled,
          bool fused) {
  for (auto &g : b.grads)
    if (g.is_sparse())
      ctorch::fail(CTORCH_VALUE, std::string(decoupled ? "AdamW" : "Adam") + " does not support sparse gradients");
  TL exp_avgs = field<S>(b, [](S &s) -> at::Tensor & { return s.exp_avg(); });
  TL exp_avg_sqs = field<S>(b, [](S &s) -> at::Tensor & { return s.exp_avg_sq(); });
  TL max_sqs = amsgrad ? field<S>(b, [](S &s) -> at::Tensor & { return s.max_exp_avg_sq(); }) : TL{};
  std::vector<double> steps;
  for (size_t i = 0; i < b.states.size(); ++i) {
    auto &s = st<S>(b, i);
    s.step(s.step() + 1);
    steps.push_back(static_cast<double>(s.step()));
  }
  if (fused) {
#if CTORCH_FOREACH_2X
    TL step_t;  // Python's float32 step tensors on the parameter's device, after += 1
    for (size_t i = 0; i < steps.size(); ++i)
      step_t.push_back(at::scalar_tensor(steps[i], at::TensorOptions().dtype(at::kFloat).device(b.params[i].device())));
    if (decoupled)
      at::_fused_adamw_(b.params, b.grads, exp_avgs, exp_avg_sqs, max_sqs, step_t, lr, beta1, beta2, wd, eps, amsgrad,
                        false);
    else
      at::_fused_adam_(b.params, b.grads, exp_avgs, exp_avg_sqs, max_sqs, step_t, lr, beta1, beta2, wd, eps, amsgrad,
                       false);
    return;
#endif
  }
  TL params = real(b.params), grads = real(b.grads);
  exp_avgs = real(exp_avgs);
  exp_avg_sqs = real(exp_avg_sqs);
#if CTORCH_FOREACH_2X
  if (amsgrad) max_sqs = real(max_sqs);
  if (wd != 0) {
    if (decoupled) at::_foreach_mul_(params, 1 - lr * wd);
    else grads = at::_foreach_add(grads, params, wd);
  }
#else
  if (decoupled) at::_foreach_mul_(params, 1 - lr * wd);
  else if (wd != 0) at::_foreach_add_(grads, params, wd);  // p.grad, in place, as Python 1.13
#endif
  exp_avg_update(exp_avgs, grads, beta1);
  at::_foreach_mul_(exp_avg_sqs, beta2);
  at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
  SL step_size, bc2_sqrt;
  for (double s : steps) {
    const double bc1 = 1 - std::pow(beta1, s), bc2 = 1 - std::pow(beta2, s);
    step_size.emplace_back((lr / bc1) * -1);
    bc2_sqrt.emplace_back(sqrt_py(bc2));
  }
  TL sq;
  if (amsgrad) {
    at::_foreach_maximum_(max_sqs, exp_avg_sqs);
    sq = at::_foreach_sqrt(max_sqs);
  } else {
    sq = at::_foreach_sqrt(exp_avg_sqs);
  }
  at::_foreach_div_(sq, bc2_sqrt);
#if CTORCH_FOREACH_2X
  at::_foreach_add_(sq, eps);
#else
  sq = at::_foreach_add(sq, eps);
#endif
  at::_foreach_addcdiv_(params, exp_avgs, sq, step_size);
}

void rmsprop(Bucket &b, const torch::optim::RMSpropOptions &o) {
  using S = torch::optim::RMSpropParamState;
  for (auto &g : b.grads)
    if (g.is_sparse()) ctorch::fail(CTORCH_VALUE, "RMSprop does not support sparse gradients");
  for (size_t i = 0; i < b.states.size(); ++i) st<S>(b, i).step(st<S>(b, i).step() + 1);
  const double alpha = o.alpha(), eps = o.eps(), lr = o.lr();
  TL grads = decay(b.grads, b.params, o.weight_decay(), true);
  grads = real(grads);
  TL params = real(b.params);
  TL square_avgs = real(field<S>(b, [](S &s) -> at::Tensor & { return s.square_avg(); }));
  at::_foreach_mul_(square_avgs, alpha);
  at::_foreach_addcmul_(square_avgs, grads, grads, 1 - alpha);
  TL avg;
  if (o.centered()) {
    TL grad_avgs = real(field<S>(b, [](S &s) -> at::Tensor & { return s.grad_avg(); }));
    exp_avg_update(grad_avgs, grads, alpha);  // lerp_(grads, 1 - alpha) in 2.x
    avg = at::_foreach_addcmul(square_avgs, grad_avgs, grad_avgs, -1);
    at::_foreach_sqrt_(avg);
    at::_foreach_add_(avg, eps);
  } else {
    avg = at::_foreach_sqrt(square_avgs);
    at::_foreach_add_(avg, eps);
  }
  if (o.momentum() > 0) {
    TL bufs = real(field<S>(b, [](S &s) -> at::Tensor & { return s.momentum_buffer(); }));
    at::_foreach_mul_(bufs, o.momentum());
    at::_foreach_addcdiv_(bufs, grads, avg);
    at::_foreach_add_(params, bufs, -lr);
  } else {
    at::_foreach_addcdiv_(params, grads, avg, -lr);
  }
}

void adagrad(Bucket &b, const torch::optim::AdagradOptions &o, bool fused) {
  using S = torch::optim::AdagradParamState;
  const double lr = o.lr(), lr_decay = o.lr_decay(), wd = o.weight_decay();
  TL sums = field<S>(b, [](S &s) -> at::Tensor & { return s.sum(); });
  std::vector<double> steps;
  for (size_t i = 0; i < b.states.size(); ++i) {
    auto &s = st<S>(b, i);
    s.step(s.step() + 1);
    steps.push_back(static_cast<double>(s.step()));
  }
  if (fused) {
#if CTORCH_FOREACH_2X
    for (auto &p : b.params)
      if (p.is_complex()) ctorch::fail(CTORCH_NOT_IMPLEMENTED, "`fused` does not support sparse grad or complex param");
    TL step_t;
    for (size_t i = 0; i < steps.size(); ++i)
      step_t.push_back(at::scalar_tensor(steps[i], at::TensorOptions().dtype(at::kFloat).device(b.params[i].device())));
    at::_fused_adagrad_(b.params, b.grads, sums, step_t, lr, lr_decay, wd, o.eps(), false);
    return;
#endif
  }
#if CTORCH_FOREACH_2X
  TL params = real(b.params), grads = real(b.grads);
  sums = real(sums);
  if (wd != 0) grads = at::_foreach_add(grads, params, wd);
  SL minus_clr;
  for (double s : steps) minus_clr.emplace_back(-lr / (1 + (s - 1) * lr_decay));
  at::_foreach_addcmul_(sums, grads, grads, 1);
  TL std_ = at::_foreach_sqrt(sums);
  at::_foreach_add_(std_, o.eps());
  TL numerator;
  if (wd != 0) {
    at::_foreach_mul_(grads, minus_clr);
    numerator = grads;
  } else {
    numerator = at::_foreach_mul(grads, minus_clr);
  }
  at::_foreach_addcdiv_(params, numerator, std_);
#else
  TL grads = b.grads;
  if (wd != 0) at::_foreach_add_(grads, b.params, wd);  // p.grad, in place, as Python 1.13
  // Python 1.13: -lr / (1 + (step - 1) * lr_decay) with step a float32
  // tensor: tensor arithmetic, and float / tensor is reciprocal() * float.
  TL minus_clr;
  for (double s : steps) {
    at::Tensor t = at::scalar_tensor(s, at::kFloat);
    minus_clr.push_back(at::mul(at::reciprocal(at::add(at::mul(at::sub(t, 1), lr_decay), 1)), -lr));
  }
  grads = real(grads);
  TL rsums = real(sums);
  at::_foreach_addcmul_(rsums, grads, grads, 1);
  TL std_ = at::_foreach_add(at::_foreach_sqrt(rsums), o.eps());
  TL to_add = at::_foreach_div(at::_foreach_mul(grads, minus_clr), std_);
  for (size_t i = 0; i < to_add.size(); ++i)
    if (b.params[i].is_complex()) to_add[i] = at::view_as_complex(to_add[i]);
  at::_foreach_add_(b.params, to_add);
#endif
}

void nadam(Bucket &b, const ctorch_optim_options_v2 &o) {
  const double beta1 = o.beta1, beta2 = o.beta2, lr = o.lr, md = o.momentum_decay;
  TL exp_avgs = field<PyState>(b, [](PyState &s) -> at::Tensor & { return s.a; });
  TL exp_avg_sqs = field<PyState>(b, [](PyState &s) -> at::Tensor & { return s.b; });
  TL mu_products = field<PyState>(b, [](PyState &s) -> at::Tensor & { return s.mu_product; });
  std::vector<double> steps;
  for (size_t i = 0; i < b.states.size(); ++i) steps.push_back(static_cast<double>(++st<PyState>(b, i).step));
  SL mus, mu_nexts;
  for (double s : steps) {
    mus.emplace_back(beta1 * (1. - 0.5 * std::pow(0.96, s * md)));
    mu_nexts.emplace_back(beta1 * (1. - 0.5 * std::pow(0.96, (s + 1) * md)));
  }
  TL grads = b.grads;
#if CTORCH_FOREACH_2X
  if (o.weight_decay != 0) {
    if (o.decoupled_weight_decay) at::_foreach_mul_(b.params, 1 - lr * o.weight_decay);
    else grads = at::_foreach_add(grads, b.params, o.weight_decay);
  }
  exp_avg_update(exp_avgs, grads, beta1);
  at::_foreach_mul_(exp_avg_sqs, beta2);
  at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
  TL denom = at::_foreach_sqrt(exp_avg_sqs);
  SL bc_sqrt;
  for (double s : steps) bc_sqrt.emplace_back(std::pow(1 - std::pow(beta2, s), 0.5));
  at::_foreach_mul_(mu_products, mus);
  at::_foreach_div_(denom, bc_sqrt);
  at::_foreach_add_(denom, o.eps);
#else
  SL bc_sqrt;
  for (double s : steps) bc_sqrt.emplace_back(std::sqrt(1 - std::pow(beta2, s)));
  at::_foreach_mul_(mu_products, mus);
  if (o.weight_decay != 0) at::_foreach_add_(grads, b.params, o.weight_decay);
  exp_avg_update(exp_avgs, grads, beta1);
  at::_foreach_mul_(exp_avg_sqs, beta2);
  at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
  TL denom = at::_foreach_sqrt(exp_avg_sqs);
  at::_foreach_div_(denom, bc_sqrt);
  denom = at::_foreach_add(denom, o.eps);
#endif
  SL ss_grads, ss_expavg;
  for (size_t i = 0; i < steps.size(); ++i) {
    const double mu = mus[i].toDouble(), mu_next = mu_nexts[i].toDouble();
    const double mp = mu_products[i].item<double>();
    ss_grads.emplace_back((lr * (1. - mu) / (1. - mp)) * -1);
    ss_expavg.emplace_back((lr * mu_next / (1. - mp * mu_next)) * -1);
  }
  at::_foreach_addcdiv_(b.params, grads, denom, ss_grads);
  at::_foreach_addcdiv_(b.params, exp_avgs, denom, ss_expavg);
}

void radam(Bucket &b, const ctorch_optim_options_v2 &o) {
  const double beta1 = o.beta1, beta2 = o.beta2, lr = o.lr;
  TL exp_avgs = field<PyState>(b, [](PyState &s) -> at::Tensor & { return s.a; });
  TL exp_avg_sqs = field<PyState>(b, [](PyState &s) -> at::Tensor & { return s.b; });
  std::vector<double> steps;
  for (size_t i = 0; i < b.states.size(); ++i) steps.push_back(static_cast<double>(++st<PyState>(b, i).step));
  const double rho_inf = 2 / (1 - beta2) - 1;
  std::vector<double> rho_t, rect, bc1;
  for (double s : steps) {
    rho_t.push_back(rho_inf - 2 * s * std::pow(beta2, s) / (1 - std::pow(beta2, s)));
    bc1.push_back(1 - std::pow(beta1, s));
  }
  for (double r : rho_t)
    rect.push_back(r > 5 ? sqrt_py((r - 4) * (r - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * r)) : 0.0);
  TL grads = b.grads;
#if CTORCH_FOREACH_2X
  if (o.weight_decay != 0) {
    if (o.decoupled_weight_decay) at::_foreach_mul_(b.params, 1 - lr * o.weight_decay);
    else grads = at::_foreach_add(grads, b.params, o.weight_decay);
  }
  exp_avg_update(exp_avgs, grads, beta1);
  at::_foreach_mul_(exp_avg_sqs, beta2);
  at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
  SL unrect_step_size, bc2;
  for (size_t i = 0; i < steps.size(); ++i) {
    const double unrectified = rect[i] > 0 ? 0.0 : 1.0;
    unrect_step_size.emplace_back((lr * unrectified / bc1[i]) * -1);
    bc2.emplace_back(std::pow(1 - std::pow(beta2, steps[i]), 0.5) * (lr * rect[i] / bc1[i]) * -1);
  }
  TL buffer = at::_foreach_sqrt(exp_avg_sqs);
  at::_foreach_add_(buffer, o.eps);
  at::_foreach_div_(buffer, bc2);
  at::_foreach_reciprocal_(buffer);
  at::_foreach_add_(buffer, unrect_step_size);
  at::_foreach_addcmul_(b.params, exp_avgs, buffer);
#else
  if (o.weight_decay != 0) at::_foreach_add_(grads, b.params, o.weight_decay);
  exp_avg_update(exp_avgs, grads, beta1);
  at::_foreach_mul_(exp_avg_sqs, beta2);
  at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
  TL sq = at::_foreach_sqrt(exp_avg_sqs);
  SL bc_sqrt, step_size, unrect_size;
  for (size_t i = 0; i < steps.size(); ++i) {
    bc_sqrt.emplace_back(std::sqrt(1 - std::pow(beta2, steps[i])));
    step_size.emplace_back((lr * rect[i] / bc1[i]) * -1);
    unrect_size.emplace_back((lr * (rect[i] > 0 ? 0.0 : 1.0) / bc1[i]) * -1);
  }
  TL denom = at::_foreach_div(sq, bc_sqrt);
  at::_foreach_addcdiv_(b.params, exp_avgs, denom, step_size);
  TL ones;
  for (auto &e : exp_avgs) ones.push_back(at::ones_like(e, at::MemoryFormat::Preserve));
  at::_foreach_addcdiv_(b.params, exp_avgs, ones, unrect_size);
#endif
}

void adamax(Bucket &b, const ctorch_optim_options_v2 &o) {
  TL exp_avgs = field<PyState>(b, [](PyState &s) -> at::Tensor & { return s.a; });
  TL exp_infs = field<PyState>(b, [](PyState &s) -> at::Tensor & { return s.b; });
  std::vector<double> steps;
  for (size_t i = 0; i < b.states.size(); ++i) steps.push_back(static_cast<double>(++st<PyState>(b, i).step));
  TL grads = decay(b.grads, b.params, o.weight_decay, true);
  exp_avg_update(exp_avgs, grads, o.beta1);
  at::_foreach_mul_(exp_infs, o.beta2);
#if CTORCH_FOREACH_2X
  if (o.weight_decay == 0) grads = at::_foreach_abs(grads);
  else at::_foreach_abs_(grads);
  at::_foreach_add_(grads, o.eps);
  at::_foreach_maximum_(exp_infs, grads);
#else
  for (size_t i = 0; i < exp_infs.size(); ++i) {
    at::Tensor norm_buf = at::cat({exp_infs[i].unsqueeze(0), grads[i].abs().add_(o.eps).unsqueeze_(0)}, 0);
    at::Tensor idx = at::empty({0}, exp_infs[i].options().dtype(at::kLong));
    at::max_out(exp_infs[i], idx, norm_buf, 0, false);
  }
#endif
  SL clr;
  for (double s : steps) clr.emplace_back(CTORCH_FOREACH_2X ? (o.lr / (1 - std::pow(o.beta1, s))) * -1
                                                           : -1 * (o.lr / (1 - std::pow(o.beta1, s))));
  at::_foreach_addcdiv_(b.params, exp_avgs, exp_infs, clr);
}

void adadelta(Bucket &b, const ctorch_optim_options_v2 &o) {
  TL square_avgs = field<PyState>(b, [](PyState &s) -> at::Tensor & { return s.a; });
  TL acc_deltas = field<PyState>(b, [](PyState &s) -> at::Tensor & { return s.b; });
  for (size_t i = 0; i < b.states.size(); ++i) ++st<PyState>(b, i).step;
  TL grads = decay(b.grads, b.params, o.weight_decay, true);
  at::_foreach_mul_(square_avgs, o.rho);
  at::_foreach_addcmul_(square_avgs, grads, grads, 1 - o.rho);
  TL std_ = at::_foreach_add(square_avgs, o.eps);
  at::_foreach_sqrt_(std_);
  TL deltas = at::_foreach_add(acc_deltas, o.eps);
  at::_foreach_sqrt_(deltas);
  at::_foreach_div_(deltas, std_);
  at::_foreach_mul_(deltas, grads);
#if CTORCH_FOREACH_2X
  at::_foreach_mul_(acc_deltas, o.rho);
  at::_foreach_addcmul_(acc_deltas, deltas, deltas, 1 - o.rho);
  at::_foreach_add_(b.params, deltas, -o.lr);
#else
  at::_foreach_add_(b.params, deltas, -o.lr);
  at::_foreach_mul_(acc_deltas, o.rho);
  at::_foreach_addcmul_(acc_deltas, deltas, deltas, 1 - o.rho);
#endif
}

// ---- state and grouping -------------------------------------------------

// libtorch 1.13 keys the state by the TensorImpl's address printed by an
// ostringstream ("0x55d5..."): building one costs ~3 us, which made a
// 200-parameter SGD step 1.8x Python's. snprintf's %p prints the same text
// with glibc; checked once against compat's key, which is used if they differ.
std::string fast_key(const at::Tensor &p, std::string *) {
  static const bool same = [] {
    at::Tensor t = at::zeros({1});
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", static_cast<const void *>(t.unsafeGetTensorImpl()));
    return compat::optim_state_key_as(t, static_cast<std::string *>(nullptr)) == buf;
  }();
  if (!same) return compat::optim_state_key_as(p, static_cast<std::string *>(nullptr));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", static_cast<const void *>(p.unsafeGetTensorImpl()));
  return buf;
}
void *fast_key(const at::Tensor &p, void **) { return p.unsafeGetTensorImpl(); }
template <class Map>
typename Map::key_type state_key(const Map &, const at::Tensor &p) {
  return fast_key(p, static_cast<typename Map::key_type *>(nullptr));
}

// The state of p, made as the one-at-a-time step makes it when missing.
torch::optim::OptimizerParamState *state_of(ctorch_optimizer_kind kind, torch::optim::Optimizer &opt,
                                           torch::optim::OptimizerOptions &go, const at::Tensor &p) {
  auto &map = opt.state();
  const auto key = state_key(map, p);
  auto it = map.find(key);
  if (it != map.end() && it->second) return it->second.get();
  // SGD without momentum keeps no state (libtorch's and Python's for-loop
  // alike); operator[] would leave a null entry that save() dereferences.
  if (kind == CTORCH_OPTIM_SGD && static_cast<torch::optim::SGDOptions &>(go).momentum() == 0) return nullptr;
  auto &slot = map[key];
  auto zeros = [&] { return at::zeros_like(p, at::MemoryFormat::Preserve); };
  switch (kind) {
    case CTORCH_OPTIM_SGD:
      slot = std::make_unique<torch::optim::SGDParamState>();  // buffer: the first step's grad
      break;
    case CTORCH_OPTIM_ADAM:
    case CTORCH_OPTIM_ADAMW: {
      bool ams = kind == CTORCH_OPTIM_ADAM ? static_cast<torch::optim::AdamOptions &>(go).amsgrad()
                                           : static_cast<torch::optim::AdamWOptions &>(go).amsgrad();
      auto fill = [&](auto s) {
        s->step(0);
        s->exp_avg(zeros());
        s->exp_avg_sq(zeros());
        if (ams) s->max_exp_avg_sq(zeros());
        slot = std::move(s);
      };
      if (kind == CTORCH_OPTIM_ADAM) fill(std::make_unique<torch::optim::AdamParamState>());
      else fill(std::make_unique<torch::optim::AdamWParamState>());
      break;
    }
    case CTORCH_OPTIM_RMSPROP: {
      auto &o = static_cast<torch::optim::RMSpropOptions &>(go);
      auto s = std::make_unique<torch::optim::RMSpropParamState>();
      s->step(0);
      s->square_avg(zeros());
      if (o.momentum() > 0) s->momentum_buffer(zeros());
      if (o.centered()) s->grad_avg(zeros());
      slot = std::move(s);
      break;
    }
    case CTORCH_OPTIM_ADAGRAD: {
      auto s = std::make_unique<torch::optim::AdagradParamState>();
      s->step(0);
      s->sum(at::full_like(p, static_cast<torch::optim::AdagradOptions &>(go).initial_accumulator_value(),
                           at::MemoryFormat::Preserve));
      slot = std::move(s);
      break;
    }
    default: {
      auto s = std::make_unique<PyState>();
      s->a = zeros();
      s->b = zeros();
      if (kind == CTORCH_OPTIM_NADAM) s->mu_product = at::scalar_tensor(1.0, at::kFloat);
      slot = std::move(s);
    }
  }
  return slot.get();
}

void step_group(Optim &o, torch::optim::OptimizerParamGroup &g, bool fused) {
  // Buckets by (device, dtype) in order of first appearance, as Python's grouping.
  std::vector<std::pair<std::pair<c10::Device, at::ScalarType>, Bucket>> buckets;
  for (auto &p : g.params()) {
    if (!p.grad().defined()) continue;
    auto key = std::make_pair(p.device(), p.scalar_type());
    size_t k = 0;
    while (k < buckets.size() && buckets[k].first != key) ++k;
    if (k == buckets.size()) buckets.push_back({key, Bucket{}});
    Bucket &b = buckets[k].second;
    b.params.push_back(p);
    b.grads.push_back(p.grad());
    b.states.push_back(state_of(o.kind, *o.opt, g.options(), p));
  }
  auto &go = g.options();
  for (auto &kb : buckets) {
    Bucket &b = kb.second;
    switch (o.kind) {
      case CTORCH_OPTIM_SGD: sgd(b, static_cast<torch::optim::SGDOptions &>(go), fused); break;
      case CTORCH_OPTIM_ADAM: {
        auto &r = static_cast<torch::optim::AdamOptions &>(go);
        adam<torch::optim::AdamParamState>(b, r.lr(), std::get<0>(r.betas()), std::get<1>(r.betas()), r.eps(),
                                           r.weight_decay(), r.amsgrad(), false, fused);
        break;
      }
      case CTORCH_OPTIM_ADAMW: {
        auto &r = static_cast<torch::optim::AdamWOptions &>(go);
        adam<torch::optim::AdamWParamState>(b, r.lr(), std::get<0>(r.betas()), std::get<1>(r.betas()), r.eps(),
                                            r.weight_decay(), r.amsgrad(), true, fused);
        break;
      }
      case CTORCH_OPTIM_RMSPROP: rmsprop(b, static_cast<torch::optim::RMSpropOptions &>(go)); break;
      case CTORCH_OPTIM_ADAGRAD: adagrad(b, static_cast<torch::optim::AdagradOptions &>(go), fused); break;
      case CTORCH_OPTIM_NADAM: nadam(b, static_cast<PyOptions &>(go).o); break;
      case CTORCH_OPTIM_RADAM: radam(b, static_cast<PyOptions &>(go).o); break;
      case CTORCH_OPTIM_ADAMAX: adamax(b, static_cast<PyOptions &>(go).o); break;
      case CTORCH_OPTIM_ADADELTA: adadelta(b, static_cast<PyOptions &>(go).o); break;
      default: ctorch::fail(CTORCH_NOT_IMPLEMENTED, std::string(kind_name(o.kind)) + " has no foreach implementation");
    }
  }
}

bool has_sparse_grad(const torch::optim::OptimizerParamGroup &g) {
  for (auto &p : g.params())
    if (p.grad().defined() && p.grad().is_sparse()) return true;
  return false;
}

}  // namespace foreach_impl

ctorch_optim_impl resolved_impl(const Optim &o) {
  if (o.impl != CTORCH_OPTIM_IMPL_DEFAULT) return o.impl;
  if (o.kind == CTORCH_OPTIM_LBFGS) return CTORCH_OPTIM_IMPL_FOR_LOOP;
  // torch.optim's _default_to_fused_or_foreach: foreach when every parameter is on CUDA.
  bool any = false;
  for (auto &g : o.opt->param_groups())
    for (auto &p : g.params()) {
      if (!p.is_cuda()) return CTORCH_OPTIM_IMPL_FOR_LOOP;
      any = true;
    }
  return any ? CTORCH_OPTIM_IMPL_FOREACH : CTORCH_OPTIM_IMPL_FOR_LOOP;
}

// libtorch 2.x's C++ Adam, AdamW and RMSprop do not round as torch.optim's
// for-loop does (exp_avg.mul_(b1).add_(g, 1 - b1) where Python lerp_s; found
// by the vae and dqn twins, whose runs parted after some hundred steps). On
// the CPU every _foreach_ op runs tensor by tensor, and torch.optim's
// _single_tensor_<kind> and _multi_tensor_<kind> make the same calls per
// tensor, so for these kinds ctorch's FOR_LOOP step on CPU parameters is the
// multi-tensor code above: torch.optim's for-loop, bit for bit. (1.13's
// Python and C++ steps agree: libtorch's own step runs there.)
bool for_loop_in_python_order(const Optim &o) {
#if CTORCH_FOREACH_2X
  if (o.kind != CTORCH_OPTIM_ADAM && o.kind != CTORCH_OPTIM_ADAMW && o.kind != CTORCH_OPTIM_RMSPROP) return false;
  for (auto &g : o.opt->param_groups())
    for (auto &p : g.params())
      if (!p.device().is_cpu() || (p.grad().defined() && p.grad().is_sparse())) return false;
  return true;
#else
  (void)o;
  return false;
#endif
}

bool step_multi_tensor(Optim &o) {
  const ctorch_optim_impl impl = resolved_impl(o);
  if (impl == CTORCH_OPTIM_IMPL_FOR_LOOP && !for_loop_in_python_order(o)) return false;
  const bool fused = impl == CTORCH_OPTIM_IMPL_FUSED;
  if (fused) foreach_impl::check_fused(o);  // a group added since set_implementation
  // Python's Adagrad runs its single-tensor form for sparse grads: the whole
  // step one at a time here (the same state).
  if (o.kind == CTORCH_OPTIM_ADAGRAD && !fused)
    for (auto &g : o.opt->param_groups())
      if (foreach_impl::has_sparse_grad(g)) return false;
  at::NoGradGuard no_grad;
  for (auto &g : o.opt->param_groups()) foreach_impl::step_group(o, g, fused);
  return true;
}

}  // namespace optim
}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_optimizer_set_implementation(ctorch_optimizer opt, ctorch_optim_impl impl) {
  CTORCH_TRY
  ctorch::optim::Held held(opt);
  ctorch::optim::Optim &o = held.o;
  const int v = static_cast<int>(impl);
  if (v < CTORCH_OPTIM_IMPL_DEFAULT || v > CTORCH_OPTIM_IMPL_FUSED)
    ctorch::fail_arg("impl", "unknown ctorch_optim_impl " + std::to_string(v));
  if (o.kind == CTORCH_OPTIM_LBFGS && (impl == CTORCH_OPTIM_IMPL_FOREACH || impl == CTORCH_OPTIM_IMPL_FUSED))
    ctorch::fail(CTORCH_NOT_IMPLEMENTED, "LBFGS has no foreach or fused implementation (PyTorch's LBFGS has neither)");
  if (impl == CTORCH_OPTIM_IMPL_FUSED) ctorch::optim::foreach_impl::check_fused(o);
  o.impl = impl;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_get_implementation(ctorch_optim_impl *out, ctorch_optimizer opt) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ctorch::optim::Held held(opt);
  *out = held.o.impl;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_resolved_implementation(ctorch_optim_impl *out, ctorch_optimizer opt) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ctorch::optim::Held held(opt);
  *out = ctorch::optim::resolved_impl(held.o);
  CTORCH_CATCH
}

}  // extern "C"
