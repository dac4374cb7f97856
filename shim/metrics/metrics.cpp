// Classification metrics equal to scikit-learn's (sklearn.metrics:
// accuracy_score, top_k_accuracy_score, confusion_matrix,
// precision_recall_fscore_support with labels=range(C)), computed from
// integer counts on the CPU so that each value is the same division of the
// same integers as sklearn's, and means summed as numpy sums
// (tests/metrics/metrics_vs_sklearn.py).
#include "core/internal.h"

#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

// target: INT64 [N], N >= 1, as a contiguous CPU tensor.
at::Tensor check_target(ctorch_tensor target) {
  ctorch::require_tensor(target, "target");
  at::Tensor t = ctorch::own(target);
  if (t.scalar_type() != at::kLong)
    ctorch::fail(CTORCH_TYPE, "argument 'target': expected INT64 labels, got " + std::string(c10::toString(t.scalar_type())));
  if (t.dim() != 1) ctorch::fail_arg("target", "expected shape [N], got " + std::to_string(t.dim()) + " dimensions");
  if (t.numel() == 0) ctorch::fail_arg("target", "is empty (N must be >= 1)");
  return t.to(at::kCPU).contiguous();
}

// pred: INT64 [N] labels, or floating scores [N, C] (argmax per row: the
// first maximum, as numpy's argmax; NaN counts as the maximum in both).
// num_classes < 0: any C.
at::Tensor pred_labels(ctorch_tensor pred, int64_t n, int64_t num_classes) {
  ctorch::require_tensor(pred, "pred");
  at::Tensor p = ctorch::own(pred);
  if (p.dim() == 1 && p.scalar_type() == at::kLong) {
    if (p.size(0) != n)
      ctorch::fail_arg("pred", "has " + std::to_string(p.size(0)) + " labels, target " + std::to_string(n));
    return p.to(at::kCPU).contiguous();
  }
  if (p.dim() == 2 && at::isFloatingType(p.scalar_type())) {
    if (p.size(0) != n)
      ctorch::fail_arg("pred", "has " + std::to_string(p.size(0)) + " rows, target " + std::to_string(n) + " labels");
    if (num_classes >= 0 && p.size(1) != num_classes)
      ctorch::fail_arg("pred", "has " + std::to_string(p.size(1)) + " columns, num_classes is " +
                                   std::to_string(num_classes));
    if (p.size(1) == 0) ctorch::fail_arg("pred", "has 0 columns");
    return at::argmax(p.to(at::kCPU), 1).contiguous();
  }
  ctorch::fail(CTORCH_TYPE, "argument 'pred': expected INT64 labels [N] or floating scores [N, C], got " +
                                std::string(c10::toString(p.scalar_type())) + " with " + std::to_string(p.dim()) +
                                " dimensions");
}

void check_range(const at::Tensor &labels, int64_t num_classes, const char *arg) {
  const int64_t *d = labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i)
    if (d[i] < 0 || d[i] >= num_classes)
      ctorch::fail(CTORCH_VALUE, std::string("argument '") + arg + "': label " + std::to_string(d[i]) + " at index " +
                                     std::to_string(i) + " is outside [0, " + std::to_string(num_classes) + ")");
}

void check_num_classes(int64_t num_classes) {
  if (num_classes < 1) ctorch::fail_arg("num_classes", "must be >= 1, got " + std::to_string(num_classes));
}

void check_zero_division(double zd) {
  if (!(zd == 0.0 || zd == 1.0 || std::isnan(zd)))
    ctorch::fail_arg("zero_division", "must be 0, 1 or NaN, got " + std::to_string(zd));
}

// Per-class counts: tp, predicted (tp + fp), true (tp + fn = support).
struct Counts {
  std::vector<int64_t> tp, pred, truth;
};

Counts count(ctorch_tensor pred, ctorch_tensor target, int64_t num_classes) {
  check_num_classes(num_classes);
  at::Tensor t = check_target(target);
  at::Tensor p = pred_labels(pred, t.size(0), num_classes);
  check_range(t, num_classes, "target");
  check_range(p, num_classes, "pred");
  Counts c{std::vector<int64_t>(num_classes), std::vector<int64_t>(num_classes), std::vector<int64_t>(num_classes)};
  const int64_t *pd = p.data_ptr<int64_t>(), *td = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    ++c.pred[pd[i]];
    ++c.truth[td[i]];
    if (pd[i] == td[i]) ++c.tp[pd[i]];
  }
  return c;
}

// sklearn's _prf_divide: num / den, zero_division where den == 0.
double divide(int64_t num, int64_t den, double zd) {
  return den == 0 ? zd : static_cast<double>(num) / static_cast<double>(den);
}

struct PerClass {
  std::vector<double> p, r, f;
};

PerClass per_class(const Counts &c, double zd) {
  size_t k = c.tp.size();
  PerClass out{std::vector<double>(k), std::vector<double>(k), std::vector<double>(k)};
  for (size_t i = 0; i < k; ++i) {
    out.p[i] = divide(c.tp[i], c.pred[i], zd);
    out.r[i] = divide(c.tp[i], c.truth[i], zd);
    // sklearn >= 1.3: (1 + beta^2) tp / (beta^2 (tp + fn) + (tp + fp)).
    out.f[i] = divide(2 * c.tp[i], c.truth[i] + c.pred[i], zd);
  }
  return out;
}

// numpy's sum of a float64 array (DOUBLE_pairwise_sum: blocks of up to 128
// added in 8 interleaved partial sums, larger arrays halved), so that a mean
// comes out as numpy's to the last bit.
double np_sum(const double *a, size_t n) {
  if (n < 8) {
    double res = 0.;
    for (size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return np_sum(a, n2) + np_sum(a + n2, n - n2);
}

// sklearn's _nanaverage. Unweighted: numpy.nanmean (NaN entries summed as 0,
// divided by the count of the others); weighted: numpy.average of the
// non-NaN entries (sum(a * w) / sum(w)), unweighted when the weights sum to
// 0; all NaN: NaN.
double nan_average(const std::vector<double> &a, const std::vector<int64_t> *w) {
  std::vector<double> zeroed(a.size()), kept, prod, wk;
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    bool nan = std::isnan(a[i]);
    zeroed[i] = nan ? 0.0 : a[i];
    if (nan) continue;
    ++n;
    if (w) {
      kept.push_back(a[i]);
      wk.push_back(static_cast<double>((*w)[i]));
      prod.push_back(a[i] * static_cast<double>((*w)[i]));
    }
  }
  if (n == 0) return std::nan("");
  if (w) {
    double wsum = np_sum(wk.data(), wk.size());
    if (wsum != 0) return np_sum(prod.data(), prod.size()) / wsum;
    return np_sum(kept.data(), kept.size()) / static_cast<double>(kept.size());
  }
  return np_sum(zeroed.data(), zeroed.size()) / static_cast<double>(n);
}

}  // namespace

CTORCH_API ctorch_status ctorch_metric_accuracy(double *out, ctorch_tensor pred, ctorch_tensor target) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  at::Tensor t = check_target(target);
  at::Tensor p = pred_labels(pred, t.size(0), -1);
  const int64_t *pd = p.data_ptr<int64_t>(), *td = t.data_ptr<int64_t>();
  int64_t hits = 0;
  for (int64_t i = 0; i < t.numel(); ++i) hits += pd[i] == td[i];
  *out = static_cast<double>(hits) / static_cast<double>(t.numel());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_metric_top_k_accuracy(double *out, ctorch_tensor scores, ctorch_tensor target,
                                                      int64_t k) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  at::Tensor t = check_target(target);
  ctorch::require_tensor(scores, "scores");
  at::Tensor s = ctorch::own(scores);
  if (s.dim() != 2 || !at::isFloatingType(s.scalar_type()))
    ctorch::fail(CTORCH_TYPE, "argument 'scores': expected floating scores [N, C], got " +
                                  std::string(c10::toString(s.scalar_type())) + " with " + std::to_string(s.dim()) +
                                  " dimensions");
  if (s.size(0) != t.size(0))
    ctorch::fail_arg("scores", "has " + std::to_string(s.size(0)) + " rows, target " + std::to_string(t.size(0)) +
                                   " labels");
  int64_t c = s.size(1);
  if (c == 0) ctorch::fail_arg("scores", "has 0 columns");
  if (k < 1) ctorch::fail_arg("k", "must be >= 1, got " + std::to_string(k));
  check_range(t, c, "target");
  // sklearn ranks by argsort(kind="mergesort")[:, ::-1]: descending score,
  // ties by descending class index. Target t is within the top k when fewer
  // than k classes rank before it.
  at::Tensor sd = s.to(at::kCPU).to(at::kDouble).contiguous();
  const double *d = sd.data_ptr<double>();
  const int64_t *td = t.data_ptr<int64_t>();
  int64_t hits = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double *row = d + i * c;
    int64_t y = td[i];
    double v = row[y];
    int64_t ahead = 0;
    for (int64_t j = 0; j < c && ahead < k; ++j)
      if (row[j] > v || (row[j] == v && j > y)) ++ahead;
    hits += ahead < k;
  }
  *out = static_cast<double>(hits) / static_cast<double>(t.numel());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_metric_confusion_matrix(ctorch_tensor *out, ctorch_tensor pred, ctorch_tensor target,
                                                        int64_t num_classes) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  check_num_classes(num_classes);
  at::Tensor t = check_target(target);
  at::Tensor p = pred_labels(pred, t.size(0), num_classes);
  check_range(t, num_classes, "target");
  check_range(p, num_classes, "pred");
  at::Tensor m = at::zeros({num_classes, num_classes}, at::kLong);
  int64_t *md = m.data_ptr<int64_t>();
  const int64_t *pd = p.data_ptr<int64_t>(), *td = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) ++md[td[i] * num_classes + pd[i]];
  *out = ctorch::give(std::move(m));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_metric_precision_recall_f1(double *precision, double *recall, double *f1,
                                                           ctorch_tensor pred, ctorch_tensor target,
                                                           int64_t num_classes, ctorch_metric_average average,
                                                           double zero_division) {
  CTORCH_TRY
  int avg = static_cast<int>(average);
  if (avg < CTORCH_METRIC_MICRO || avg > CTORCH_METRIC_WEIGHTED)
    ctorch::fail_arg("average", "invalid ctorch_metric_average value " + std::to_string(avg));
  check_zero_division(zero_division);
  Counts c = count(pred, target, num_classes);
  double p, r, f;
  if (avg == CTORCH_METRIC_MICRO) {
    int64_t tp = 0, pr = 0, tr = 0;
    for (int64_t i = 0; i < num_classes; ++i) tp += c.tp[i], pr += c.pred[i], tr += c.truth[i];
    p = divide(tp, pr, zero_division);
    r = divide(tp, tr, zero_division);
    f = divide(2 * tp, tr + pr, zero_division);
  } else {
    PerClass pc = per_class(c, zero_division);
    const std::vector<int64_t> *w = avg == CTORCH_METRIC_WEIGHTED ? &c.truth : nullptr;
    p = nan_average(pc.p, w);
    r = nan_average(pc.r, w);
    f = nan_average(pc.f, w);
  }
  if (precision) *precision = p;
  if (recall) *recall = r;
  if (f1) *f1 = f;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_metric_precision_recall_f1_per_class(ctorch_tensor *precision, ctorch_tensor *recall,
                                                                     ctorch_tensor *f1, ctorch_tensor *support,
                                                                     ctorch_tensor pred, ctorch_tensor target,
                                                                     int64_t num_classes, double zero_division) {
  ctorch_tensor *outs[] = {precision, recall, f1, support};
  for (ctorch_tensor *o : outs)
    if (o) *o = nullptr;
  CTORCH_TRY
  check_zero_division(zero_division);
  Counts c = count(pred, target, num_classes);
  PerClass pc = per_class(c, zero_division);
  auto vec = [](const std::vector<double> &v) { return at::tensor(at::ArrayRef<double>(v), at::kDouble); };
  at::Tensor tp = precision ? vec(pc.p) : at::Tensor(), tr = recall ? vec(pc.r) : at::Tensor(),
             tf = f1 ? vec(pc.f) : at::Tensor(),
             ts = support ? at::tensor(at::ArrayRef<int64_t>(c.truth), at::kLong) : at::Tensor();
  if (precision) *precision = ctorch::give(std::move(tp));
  if (recall) *recall = ctorch::give(std::move(tr));
  if (f1) *f1 = ctorch::give(std::move(tf));
  if (support) *support = ctorch::give(std::move(ts));
  CTORCH_CATCH
}
