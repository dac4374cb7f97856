// Optimizers (torch::optim) and learning-rate schedules from C.
#include <cstddef>
#include <cstring>
#include "optim_internal.h"
#include "optim_py.h"
#include "models/models.h"
#include "core/storage_write.h"

#include <caffe2/serialize/read_adapter_interface.h>

#include <ATen/core/grad_mode.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/archive.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <unordered_set>

using ctorch::optim::Optim;

namespace {

void check_kind(int kind) {
  if (kind < CTORCH_OPTIM_SGD || kind > CTORCH_OPTIM_LBFGS)
    ctorch::fail_arg("kind", "unknown optimizer kind " + std::to_string(kind));
}

}  // namespace

namespace ctorch {
namespace optim {

const char *kind_name(ctorch_optimizer_kind kind) {
  static const char *const names[] = {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adamax",
                                      "Adadelta", "LBFGS"};
  return kind >= CTORCH_OPTIM_SGD && kind <= CTORCH_OPTIM_LBFGS ? names[kind] : "optimizer";
}

ctorch_optim_options_v2 defaults(ctorch_optimizer_kind kind) {
  ctorch_optim_options_v2 o{};
  o.beta1 = 0.9;
  o.beta2 = 0.999;
  o.eps = 1e-8;
  o.alpha = 0.99;
  // Fields of the kinds that use them (the others ignore them).
  o.momentum_decay = 4e-3;
  o.rho = 0.9;
  o.max_iter = 20;
  o.max_eval = 0;  // Python's None: max_iter * 5 / 4
  o.tolerance_grad = 1e-7;
  o.tolerance_change = 1e-9;
  o.history_size = 100;
  o.line_search = CTORCH_LINE_SEARCH_NONE;
  switch (kind) {
    case CTORCH_OPTIM_SGD: o.lr = 1e-2; break;
    case CTORCH_OPTIM_ADAM: o.lr = 1e-3; break;
    case CTORCH_OPTIM_ADAMW: o.lr = 1e-3; o.weight_decay = 1e-2; break;
    case CTORCH_OPTIM_RMSPROP: o.lr = 1e-2; break;
    case CTORCH_OPTIM_ADAGRAD: o.lr = 1e-2; o.eps = 1e-10; break;
    case CTORCH_OPTIM_NADAM: o.lr = 2e-3; break;
    case CTORCH_OPTIM_RADAM: o.lr = 1e-3; break;
    case CTORCH_OPTIM_ADAMAX: o.lr = 2e-3; break;
    case CTORCH_OPTIM_ADADELTA: o.lr = 1.0; o.eps = 1e-6; break;
    case CTORCH_OPTIM_LBFGS: o.lr = 1.0; break;
  }
  return o;
}

}  // namespace optim
}  // namespace ctorch

namespace {

void check_nonneg(double v, const char *field) {
  if (!(v >= 0.0) || std::isinf(v))
    ctorch::fail_arg("options", std::string(field) + " must be a finite number >= 0, got " + std::to_string(v));
}

}  // namespace

namespace ctorch {
namespace optim {

// Validates like PyTorch's Python constructors (libtorch checks only some of
// these, and none for added groups), then builds the libtorch options.
std::unique_ptr<torch::optim::OptimizerOptions> make_options(ctorch_optimizer_kind kind, const ctorch_optim_options_v2 &o) {
  if (is_py_kind(kind)) return make_py_options(kind, o);
  check_nonneg(o.lr, "lr");
  check_nonneg(o.weight_decay, "weight_decay");
  check_nonneg(o.eps, "eps");
  switch (kind) {
    case CTORCH_OPTIM_SGD: {
      check_nonneg(o.momentum, "momentum");
      if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
        ctorch::fail_arg("options", "nesterov momentum requires momentum > 0 and dampening 0");
      auto r = std::make_unique<torch::optim::SGDOptions>(o.lr);
      r->momentum(o.momentum).dampening(o.dampening).weight_decay(o.weight_decay).nesterov(o.nesterov != 0);
      return r;
    }
    case CTORCH_OPTIM_ADAM:
    case CTORCH_OPTIM_ADAMW: {
      if (!(o.beta1 >= 0 && o.beta1 < 1)) ctorch::fail_arg("options", "beta1 must be in [0, 1), got " + std::to_string(o.beta1));
      if (!(o.beta2 >= 0 && o.beta2 < 1)) ctorch::fail_arg("options", "beta2 must be in [0, 1), got " + std::to_string(o.beta2));
      if (kind == CTORCH_OPTIM_ADAM) {
        auto r = std::make_unique<torch::optim::AdamOptions>(o.lr);
        r->betas(std::make_tuple(o.beta1, o.beta2)).eps(o.eps).weight_decay(o.weight_decay).amsgrad(o.amsgrad != 0);
        return r;
      }
      auto r = std::make_unique<torch::optim::AdamWOptions>(o.lr);
      r->betas(std::make_tuple(o.beta1, o.beta2)).eps(o.eps).weight_decay(o.weight_decay).amsgrad(o.amsgrad != 0);
      return r;
    }
    case CTORCH_OPTIM_RMSPROP: {
      check_nonneg(o.momentum, "momentum");
      check_nonneg(o.alpha, "alpha");
      auto r = std::make_unique<torch::optim::RMSpropOptions>(o.lr);
      r->alpha(o.alpha).eps(o.eps).weight_decay(o.weight_decay).momentum(o.momentum).centered(o.centered != 0);
      return r;
    }
    case CTORCH_OPTIM_ADAGRAD: {
      check_nonneg(o.lr_decay, "lr_decay");
      check_nonneg(o.initial_accumulator_value, "initial_accumulator_value");
      auto r = std::make_unique<torch::optim::AdagradOptions>(o.lr);
      r->lr_decay(o.lr_decay).weight_decay(o.weight_decay).initial_accumulator_value(o.initial_accumulator_value).eps(o.eps);
      return r;
    }
    default: break;
  }
  ctorch::fail_arg("kind", "unknown optimizer kind");
}

ctorch_optim_options_v2 read_options(ctorch_optimizer_kind kind, const torch::optim::OptimizerOptions &base) {
  if (is_py_kind(kind)) return static_cast<const PyOptions &>(base).o;
  ctorch_optim_options_v2 o = defaults(kind);
  switch (kind) {
    case CTORCH_OPTIM_SGD: {
      auto &r = static_cast<const torch::optim::SGDOptions &>(base);
      o.lr = r.lr(); o.momentum = r.momentum(); o.dampening = r.dampening();
      o.weight_decay = r.weight_decay(); o.nesterov = r.nesterov();
      break;
    }
    case CTORCH_OPTIM_ADAM: {
      auto &r = static_cast<const torch::optim::AdamOptions &>(base);
      o.lr = r.lr(); o.beta1 = std::get<0>(r.betas()); o.beta2 = std::get<1>(r.betas());
      o.eps = r.eps(); o.weight_decay = r.weight_decay(); o.amsgrad = r.amsgrad();
      break;
    }
    case CTORCH_OPTIM_ADAMW: {
      auto &r = static_cast<const torch::optim::AdamWOptions &>(base);
      o.lr = r.lr(); o.beta1 = std::get<0>(r.betas()); o.beta2 = std::get<1>(r.betas());
      o.eps = r.eps(); o.weight_decay = r.weight_decay(); o.amsgrad = r.amsgrad();
      break;
    }
    case CTORCH_OPTIM_RMSPROP: {
      auto &r = static_cast<const torch::optim::RMSpropOptions &>(base);
      o.lr = r.lr(); o.alpha = r.alpha(); o.eps = r.eps(); o.weight_decay = r.weight_decay();
      o.momentum = r.momentum(); o.centered = r.centered();
      break;
    }
    case CTORCH_OPTIM_ADAGRAD: {
      auto &r = static_cast<const torch::optim::AdagradOptions &>(base);
      o.lr = r.lr(); o.lr_decay = r.lr_decay(); o.weight_decay = r.weight_decay();
      o.initial_accumulator_value = r.initial_accumulator_value(); o.eps = r.eps();
      break;
    }
    default: break;
  }
  return o;
}

// Builds an optimizer of `kind` over param groups (groups without options
// take the defaults' copy, as libtorch does).
namespace {
std::unique_ptr<torch::optim::Optimizer> construct_as_is(ctorch_optimizer_kind kind,
                                                         const std::vector<torch::optim::OptimizerParamGroup> &groups,
                                                         const torch::optim::OptimizerOptions &d) {
  if (is_py_kind(kind)) return construct_py(kind, groups, d);
  switch (kind) {
    case CTORCH_OPTIM_SGD:
      return std::make_unique<torch::optim::SGD>(groups, static_cast<const torch::optim::SGDOptions &>(d));
    case CTORCH_OPTIM_ADAM:
      return std::make_unique<torch::optim::Adam>(groups, static_cast<const torch::optim::AdamOptions &>(d));
    case CTORCH_OPTIM_ADAMW:
      return std::make_unique<torch::optim::AdamW>(groups, static_cast<const torch::optim::AdamWOptions &>(d));
    case CTORCH_OPTIM_RMSPROP:
      return std::make_unique<torch::optim::RMSprop>(groups, static_cast<const torch::optim::RMSpropOptions &>(d));
    case CTORCH_OPTIM_ADAGRAD:
      return std::make_unique<torch::optim::Adagrad>(groups, static_cast<const torch::optim::AdagradOptions &>(d));
    default: break;
  }
  ctorch::fail_arg("kind", "unknown optimizer kind");
}
}  // namespace

// libtorch 2.x's optimizers merge each group's options with the defaults
// by comparison: a field equal to the options' constructor default (SGD's
// lr 1e-3, a momentum of 0, ...) is taken from the optimizer's defaults
// instead (seen with 2.15.0: a loaded state whose group lr was
// 0.001 came back with the defaults' 0.1). A group's options are what its
// caller or file says: set again after construction (a no-op on 1.13).
std::unique_ptr<torch::optim::Optimizer> construct(ctorch_optimizer_kind kind,
                                                   const std::vector<torch::optim::OptimizerParamGroup> &groups,
                                                   const torch::optim::OptimizerOptions &d) {
  auto opt = construct_as_is(kind, groups, d);
  auto &live = opt->param_groups();
  for (size_t i = 0; i < groups.size() && i < live.size(); ++i)
    if (groups[i].has_options()) live[i].set_options(groups[i].options().clone());
  return opt;
}

Optim &require_opt(ctorch_optimizer opt) {
  ctorch::check_handle(opt, "opt");
  if (!opt->o) ctorch::fail_arg("opt", "is NULL");
  return *opt->o;
}

std::vector<at::Tensor> all_params(Optim &o) {
  std::vector<at::Tensor> v;
  for (auto &g : o.opt->param_groups()) v.insert(v.end(), g.params().begin(), g.params().end());
  return v;
}

}  // namespace optim
}  // namespace ctorch

using ctorch::optim::check_loaded_state;
using ctorch::optim::construct;
using ctorch::optim::defaults;
using ctorch::optim::make_options;
using ctorch::optim::read_options;
using ctorch::optim::all_params;
using ctorch::optim::Held;
using ctorch::optim::require_opt;

namespace {

// libtorch's Optimizer::load restores per-parameter state but not the
// groups' options (lr, betas, ...); PyTorch's load_state_dict restores both.
template <class Options>
void load_group_options(torch::serialize::InputArchive &archive, torch::optim::Optimizer &opt) {
  torch::serialize::InputArchive groups;
  archive.read("param_groups", groups);
  for (size_t i = 0; i < opt.param_groups().size(); ++i) {
    torch::serialize::InputArchive group, options;
    groups.read("param_groups/" + std::to_string(i), group);
    group.read("options", options);
    Options o(0);
    o.serialize(options);
    opt.param_groups()[i].set_options(std::make_unique<Options>(o));
  }
}

void load_options(ctorch_optimizer_kind kind, torch::serialize::InputArchive &archive, torch::optim::Optimizer &opt) {
  switch (kind) {
    case CTORCH_OPTIM_SGD: return load_group_options<torch::optim::SGDOptions>(archive, opt);
    case CTORCH_OPTIM_ADAM: return load_group_options<torch::optim::AdamOptions>(archive, opt);
    case CTORCH_OPTIM_ADAMW: return load_group_options<torch::optim::AdamWOptions>(archive, opt);
    case CTORCH_OPTIM_RMSPROP: return load_group_options<torch::optim::RMSpropOptions>(archive, opt);
    case CTORCH_OPTIM_ADAGRAD: return load_group_options<torch::optim::AdagradOptions>(archive, opt);
    default: return load_group_options<ctorch::optim::PyOptions>(archive, opt);
  }
}

std::vector<at::Tensor> param_list(const ctorch_tensor *params, size_t n, const torch::optim::Optimizer *existing) {
  ctorch::require_list(params, n, "params");
  if (!n) ctorch::fail_arg("params", "is empty");
  auto v = ctorch::tensor_list(params, n, "params");
  std::unordered_set<c10::TensorImpl *> seen;
  if (existing)
    for (auto &g : existing->param_groups())
      for (auto &p : g.params()) seen.insert(p.unsafeGetTensorImpl());
  for (size_t i = 0; i < v.size(); ++i) {
    const auto &p = v[i];
    if (!p.is_leaf()) ctorch::fail_arg("params", "entry " + std::to_string(i) + " is not a leaf tensor (cannot optimize a computed tensor)");
    if (!at::isFloatingType(p.scalar_type()) && !at::isComplexType(p.scalar_type()))
      ctorch::fail(CTORCH_TYPE, "argument 'params': entry " + std::to_string(i) + " has non-floating dtype " +
                                    c10::toString(p.scalar_type()));
    if (!seen.insert(p.unsafeGetTensorImpl()).second)
      ctorch::fail_arg("params", "entry " + std::to_string(i) + " appears twice (or is already in another group)");
  }
  return v;
}

// The kinds written after Python's code (optim_py.cpp) take real parameters only.
void require_real(ctorch_optimizer_kind kind, const std::vector<at::Tensor> &v) {
  if (!ctorch::optim::is_py_kind(kind)) return;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].is_complex())
      ctorch::fail(CTORCH_TYPE, "argument 'params': entry " + std::to_string(i) +
                                    " is complex; NAdam, RAdam, Adamax, Adadelta and LBFGS take real parameters");
}

}  // namespace

namespace {

torch::optim::OptimizerParamGroup &group_of(Optim &o, size_t group) {
  auto &g = o.opt->param_groups();
  if (group >= g.size())
    ctorch::fail(CTORCH_INDEX, "argument 'group': " + std::to_string(group) + " out of range for " +
                                   std::to_string(g.size()) + " parameter groups");
  return g[group];
}

// ctorch_optim_options is ctorch_optim_options_v2's leading fields (the
// common initial sequence of both structs): copying that prefix is the whole
// conversion, and never touches a byte past the 96 of the smaller one.
static_assert(sizeof(ctorch_optim_options) == 96, "ctorch_optim_options is frozen at 96 bytes (docs/abi.md)");
static_assert(sizeof(ctorch_optim_options_v2) == 168, "ctorch_optim_options_v2 is frozen at 168 bytes (docs/abi.md)");
static_assert(offsetof(ctorch_optim_options_v2, initial_accumulator_value) ==
                  offsetof(ctorch_optim_options, initial_accumulator_value),
              "ctorch_optim_options_v2 must start with ctorch_optim_options's fields");
void narrow(ctorch_optim_options *out, const ctorch_optim_options_v2 &o) { std::memcpy(out, &o, sizeof *out); }
void widen(ctorch_optim_options_v2 *o, const ctorch_optim_options &in) { std::memcpy(o, &in, sizeof in); }

// The bodies of the optimizer constructors, shared by the entry points for
// both option structs (each entry point's own CTORCH_CATCH names it in errors).
void new_impl(ctorch_optimizer *out, ctorch_optimizer_kind kind, const ctorch_tensor *params, size_t n,
              const ctorch_optim_options_v2 &options) {
  auto v = param_list(params, n, nullptr);
  require_real(kind, v);
  auto opts = make_options(kind, options);
  auto o = std::make_shared<Optim>();
  o->kind = kind;
  o->opt = construct(kind, {torch::optim::OptimizerParamGroup(v)}, *opts);
  *out = new ctorch_optimizer_s{std::move(o)};
}

void add_param_group_impl(ctorch_optimizer opt, const ctorch_tensor *params, size_t n,
                          const ctorch_optim_options_v2 *options) {
  Optim &o = require_opt(opt);
  if (o.kind == CTORCH_OPTIM_LBFGS)
    ctorch::fail_arg("opt", "LBFGS doesn't support per-parameter options (parameter groups), as in PyTorch");
  auto v = param_list(params, n, o.opt.get());
  require_real(o.kind, v);
  std::unique_ptr<torch::optim::OptimizerOptions> opts =
      options ? make_options(o.kind, *options) : o.opt->defaults().clone();
  // libtorch's Adagrad makes each parameter's state (step, sum) in its
  // constructor only; its step() on a parameter added later fails an
  // internal assert and leaves a null state behind, which save() then
  // dereferences (SIGSEGV, found writing the fuzz seeds). The state of the
  // new parameters is made here the same way, by that constructor, with the
  // group's own initial_accumulator_value (as Python does).
  std::unique_ptr<torch::optim::Optimizer> adagrad_state;
  if (o.kind == CTORCH_OPTIM_ADAGRAD) adagrad_state = construct(o.kind, {torch::optim::OptimizerParamGroup(v)}, *opts);
  std::unique_ptr<torch::optim::OptimizerOptions> mine = opts->clone();  // every kind: see construct
  o.opt->add_param_group(torch::optim::OptimizerParamGroup(v, std::move(opts)));
  // libtorch 2.x merges the group's options with the defaults and loses PyOptions' fields.
  if (mine) o.opt->param_groups().back().set_options(std::move(mine));
  if (adagrad_state)
    for (auto &kv : adagrad_state->state()) o.opt->state()[kv.first] = std::move(kv.second);
}

}  // namespace

extern "C" {

// The 96-byte ctorch_optim_options of the first release (docs/abi.md): these
// entry points read and write its bytes only, never the fields _v2 added
// after them, so a program built against that header keeps working. The
// options it passes are completed with the defaults for the rest (the
// kind's; for an added group, the optimizer's).
CTORCH_API ctorch_status ctorch_optim_options_default(ctorch_optim_options *out, ctorch_optimizer_kind kind) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  check_kind(kind);
  narrow(out, defaults(kind));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optim_options_default_v2(ctorch_optim_options_v2 *out, ctorch_optimizer_kind kind) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  check_kind(kind);
  *out = defaults(kind);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_new(ctorch_optimizer *out, ctorch_optimizer_kind kind,
                                              const ctorch_tensor *params, size_t n,
                                              const ctorch_optim_options *options) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  check_kind(kind);
  ctorch_optim_options_v2 o = defaults(kind);
  if (options) widen(&o, *options);
  new_impl(out, kind, params, n, o);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_new_v2(ctorch_optimizer *out, ctorch_optimizer_kind kind,
                                                 const ctorch_tensor *params, size_t n,
                                                 const ctorch_optim_options_v2 *options) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  check_kind(kind);
  new_impl(out, kind, params, n, options ? *options : defaults(kind));
  CTORCH_CATCH
}

CTORCH_API void ctorch_optimizer_free(ctorch_optimizer opt) {
  // A handle in use by another thread's call is not freed (core/exclusive.h).
  if (opt && ctorch::handle_kind_of(opt) == ctorch::HandleKind::optimizer && opt->o &&
      !ctorch::free_allowed(opt->o->busy, __func__, opt))
    return;
  if (ctorch::release_handle(opt, __func__)) {
    // Schedulers may keep the optimizer itself alive: leave it usable by them.
    if (opt->o) opt->o->busy.owner.store(nullptr, std::memory_order_release);
    delete opt;
  }
}

CTORCH_API ctorch_status ctorch_optimizer_add_param_group(ctorch_optimizer opt, const ctorch_tensor *params, size_t n,
                                                          const ctorch_optim_options *options) {
  CTORCH_TRY
  ctorch_optim_options_v2 o{};
  Held held(opt);
  if (options) {  // the fields it lacks from the optimizer's defaults, as Python's groups
    Optim &opt_ = held.o;
    o = read_options(opt_.kind, opt_.opt->defaults());
    widen(&o, *options);
  }
  add_param_group_impl(opt, params, n, options ? &o : nullptr);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_add_param_group_v2(ctorch_optimizer opt, const ctorch_tensor *params,
                                                             size_t n, const ctorch_optim_options_v2 *options) {
  CTORCH_TRY
  Held held(opt);
  add_param_group_impl(opt, params, n, options);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_num_param_groups(size_t *out, ctorch_optimizer opt) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  Held held(opt);
  *out = held.o.opt->param_groups().size();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_params(ctorch_tensor_list *out, ctorch_optimizer opt, size_t group) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  Held held(opt);
  auto &g = group_of(held.o, group);
  *out = ctorch::give_list(std::vector<at::Tensor>(g.params()));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_get_options(ctorch_optim_options *out, ctorch_optimizer opt, size_t group) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  Held held(opt);
  Optim &o = held.o;
  narrow(out, read_options(o.kind, group_of(o, group).options()));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_get_options_v2(ctorch_optim_options_v2 *out, ctorch_optimizer opt, size_t group) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  Held held(opt);
  Optim &o = held.o;
  *out = read_options(o.kind, group_of(o, group).options());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_get_lr(double *out, ctorch_optimizer opt, size_t group) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  Held held(opt);
  *out = group_of(held.o, group).options().get_lr();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_set_lr(ctorch_optimizer opt, size_t group, double lr) {
  CTORCH_TRY
  Held held(opt);
  auto &g = group_of(held.o, group);
  if (!(lr >= 0.0) || std::isinf(lr)) ctorch::fail_arg("lr", "must be a finite number >= 0, got " + std::to_string(lr));
  g.options().set_lr(lr);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_zero_grad(ctorch_optimizer opt, int set_to_none) {
  CTORCH_TRY
  Held held(opt);
  Optim &o = held.o;
  ctorch::GradLocks locks(all_params(o), &o.grad_nodes);  // a backward elsewhere waits: it writes these .grads
  for (auto &g : o.opt->param_groups())
    for (auto &p : g.params()) {
      at::Tensor &grad = p.mutable_grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        grad = at::Tensor();
      } else {
        if (grad.grad_fn()) grad = grad.detach();
        else grad.requires_grad_(false);
        grad.zero_();
      }
    }
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_step(ctorch_optimizer opt) {
  CTORCH_TRY
  Held held(opt);
  Optim &o = held.o;
  if (o.kind == CTORCH_OPTIM_LBFGS)
    ctorch::fail_arg("opt", "LBFGS steps with a closure: use ctorch_optimizer_step_closure");
  std::vector<at::Tensor> params = all_params(o);
  ctorch::WriteHolds writes(params, "opt");  // the step writes every parameter
  ctorch::GradLocks locks(params, &o.grad_nodes);  // the step reads every .grad: a backward elsewhere waits
  if (!ctorch::optim::step_multi_tensor(o)) o.opt->step();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_step_closure(double *loss_out, ctorch_optimizer opt,
                                                       ctorch_optimizer_closure_fn closure, void *user_data) {
  CTORCH_TRY
  ctorch::require_out(loss_out, "loss_out");
  Held held(opt);  // the closure may call this optimizer again on this thread (zero_grad): allowed
  Optim &o = held.o;
  ctorch::require_ptr(closure, "closure");
  int64_t calls = 0;
  // The C callback as Python's closure: its status becomes an exception
  // that unwinds the step (C++ only) and is returned by CTORCH_CATCH.
  auto fn = [&]() -> at::Tensor {
    double loss = 0;
    ++calls;
    ctorch_status st = closure(user_data, &loss);
    if (st != CTORCH_OK) {
      bool known = static_cast<int>(st) > CTORCH_OK && static_cast<int>(st) <= CTORCH_BUSY;
      ctorch::fail(known ? st : CTORCH_RUNTIME, "the closure callback returned " + std::string(ctorch_status_name(st)) +
                                                    " (call " + std::to_string(calls) + " of this step)");
    }
    return at::scalar_tensor(loss, at::kDouble);
  };
  at::Tensor loss;
  // The parameters are written by the update; the closure runs on this
  // thread, so its own in-place writes to them pass (storage_write.h).
  ctorch::WriteHolds writes(all_params(o), "opt");
  if (o.kind != CTORCH_OPTIM_LBFGS) {
    {  // Python's step(closure), and libtorch's for these kinds: the closure with grad mode on, then the update
      at::AutoGradMode on(true);
      loss = fn();
    }
    ctorch::GradLocks locks(all_params(o), &o.grad_nodes);  // the update only: the closure's backward takes them
    if (!ctorch::optim::step_multi_tensor(o)) o.opt->step();
  } else {
    // LBFGS calls the closure (a backward) between its reads of the .grads,
    // so no GradLocks here: it relies on the caller not running a backward
    // on these parameters meanwhile.
    loss = o.opt->step(fn);
  }
  *loss_out = loss.item<double>();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_save(ctorch_optimizer opt, const char *path) {
  CTORCH_TRY
  Held held(opt);
  Optim &o = held.o;
  ctorch::require_ptr(path, "path");
  if (o.kind == CTORCH_OPTIM_LBFGS) ctorch::fail(CTORCH_NOT_IMPLEMENTED, "saving LBFGS's state is not implemented");
  torch::serialize::OutputArchive archive;
  o.opt->save(archive);
  try {
    archive.save_to(path);
  } catch (const std::exception &e) {
    ctorch::fail(CTORCH_IO, std::string("cannot write '") + path + "': " + e.what());
  }
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_load(ctorch_optimizer opt, const char *path) {
  CTORCH_TRY
  Held held(opt);
  Optim &o = held.o;
  ctorch::require_ptr(path, "path");
  if (o.kind == CTORCH_OPTIM_LBFGS) ctorch::fail(CTORCH_NOT_IMPLEMENTED, "loading LBFGS's state is not implemented");
  // The file is a TorchScript archive (what OutputArchive writes): it gets
  // every check ctorch_module_load makes before libtorch's reader sees it
  // (a regular file only; records that crash libtorch's importer refused;
  // no leak from PyTorchStreamReader on a corrupt zip).
  const std::string bad = std::string("'") + path + "' is not an optimizer state archive: ";
  torch::serialize::InputArchive archive;
  try {
    ctorch::CheckedTorchScript checked = ctorch::check_torchscript_file(path);
    std::shared_ptr<caffe2::serialize::ReadAdapterInterface> in = checked.in;
    archive.load_from([in](uint64_t pos, void *buf, size_t n) { return in->read(pos, buf, n); },
                      [in]() { return in->size(); });
  } catch (const ctorch::StatusError &e) {
    if (e.status() == CTORCH_IO) throw;  // its message names the path
    // A file that is not such an archive has always been CTORCH_IO here.
    ctorch::fail(e.status() == CTORCH_VALUE ? CTORCH_IO : e.status(), bad + e.what());
  } catch (const c10::Error &e) {
    ctorch::fail(CTORCH_IO, bad + e.what_without_backtrace());
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const std::exception &e) {
    ctorch::fail(CTORCH_IO, bad + e.what());
  }
  // Loading into a fresh optimizer over the same groups keeps the live one
  // intact when the archive is of another kind or size.
  auto fresh = construct(o.kind, o.opt->param_groups(), o.opt->defaults());
  try {
    fresh->load(archive);
    load_options(o.kind, archive, *fresh);
  } catch (const ctorch::StatusError &) {
    throw;
  } catch (const std::exception &e) {
    ctorch::fail(CTORCH_VALUE, std::string("'") + path + "' does not hold state for this optimizer: " + e.what());
  }
  if (ctorch::optim::is_py_kind(o.kind))
    for (auto &g : fresh->param_groups())
      if (static_cast<ctorch::optim::PyOptions &>(g.options()).kind != o.kind)
        ctorch::fail(CTORCH_VALUE, std::string("'") + path + "' holds the state of another optimizer kind");
  check_loaded_state(o.kind, *fresh, std::string("'") + path + "' does not hold state for this optimizer: ");
  o.opt = std::move(fresh);
  CTORCH_CATCH
}

}  // extern "C"
