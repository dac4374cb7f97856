// Optimizer state in the format of Python's optimizer.state_dict(), written
// and read with torch.save's format, so a run can move between C and
// Python (torch.optim.X(params).load_state_dict(torch.load(path))) with
// identical next steps. SGD, Adam and AdamW: the optimizers whose update
// rules libtorch and Python share.
//
//   {'state': {index: {'step': tensor(float), 'exp_avg': T, 'exp_avg_sq': T
//                      [, 'max_exp_avg_sq': T]}            (Adam, AdamW)
//                     {'momentum_buffer': T}               (SGD, momentum != 0)
//   'param_groups': [{'lr': .., <options>, 'params': [index, ...]}, ...]}
//
// Parameters are numbered 0.. across the groups in order, as Python does;
// on load the file's numbers map onto this optimizer's parameters in the
// same order (Python's load_state_dict rule), whatever they are.
#define CTORCH_COMPAT_OPTIM_STATE  // compat::optim_state_key
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#include "optim_internal.h"
#include "optim_py.h"
#include "serialize/serialize_value.h"

#include <ATen/ops/scalar_tensor.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <unordered_map>

namespace {

using ctorch::P;
using ctorch::PV;
using ctorch::optim::Optim;

using ctorch::compat::optim_state_key;

void check_supported(ctorch_optimizer_kind kind) {
  if (kind != CTORCH_OPTIM_SGD && kind != CTORCH_OPTIM_ADAM && kind != CTORCH_OPTIM_ADAMW)
    ctorch::fail(CTORCH_NOT_IMPLEMENTED,
                 "PyTorch-format state dicts are implemented for SGD, Adam and AdamW only (use ctorch_optimizer_save/load)");
}

using ctorch::value::str;

// ---- save ---------------------------------------------------------------------

P group_dict(ctorch_optimizer_kind kind, const ctorch_optim_options_v2 &o, std::vector<P> params) {
  P g = PV::dict();
  g->put(str("lr"), PV::real(o.lr));
  if (kind == CTORCH_OPTIM_SGD) {
    g->put(str("momentum"), PV::real(o.momentum));
    g->put(str("dampening"), PV::real(o.dampening));
    g->put(str("weight_decay"), PV::real(o.weight_decay));
    g->put(str("nesterov"), PV::boolean(o.nesterov));
    g->put(str("maximize"), PV::boolean(false));
    g->put(str("foreach"), PV::none());
    g->put(str("differentiable"), PV::boolean(false));
    g->put(str("fused"), PV::none());
  } else {
    g->put(str("betas"), PV::tuple({PV::real(o.beta1), PV::real(o.beta2)}));
    g->put(str("eps"), PV::real(o.eps));
    g->put(str("weight_decay"), PV::real(o.weight_decay));
    g->put(str("amsgrad"), PV::boolean(o.amsgrad));
    g->put(str("maximize"), PV::boolean(false));
    g->put(str("foreach"), PV::none());
    g->put(str("capturable"), PV::boolean(false));
    g->put(str("differentiable"), PV::boolean(false));
    g->put(str("fused"), PV::none());
    // PyTorch >= 2.6 runs AdamW as Adam with this flag (older ones ignore it).
    g->put(str("decoupled_weight_decay"), PV::boolean(kind == CTORCH_OPTIM_ADAMW));
  }
  g->put(str("params"), PV::list(std::move(params)));
  return g;
}

// Adam's and AdamW's per-parameter state classes have the same fields.
template <class State>
P adam_state(const State &s) {
  P d = PV::dict();
  // 'step' is a float32 scalar tensor in Python since 1.12.
  d->put(str("step"), PV::tensor(at::scalar_tensor(static_cast<double>(s.step()), at::kFloat)));
  d->put(str("exp_avg"), PV::tensor(s.exp_avg().detach()));
  d->put(str("exp_avg_sq"), PV::tensor(s.exp_avg_sq().detach()));
  if (s.max_exp_avg_sq().defined()) d->put(str("max_exp_avg_sq"), PV::tensor(s.max_exp_avg_sq().detach()));
  return d;
}

P param_state(ctorch_optimizer_kind kind, const torch::optim::OptimizerParamState &base) {
  switch (kind) {
    case CTORCH_OPTIM_SGD: {
      auto &s = static_cast<const torch::optim::SGDParamState &>(base);
      if (!s.momentum_buffer().defined()) return nullptr;
      P d = PV::dict();
      d->put(str("momentum_buffer"), PV::tensor(s.momentum_buffer().detach()));
      return d;
    }
    case CTORCH_OPTIM_ADAM: return adam_state(static_cast<const torch::optim::AdamParamState &>(base));
    case CTORCH_OPTIM_ADAMW: return adam_state(static_cast<const torch::optim::AdamWParamState &>(base));
    default: return nullptr;
  }
}

// ---- load ---------------------------------------------------------------------

[[noreturn]] void bad(const std::string &msg) { ctorch::fail(CTORCH_VALUE, msg); }

const P &need(const PV &d, const char *key, const std::string &where) {
  const P *v = d.find(key);
  if (!v) bad(where + " has no '" + key + "'");
  return *v;
}

double number(const P &v, const std::string &what) {
  if (v->kind == PV::Float) return v->f;
  if (v->kind == PV::Int) return static_cast<double>(v->i);
  if (v->kind == PV::Tensor && v->t.numel() == 1 && !v->t.is_complex()) return v->t.item<double>();
  bad(what + " is a " + ctorch::pickle_type_name(v->kind) + ", not a number");
}

bool flag(const P &v, const std::string &what) {
  if (v->kind == PV::Bool || v->kind == PV::Int) return v->i != 0;
  bad(what + " is a " + std::string(ctorch::pickle_type_name(v->kind)) + ", not a bool");
}

// A flag PyTorch has and libtorch does not: only its default is accepted.
void require_default_flag(const PV &g, const char *key, bool wanted, const std::string &where, const char *why) {
  const P *v = g.find(key);
  if (v && (*v)->kind != PV::None && flag(*v, where + "'s " + key) != wanted)
    ctorch::fail(CTORCH_NOT_IMPLEMENTED, where + " has " + key + "=" + (wanted ? "False" : "True") + ": " + why);
}

ctorch_optim_options_v2 group_options(ctorch_optimizer_kind kind, const PV &g, const std::string &where) {
  ctorch_optim_options_v2 o = ctorch::optim::defaults(kind);
  o.lr = number(need(g, "lr", where), where + "'s lr");
  o.weight_decay = number(need(g, "weight_decay", where), where + "'s weight_decay");
  require_default_flag(g, "maximize", false, where, "libtorch's optimizers only minimise");
  if (kind == CTORCH_OPTIM_SGD) {
    o.momentum = number(need(g, "momentum", where), where + "'s momentum");
    o.dampening = number(need(g, "dampening", where), where + "'s dampening");
    o.nesterov = flag(need(g, "nesterov", where), where + "'s nesterov");
  } else {
    const P &betas = need(g, "betas", where);
    if ((betas->kind != PV::Tuple && betas->kind != PV::List) || betas->items.size() != 2)
      bad(where + "'s betas is not a pair");
    o.beta1 = number(betas->items[0], where + "'s betas[0]");
    o.beta2 = number(betas->items[1], where + "'s betas[1]");
    o.eps = number(need(g, "eps", where), where + "'s eps");
    o.amsgrad = flag(need(g, "amsgrad", where), where + "'s amsgrad");
    // Python's AdamW forces the flag on; Adam with it on is AdamW.
    if (kind == CTORCH_OPTIM_ADAM)
      require_default_flag(g, "decoupled_weight_decay", false, where, "that is AdamW's rule (load it into an AdamW optimizer)");
  }
  return o;
}

// t as state for param p: same shape, p's dtype and device (as Python's
// load_state_dict casts).
at::Tensor state_tensor(const P &v, const at::Tensor &p, const std::string &what) {
  if (v->kind != PV::Tensor) bad(what + " is a " + std::string(ctorch::pickle_type_name(v->kind)) + ", not a tensor");
  if (v->t.sizes() != p.sizes())
    bad(what + " has shape " + c10::str(v->t.sizes()) + " but the parameter has shape " + c10::str(p.sizes()));
  return v->t.detach().to(p.device(), p.scalar_type()).clone();
}

int64_t step_count(const P &v, const std::string &what) {
  double s = number(v, what);  // a tensor (PyTorch >= 1.12) or a number (older files)
  if (!(s >= 0) || s > 9.0e15 || s != std::floor(s)) bad(what + " is not a step count: " + std::to_string(s));
  return static_cast<int64_t>(s);
}

template <class State>
std::unique_ptr<torch::optim::OptimizerParamState> adam_state_from(const PV &d, const at::Tensor &p, bool amsgrad,
                                                                   const std::string &where) {
  auto s = std::make_unique<State>();
  s->step(step_count(need(d, "step", where), where + "'s step"));
  s->exp_avg(state_tensor(need(d, "exp_avg", where), p, where + "'s exp_avg"));
  s->exp_avg_sq(state_tensor(need(d, "exp_avg_sq", where), p, where + "'s exp_avg_sq"));
  if (amsgrad) s->max_exp_avg_sq(state_tensor(need(d, "max_exp_avg_sq", where), p, where + "'s max_exp_avg_sq"));
  return s;
}

std::unique_ptr<torch::optim::OptimizerParamState> state_from(ctorch_optimizer_kind kind, const PV &d, const at::Tensor &p,
                                                              const ctorch_optim_options_v2 &o, const std::string &where) {
  switch (kind) {
    case CTORCH_OPTIM_SGD: {
      const P *buf = d.find("momentum_buffer");
      if (!buf || (*buf)->kind == PV::None || o.momentum == 0) return nullptr;  // PyTorch 1.13 stores None
      auto s = std::make_unique<torch::optim::SGDParamState>();
      s->momentum_buffer(state_tensor(*buf, p, where + "'s momentum_buffer"));
      return s;
    }
    case CTORCH_OPTIM_ADAM: return adam_state_from<torch::optim::AdamParamState>(d, p, o.amsgrad, where);
    default: return adam_state_from<torch::optim::AdamWParamState>(d, p, o.amsgrad, where);
  }
}

const PV &need_kind(const P &v, PV::Kind k, const std::string &what) {
  if (v->kind != k) bad(what + " is a " + ctorch::pickle_type_name(v->kind) + ", not a " + ctorch::pickle_type_name(k));
  return *v;
}

}  // namespace

namespace ctorch {
namespace optim {

// The per-parameter state an archive loaded into `opt` (ctorch_optimizer_load):
// libtorch's step trusts it, so a buffer of another shape, dtype or device,
// or one the step needs left undefined, reaches the kernels, and an entry
// with no state object at all is dereferenced (libtorch 2.15's Adam: SIGSEGV
// on fuzz_optim's raw_archive_adam_1g, found by CI).
// Every buffer the step reads must be defined and shaped like its parameter.
void check_loaded_state(ctorch_optimizer_kind kind, torch::optim::Optimizer &opt, const std::string &where) {
  auto &states = opt.state();
  auto describe = [](const at::Tensor &t) { return c10::str(t.scalar_type(), t.sizes(), " on ", t.device()); };
  int64_t index = 0;
  for (auto &g : opt.param_groups()) {
    for (auto &p : g.params()) {
      auto it = states.find(optim_state_key(states, p));
      int64_t i = index++;
      if (it == states.end()) continue;
      // An entry without a state object: libtorch's step dereferences it.
      if (!it->second) ctorch::fail(CTORCH_VALUE, where + "parameter " + std::to_string(i) + " has an empty state entry");
      auto need = [&](const at::Tensor &t, const char *name, bool required) {
        if (!t.defined()) {
          if (required)
            ctorch::fail(CTORCH_VALUE, where + "parameter " + std::to_string(i) + "'s state has no '" + name + "'");
          return;
        }
        if (t.sizes() != p.sizes() || t.scalar_type() != p.scalar_type() || t.device() != p.device())
          ctorch::fail(CTORCH_VALUE, where + "parameter " + std::to_string(i) + "'s state '" + name + "' is " +
                                         describe(t) + ", the parameter " + describe(p));
      };
      auto &st = *it->second;
      switch (kind) {
        case CTORCH_OPTIM_SGD: {
          auto &o = static_cast<torch::optim::SGDOptions &>(g.options());
          need(static_cast<torch::optim::SGDParamState &>(st).momentum_buffer(), "momentum_buffer", o.momentum() != 0);
          break;
        }
        case CTORCH_OPTIM_ADAM:
        case CTORCH_OPTIM_ADAMW: {
          bool ams = kind == CTORCH_OPTIM_ADAM ? static_cast<torch::optim::AdamOptions &>(g.options()).amsgrad()
                                               : static_cast<torch::optim::AdamWOptions &>(g.options()).amsgrad();
          const at::Tensor *t[3];
          if (kind == CTORCH_OPTIM_ADAM) {
            auto &a = static_cast<torch::optim::AdamParamState &>(st);
            t[0] = &a.exp_avg(), t[1] = &a.exp_avg_sq(), t[2] = &a.max_exp_avg_sq();
          } else {
            auto &a = static_cast<torch::optim::AdamWParamState &>(st);
            t[0] = &a.exp_avg(), t[1] = &a.exp_avg_sq(), t[2] = &a.max_exp_avg_sq();
          }
          need(*t[0], "exp_avg", true);
          need(*t[1], "exp_avg_sq", true);
          need(*t[2], "max_exp_avg_sq", ams);
          break;
        }
        case CTORCH_OPTIM_RMSPROP: {
          auto &o = static_cast<torch::optim::RMSpropOptions &>(g.options());
          auto &r = static_cast<torch::optim::RMSpropParamState &>(st);
          need(r.square_avg(), "square_avg", true);
          need(r.momentum_buffer(), "momentum_buffer", o.momentum() > 0);
          need(r.grad_avg(), "grad_avg", o.centered());
          break;
        }
        case CTORCH_OPTIM_ADAGRAD:
          need(static_cast<torch::optim::AdagradParamState &>(st).sum(), "sum", true);
          break;
        default: {  // NAdam, RAdam, Adamax, Adadelta (optim_py.cpp); LBFGS keeps no such state
          auto &ps = static_cast<PyState &>(st);
          need(ps.a, state_name_a(kind), true);
          need(ps.b, state_name_b(kind), true);
          if (ps.step < 0 || ps.step > (int64_t(1) << 53))
            ctorch::fail(CTORCH_VALUE, where + "parameter " + std::to_string(i) + "'s step count " + std::to_string(ps.step) +
                                           " is out of range");
          if (kind == CTORCH_OPTIM_NADAM &&
              (!ps.mu_product.defined() || ps.mu_product.numel() != 1 || ps.mu_product.dim() != 0 ||
               ps.mu_product.scalar_type() != at::kFloat || !ps.mu_product.device().is_cpu()))
            ctorch::fail(CTORCH_VALUE, where + "parameter " + std::to_string(i) +
                                           "'s state 'mu_product' is missing or not a float32 scalar on the CPU");
          break;
        }
      }
    }
  }
}

}  // namespace optim
}  // namespace ctorch

namespace ctorch {
namespace optim {

P state_dict_value(Optim &o) {
  check_supported(o.kind);
  auto &states = o.opt->state();
  P state = PV::dict(), groups = PV::list({});
  int64_t index = 0;
  for (auto &g : o.opt->param_groups()) {
    std::vector<P> ids;
    for (auto &p : g.params()) {
      auto it = states.find(optim_state_key(states, p));
      if (it != states.end())
        if (P s = param_state(o.kind, *it->second)) state->put(PV::integer(index), std::move(s));
      ids.push_back(PV::integer(index++));
    }
    P gd = group_dict(o.kind, ctorch::optim::read_options(o.kind, g.options()), std::move(ids));
    // What schedulers keep in Python's groups (Python's sched.step() after
    // opt.load_state_dict reads them; ctorch's loader ignores them).
    // Python's order: the group's keys as set, then 'params' (group_dict's last).
    const size_t gi = groups->items.size();
    if (gi < o.initial_lr.size() || gi < o.group_keys.size()) {
      P params = gd->items.back();
      gd->items.resize(gd->items.size() - 2);
      if (gi < o.initial_lr.size()) gd->put(str("initial_lr"), PV::real(o.initial_lr[gi]));
      if (gi < o.group_keys.size())
        for (const auto &kv : o.group_keys[gi]) gd->put(str(kv.first.c_str()), PV::real(kv.second));
      gd->put(str("params"), std::move(params));
    }
    groups->items.push_back(std::move(gd));
  }
  P root = PV::dict();
  root->put(str("state"), std::move(state));
  root->put(str("param_groups"), std::move(groups));
  return root;
}

std::unique_ptr<torch::optim::Optimizer> state_dict_check(Optim &o, const P &root, const std::string &in) {
  check_supported(o.kind);
  if (root->kind != PV::Dict || !root->find("state") || !root->find("param_groups"))
    ctorch::fail(CTORCH_TYPE, in + " does not hold an optimizer state_dict ({'state': ..., 'param_groups': ...})");
  const PV &saved_state = need_kind(*root->find("state"), PV::Dict, in + "'s state");
  const PV &saved_groups = need_kind(*root->find("param_groups"), PV::List, in + "'s param_groups");
  auto &live = o.opt->param_groups();
  if (saved_groups.items.size() != live.size())
    bad(in + " has " + std::to_string(saved_groups.items.size()) + " parameter groups, the optimizer " +
        std::to_string(live.size()));

  // The file's parameter numbers -> this optimizer's parameters, in order.
  std::unordered_map<int64_t, std::pair<at::Tensor, size_t>> by_id;
  std::vector<torch::optim::OptimizerParamGroup> groups;
  std::vector<ctorch_optim_options_v2> options;
  for (size_t i = 0; i < live.size(); ++i) {
    const std::string where = in + "'s param group " + std::to_string(i);
    const PV &g = need_kind(saved_groups.items[i], PV::Dict, where);
    const PV &ids = need_kind(need(g, "params", where), PV::List, where + "'s params");
    if (ids.items.size() != live[i].params().size())
      bad(where + " has " + std::to_string(ids.items.size()) + " parameters, the optimizer's " +
          std::to_string(live[i].params().size()));
    for (size_t k = 0; k < ids.items.size(); ++k) {
      const PV &id = need_kind(ids.items[k], PV::Int, where + "'s params[" + std::to_string(k) + "]");
      if (!by_id.emplace(id.i, std::make_pair(live[i].params()[k], i)).second)
        bad(where + " lists parameter " + std::to_string(id.i) + " twice");
    }
    options.push_back(group_options(o.kind, g, where));
    std::unique_ptr<torch::optim::OptimizerOptions> made;
    try {
      made = ctorch::optim::make_options(o.kind, options.back());
    } catch (const ctorch::StatusError &e) {
      bad(where + ": " + e.what());
    }
    groups.emplace_back(live[i].params(), std::move(made));
  }

  // A fresh optimizer over the same parameters takes the state, so a file
  // that fails half way leaves the live one untouched.
  auto fresh = ctorch::optim::construct(o.kind, groups, o.opt->defaults());
  auto &states = fresh->state();
  for (size_t j = 0; j + 1 < saved_state.items.size(); j += 2) {
    const P &k = saved_state.items[j];
    if (k->kind != PV::Int) bad(in + "'s state has a " + ctorch::pickle_type_name(k->kind) + " key, not a parameter number");
    auto hit = by_id.find(k->i);
    if (hit == by_id.end()) continue;  // not a parameter of a group: Python keeps it unused
    const std::string where = in + "'s state of parameter " + std::to_string(k->i);
    const PV &d = need_kind(saved_state.items[j + 1], PV::Dict, where);
    const at::Tensor &p = hit->second.first;
    if (auto s = state_from(o.kind, d, p, options[hit->second.second], where)) states[optim_state_key(states, p)] = std::move(s);
  }
  return fresh;
}

}  // namespace optim
}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_optimizer_save_state_dict(ctorch_optimizer opt, const char *path) {
  CTORCH_TRY
  ctorch::optim::Held held(opt);
  Optim &o = held.o;
  ctorch::require_ptr(path, "path");
  if (!*path) ctorch::fail_arg("path", "is empty");
  ctorch::write_pickled(path, *ctorch::optim::state_dict_value(o));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_load_state_dict(ctorch_optimizer opt, const char *path) {
  CTORCH_TRY
  ctorch::optim::Held held(opt);
  Optim &o = held.o;
  ctorch::require_ptr(path, "path");
  if (!*path) ctorch::fail_arg("path", "is empty");
  check_supported(o.kind);
  std::unique_ptr<ctorch::Pickled> file = ctorch::read_pickled(path);
  o.opt = ctorch::optim::state_dict_check(o, file->root, std::string("'") + path + "'");
  CTORCH_CATCH
}

// The buffer and stream forms: the same value and checks.
CTORCH_API ctorch_status ctorch_optimizer_save_state_dict_to_buffer(size_t *out_len, void *buf, size_t cap,
                                                                    ctorch_optimizer opt) {
  CTORCH_TRY
  ctorch::require_buffer_args(out_len, buf, cap);
  ctorch::optim::Held held(opt);
  ctorch::P v = ctorch::optim::state_dict_value(held.o);
  ctorch::write_to_buffer(out_len, buf, cap, [&](const ctorch::Sink &s) { ctorch::write_pickled(s, *v); });
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_save_state_dict_to_stream(ctorch_write_fn write, void *user_data,
                                                                    ctorch_optimizer opt) {
  CTORCH_TRY
  ctorch::optim::Held held(opt);
  Optim &o = held.o;
  ctorch::require_ptr(write, "write");
  ctorch::P v = ctorch::optim::state_dict_value(o);
  ctorch::write_to_stream(write, user_data, [&](const ctorch::Sink &s) { ctorch::write_pickled(s, *v); });
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_load_state_dict_from_buffer(ctorch_optimizer opt, const void *data, size_t len) {
  CTORCH_TRY
  ctorch::optim::Held held(opt);
  Optim &o = held.o;
  if (!data && len) ctorch::fail_arg("data", "is NULL with len " + std::to_string(len));
  check_supported(o.kind);
  std::unique_ptr<ctorch::Pickled> file = ctorch::read_pickled(ctorch::ByteSource::memory(data, len));
  o.opt = ctorch::optim::state_dict_check(o, file->root, "the buffer");
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_optimizer_load_state_dict_from_stream(ctorch_optimizer opt, ctorch_read_fn read,
                                                                      void *user_data) {
  CTORCH_TRY
  ctorch::optim::Held held(opt);
  Optim &o = held.o;
  ctorch::require_ptr(read, "read");
  check_supported(o.kind);
  std::string bytes = ctorch::read_stream(read, user_data);
  std::unique_ptr<ctorch::Pickled> file = ctorch::read_pickled(ctorch::ByteSource::memory(bytes.data(), bytes.size()));
  o.opt = ctorch::optim::state_dict_check(o, file->root, "the stream");
  CTORCH_CATCH
}

}  // extern "C"
