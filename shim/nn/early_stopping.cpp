// Early stopping (ctorch_early_stopping_*): Lightning's EarlyStopping rule
// (lightning.pytorch.callbacks.EarlyStopping._evaluate_stopping_criteria) on
// values the caller feeds once per epoch, with Keras's restore_best_weights.
// It lives in nn/ because restoring the best state is a module's state dict
// copied and loaded back (module.cpp's state_dict and load_state_dict).
//
// The rule, in Lightning's order (the first that applies decides):
//   1. check_finite and the value is NaN or infinite: stop;
//   2. stopping_threshold given and the value is better than it: stop;
//   3. divergence_threshold given and the value is worse than it: stop;
//   4. the value improves on the best by more than min_delta: it becomes the
//      best, the wait count goes back to 0, and training goes on;
//   5. otherwise the wait count grows; stop once it reaches patience.
// Lightning keeps min_delta's sign for "max" and negates it for "min", then
// tests monitor_op(current - min_delta, best): value - d > best (max) or
// value + d < best (min). Lightning compares torch tensors (float32 for
// float logs); ctorch compares doubles, as the C caller gives them.
#include "core/internal.h"
#include "nn/nn_internal.h"

#include <ATen/core/grad_mode.h>

#include <cmath>
#include <limits>
#include <mutex>

struct ctorch_early_stopping_s {
  bool max_mode = false;
  int64_t patience = 3;
  double min_delta = 0;  // signed as Lightning stores it (negated in min mode)
  bool check_finite = true;
  bool has_stop = false, has_div = false;
  double stopping_threshold = 0, divergence_threshold = 0;
  ctorch::nn::ModulePtr model;  // may be null
  double best = 0;
  int64_t wait = 0, best_step = -1, steps = 0;
  ctorch::nn::Named best_state;  // deep copies (clone) of the state dict at the best step
  std::mutex mu;                 // steps from several threads are serialised
  ctorch::Live<ctorch_early_stopping_s> live{this};  // last: see core/internal.h
};

namespace ctorch_es_impl {  // named: unity batches mix the folder's files

// Lightning's monitor_op: torch.lt for "min", torch.gt for "max".
bool better(const ctorch_early_stopping_s &es, double a, double b) { return es.max_mode ? a > b : a < b; }

}  // namespace ctorch_es_impl

extern "C" {

CTORCH_API ctorch_status ctorch_early_stopping_new(ctorch_early_stopping *out, ctorch_best_mode mode, int64_t patience,
                                                   double min_delta, int check_finite,
                                                   const double *stopping_threshold,
                                                   const double *divergence_threshold, ctorch_nn_module model) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (mode != CTORCH_BEST_MIN && mode != CTORCH_BEST_MAX)
    ctorch::fail_arg("mode", "must be CTORCH_BEST_MIN or CTORCH_BEST_MAX, got " +
                                 std::to_string(static_cast<int>(mode)));
  if (patience < 0) ctorch::fail_arg("patience", "must be >= 0, got " + std::to_string(patience));
  if (!std::isfinite(min_delta)) ctorch::fail_arg("min_delta", "must be finite");
  if (model) ctorch::check_handle(model, "model");
  auto es = std::make_unique<ctorch_early_stopping_s>();
  es->max_mode = mode == CTORCH_BEST_MAX;
  es->patience = patience;
  es->min_delta = es->max_mode ? min_delta : -min_delta;
  es->check_finite = check_finite != 0;
  if (stopping_threshold) es->has_stop = true, es->stopping_threshold = *stopping_threshold;
  if (divergence_threshold) es->has_div = true, es->divergence_threshold = *divergence_threshold;
  if (model) es->model = model->m;
  es->best = es->max_mode ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  *out = es.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_early_stopping_step(int *should_stop, int *improved, ctorch_early_stopping es,
                                                    double value) {
  CTORCH_TRY
  ctorch::require_out(should_stop, "should_stop");
  *should_stop = 0;
  if (improved) *improved = 0;
  ctorch::check_handle(es, "es");
  std::lock_guard<std::mutex> lock(es->mu);
  int64_t step = es->steps++;
  bool stop = false, better_now = false;
  if (es->check_finite && !std::isfinite(value)) {
    stop = true;
  } else if (es->has_stop && ctorch_es_impl::better(*es, value, es->stopping_threshold)) {
    stop = true;
  } else if (es->has_div && ctorch_es_impl::better(*es, -value, -es->divergence_threshold)) {
    stop = true;
  } else if (ctorch_es_impl::better(*es, value - es->min_delta, es->best)) {
    better_now = true;
  } else {
    es->wait += 1;
    stop = es->wait >= es->patience;
  }
  if (better_now) {
    // The copy first: if it fails (out of memory), the rule's state is unchanged.
    if (es->model) {
      ctorch::nn::Named copy = ctorch::nn::state_dict(*es->model);
      at::NoGradGuard no_grad;
      for (auto &kv : copy) kv.second = kv.second.clone();
      es->best_state = std::move(copy);
    }
    es->best = value;
    es->wait = 0;
    es->best_step = step;
  }
  *should_stop = stop ? 1 : 0;
  if (improved) *improved = better_now ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_early_stopping_best(double *best, int64_t *wait_count, int64_t *best_step,
                                                    ctorch_early_stopping es) {
  CTORCH_TRY
  ctorch::check_handle(es, "es");
  std::lock_guard<std::mutex> lock(es->mu);
  if (best) *best = es->best;
  if (wait_count) *wait_count = es->wait;
  if (best_step) *best_step = es->best_step;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_early_stopping_restore(ctorch_early_stopping es) {
  CTORCH_TRY
  ctorch::check_handle(es, "es");
  std::lock_guard<std::mutex> lock(es->mu);
  if (!es->model) ctorch::fail(CTORCH_VALUE, "no model was given to ctorch_early_stopping_new: nothing to restore");
  if (es->best_step < 0) ctorch::fail(CTORCH_VALUE, "no value has improved yet: there is no best state to restore");
  // load_state_dict checks every key and shape first, then copies under
  // NoGradGuard into the module's own tensors: the saved bits come back.
  ctorch::nn::load_state_dict(*es->model, es->best_state, /*strict=*/true);
  CTORCH_CATCH
}

CTORCH_API void ctorch_early_stopping_free(ctorch_early_stopping es) {
  if (ctorch::release_handle(es, __func__)) delete es;
}

}  // extern "C"
