// Generation streams (ctorch_lm_stream_*): the prompt decoded, then one id
// per call sampled, decoded and turned into text, until an end-of-sequence
// or stop id, a stop string, max_tokens or the context's end.
//
// The id sampled at one call is decoded at the start of the next: a caller
// that stops pulling after the last id it wanted pays for no forward it
// does not use. Text is handed out as it becomes final: the streaming
// decoder holds back an incomplete UTF-8 character, and the stream holds
// back the tail that could still grow into a stop string, so no piece a
// caller has printed is ever taken back.
#include <algorithm>
#include <cstring>

#include "core/exclusive.h"
#include "text/text.h"
#include "infer/options.h"
#include "lm/lm_handles.h"
#include "lm/model.h"
#include "lm/session.h"

namespace ctorch {
namespace lm {

// A member of the handle struct below, so not in an anonymous namespace
// (-Werror=subobject-linkage).
struct Stream {
  std::shared_ptr<Session> session;
  std::shared_ptr<Sampler> sampler;
  int64_t seq = 0;
  std::vector<int64_t> prompt;
  std::vector<int64_t> history;  // prompt + generated: the penalties' input_ids
  std::vector<int64_t> stop_ids;
  std::vector<std::string> stop_strings;
  std::unique_ptr<StreamDecoder> dec;
  std::string held;              // decoded text not yet handed out (a possible stop string's start)
  int64_t max_tokens = -1;       // -1: until the context is full
  int64_t generated = 0;
  int64_t pending = -1;          // sampled, not yet decoded
  bool started = false, done = false;
  const char *reason = "";
};

namespace {

bool is_stop_id(const Stream &st, int64_t id) {
  return std::find(st.stop_ids.begin(), st.stop_ids.end(), id) != st.stop_ids.end();
}

// The length of held's longest suffix that is a proper prefix of a stop
// string: text that may still become one, so it stays held.
size_t possible_stop_tail(const Stream &st) {
  size_t keep = 0;
  for (const auto &s : st.stop_strings)
    for (size_t k = std::min(s.size() - 1, st.held.size()); k > keep; --k)
      if (st.held.compare(st.held.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
  return keep;
}

// Ends the stream: what is held (and the decoder's rest) is final text.
std::string finish(Stream &st, const char *reason, bool keep_held) {
  st.done = true;
  st.reason = reason;
  std::string out;
  if (keep_held) out = st.held + st.dec->flush();
  st.held.clear();
  return out;
}

// One step; returns the text now final.
std::string step(Stream &st, int64_t *out_id) {
  *out_id = -1;
  if (st.done) return "";
  at::Tensor logits;
  if (!st.started) {
    logits = st.session->decode(st.seq, st.prompt.data(), st.prompt.size(), false);
    st.started = true;
  } else {
    if (st.session->length(st.seq) >= st.session->n_ctx()) return finish(st, "length", true);
    logits = st.session->decode(st.seq, &st.pending, 1, false);
    st.pending = -1;
  }
  int64_t id = st.sampler->sample(logits, st.history.data(), st.history.size());
  *out_id = id;
  st.history.push_back(id);
  ++st.generated;
  if (is_stop_id(st, id)) return finish(st, "stop", true);
  st.held += st.dec->push(id);
  for (const auto &s : st.stop_strings) {
    size_t at = st.held.find(s);
    if (at != std::string::npos) {
      st.held.resize(at);
      std::string out = st.held;
      finish(st, "stop", false);
      return out;
    }
  }
  if (st.generated == st.max_tokens) return finish(st, "length", true);
  st.pending = id;
  size_t keep = possible_stop_tail(st);
  std::string out = st.held.substr(0, st.held.size() - keep);
  st.held.erase(0, st.held.size() - keep);
  return out;
}

}  // namespace
}  // namespace lm
}  // namespace ctorch

struct ctorch_lm_stream_s {
  ctorch::lm::Stream st;
  ctorch::Busy busy;
  ctorch::Live<ctorch_lm_stream_s> live{this};  // last: see core/internal.h
};

using ctorch::lm::Stream;

CTORCH_API ctorch_status ctorch_lm_stream_new(ctorch_lm_stream *out, ctorch_lm_session s, int64_t seq,
                                              ctorch_lm_sampler sampler, const int64_t *prompt, size_t n,
                                              const char *options) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(s, "s");
  ctorch::require_ptr(sampler, "sampler");
  if (n == 0) ctorch::fail_arg("n", "the prompt needs at least one id");
  ctorch::require_list(prompt, n, "prompt");
  auto h = std::make_unique<ctorch_lm_stream_s>();
  Stream &st = h->st;
  st.session = s->session;
  st.sampler = sampler->sampler;
  st.session->check_sequence(seq, "seq");
  st.seq = seq;
  const ctorch::lm::Model &model = st.session->model();
  int64_t vocab = model.n_vocab();
  for (size_t i = 0; i < n; ++i)
    if (prompt[i] < 0 || prompt[i] >= vocab)
      ctorch::fail_arg("prompt", "id " + std::to_string(prompt[i]) + " at index " + std::to_string(i) +
                                     " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  st.prompt.assign(prompt, prompt + n);
  st.history = st.prompt;
  st.stop_ids = model.eos_ids();
  bool skip_special = true;
  for (const auto &item : ctorch::infer::option_items(options)) {
    if (item.key == "max_tokens") {
      char *end = nullptr;
      long long v = std::strtoll(item.value.c_str(), &end, 10);
      if (item.value.empty() || *end || v < 1) ctorch::fail_arg("options", "'" + item.text + "': max_tokens must be a positive integer");
      st.max_tokens = v;
    } else if (item.key == "skip_special") {
      if (!ctorch::infer::flag_value(item, &skip_special)) ctorch::fail_arg("options", "'" + item.text + "': skip_special is 0 or 1");
    } else {
      ctorch::fail_arg("options", "unknown key '" + item.key + "' (known: max_tokens, skip_special)");
    }
  }
  auto tok = model.tokenizer();
  if (!tok) ctorch::fail_arg("s", "the model has no tokenizer: a stream needs one for its text");
  st.dec = std::make_unique<ctorch::lm::StreamDecoder>(tok, skip_special);
  *out = h.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_stream_stop_string(ctorch_lm_stream st, const char *text) {
  CTORCH_TRY
  ctorch::require_ptr(st, "st");
  ctorch::Exclusive hold(st->busy, "st", st);
  ctorch::require_ptr(text, "text");
  if (!*text) ctorch::fail_arg("text", "a stop string may not be empty");
  if (st->st.started) ctorch::fail_arg("st", "stop strings are added before the first ctorch_lm_stream_next");
  st->st.stop_strings.emplace_back(text);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_stream_stop_token(ctorch_lm_stream st, int64_t id) {
  CTORCH_TRY
  ctorch::require_ptr(st, "st");
  ctorch::Exclusive hold(st->busy, "st", st);
  int64_t vocab = st->st.session->model().n_vocab();
  if (id < 0 || id >= vocab)
    ctorch::fail_arg("id", std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  st->st.stop_ids.push_back(id);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_stream_next(char **out_text, int64_t *out_id, int *out_done, ctorch_lm_stream st) {
  CTORCH_TRY
  ctorch::require_out(out_text, "out_text");
  *out_text = nullptr;
  ctorch::require_out(out_id, "out_id");
  ctorch::require_out(out_done, "out_done");
  ctorch::require_ptr(st, "st");
  ctorch::Exclusive hold(st->busy, "st", st);
  Stream &s = st->st;
  ctorch::Exclusive hold_session(s.session->busy, "st (its session)", st);
  ctorch::Exclusive hold_sampler(s.sampler->busy, "st (its sampler)", st);
  std::string text = ctorch::lm::step(s, out_id);
  *out_text = ctorch::text::c_string(text);
  *out_done = s.done ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_lm_stream_finish_reason(const char **out, ctorch_lm_stream st) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ctorch::require_ptr(st, "st");
  *out = st->st.reason;
  CTORCH_CATCH
}

CTORCH_API void ctorch_lm_stream_free(ctorch_lm_stream st) {
  if (!st) return;
  if (!ctorch::free_allowed(st->busy, __func__, st)) return;
  if (ctorch::release_handle(st, __func__)) delete st;
}
