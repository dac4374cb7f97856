// Sessions: the cache allocated once, every argument checked before the
// forward runs (so a refused call appends nothing), lengths moved only after
// the forward succeeded.
#include "lm/session.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <unistd.h>

#include <unordered_set>

#include "core/internal.h"

namespace ctorch {
namespace lm {

Session::Session(std::shared_ptr<const Model> m, int64_t n_ctx, int64_t n_seq) : model_(std::move(m)) {
  const ModelConfig &c = model_->config();
  if (n_ctx <= 0) n_ctx = c.n_ctx_train;
  if (n_ctx > Bounds::ctx) fail_arg("n_ctx", std::to_string(n_ctx) + " is more than " + std::to_string(Bounds::ctx));
  if (c.arch == "gpt2" && n_ctx > c.n_ctx_train)
    fail_arg("n_ctx", std::to_string(n_ctx) + " is more than the " + std::to_string(c.n_ctx_train) +
                          " positions gpt2's position embedding has");
  if (n_seq < 1 || n_seq > 65536) fail_arg("n_seq", std::to_string(n_seq) + " is outside [1, 65536]");
  const auto &opt = model_->options();
  // 2 (keys, values) * layers * n_seq * kv heads * n_ctx * head size elements.
  const double bytes = 2.0 * double(c.n_layer) * double(n_seq) * double(c.n_head_kv) * double(n_ctx) *
                       double(c.head_dim) * double(c10::elementSize(opt.dtype));
  if (opt.device.is_cpu()) {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && bytes > double(pages) * double(page))
      fail(CTORCH_OUT_OF_MEMORY, "a cache of " + std::to_string(n_seq) + " sequences of " + std::to_string(n_ctx) +
                                     " positions takes " + std::to_string(int64_t(bytes)) +
                                     " bytes, more than this machine's memory");
  }
  at::NoGradGuard no_grad;
  auto o = at::TensorOptions().dtype(opt.dtype).device(opt.device);
  kv_.n_ctx = n_ctx;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    kv_.k.push_back(at::zeros({n_seq, c.n_head_kv, n_ctx, c.head_dim}, o));
    kv_.v.push_back(at::zeros({n_seq, c.n_head_kv, n_ctx, c.head_dim}, o));
  }
  model_->rope_tables(n_ctx, &kv_.cos, &kv_.sin);
  len_.assign(size_t(n_seq), 0);
}

void Session::check_sequence(int64_t seq, const char *arg) const {
  if (seq < 0 || seq >= n_seq())
    fail_arg(arg, "sequence " + std::to_string(seq) + " is outside [0, " + std::to_string(n_seq()) + ")");
}

namespace session_detail {

void check_tokens(const int64_t *tokens, size_t n, int64_t n_vocab) {
  for (size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= n_vocab)
      fail_arg("tokens", "entry " + std::to_string(i) + " is " + std::to_string(tokens[i]) +
                             ", outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
}

}  // namespace session_detail

at::Tensor Session::decode(int64_t seq, const int64_t *tokens, size_t n, bool all_logits) {
  check_sequence(seq, "seq");
  if (n == 0) fail_arg("n", "is 0: decode needs at least one token");
  require_list(tokens, n, "tokens");
  session_detail::check_tokens(tokens, n, model_->config().n_vocab);
  const int64_t have = len_[size_t(seq)];
  if (int64_t(n) > kv_.n_ctx - have)
    fail_arg("n", std::to_string(n) + " more tokens do not fit: sequence " + std::to_string(seq) + " holds " +
                      std::to_string(have) + " of the session's n_ctx " + std::to_string(kv_.n_ctx) +
                      " positions (nothing appended)");
  at::NoGradGuard no_grad;
  Batch b;
  b.seqs = {seq};
  b.past = {have};
  b.count = {int64_t(n)};
  b.ids = at::tensor(at::ArrayRef<int64_t>(tokens, n), at::TensorOptions().dtype(at::kLong))
              .view({1, int64_t(n)})
              .to(model_->options().device);
  at::Tensor logits = model_->forward(kv_, b, all_logits);
  len_[size_t(seq)] = have + int64_t(n);
  return logits;
}

at::Tensor Session::decode_batch(const int64_t *seqs, const int64_t *counts, size_t n_seqs, const int64_t *tokens,
                                 size_t n_tokens) {
  if (n_seqs == 0) fail_arg("n_seqs", "is 0");
  require_list(seqs, n_seqs, "seqs");
  require_list(counts, n_seqs, "counts");
  require_list(tokens, n_tokens, "tokens");
  if (int64_t(n_seqs) > n_seq()) fail_arg("n_seqs", "is more than the session's " + std::to_string(n_seq()) + " sequences");
  std::unordered_set<int64_t> seen;
  int64_t total = 0, T = 0;
  for (size_t i = 0; i < n_seqs; ++i) {
    check_sequence(seqs[i], "seqs");
    if (!seen.insert(seqs[i]).second) fail_arg("seqs", "sequence " + std::to_string(seqs[i]) + " appears twice");
    if (counts[i] < 1) fail_arg("counts", "entry " + std::to_string(i) + " is " + std::to_string(counts[i]) + ", not >= 1");
    const int64_t have = len_[size_t(seqs[i])];
    if (counts[i] > kv_.n_ctx - have)
      fail_arg("counts", std::to_string(counts[i]) + " more tokens do not fit: sequence " + std::to_string(seqs[i]) +
                             " holds " + std::to_string(have) + " of the session's n_ctx " + std::to_string(kv_.n_ctx) +
                             " positions (nothing appended)");
    total += counts[i];
    T = std::max(T, counts[i]);
  }
  if (uint64_t(total) != n_tokens)
    fail_arg("n_tokens", std::to_string(n_tokens) + " is not the sum of counts (" + std::to_string(total) + ")");
  session_detail::check_tokens(tokens, n_tokens, model_->config().n_vocab);
  at::NoGradGuard no_grad;
  Batch b;
  const int64_t B = int64_t(n_seqs);
  std::vector<int64_t> ids(static_cast<size_t>(B * T), 0);  // padding: id 0, never attended to
  size_t at = 0;
  for (int64_t i = 0; i < B; ++i) {
    b.seqs.push_back(seqs[i]);
    b.past.push_back(len_[size_t(seqs[i])]);
    b.count.push_back(counts[i]);
    for (int64_t t = 0; t < counts[i]; ++t) ids[size_t(i * T + t)] = tokens[at++];
  }
  b.ids = at::tensor(ids, at::TensorOptions().dtype(at::kLong)).view({B, T}).to(model_->options().device);
  at::Tensor logits = model_->forward(kv_, b, false);
  for (int64_t i = 0; i < B; ++i) len_[size_t(seqs[i])] += counts[i];
  return logits;
}

int64_t Session::length(int64_t seq) const {
  check_sequence(seq, "seq");
  return len_[size_t(seq)];
}

void Session::rewind(int64_t seq, int64_t pos) {
  check_sequence(seq, "seq");
  if (pos < 0 || pos > len_[size_t(seq)])
    fail_arg("pos", std::to_string(pos) + " is outside [0, " + std::to_string(len_[size_t(seq)]) + "]");
  len_[size_t(seq)] = pos;
}

void Session::fork(int64_t dst, int64_t src, int64_t pos) {
  check_sequence(dst, "dst");
  check_sequence(src, "src");
  if (pos < 0 || pos > len_[size_t(src)])
    fail_arg("pos", std::to_string(pos) + " is outside [0, " + std::to_string(len_[size_t(src)]) + "]");
  if (dst != src && pos > 0) {
    at::NoGradGuard no_grad;
    for (size_t l = 0; l < kv_.k.size(); ++l) {
      kv_.k[l].select(0, dst).narrow(1, 0, pos).copy_(kv_.k[l].select(0, src).narrow(1, 0, pos));
      kv_.v[l].select(0, dst).narrow(1, 0, pos).copy_(kv_.v[l].select(0, src).narrow(1, 0, pos));
    }
  }
  len_[size_t(dst)] = pos;
}

}  // namespace lm
}  // namespace ctorch
