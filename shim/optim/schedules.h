// The schedules' state and arithmetic (schedules.cpp builds them and holds
// the C API): one struct per torch.optim.lr_scheduler class, each step the
// same arithmetic in the same order as Python's. Private to shim/optim.
#pragma once

#include "optim_internal.h"
#include "optim_py.h"
#include "serialize/serialize_value.h"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace ctorch {
namespace optim {
namespace sched {

using Groups = std::vector<torch::optim::OptimizerParamGroup>;

// A scheduler's state: PyTorch's LRScheduler attributes.
struct Sched {
  std::shared_ptr<Optim> o;
  Busy busy;  // held by every call on the scheduler's handle (core/exclusive.h)
  ctorch_lr_schedule kind;
  int64_t last_epoch = -1;
  int64_t step_count = 0;
  bool initial = false;  // inside the initial step (2.x's _is_initial)
  std::vector<double> base_lrs;
  std::vector<double> last_lr;
  virtual ~Sched() = default;
  Groups &groups() { return o->opt->param_groups(); }
  size_t n() { return base_lrs.size(); }  // groups added later are not scheduled (Python's zip)
  double lr(size_t i) { return groups()[i].options().get_lr(); }
  std::vector<double> current() {
    std::vector<double> v;
    for (size_t i = 0; i < n(); ++i) v.push_back(lr(i));
    return v;
  }
  // Python's _format_param / initial_lr: groups' initial lrs, recorded the
  // first time a scheduler sees the group.
  void take_base_lrs() {
    auto &init = o->initial_lr;
    for (size_t i = init.size(); i < groups().size(); ++i) init.push_back(lr(i));
    base_lrs.assign(init.begin(), init.begin() + static_cast<long>(groups().size()));
  }
  virtual std::vector<double> get_lr() = 0;
  virtual bool closed_form(std::vector<double> *) { return false; }
  void set(const std::vector<double> &v) {
    for (size_t i = 0; i < v.size(); ++i) groups()[i].options().set_lr(v[i]);
    last_lr = current();
  }
  // _update_lr(epoch): epoch < 0 is Python's None.
  virtual void update_lr(int64_t epoch) {
    std::vector<double> v;
    if (epoch < 0) {
      ++last_epoch;
      v = get_lr();
    } else {
      last_epoch = epoch;
      if (!closed_form(&v)) v = get_lr();
    }
    set(v);
  }
  virtual void step() {
    ++step_count;
    update_lr(-1);
  }
  void initial_step() {
    step_count = 0;
    initial = true;
    try {
      step();
    } catch (...) {
      initial = false;
      throw;
    }
    initial = false;
  }
  std::vector<double> times(double f) {
    auto v = current();
    for (auto &x : v) x *= f;
    return v;
  }
};

// ---- the schedules ----------------------------------------------------------------

struct StepLR : Sched {
  int64_t step_size;
  double gamma;
  std::vector<double> get_lr() override {
    if (last_epoch == 0 || last_epoch % step_size != 0) return current();
    return times(gamma);
  }
  bool closed_form(std::vector<double> *v) override {
    for (double b : base_lrs) v->push_back(b * std::pow(gamma, static_cast<double>(last_epoch / step_size)));
    return true;
  }
};

struct MultiStepLR : Sched {
  std::vector<int64_t> milestones;  // sorted, repeats kept (Python's Counter)
  double gamma;
  std::vector<double> get_lr() override {
    auto c = std::count(milestones.begin(), milestones.end(), last_epoch);
    if (c == 0) return current();
    return times(std::pow(gamma, static_cast<double>(c)));
  }
  bool closed_form(std::vector<double> *v) override {
    auto k = std::upper_bound(milestones.begin(), milestones.end(), last_epoch) - milestones.begin();
    for (double b : base_lrs) v->push_back(b * std::pow(gamma, static_cast<double>(k)));
    return true;
  }
};

struct ConstantLR : Sched {
  double factor;
  int64_t total_iters;
  std::vector<double> get_lr() override {
    if (last_epoch == 0) return times(factor);
    if (last_epoch != total_iters) return current();
    return times(1.0 / factor);
  }
  bool closed_form(std::vector<double> *v) override {
    for (double b : base_lrs) v->push_back(b * (factor + (last_epoch >= total_iters) * (1.0 - factor)));
    return true;
  }
};

struct LinearLR : Sched {
  double start, end;
  int64_t total_iters;
  std::vector<double> get_lr() override {
    if (last_epoch == 0) return times(start);
    if (initial || last_epoch > total_iters) return current();
    return times(1.0 + (end - start) / (static_cast<double>(total_iters) * start +
                                        static_cast<double>(last_epoch - 1) * (end - start)));
  }
  bool closed_form(std::vector<double> *v) override {
    for (double b : base_lrs)
      v->push_back(b * (start + (end - start) * static_cast<double>(std::min(total_iters, last_epoch)) /
                                    static_cast<double>(total_iters)));
    return true;
  }
};

struct ExponentialLR : Sched {
  double gamma;
  std::vector<double> get_lr() override {
    if (initial) return current();
    return times(gamma);
  }
  bool closed_form(std::vector<double> *v) override {
    for (double b : base_lrs) v->push_back(b * std::pow(gamma, static_cast<double>(last_epoch)));
    return true;
  }
};

struct PolynomialLR : Sched {
  int64_t total_iters;
  double power;
  std::vector<double> get_lr() override {
    if (initial || last_epoch > total_iters) return current();
    double t = static_cast<double>(total_iters), e = static_cast<double>(last_epoch);
    return times(std::pow((1.0 - e / t) / (1.0 - (e - 1) / t), power));
  }
  bool closed_form(std::vector<double> *v) override {
    double t = static_cast<double>(total_iters);
    for (double b : base_lrs)
      v->push_back(b * std::pow(1.0 - static_cast<double>(std::min(total_iters, last_epoch)) / t, power));
    return true;
  }
};

struct CosineLR : Sched {
  int64_t t_max;
  double eta_min;
  std::vector<double> get_lr() override {
    double T = static_cast<double>(t_max), e = static_cast<double>(last_epoch);
    std::vector<double> v;
    if (initial) return current();
    if (step_count == 1 && last_epoch > 0) {
      for (double b : base_lrs) v.push_back(eta_min + (b - eta_min) * (1 + std::cos(e * M_PI / T)) / 2);
      return v;
    }
    if ((last_epoch - 1 - t_max) % (2 * t_max) == 0) {
      for (size_t i = 0; i < n(); ++i) v.push_back(lr(i) + (base_lrs[i] - eta_min) * (1 - std::cos(M_PI / T)) / 2);
      return v;
    }
    for (size_t i = 0; i < n(); ++i)
      v.push_back((1 + std::cos(M_PI * e / T)) / (1 + std::cos(M_PI * (e - 1) / T)) * (lr(i) - eta_min) + eta_min);
    return v;
  }
  bool closed_form(std::vector<double> *v) override {
    double T = static_cast<double>(t_max), e = static_cast<double>(last_epoch);
    for (double b : base_lrs) v->push_back(eta_min + (b - eta_min) * (1 + std::cos(M_PI * e / T)) / 2);
    return true;
  }
};

struct WarmRestarts : Sched {
  int64_t t_0, t_mult;
  double eta_min;
  double t_i = 0, t_cur = 0;  // Python keeps T_cur a number (a float after step(epoch))
  std::vector<double> get_lr() override {
    std::vector<double> v;
    for (double b : base_lrs) v.push_back(eta_min + (b - eta_min) * (1 + std::cos(M_PI * t_cur / t_i)) / 2);
    return v;
  }
  // Python's step() here replaces LRScheduler.step, so _step_count stays 0.
  void step() override {
    int64_t epoch;
    if (last_epoch < 0) {
      epoch = 0;  // Python: step(None) before any step is step(0)
      t_i = static_cast<double>(t_0);
      t_cur = 0;
    } else {
      epoch = last_epoch + 1;
      t_cur = t_cur + 1;
      if (t_cur >= t_i) {
        t_cur = std::fmod(t_cur, t_i);
        t_i = t_i * static_cast<double>(t_mult);
      }
    }
    last_epoch = epoch;
    set(get_lr());
  }
};

// Callbacks: the caller's status, the lrs unchanged.
struct LambdaBase : Sched {
  ctorch_lr_lambda_fn fn;
  void *user;
  double factor(size_t group) {
    double f = 0;
    ctorch_status st = fn(user, last_epoch, group, &f);
    if (st != CTORCH_OK) {
      // The callback's own status when it is one, else RUNTIME.
      bool known = static_cast<int>(st) > CTORCH_OK && static_cast<int>(st) <= CTORCH_BUSY;
      ctorch::fail(known ? st : CTORCH_RUNTIME, "the lr_lambda callback returned " +
                                                   std::string(ctorch_status_name(st)) + " at epoch " +
                                                   std::to_string(last_epoch) + " for group " + std::to_string(group));
    }

    return f;
  }
};
struct LambdaLR : LambdaBase {
  std::vector<double> get_lr() override {
    std::vector<double> v;
    for (size_t i = 0; i < n(); ++i) v.push_back(base_lrs[i] * factor(i));
    return v;
  }
};
struct MultiplicativeLR : LambdaBase {
  std::vector<double> get_lr() override {
    if (initial) return current();
    std::vector<double> v;
    for (size_t i = 0; i < n(); ++i) v.push_back(lr(i) * factor(i));
    return v;
  }
};

// Momentum of a group as CyclicLR / OneCycleLR cycle it: SGD's and
// RMSprop's momentum, Adam's and AdamW's beta1 (Python's use_beta1).
// NAdam, RAdam, Adamax have betas (Python cycles their beta1); Adadelta and
// LBFGS neither (Python's CyclicLR/OneCycleLR refuse them).
inline bool has_momentum(ctorch_optimizer_kind k) {
  return k != CTORCH_OPTIM_ADAGRAD && k != CTORCH_OPTIM_ADADELTA && k != CTORCH_OPTIM_LBFGS;
}
inline void set_momentum(Optim &o, size_t i, double m) {
  auto &opts = o.opt->param_groups()[i].options();
  switch (o.kind) {
    case CTORCH_OPTIM_SGD: static_cast<torch::optim::SGDOptions &>(opts).momentum(m); break;
    case CTORCH_OPTIM_RMSPROP: static_cast<torch::optim::RMSpropOptions &>(opts).momentum(m); break;
    case CTORCH_OPTIM_ADAM: {
      auto &a = static_cast<torch::optim::AdamOptions &>(opts);
      a.betas(std::make_tuple(m, std::get<1>(a.betas())));
      break;
    }
    case CTORCH_OPTIM_ADAMW: {
      auto &a = static_cast<torch::optim::AdamWOptions &>(opts);
      a.betas(std::make_tuple(m, std::get<1>(a.betas())));
      break;
    }
    case CTORCH_OPTIM_NADAM:
    case CTORCH_OPTIM_RADAM:
    case CTORCH_OPTIM_ADAMAX: static_cast<PyOptions &>(opts).o.beta1 = m; break;
    default: break;
  }
}

struct CyclicLR : Sched {
  double total_size, step_ratio, gamma;
  ctorch_cyclic_mode mode;
  bool cycle_momentum;
  std::vector<double> max_lrs, base_momentums, max_momentums;
  double scale_fn(double x) {
    if (mode == CTORCH_CYCLIC_TRIANGULAR) return 1.0;
    if (mode == CTORCH_CYCLIC_TRIANGULAR2) return 1 / std::pow(2.0, x - 1);
    return std::pow(gamma, x);
  }
  std::vector<double> get_lr() override {
    double e = static_cast<double>(last_epoch);
    double cycle = std::floor(1 + e / total_size);
    double x = 1.0 + e / total_size - cycle;
    double scale = x <= step_ratio ? x / step_ratio : (x - 1) / (step_ratio - 1);
    double s = scale_fn(mode == CTORCH_CYCLIC_EXP_RANGE ? e : cycle);
    std::vector<double> v;
    for (size_t i = 0; i < n(); ++i) v.push_back(base_lrs[i] + (max_lrs[i] - base_lrs[i]) * scale * s);
    if (cycle_momentum)
      for (size_t i = 0; i < n(); ++i)
        set_momentum(*o, i, max_momentums[i] - (max_momentums[i] - base_momentums[i]) * scale * s);
    return v;
  }
};

struct OneCycleLR : Sched {
  struct Phase {
    double end_step;
    int start_lr, end_lr, start_m, end_m;  // 0 initial/base, 1 max, 2 min
  };
  std::vector<Phase> phases;
  int64_t total_steps;
  bool linear, cycle_momentum;
  std::vector<double> initial_lrs, max_lrs, min_lrs, base_momentums, max_momentums;
  double anneal(double start, double end, double pct) {
    if (linear) return (end - start) * pct + start;
    double cos_out = std::cos(M_PI * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }
  double lr_of(int which, size_t i) { return which == 0 ? initial_lrs[i] : which == 1 ? max_lrs[i] : min_lrs[i]; }
  double m_of(int which, size_t i) { return which == 0 ? base_momentums[i] : max_momentums[i]; }
  std::vector<double> get_lr() override {
    if (last_epoch > total_steps)
      ctorch::fail(CTORCH_VALUE, "stepped " + std::to_string(last_epoch) + " times; total_steps is " +
                                     std::to_string(total_steps) + " (as PyTorch's OneCycleLR refuses)");
    std::vector<double> v;
    double step_num = static_cast<double>(last_epoch);
    for (size_t i = 0; i < n(); ++i) {
      double start_step = 0.0, lr = 0, m = 0;
      for (size_t k = 0; k < phases.size(); ++k) {
        const Phase &p = phases[k];
        if (step_num <= p.end_step || k == phases.size() - 1) {
          double pct = (step_num - start_step) / (p.end_step - start_step);
          lr = anneal(lr_of(p.start_lr, i), lr_of(p.end_lr, i), pct);
          if (cycle_momentum) m = anneal(m_of(p.start_m, i), m_of(p.end_m, i), pct);
          break;
        }
        start_step = p.end_step;
      }
      v.push_back(lr);
      if (cycle_momentum) set_momentum(*o, i, m);
    }
    return v;
  }
};

struct Plateau : Sched {
  double factor, threshold, eps, best;
  bool mode_max, threshold_abs;
  int64_t patience, cooldown, cooldown_counter = 0, num_bad = 0;
  std::vector<double> min_lrs;
  std::vector<double> get_lr() override { return current(); }
  bool better(double a) const {
    if (!mode_max) return threshold_abs ? a < best - threshold : a < best * (1.0 - threshold);
    return threshold_abs ? a > best + threshold : a > best * (threshold + 1.0);
  }
  void metric(double current_) {
    last_epoch = last_epoch + 1;
    if (better(current_)) {
      best = current_;
      num_bad = 0;
    } else {
      ++num_bad;
    }
    if (cooldown_counter > 0) {
      --cooldown_counter;
      num_bad = 0;
    }
    if (num_bad > patience) {
      for (size_t i = 0; i < n(); ++i) {
        double old_lr = lr(i), new_lr = std::max(old_lr * factor, min_lrs[i]);
        if (old_lr - new_lr > eps) groups()[i].options().set_lr(new_lr);
      }
      cooldown_counter = cooldown;
      num_bad = 0;
    }
    last_lr = current();
  }
};

struct Sequential : Sched {
  std::vector<std::shared_ptr<Sched>> children;
  std::vector<int64_t> milestones;
  std::vector<double> get_lr() override { return current(); }
  void step() override {
    ++last_epoch;
    size_t idx = static_cast<size_t>(std::upper_bound(milestones.begin(), milestones.end(), last_epoch) -
                                     milestones.begin());
    auto &s = children[idx];
    if (idx > 0 && milestones[idx - 1] == last_epoch) {
      // torch 1.13 restarts with step(0), which counts as a step (not in
      // CosineAnnealingWarmRestarts, whose step() does not count); 2.x with
      // _update_lr(0), which does not (compat.h's CTORCH_COMPAT_SCHED_STATE_1_13:
      // the difference shows in the state's _step_count).
      if (CTORCH_COMPAT_SCHED_STATE_1_13 && !dynamic_cast<WarmRestarts *>(s.get())) ++s->step_count;
      s->update_lr(0);
    } else {
      s->step();
    }
    last_lr = s->last_lr;
  }
};

struct Chained : Sched {
  std::vector<std::shared_ptr<Sched>> children;
  std::vector<double> get_lr() override { return current(); }
  void step() override {
    for (auto &s : children) s->step();
    last_lr = children.back()->current();
  }
};

}  // namespace sched
}  // namespace optim
}  // namespace ctorch

// The C handle (schedules.cpp makes them; schedules_state.cpp saves and loads them).
struct ctorch_lr_scheduler_s {
  std::shared_ptr<ctorch::optim::sched::Sched> s;
  ctorch::Live<ctorch_lr_scheduler_s> live{this};  // last: see core/internal.h
};

namespace ctorch {
namespace optim {
namespace sched {
// The scheduler's state as Python's scheduler.state_dict() (schedules_state.cpp).
P state_dict(Sched &s);
// Checks d against s's class (apply false), or loads it (apply true; after
// a check). Throws StatusError(VALUE) naming the key.
void load_state_dict(Sched &s, const PV &d, bool apply);
}  // namespace sched
}  // namespace optim
}  // namespace ctorch
