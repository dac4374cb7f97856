// MultiheadAttention, as torch.nn.MultiheadAttention and
// torch.nn.functional.multi_head_attention_forward compute it, op for op,
// in the Python of the libtorch being built against (1.13's or 2.x's: see
// compat/compat_nn.h). Op for op because the results must be Python's to the
// bit: where Python tests `query is key` (one packed in-projection matmul
// instead of three) or transposes once for three aliases, so do we, and
// the eval-mode fast path (at::_native_multi_head_attention) is taken under
// Python's conditions, since its numbers differ from the slow path's.
//
// Also the helpers attention.h shares with transformer.cpp.
#define CTORCH_COMPAT_AUTOCAST
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#include "nn/attention.h"

#include "compat/compat_nn.h"

#include <ATen/ops/_native_multi_head_attention.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/dropout.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/pad.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <limits>

namespace ctorch {
namespace nn {

ModulePtr make_child(const char *kind, const std::string &args, const Args &factory) {
  const Kind *k = find_kind(kind);
  if (!k) fail(CTORCH_NOT_IMPLEMENTED, std::string("the built-in module ") + kind + " is not in this build");
  Args a = parse_args(k->init, args.c_str(), kind);
  for (size_t i = 0; i < a.values.size(); i++) {
    const std::string &n = a.values[i].first;
    if (n == "device" || n == "dtype") {
      a.values[i].second = factory.get(n.c_str());
      a.was_given[i] = factory.given(n.c_str());
    }
  }
  return build(*k, a);
}

const double kNegInf = -std::numeric_limits<double>::infinity();

// Python's AssertionError/RuntimeError inside the functional: a bad input.
[[noreturn]] void bad(const std::string &msg) { fail(CTORCH_RUNTIME, msg); }

at::Tensor canonical_mask(const at::Tensor &mask, const char *name, c10::ScalarType target) {
  if (!mask.defined()) return mask;
  bool is_float = at::isFloatingType(mask.scalar_type());
  if (mask.scalar_type() != at::kBool && !is_float)
    bad(std::string("only bool and floating types of ") + name + " are supported");
  if (is_float) return mask;
  return at::zeros_like(mask, mask.options().dtype(target)).masked_fill_(mask, kNegInf);
}

bool grad_needed(std::initializer_list<const at::Tensor *> ts) {
  if (!c10::GradMode::is_enabled()) return false;
  for (const at::Tensor *t : ts)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

bool cpu_or_cuda(std::initializer_list<const at::Tensor *> ts) {
  for (const at::Tensor *t : ts)
    if (t->defined() && !t->is_cpu() && !t->is_cuda()) return false;
  return true;
}

namespace {

std::string dims(const at::Tensor &t) { return std::to_string(t.dim()) + "-D"; }

// F._mha_shape_check: whether the query is batched.
bool mha_shape_check(const at::Tensor &query, const at::Tensor &key, const at::Tensor &value,
                     const at::Tensor &kpm, const at::Tensor &mask, int64_t num_heads) {
  if (query.dim() == 3) {
    if (key.dim() != 3 || value.dim() != 3)
      bad("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found " + dims(key) + " and " +
          dims(value) + " tensors respectively");
    if (kpm.defined() && kpm.dim() != 2)
      bad("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but found " + dims(kpm) +
          " tensor instead");
    if (mask.defined() && mask.dim() != 2 && mask.dim() != 3)
      bad("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found " + dims(mask) +
          " tensor instead");
    return true;
  }
  if (query.dim() == 2) {
    if (key.dim() != 2 || value.dim() != 2)
      bad("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found " + dims(key) + " and " +
          dims(value) + " tensors respectively");
    if (kpm.defined() && kpm.dim() != 1)
      bad("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but found " + dims(kpm) +
          " tensor instead");
    if (mask.defined()) {
      if (mask.dim() != 2 && mask.dim() != 3)
        bad("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found " + dims(mask) +
            " tensor instead");
      if (mask.dim() == 3 && mask.sizes() != at::IntArrayRef{num_heads, query.size(0), key.size(0)})
        bad("Expected `attn_mask` shape to be (" + std::to_string(num_heads) + ", " +
            std::to_string(query.size(0)) + ", " + std::to_string(key.size(0)) + ")");
    }
    return false;
  }
  bad("query should be unbatched 2D or batched 3D tensor but received " + dims(query) + " query tensor");
}

struct Proj {
  at::Tensor q, k, v;
};

// F._in_projection_packed: one matmul when q, k, v are one tensor, two
// when k is v (the decoder's memory), three otherwise.
Proj in_projection_packed(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, const at::Tensor &w,
                          const at::Tensor &b) {
  int64_t E = q.size(-1);
  if (k.is_same(v)) {
    if (q.is_same(k)) {
      at::Tensor proj = at::linear(q, w, b);
      if (kV2) {
        proj = proj.unflatten(-1, {3, E}).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous();
        return {proj.select(0, 0), proj.select(0, 1), proj.select(0, 2)};
      }
      auto c = proj.chunk(3, -1);
      return {c[0], c[1], c[2]};
    }
    auto ws = w.split_with_sizes({E, E * 2});
    at::Tensor b_q, b_kv;
    if (b.defined()) {
      auto bs = b.split_with_sizes({E, E * 2});
      b_q = bs[0], b_kv = bs[1];
    }
    at::Tensor q_proj = at::linear(q, ws[0], b_q);
    at::Tensor kv = at::linear(k, ws[1], b_kv);
    if (kV2) {
      kv = kv.unflatten(-1, {2, E}).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous();
      return {q_proj, kv.select(0, 0), kv.select(0, 1)};
    }
    auto c = kv.chunk(2, -1);
    return {q_proj, c[0], c[1]};
  }
  auto ws = w.chunk(3);
  at::Tensor b_q, b_k, b_v;
  if (b.defined()) {
    auto bs = b.chunk(3);
    b_q = bs[0], b_k = bs[1], b_v = bs[2];
  }
  return {at::linear(q, ws[0], b_q), at::linear(k, ws[1], b_k), at::linear(v, ws[2], b_v)};
}

// F._in_projection: separate weights (kdim/vdim differ from embed_dim).
Proj in_projection(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, const at::Tensor &w_q,
                   const at::Tensor &w_k, const at::Tensor &w_v, const at::Tensor &b) {
  int64_t Eq = q.size(-1), Ek = k.size(-1), Ev = v.size(-1);
  if (w_q.sizes() != at::IntArrayRef{Eq, Eq}) bad("expecting query weights shape of (" + std::to_string(Eq) + ", " + std::to_string(Eq) + ")");
  if (w_k.sizes() != at::IntArrayRef{Eq, Ek}) bad("expecting key weights shape of (" + std::to_string(Eq) + ", " + std::to_string(Ek) + ")");
  if (w_v.sizes() != at::IntArrayRef{Eq, Ev}) bad("expecting value weights shape of (" + std::to_string(Eq) + ", " + std::to_string(Ev) + ")");
  at::Tensor b_q, b_k, b_v;
  if (b.defined()) {
    auto bs = b.chunk(3);
    b_q = bs[0], b_k = bs[1], b_v = bs[2];
  }
  return {at::linear(q, w_q, b_q), at::linear(k, w_k, b_k), at::linear(v, w_v, b_v)};
}

// The tensors and options of one attention call (F.multi_head_attention_forward's arguments).
struct MhaCall {
  int64_t embed_dim, num_heads;
  at::Tensor in_proj_weight, in_proj_bias, bias_k, bias_v, out_w, out_b;
  at::Tensor q_w, k_w, v_w;  // defined: use_separate_proj_weight
  bool add_zero_attn, training;
  double dropout_p;
};

std::pair<at::Tensor, at::Tensor> mha_functional(at::Tensor query, at::Tensor key, at::Tensor value, at::Tensor kpm,
                                                 at::Tensor mask, bool need_weights, bool average, bool is_causal,
                                                 const MhaCall &c) {
  int64_t H = c.num_heads;
  bool batched = mha_shape_check(query, key, value, kpm, mask, H);
  if (!batched) {
    query = query.unsqueeze(1);
    key = key.unsqueeze(1);
    value = value.unsqueeze(1);
    if (kpm.defined()) kpm = kpm.unsqueeze(0);
  }
  int64_t tgt_len = query.size(0), bsz = query.size(1), E = query.size(2);
  int64_t src_len = key.size(0);
  if (kV2) {
    kpm = canonical_mask(kpm, "key_padding_mask", query.scalar_type());
    if (is_causal && !mask.defined())
      bad("Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
          "`generate_square_subsequent_mask` to create this mask.");
    if (is_causal && !kpm.defined() && !need_weights) {
      mask = at::Tensor();  // scaled_dot_product_attention makes the causal mask itself
    } else {
      mask = canonical_mask(mask, "attn_mask", query.scalar_type());
      if (kpm.defined()) is_causal = false;
    }
  } else {
    if (kpm.defined() && kpm.scalar_type() != at::kBool && !at::isFloatingType(kpm.scalar_type()))
      bad("only bool and floating types of key_padding_mask are supported");
    // 1.13 has no is_causal; the mask it needs (as in 2.x) is applied.
    if (is_causal && !mask.defined())
      bad("Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
          "`generate_square_subsequent_mask` to create this mask.");
  }
  if (E != c.embed_dim)
    bad("was expecting embedding dimension of " + std::to_string(c.embed_dim) + ", but got " + std::to_string(E));
  int64_t head_dim = E / H;
  bool separate = c.q_w.defined();
  if (separate ? key.sizes().slice(0, 2) != value.sizes().slice(0, 2) : key.sizes() != value.sizes())
    bad(separate ? "key's sequence and batch dims do not match value's" : "key shape does not match value shape");
  Proj p = separate ? in_projection(query, key, value, c.q_w, c.k_w, c.v_w, c.in_proj_bias)
                    : in_projection_packed(query, key, value, c.in_proj_weight, c.in_proj_bias);
  at::Tensor q = p.q, k = p.k, v = p.v;
  if (mask.defined()) {
    if (!kV2) {
      if (mask.scalar_type() == at::kByte) mask = mask.to(at::kBool);  // Python warns: deprecated
      else if (!at::isFloatingType(mask.scalar_type()) && mask.scalar_type() != at::kBool)
        bad("Only float, byte, and bool types are supported for attn_mask");
    }
    if (mask.dim() == 2) {
      if (mask.sizes() != at::IntArrayRef{tgt_len, src_len})
        bad("The shape of the 2D attn_mask is wrong: should be (" + std::to_string(tgt_len) + ", " +
            std::to_string(src_len) + ")");
      mask = mask.unsqueeze(0);
    } else if (mask.dim() == 3) {
      if (mask.sizes() != at::IntArrayRef{bsz * H, tgt_len, src_len})
        bad("The shape of the 3D attn_mask is wrong: should be (" + std::to_string(bsz * H) + ", " +
            std::to_string(tgt_len) + ", " + std::to_string(src_len) + ")");
    } else {
      bad("attn_mask's dimension " + std::to_string(mask.dim()) + " is not supported");
    }
  }
  if (c.bias_k.defined() && c.bias_v.defined()) {
    k = at::cat({k, c.bias_k.repeat({1, bsz, 1})});
    v = at::cat({v, c.bias_v.repeat({1, bsz, 1})});
    if (mask.defined()) mask = at::pad(mask, {0, 1});
    if (kpm.defined()) kpm = at::pad(kpm, {0, 1});
  }
  // 1.13 makes q, k, v contiguous here; 2.x's projections already are.
  if (!kV2) q = q.contiguous(), k = k.contiguous(), v = v.contiguous();
  q = q.view({tgt_len, bsz * H, head_dim}).transpose(0, 1);
  k = k.view({k.size(0), bsz * H, head_dim}).transpose(0, 1);
  v = v.view({v.size(0), bsz * H, head_dim}).transpose(0, 1);
  if (c.add_zero_attn) {
    k = at::cat({k, at::zeros({bsz * H, 1, head_dim}, k.options())}, 1);
    v = at::cat({v, at::zeros({bsz * H, 1, head_dim}, v.options())}, 1);
    if (mask.defined()) mask = at::pad(mask, {0, 1});
    if (kpm.defined()) kpm = at::pad(kpm, {0, 1});
  }
  src_len = k.size(1);
  if (kpm.defined()) {
    if (kpm.size(0) != bsz || kpm.size(1) != src_len)
      bad("expecting key_padding_mask shape of (" + std::to_string(bsz) + ", " + std::to_string(src_len) + ")");
    kpm = kpm.view({bsz, 1, 1, src_len}).expand({-1, H, -1, -1}).reshape({bsz * H, 1, src_len});
    if (!mask.defined()) mask = kpm;
    else if (kV2) mask = mask + kpm;
    else if (mask.scalar_type() == at::kBool) mask = mask.logical_or(kpm);
    else mask = mask.masked_fill(kpm, kNegInf);
  }
  if (!kV2 && mask.defined() && mask.scalar_type() == at::kBool) {
    at::Tensor m = at::zeros_like(mask, mask.options().dtype(q.scalar_type()));
    m.masked_fill_(mask, kNegInf);
    mask = m;
  }
  double dropout_p = c.training ? c.dropout_p : 0.0;
  at::Tensor out, weights;
  if (!kV2 || need_weights) {
    int64_t Eh = q.size(2);
    at::Tensor q_scaled = kV2 ? q * std::sqrt(1.0 / static_cast<double>(Eh)) : q / std::sqrt(static_cast<double>(Eh));
    weights = mask.defined() ? at::baddbmm(mask, q_scaled, k.transpose(-2, -1)) : at::bmm(q_scaled, k.transpose(-2, -1));
    weights = at::softmax(weights, -1);
    if (dropout_p > 0.0) weights = at::dropout(weights, dropout_p, true);
    out = at::bmm(weights, v);
    out = kV2 ? out.transpose(0, 1).reshape({tgt_len * bsz, E}) : out.transpose(0, 1).contiguous().view({tgt_len * bsz, E});
    out = at::linear(out, c.out_w, c.out_b);
    out = out.view({tgt_len, bsz, out.size(1)});
    if (need_weights) {
      weights = weights.view({bsz, H, tgt_len, src_len});
      if (average) weights = kV2 ? weights.mean(1) : weights.sum(1) / H;
      if (!batched) weights = weights.squeeze(0);
    } else {
      weights = at::Tensor();
    }
    if (!batched) out = out.squeeze(1);
    return {out, weights};
  }
  if (mask.defined()) {
    if (mask.size(0) == 1 && mask.dim() == 3) mask = mask.unsqueeze(0);
    else mask = mask.view({bsz, H, -1, src_len});
  }
  q = q.view({bsz, H, tgt_len, head_dim});
  k = k.view({bsz, H, src_len, head_dim});
  v = v.view({bsz, H, src_len, head_dim});
  out = compat::scaled_dot_product_attention(q, k, v, mask.defined() ? c10::optional<at::Tensor>(mask) : c10::nullopt,
                                             dropout_p, is_causal);
  out = out.permute({2, 0, 1, 3}).reshape({bsz * tgt_len, E});
  out = at::linear(out, c.out_w, c.out_b);
  out = out.view({tgt_len, bsz, out.size(1)});
  if (!batched) out = out.squeeze(1);
  return {out, at::Tensor()};
}

// torch.nn.init.xavier_normal_ (module.h has the uniform one only):
// N(0, gain * sqrt(2 / (fan_in + fan_out))).
void xavier_normal_(at::Tensor &t) {
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); d++) receptive *= t.size(d);
  int64_t fan_in_ = t.size(1) * receptive, fan_out = t.size(0) * receptive;
  double std = std::sqrt(2.0 / static_cast<double>(fan_in_ + fan_out));
  t.normal_(0, std);
}

}  // namespace

MultiheadAttention::MultiheadAttention(const Args &a) : Module("MultiheadAttention") {
  E_ = a.i("embed_dim");
  H_ = a.i("num_heads");
  if (E_ <= 0 || H_ <= 0)
    fail_arg(E_ <= 0 ? "embed_dim" : "num_heads",
             "embed_dim and num_heads must be greater than 0, got embed_dim=" + std::to_string(E_) +
                 " and num_heads=" + std::to_string(H_) + " instead");
  dropout_ = a.f("dropout");
  bool bias = a.b("bias");
  bool add_bias_kv = a.b("add_bias_kv");
  add_zero_attn_ = a.b("add_zero_attn");
  int64_t kdim = a.is_none("kdim") ? E_ : a.i("kdim");
  int64_t vdim = a.is_none("vdim") ? E_ : a.i("vdim");
  same_dim_ = kdim == E_ && vdim == E_;
  batch_first_ = a.b("batch_first");
  if ((E_ / H_) * H_ != E_) fail_arg("num_heads", "embed_dim must be divisible by num_heads");
  at::TensorOptions opts = a.factory();
  // Registration order as Python's __init__ (the state dict's order).
  if (!same_dim_) {
    q_w_ = register_parameter("q_proj_weight", at::empty({E_, E_}, opts));
    k_w_ = register_parameter("k_proj_weight", at::empty({E_, kdim}, opts));
    v_w_ = register_parameter("v_proj_weight", at::empty({E_, vdim}, opts));
    in_w_ = register_parameter("in_proj_weight", at::Tensor());
  } else {
    in_w_ = register_parameter("in_proj_weight", at::empty({3 * E_, E_}, opts));
    q_w_ = register_parameter("q_proj_weight", at::Tensor());
    k_w_ = register_parameter("k_proj_weight", at::Tensor());
    v_w_ = register_parameter("v_proj_weight", at::Tensor());
  }
  in_b_ = register_parameter("in_proj_bias", bias ? at::empty({3 * E_}, opts) : at::Tensor());
  // Python's out_proj is a NonDynamicallyQuantizableLinear (a Linear); its
  // construction draws its kaiming/uniform numbers before _reset_parameters.
  ModulePtr out = make_child("Linear", std::to_string(E_) + ", " + std::to_string(E_) + ", bias=" + (bias ? "True" : "False"), a);
  out->set_kind("NonDynamicallyQuantizableLinear");
  out_proj_ = register_module("out_proj", out);
  // `self.bias_k = self.bias_v = None` registers nothing in Python.
  if (add_bias_kv) {
    bias_k_ = static_cast<long>(register_parameter("bias_k", at::empty({1, 1, E_}, opts)));
    bias_v_ = static_cast<long>(register_parameter("bias_v", at::empty({1, 1, E_}, opts)));
  }
  reset_parameters();
}

// _reset_parameters, after out_proj's own initialisation.
void MultiheadAttention::reset_parameters() {
  at::NoGradGuard no_grad;
  if (same_dim_) {
    xavier_uniform_(params[in_w_].t);
  } else {
    xavier_uniform_(params[q_w_].t);
    xavier_uniform_(params[k_w_].t);
    xavier_uniform_(params[v_w_].t);
  }
  if (params[in_b_].t.defined()) {
    params[in_b_].t.zero_();
    Module &op = *children[out_proj_].second;
    if (op.params.size() > 1 && op.params[1].t.defined()) op.params[1].t.zero_();
  }
  if (bias_k_ >= 0) xavier_normal_(params[bias_k_].t);
  if (bias_v_ >= 0) xavier_normal_(params[bias_v_].t);
}

std::vector<at::Tensor> MultiheadAttention::forward(const std::vector<at::Tensor> &in, const Args &kw) {
  auto r = attend(in[0], in[1], in[2], in[3], in[4], kw.b("need_weights"), kw.b("average_attn_weights"),
                  kw.b("is_causal"));
  return {r.first, r.second};
}

std::pair<at::Tensor, at::Tensor> MultiheadAttention::attend(at::Tensor query, at::Tensor key, at::Tensor value,
                                                             at::Tensor kpm, at::Tensor mask, bool need_weights,
                                                             bool average, bool is_causal) {
  const at::Tensor &in_w = params[in_w_].t, &in_b = params[in_b_].t;
  const at::Tensor &out_w = out_proj_weight(), &out_b = out_proj_bias();
  bool batched = query.dim() == 3;
  bool float_mask = (mask.defined() && at::isFloatingType(mask.scalar_type())) ||
                    (kpm.defined() && at::isFloatingType(kpm.scalar_type()));
  if (kV2) {
    kpm = canonical_mask(kpm, "key_padding_mask", query.scalar_type());
    mask = canonical_mask(mask, "attn_mask", query.scalar_type());
  } else if (kpm.defined() && kpm.scalar_type() != at::kBool && !at::isFloatingType(kpm.scalar_type())) {
    bad("only bool and floating types of key_padding_mask are supported");
  }
  // The fast path's conditions for this version (all must hold; Python
  // tests them in a chain only to name the first that fails).
  bool fast = batched && query.is_same(key) && key.is_same(value) &&
              (!in_b.defined() || query.scalar_type() == in_b.scalar_type()) && (!kV2 || in_w.defined()) &&
              (!in_w.defined() || query.scalar_type() == in_w.scalar_type()) && !training && batch_first_ &&
              bias_k_ < 0 && !add_zero_attn_ && same_dim_ && H_ % 2 == 0 &&
              !compat::autocast_enabled(c10::DeviceType::CUDA);
  if (kV2) fast = fast && !float_mask;
  else fast = fast && dropout_ == 0 && !mask.defined();
  fast = fast && cpu_or_cuda({&query, &key, &value, &in_w, &in_b, &out_w, &out_b}) &&
         !grad_needed({&query, &key, &value, &in_w, &in_b, &out_w, &out_b});
  if (fast && (!kV2 || in_b.defined())) {
    at::Tensor merged;
    c10::optional<int64_t> type;
    if (kV2) {
      merge_masks(mask, kpm, query, merged, type);
    } else {
      merged = kpm.defined() ? kpm : mask;
      if (kpm.defined()) type = 1;
      else if (mask.defined()) type = 0;
    }
    auto r = at::_native_multi_head_attention(query, key, value, E_, H_, in_w, in_b, out_w, out_b,
                                              merged.defined() ? c10::optional<at::Tensor>(merged) : c10::nullopt,
                                              need_weights, average, type);
    return {std::get<0>(r), std::get<1>(r)};
  }
  if (batch_first_ && batched) {
    // Python keeps the aliasing (query is key is value) through the transpose.
    if (key.is_same(value)) {
      if (query.is_same(key)) {
        query = key = value = query.transpose(1, 0);
      } else {
        query = query.transpose(1, 0);
        key = value = key.transpose(1, 0);
      }
    } else {
      query = query.transpose(1, 0), key = key.transpose(1, 0), value = value.transpose(1, 0);
    }
  }
  MhaCall c{E_, H_, in_w, in_b, bias_k_ >= 0 ? params[bias_k_].t : at::Tensor(),
            bias_v_ >= 0 ? params[bias_v_].t : at::Tensor(), out_w, out_b, at::Tensor(), at::Tensor(),
            at::Tensor(), add_zero_attn_, training, dropout_};
  if (!same_dim_) c.q_w = params[q_w_].t, c.k_w = params[k_w_].t, c.v_w = params[v_w_].t;
  auto r = mha_functional(query, key, value, kpm, mask, need_weights, average, is_causal, c);
  if (batch_first_ && batched) r.first = r.first.transpose(1, 0);
  return r;
}

void MultiheadAttention::merge_masks(const at::Tensor &mask, const at::Tensor &kpm, const at::Tensor &query,
                                     at::Tensor &merged, c10::optional<int64_t> &type) const {
  if (kpm.defined()) type = 1, merged = kpm;
  if (mask.defined()) {
    int64_t bsz = query.size(0), seq = query.size(1);
    type = 2;
    at::Tensor m = mask.dim() == 3 ? mask.view({bsz, -1, seq, seq})
                                   : mask.view({1, 1, seq, seq}).expand({bsz, H_, -1, -1});
    merged = m;
    if (kpm.defined()) merged = m + kpm.view({bsz, 1, 1, seq}).expand({-1, H_, -1, -1});
  }
}

namespace {

CTORCH_NN_KIND("MultiheadAttention",
               "embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True, add_bias_kv: bool = False, "
               "add_zero_attn: bool = False, kdim: int? = None, vdim: int? = None, batch_first: bool = False, "
               "device: Device? = None, dtype: ScalarType? = None",
               "query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor? = None, "
               "attn_mask: Tensor? = None; need_weights: bool = True, average_attn_weights: bool = True, "
               "is_causal: bool = False -> attn_output: Tensor, attn_output_weights: Tensor?",
               [](const Args &a) { return std::make_shared<MultiheadAttention>(a); });

}  // namespace
}  // namespace nn
}  // namespace ctorch
