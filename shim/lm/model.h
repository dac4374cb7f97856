// A causal language model: its configuration (config.json or a GGUF file's
// metadata, bounded before anything is allocated), its weights in the
// chosen dtype on the chosen device, and the forward of the decoder
// architectures (llama, mistral, qwen2: RMSNorm, RoPE, grouped-query
// attention, SwiGLU; gpt2: LayerNorm, learned positions, GELU), computed
// with libtorch's operators as transformers computes them.
// A Model is immutable once loaded: any number of sessions on any threads
// run it at once. Errors throw ctorch::StatusError.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lm/qweight.h"

namespace ctorch {
namespace json {
struct Value;
}
namespace lm {

class Tokenizer;

// The most each dimension may be: beyond it a file is refused before any
// allocation (the largest released models stay well inside).
struct Bounds {
  static constexpr int64_t layers = 1024, embd = 1 << 17, heads = 1024, head_dim = 1024, ff = 1 << 20,
                           vocab = 1 << 22, ctx = 1 << 24;
};

struct ModelConfig {
  std::string arch;        // "llama", "mistral", "qwen2", "gpt2"
  int64_t n_vocab = 0, n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
  int64_t n_ctx_train = 0;
  double norm_eps = 1e-5;
  std::string act = "silu";    // the MLP's activation: "silu" (gated), "gelu_tanh" or "gelu" (gpt2)
  bool tied_head = false;      // the output head is the token embedding
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  // RoPE (not gpt2): inv_freq as transformers' rope initialisers compute it.
  double rope_theta = 10000.0;
  std::string rope_type = "default";  // "default", "linear", "llama3"
  double rope_factor = 1.0, rope_low_freq_factor = 1.0, rope_high_freq_factor = 4.0;
  int64_t rope_original_ctx = 8192;
  // A GGUF file's rope_freqs tensor (Llama 3's scaling as llama.cpp stores
  // it): each inv_freq divided by its factor. Empty: none.
  std::vector<float> rope_freq_factors;
  // Attention over the last sliding_window positions only (0: the whole
  // context), in layers from window_from_layer on (Qwen2's
  // max_window_layers; 0 for Mistral, whose every layer slides).
  int64_t sliding_window = 0, window_from_layer = 0;
  int64_t bos = -1;            // -1: none
  std::vector<int64_t> eos;
};

// Reads config.json's text (file: its name, for messages). Throws
// StatusError(INVALID_ARGUMENT) naming the key for a missing, malformed,
// out-of-bounds or unimplemented value, and for an unknown model_type.
ModelConfig parse_hf_config(const std::string &text, const std::string &file);
// Adds generation_config.json's bos/eos ids (text may be "").
void apply_generation_config(ModelConfig &c, const std::string &text, const std::string &file);
// Refuses (naming `file`) a configuration whose dimensions are out of
// bounds or inconsistent.
void check_config(const ModelConfig &c, const std::string &file);
// The number of parameters the configuration implies.
int64_t parameter_count(const ModelConfig &c);

// ctorch_lm_load's options text.
struct LoadOptions {
  c10::ScalarType dtype = c10::ScalarType::Float;
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  bool random = false;  // init=random
  uint64_t seed = 0;
  // weights=packed (the default) keeps a GGUF file's quantised matrices
  // packed on the CPU and multiplies them with the packed kernels;
  // weights=dequantize turns them into floats of the model's dtype.
  bool packed = true;
  // quantize=q8_0|q4_0|q4_1|bf16: float matrices quantised at load ("":
  // none); with weights=dequantize, a GGUF's quantised matrices too
  // (dequantised, then quantised as asked).
  std::string quantize;
  // activations=int8: the packed Q8/Q4 matrices (groups of 32) multiply x
  // rounded to 8 bits per group (QWeight::int8_acts), where the CPU has
  // AVX-512 VNNI; activations=float (the default): float32 throughout.
  bool int8_activations = false;
};
LoadOptions parse_load_options(const char *text);

// A linear layer's matrix [out, in]: floats in the model's dtype on its
// device (w), or packed quantised rows on the CPU (q: parts stacked by
// rows, each part one format, as q/k/v of different types are).
struct Linear {
  at::Tensor w;
  std::vector<QWeight> q;
  bool packed() const { return !q.empty(); }
};

struct LayerWeights {
  at::Tensor norm1_w, norm1_b;  // before attention (b: LayerNorm only)
  Linear wqkv;                  // q, k, v rows stacked: [(n_head + 2 n_head_kv) head_dim, n_embd]
  at::Tensor bqkv;
  Linear wo;
  at::Tensor bo;
  at::Tensor norm2_w, norm2_b;  // before the MLP
  Linear wup;                   // llama family: gate then up rows stacked [2 n_ff, n_embd]; gpt2: c_fc [n_ff, n_embd]
  at::Tensor bup;
  Linear wdown;
  at::Tensor bdown;
};

struct Weights {
  at::Tensor tok_embd;  // [n_vocab, n_embd]; undefined where tok_embd_q holds it
  QWeight tok_embd_q;   // packed (a GGUF's quantised embedding): looked-up rows unpacked
  at::Tensor pos_embd;  // gpt2: [n_ctx_train, n_embd]
  std::vector<LayerWeights> layers;
  at::Tensor out_norm_w, out_norm_b;
  Linear head;  // [n_vocab, n_embd] (the token embedding itself when tied)
};

// One forward's rows: sequence seqs[i] holds past[i] positions and gets
// count[i] new tokens, ids[i, :count[i]] (ids: [rows, max count] int64 on
// the model's device, padded).
struct Batch {
  std::vector<int64_t> seqs, past, count;
  at::Tensor ids;
};

// The KV cache a forward reads and writes: per layer, keys and values
// [n_seq, n_head_kv, n_ctx, head_dim]; cos/sin [n_ctx, head_dim] (RoPE).
struct KvCache {
  std::vector<at::Tensor> k, v;
  at::Tensor cos, sin;
  int64_t n_ctx = 0;
};

class Model {
 public:
  // path: a folder or a GGUF file.
  static std::shared_ptr<Model> load(const std::string &path, const LoadOptions &opt);

  const ModelConfig &config() const { return cfg_; }
  int64_t n_vocab() const { return cfg_.n_vocab; }
  // The ids that end a generation (generation_config.json's eos_token_id,
  // or the GGUF's eos/eot/eom ids).
  const std::vector<int64_t> &eos_ids() const { return cfg_.eos; }
  const LoadOptions &options() const { return opt_; }
  const std::string &source() const { return source_; }  // "folder" or "gguf"
  // nullptr where the model has no tokenizer.
  const std::shared_ptr<const Tokenizer> &tokenizer() const { return tok_; }
  // The chat template of the files ("" if none).
  const std::string &chat_template() const { return chat_template_; }
  // ctorch_lm_describe's JSON object.
  std::string describe() const;

  // The cache's cos/sin tables for positions [0, n_ctx) (undefined for gpt2).
  void rope_tables(int64_t n_ctx, at::Tensor *cos, at::Tensor *sin) const;
  // Runs the batch, writing its keys and values into the cache at each
  // row's positions. Returns float32 logits: [rows, n_vocab] of each row's
  // last new token, or with all_logits (one row only) [count, n_vocab].
  at::Tensor forward(KvCache &kv, const Batch &b, bool all_logits) const;

 private:
  Model() = default;
  friend struct ModelBuilder;
  at::Tensor attention(const LayerWeights &w, const at::Tensor &x, int64_t layer, KvCache &kv, const Batch &b,
                       const at::Tensor &cos, const at::Tensor &sin, const at::Tensor &mask, int64_t window) const;
  at::Tensor mlp(const LayerWeights &w, const at::Tensor &x) const;
  at::Tensor norm(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b) const;
  // Layer l's attention window (0: none).
  int64_t layer_window(int64_t l) const {
    return l >= cfg_.window_from_layer ? cfg_.sliding_window : 0;
  }
  // The fused decode step (model_step.cpp): whether the weights allow it
  // (float32 on the CPU, llama family; computed once at load into
  // step_weights_), whether it runs this batch (one new token per row, a
  // float32 cache), and the step itself (forward's result for such a batch).
  bool step_weights() const;
  bool step_applies(const KvCache &kv, const Batch &b) const;
  at::Tensor step(KvCache &kv, const Batch &b) const;

  ModelConfig cfg_;
  LoadOptions opt_;
  std::string source_;
  Weights w_;
  std::shared_ptr<const Tokenizer> tok_;
  std::string chat_template_;
  std::vector<std::string> report_;  // what the loader did, for describe()
  bool step_weights_ = false;
};

}  // namespace lm
}  // namespace ctorch
