// The C entry points of models and sessions: ctorch_lm_load, _model_free,
// _describe, _session_new/_free, _decode, _decode_batch, _session_length,
// _rewind, _fork.
#include <ATen/ATen.h>

#include "core/exclusive.h"
#include "core/internal.h"
#include "text/text.h"
#include "lm/lm_handles.h"
#include "lm/model.h"
#include "lm/session.h"

namespace ctorch {
namespace lm {
namespace lm_api_detail {

Session &session_of(ctorch_lm_session s) {
  check_handle(s, "s");
  return *s->session;
}

}  // namespace lm_api_detail
}  // namespace lm
}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_lm_load(ctorch_lm_model *out, const char *path, const char *options) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(path, "path");
  if (!*path) ctorch::fail_arg("path", "is empty");
  ctorch::lm::LoadOptions opt = ctorch::lm::parse_load_options(options);
  auto h = std::make_unique<ctorch_lm_model_s>();
  h->model = ctorch::lm::Model::load(path, opt);
  *out = h.release();
  CTORCH_CATCH
}

CTORCH_API void ctorch_lm_model_free(ctorch_lm_model m) {
  if (ctorch::release_handle(m, "ctorch_lm_model_free")) delete m;
}

CTORCH_API ctorch_status ctorch_lm_describe(char **out_json, ctorch_lm_model m) {
  CTORCH_TRY
  ctorch::require_out(out_json, "out_json");
  *out_json = nullptr;
  ctorch::check_handle(m, "m");
  *out_json = ctorch::text::c_string(m->model->describe());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_session_new(ctorch_lm_session *out, ctorch_lm_model m, int64_t n_ctx,
                                               int64_t n_seq) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::check_handle(m, "m");
  auto h = std::make_unique<ctorch_lm_session_s>();
  h->session = std::make_shared<ctorch::lm::Session>(m->model, n_ctx, n_seq);
  *out = h.release();
  CTORCH_CATCH
}

CTORCH_API void ctorch_lm_session_free(ctorch_lm_session s) {
  if (!s) return;
  if (ctorch::handle_kind_of(s) == ctorch::HandleKind::lm_session &&
      !ctorch::free_allowed(s->session->busy, "ctorch_lm_session_free", s))
    return;
  if (ctorch::release_handle(s, "ctorch_lm_session_free")) {
    // A stream may keep the session itself alive: leave it usable there.
    s->session->busy.owner.store(nullptr, std::memory_order_release);
    delete s;
  }
}

CTORCH_API ctorch_status ctorch_lm_decode(ctorch_tensor *out_logits, ctorch_lm_session s, int64_t seq,
                                          const int64_t *tokens, size_t n, int all_logits) {
  CTORCH_TRY
  ctorch::require_out(out_logits, "out_logits");
  *out_logits = nullptr;
  auto &ses = ctorch::lm::lm_api_detail::session_of(s);
  ctorch::Exclusive hold(ses.busy, "s", s);
  *out_logits = ctorch::give(ses.decode(seq, tokens, n, all_logits != 0));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_decode_batch(ctorch_tensor *out_logits, ctorch_lm_session s, const int64_t *seqs,
                                                const int64_t *counts, size_t n_seqs, const int64_t *tokens,
                                                size_t n_tokens) {
  CTORCH_TRY
  ctorch::require_out(out_logits, "out_logits");
  *out_logits = nullptr;
  auto &ses = ctorch::lm::lm_api_detail::session_of(s);
  ctorch::Exclusive hold(ses.busy, "s", s);
  *out_logits = ctorch::give(ses.decode_batch(seqs, counts, n_seqs, tokens, n_tokens));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_session_length(int64_t *out, ctorch_lm_session s, int64_t seq) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  auto &ses = ctorch::lm::lm_api_detail::session_of(s);
  ctorch::Exclusive hold(ses.busy, "s", s);
  *out = ses.length(seq);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_session_rewind(ctorch_lm_session s, int64_t seq, int64_t pos) {
  CTORCH_TRY
  auto &ses = ctorch::lm::lm_api_detail::session_of(s);
  ctorch::Exclusive hold(ses.busy, "s", s);
  ses.rewind(seq, pos);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_session_fork(ctorch_lm_session s, int64_t dst, int64_t src, int64_t pos) {
  CTORCH_TRY
  auto &ses = ctorch::lm::lm_api_detail::session_of(s);
  ctorch::Exclusive hold(ses.busy, "s", s);
  ses.fork(dst, src, pos);
  CTORCH_CATCH
}

}  // extern "C"
