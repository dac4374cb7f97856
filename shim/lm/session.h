// A session: the KV cache of n_seq sequences of up to n_ctx positions each,
// allocated whole when the session is made (on the model's device, in its
// dtype), and the lengths of its sequences. decode appends tokens to one
// sequence, decode_batch to several in one forward; rewind and fork move a
// sequence's end or copy a prefix. Nothing is appended when a call is
// refused. A Session is exclusive: its entry points hold `busy`.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/exclusive.h"
#include "lm/model.h"

namespace ctorch {
namespace lm {

class Session {
 public:
  // n_ctx <= 0: the model's training context.
  Session(std::shared_ptr<const Model> m, int64_t n_ctx, int64_t n_seq);

  at::Tensor decode(int64_t seq, const int64_t *tokens, size_t n, bool all_logits);
  at::Tensor decode_batch(const int64_t *seqs, const int64_t *counts, size_t n_seqs, const int64_t *tokens,
                          size_t n_tokens);
  int64_t length(int64_t seq) const;
  void rewind(int64_t seq, int64_t pos);
  void fork(int64_t dst, int64_t src, int64_t pos);

  int64_t n_ctx() const { return kv_.n_ctx; }
  int64_t n_seq() const { return int64_t(len_.size()); }
  const Model &model() const { return *model_; }
  const std::shared_ptr<const Model> &model_ptr() const { return model_; }
  // Refuses (INVALID_ARGUMENT naming arg) a sequence id outside [0, n_seq).
  void check_sequence(int64_t seq, const char *arg) const;

  Busy busy;

 private:
  std::shared_ptr<const Model> model_;
  KvCache kv_;
  std::vector<int64_t> len_;
};

}  // namespace lm
}  // namespace ctorch
