// The tokenizer entry points (include/ctorch.h, "Language models"):
// ctorch_lm_tokenize, _detokenize, _token_text and the streaming decoder.
// They reach the tokenizer through the model: Model::tokenizer() (model.h).
#include <ATen/ops/empty.h>

#include <cstdlib>
#include <cstring>

#include "core/exclusive.h"
#include "core/internal.h"
#include "text/text.h"
#include "text/utf8.h"
#include "lm/lm_handles.h"
#include "lm/model.h"

namespace {

// The model's tokenizer; INVALID_ARGUMENT where the model was loaded without one.
std::shared_ptr<const ctorch::lm::Tokenizer> tokenizer_of(ctorch_lm_model m) {
  ctorch::check_handle(m, "m");
  std::shared_ptr<const ctorch::lm::Tokenizer> t = m->model->tokenizer();
  if (!t) ctorch::fail_arg("m", "the model has no tokenizer (its folder or file holds none)");
  return t;
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_lm_tokenize(ctorch_tensor *out_ids, ctorch_lm_model m, const char *text, int add_special,
                                            int parse_special) {
  CTORCH_TRY
  ctorch::require_out(out_ids, "out_ids");
  *out_ids = nullptr;
  auto tok = tokenizer_of(m);
  ctorch::require_ptr(text, "text");
  std::string s(text);
  size_t bad = 0;
  if (!ctorch::valid_utf8(s.data(), s.size(), &bad))
    ctorch::fail_arg("text", "is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  std::vector<int64_t> ids = tok->encode(s, add_special != 0, parse_special != 0);
  at::Tensor t = at::empty({int64_t(ids.size())}, at::TensorOptions().dtype(at::kLong));
  if (!ids.empty()) std::memcpy(t.data_ptr<int64_t>(), ids.data(), ids.size() * sizeof(int64_t));
  *out_ids = ctorch::give(std::move(t));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_detokenize(char **out_text, ctorch_lm_model m, const int64_t *ids, size_t n,
                                              int skip_special) {
  CTORCH_TRY
  ctorch::require_out(out_text, "out_text");
  *out_text = nullptr;
  auto tok = tokenizer_of(m);
  ctorch::require_list(ids, n, "ids");
  for (size_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= tok->n_vocab())
      ctorch::fail_arg("ids", "entry " + std::to_string(i) + " (" + std::to_string(ids[i]) +
                                  ") is outside the vocabulary [0, " + std::to_string(tok->n_vocab()) + ")");
  *out_text = ctorch::text::c_string(tok->decode(ids, n, skip_special != 0));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_token_text(char **out_text, ctorch_lm_model m, int64_t id) {
  CTORCH_TRY
  ctorch::require_out(out_text, "out_text");
  *out_text = nullptr;
  auto tok = tokenizer_of(m);
  if (id < 0 || id >= tok->n_vocab())
    ctorch::fail_arg("id", std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(tok->n_vocab()) + ")");
  *out_text = ctorch::text::c_string(tok->token_text(id));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_detokenizer_new(ctorch_lm_detokenizer *out, ctorch_lm_model m, int skip_special) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto tok = tokenizer_of(m);
  auto d = std::make_unique<ctorch_lm_detokenizer_s>();
  d->dec = std::make_unique<ctorch::lm::StreamDecoder>(std::move(tok), skip_special != 0);
  *out = d.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_detokenizer_push(char **out_text, ctorch_lm_detokenizer d, int64_t id) {
  CTORCH_TRY
  ctorch::require_out(out_text, "out_text");
  *out_text = nullptr;
  ctorch::check_handle(d, "d");
  ctorch::Exclusive hold(d->busy, "d", d);
  *out_text = ctorch::text::c_string(d->dec->push(id));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_detokenizer_flush(char **out_text, ctorch_lm_detokenizer d) {
  CTORCH_TRY
  ctorch::require_out(out_text, "out_text");
  *out_text = nullptr;
  ctorch::check_handle(d, "d");
  ctorch::Exclusive hold(d->busy, "d", d);
  *out_text = ctorch::text::c_string(d->dec->flush());
  CTORCH_CATCH
}

CTORCH_API void ctorch_lm_detokenizer_free(ctorch_lm_detokenizer d) {
  if (ctorch::release_handle(d, __func__)) delete d;
}

}  // extern "C"

