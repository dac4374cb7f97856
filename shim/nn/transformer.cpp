// TransformerEncoderLayer, TransformerDecoderLayer, TransformerEncoder,
// TransformerDecoder and Transformer, as torch.nn's transformer.py builds
// and runs them in the Python of the libtorch being built against (1.13's
// or 2.x's: compat/compat_nn.h).
//
// Children are made as Python makes them (make_child: same class, same
// arguments, same order, so the same random draws) under Python's names
// (self_attn, linear1, dropout, linear2, norm1, ...; layers.0, ...). An
// encoder or decoder deep-copies its layer num_layers times, as
// _get_clones does, so every copy starts equal. The eval-mode fast paths
// (at::_transformer_encoder_layer_fwd; the nested-tensor conversion of
// TransformerEncoder) are taken under Python's conditions: their numbers
// differ from the slow path's, and Python's users get theirs.
#define CTORCH_COMPAT_AUTOCAST
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#include "nn/attention.h"
#include "nn/nn_internal.h"

#include "compat/compat_nn.h"

#include <ATen/ops/_nested_tensor_from_mask.h>
#include <ATen/ops/_nested_tensor_from_mask_left_aligned.h>
#include <ATen/ops/_transformer_encoder_layer_fwd.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/triu.h>
#include <c10/core/GradMode.h>

#include <limits>

namespace ctorch {
namespace nn {
namespace {

// A constructor argument that is a module (TransformerEncoder's
// encoder_layer and norm): nullptr for None. The signature's type (Module)
// made the parser check it.
ModulePtr module_arg(const Args &a, const char *name) { return a.get(name).mod; }

// The layer a stack copies: the stacks' forwards call the layer's own
// kind's code (masks, fast paths), so another kind cannot stand in for it.
ModulePtr layer_arg(const Args &a, const char *name, const char *kind) {
  ModulePtr m = module_arg(a, name);
  if (m && m->kind() != kind) fail_arg(name, std::string("must be a ") + kind + ", got a " + m->kind());
  return m;
}

const at::Tensor &tensor_named(const Module &m, const char *name) {
  static const at::Tensor none;
  for (const auto &e : m.params)
    if (e.name == name) return e.t;
  return none;
}

// The child `i` as the class this file put there; a child replaced by
// another kind (register_module) cannot stand in for it.
template <class T>
T &child_as(Module &m, size_t i, const char *what) {
  T *p = i < m.children.size() ? dynamic_cast<T *>(m.children[i].second.get()) : nullptr;
  if (!p) fail(CTORCH_VALUE, m.kind() + "." + m.children[i].first + " is not a " + what);
  return *p;
}

std::string b(bool v) { return v ? "True" : "False"; }

// The options every layer shares, as text for make_child.
struct LayerOpts {
  int64_t d_model, nhead, dim_feedforward;
  std::string dropout, eps;  // the values as written (Python passes them on as given)
  double eps_value;
  bool gelu, batch_first, norm_first, bias;

  explicit LayerOpts(const Args &a) {
    d_model = a.i("d_model");
    nhead = a.i("nhead");
    dim_feedforward = a.i("dim_feedforward");
    dropout = a.get("dropout").repr();
    eps = a.get("layer_norm_eps").repr();
    eps_value = a.f("layer_norm_eps");
    std::string act = a.s("activation");
    if (act != "relu" && act != "gelu") fail_arg("activation", "activation should be relu/gelu, not " + act);
    gelu = act == "gelu";
    batch_first = a.b("batch_first");
    norm_first = a.b("norm_first");
    bias = a.b("bias");
  }
  std::string mha() const {
    return std::to_string(d_model) + ", " + std::to_string(nhead) + ", dropout=" + dropout + ", bias=" + b(bias) +
           ", batch_first=" + b(batch_first);
  }
  std::string linear(int64_t in, int64_t out) const {
    return std::to_string(in) + ", " + std::to_string(out) + ", bias=" + b(bias);
  }
  // LayerNorm's bias option is 2.1's: only written when False.
  std::string norm() const { return std::to_string(d_model) + ", eps=" + eps + (bias ? "" : ", bias=False"); }
  std::string layer() const {
    return std::to_string(d_model) + ", " + std::to_string(nhead) + ", dim_feedforward=" +
           std::to_string(dim_feedforward) + ", dropout=" + dropout + ", activation='" + (gelu ? "gelu" : "relu") +
           "', layer_norm_eps=" + eps + ", batch_first=" + b(batch_first) + ", norm_first=" + b(norm_first) +
           ", bias=" + b(bias);
  }
};

// _detect_is_causal_mask (2.x): the hint as given, or, when None, whether
// the mask is exactly the square subsequent mask.
bool detect_is_causal(const at::Tensor &mask, const Value &is_causal, c10::optional<int64_t> size) {
  bool make_causal = is_causal.kind == Value::Bool && is_causal.b;
  if (is_causal.kind == Value::None && mask.defined()) {
    int64_t sz = size ? *size : mask.size(-2);
    at::Tensor causal = at::triu(
        at::full({sz, sz}, -std::numeric_limits<double>::infinity(), mask.options()), 1);
    make_causal = mask.sizes() == causal.sizes() && (mask == causal).all().item<bool>();
  }
  return make_causal;
}

// _get_seq_len.
c10::optional<int64_t> seq_len(const at::Tensor &src, bool batch_first) {
  if (src.is_nested()) return c10::nullopt;
  if (src.dim() == 2) return src.size(0);
  return src.size(batch_first ? 1 : 0);
}

at::Tensor activation(const at::Tensor &x, bool gelu) { return gelu ? at::gelu(x) : at::relu(x); }

// ---- the layers ----------------------------------------------------------------

class TransformerEncoderLayer : public Module {
 public:
  explicit TransformerEncoderLayer(const Args &a) : Module("TransformerEncoderLayer"), o_(a) {
    self_attn_ = register_module("self_attn", make_child("MultiheadAttention", o_.mha(), a));
    linear1_ = register_module("linear1", make_child("Linear", o_.linear(o_.d_model, o_.dim_feedforward), a));
    dropout_ = register_module("dropout", make_child("Dropout", o_.dropout, a));
    linear2_ = register_module("linear2", make_child("Linear", o_.linear(o_.dim_feedforward, o_.d_model), a));
    norm1_ = register_module("norm1", make_child("LayerNorm", o_.norm(), a));
    norm2_ = register_module("norm2", make_child("LayerNorm", o_.norm(), a));
    dropout1_ = register_module("dropout1", make_child("Dropout", o_.dropout, a));
    dropout2_ = register_module("dropout2", make_child("Dropout", o_.dropout, a));
  }
  CTORCH_NN_COPYABLE(TransformerEncoderLayer)

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &kw) override {
    return {run(in[0], in[1], in[2], kw.b("is_causal"))};
  }

  at::Tensor run(const at::Tensor &src, at::Tensor mask, at::Tensor kpm, bool is_causal) {
    if (kV2) {
      kpm = canonical_mask(kpm, "src_key_padding_mask", src.scalar_type());
      mask = canonical_mask(mask, "src_mask", src.scalar_type());
    } else if (kpm.defined() && kpm.scalar_type() != at::kBool && !at::isFloatingType(kpm.scalar_type())) {
      fail(CTORCH_RUNTIME, "only bool and floating types of key_padding_mask are supported");
    }
    at::Tensor fast = fast_path(src, mask, kpm);
    if (fast.defined()) return fast;
    auto &sa = child_as<MultiheadAttention>(*this, self_attn_, "MultiheadAttention");
    auto sa_block = [&](const at::Tensor &x) {
      return call(dropout1_, sa.attend(x, x, x, kpm, mask, false, true, is_causal).first);
    };
    auto ff_block = [&](const at::Tensor &x) {
      return call(dropout2_, call(linear2_, call(dropout_, activation(call(linear1_, x), o_.gelu))));
    };
    at::Tensor x = src;
    if (o_.norm_first) {
      x = x + sa_block(call(norm1_, x));
      x = x + ff_block(call(norm2_, x));
    } else {
      x = call(norm1_, x + sa_block(x));
      x = call(norm2_, x + ff_block(x));
    }
    return x;
  }

  // Whether TransformerEncoder may hand this layer nested tensors (its
  // use_nested_tensor test of the layer, 2.x; 1.13 tests the same at forward).
  bool nestable() const {
    auto *sa = dynamic_cast<const MultiheadAttention *>(children[self_attn_].second.get());
    return sa && !o_.norm_first && sa->batch_first() && sa->same_embed_dim() && sa->in_proj_bias().defined() &&
           sa->num_heads() % 2 == 0;
  }
  bool norm_first() const { return o_.norm_first; }

 private:
  // The eval-mode fast path: the fused kernel's result, or undefined when
  // Python's conditions do not all hold.
  at::Tensor fast_path(const at::Tensor &src, const at::Tensor &mask, const at::Tensor &kpm) {
    auto *sa = dynamic_cast<MultiheadAttention *>(children[self_attn_].second.get());
    if (!sa || src.dim() != 3 || training || !sa->batch_first() || !sa->same_embed_dim() ||
        !sa->in_proj_bias().defined() || sa->num_heads() % 2 != 0 ||
        compat::autocast_enabled(c10::DeviceType::CUDA))
      return at::Tensor();
    if (kV2 ? src.is_nested() && (kpm.defined() || mask.defined())
            : mask.defined() || (src.is_nested() && kpm.defined()))
      return at::Tensor();
    const Module &n1 = *children[norm1_].second, &n2 = *children[norm2_].second;
    const Module &l1 = *children[linear1_].second, &l2 = *children[linear2_].second;
    const at::Tensor &n1w = tensor_named(n1, "weight"), &n1b = tensor_named(n1, "bias");
    const at::Tensor &n2w = tensor_named(n2, "weight"), &n2b = tensor_named(n2, "bias");
    const at::Tensor &l1w = tensor_named(l1, "weight"), &l1b = tensor_named(l1, "bias");
    const at::Tensor &l2w = tensor_named(l2, "weight"), &l2b = tensor_named(l2, "bias");
    const at::Tensor &in_w = sa->in_proj_weight(), &in_b = sa->in_proj_bias();
    const at::Tensor &out_w = sa->out_proj_weight(), &out_b = sa->out_proj_bias();
    if (!cpu_or_cuda({&src, &in_w, &in_b, &out_w, &out_b, &n1w, &n1b, &n2w, &n2b, &l1w, &l1b, &l2w, &l2b}) ||
        grad_needed({&src, &in_w, &in_b, &out_w, &out_b, &n1w, &n1b, &n2w, &n2b, &l1w, &l1b, &l2w, &l2b}))
      return at::Tensor();
    at::Tensor merged;
    c10::optional<int64_t> type;
    if (kV2) {
      sa->merge_masks(mask, kpm, src, merged, type);
    } else {
      merged = mask.defined() ? mask : kpm;
      if (kpm.defined()) type = 1;
      else if (mask.defined()) type = 0;
    }
    return at::_transformer_encoder_layer_fwd(
        src, sa->embed_dim(), sa->num_heads(), in_w, in_b, out_w, out_b, o_.gelu, o_.norm_first, o_.eps_value, n1w,
        n1b, n2w, n2b, l1w, l1b, l2w, l2b, merged.defined() ? c10::optional<at::Tensor>(merged) : c10::nullopt, type);
  }

  LayerOpts o_;
  size_t self_attn_ = 0, linear1_ = 0, dropout_ = 0, linear2_ = 0, norm1_ = 0, norm2_ = 0, dropout1_ = 0,
         dropout2_ = 0;
};

class TransformerDecoderLayer : public Module {
 public:
  explicit TransformerDecoderLayer(const Args &a) : Module("TransformerDecoderLayer"), o_(a) {
    self_attn_ = register_module("self_attn", make_child("MultiheadAttention", o_.mha(), a));
    mha_ = register_module("multihead_attn", make_child("MultiheadAttention", o_.mha(), a));
    linear1_ = register_module("linear1", make_child("Linear", o_.linear(o_.d_model, o_.dim_feedforward), a));
    dropout_ = register_module("dropout", make_child("Dropout", o_.dropout, a));
    linear2_ = register_module("linear2", make_child("Linear", o_.linear(o_.dim_feedforward, o_.d_model), a));
    norm1_ = register_module("norm1", make_child("LayerNorm", o_.norm(), a));
    norm2_ = register_module("norm2", make_child("LayerNorm", o_.norm(), a));
    norm3_ = register_module("norm3", make_child("LayerNorm", o_.norm(), a));
    dropout1_ = register_module("dropout1", make_child("Dropout", o_.dropout, a));
    dropout2_ = register_module("dropout2", make_child("Dropout", o_.dropout, a));
    dropout3_ = register_module("dropout3", make_child("Dropout", o_.dropout, a));
  }
  CTORCH_NN_COPYABLE(TransformerDecoderLayer)

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &kw) override {
    return {run(in[0], in[1], in[2], in[3], in[4], in[5], kw.b("tgt_is_causal"), kw.b("memory_is_causal"))};
  }

  at::Tensor run(const at::Tensor &tgt, const at::Tensor &memory, const at::Tensor &tgt_mask,
                 const at::Tensor &memory_mask, const at::Tensor &tgt_kpm, const at::Tensor &memory_kpm,
                 bool tgt_is_causal, bool memory_is_causal) {
    auto &sa = child_as<MultiheadAttention>(*this, self_attn_, "MultiheadAttention");
    auto &mha = child_as<MultiheadAttention>(*this, mha_, "MultiheadAttention");
    auto sa_block = [&](const at::Tensor &x) {
      return call(dropout1_, sa.attend(x, x, x, tgt_kpm, tgt_mask, false, true, tgt_is_causal).first);
    };
    auto mha_block = [&](const at::Tensor &x) {
      return call(dropout2_, mha.attend(x, memory, memory, memory_kpm, memory_mask, false, true, memory_is_causal).first);
    };
    auto ff_block = [&](const at::Tensor &x) {
      return call(dropout3_, call(linear2_, call(dropout_, activation(call(linear1_, x), o_.gelu))));
    };
    at::Tensor x = tgt;
    if (o_.norm_first) {
      x = x + sa_block(call(norm1_, x));
      x = x + mha_block(call(norm2_, x));
      x = x + ff_block(call(norm3_, x));
    } else {
      x = call(norm1_, x + sa_block(x));
      x = call(norm2_, x + mha_block(x));
      x = call(norm3_, x + ff_block(x));
    }
    return x;
  }
  bool batch_first() const { return o_.batch_first; }

 private:
  LayerOpts o_;
  size_t self_attn_ = 0, mha_ = 0, linear1_ = 0, dropout_ = 0, linear2_ = 0, norm1_ = 0, norm2_ = 0, norm3_ = 0,
         dropout1_ = 0, dropout2_ = 0, dropout3_ = 0;
};

// ---- the stacks ------------------------------------------------------------------

// layers (a ModuleList of num_layers deep copies of the layer) and norm
// (registered only when given: Python's `self.norm = None` registers nothing).
void make_stack(Module &m, const ModulePtr &layer, int64_t num_layers, const ModulePtr &norm, const Args &factory) {
  if (!layer) fail_arg("num_layers", m.kind() + " needs a layer");
  if (num_layers < 0) fail_arg("num_layers", "must not be negative");
  ModulePtr list = make_child("ModuleList", "", factory);
  for (int64_t i = 0; i < num_layers; i++) list->register_module(std::to_string(i), clone(*layer));
  m.register_module("layers", list);
  if (norm) m.register_module("norm", norm);
}

Module &stack_layer(Module &m, size_t i) { return *m.children[0].second->children.at(i).second; }

class TransformerEncoder : public Module {
 public:
  TransformerEncoder(const ModulePtr &layer, int64_t num_layers, const ModulePtr &norm, bool enable_nested,
                     bool mask_check, const Args &factory)
      : Module("TransformerEncoder"), mask_check_(mask_check) {
    make_stack(*this, layer, num_layers, norm, factory);
    // use_nested_tensor (2.x decides at construction from the layer).
    auto *l = dynamic_cast<TransformerEncoderLayer *>(layer.get());
    use_nested_ = enable_nested && l && (!kV2 || l->nestable());
  }
  CTORCH_NN_COPYABLE(TransformerEncoder)

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &kw) override {
    return {run(in[0], in[1], in[2], kw.get("is_causal"))};
  }

  at::Tensor run(const at::Tensor &src, at::Tensor mask, at::Tensor kpm, const Value &is_causal_arg) {
    if (kV2) {
      kpm = canonical_mask(kpm, "src_key_padding_mask", src.scalar_type());
      mask = canonical_mask(mask, "mask", src.scalar_type());
    } else if (kpm.defined() && kpm.scalar_type() != at::kBool && !at::isFloatingType(kpm.scalar_type())) {
      fail(CTORCH_RUNTIME, "only bool and floating types of key_padding_mask are supported");
    }
    size_t n = children[0].second->children.size();
    at::Tensor output = src, kpm_layers = kpm;
    bool nested = n > 0 && sparsity_fast_path(src, mask, kpm);
    if (nested) {
      output = at::_nested_tensor_from_mask(output, kpm.logical_not(), false);
      kpm_layers = at::Tensor();
    }
    bool is_causal = false;
    if (kV2) {
      auto *l0 = n ? dynamic_cast<TransformerEncoderLayer *>(&stack_layer(*this, 0)) : nullptr;
      auto *sa = l0 ? dynamic_cast<MultiheadAttention *>(l0->children[0].second.get()) : nullptr;
      is_causal = detect_is_causal(mask, is_causal_arg, seq_len(src, sa && sa->batch_first()));
    } else {
      is_causal = is_causal_arg.kind == Value::Bool && is_causal_arg.b;
    }
    for (size_t i = 0; i < n; i++) {
      auto *l = dynamic_cast<TransformerEncoderLayer *>(&stack_layer(*this, i));
      if (!l) fail(CTORCH_VALUE, "TransformerEncoder.layers." + std::to_string(i) + " is not a TransformerEncoderLayer");
      output = l->run(output, mask, kpm_layers, is_causal);
    }
    if (nested) output = kV2 ? output.to_padded_tensor(0.0, src.sizes()) : output.to_padded_tensor(0.0);
    if (children.size() > 1) output = call(1, output);  // norm
    return output;
  }

 private:
  // TransformerEncoder's "sparsity fast path" test: whether to run the
  // layers on a nested tensor built from the padding mask.
  bool sparsity_fast_path(const at::Tensor &src, const at::Tensor &mask, const at::Tensor &kpm) {
    auto *first = dynamic_cast<TransformerEncoderLayer *>(&stack_layer(*this, 0));
    if (!first || !use_nested_ || first->training || src.dim() != 3 || !kpm.defined()) return false;
    if (!kV2 && !first->nestable()) return false;
    if (mask_check_ && !at::_nested_tensor_from_mask_left_aligned(src, kpm.logical_not())) return false;
    if (src.is_nested() || mask.defined() || compat::autocast_enabled(c10::DeviceType::CUDA)) return false;
    std::vector<const at::Tensor *> ts{&src};
    std::vector<std::pair<std::string, at::Tensor>> named = named_tensors(*first, true, true);
    // Python's tensor_args: src and the layer's attention, norm and linear weights.
    for (const char *name : {"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                             "self_attn.out_proj.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
                             "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"})
      for (const auto &e : named)
        if (e.first == name) ts.push_back(&e.second);
    if (!src.is_cpu() && !src.is_cuda()) return false;
    if (c10::GradMode::is_enabled())
      for (const at::Tensor *t : ts)
        if (t->requires_grad()) return false;
    return true;
  }

  bool mask_check_ = true, use_nested_ = false;
};

class TransformerDecoder : public Module {
 public:
  TransformerDecoder(const ModulePtr &layer, int64_t num_layers, const ModulePtr &norm, const Args &factory)
      : Module("TransformerDecoder") {
    make_stack(*this, layer, num_layers, norm, factory);
  }
  CTORCH_NN_COPYABLE(TransformerDecoder)

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &kw) override {
    return {run(in[0], in[1], in[2], in[3], in[4], in[5], kw.get("tgt_is_causal"), kw.b("memory_is_causal"))};
  }

  at::Tensor run(const at::Tensor &tgt, const at::Tensor &memory, const at::Tensor &tgt_mask,
                 const at::Tensor &memory_mask, const at::Tensor &tgt_kpm, const at::Tensor &memory_kpm,
                 const Value &tgt_is_causal_arg, bool memory_is_causal) {
    size_t n = children[0].second->children.size();
    at::Tensor output = tgt;
    bool tgt_is_causal = tgt_is_causal_arg.kind == Value::Bool && tgt_is_causal_arg.b;
    if (kV2 && n) {
      auto *l0 = dynamic_cast<TransformerDecoderLayer *>(&stack_layer(*this, 0));
      tgt_is_causal = detect_is_causal(tgt_mask, tgt_is_causal_arg, seq_len(tgt, l0 && l0->batch_first()));
    }
    for (size_t i = 0; i < n; i++) {
      auto *l = dynamic_cast<TransformerDecoderLayer *>(&stack_layer(*this, i));
      if (!l) fail(CTORCH_VALUE, "TransformerDecoder.layers." + std::to_string(i) + " is not a TransformerDecoderLayer");
      output = l->run(output, memory, tgt_mask, memory_mask, tgt_kpm, memory_kpm, tgt_is_causal, memory_is_causal);
    }
    if (children.size() > 1) output = call(1, output);  // norm
    return output;
  }
};

class Transformer : public Module {
 public:
  explicit Transformer(const Args &a) : Module("Transformer") {
    LayerOpts o(a);
    d_model_ = o.d_model;
    batch_first_ = o.batch_first;
    // Python's order: encoder layer, its norm, the encoder (copies), then
    // the decoder's; then xavier_uniform_ over every matrix.
    ModulePtr enc_layer = make_child("TransformerEncoderLayer", o.layer(), a);
    ModulePtr enc_norm = make_child("LayerNorm", o.norm(), a);
    register_module("encoder", std::make_shared<TransformerEncoder>(enc_layer, a.i("num_encoder_layers"), enc_norm,
                                                                    true, true, a));
    ModulePtr dec_layer = make_child("TransformerDecoderLayer", o.layer(), a);
    ModulePtr dec_norm = make_child("LayerNorm", o.norm(), a);
    register_module("decoder",
                    std::make_shared<TransformerDecoder>(dec_layer, a.i("num_decoder_layers"), dec_norm, a));
    at::NoGradGuard no_grad;
    for (auto &p : named_tensors(*this, true, true))
      if (p.second.dim() > 1) xavier_uniform_(p.second);
  }
  CTORCH_NN_COPYABLE(Transformer)

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &kw) override {
    const at::Tensor &src = in[0], &tgt = in[1];
    bool batched = src.dim() == 3;
    if (batched && src.size(batch_first_ ? 0 : 1) != tgt.size(batch_first_ ? 0 : 1))
      fail(CTORCH_RUNTIME, "the batch number of src and tgt must be equal");
    if (src.size(-1) != d_model_ || tgt.size(-1) != d_model_)
      fail(CTORCH_RUNTIME, "the feature number of src and tgt must be equal to d_model");
    auto *enc = dynamic_cast<TransformerEncoder *>(children[0].second.get());
    auto *dec = dynamic_cast<TransformerDecoder *>(children[1].second.get());
    if (!enc || !dec) fail(CTORCH_VALUE, "Transformer's encoder and decoder must be its own kinds");
    at::Tensor memory = enc->run(src, in[2], in[5], kw.get("src_is_causal"));
    return {dec->run(tgt, memory, in[3], in[4], in[6], in[7], kw.get("tgt_is_causal"), kw.b("memory_is_causal"))};
  }

 private:
  int64_t d_model_ = 512;
  bool batch_first_ = false;
};

CTORCH_NN_KIND("TransformerEncoderLayer",
               "d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1, activation: str = 'relu', "
               "layer_norm_eps: float = 1e-05, batch_first: bool = False, norm_first: bool = False, bias: bool = True, "
               "device: Device? = None, dtype: ScalarType? = None",
               "src: Tensor, src_mask: Tensor? = None, src_key_padding_mask: Tensor? = None; is_causal: bool = False "
               "-> Tensor",
               [](const Args &a) { return std::make_shared<TransformerEncoderLayer>(a); });
CTORCH_NN_KIND("TransformerDecoderLayer",
               "d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1, activation: str = 'relu', "
               "layer_norm_eps: float = 1e-05, batch_first: bool = False, norm_first: bool = False, bias: bool = True, "
               "device: Device? = None, dtype: ScalarType? = None",
               "tgt: Tensor, memory: Tensor, tgt_mask: Tensor? = None, memory_mask: Tensor? = None, "
               "tgt_key_padding_mask: Tensor? = None, memory_key_padding_mask: Tensor? = None; "
               "tgt_is_causal: bool = False, memory_is_causal: bool = False -> Tensor",
               [](const Args &a) { return std::make_shared<TransformerDecoderLayer>(a); });
CTORCH_NN_KIND("TransformerEncoder",
               "encoder_layer: Module, num_layers: int, norm: Module? = None, enable_nested_tensor: bool = True, "
               "mask_check: bool = True",
               "src: Tensor, mask: Tensor? = None, src_key_padding_mask: Tensor? = None; is_causal: bool? = None "
               "-> Tensor",
               [](const Args &a) {
                 return std::make_shared<TransformerEncoder>(layer_arg(a, "encoder_layer", "TransformerEncoderLayer"), a.i("num_layers"),
                                                             module_arg(a, "norm"), a.b("enable_nested_tensor"),
                                                             a.b("mask_check"), a);
               });
CTORCH_NN_KIND("TransformerDecoder", "decoder_layer: Module, num_layers: int, norm: Module? = None",
               "tgt: Tensor, memory: Tensor, tgt_mask: Tensor? = None, memory_mask: Tensor? = None, "
               "tgt_key_padding_mask: Tensor? = None, memory_key_padding_mask: Tensor? = None; "
               "tgt_is_causal: bool? = None, memory_is_causal: bool = False -> Tensor",
               [](const Args &a) {
                 return std::make_shared<TransformerDecoder>(layer_arg(a, "decoder_layer", "TransformerDecoderLayer"), a.i("num_layers"),
                                                             module_arg(a, "norm"), a);
               });
CTORCH_NN_KIND("Transformer",
               "d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6, "
               "dim_feedforward: int = 2048, dropout: float = 0.1, activation: str = 'relu', "
               "layer_norm_eps: float = 1e-05, batch_first: bool = False, norm_first: bool = False, bias: bool = True, "
               "device: Device? = None, dtype: ScalarType? = None",
               "src: Tensor, tgt: Tensor, src_mask: Tensor? = None, tgt_mask: Tensor? = None, "
               "memory_mask: Tensor? = None, src_key_padding_mask: Tensor? = None, "
               "tgt_key_padding_mask: Tensor? = None, memory_key_padding_mask: Tensor? = None; "
               "src_is_causal: bool? = None, tgt_is_causal: bool? = None, memory_is_causal: bool = False -> Tensor",
               [](const Args &a) { return std::make_shared<Transformer>(a); });

}  // namespace
}  // namespace nn
}  // namespace ctorch
