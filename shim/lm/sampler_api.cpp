// The sampler entry points: ctorch_lm_sampler_new/_free/_apply/_sample.
#include "core/exclusive.h"
#include "core/internal.h"
#include "lm_handles.h"

using namespace ctorch;

CTORCH_API ctorch_status ctorch_lm_sampler_new(ctorch_lm_sampler *out, const char *options) {
  CTORCH_TRY
  require_out(out, "out");
  *out = nullptr;
  lm::SamplerOptions o = lm::parse_sampler_options(options);
  auto s = std::make_shared<lm::Sampler>(o);
  *out = new ctorch_lm_sampler_s{std::move(s)};
  CTORCH_CATCH
}

CTORCH_API void ctorch_lm_sampler_free(ctorch_lm_sampler s) {
  // A sampler in use by another thread's call is not freed (core/exclusive.h).
  if (s && handle_kind_of(s) == HandleKind::lm_sampler && s->sampler &&
      !free_allowed(s->sampler->busy, __func__, s))
    return;
  if (release_handle(s, __func__)) {
    // A stream may keep the sampler itself alive: leave it usable there.
    if (s->sampler) s->sampler->busy.owner.store(nullptr, std::memory_order_release);
    delete s;
  }
}

CTORCH_API ctorch_status ctorch_lm_sampler_apply(ctorch_tensor *out_scores, ctorch_lm_sampler s, ctorch_tensor logits,
                                                 const int64_t *history, size_t n) {
  CTORCH_TRY
  require_out(out_scores, "out_scores");
  *out_scores = nullptr;
  require_ptr(s, "s");
  require_tensor(logits, "logits");
  require_list(history, n, "history");
  Exclusive hold(s->sampler->busy, "s", s);
  Borrowed b(logits);
  *out_scores = give(s->sampler->apply(b.get(), history, n));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_sampler_sample(int64_t *out_id, ctorch_lm_sampler s, ctorch_tensor logits,
                                                  const int64_t *history, size_t n) {
  CTORCH_TRY
  require_out(out_id, "out_id");
  require_ptr(s, "s");
  require_tensor(logits, "logits");
  require_list(history, n, "history");
  Exclusive hold(s->sampler->busy, "s", s);
  Borrowed b(logits);
  *out_id = s->sampler->sample(b.get(), history, n);
  CTORCH_CATCH
}
