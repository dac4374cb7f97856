// A scheduler's state in the layout of Python's scheduler.state_dict()
// (ctorch_lr_scheduler_save_state_dict / _load_state_dict), written in
// torch.save's format, so a run moves between C and Python mid-schedule:
// Python's load_state_dict is __dict__.update(state), so a file carries
// every attribute Python's object has, under Python's names, in the order
// Python's __init__ sets them (its dict's order). The keys differ between
// PyTorch versions (compat.h: CTORCH_COMPAT_SCHED_STATE_1_13);
// tests/train/schedules_vs_torch.py compares the files with the installed
// torch's state_dict() and continues each schedule on the other side.
//
// Loading is two passes over the file: the first checks every key of every
// (nested) scheduler, the second assigns, so a file that does not fit
// leaves the scheduler as it was.
#include "schedules.h"

#include <cmath>
#include <set>

using ctorch::P;
using ctorch::PV;
using namespace ctorch::optim::sched;

namespace {

constexpr bool kV1 = CTORCH_COMPAT_SCHED_STATE_1_13;

using ctorch::value::str;
P reals(const std::vector<double> &v) {
  std::vector<P> x;
  for (double f : v) x.push_back(PV::real(f));
  return PV::list(std::move(x));
}
// Python keeps T_i and T_cur ints until step(epoch) makes them floats.
P number(double x) {
  if (std::floor(x) == x && std::fabs(x) < 9007199254740992.0) return PV::integer(static_cast<int64_t>(x));
  return PV::real(x);
}

const char *class_name(Sched &s) {
  if (dynamic_cast<StepLR *>(&s)) return "StepLR";
  if (dynamic_cast<MultiStepLR *>(&s)) return "MultiStepLR";
  if (dynamic_cast<ConstantLR *>(&s)) return "ConstantLR";
  if (dynamic_cast<LinearLR *>(&s)) return "LinearLR";
  if (dynamic_cast<ExponentialLR *>(&s)) return "ExponentialLR";
  if (dynamic_cast<PolynomialLR *>(&s)) return "PolynomialLR";
  if (dynamic_cast<CosineLR *>(&s)) return "CosineAnnealingLR";
  if (dynamic_cast<WarmRestarts *>(&s)) return "CosineAnnealingWarmRestarts";
  if (dynamic_cast<LambdaLR *>(&s)) return "LambdaLR";
  if (dynamic_cast<MultiplicativeLR *>(&s)) return "MultiplicativeLR";
  if (dynamic_cast<CyclicLR *>(&s)) return "CyclicLR";
  if (dynamic_cast<OneCycleLR *>(&s)) return "OneCycleLR";
  if (dynamic_cast<Plateau *>(&s)) return "ReduceLROnPlateau";
  if (dynamic_cast<Sequential *>(&s)) return "SequentialLR";
  return "ChainedScheduler";
}

const char *cyclic_mode(ctorch_cyclic_mode m) {
  return m == CTORCH_CYCLIC_TRIANGULAR ? "triangular" : m == CTORCH_CYCLIC_TRIANGULAR2 ? "triangular2" : "exp_range";
}
// Python's use_beta1: "betas" in optimizer.defaults.
bool uses_beta1(Sched &s) {
  switch (s.o->kind) {
    case CTORCH_OPTIM_ADAM:
    case CTORCH_OPTIM_ADAMW:
    case CTORCH_OPTIM_NADAM:
    case CTORCH_OPTIM_RADAM:
    case CTORCH_OPTIM_ADAMAX: return true;
    default: return false;
  }
}

// LRScheduler's own attributes, after the subclass's (its __init__ calls
// super().__init__ last).
void base_tail(Sched &s, PV &d) {
  d.put(str("base_lrs"), reals(s.base_lrs));
  d.put(str("last_epoch"), PV::integer(s.last_epoch));
  if (kV1) d.put(str("verbose"), PV::boolean(false));
  d.put(str("_step_count"), PV::integer(s.step_count));
  if (!kV1) d.put(str("_is_initial"), PV::boolean(false));
  d.put(str("_get_lr_called_within_step"), PV::boolean(false));
  d.put(str("_last_lr"), reals(s.last_lr));
}

P one_cycle_phases(OneCycleLR &x) {
  static const char *lrs[] = {"initial_lr", "max_lr", "min_lr"};
  static const char *ms[] = {"base_momentum", "max_momentum"};
  std::vector<P> v;
  for (size_t k = 0; k < x.phases.size(); ++k) {
    const auto &p = x.phases[k];
    P d = PV::dict();
    // Python: float(pct * total) - 1 for the first phases, total_steps - 1 (an int) for the last.
    d->put(str("end_step"), k + 1 == x.phases.size() ? PV::integer(x.total_steps - 1) : PV::real(p.end_step));
    d->put(str("start_lr"), str(lrs[p.start_lr]));
    d->put(str("end_lr"), str(lrs[p.end_lr]));
    d->put(str("start_momentum"), str(ms[p.start_m]));
    d->put(str("end_momentum"), str(ms[p.end_m]));
    v.push_back(d);
  }
  return PV::list(std::move(v));
}

void plateau_state(Plateau &x, PV &d) {
  const double worse = x.mode_max ? -INFINITY : INFINITY;
  const char *mode = x.mode_max ? "max" : "min", *tmode = x.threshold_abs ? "abs" : "rel";
  d.put(str("factor"), PV::real(x.factor));
  if (kV1) {
    d.put(str("min_lrs"), reals(x.min_lrs));
    d.put(str("patience"), PV::integer(x.patience));
    d.put(str("verbose"), PV::boolean(false));
    d.put(str("cooldown"), PV::integer(x.cooldown));
    d.put(str("cooldown_counter"), PV::integer(x.cooldown_counter));
    d.put(str("mode"), str(mode));
    d.put(str("threshold"), PV::real(x.threshold));
    d.put(str("threshold_mode"), str(tmode));
    d.put(str("best"), PV::real(x.best));
    d.put(str("num_bad_epochs"), PV::integer(x.num_bad));
    d.put(str("mode_worse"), PV::real(worse));
    d.put(str("eps"), PV::real(x.eps));
    d.put(str("last_epoch"), PV::integer(x.last_epoch));
    if (x.last_epoch > 0) d.put(str("_last_lr"), reals(x.last_lr));  // set by 1.13's step(), not its __init__
    return;
  }
  // ctorch takes one min_lr for every group: Python's default_min_lr.
  d.put(str("default_min_lr"), PV::real(x.min_lrs.empty() ? 0.0 : x.min_lrs[0]));
  d.put(str("min_lrs"), reals(x.min_lrs));
  d.put(str("patience"), PV::integer(x.patience));
  d.put(str("cooldown"), PV::integer(x.cooldown));
  d.put(str("eps"), PV::real(x.eps));
  d.put(str("last_epoch"), PV::integer(x.last_epoch));
  d.put(str("_last_lr"), reals(x.last_lr));
  d.put(str("mode_worse"), PV::real(worse));
  d.put(str("mode"), str(mode));
  d.put(str("threshold"), PV::real(x.threshold));
  d.put(str("threshold_mode"), str(tmode));
  d.put(str("best"), PV::real(x.best));
  d.put(str("cooldown_counter"), PV::integer(x.cooldown_counter));
  d.put(str("num_bad_epochs"), PV::integer(x.num_bad));
}

void cyclic_state(CyclicLR &x, PV &d) {
  d.put(str("max_lrs"), reals(x.max_lrs));
  d.put(str("total_size"), PV::real(x.total_size));
  d.put(str("step_ratio"), PV::real(x.step_ratio));
  d.put(str("mode"), str(cyclic_mode(x.mode)));
  d.put(str("gamma"), PV::real(x.gamma));
  if (kV1) d.put(str("_scale_fn_custom"), PV::none());  // (and a weak method, left out: not data)
  d.put(str("scale_mode"), str(x.mode == CTORCH_CYCLIC_EXP_RANGE ? "iterations" : "cycle"));
  d.put(str("cycle_momentum"), PV::boolean(x.cycle_momentum));
  if (x.cycle_momentum) {
    if (!kV1) d.put(str("use_beta1"), PV::boolean(uses_beta1(x)));
    d.put(str("base_momentums"), reals(x.base_momentums));
    d.put(str("max_momentums"), reals(x.max_momentums));
  }
  base_tail(x, d);
  if (!kV1) d.put(str("_scale_fn_custom"), PV::none());
}

}  // namespace

namespace ctorch {
namespace optim {
namespace sched {

P state_dict(Sched &s) {
  P p = PV::dict();
  PV &d = *p;
  if (auto *x = dynamic_cast<Plateau *>(&s)) {
    plateau_state(*x, d);
  } else if (auto *x = dynamic_cast<Sequential *>(&s)) {
    std::vector<P> ms, cs;
    for (int64_t m : x->milestones) ms.push_back(PV::integer(m));
    for (auto &c : x->children) cs.push_back(state_dict(*c));
    d.put(str("_milestones"), PV::list(std::move(ms)));
    d.put(str("last_epoch"), PV::integer(x->last_epoch));
    d.put(str("_last_lr"), reals(x->last_lr));
    d.put(str("_schedulers"), PV::list(std::move(cs)));
  } else if (auto *x = dynamic_cast<Chained *>(&s)) {
    std::vector<P> cs;
    for (auto &c : x->children) cs.push_back(state_dict(*c));
    d.put(str("_last_lr"), reals(x->last_lr));
    d.put(str("_schedulers"), PV::list(std::move(cs)));
  } else if (auto *x = dynamic_cast<CyclicLR *>(&s)) {
    cyclic_state(*x, d);
  } else {
    if (auto *x = dynamic_cast<StepLR *>(&s)) {
      d.put(str("step_size"), PV::integer(x->step_size));
      d.put(str("gamma"), PV::real(x->gamma));
    } else if (auto *x = dynamic_cast<MultiStepLR *>(&s)) {
      P c = PV::dict();
      c->counter = true;
      for (size_t i = 0; i < x->milestones.size();) {
        size_t j = i;
        while (j < x->milestones.size() && x->milestones[j] == x->milestones[i]) ++j;
        c->put(PV::integer(x->milestones[i]), PV::integer(static_cast<int64_t>(j - i)));
        i = j;
      }
      d.put(str("milestones"), c);
      d.put(str("gamma"), PV::real(x->gamma));
    } else if (auto *x = dynamic_cast<ConstantLR *>(&s)) {
      d.put(str("factor"), PV::real(x->factor));
      d.put(str("total_iters"), PV::integer(x->total_iters));
    } else if (auto *x = dynamic_cast<LinearLR *>(&s)) {
      d.put(str("start_factor"), PV::real(x->start));
      d.put(str("end_factor"), PV::real(x->end));
      d.put(str("total_iters"), PV::integer(x->total_iters));
    } else if (auto *x = dynamic_cast<ExponentialLR *>(&s)) {
      d.put(str("gamma"), PV::real(x->gamma));
    } else if (auto *x = dynamic_cast<PolynomialLR *>(&s)) {
      d.put(str("total_iters"), PV::integer(x->total_iters));
      d.put(str("power"), PV::real(x->power));
    } else if (auto *x = dynamic_cast<CosineLR *>(&s)) {
      d.put(str("T_max"), PV::integer(x->t_max));
      d.put(str("eta_min"), PV::real(x->eta_min));
    } else if (auto *x = dynamic_cast<WarmRestarts *>(&s)) {
      d.put(str("T_0"), PV::integer(x->t_0));
      d.put(str("T_i"), number(x->t_i));
      d.put(str("T_mult"), PV::integer(x->t_mult));
      d.put(str("eta_min"), PV::real(x->eta_min));
      d.put(str("T_cur"), number(x->t_cur));
    } else if (auto *x = dynamic_cast<OneCycleLR *>(&s)) {
      d.put(str("total_steps"), PV::integer(x->total_steps));
      d.put(str("_schedule_phases"), one_cycle_phases(*x));
      if (!kV1) d.put(str("_anneal_func_type"), str(x->linear ? "linear" : "cos"));  // 1.13: a bound method, left out
      d.put(str("cycle_momentum"), PV::boolean(x->cycle_momentum));
      if (x->cycle_momentum) d.put(str("use_beta1"), PV::boolean(uses_beta1(*x)));
    }
    base_tail(s, d);
    if (dynamic_cast<LambdaBase *>(&s)) {
      // Python saves a plain function as None (only callable objects' __dict__ is state).
      d.put(str("lr_lambdas"), PV::list(std::vector<P>(s.base_lrs.size(), PV::none())));
    }
  }
  return p;
}

namespace {

// One scheduler's dict being checked or loaded.
struct In {
  const PV &d;
  std::string where;  // "ExponentialLR" or "SequentialLR._schedulers[1] (ExponentialLR)"
  [[noreturn]] void bad(const std::string &key, const std::string &what) const {
    ctorch::fail(CTORCH_VALUE, where + ": '" + key + "' " + what);
  }
  const PV &get(const char *k) const {
    const P *v = d.find(k);
    if (!v) bad(k, "is missing");
    return **v;
  }
  bool has(const char *k) const { return d.find(k) != nullptr; }
  double real(const char *k) const {
    const PV &v = get(k);
    if (v.kind == PV::Float) return v.f;
    if (v.kind == PV::Int) return static_cast<double>(v.i);
    bad(k, std::string("is a ") + ctorch::pickle_type_name(v.kind) + ", not a number");
  }
  int64_t integer(const char *k) const {
    const PV &v = get(k);
    if (v.kind != PV::Int) bad(k, std::string("is a ") + ctorch::pickle_type_name(v.kind) + ", not an int");
    return v.i;
  }
  bool boolean(const char *k) const {
    const PV &v = get(k);
    if (v.kind != PV::Bool) bad(k, std::string("is a ") + ctorch::pickle_type_name(v.kind) + ", not a bool");
    return v.i != 0;
  }
  std::string text(const char *k) const {
    const PV &v = get(k);
    if (v.kind != PV::Str) bad(k, std::string("is a ") + ctorch::pickle_type_name(v.kind) + ", not a str");
    return v.s;
  }
  const std::vector<P> &list(const char *k, size_t n) const {
    const PV &v = get(k);
    if (v.kind != PV::List && v.kind != PV::Tuple) bad(k, std::string("is a ") + ctorch::pickle_type_name(v.kind) + ", not a list");
    if (n != SIZE_MAX && v.items.size() != n)
      bad(k, "has " + std::to_string(v.items.size()) + " entries; the scheduler has " + std::to_string(n));
    return v.items;
  }
  std::vector<double> reals(const char *k, size_t n) const {
    std::vector<double> out;
    for (const P &e : list(k, n)) {
      if (e->kind == PV::Float) out.push_back(e->f);
      else if (e->kind == PV::Int) out.push_back(static_cast<double>(e->i));
      else bad(k, "holds a " + std::string(ctorch::pickle_type_name(e->kind)) + ", not a number (a tensor lr is not supported)");
    }
    return out;
  }
};

// Keys one version has and the other has not, or that are code (not
// loaded): accepted from either version's files.
const std::set<std::string> kEitherVersion = {"verbose",     "_is_initial",       "_scale_fn_ref",   "_scale_fn_custom",
                                              "anneal_func", "_anneal_func_type", "default_min_lr",  "use_beta1",
                                              "lr_lambdas",  "_get_lr_called_within_step", "scale_mode",
                                              "_last_lr"};  // (ReduceLROnPlateau 1.13: only once stepped)

void check_keys(Sched &s, const In &in) {
  if (in.d.kind != PV::Dict) ctorch::fail(CTORCH_VALUE, in.where + ": not a dict but a " + ctorch::pickle_type_name(in.d.kind));
  P mine = state_dict(s);
  std::set<std::string> known;
  for (size_t j = 0; j < mine->items.size(); j += 2) known.insert(mine->items[j]->s);
  for (size_t j = 0; j < in.d.items.size(); j += 2) {
    const PV &k = *in.d.items[j];
    if (k.kind != PV::Str) ctorch::fail(CTORCH_VALUE, in.where + ": a key is a " + std::string(ctorch::pickle_type_name(k.kind)));
    if (!known.count(k.s) && !kEitherVersion.count(k.s))
      in.bad(k.s, std::string("is not an attribute of ") + class_name(s) + " (a file of another scheduler?)");
  }
  for (const auto &k : known)
    if (!kEitherVersion.count(k) && !in.has(k.c_str())) in.bad(k, "is missing");
}

void load_base(Sched &s, const In &in, bool apply) {
  size_t n = s.base_lrs.size();
  auto base = in.reals("base_lrs", n);
  int64_t last_epoch = in.integer("last_epoch"), steps = in.integer("_step_count");
  auto last = in.reals("_last_lr", n);
  if (!apply) return;
  s.base_lrs = base, s.last_epoch = last_epoch, s.step_count = steps, s.last_lr = last;
}

void load(Sched &s, const PV &d, const std::string &where, bool apply) {
  In in{d, where};
  check_keys(s, in);
  const size_t n = s.base_lrs.size();
  if (auto *x = dynamic_cast<Plateau *>(&s)) {
    double factor = in.real("factor"), threshold = in.real("threshold"), best = in.real("best"), eps = in.real("eps");
    auto min_lrs = in.reals("min_lrs", n);
    int64_t patience = in.integer("patience"), cooldown = in.integer("cooldown"), cc = in.integer("cooldown_counter");
    int64_t bad = in.integer("num_bad_epochs"), le = in.integer("last_epoch");
    std::string mode = in.text("mode"), tmode = in.text("threshold_mode");
    if (mode != "min" && mode != "max") in.bad("mode", "is '" + mode + "', not 'min' or 'max'");
    if (tmode != "rel" && tmode != "abs") in.bad("threshold_mode", "is '" + tmode + "', not 'rel' or 'abs'");
    std::vector<double> last = in.has("_last_lr") ? in.reals("_last_lr", n) : x->last_lr;
    if (!apply) return;
    x->factor = factor, x->threshold = threshold, x->best = best, x->eps = eps, x->min_lrs = min_lrs;
    x->patience = patience, x->cooldown = cooldown, x->cooldown_counter = cc, x->num_bad = bad, x->last_epoch = le;
    x->mode_max = mode == "max", x->threshold_abs = tmode == "abs", x->last_lr = last;
    return;
  }
  auto composite = [&](std::vector<std::shared_ptr<Sched>> &children) {
    const auto &cs = in.list("_schedulers", children.size());
    for (size_t i = 0; i < cs.size(); ++i)
      load(*children[i], *cs[i],
           where + "._schedulers[" + std::to_string(i) + "] (" + class_name(*children[i]) + ")", apply);
  };
  if (auto *x = dynamic_cast<Sequential *>(&s)) {
    std::vector<int64_t> ms;
    for (const P &m : in.list("_milestones", x->milestones.size())) {
      if (m->kind != PV::Int) in.bad("_milestones", "holds a " + std::string(ctorch::pickle_type_name(m->kind)));
      ms.push_back(m->i);
    }
    int64_t le = in.integer("last_epoch");
    auto last = in.reals("_last_lr", n);
    composite(x->children);
    if (apply) x->milestones = ms, x->last_epoch = le, x->last_lr = last;
    return;
  }
  if (auto *x = dynamic_cast<Chained *>(&s)) {
    auto last = in.reals("_last_lr", n);
    composite(x->children);
    if (apply) x->last_lr = last;
    return;
  }
  load_base(s, in, apply);
  if (auto *x = dynamic_cast<StepLR *>(&s)) {
    int64_t ss = in.integer("step_size");
    double g = in.real("gamma");
    if (ss < 1) in.bad("step_size", "must be >= 1");
    if (apply) x->step_size = ss, x->gamma = g;
  } else if (auto *x = dynamic_cast<MultiStepLR *>(&s)) {
    const PV &c = in.get("milestones");
    if (c.kind != PV::Dict) in.bad("milestones", std::string("is a ") + ctorch::pickle_type_name(c.kind) + ", not a Counter");
    std::vector<int64_t> ms;
    for (size_t j = 0; j + 1 < c.items.size(); j += 2) {
      const PV &k = *c.items[j], &v = *c.items[j + 1];
      if (k.kind != PV::Int || v.kind != PV::Int || v.i < 0 || v.i > 1000000)
        in.bad("milestones", "must map int milestones to counts");
      ms.insert(ms.end(), static_cast<size_t>(v.i), k.i);
    }
    std::sort(ms.begin(), ms.end());
    double g = in.real("gamma");
    if (apply) x->milestones = ms, x->gamma = g;
  } else if (auto *x = dynamic_cast<ConstantLR *>(&s)) {
    double f = in.real("factor");
    int64_t t = in.integer("total_iters");
    if (apply) x->factor = f, x->total_iters = t;
  } else if (auto *x = dynamic_cast<LinearLR *>(&s)) {
    double a = in.real("start_factor"), b = in.real("end_factor");
    int64_t t = in.integer("total_iters");
    if (t < 1) in.bad("total_iters", "must be >= 1");
    if (apply) x->start = a, x->end = b, x->total_iters = t;
  } else if (auto *x = dynamic_cast<ExponentialLR *>(&s)) {
    double g = in.real("gamma");
    if (apply) x->gamma = g;
  } else if (auto *x = dynamic_cast<PolynomialLR *>(&s)) {
    int64_t t = in.integer("total_iters");
    double p = in.real("power");
    if (t < 1) in.bad("total_iters", "must be >= 1");
    if (apply) x->total_iters = t, x->power = p;
  } else if (auto *x = dynamic_cast<CosineLR *>(&s)) {
    int64_t t = in.integer("T_max");
    double e = in.real("eta_min");
    if (t < 1) in.bad("T_max", "must be >= 1");
    if (apply) x->t_max = t, x->eta_min = e;
  } else if (auto *x = dynamic_cast<WarmRestarts *>(&s)) {
    int64_t t0 = in.integer("T_0"), tm = in.integer("T_mult");
    double ti = in.real("T_i"), tc = in.real("T_cur"), e = in.real("eta_min");
    if (t0 < 1 || tm < 1 || !(ti >= 1)) in.bad("T_0", "T_0, T_mult and T_i must be >= 1");
    if (apply) x->t_0 = t0, x->t_mult = tm, x->t_i = ti, x->t_cur = tc, x->eta_min = e;
  } else if (auto *x = dynamic_cast<CyclicLR *>(&s)) {
    auto max_lrs = in.reals("max_lrs", n);
    double total = in.real("total_size"), ratio = in.real("step_ratio"), g = in.real("gamma");
    bool cm = in.boolean("cycle_momentum");
    std::string mode = in.text("mode");
    ctorch_cyclic_mode m = mode == "triangular"    ? CTORCH_CYCLIC_TRIANGULAR
                           : mode == "triangular2" ? CTORCH_CYCLIC_TRIANGULAR2
                           : mode == "exp_range"   ? CTORCH_CYCLIC_EXP_RANGE
                                                   : static_cast<ctorch_cyclic_mode>(-1);
    if (static_cast<int>(m) < 0) in.bad("mode", "is '" + mode + "' (a custom scale_fn cannot be loaded)");
    if (cm != x->cycle_momentum) in.bad("cycle_momentum", "differs from the scheduler's");
    std::vector<double> bm, mm;
    if (cm) bm = in.reals("base_momentums", n), mm = in.reals("max_momentums", n);
    if (!(total > 0)) in.bad("total_size", "must be > 0");
    if (apply) x->max_lrs = max_lrs, x->total_size = total, x->step_ratio = ratio, x->gamma = g, x->mode = m;
    if (apply && cm) x->base_momentums = bm, x->max_momentums = mm;
  } else if (auto *x = dynamic_cast<OneCycleLR *>(&s)) {
    int64_t t = in.integer("total_steps");
    if (in.list("_schedule_phases", x->phases.size()).size() != x->phases.size()) in.bad("_schedule_phases", "differ");
    if (in.boolean("cycle_momentum") != x->cycle_momentum) in.bad("cycle_momentum", "differs from the scheduler's");
    if (in.has("_anneal_func_type") && in.text("_anneal_func_type") != (x->linear ? "linear" : "cos"))
      in.bad("_anneal_func_type", "differs from the scheduler's anneal strategy");
    if (t != x->total_steps) in.bad("total_steps", "differs from the scheduler's (its phases were made for it)");
  } else if (dynamic_cast<LambdaBase *>(&s)) {
    if (in.has("lr_lambdas")) in.list("lr_lambdas", n);
  }
}

}  // namespace

void load_state_dict(Sched &s, const PV &d, bool apply) { load(s, d, class_name(s), apply); }

}  // namespace sched
}  // namespace optim
}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_lr_scheduler_save_state_dict(ctorch_lr_scheduler s, const char *path) {
  CTORCH_TRY
  ctorch::require_ptr(s, "s");
  ctorch::Exclusive held(s->s->busy, "s", s), held_opt(s->s->o->busy, "s (its optimizer)", s);
  ctorch::require_ptr(path, "path");
  ctorch::write_pickled(path, *state_dict(*s->s));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lr_scheduler_load_state_dict(ctorch_lr_scheduler s, const char *path) {
  CTORCH_TRY
  ctorch::require_ptr(s, "s");
  ctorch::Exclusive held(s->s->busy, "s", s), held_opt(s->s->o->busy, "s (its optimizer)", s);
  ctorch::require_ptr(path, "path");
  auto file = ctorch::read_pickled(path);
  load_state_dict(*s->s, *file->root, false);
  load_state_dict(*s->s, *file->root, true);
  CTORCH_CATCH
}

}  // extern "C"
