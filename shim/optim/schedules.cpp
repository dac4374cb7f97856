// Learning-rate schedules (ctorch_lr_scheduler_*): torch.optim.lr_scheduler
// in C++, the same arithmetic in the same order, so the lrs equal Python's
// step for step (tests/train/test_schedules.c checks them against the
// installed torch).
//
// Python's schedulers are chainable: a step reads each group's current lr
// and changes it (StepLR multiplies by gamma at a boundary, and so on), so
// several schedulers on one optimizer compose; the closed forms are used
// only where Python uses them (SequentialLR restarting a scheduler at a
// milestone). The group's 'initial_lr', which Python keeps in the group
// dict and every scheduler on the group shares, lives in Optim.
//
// Version differences: libtorch 1.13's Python side tested "last_epoch == 0"
// where 2.x tests "in the initial step"; they differ only when a scheduler
// is restarted at epoch 0 by SequentialLR (MultiplicativeLR, and
// CosineAnnealingWarmRestarts, which 2.x restarts without resetting T_cur):
// ctorch follows 2.x there.
#include "optim_internal.h"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

using ctorch::optim::Optim;

namespace {

using Groups = std::vector<torch::optim::OptimizerParamGroup>;

// A scheduler's state: PyTorch's LRScheduler attributes.
struct Sched {
  std::shared_ptr<Optim> o;
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
  void step() override {
    ++step_count;
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
      bool known = static_cast<int>(st) > CTORCH_OK && static_cast<int>(st) <= CTORCH_UNKNOWN;
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
bool has_momentum(ctorch_optimizer_kind k) { return k != CTORCH_OPTIM_ADAGRAD; }
void set_momentum(Optim &o, size_t i, double m) {
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
    if (idx > 0 && milestones[idx - 1] == last_epoch) s->update_lr(0);
    else s->step();
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

}  // namespace

struct ctorch_lr_scheduler_s {
  std::shared_ptr<Sched> s;
};


namespace {

using ctorch::fail_arg;

std::string num(double v) { return std::to_string(v); }

void need(bool ok, const char *field, const std::string &what) {
  if (!ok) fail_arg(field, what);
}

ctorch_lr_schedule_options defaults(ctorch_lr_schedule kind) {
  ctorch_lr_schedule_options o;
  std::memset(&o, 0, sizeof o);
  o.step_size = 1;
  o.gamma = kind == CTORCH_LR_CYCLIC ? 1.0 : 0.1;
  o.factor = kind == CTORCH_LR_REDUCE_ON_PLATEAU ? 0.1 : 1.0 / 3;
  o.start_factor = 1.0 / 3;
  o.end_factor = 1.0;
  o.total_iters = 5;
  o.power = 1.0;
  o.t_max = 1;
  o.t_0 = 1;
  o.t_mult = 1;
  o.step_size_up = 2000;
  o.mode = CTORCH_CYCLIC_TRIANGULAR;
  o.cycle_momentum = 1;
  o.base_momentum = kind == CTORCH_LR_ONE_CYCLE ? 0.85 : 0.8;
  o.max_momentum = kind == CTORCH_LR_ONE_CYCLE ? 0.95 : 0.9;
  o.pct_start = 0.3;
  o.div_factor = 25;
  o.final_div_factor = 1e4;
  o.patience = 10;
  o.threshold = 1e-4;
  o.eps = 1e-8;
  return o;
}

void check_kind(ctorch_lr_schedule kind) {
  if (static_cast<int>(kind) < 0 || static_cast<int>(kind) > CTORCH_LR_REDUCE_ON_PLATEAU)
    fail_arg("kind", "not a ctorch_lr_schedule: " + std::to_string(static_cast<int>(kind)));
}

Sched &require_sched(ctorch_lr_scheduler s, const char *arg = "s") {
  ctorch::require_ptr(s, arg);
  return *s->s;
}

// Extra inputs of the kinds with their own constructors.
struct Extra {
  const int64_t *milestones = nullptr;
  size_t n_milestones = 0;
  ctorch_lr_lambda_fn fn = nullptr;
  void *user = nullptr;
};

std::shared_ptr<Sched> build(const std::shared_ptr<Optim> &o, ctorch_lr_schedule kind, const ctorch_lr_schedule_options &p,
                             const Extra &e = Extra()) {
  const size_t ng = o->opt->param_groups().size();
  auto finite = [](double v) { return std::isfinite(v); };
  std::shared_ptr<Sched> s;
  switch (kind) {
    case CTORCH_LR_STEP: {
      need(p.step_size >= 1, "step_size", "must be >= 1, got " + std::to_string(p.step_size));
      need(finite(p.gamma), "gamma", "must be finite");
      auto x = std::make_shared<StepLR>();
      x->step_size = p.step_size, x->gamma = p.gamma, s = x;
      break;
    }
    case CTORCH_LR_MULTI_STEP: {
      need(e.n_milestones == 0 || e.milestones, "milestones", "is NULL with n_milestones > 0");
      need(finite(p.gamma), "gamma", "must be finite");
      auto x = std::make_shared<MultiStepLR>();
      x->milestones.assign(e.milestones, e.milestones + e.n_milestones);
      std::sort(x->milestones.begin(), x->milestones.end());  // Python sorts its Counter's keys
      x->gamma = p.gamma, s = x;
      break;
    }
    case CTORCH_LR_CONSTANT: {
      need(p.factor >= 0 && p.factor <= 1, "factor", "must be between 0 and 1, got " + num(p.factor));
      need(p.total_iters >= 0, "total_iters", "must be >= 0");
      auto x = std::make_shared<ConstantLR>();
      x->factor = p.factor, x->total_iters = p.total_iters, s = x;
      break;
    }
    case CTORCH_LR_LINEAR: {
      need(p.start_factor > 0 && p.start_factor <= 1, "start_factor", "must be > 0 and <= 1, got " + num(p.start_factor));
      need(p.end_factor >= 0 && p.end_factor <= 1, "end_factor", "must be between 0 and 1, got " + num(p.end_factor));
      need(p.total_iters >= 1, "total_iters", "must be >= 1");
      auto x = std::make_shared<LinearLR>();
      x->start = p.start_factor, x->end = p.end_factor, x->total_iters = p.total_iters, s = x;
      break;
    }
    case CTORCH_LR_EXPONENTIAL: {
      need(finite(p.gamma), "gamma", "must be finite");
      auto x = std::make_shared<ExponentialLR>();
      x->gamma = p.gamma, s = x;
      break;
    }
    case CTORCH_LR_POLYNOMIAL: {
      need(p.total_iters >= 1, "total_iters", "must be >= 1");
      need(finite(p.power), "power", "must be finite");
      auto x = std::make_shared<PolynomialLR>();
      x->total_iters = p.total_iters, x->power = p.power, s = x;
      break;
    }
    case CTORCH_LR_COSINE: {
      need(p.t_max >= 1, "t_max", "must be >= 1, got " + std::to_string(p.t_max));
      need(finite(p.eta_min), "eta_min", "must be finite");
      auto x = std::make_shared<CosineLR>();
      x->t_max = p.t_max, x->eta_min = p.eta_min, s = x;
      break;
    }
    case CTORCH_LR_COSINE_WARM_RESTARTS: {
      need(p.t_0 >= 1, "t_0", "must be a positive integer, got " + std::to_string(p.t_0));
      need(p.t_mult >= 1, "t_mult", "must be an integer >= 1, got " + std::to_string(p.t_mult));
      need(finite(p.eta_min), "eta_min", "must be finite");
      auto x = std::make_shared<WarmRestarts>();
      x->t_0 = p.t_0, x->t_mult = p.t_mult, x->eta_min = p.eta_min, s = x;
      break;
    }
    case CTORCH_LR_CYCLIC: {
      need(finite(p.base_lr) && p.base_lr >= 0, "base_lr", "must be set (a finite lr >= 0)");
      need(finite(p.max_lr) && p.max_lr >= 0, "max_lr", "must be set (a finite lr >= 0)");
      need(p.step_size_up >= 1, "step_size_up", "must be >= 1");
      need(p.step_size_down >= 0, "step_size_down", "must be >= 0 (0: step_size_up)");
      need(p.mode >= CTORCH_CYCLIC_TRIANGULAR && p.mode <= CTORCH_CYCLIC_EXP_RANGE, "mode", "not a ctorch_cyclic_mode");
      need(!p.cycle_momentum || has_momentum(o->kind), "cycle_momentum",
           "needs an optimizer with momentum or betas (SGD, RMSprop, Adam, AdamW)");
      auto x = std::make_shared<CyclicLR>();
      double up = static_cast<double>(p.step_size_up);
      double down = p.step_size_down ? static_cast<double>(p.step_size_down) : up;
      x->total_size = up + down, x->step_ratio = up / x->total_size, x->gamma = p.gamma, x->mode = static_cast<ctorch_cyclic_mode>(p.mode);
      x->cycle_momentum = p.cycle_momentum != 0;
      x->max_lrs.assign(ng, p.max_lr);
      // Python: every group's lr becomes base_lr before the initial lrs are
      // recorded; the momentum starts at max_momentum.
      for (size_t i = 0; i < ng; ++i) o->opt->param_groups()[i].options().set_lr(p.base_lr);
      if (x->cycle_momentum) {
        x->base_momentums.assign(ng, p.base_momentum), x->max_momentums.assign(ng, p.max_momentum);
        for (size_t i = 0; i < ng; ++i) set_momentum(*o, i, p.max_momentum);
      }
      s = x;
      break;
    }
    case CTORCH_LR_ONE_CYCLE: {
      need(p.total_steps >= 1, "total_steps", "must be set (>= 1)");
      need(finite(p.max_lr) && p.max_lr >= 0, "max_lr", "must be set (a finite lr >= 0)");
      need(p.pct_start >= 0 && p.pct_start <= 1, "pct_start", "must be between 0 and 1, got " + num(p.pct_start));
      need(finite(p.div_factor) && p.div_factor != 0, "div_factor", "must be finite and not 0");
      need(finite(p.final_div_factor) && p.final_div_factor != 0, "final_div_factor", "must be finite and not 0");
      need(!p.cycle_momentum || has_momentum(o->kind), "cycle_momentum",
           "needs an optimizer with momentum or betas (SGD, RMSprop, Adam, AdamW)");
      auto x = std::make_shared<OneCycleLR>();
      double t = static_cast<double>(p.total_steps);
      x->total_steps = p.total_steps, x->linear = p.anneal_linear != 0, x->cycle_momentum = p.cycle_momentum != 0;
      if (p.three_phase)
        x->phases = {{p.pct_start * t - 1, 0, 1, 1, 0}, {2 * p.pct_start * t - 2, 1, 0, 0, 1}, {t - 1, 0, 2, 1, 1}};
      else
        x->phases = {{p.pct_start * t - 1, 0, 1, 1, 0}, {t - 1, 1, 2, 0, 1}};
      // Python sets group['initial_lr'] itself (overriding what another scheduler recorded).
      o->initial_lr.resize(std::max(o->initial_lr.size(), ng));
      for (size_t i = 0; i < ng; ++i) {
        x->max_lrs.push_back(p.max_lr);
        x->initial_lrs.push_back(p.max_lr / p.div_factor);
        x->min_lrs.push_back(x->initial_lrs.back() / p.final_div_factor);
        o->initial_lr[i] = x->initial_lrs.back();
      }
      if (x->cycle_momentum) {
        x->base_momentums.assign(ng, p.base_momentum), x->max_momentums.assign(ng, p.max_momentum);
        for (size_t i = 0; i < ng; ++i) set_momentum(*o, i, p.max_momentum);
      }
      s = x;
      break;
    }
    case CTORCH_LR_LAMBDA:
    case CTORCH_LR_MULTIPLICATIVE: {
      need(e.fn != nullptr, "fn", "is NULL (the schedule's callback is required)");
      std::shared_ptr<LambdaBase> x;
      if (kind == CTORCH_LR_LAMBDA) x = std::make_shared<LambdaLR>();
      else x = std::make_shared<MultiplicativeLR>();
      x->fn = e.fn, x->user = e.user, s = x;
      break;
    }
    case CTORCH_LR_REDUCE_ON_PLATEAU: {
      need(p.factor < 1.0 && p.factor >= 0, "factor", "must be < 1.0 (and >= 0), got " + num(p.factor));
      need(p.patience >= 0, "patience", "must be >= 0");
      need(p.cooldown >= 0, "cooldown", "must be >= 0");
      need(finite(p.threshold), "threshold", "must be finite");
      need(finite(p.min_lr) && p.min_lr >= 0, "min_lr", "must be a finite lr >= 0");
      need(finite(p.eps) && p.eps >= 0, "eps", "must be finite and >= 0");
      auto x = std::make_shared<Plateau>();
      x->factor = p.factor, x->threshold = p.threshold, x->eps = p.eps, x->mode_max = p.mode_max != 0;
      x->threshold_abs = p.threshold_abs != 0, x->patience = p.patience, x->cooldown = p.cooldown;
      x->best = x->mode_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
      x->min_lrs.assign(ng, p.min_lr);
      x->o = o, x->kind = kind, x->last_epoch = 0;  // no initial step in PyTorch
      x->take_base_lrs();
      x->last_lr = x->current();
      return x;
    }
  }
  s->o = o;
  s->kind = kind;
  s->take_base_lrs();
  if (kind == CTORCH_LR_ONE_CYCLE) s->base_lrs = static_cast<OneCycleLR &>(*s).initial_lrs;
  if (kind == CTORCH_LR_CYCLIC) s->base_lrs.assign(ng, p.base_lr);
  s->initial_step();
  return s;
}

// Children of a sequence or chain: valid, one optimizer, not a plateau.
std::vector<std::shared_ptr<Sched>> children(const ctorch_lr_scheduler *sch, size_t n, const Optim *opt) {
  if (n == 0) fail_arg("n", "must be >= 1");
  ctorch::require_ptr(sch, "schedulers");
  std::vector<std::shared_ptr<Sched>> v;
  for (size_t i = 0; i < n; ++i) {
    if (!sch[i]) fail_arg("schedulers", "entry " + std::to_string(i) + " is NULL");
    auto &c = sch[i]->s;
    if (c->kind == CTORCH_LR_REDUCE_ON_PLATEAU)
      fail_arg("schedulers", "entry " + std::to_string(i) + " is a ReduceLROnPlateau, which cannot be sequenced");
    if (opt && c->o.get() != opt)
      fail_arg("schedulers", "entry " + std::to_string(i) + " schedules another optimizer");
    opt = c->o.get();
    v.push_back(c);
  }
  return v;
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_lr_schedule_options_default(ctorch_lr_schedule_options *out, ctorch_lr_schedule kind) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  check_kind(kind);
  *out = defaults(kind);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_new(ctorch_lr_scheduler *out, ctorch_optimizer opt, ctorch_lr_schedule kind,
                                                 const ctorch_lr_schedule_options *options) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::optim::require_opt(opt);
  check_kind(kind);
  ctorch_lr_schedule_options p = options ? *options : defaults(kind);
  if (kind == CTORCH_LR_MULTI_STEP || kind == CTORCH_LR_LAMBDA || kind == CTORCH_LR_MULTIPLICATIVE)
    fail_arg("kind", "has its own constructor (ctorch_lr_scheduler_multi_step / ctorch_lr_scheduler_lambda)");
  if (!options && (kind == CTORCH_LR_STEP || kind == CTORCH_LR_COSINE || kind == CTORCH_LR_COSINE_WARM_RESTARTS ||
                   kind == CTORCH_LR_CYCLIC || kind == CTORCH_LR_ONE_CYCLE))
    fail_arg("options", "is NULL, but this schedule needs a value PyTorch has no default for");
  auto h = std::make_unique<ctorch_lr_scheduler_s>();
  h->s = build(opt->o, kind, p);
  *out = h.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_multi_step(ctorch_lr_scheduler *out, ctorch_optimizer opt,
                                                        const int64_t *milestones, size_t n_milestones, double gamma) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::optim::require_opt(opt);
  ctorch_lr_schedule_options p = defaults(CTORCH_LR_MULTI_STEP);
  p.gamma = gamma;
  Extra e;
  e.milestones = milestones, e.n_milestones = n_milestones;
  auto h = std::make_unique<ctorch_lr_scheduler_s>();
  h->s = build(opt->o, CTORCH_LR_MULTI_STEP, p, e);
  *out = h.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_lambda(ctorch_lr_scheduler *out, ctorch_optimizer opt,
                                                    ctorch_lr_schedule kind, ctorch_lr_lambda_fn fn, void *user_data) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::optim::require_opt(opt);
  if (kind != CTORCH_LR_LAMBDA && kind != CTORCH_LR_MULTIPLICATIVE)
    fail_arg("kind", "must be CTORCH_LR_LAMBDA or CTORCH_LR_MULTIPLICATIVE, got " + std::to_string(static_cast<int>(kind)));
  Extra e;
  e.fn = fn, e.user = user_data;
  auto h = std::make_unique<ctorch_lr_scheduler_s>();
  h->s = build(opt->o, kind, defaults(kind), e);
  *out = h.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_step_lr(ctorch_lr_scheduler *out, ctorch_optimizer opt, int64_t step_size,
                                                     double gamma) {
  ctorch_lr_schedule_options o = defaults(CTORCH_LR_STEP);
  o.step_size = step_size, o.gamma = gamma;
  return ctorch_lr_scheduler_new(out, opt, CTORCH_LR_STEP, &o);
}

CTORCH_API ctorch_status ctorch_lr_scheduler_cosine(ctorch_lr_scheduler *out, ctorch_optimizer opt, int64_t t_max,
                                                    double eta_min) {
  ctorch_lr_schedule_options o = defaults(CTORCH_LR_COSINE);
  o.t_max = t_max, o.eta_min = eta_min;
  return ctorch_lr_scheduler_new(out, opt, CTORCH_LR_COSINE, &o);
}

CTORCH_API ctorch_status ctorch_lr_scheduler_sequential(ctorch_lr_scheduler *out, ctorch_optimizer opt,
                                                        const ctorch_lr_scheduler *schedulers, size_t n,
                                                        const int64_t *milestones, size_t n_milestones) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  Optim &o = ctorch::optim::require_opt(opt);
  auto v = children(schedulers, n, &o);
  if (n_milestones != n - 1)
    fail_arg("n_milestones", "must be n - 1 = " + std::to_string(n - 1) + ", got " + std::to_string(n_milestones));
  if (n_milestones) ctorch::require_ptr(milestones, "milestones");
  auto x = std::make_shared<Sequential>();
  x->milestones.assign(milestones, milestones + n_milestones);
  x->children = v;
  x->o = opt->o, x->kind = CTORCH_LR_STEP, x->last_epoch = 0;
  x->take_base_lrs();
  // PyTorch: the lrs back to the initial ones, the children's initial steps
  // undone, the first child's initial step done again.
  for (size_t i = 0; i < x->n(); ++i) o.opt->param_groups()[i].options().set_lr(o.initial_lr[i]);
  for (auto &c : v) c->last_epoch -= 1;
  v[0]->initial_step();
  x->last_lr = v[0]->last_lr;
  auto h = std::make_unique<ctorch_lr_scheduler_s>();
  h->s = x;
  *out = h.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_chained(ctorch_lr_scheduler *out, const ctorch_lr_scheduler *schedulers,
                                                     size_t n) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto v = children(schedulers, n, nullptr);
  auto x = std::make_shared<Chained>();
  x->children = v;
  x->o = v.back()->o, x->kind = CTORCH_LR_STEP, x->last_epoch = 0;
  x->take_base_lrs();
  x->last_lr = v.back()->current();
  auto h = std::make_unique<ctorch_lr_scheduler_s>();
  h->s = x;
  *out = h.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_step(ctorch_lr_scheduler s) {
  CTORCH_TRY
  Sched &x = require_sched(s);
  if (x.kind == CTORCH_LR_REDUCE_ON_PLATEAU)
    fail_arg("s", "is a ReduceLROnPlateau: step it with ctorch_lr_scheduler_step_metric");
  // A failing callback leaves the lrs as they were (the epoch too).
  auto lrs = x.current();
  int64_t epoch = x.last_epoch, count = x.step_count;
  try {
    x.step();
  } catch (...) {
    x.set(lrs);
    x.last_epoch = epoch, x.step_count = count;
    throw;
  }
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_step_metric(ctorch_lr_scheduler s, double metric) {
  CTORCH_TRY
  Sched &x = require_sched(s);
  if (x.kind != CTORCH_LR_REDUCE_ON_PLATEAU)
    fail_arg("s", "is not a ReduceLROnPlateau: step it with ctorch_lr_scheduler_step");
  static_cast<Plateau &>(x).metric(metric);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_epoch(int64_t *out, ctorch_lr_scheduler s) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = require_sched(s).last_epoch;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_get_last_lr(double *out, ctorch_lr_scheduler s, size_t group) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  Sched &x = require_sched(s);
  if (group >= x.last_lr.size())
    ctorch::fail(CTORCH_INDEX, "argument 'group': " + std::to_string(group) + " out of range for " +
                                   std::to_string(x.last_lr.size()) + " scheduled groups");
  *out = x.last_lr[group];
  CTORCH_CATCH
}

CTORCH_API void ctorch_lr_scheduler_free(ctorch_lr_scheduler s) { delete s; }

}  // extern "C"
