// The sampler chain: logits processors in transformers' order, then a
// greedy pick or a seeded draw. Each processor is computed with libtorch's
// operators as transformers' LogitsProcessor computes it, so the scores are
// the same bits; frequency and presence penalties follow the OpenAI API's
// definitions (logit - count * frequency - (count > 0) * presence).
// A Sampler is exclusive (one thread at a time): it holds its generator.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/Generator.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/exclusive.h"

namespace ctorch {
namespace lm {

struct SamplerOptions {
  double repetition_penalty = 1.0;  // 1: off
  double frequency_penalty = 0.0, presence_penalty = 0.0;  // 0: off
  double temperature = 0.0;         // 0: greedy (argmax)
  int64_t top_k = 0;                // 0: off
  double top_p = 1.0;               // 1: off
  double min_p = 0.0;               // 0: off
  uint64_t seed = 0;
};

// Parses "key=value,..." (ctorch_lm_sampler_new's options); throws
// StatusError naming the key for an unknown key or a value out of range.
SamplerOptions parse_sampler_options(const char *text);

class Sampler {
 public:
  explicit Sampler(const SamplerOptions &o);
  // The processed scores, float32, shaped as logits ([V] or [1, V]).
  at::Tensor apply(const at::Tensor &logits, const int64_t *history, size_t n) const;
  // One id: argmax of the scores when greedy, else multinomial of their softmax.
  int64_t sample(const at::Tensor &logits, const int64_t *history, size_t n);
  const SamplerOptions &options() const { return o_; }
  // Held by each entry point and by a stream's step (core/exclusive.h).
  Busy busy;

 private:
  SamplerOptions o_;
  at::Generator gen_;
};

}  // namespace lm
}  // namespace ctorch
