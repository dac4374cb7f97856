// LBFGS as the installed PyTorch's Python torch/optim/lbfgs.py does it, op
// for op. libtorch's torch::optim::LBFGS is not used: it computes the first
// step size t = min(1, 1/|g|_1) * lr in double where Python keeps a 0-dim
// tensor of the parameters' dtype, and compares in double where Python
// compares tensors (in their dtype), so its parameters drift from Python's.
//
// Python mixes floats and 0-dim tensors in t, the line search's brackets
// and its interpolation; Num keeps which one each value is, and its
// arithmetic calls what Python's operators call (float / tensor is
// tensor.reciprocal() * float, float - tensor is rsub, comparisons with a
// float are tensor comparisons in the tensor's dtype, min/max are Python's
// builtins), so every rounding is Python's.
#define CTORCH_COMPAT_OPTIM_PY  // compat::kLbfgsLineSearchBudget
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#include "optim_py.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <deque>

namespace ctorch {
namespace optim {

namespace {

// A Python number: a float, or a 0-dim tensor.
struct Num {
  double v = 0;
  at::Tensor t;
  Num(double x = 0) : v(x) {}  // NOLINT: implicit, as Python's floats
  Num(at::Tensor x) : t(std::move(x)) {}  // NOLINT
  bool ten() const { return t.defined(); }
  at::Scalar scalar() const { return ten() ? t.item() : at::Scalar(v); }  // a tensor passed as a Scalar argument
};

Num operator+(const Num &a, const Num &b) {
  if (!a.ten() && !b.ten()) return a.v + b.v;
  if (a.ten() && b.ten()) return at::add(a.t, b.t);
  return a.ten() ? at::add(a.t, b.v) : at::add(b.t, a.v);  // float + tensor: tensor.__radd__
}
Num operator-(const Num &a, const Num &b) {
  if (!a.ten() && !b.ten()) return a.v - b.v;
  if (a.ten() && b.ten()) return at::sub(a.t, b.t);
  return a.ten() ? at::sub(a.t, b.v) : at::rsub(b.t, a.v);  // float - tensor: tensor.__rsub__
}
Num operator*(const Num &a, const Num &b) {
  if (!a.ten() && !b.ten()) return a.v * b.v;
  if (a.ten() && b.ten()) return at::mul(a.t, b.t);
  return a.ten() ? at::mul(a.t, b.v) : at::mul(b.t, a.v);
}
Num operator/(const Num &a, const Num &b) {
  if (!a.ten() && !b.ten()) return a.v / b.v;
  if (a.ten() && b.ten()) return at::div(a.t, b.t);
  return a.ten() ? at::div(a.t, b.v) : at::mul(at::reciprocal(b.t), a.v);  // float / tensor: __rdiv__
}
Num pyabs(const Num &a) { return a.ten() ? Num(at::abs(a.t)) : Num(std::fabs(a.v)); }

enum Cmp { LT, LE, GT, GE };
bool cmp_t(const at::Tensor &a, const at::Scalar &b, Cmp c) {
  switch (c) {
    case LT: return at::lt(a, b).item<bool>();
    case LE: return at::le(a, b).item<bool>();
    case GT: return at::gt(a, b).item<bool>();
    default: return at::ge(a, b).item<bool>();
  }
}
bool compare(const Num &a, const Num &b, Cmp c) {
  if (!a.ten() && !b.ten()) {
    switch (c) {
      case LT: return a.v < b.v;
      case LE: return a.v <= b.v;
      case GT: return a.v > b.v;
      default: return a.v >= b.v;
    }
  }
  if (a.ten() && b.ten()) {
    switch (c) {
      case LT: return at::lt(a.t, b.t).item<bool>();
      case LE: return at::le(a.t, b.t).item<bool>();
      case GT: return at::gt(a.t, b.t).item<bool>();
      default: return at::ge(a.t, b.t).item<bool>();
    }
  }
  if (a.ten()) return cmp_t(a.t, b.v, c);
  // float OP tensor: Python reflects it to tensor OP' float.
  static const Cmp reflected[] = {GT, GE, LT, LE};
  return cmp_t(b.t, a.v, reflected[c]);
}
bool operator<(const Num &a, const Num &b) { return compare(a, b, LT); }
bool operator<=(const Num &a, const Num &b) { return compare(a, b, LE); }
bool operator>(const Num &a, const Num &b) { return compare(a, b, GT); }
bool operator>=(const Num &a, const Num &b) { return compare(a, b, GE); }
// Python's builtin min(a, b) / max(a, b): the later one only if strictly smaller / larger.
Num pymin(const Num &a, const Num &b) { return b < a ? b : a; }
Num pymax(const Num &a, const Num &b) { return b > a ? b : a; }

Num cubic_interpolate(const Num &x1, const Num &f1, const Num &g1, const Num &x2, const Num &f2, const Num &g2,
                      const Num *bmin, const Num *bmax) {
  Num xmin_bound, xmax_bound;
  if (bmin) xmin_bound = *bmin, xmax_bound = *bmax;
  else if (x1 <= x2) xmin_bound = x1, xmax_bound = x2;
  else xmin_bound = x2, xmax_bound = x1;
  Num d1 = g1 + g2 - Num(3.0) * (f1 - f2) / (x1 - x2);
  Num d1sq = d1.ten() ? Num(at::pow(d1.t, 2)) : Num(d1.v * d1.v);
  Num d2_square = d1sq - g1 * g2;
  if (d2_square >= Num(0.0)) {
    Num d2 = d2_square.ten() ? Num(at::sqrt(d2_square.t)) : Num(std::sqrt(d2_square.v));
    Num min_pos;
    if (x1 <= x2) min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + Num(2.0) * d2));
    else min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + Num(2.0) * d2));
    return pymin(pymax(min_pos, xmin_bound), xmax_bound);
  }
  return (xmin_bound + xmax_bound) / Num(2.0);
}

using Closure = torch::optim::Optimizer::LossClosure;

class LBFGS : public torch::optim::Optimizer {
 public:
  LBFGS(const std::vector<torch::optim::OptimizerParamGroup> &groups, const PyOptions &d)
      : Optimizer(groups, std::make_unique<PyOptions>(d)) {
    keep_group_options(*this, groups);
    if (param_groups_.size() != 1) ctorch::fail_arg("params", "LBFGS doesn't support per-parameter options (parameter groups)");
  }

  at::Tensor step(LossClosure closure) override {
    if (!closure) ctorch::fail_arg("closure", "LBFGS needs a closure (ctorch_optimizer_step_closure)");
    at::NoGradGuard no_grad;
    params_ = param_groups_[0].params();
    const ctorch_optim_options_v2 &o = static_cast<PyOptions &>(param_groups_[0].options()).o;
    const double lr = o.lr, tolerance_grad = o.tolerance_grad, tolerance_change = o.tolerance_change;
    const int64_t max_iter = o.max_iter, max_eval = o.max_eval, history_size = o.history_size;

    at::Tensor orig_loss = call(closure);
    double loss = orig_loss.item<double>();
    int64_t current_evals = 1;
    func_evals_ += 1;

    at::Tensor flat_grad = gather_flat_grad();
    bool opt_cond = at::le(flat_grad.abs().max(), tolerance_grad).item<bool>();
    if (opt_cond) return orig_loss;

    int64_t n_iter = 0;
    while (n_iter < max_iter) {
      n_iter += 1;
      n_iter_ += 1;
      if (n_iter_ == 1) {
        d_ = flat_grad.neg();
        old_dirs_.clear(), old_stps_.clear(), ro_.clear();
        H_diag_ = Num(1.0);
      } else {
        at::Tensor y = flat_grad.sub(prev_flat_grad_);
        at::Tensor s = t_.ten() ? d_.mul(t_.t) : d_.mul(t_.v);
        at::Tensor ys = y.dot(s);
        if (at::gt(ys, 1e-10).item<bool>()) {
          if (static_cast<int64_t>(old_dirs_.size()) == history_size) {
            old_dirs_.pop_front(), old_stps_.pop_front(), ro_.pop_front();
          }
          old_dirs_.push_back(y);
          old_stps_.push_back(s);
          ro_.push_back(at::reciprocal(ys) * 1.0);  // 1. / ys
          H_diag_ = Num(ys / y.dot(y));
        }
        const int64_t num_old = static_cast<int64_t>(old_dirs_.size());
        if (al_.empty()) al_.resize(static_cast<size_t>(history_size));
        at::Tensor q = flat_grad.neg();
        for (int64_t i = num_old - 1; i > -1; --i) {
          al_[i] = old_stps_[i].dot(q) * ro_[i];
          q.add_(old_dirs_[i], at::neg(al_[i]).item());
        }
        at::Tensor r = H_diag_.ten() ? at::mul(q, H_diag_.t) : at::mul(q, at::Scalar(static_cast<int64_t>(1)));
        d_ = r;
        for (int64_t i = 0; i < num_old; ++i) {
          at::Tensor be_i = old_dirs_[i].dot(r) * ro_[i];
          r.add_(old_stps_[i], (al_[i] - be_i).item());
        }
      }
      if (!prev_flat_grad_.defined()) prev_flat_grad_ = flat_grad.clone(at::MemoryFormat::Contiguous);
      else prev_flat_grad_.copy_(flat_grad);
      prev_loss_ = loss;

      if (n_iter_ == 1) t_ = pymin(Num(1.0), Num(1.0) / Num(flat_grad.abs().sum())) * Num(lr);
      else t_ = Num(lr);

      at::Tensor gtd = flat_grad.dot(d_);
      if (at::gt(gtd, -tolerance_change).item<bool>()) break;

      int64_t ls_func_evals = 0;
      if (o.line_search == CTORCH_LINE_SEARCH_STRONG_WOLFE) {
        std::vector<at::Tensor> x_init;
        for (auto &p : params_) x_init.push_back(p.clone(at::MemoryFormat::Contiguous));
        const int64_t max_ls = compat::kLbfgsLineSearchBudget ? max_eval - current_evals : 25;
        at::Tensor g_out;
        // Python calls _strong_wolfe without the group's tolerance_change: its default 1e-9 applies.
        strong_wolfe(closure, x_init, 1e-9, max_ls, loss, flat_grad, gtd, &loss, &g_out, &ls_func_evals);
        flat_grad = g_out;
        add_grad(t_, d_);
        opt_cond = at::le(flat_grad.abs().max(), tolerance_grad).item<bool>();
      } else {
        add_grad(t_, d_);
        if (n_iter != max_iter) {
          loss = call(closure).item<double>();
          flat_grad = gather_flat_grad();
          opt_cond = at::le(flat_grad.abs().max(), tolerance_grad).item<bool>();
          ls_func_evals = 1;
        }
      }
      current_evals += ls_func_evals;
      func_evals_ += ls_func_evals;

      if (n_iter == max_iter) break;
      if (current_evals >= max_eval) break;
      if (opt_cond) break;
      at::Tensor dt = t_.ten() ? d_.mul(t_.t) : d_.mul(t_.v);
      if (at::le(dt.abs().max(), tolerance_change).item<bool>()) break;
      if (std::fabs(loss - prev_loss_) < tolerance_change) break;
    }
    return orig_loss;
  }

 private:
  std::vector<at::Tensor> params_;
  // Python's state[params[0]]: func_evals, n_iter, d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss, al.
  int64_t func_evals_ = 0, n_iter_ = 0;
  at::Tensor d_, prev_flat_grad_;
  Num t_, H_diag_;
  std::deque<at::Tensor> old_dirs_, old_stps_, ro_;
  std::vector<at::Tensor> al_;
  double prev_loss_ = 0;

  // closure() under torch.enable_grad(), as Python wraps it.
  static at::Tensor call(const LossClosure &closure) {
    at::AutoGradMode on(true);
    return closure();
  }

  at::Tensor gather_flat_grad() const {
    std::vector<at::Tensor> views;
    for (auto &p : params_) {
      const at::Tensor &g = p.grad();
      if (!g.defined()) views.push_back(at::zeros({p.numel()}, p.options()));
      else if (g.is_sparse()) views.push_back(g.to_dense().view(-1));
      else views.push_back(g.view(-1));
    }
    return at::cat(views, 0);
  }

  void add_grad(const Num &step_size, const at::Tensor &update) {
    int64_t offset = 0;
    const at::Scalar alpha = step_size.scalar();
    for (auto &p : params_) {
      const int64_t numel = p.numel();
      at::Tensor param = p;
      param.add_(update.slice(0, offset, offset + numel).view_as(p), alpha);
      offset += numel;
    }
  }

  void set_param(const std::vector<at::Tensor> &data) {
    for (size_t i = 0; i < params_.size(); ++i) {
      at::Tensor param = params_[i];
      param.copy_(data[i]);
    }
  }

  // _directional_evaluate: loss and flat gradient at x + t * d; the parameters are put back to x.
  std::pair<double, at::Tensor> directional_evaluate(const LossClosure &closure, const std::vector<at::Tensor> &x,
                                                     const Num &t, const at::Tensor &d) {
    add_grad(t, d);
    double loss = call(closure).item<double>();
    at::Tensor flat_grad = gather_flat_grad();
    set_param(x);
    return {loss, flat_grad};
  }

  // _strong_wolfe (c1 = 1e-4, c2 = 0.9); reads and sets t_ (Python's t), the step size.
  void strong_wolfe(const LossClosure &closure, const std::vector<at::Tensor> &x, double tolerance_change, int64_t max_ls,
                    double f, at::Tensor g, const at::Tensor &gtd_t, double *f_out, at::Tensor *g_out, int64_t *evals_out) {
    const double c1 = 1e-4, c2 = 0.9;
    const Num gtd(gtd_t);
    const at::Tensor &d = d_;
    Num t = t_;
    Num d_norm(d.abs().max());
    g = g.clone(at::MemoryFormat::Contiguous);
    auto fg = directional_evaluate(closure, x, t, d);
    double f_new = fg.first;
    at::Tensor g_new = fg.second;
    int64_t ls_func_evals = 1;
    Num gtd_new(g_new.dot(d));

    Num t_prev(0.0);
    double f_prev = f;
    at::Tensor g_prev = g;
    Num gtd_prev = gtd;
    bool done = false;
    int64_t ls_iter = 0;
    std::vector<Num> bracket, bracket_gtd;
    std::vector<double> bracket_f;
    std::vector<at::Tensor> bracket_g;
    while (ls_iter < max_ls) {
      if (Num(f_new) > (Num(f) + Num(c1) * t * gtd) || (ls_iter > 1 && f_new >= f_prev)) {
        bracket = {t_prev, t}, bracket_f = {f_prev, f_new};
        bracket_g = {g_prev, g_new.clone(at::MemoryFormat::Contiguous)};
        bracket_gtd = {gtd_prev, gtd_new};
        break;
      }
      if (pyabs(gtd_new) <= Num(-c2) * gtd) {
        bracket = {t}, bracket_f = {f_new}, bracket_g = {g_new};
        done = true;
        break;
      }
      if (gtd_new >= Num(0.0)) {
        bracket = {t_prev, t}, bracket_f = {f_prev, f_new};
        bracket_g = {g_prev, g_new.clone(at::MemoryFormat::Contiguous)};
        bracket_gtd = {gtd_prev, gtd_new};
        break;
      }
      Num min_step = t + Num(0.01) * (t - t_prev);
      Num max_step = t * Num(10.0);
      Num tmp = t;
      t = cubic_interpolate(t_prev, Num(f_prev), gtd_prev, t, Num(f_new), gtd_new, &min_step, &max_step);
      t_prev = tmp;
      f_prev = f_new;
      g_prev = g_new.clone(at::MemoryFormat::Contiguous);
      gtd_prev = gtd_new;
      fg = directional_evaluate(closure, x, t, d);
      f_new = fg.first, g_new = fg.second;
      ls_func_evals += 1;
      gtd_new = Num(g_new.dot(d));
      ls_iter += 1;
    }
    if (ls_iter == max_ls) {
      bracket = {Num(0.0), t}, bracket_f = {f, f_new}, bracket_g = {g, g_new};
    }

    bool insuf_progress = false;
    size_t low_pos = 0, high_pos = 1;
    if (!(bracket_f[0] <= bracket_f.back())) low_pos = 1, high_pos = 0;
    while (!done && ls_iter < max_ls) {
      if (pyabs(bracket[1] - bracket[0]) * d_norm < Num(tolerance_change)) break;
      t = cubic_interpolate(bracket[0], Num(bracket_f[0]), bracket_gtd[0], bracket[1], Num(bracket_f[1]), bracket_gtd[1],
                            nullptr, nullptr);
      Num bmax = pymax(bracket[0], bracket[1]), bmin = pymin(bracket[0], bracket[1]);
      Num eps = Num(0.1) * (bmax - bmin);
      if (pymin(bmax - t, t - bmin) < eps) {
        if (insuf_progress || t >= bmax || t <= bmin) {
          if (pyabs(t - bmax) < pyabs(t - bmin)) t = bmax - eps;
          else t = bmin + eps;
          insuf_progress = false;
        } else {
          insuf_progress = true;
        }
      } else {
        insuf_progress = false;
      }
      fg = directional_evaluate(closure, x, t, d);
      f_new = fg.first, g_new = fg.second;
      ls_func_evals += 1;
      gtd_new = Num(g_new.dot(d));
      ls_iter += 1;

      if (Num(f_new) > (Num(f) + Num(c1) * t * gtd) || f_new >= bracket_f[low_pos]) {
        bracket[high_pos] = t;
        bracket_f[high_pos] = f_new;
        bracket_g[high_pos] = g_new.clone(at::MemoryFormat::Contiguous);
        bracket_gtd[high_pos] = gtd_new;
        if (bracket_f[0] <= bracket_f[1]) low_pos = 0, high_pos = 1;
        else low_pos = 1, high_pos = 0;
      } else {
        if (pyabs(gtd_new) <= Num(-c2) * gtd) {
          done = true;
        } else if (gtd_new * (bracket[high_pos] - bracket[low_pos]) >= Num(0.0)) {
          bracket[high_pos] = bracket[low_pos];
          bracket_f[high_pos] = bracket_f[low_pos];
          bracket_g[high_pos] = bracket_g[low_pos];
          bracket_gtd[high_pos] = bracket_gtd[low_pos];
        }
        bracket[low_pos] = t;
        bracket_f[low_pos] = f_new;
        bracket_g[low_pos] = g_new.clone(at::MemoryFormat::Contiguous);
        bracket_gtd[low_pos] = gtd_new;
      }
    }
    t_ = bracket[low_pos];
    *f_out = bracket_f[low_pos];
    *g_out = bracket_g[low_pos];
    *evals_out = ls_func_evals;
  }
};

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_lbfgs(const std::vector<torch::optim::OptimizerParamGroup> &groups,
                                                    const PyOptions &d) {
  return std::make_unique<LBFGS>(groups, d);
}

}  // namespace optim
}  // namespace ctorch
