// The sampler entry points: ctorch_lm_sampler_new/_free/_apply/_sample.
#include "core/exclusive.h"
#include "core/internal.h"
#include "lm_handles.h"

CTORCH_API ctorch_status ctorch_lm_sampler_new(ctorch_lm_sampler *out, const char *options) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::lm::SamplerOptions o = ctorch::lm::parse_sampler_options(options);
  auto s = std::make_shared<ctorch::lm::Sampler>(o);
  *out = new ctorch_lm_sampler_s{std::move(s)};
  CTORCH_CATCH
}

CTORCH_API void ctorch_lm_sampler_free(ctorch_lm_sampler s) {
  // A sampler in use by another thread's call is not freed (core/exclusive.h).
  if (s && ctorch::handle_kind_of(s) == ctorch::HandleKind::lm_sampler && s->sampler &&
      !ctorch::free_allowed(s->sampler->busy, __func__, s))
    return;
  if (ctorch::release_handle(s, __func__)) {
    // A stream may keep the sampler itself alive: leave it usable there.
    if (s->sampler) s->sampler->busy.owner.store(nullptr, std::memory_order_release);
    delete s;
  }
}

CTORCH_API ctorch_status ctorch_lm_sampler_apply(ctorch_tensor *out_scores, ctorch_lm_sampler s, ctorch_tensor logits,
                                                 const int64_t *history, size_t n) {
  CTORCH_TRY
  ctorch::require_out(out_scores, "out_scores");
  *out_scores = nullptr;
  ctorch::require_ptr(s, "s");
  ctorch::require_tensor(logits, "logits");
  ctorch::require_list(history, n, "history");
  ctorch::Exclusive hold(s->sampler->busy, "s", s);
  ctorch::Borrowed b(logits);
  *out_scores = ctorch::give(s->sampler->apply(b.get(), history, n));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_sampler_sample(int64_t *out_id, ctorch_lm_sampler s, ctorch_tensor logits,
                                                  const int64_t *history, size_t n) {
  CTORCH_TRY
  ctorch::require_out(out_id, "out_id");
  ctorch::require_ptr(s, "s");
  ctorch::require_tensor(logits, "logits");
  ctorch::require_list(history, n, "history");
  ctorch::Exclusive hold(s->sampler->busy, "s", s);
  ctorch::Borrowed b(logits);
  *out_id = s->sampler->sample(b.get(), history, n);
  CTORCH_CATCH
}
