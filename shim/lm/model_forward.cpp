// The decoder's forward over a KV cache, op for op as transformers computes
// it (RMSNorm in float32, RoPE's rotate_half, softmax in float32), shaped
// for speed: q/k/v in one matrix product, grouped-query attention without
// repeating the keys (the query heads of one key head share its product),
// keys and values written into the preallocated cache in place, attention
// over each row's cached prefix only, no mask at all for one new token of
// one sequence, and the output head only on the positions asked for.
#include <ATen/ATen.h>

#include <cmath>
#include <limits>

#include "core/internal.h"
#include "lm/model.h"

namespace ctorch {
namespace lm {

namespace forward_detail {

// x @ w^T + b. Packed quantised rows go through the packed kernels (in
// float32, back to x's dtype). One row (a token's decode step) of a float
// matrix goes through a matrix-vector product: a GEMM of one row packs the
// whole weight matrix first, which cost OpenBLAS 70% of a decode step; a
// GEMV reads it once.
at::Tensor linear(const at::Tensor &x, const Linear &l, const at::Tensor &b) {
  if (l.packed()) {
    at::Tensor y = qweight_linear(x, l.q).to(x.scalar_type());
    return b.defined() ? y + b : y;
  }
  const at::Tensor &w = l.w;
  if (x.numel() != x.size(-1)) return at::linear(x, w, b);
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = w.size(0);
  at::Tensor v = x.reshape({x.size(-1)});
  at::Tensor y = b.defined() ? at::addmv(b, w, v) : at::mv(w, v);
  return y.view(shape);
}

// rotate_half(x) = cat(-x2, x1) over the last dim.
at::Tensor rotate_half(const at::Tensor &x) {
  auto parts = x.chunk(2, -1);
  return at::cat({-parts[1], parts[0]}, -1);
}

}  // namespace forward_detail

void Model::rope_tables(int64_t n_ctx, at::Tensor *cos, at::Tensor *sin) const {
  if (cfg_.arch == "gpt2") return;
  const ModelConfig &c = cfg_;
  const int64_t D = c.head_dim;
  auto f32 = at::TensorOptions().dtype(at::kFloat);
  // transformers: 1 / base ** (arange(0, dim, 2) / dim), in float32.
  at::Tensor expo = at::arange(0, D, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) / double(D);
  at::Tensor inv_freq = 1.0 / at::pow(c.rope_theta, expo);
  if (c.rope_type == "linear") {
    inv_freq = inv_freq / c.rope_factor;
  } else if (c.rope_type == "llama3") {
    const double factor = c.rope_factor, lo = c.rope_low_freq_factor, hi = c.rope_high_freq_factor;
    const double old_ctx = double(c.rope_original_ctx);
    const double low_wavelen = old_ctx / lo, high_wavelen = old_ctx / hi;
    at::Tensor wavelen = 2 * M_PI / inv_freq;
    at::Tensor scaled = at::where(wavelen > low_wavelen, inv_freq / factor, inv_freq);
    at::Tensor smooth = (old_ctx / wavelen - lo) / (hi - lo);
    at::Tensor smoothed = (1 - smooth) * scaled / factor + smooth * scaled;
    at::Tensor medium = at::logical_not(wavelen < high_wavelen).logical_and(at::logical_not(wavelen > low_wavelen));
    inv_freq = at::where(medium, smoothed, scaled);
  }
  if (!c.rope_freq_factors.empty())
    inv_freq = inv_freq / at::tensor(c.rope_freq_factors, f32);
  at::Tensor freqs = at::outer(at::arange(n_ctx, f32), inv_freq);  // [n_ctx, D/2]
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  *cos = emb.cos().to(opt_.device, opt_.dtype);
  *sin = emb.sin().to(opt_.device, opt_.dtype);
}

at::Tensor Model::norm(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b) const {
  if (cfg_.arch == "gpt2") return at::layer_norm(x, {cfg_.n_embd}, w, b, cfg_.norm_eps);
  // transformers' RMSNorm: in float32, back to the input's dtype, then the weight.
  at::Tensor h = x.to(at::kFloat);
  h = h * at::rsqrt(h.pow(2).mean(-1, true) + cfg_.norm_eps);
  return w * h.to(x.scalar_type());
}

at::Tensor Model::mlp(const LayerWeights &w, const at::Tensor &x) const {
  at::Tensor up = forward_detail::linear(x, w.wup, w.bup);
  at::Tensor h;
  if (cfg_.act == "silu") {
    auto gu = up.chunk(2, -1);
    h = at::silu(gu[0]) * gu[1];
  } else {
    h = at::gelu(up, cfg_.act == "gelu_tanh" ? "tanh" : "none");
  }
  return forward_detail::linear(h, w.wdown, w.bdown);
}


at::Tensor Model::attention(const LayerWeights &w, const at::Tensor &x, int64_t layer, KvCache &kv, const Batch &b,
                            const at::Tensor &cos, const at::Tensor &sin, const at::Tensor &mask,
                            int64_t window) const {
  const ModelConfig &c = cfg_;
  const int64_t B = x.size(0), T = x.size(1), H = c.n_head, Hkv = c.n_head_kv, D = c.head_dim, G = H / Hkv;
  at::Tensor qkv = forward_detail::linear(x, w.wqkv, w.bqkv);  // [B, T, (H + 2 Hkv) D]
  auto parts = qkv.split({H * D, Hkv * D, Hkv * D}, -1);
  at::Tensor q = parts[0].view({B, T, H, D}), k = parts[1].view({B, T, Hkv, D}), v = parts[2].view({B, T, Hkv, D});
  if (cos.defined()) {  // cos/sin: [B, T, 1, D]
    q = q * cos + forward_detail::rotate_half(q) * sin;
    k = k * cos + forward_detail::rotate_half(k) * sin;
  }
  // The new keys and values into the cache at each row's positions.
  at::Tensor kc = kv.k[layer], vc = kv.v[layer];  // [n_seq, Hkv, n_ctx, D]
  for (int64_t i = 0; i < B; ++i) {
    const int64_t s = b.seqs[i], p = b.past[i], n = b.count[i];
    kc.select(0, s).narrow(1, p, n).copy_(k.select(0, i).narrow(0, 0, n).transpose(0, 1));
    vc.select(0, s).narrow(1, p, n).copy_(v.select(0, i).narrow(0, 0, n).transpose(0, 1));
  }
  // Keys and values of each row's prefix: a view of the cache for one row,
  // the rows' slabs gathered (to the longest) for several.
  int64_t L = 0;
  for (int64_t i = 0; i < B; ++i) L = std::max(L, b.past[i] + b.count[i]);
  at::Tensor keys, vals;
  if (B == 1) {
    keys = kc.narrow(0, b.seqs[0], 1).narrow(2, 0, L);
    vals = vc.narrow(0, b.seqs[0], 1).narrow(2, 0, L);
  } else {
    at::Tensor idx = at::tensor(b.seqs, at::TensorOptions().dtype(at::kLong)).to(kc.device());
    keys = kc.narrow(2, 0, L).index_select(0, idx);
    vals = vc.narrow(2, 0, L).index_select(0, idx);
  }
  // One token of one sequence has no mask: a sliding window is the last
  // `window` keys (the mask holds it otherwise).
  if (window > 0 && !mask.defined() && L > window) {
    keys = keys.narrow(2, L - window, window);
    vals = vals.narrow(2, L - window, window);
  }
  // Query heads grouped by their key head: [B, Hkv, G*T, D].
  at::Tensor qg = q.view({B, T, Hkv, G, D}).permute({0, 2, 3, 1, 4}).reshape({B, Hkv, G * T, D});
  at::Tensor scores = at::matmul(qg, keys.transpose(-1, -2)) * (1.0 / std::sqrt(double(D)));  // [B, Hkv, G*T, L]
  if (mask.defined()) scores = (scores.view({B, Hkv, G, T, L}) + mask).view({B, Hkv, G * T, L});
  at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(x.scalar_type());
  at::Tensor out = at::matmul(probs, vals);  // [B, Hkv, G*T, D]
  out = out.view({B, Hkv, G, T, D}).permute({0, 3, 1, 2, 4}).reshape({B, T, H * D});
  return forward_detail::linear(out, w.wo, w.bo);
}

at::Tensor Model::forward(KvCache &kv, const Batch &b, bool all_logits) const {
  if (step_applies(kv, b)) return step(kv, b);  // one new token per row, float32 on the CPU
  const ModelConfig &c = cfg_;
  const int64_t B = b.ids.size(0), T = b.ids.size(1);
  const auto dev = opt_.device;
  auto i64 = at::TensorOptions().dtype(at::kLong);
  // Positions [B, T]: past[i] + t (padded rows clamped inside the cache).
  std::vector<int64_t> pos_v(static_cast<size_t>(B * T));
  int64_t L = 0;
  for (int64_t i = 0; i < B; ++i) {
    L = std::max(L, b.past[i] + b.count[i]);
    for (int64_t t = 0; t < T; ++t) pos_v[size_t(i * T + t)] = std::min(b.past[i] + t, kv.n_ctx - 1);
  }
  at::Tensor pos = at::tensor(pos_v, i64).to(dev);
  at::Tensor h = w_.tok_embd_q.defined() ? qweight_embedding(w_.tok_embd_q, b.ids).to(opt_.dtype)
                                          : at::embedding(w_.tok_embd, b.ids);  // [B, T, E]
  if (w_.pos_embd.defined()) h = h + at::embedding(w_.pos_embd, pos).view({B, T, c.n_embd});
  at::Tensor cos, sin;
  if (kv.cos.defined()) {
    cos = kv.cos.index_select(0, pos).view({B, T, 1, c.head_dim});
    sin = kv.sin.index_select(0, pos).view({B, T, 1, c.head_dim});
  }
  // The mask [B, 1, 1, T, L] (additive): key j is visible to row i's token
  // t when j <= past[i] + t, and in a sliding window's layers when also
  // j > past[i] + t - window (transformers' sliding_window_overlay). None
  // for one token of one sequence.
  at::Tensor mask, window_mask;
  if (T > 1 || B > 1) {
    at::Tensor j = at::arange(L, i64).to(dev).view({1, 1, L});
    at::Tensor limit = pos.view({B, T, 1});
    auto additive = [&](const at::Tensor &visible) {  // visible: [B, T, L]
      return at::zeros({B, T, L}, at::TensorOptions().dtype(opt_.dtype).device(dev))
          .masked_fill_(visible.logical_not(), -std::numeric_limits<double>::infinity())
          .view({B, 1, 1, T, L});
    };
    at::Tensor visible = j <= limit;
    mask = additive(visible);
    if (c.sliding_window > 0) window_mask = additive(visible.logical_and(j > limit - c.sliding_window));
  }
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerWeights &w = w_.layers[size_t(l)];
    const int64_t window = layer_window(l);
    h = h + attention(w, norm(h, w.norm1_w, w.norm1_b), l, kv, b, cos, sin, window > 0 ? window_mask : mask, window);
    h = h + mlp(w, norm(h, w.norm2_w, w.norm2_b));
  }
  // Only the positions asked for go through the final norm and the head.
  at::Tensor rows;
  if (all_logits) {
    rows = h.select(0, 0).narrow(0, 0, b.count[0]);
  } else {
    std::vector<int64_t> last(static_cast<size_t>(B));
    for (int64_t i = 0; i < B; ++i) last[size_t(i)] = i * T + b.count[i] - 1;
    rows = h.reshape({B * T, c.n_embd}).index_select(0, at::tensor(last, i64).to(dev));
  }
  at::Tensor logits = forward_detail::linear(norm(rows, w_.out_norm_w, w_.out_norm_b), w_.head, at::Tensor());
  return logits.to(at::kFloat);
}

}  // namespace lm
}  // namespace ctorch
