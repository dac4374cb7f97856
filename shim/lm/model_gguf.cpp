// A GGUF file as a model: the configuration from its {arch}.* metadata
// keys, the vocabulary's special ids, the chat template, and the tensors
// under llama.cpp's names (token_embd, blk.N.attn_q, output_norm, output, ...)
// handed out under transformers' names and shapes. llama.cpp's converter
// permutes the rows of a llama-architecture file's q and k projections
// (for its interleaved RoPE); they are permuted back here, as transformers'
// GGUF loader does, so the forward is the folder's. gpt2's matrices are
// stored as Linear's [out, in] and are handed out as Conv1D's [in, out].
// Quantised matrices are repacked for the packed kernels (get_packed); with
// weights=dequantize, or off the CPU, the reader dequantises them and they
// are converted to the model's dtype.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "core/internal.h"
#include "lm/gguf.h"
#include "lm/model.h"
#include "lm/model_weights.h"
#include "lm/tokenizer.h"

namespace ctorch {
namespace lm {
namespace gguf_model_detail {

[[noreturn]] void bad(const GgufFile &f, const std::string &what) {
  fail(CTORCH_INVALID_ARGUMENT, "'" + f.path() + "': " + what);
}

int64_t dim(const GgufFile &f, const std::string &key, int64_t hi) {
  uint64_t v = f.u64(key);
  if (v < 1 || v > uint64_t(hi)) bad(f, key + " is " + std::to_string(v) + ", outside [1, " + std::to_string(hi) + "]");
  return int64_t(v);
}

// transformers' reverse_permute_weights: rows [n_head, 2, half, ...] as
// llama.cpp wrote them back to [n_head, half, 2, ...] -> [n_head, 2 * half].
at::Tensor unpermute(const at::Tensor &w, int64_t n_head) {
  const int64_t rows = w.size(0), half = rows / n_head / 2;
  std::vector<int64_t> shape = {n_head, half, 2};
  for (int64_t d = 1; d < w.dim(); ++d) shape.push_back(w.size(d));
  return w.reshape(shape).transpose(1, 2).reshape(w.sizes());
}

class GgufSource : public WeightSource {
 public:
  GgufSource(std::shared_ptr<const GgufFile> f, const ModelConfig &c) : f_(std::move(f)), c_(c) {}

  at::Tensor get(const std::string &name, const std::vector<int64_t> &shape, WeightKind) override {
    bool conv = false;
    const std::string g = gguf_name(name, &conv);
    check_shape(g, name, shape, conv);
    at::Tensor t = f_->tensor(g);
    if (qweight_supports(f_->info(g).type)) f_->release(f_->info(g));  // dequantised into t
    if (permuted_heads(name)) t = unpermute(t, permuted_heads(name));
    return conv ? t.t() : t;
  }
  // Quantised matrices repacked from the mapped blocks (rows stay rows:
  // the file holds Linear's [out, in] for every architecture), llama's q/k
  // rows taken in transformers' order.
  QWeight get_packed(const std::string &name, const std::vector<int64_t> &shape) override {
    bool conv = false;
    const std::string g = gguf_name(name, &conv);
    const GgufTensorInfo *info = f_->find(g);
    if (!info || !qweight_supports(info->type) || info->shape.size() != 2) return QWeight();
    check_shape(g, name, shape, conv);
    const int64_t rows = info->shape[0], cols = info->shape[1];
    std::vector<int64_t> order;
    if (int64_t heads = permuted_heads(name)) {
      at::Tensor idx = unpermute(at::arange(rows, at::TensorOptions().dtype(at::kLong)), heads).contiguous();
      order.assign(idx.data_ptr<int64_t>(), idx.data_ptr<int64_t>() + rows);
    }
    QWeight w = qweight_from_gguf(info->type, f_->raw_data(*info), info->nbytes, rows, cols,
                                  order.empty() ? nullptr : order.data());
    f_->release(*info);  // the file's pages of it: resident memory is the packed copy alone
    return w;
  }
  bool has(const std::string &name) const override {
    bool conv = false;
    return f_->find(gguf_name(name, &conv)) != nullptr;
  }
  std::string what() const override { return f_->path(); }

 private:
  // Refuses a missing tensor or one whose shape is not the metadata's.
  void check_shape(const std::string &g, const std::string &name, const std::vector<int64_t> &shape, bool conv) const {
    const GgufTensorInfo *info = f_->find(g);
    if (!info) bad(*f_, "has no tensor \"" + g + "\" (transformers' " + name + ")");
    std::vector<int64_t> want = shape;
    if (conv) std::swap(want[0], want[1]);
    if (info->shape != want) {
      std::string a, b;
      for (auto x : info->shape) a += (a.empty() ? "" : ", ") + std::to_string(x);
      for (auto x : want) b += (b.empty() ? "" : ", ") + std::to_string(x);
      bad(*f_, "tensor \"" + g + "\" is [" + a + "], the metadata makes it [" + b + "]");
    }
  }
  // llama.cpp permuted the rows of llama's q and k projections: the head
  // count to undo it with, or 0.
  int64_t permuted_heads(const std::string &name) const {
    if (c_.arch == "qwen2" || c_.arch == "gpt2") return 0;
    if (text_has(name, "q_proj.")) return c_.n_head;
    if (text_has(name, "k_proj.")) return c_.n_head_kv;
    return 0;
  }
  static bool text_has(const std::string &s, const char *part) { return s.find(part) != std::string::npos; }

  // llama.cpp's name of transformers' `name` (without a "model."/"transformer." prefix:
  // the builder asks for the prefixed names only where has() says so).
  static std::string gguf_name(const std::string &name, bool *conv) {
    static const std::pair<const char *, const char *> whole[] = {
        {"embed_tokens.weight", "token_embd.weight"}, {"norm.weight", "output_norm.weight"},
        {"lm_head.weight", "output.weight"},          {"wte.weight", "token_embd.weight"},
        {"wpe.weight", "position_embd.weight"},       {"ln_f.weight", "output_norm.weight"},
        {"ln_f.bias", "output_norm.bias"}};
    for (const auto &w : whole)
      if (name == w.first) return w.second;
    static const std::pair<const char *, const char *> parts[] = {
        {"input_layernorm.", "attn_norm."},  {"self_attn.q_proj.", "attn_q."},   {"self_attn.k_proj.", "attn_k."},
        {"self_attn.v_proj.", "attn_v."},    {"self_attn.o_proj.", "attn_output."},
        {"post_attention_layernorm.", "ffn_norm."}, {"mlp.gate_proj.", "ffn_gate."}, {"mlp.up_proj.", "ffn_up."},
        {"mlp.down_proj.", "ffn_down."},     {"ln_1.", "attn_norm."},           {"attn.c_attn.", "attn_qkv."},
        {"attn.c_proj.", "attn_output."},    {"ln_2.", "ffn_norm."},            {"mlp.c_fc.", "ffn_up."},
        {"mlp.c_proj.", "ffn_down."}};
    // "layers.N.<part><weight|bias>" or "h.N.<part><weight|bias>"
    size_t dot1 = name.find('.');
    if (dot1 == std::string::npos) return name;
    std::string head = name.substr(0, dot1);
    if (head != "layers" && head != "h") return name;
    size_t dot2 = name.find('.', dot1 + 1);
    if (dot2 == std::string::npos) return name;
    std::string n = name.substr(dot1 + 1, dot2 - dot1 - 1), rest = name.substr(dot2 + 1);
    for (const auto &p : parts) {
      std::string from = p.first;
      if (rest.compare(0, from.size(), from) == 0) {
        std::string kind = rest.substr(from.size());
        *conv = head == "h" && kind == "weight" && (from.rfind("attn.", 0) == 0 || from.rfind("mlp.", 0) == 0);
        return "blk." + n + "." + p.second + kind;
      }
    }
    return name;
  }

  std::shared_ptr<const GgufFile> f_;
  const ModelConfig &c_;
};

ModelConfig read_config(const GgufFile &f, std::vector<std::string> &report) {
  ModelConfig c;
  std::string arch = f.str("general.architecture");
  if (arch != "llama" && arch != "qwen2" && arch != "gpt2" && arch != "mistral")
    bad(f, "general.architecture is \"" + arch + "\", an architecture ctorch does not run (it runs llama, mistral, "
           "qwen2, gpt2)");
  c.arch = arch == "mistral" ? "llama" : arch;  // the same decoder; the window is checked below
  const std::string a = arch + ".";
  const GgufTensorInfo &embd = f.info("token_embd.weight");
  if (embd.shape.size() != 2) bad(f, "token_embd.weight is not a matrix");
  c.n_vocab = embd.shape[0];
  c.n_embd = dim(f, a + "embedding_length", Bounds::embd);
  c.n_layer = dim(f, a + "block_count", Bounds::layers);
  c.n_head = dim(f, a + "attention.head_count", Bounds::heads);
  c.n_head_kv = f.has(a + "attention.head_count_kv") ? dim(f, a + "attention.head_count_kv", Bounds::heads) : c.n_head;
  c.n_ff = dim(f, a + "feed_forward_length", Bounds::ff);
  c.n_ctx_train = dim(f, a + "context_length", Bounds::ctx);
  c.head_dim = f.has(a + "attention.key_length") ? dim(f, a + "attention.key_length", Bounds::head_dim)
                                                   : c.n_embd / c.n_head;
  if (f.has(a + "attention.value_length") && dim(f, a + "attention.value_length", Bounds::head_dim) != c.head_dim)
    bad(f, a + "attention.value_length differs from the key length, which ctorch does not implement");
  c.tied_head = f.find("output.weight") == nullptr;
  if (c.arch == "gpt2") {
    c.norm_eps = f.f32(a + "attention.layer_norm_epsilon");
    c.act = "gelu_tanh";
    c.qkv_bias = c.o_bias = c.mlp_bias = true;
    if (c.n_embd % c.n_head != 0) bad(f, "the embedding length is not a multiple of the head count");
  } else {
    c.norm_eps = f.f32(a + "attention.layer_norm_rms_epsilon");
    c.rope_theta = f.f32_or(a + "rope.freq_base", 10000.0f);
    if (f.has(a + "rope.dimension_count") && int64_t(f.u64(a + "rope.dimension_count")) != c.head_dim)
      bad(f, a + "rope.dimension_count differs from the head size (partial rotary), which ctorch does not implement");
    std::string scaling = f.str_or(a + "rope.scaling.type", "none");
    if (scaling == "linear") {
      c.rope_type = "linear";
      c.rope_factor = f.f32(a + "rope.scaling.factor");
      if (!(c.rope_factor >= 1.0 && c.rope_factor <= 1e6)) bad(f, a + "rope.scaling.factor is outside [1, 1e6]");
    } else if (scaling != "none") {
      bad(f, a + "rope.scaling.type is \"" + scaling + "\", which ctorch does not implement (none, linear)");
    }
    c.qkv_bias = f.find("blk.0.attn_q.bias") != nullptr;
    c.o_bias = f.find("blk.0.attn_output.bias") != nullptr;
    c.mlp_bias = f.find("blk.0.ffn_up.bias") != nullptr;
    if (c.arch == "qwen2" && !c.qkv_bias) bad(f, "a qwen2 file without q/k/v biases");
    if (f.has(a + "attention.sliding_window")) c.sliding_window = dim(f, a + "attention.sliding_window", Bounds::ctx);
    if (const GgufTensorInfo *rf = f.find("rope_freqs.weight")) {
      if (rf->numel != c.head_dim / 2) bad(f, "rope_freqs.weight does not hold one factor per RoPE frequency");
      at::Tensor t = f.tensor_f32("rope_freqs.weight").contiguous();
      c.rope_freq_factors.assign(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
      for (float x : c.rope_freq_factors)
        if (!(x > 0 && std::isfinite(x))) bad(f, "rope_freqs.weight holds a factor that is not positive");
      report.push_back("RoPE frequencies divided by the file's rope_freqs factors");
    }
  }
  if (c.n_head % c.n_head_kv != 0) bad(f, "the head count is not a multiple of the key/value head count");
  if (f.has("tokenizer.ggml.bos_token_id")) c.bos = f.i64("tokenizer.ggml.bos_token_id");
  for (const char *k : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (f.has(k)) {
      int64_t id = f.i64(k);
      if (id < 0 || id >= c.n_vocab) bad(f, std::string(k) + " is outside the vocabulary");
      if (std::find(c.eos.begin(), c.eos.end(), id) == c.eos.end()) c.eos.push_back(id);
    }
  if (c.bos < -1 || c.bos >= c.n_vocab) bad(f, "tokenizer.ggml.bos_token_id is outside the vocabulary");
  check_config(c, "'" + f.path() + "'");
  return c;
}

}  // namespace gguf_model_detail

std::shared_ptr<Model> ModelBuilder::gguf(const std::string &path, const LoadOptions &opt) {
  using namespace gguf_model_detail;
  std::shared_ptr<const GgufFile> f = GgufFile::open(path);
  std::shared_ptr<Model> m(new Model());
  m->opt_ = opt;
  m->source_ = "gguf";
  m->cfg_ = read_config(*f, m->report_);
  m->chat_template_ = f->str_or("tokenizer.chat_template", "");
  if (f->has("tokenizer.ggml.model")) {
    m->tok_ = Tokenizer::from_vocab(f->vocab(), "'" + path + "'");
    if (m->tok_->n_vocab() > m->cfg_.n_vocab)
      bad(*f, "the vocabulary has " + std::to_string(m->tok_->n_vocab()) + " tokens, token_embd.weight only " +
                  std::to_string(m->cfg_.n_vocab) + " rows");
  }
  if (opt.packed && opt.device.is_cpu())
    m->report_.push_back("GGUF v" + std::to_string(f->version()) +
                         ": quantised matrices kept packed (other quantised tensors dequantised to " +
                         std::string(c10::toString(opt.dtype)) + ")");
  else
    m->report_.push_back("GGUF v" + std::to_string(f->version()) + ": quantised tensors dequantised to " +
                         std::string(c10::toString(opt.dtype)));
  if (m->cfg_.arch == "llama") m->report_.push_back("q/k rows permuted back from llama.cpp's order");
  build(*m, [&]() -> std::unique_ptr<WeightSource> { return std::make_unique<GgufSource>(f, m->cfg_); });
  return m;
}

}  // namespace lm
}  // namespace ctorch
