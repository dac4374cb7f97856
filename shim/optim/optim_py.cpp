// NAdam, RAdam, Adamax and Adadelta as the installed PyTorch's Python
// torch.optim does them with foreach=False (its default on CPU): the
// functions _single_tensor_nadam etc. of torch/optim/nadam.py, ... written op
// for op with the same ATen calls and the same Python-float arithmetic, so
// the parameters equal Python's bit for bit. The rules that differ between
// 1.13.1 and 2.15.0 are compat.h's CTORCH_COMPAT_OPTIM_PY constants.
#define CTORCH_COMPAT_OPTIM_STATE  // compat::optim_state_key
#define CTORCH_COMPAT_OPTIM_PY     // compat::kOptimLerpExpAvg, ...
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#include "optim_py.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/serialize/archive.h>

#include <cmath>

namespace ctorch {
namespace optim {

namespace {

using compat::optim_state_key;

// Archive fields of PyOptions, in one list for writing and reading.
#define CTORCH_PY_OPTION_FIELDS(X)                                                                              \
  X(lr) X(weight_decay) X(momentum) X(dampening) X(beta1) X(beta2) X(eps) X(alpha) X(lr_decay)               \
      X(initial_accumulator_value) X(momentum_decay) X(rho) X(tolerance_grad) X(tolerance_change)
#define CTORCH_PY_OPTION_INTS(X) \
  X(nesterov) X(amsgrad) X(centered) X(decoupled_weight_decay) X(max_iter) X(max_eval) X(history_size) X(line_search)

void check_nonneg(double v, const char *field) {
  if (!(v >= 0.0) || std::isinf(v))
    ctorch::fail_arg("options", std::string(field) + " must be a finite number >= 0, got " + std::to_string(v));
}
void check_beta(double v, const char *field) {
  if (!(v >= 0 && v < 1)) ctorch::fail_arg("options", std::string(field) + " must be in [0, 1), got " + std::to_string(v));
}

// exp_avg <- beta1 * exp_avg + (1 - beta1) * grad, as the installed Python writes it.
void update_exp_avg(at::Tensor &exp_avg, const at::Tensor &grad, double beta1) {
  if (compat::kOptimLerpExpAvg) exp_avg.lerp_(grad, 1 - beta1);
  else exp_avg.mul_(beta1).add_(grad, 1 - beta1);
}

// Python's `grad = grad.add(param, alpha=weight_decay)` (coupled decay), or
// 2.x's decoupled form `param.mul_(1 - lr * weight_decay)`.
at::Tensor decay(const at::Tensor &grad, at::Tensor &param, const ctorch_optim_options_v2 &o, bool decoupled) {
  if (o.weight_decay == 0) return grad;
  if (decoupled) {
    param.mul_(1 - o.lr * o.weight_decay);
    return grad;
  }
  return grad.add(param, o.weight_decay);
}

void nadam(at::Tensor &param, at::Tensor grad, PyState &s, const ctorch_optim_options_v2 &o) {
  at::Tensor &exp_avg = s.a, &exp_avg_sq = s.b, &mu_product = s.mu_product;
  const double beta1 = o.beta1, beta2 = o.beta2, lr = o.lr;
  s.step += 1;
  const double step = static_cast<double>(s.step);  // step_t.item(): a float32 count, exact
  const double bias_correction2 = 1 - std::pow(beta2, step);
  grad = decay(grad, param, o, o.decoupled_weight_decay != 0);
  const double mu = beta1 * (1. - 0.5 * std::pow(0.96, step * o.momentum_decay));
  const double mu_next = beta1 * (1. - 0.5 * std::pow(0.96, (step + 1) * o.momentum_decay));
  mu_product.mul_(mu);
  double mu_product_next;
  if (compat::kNadamMuNextFromValue) {
    update_exp_avg(exp_avg, grad, beta1);
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
    mu_product_next = mu_product.item<double>() * mu_next;
  } else {
    mu_product_next = ((mu_product * mu) * mu_next).item<double>();
    update_exp_avg(exp_avg, grad, beta1);
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  }
  at::Tensor denom = exp_avg_sq.div(bias_correction2).sqrt().add_(o.eps);
  param.addcdiv_(grad, denom, -lr * (1. - mu) / (1. - mu_product.item<double>()));
  param.addcdiv_(exp_avg, denom, (-lr * mu_next) / (1. - mu_product_next));
}

void radam(at::Tensor &param, at::Tensor grad, PyState &s, const ctorch_optim_options_v2 &o) {
  at::Tensor &exp_avg = s.a, &exp_avg_sq = s.b;
  const double beta1 = o.beta1, beta2 = o.beta2, lr = o.lr;
  s.step += 1;
  const double step = static_cast<double>(s.step);
  grad = decay(grad, param, o, o.decoupled_weight_decay != 0);
  update_exp_avg(exp_avg, grad, beta1);
  exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  const double bias_correction1 = 1 - std::pow(beta1, step);
  const double bias_correction2 = 1 - std::pow(beta2, step);
  at::Tensor bias_corrected_exp_avg = exp_avg / bias_correction1;
  const double rho_inf = 2 / (1 - beta2) - 1;
  const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bias_correction2;
  if (rho_t > 5.) {
    const double r2 = (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t);
    // 1.13: math.sqrt(...); 2.x: (...) ** 0.5 (both correctly rounded)
    const double rect = compat::kOptimLerpExpAvg ? std::pow(r2, 0.5) : std::sqrt(r2);
    const double sqrt_bc2 = compat::kOptimLerpExpAvg ? std::pow(bias_correction2, 0.5) : std::sqrt(bias_correction2);
    // Python's float / tensor is tensor.reciprocal() * float.
    at::Tensor adaptive_lr = exp_avg_sq.sqrt().add_(o.eps).reciprocal() * sqrt_bc2;
    param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, -1.0);
  } else {
    param.add_(bias_corrected_exp_avg * lr, -1.0);
  }
}

void adamax(at::Tensor &param, at::Tensor grad, PyState &s, const ctorch_optim_options_v2 &o) {
  at::Tensor &exp_avg = s.a, &exp_inf = s.b;
  s.step += 1;
  grad = decay(grad, param, o, false);
  update_exp_avg(exp_avg, grad, o.beta1);
  if (compat::kAdamaxMaximum) {
    at::maximum_out(exp_inf, exp_inf.mul_(o.beta2), grad.abs().add_(o.eps));
  } else {
    at::Tensor norm_buf = at::cat({exp_inf.mul_(o.beta2).unsqueeze(0), grad.abs().add_(o.eps).unsqueeze_(0)}, 0);
    at::amax_out(exp_inf, norm_buf, {0}, false);
  }
  const double bias_correction = 1 - std::pow(o.beta1, static_cast<double>(s.step));
  const double clr = o.lr / bias_correction;
  param.addcdiv_(exp_avg, exp_inf, -clr);
}

void adadelta(at::Tensor &param, at::Tensor grad, PyState &s, const ctorch_optim_options_v2 &o) {
  at::Tensor &square_avg = s.a, &acc_delta = s.b;
  s.step += 1;
  grad = decay(grad, param, o, false);
  square_avg.mul_(o.rho).addcmul_(grad, grad, 1 - o.rho);
  at::Tensor std_ = square_avg.add(o.eps).sqrt_();
  at::Tensor delta = acc_delta.add(o.eps).sqrt_().div_(std_).mul_(grad);
  acc_delta.mul_(o.rho).addcmul_(delta, delta, 1 - o.rho);
  param.add_(delta, -o.lr);
}

class FirstOrder : public torch::optim::Optimizer {
 public:
  FirstOrder(ctorch_optimizer_kind kind, const std::vector<torch::optim::OptimizerParamGroup> &groups, const PyOptions &d)
      : Optimizer(groups, std::make_unique<PyOptions>(d)), kind_(kind) {
    keep_group_options(*this, groups);
  }

  at::Tensor step(LossClosure closure) override {
    at::Tensor loss;
    if (closure) {
      at::AutoGradMode on(true);
      loss = closure();
    }
    at::NoGradGuard no_grad;
    for (auto &group : param_groups_) {
      const ctorch_optim_options_v2 &o = static_cast<PyOptions &>(group.options()).o;
      for (auto &p : group.params()) {
        if (!p.grad().defined()) continue;
        const at::Tensor &grad = p.grad();
        if (grad.is_sparse()) ctorch::fail(CTORCH_VALUE, std::string(kind_name(kind_)) + " does not support sparse gradients");
        auto &slot = state_[optim_state_key(state_, p)];
        if (!slot) {
          auto s = std::make_unique<PyState>();
          s->a = at::zeros_like(p, at::MemoryFormat::Preserve);
          s->b = at::zeros_like(p, at::MemoryFormat::Preserve);
          if (kind_ == CTORCH_OPTIM_NADAM) s->mu_product = at::scalar_tensor(1.0, at::kFloat);
          slot = std::move(s);
        }
        auto &s = static_cast<PyState &>(*slot);
        at::Tensor param = p;  // shares p's storage; the updates are in place
        switch (kind_) {
          case CTORCH_OPTIM_NADAM: nadam(param, grad, s, o); break;
          case CTORCH_OPTIM_RADAM: radam(param, grad, s, o); break;
          case CTORCH_OPTIM_ADAMAX: adamax(param, grad, s, o); break;
          case CTORCH_OPTIM_ADADELTA: adadelta(param, grad, s, o); break;
          default: ctorch::fail_arg("kind", "not a first-order kind");
        }
      }
    }
    return loss;
  }

  void save(torch::serialize::OutputArchive &archive) const override {
    torch::optim::serialize<PyState, PyOptions>(archive, *this);
  }
  void load(torch::serialize::InputArchive &archive) override {
    torch::optim::serialize<PyState, PyOptions>(archive, *this);
  }

 private:
  ctorch_optimizer_kind kind_;
};

}  // namespace

void keep_group_options(torch::optim::Optimizer &opt, const std::vector<torch::optim::OptimizerParamGroup> &groups) {
  auto &live = opt.param_groups();
  for (size_t i = 0; i < groups.size() && i < live.size(); ++i)
    if (groups[i].has_options()) live[i].set_options(groups[i].options().clone());
}

void PyOptions::serialize(torch::serialize::OutputArchive &archive) const {
  archive.write("kind", c10::IValue(static_cast<int64_t>(kind)));
#define X(f) archive.write(#f, c10::IValue(static_cast<double>(o.f)));
  CTORCH_PY_OPTION_FIELDS(X)
#undef X
#define X(f) archive.write(#f, c10::IValue(static_cast<int64_t>(o.f)));
  CTORCH_PY_OPTION_INTS(X)
#undef X
}

void PyOptions::serialize(torch::serialize::InputArchive &archive) {
  c10::IValue v;
  archive.read("kind", v);
  kind = static_cast<ctorch_optimizer_kind>(v.toInt());
#define X(f)            \
  archive.read(#f, v);  \
  o.f = v.toDouble();
  CTORCH_PY_OPTION_FIELDS(X)
#undef X
#define X(f)           \
  archive.read(#f, v); \
  o.f = static_cast<decltype(o.f)>(v.toInt());
  CTORCH_PY_OPTION_INTS(X)
#undef X
}

void PyState::serialize(torch::serialize::OutputArchive &archive) const {
  archive.write("step", c10::IValue(step));
  if (a.defined()) archive.write("a", a, /*is_buffer=*/true);
  if (b.defined()) archive.write("b", b, true);
  if (mu_product.defined()) archive.write("mu_product", mu_product, true);
}

void PyState::serialize(torch::serialize::InputArchive &archive) {
  c10::IValue v;
  archive.read("step", v);
  step = v.toInt();
  archive.try_read("a", a, true);
  archive.try_read("b", b, true);
  archive.try_read("mu_product", mu_product, true);
}

const char *state_name_a(ctorch_optimizer_kind kind) {
  return kind == CTORCH_OPTIM_ADADELTA ? "square_avg" : "exp_avg";
}
const char *state_name_b(ctorch_optimizer_kind kind) {
  return kind == CTORCH_OPTIM_ADADELTA ? "acc_delta" : kind == CTORCH_OPTIM_ADAMAX ? "exp_inf" : "exp_avg_sq";
}

// Python's constructors' checks, in their order.
std::unique_ptr<PyOptions> make_py_options(ctorch_optimizer_kind kind, const ctorch_optim_options_v2 &o) {
  check_nonneg(o.lr, "lr");
  switch (kind) {
    case CTORCH_OPTIM_NADAM:
    case CTORCH_OPTIM_RADAM:
    case CTORCH_OPTIM_ADAMAX:
      check_nonneg(o.eps, "eps");
      check_beta(o.beta1, "beta1");
      check_beta(o.beta2, "beta2");
      check_nonneg(o.weight_decay, "weight_decay");
      if (kind == CTORCH_OPTIM_NADAM) check_nonneg(o.momentum_decay, "momentum_decay");
      if (o.decoupled_weight_decay && kind == CTORCH_OPTIM_ADAMAX)
        ctorch::fail_arg("options", "decoupled_weight_decay: Adamax has no such option (NAdam and RAdam do)");
      if (o.decoupled_weight_decay && !compat::kOptimDecoupledWeightDecay)
        ctorch::fail(CTORCH_NOT_IMPLEMENTED, std::string("argument 'options': decoupled_weight_decay: the ") + kind_name(kind) +
                                                 " of PyTorch 1.13, which this build follows, has no such option (2.x has)");
      break;
    case CTORCH_OPTIM_ADADELTA:
      if (!(o.rho >= 0 && o.rho <= 1)) ctorch::fail_arg("options", "rho must be in [0, 1], got " + std::to_string(o.rho));
      check_nonneg(o.eps, "eps");
      check_nonneg(o.weight_decay, "weight_decay");
      break;
    case CTORCH_OPTIM_LBFGS:
      if (o.max_iter < 1) ctorch::fail_arg("options", "max_iter must be >= 1, got " + std::to_string(o.max_iter));
      if (o.max_eval < 0)
        ctorch::fail_arg("options", "max_eval must be >= 1 (or 0 for max_iter * 5 / 4), got " + std::to_string(o.max_eval));
      if (o.history_size < 1) ctorch::fail_arg("options", "history_size must be >= 1, got " + std::to_string(o.history_size));
      check_nonneg(o.tolerance_grad, "tolerance_grad");
      check_nonneg(o.tolerance_change, "tolerance_change");
      if (o.line_search != CTORCH_LINE_SEARCH_NONE && o.line_search != CTORCH_LINE_SEARCH_STRONG_WOLFE)
        ctorch::fail_arg("options", "line_search must be CTORCH_LINE_SEARCH_NONE or CTORCH_LINE_SEARCH_STRONG_WOLFE, got " +
                                        std::to_string(o.line_search));
      break;
    default: ctorch::fail_arg("kind", "not one of NAdam, RAdam, Adamax, Adadelta, LBFGS");
  }
  auto r = std::make_unique<PyOptions>(o.lr);
  r->kind = kind;
  r->o = o;
  if (kind == CTORCH_OPTIM_LBFGS && r->o.max_eval == 0) r->o.max_eval = r->o.max_iter * 5 / 4;  // Python's None
  return r;
}

std::unique_ptr<torch::optim::Optimizer> construct_py(ctorch_optimizer_kind kind,
                                                      const std::vector<torch::optim::OptimizerParamGroup> &groups,
                                                      const torch::optim::OptimizerOptions &d) {
  const auto &pd = static_cast<const PyOptions &>(d);
  if (kind == CTORCH_OPTIM_LBFGS) return make_lbfgs(groups, pd);
  return std::make_unique<FirstOrder>(kind, groups, pd);
}

}  // namespace optim
}  // namespace ctorch
