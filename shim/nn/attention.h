// What transformer.cpp needs of attention.cpp beyond module.h: the
// MultiheadAttention class itself (the Transformer layers call its attend()
// with need_weights=False and an is_causal hint, and their eval fast path
// reads its weights), the mask and autograd tests both files' fast paths
// share, and make_child. Only these two files include it.
#pragma once

#include "compat/compat_nn.h"
#include "nn/module.h"

#include <initializer_list>
#include <utility>

namespace ctorch {
namespace nn {

// Which Python the attention follows: 2.x's rewrite or 1.13's (compat/compat_nn.h).
constexpr bool kV2 = compat::kPythonAttention2;

// A child built as a Python parent's constructor builds it, e.g.
// nn.Linear(d, d, bias=bias, **factory_kwargs): `kind`'s constructor from
// the `args` text, with the parent's device and dtype (from `factory`).
ModulePtr make_child(const char *kind, const std::string &args, const Args &factory);

// F._canonical_mask (Python 2.x): a bool mask becomes a float one, -inf
// where True, of dtype `target`; float masks pass; other dtypes fail.
at::Tensor canonical_mask(const at::Tensor &mask, const char *name, c10::ScalarType target);
// The fast paths' "torch.is_grad_enabled() and any(x.requires_grad ...)".
bool grad_needed(std::initializer_list<const at::Tensor *> ts);
// The fast paths' device test: every defined tensor on the CPU or CUDA.
bool cpu_or_cuda(std::initializer_list<const at::Tensor *> ts);

class MultiheadAttention : public Module {
 public:
  explicit MultiheadAttention(const Args &a);
  CTORCH_NN_COPYABLE(MultiheadAttention)

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &kw) override;

  // MultiheadAttention.forward: (attn_output, attn_output_weights or undefined).
  std::pair<at::Tensor, at::Tensor> attend(at::Tensor query, at::Tensor key, at::Tensor value, at::Tensor kpm,
                                           at::Tensor mask, bool need_weights, bool average, bool is_causal);
  // MultiheadAttention.merge_masks (2.x): one mask and its type for the fast paths.
  void merge_masks(const at::Tensor &mask, const at::Tensor &kpm, const at::Tensor &query, at::Tensor &merged,
                   c10::optional<int64_t> &type) const;

  // What the encoder layer's fast path reads (Python reads the attributes).
  const at::Tensor &in_proj_weight() const { return params[in_w_].t; }
  const at::Tensor &in_proj_bias() const { return params[in_b_].t; }
  const at::Tensor &out_proj_weight() const { return children[out_proj_].second->params[0].t; }
  const at::Tensor &out_proj_bias() const { return children[out_proj_].second->params[1].t; }
  int64_t embed_dim() const { return E_; }
  int64_t num_heads() const { return H_; }
  bool batch_first() const { return batch_first_; }
  bool same_embed_dim() const { return same_dim_; }

 private:
  void reset_parameters();

  int64_t E_ = 0, H_ = 1;
  double dropout_ = 0;
  bool add_zero_attn_ = false, same_dim_ = true, batch_first_ = false;
  size_t in_w_ = 0, q_w_ = 0, k_w_ = 0, v_w_ = 0, in_b_ = 0, out_proj_ = 0;
  long bias_k_ = -1, bias_v_ = -1;  // -1: not registered (add_bias_kv=False)
};

}  // namespace nn
}  // namespace ctorch
