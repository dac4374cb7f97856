// The sampler chain. Each processor is the sequence of libtorch operators
// transformers' LogitsProcessor runs (same operators, same order, same
// scalar types), so that on the same libtorch the scores are the same bits:
//   RepetitionPenaltyLogitsProcessor  gather, where(< 0, * p, / p), scatter
//   frequency/presence (OpenAI)       logit - count * f - (count > 0) * p
//   TemperatureLogitsWarper           scores / t
//   TopKLogitsWarper                  scores < topk(k).values[-1] -> -inf
//   TopPLogitsWarper                  ascending sort, softmax, cumsum <= 1 - p
//                                     (the last min_tokens_to_keep=1 kept) -> -inf
//   MinPLogitsWarper                  softmax < min_p * amax, the top token kept -> -inf
// then argmax (greedy) or torch.multinomial(softmax(scores), 1) on the
// sampler's own CPU generator, which equals transformers' draw after
// torch.manual_seed(seed) while the probabilities are the same bits.
#include "sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/multinomial.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/topk.h>
#include <ATen/ops/where.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/internal.h"

namespace ctorch {
namespace lm {
namespace sampler_detail {  // named: shim/lm's sources share unity batches

[[noreturn]] void bad_option(const std::string &key, const std::string &msg) {
  fail_arg("options", "'" + key + "' " + msg);
}

double parse_double(const std::string &key, const std::string &v) {
  char *end = nullptr;
  errno = 0;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || errno == ERANGE || !std::isfinite(d)) bad_option(key, "must be a finite number, not '" + v + "'");
  return d;
}
uint64_t parse_u64(const std::string &key, const std::string &v) {
  char *end = nullptr;
  errno = 0;
  if (v.empty() || v[0] == '-' || v[0] == '+') bad_option(key, "must be a non-negative integer, not '" + v + "'");
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (*end || errno == ERANGE) bad_option(key, "must be a non-negative integer below 2^64, not '" + v + "'");
  return x;
}

}  // namespace sampler_detail

SamplerOptions parse_sampler_options(const char *text) {
  using sampler_detail::bad_option;
  using sampler_detail::parse_double;
  using sampler_detail::parse_u64;
  SamplerOptions o;
  if (!text) return o;
  std::string s(text);
  std::vector<std::string> seen;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? s.size() : comma + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos) fail_arg("options", "'" + item + "' is not key=value");
    std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    for (const auto &k : seen)
      if (k == key) bad_option(key, "is given twice");
    seen.push_back(key);
    if (key == "repetition_penalty") {
      o.repetition_penalty = parse_double(key, val);
      if (!(o.repetition_penalty > 0)) bad_option(key, "must be > 0 (1 = off)");
    } else if (key == "frequency_penalty") {
      o.frequency_penalty = parse_double(key, val);
    } else if (key == "presence_penalty") {
      o.presence_penalty = parse_double(key, val);
    } else if (key == "temperature") {
      o.temperature = parse_double(key, val);
      if (o.temperature < 0) bad_option(key, "must be >= 0 (0 = greedy)");
    } else if (key == "top_k") {
      uint64_t k = parse_u64(key, val);
      if (k > uint64_t(std::numeric_limits<int64_t>::max())) bad_option(key, "is too large");
      o.top_k = static_cast<int64_t>(k);
    } else if (key == "top_p") {
      o.top_p = parse_double(key, val);
      if (!(o.top_p > 0 && o.top_p <= 1)) bad_option(key, "must be in (0, 1] (1 = off)");
    } else if (key == "min_p") {
      o.min_p = parse_double(key, val);
      if (!(o.min_p >= 0 && o.min_p <= 1)) bad_option(key, "must be in [0, 1] (0 = off)");
    } else if (key == "seed") {
      o.seed = parse_u64(key, val);
    } else {
      fail_arg("options", "unknown key '" + key +
                              "' (known: repetition_penalty, frequency_penalty, presence_penalty, temperature, "
                              "top_k, top_p, min_p, seed)");
    }
  }
  return o;
}

Sampler::Sampler(const SamplerOptions &o) : o_(o), gen_(at::make_generator<at::CPUGeneratorImpl>(o.seed)) {}

at::Tensor Sampler::apply(const at::Tensor &logits, const int64_t *history, size_t n) const {
  if (!logits.defined()) fail_arg("logits", "is undefined");
  if (!(logits.dim() == 1 || (logits.dim() == 2 && logits.size(0) == 1)))
    fail_arg("logits", "must be [V] or [1, V]");
  if (!at::isFloatingType(logits.scalar_type())) fail_arg("logits", "must be a floating-point tensor");
  const int64_t V = logits.size(-1);
  if (V == 0) fail_arg("logits", "has no entries");
  for (size_t k = 0; k < n; k++)
    if (history[k] < 0 || history[k] >= V)
      fail_arg("history", "id " + std::to_string(history[k]) + " at " + std::to_string(k) + " is outside [0, " +
                              std::to_string(V) + ")");
  at::Tensor scores = logits.reshape({1, V}).to(at::kFloat);
  at::Tensor ids;
  if (n) {
    ids = at::from_blob(const_cast<int64_t *>(history), {1, static_cast<int64_t>(n)}, at::kLong)
              .to(scores.device(), /*non_blocking=*/false, /*copy=*/true);
  }
  if (n && o_.repetition_penalty != 1.0) {
    at::Tensor score = at::gather(scores, 1, ids);
    score = at::where(score.lt(0), score.mul(o_.repetition_penalty), score.div(o_.repetition_penalty));
    scores = scores.scatter(1, ids, score);
  }
  if (n && (o_.frequency_penalty != 0.0 || o_.presence_penalty != 0.0)) {
    at::Tensor counts = at::bincount(ids.reshape({-1}), {}, V).to(at::kFloat).reshape({1, V});
    scores = scores.sub(counts.mul(o_.frequency_penalty)).sub(counts.gt(0).to(at::kFloat).mul(o_.presence_penalty));
  }
  const float kNegInf = -std::numeric_limits<float>::infinity();
  if (o_.temperature > 0 && o_.temperature != 1.0) scores = scores.div(o_.temperature);
  if (o_.top_k > 0) {
    int64_t k = std::min(std::max<int64_t>(o_.top_k, 1), V);
    at::Tensor kth = std::get<0>(at::topk(scores, k)).select(-1, k - 1).unsqueeze(-1);
    scores = scores.masked_fill(scores.lt(kth), kNegInf);
  }
  if (o_.top_p < 1.0) {
    auto sorted = at::sort(scores, -1, /*descending=*/false);
    at::Tensor cum = at::softmax(std::get<0>(sorted), -1).cumsum(-1);
    at::Tensor remove = cum.le(1 - o_.top_p);
    remove.select(-1, V - 1).fill_(false);  // min_tokens_to_keep = 1
    remove = remove.scatter(1, std::get<1>(sorted), remove);
    scores = scores.masked_fill(remove, kNegInf);
  }
  if (o_.min_p > 0) {
    at::Tensor probs = at::softmax(scores, -1);
    at::Tensor top = probs.amax(-1, /*keepdim=*/true);
    at::Tensor remove = probs.lt(top.mul(o_.min_p));
    at::Tensor keep = std::get<1>(at::topk(probs, 1, -1));  // min_tokens_to_keep = 1
    remove.scatter_(-1, keep, false);
    scores = scores.masked_fill(remove, kNegInf);
  }
  return scores.reshape(logits.sizes());
}

int64_t Sampler::sample(const at::Tensor &logits, const int64_t *history, size_t n) {
  at::Tensor scores = apply(logits, history, n).reshape({1, -1});
  if (o_.temperature == 0) return at::argmax(scores, -1).item<int64_t>();
  at::Tensor probs = at::softmax(scores, -1);
  if (!probs.device().is_cpu()) probs = probs.cpu();  // the draw is the CPU generator's
  return at::multinomial(probs, 1, /*replacement=*/false, gen_).item<int64_t>();
}

}  // namespace lm
}  // namespace ctorch
