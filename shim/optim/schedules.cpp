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
#include "schedules.h"

#include <cstring>
#include <limits>

using ctorch::optim::Optim;
using namespace ctorch::optim::sched;


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

// A scheduler held for the call, with its optimizer (a step writes the
// optimizer's lrs): `HeldSched h(s); Sched &x = h.x;` (core/exclusive.h).
struct HeldSched {
  explicit HeldSched(ctorch_lr_scheduler s)
      : x(require_sched(s)), mine(x.busy, "s", s), opt(x.o->busy, "s (its optimizer)", s) {}
  Sched &x;
  ctorch::Exclusive mine, opt;
};

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
           "needs an optimizer with momentum or betas (SGD, RMSprop, Adam, AdamW, NAdam, RAdam, Adamax)");
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
           "needs an optimizer with momentum or betas (SGD, RMSprop, Adam, AdamW, NAdam, RAdam, Adamax)");
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
      // The keys Python's OneCycleLR keeps in each group (state files carry them).
      o->group_keys.resize(std::max(o->group_keys.size(), ng));
      for (size_t i = 0; i < ng; ++i) {
        auto &k = o->group_keys[i];
        k.clear();
        k.emplace_back("max_lr", x->max_lrs[i]);
        k.emplace_back("min_lr", x->min_lrs[i]);
        if (x->cycle_momentum) k.emplace_back("max_momentum", p.max_momentum), k.emplace_back("base_momentum", p.base_momentum);
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
    ctorch::check_handle(sch[i], "schedulers");
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

// The body of ctorch_lr_scheduler_new, shared with ctorch_lr_scheduler_step_lr
// and _cosine: it throws, so that each entry point's own CTORCH_TRY names
// the function the caller called in the message (not ctorch_lr_scheduler_new).
void new_scheduler(ctorch_lr_scheduler *out, ctorch_optimizer opt, ctorch_lr_schedule kind,
                   const ctorch_lr_schedule_options *options) {
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::optim::Held held_opt(opt);
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
  new_scheduler(out, opt, kind, options);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_multi_step(ctorch_lr_scheduler *out, ctorch_optimizer opt,
                                                        const int64_t *milestones, size_t n_milestones, double gamma) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::optim::Held held_opt(opt);
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
  ctorch::optim::Held held_opt(opt);
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
  CTORCH_TRY
  ctorch_lr_schedule_options o = defaults(CTORCH_LR_STEP);
  o.step_size = step_size, o.gamma = gamma;
  new_scheduler(out, opt, CTORCH_LR_STEP, &o);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_cosine(ctorch_lr_scheduler *out, ctorch_optimizer opt, int64_t t_max,
                                                    double eta_min) {
  CTORCH_TRY
  ctorch_lr_schedule_options o = defaults(CTORCH_LR_COSINE);
  o.t_max = t_max, o.eta_min = eta_min;
  new_scheduler(out, opt, CTORCH_LR_COSINE, &o);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_sequential(ctorch_lr_scheduler *out, ctorch_optimizer opt,
                                                        const ctorch_lr_scheduler *schedulers, size_t n,
                                                        const int64_t *milestones, size_t n_milestones) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::optim::Held held_opt(opt);
  Optim &o = held_opt.o;
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
  HeldSched held(s);
  Sched &x = held.x;
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
  HeldSched held(s);
  Sched &x = held.x;
  if (x.kind != CTORCH_LR_REDUCE_ON_PLATEAU)
    fail_arg("s", "is not a ReduceLROnPlateau: step it with ctorch_lr_scheduler_step");
  static_cast<Plateau &>(x).metric(metric);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_epoch(int64_t *out, ctorch_lr_scheduler s) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  HeldSched held(s);
  *out = held.x.last_epoch;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_get_last_lr(double *out, ctorch_lr_scheduler s, size_t group) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  HeldSched held(s);
  Sched &x = held.x;
  if (group >= x.last_lr.size())
    ctorch::fail(CTORCH_INDEX, "argument 'group': " + std::to_string(group) + " out of range for " +
                                   std::to_string(x.last_lr.size()) + " scheduled groups");
  *out = x.last_lr[group];
  CTORCH_CATCH
}

CTORCH_API void ctorch_lr_scheduler_free(ctorch_lr_scheduler s) {
  // A handle in use by another thread's call is not freed (core/exclusive.h).
  if (s && ctorch::handle_kind_of(s) == ctorch::HandleKind::lr_scheduler && s->s &&
      !ctorch::free_allowed(s->s->busy, __func__, s))
    return;
  if (ctorch::release_handle(s, __func__)) {
    // A chained or sequential scheduler may share this one's state.
    if (s->s) s->s->busy.owner.store(nullptr, std::memory_order_release);
    delete s;
  }
}

}  // extern "C"
