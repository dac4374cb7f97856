// The decode step of the llama family on the CPU in float32: one new token
// for each of a batch's sequences, computed in place over a few float
// buffers instead of the forty-odd ATen operators per layer that
// model_forward.cpp dispatches. At a small model's decode those operators'
// dispatch, allocation and view bookkeeping cost as much as the matrix
// products themselves; here only the products go through the packed
// kernels (or BLAS for float matrices) and everything between them
// (RMSNorm, RoPE, writing the cache, attention over each row's prefix,
// SwiGLU, the residual adds) runs in plain loops.
//
// Each step is the one transformers computes, in its order: RMSNorm's mean
// of squares in float32 then x * rsqrt(mean + eps) then the weight; RoPE as
// x * cos + rotate_half(x) * sin; scores q.k times 1/sqrt(head_dim), a
// float32 softmax, its weights times the values; silu(gate) * up. The sums
// differ from ATen's in their order only.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/internal.h"
#include "lm/attend.h"
#include "lm/model.h"

namespace ctorch {
namespace lm {

namespace {

const auto kF32 = at::TensorOptions().dtype(at::kFloat);

bool float_cpu(const at::Tensor &t) {
  return !t.defined() || (t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous());
}

bool linear_ok(const Linear &l, const at::Tensor &b) {
  return float_cpu(b) && (l.packed() || float_cpu(l.w));
}

// y [M, N] = x [M, K] times the layer's matrix [N, K] transposed, plus b.
void linear_into(const Linear &l, const at::Tensor &b, const float *x, int64_t M, int64_t K, float *y) {
  int64_t N = 0;
  if (l.packed()) {
    for (const QWeight &p : l.q) N += p.rows;
    qweight_linear_into(l.q, x, M, y);
  } else {
    N = l.w.size(0);
    at::Tensor xt = at::from_blob(const_cast<float *>(x), {M, K}, kF32);
    at::Tensor yt = at::from_blob(y, {M, N}, kF32);
    if (K % 32 == 0 && M <= 8) {  // (one pass of the kernels over the matrix)
      // The packed kernels' float32 variant: decode reads the matrix once,
      // and they read it at the memory's pace with their prefetch, where
      // OpenBLAS's GEMV reached about half of it (SmolLM2-135M in float32,
      // libtorch 1.13.1: 8.7 tokens/s against 19 with the kernels).
      float_linear_into(l.w.data_ptr<float>(), N, K, x, M, y);
    } else if (M == 1) {
      at::Tensor yv = yt.view({N});
      at::mv_out(yv, l.w, xt.view({K}));  // a GEMV reads the matrix once (model_forward.cpp says why)
    } else {
      at::mm_out(yt, xt, l.w.t());
    }
  }
  if (b.defined()) {
    const float *bp = b.data_ptr<float>();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) y[m * N + n] += bp[n];
  }
}

// out = w * (x * rsqrt(mean(x^2) + eps)); the mean's sum in double, which
// is at least as close to the exact sum as ATen's float reduction.
void rms_norm(const float *x, const float *w, int64_t E, float eps, float *out) {
  double ss = 0;
  for (int64_t k = 0; k < E; ++k) ss += double(x[k]) * double(x[k]);
  const float r = 1.0f / std::sqrt(float(ss / double(E)) + eps);
  for (int64_t k = 0; k < E; ++k) out[k] = w[k] * (x[k] * r);
}

// v = v * cos + rotate_half(v) * sin for one head of D values.
void rope(float *v, const float *cos, const float *sin, int64_t D) {
  const int64_t half = D / 2;
  for (int64_t d = 0; d < half; ++d) {
    const float a = v[d], b = v[d + half];
    v[d] = a * cos[d] + (-b) * sin[d];
    v[d + half] = b * cos[d + half] + a * sin[d + half];
  }
}

}  // namespace

bool Model::step_weights() const {
  if (cfg_.arch == "gpt2" || cfg_.act != "silu" || !opt_.device.is_cpu() || opt_.dtype != at::kFloat) return false;
  if (!float_cpu(w_.out_norm_w) || !linear_ok(w_.head, at::Tensor())) return false;
  for (const LayerWeights &w : w_.layers)
    if (!float_cpu(w.norm1_w) || !float_cpu(w.norm2_w) || !linear_ok(w.wqkv, w.bqkv) || !linear_ok(w.wo, w.bo) ||
        !linear_ok(w.wup, w.bup) || !linear_ok(w.wdown, w.bdown))
      return false;
  return true;
}

bool Model::step_applies(const KvCache &kv, const Batch &b) const {
  if (!step_weights_) return false;
  if (b.ids.dim() != 2 || b.ids.size(1) != 1 || !kv.cos.defined()) return false;
  for (int64_t n : b.count)
    if (n != 1) return false;
  if (!float_cpu(kv.cos) || !float_cpu(kv.sin)) return false;
  for (size_t l = 0; l < kv.k.size(); ++l)
    if (!float_cpu(kv.k[l]) || !float_cpu(kv.v[l])) return false;
  return kv.k.size() == w_.layers.size();
}

at::Tensor Model::step(KvCache &kv, const Batch &b) const {
  const ModelConfig &c = cfg_;
  const int64_t B = b.ids.size(0), E = c.n_embd, H = c.n_head, Hkv = c.n_head_kv, D = c.head_dim, G = H / Hkv;
  const int64_t F = c.n_ff, NQKV = (H + 2 * Hkv) * D, n_ctx = kv.n_ctx;
  const float eps = float(c.norm_eps), scale = float(1.0 / std::sqrt(double(D)));
  at::Tensor emb = w_.tok_embd_q.defined() ? qweight_embedding(w_.tok_embd_q, b.ids)
                                           : at::embedding(w_.tok_embd, b.ids);
  std::vector<float> h(static_cast<size_t>(B * E)), xn(h.size()), o(h.size()), qkv(static_cast<size_t>(B * NQKV)),
      att(static_cast<size_t>(B * H * D)), up(static_cast<size_t>(B * 2 * F)), act(static_cast<size_t>(B * F));
  std::copy_n(emb.contiguous().data_ptr<float>(), B * E, h.data());
  int64_t L_max = 0;
  for (int64_t i = 0; i < B; ++i) L_max = std::max(L_max, b.past[i] + 1);
  std::vector<float> prob(static_cast<size_t>(L_max));
  const float *cos_t = kv.cos.data_ptr<float>(), *sin_t = kv.sin.data_ptr<float>();

  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerWeights &w = w_.layers[size_t(l)];
    for (int64_t i = 0; i < B; ++i) rms_norm(&h[i * E], w.norm1_w.data_ptr<float>(), E, eps, &xn[i * E]);
    linear_into(w.wqkv, w.bqkv, xn.data(), B, E, qkv.data());
    float *kc = kv.k[size_t(l)].data_ptr<float>(), *vc = kv.v[size_t(l)].data_ptr<float>();
    const int64_t window = layer_window(l);
    for (int64_t i = 0; i < B; ++i) {
      const int64_t s = b.seqs[i], p = b.past[i], L = p + 1, j0 = window > 0 ? std::max<int64_t>(0, L - window) : 0;
      float *q = &qkv[i * NQKV], *k = q + H * D, *v = k + Hkv * D;
      for (int64_t hd = 0; hd < H; ++hd) rope(q + hd * D, cos_t + p * D, sin_t + p * D, D);
      for (int64_t g = 0; g < Hkv; ++g) {
        rope(k + g * D, cos_t + p * D, sin_t + p * D, D);
        std::copy_n(k + g * D, D, kc + ((s * Hkv + g) * n_ctx + p) * D);
        std::copy_n(v + g * D, D, vc + ((s * Hkv + g) * n_ctx + p) * D);
      }
      // Each query head against its key head's cached prefix [j0, L).
      for (int64_t hd = 0; hd < H; ++hd) {
        const int64_t at_kv = (s * Hkv + hd / G) * n_ctx * D;
        attend(q + hd * D, kc + at_kv, vc + at_kv, j0, L, D, scale, prob.data(), &att[(i * H + hd) * D]);
      }
    }
    linear_into(w.wo, w.bo, att.data(), B, H * D, o.data());
    for (int64_t n = 0; n < B * E; ++n) h[size_t(n)] += o[size_t(n)];

    for (int64_t i = 0; i < B; ++i) rms_norm(&h[i * E], w.norm2_w.data_ptr<float>(), E, eps, &xn[i * E]);
    linear_into(w.wup, w.bup, xn.data(), B, E, up.data());
    for (int64_t i = 0; i < B; ++i) {
      const float *gate = &up[i * 2 * F], *u = gate + F;
      float *a = &act[i * F];
      for (int64_t f = 0; f < F; ++f) a[f] = gate[f] / (1.0f + std::exp(-gate[f])) * u[f];
    }
    linear_into(w.wdown, w.bdown, act.data(), B, F, o.data());
    for (int64_t n = 0; n < B * E; ++n) h[size_t(n)] += o[size_t(n)];
  }
  for (int64_t i = 0; i < B; ++i) rms_norm(&h[i * E], w_.out_norm_w.data_ptr<float>(), E, eps, &xn[i * E]);
  at::Tensor logits = at::empty({B, c.n_vocab}, kF32);
  linear_into(w_.head, at::Tensor(), xn.data(), B, E, logits.data_ptr<float>());
  return logits;
}

}  // namespace lm
}  // namespace ctorch
