// config.json and generation_config.json as transformers writes them, into
// a ModelConfig: every value the decoder uses is read strictly (type and
// bounds), a value the decoder does not implement is refused by key, and
// the dimensions are bounded before anything is allocated from them.
#include "lm/model.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "files/files.h"
#include "core/internal.h"
#include "json/json.h"

namespace ctorch {
namespace lm {
namespace config_detail {

using json::Value;

[[noreturn]] void bad(const std::string &file, const std::string &what) {
  fail(CTORCH_INVALID_ARGUMENT, file + ": " + what);
}

void charge(void *ctx, uint64_t bytes) { static_cast<LoadBudget *>(ctx)->charge(bytes); }

Value parse_object(const std::string &text, const std::string &file) {
  // Configuration files are small: 16 MiB of text and 64x that in parsed values at most.
  if (text.size() > (16u << 20)) bad(file, "is " + std::to_string(text.size()) + " bytes long, more than 16 MiB");
  LoadBudget budget(file, text.size() * 64 + (1u << 20));
  Value root;
  try {
    root = json::parse(text.data(), text.size(), charge, &budget);
  } catch (const json::JsonError &e) {
    bad(file, e.what());
  }
  if (root.kind != Value::Object) bad(file, "is not a JSON object");
  return root;
}

bool is_null(const Value *v) { return !v || v->kind == Value::Null; }

// An integer value (optionally negative), no fraction or exponent.
bool as_i64(const Value &v, int64_t *out) {
  if (v.kind != Value::Number) return false;
  const char *b = v.text.data(), *e = b + v.text.size();
  auto r = std::from_chars(b, e, *out);
  return r.ec == std::errc() && r.ptr == e;
}

int64_t get_int(const Value &o, const char *key, int64_t dflt, int64_t lo, int64_t hi, const std::string &file,
                 bool required) {
  const Value *v = o.find(key);
  if (is_null(v)) {
    if (required) bad(file, std::string("has no \"") + key + "\"");
    return dflt;
  }
  int64_t x = 0;
  if (!as_i64(*v, &x)) bad(file, std::string("\"") + key + "\" is not an integer");
  if (x < lo || x > hi)
    bad(file, std::string("\"") + key + "\" is " + std::to_string(x) + ", outside [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
  return x;
}

double get_double(const Value &o, const char *key, double dflt, const std::string &file) {
  const Value *v = o.find(key);
  if (is_null(v)) return dflt;
  double x = 0;
  if (v->kind == Value::Number) {
    const char *b = v->text.data(), *e = b + v->text.size();
    auto r = std::from_chars(b, e, x);
    if (r.ec == std::errc() && r.ptr == e && std::isfinite(x)) return x;
  }
  bad(file, std::string("\"") + key + "\" is not a finite number");
}

bool get_bool(const Value &o, const char *key, bool dflt, const std::string &file) {
  const Value *v = o.find(key);
  if (is_null(v)) return dflt;
  if (v->kind != Value::Bool) bad(file, std::string("\"") + key + "\" is not true or false");
  return v->boolean;
}

std::string get_string(const Value &o, const char *key, const std::string &dflt, const std::string &file) {
  const Value *v = o.find(key);
  if (is_null(v)) return dflt;
  if (v->kind != Value::String) bad(file, std::string("\"") + key + "\" is not a string");
  return v->text;
}

// An id or a list of ids (eos_token_id).
std::vector<int64_t> get_ids(const Value &o, const char *key, const std::string &file) {
  const Value *v = o.find(key);
  std::vector<int64_t> ids;
  if (is_null(v)) return ids;
  auto one = [&](const Value &x) {
    int64_t id = 0;
    if (!as_i64(x, &id) || id < 0 || id >= Bounds::vocab)
      bad(file, std::string("\"") + key + "\" holds something that is not a token id");
    ids.push_back(id);
  };
  if (v->kind == Value::Array) {
    if (v->items.size() > 1024) bad(file, std::string("\"") + key + "\" lists more than 1024 ids");
    for (const auto &x : v->items) one(x);
  } else {
    one(*v);
  }
  return ids;
}

// RoPE: transformers 5's "rope_parameters" object, or the older
// "rope_theta" with an optional "rope_scaling" object.
void read_rope(ModelConfig &c, const Value &root, const std::string &file) {
  const Value *params = root.find("rope_parameters");
  const Value *scaling = root.find("rope_scaling");
  c.rope_theta = get_double(root, "rope_theta", 10000.0, file);
  const Value *rp = nullptr;
  std::string key;
  if (!is_null(params)) {
    rp = params;
    key = "rope_parameters";
  } else if (!is_null(scaling)) {
    rp = scaling;
    key = "rope_scaling";
  }
  if (!rp) return;
  if (rp->kind != Value::Object) bad(file, "\"" + key + "\" is not an object");
  c.rope_theta = get_double(*rp, "rope_theta", c.rope_theta, file);
  std::string type = get_string(*rp, "rope_type", "", file);
  if (type.empty()) type = get_string(*rp, "type", "default", file);
  if (type != "default" && type != "linear" && type != "llama3")
    bad(file, "\"" + key + "\" has rope_type \"" + type +
                  "\", which ctorch does not implement (it knows default, linear and llama3)");
  c.rope_type = type;
  if (type == "default") return;
  c.rope_factor = get_double(*rp, "factor", 0.0, file);
  if (!(c.rope_factor >= 1.0 && c.rope_factor <= 1e6))
    bad(file, "\"" + key + "\"'s factor must be a number in [1, 1e6]");
  if (type == "llama3") {
    c.rope_low_freq_factor = get_double(*rp, "low_freq_factor", 0.0, file);
    c.rope_high_freq_factor = get_double(*rp, "high_freq_factor", 0.0, file);
    c.rope_original_ctx = get_int(*rp, "original_max_position_embeddings", 0, 1, Bounds::ctx, file, true);
    if (!(c.rope_low_freq_factor > 0 && c.rope_high_freq_factor > c.rope_low_freq_factor))
      bad(file, "\"" + key + "\" needs 0 < low_freq_factor < high_freq_factor");
  }
}

const char *const kKnownTypes = "llama, mistral, qwen2, gpt2";

}  // namespace config_detail

ModelConfig parse_hf_config(const std::string &text, const std::string &file) {
  using namespace config_detail;
  Value root = parse_object(text, file);
  ModelConfig c;
  c.arch = get_string(root, "model_type", "", file);
  if (c.arch.empty()) bad(file, "has no \"model_type\"");
  if (c.arch != "llama" && c.arch != "mistral" && c.arch != "qwen2" && c.arch != "gpt2")
    bad(file, "has model_type \"" + c.arch + "\", an architecture ctorch does not run (it runs " + kKnownTypes + ")");
  if (const Value *a = root.find("architectures"); !is_null(a)) {
    if (a->kind != Value::Array) bad(file, "\"architectures\" is not a list");
    for (const auto &x : a->items) {
      static const char *const ok[] = {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",
                                       "GPT2LMHeadModel"};
      bool known = false;
      for (const char *k : ok) known = known || (x.kind == Value::String && x.text == k);
      if (!known)
        bad(file, "\"architectures\" names " + (x.kind == Value::String ? "\"" + x.text + "\"" : "a non-string") +
                      ", not a causal language model head ctorch runs");
    }
  }
  const bool gpt2 = c.arch == "gpt2";
  if (get_bool(root, "is_encoder_decoder", false, file) || get_bool(root, "add_cross_attention", false, file))
    bad(file, "describes an encoder-decoder model (is_encoder_decoder / add_cross_attention)");
  if (gpt2) {
    c.n_vocab = get_int(root, "vocab_size", 0, 1, Bounds::vocab, file, true);
    c.n_embd = get_int(root, "n_embd", 768, 1, Bounds::embd, file, false);
    c.n_layer = get_int(root, "n_layer", 12, 1, Bounds::layers, file, false);
    c.n_head = get_int(root, "n_head", 12, 1, Bounds::heads, file, false);
    c.n_head_kv = c.n_head;
    c.n_ctx_train = get_int(root, "n_positions", 1024, 1, Bounds::ctx, file, false);
    c.n_ff = get_int(root, "n_inner", 4 * c.n_embd, 1, Bounds::ff, file, false);
    c.norm_eps = get_double(root, "layer_norm_epsilon", 1e-5, file);
    c.tied_head = get_bool(root, "tie_word_embeddings", true, file);
    std::string act = get_string(root, "activation_function", "gelu_new", file);
    if (act == "gelu_new" || act == "gelu_pytorch_tanh") c.act = "gelu_tanh";
    else if (act == "gelu") c.act = "gelu";
    else bad(file, "\"activation_function\" \"" + act + "\" is not implemented (gelu_new, gelu_pytorch_tanh, gelu)");
    if (!get_bool(root, "scale_attn_weights", true, file))
      bad(file, "\"scale_attn_weights\": false is not implemented");
    if (get_bool(root, "scale_attn_by_inverse_layer_idx", false, file))
      bad(file, "\"scale_attn_by_inverse_layer_idx\": true is not implemented");
    if (get_bool(root, "reorder_and_upcast_attn", false, file))
      bad(file, "\"reorder_and_upcast_attn\": true is not implemented");
    if (c.n_embd % c.n_head != 0) bad(file, "\"n_embd\" is not a multiple of \"n_head\"");
    c.head_dim = c.n_embd / c.n_head;
    c.qkv_bias = c.o_bias = c.mlp_bias = true;
  } else {
    c.n_vocab = get_int(root, "vocab_size", 0, 1, Bounds::vocab, file, true);
    c.n_embd = get_int(root, "hidden_size", 0, 1, Bounds::embd, file, true);
    c.n_layer = get_int(root, "num_hidden_layers", 0, 1, Bounds::layers, file, true);
    c.n_head = get_int(root, "num_attention_heads", 0, 1, Bounds::heads, file, true);
    c.n_head_kv = get_int(root, "num_key_value_heads", c.n_head, 1, Bounds::heads, file, false);
    c.n_ff = get_int(root, "intermediate_size", 0, 1, Bounds::ff, file, true);
    c.n_ctx_train = get_int(root, "max_position_embeddings", 2048, 1, Bounds::ctx, file, false);
    if (c.n_embd % c.n_head != 0 && is_null(root.find("head_dim")))
      bad(file, "\"hidden_size\" is not a multiple of \"num_attention_heads\" and there is no \"head_dim\"");
    c.head_dim = get_int(root, "head_dim", c.n_embd / c.n_head, 2, Bounds::head_dim, file, false);
    if (c.head_dim % 2 != 0) bad(file, "\"head_dim\" is odd: RoPE rotates pairs");
    c.norm_eps = get_double(root, "rms_norm_eps", 1e-6, file);
    c.tied_head = get_bool(root, "tie_word_embeddings", false, file);
    std::string act = get_string(root, "hidden_act", "silu", file);
    if (act != "silu") bad(file, "\"hidden_act\" \"" + act + "\" is not implemented (silu)");
    if (c.arch == "qwen2") {
      c.qkv_bias = true;
    } else if (c.arch == "llama") {
      c.qkv_bias = c.o_bias = get_bool(root, "attention_bias", false, file);
      c.mlp_bias = get_bool(root, "mlp_bias", false, file);
    }
    read_rope(c, root, file);
    // Sliding windows: Mistral's sliding_window (null: none) in every layer;
    // Qwen2's only with use_sliding_window, in the layers from
    // max_window_layers on (as transformers' Qwen2Config sets layer_types).
    bool windowed = c.arch == "mistral" || (c.arch == "qwen2" && get_bool(root, "use_sliding_window", false, file));
    if (windowed) c.sliding_window = get_int(root, "sliding_window", 0, 0, Bounds::ctx, file, false);
    if (windowed && c.arch == "qwen2")
      c.window_from_layer = get_int(root, "max_window_layers", 28, 0, Bounds::layers, file, false);
  }
  if (c.n_head % c.n_head_kv != 0) bad(file, "the number of attention heads is not a multiple of the key/value heads");
  c.bos = get_int(root, "bos_token_id", -1, -1, Bounds::vocab, file, false);
  c.eos = get_ids(root, "eos_token_id", file);
  check_config(c, file);
  return c;
}

void apply_generation_config(ModelConfig &c, const std::string &text, const std::string &file) {
  using namespace config_detail;
  if (text.empty()) return;
  Value root = parse_object(text, file);
  if (const Value *v = root.find("eos_token_id"); !is_null(v)) c.eos = get_ids(root, "eos_token_id", file);
  c.bos = get_int(root, "bos_token_id", c.bos, -1, Bounds::vocab, file, false);
}

void check_config(const ModelConfig &c, const std::string &file) {
  using config_detail::bad;
  auto in = [&](int64_t v, int64_t hi, const char *what) {
    if (v < 1 || v > hi)
      bad(file, std::string(what) + " is " + std::to_string(v) + ", outside [1, " + std::to_string(hi) + "]");
  };
  in(c.n_vocab, Bounds::vocab, "the vocabulary size");
  in(c.n_embd, Bounds::embd, "the embedding size");
  in(c.n_layer, Bounds::layers, "the number of layers");
  in(c.n_head, Bounds::heads, "the number of attention heads");
  in(c.n_head_kv, c.n_head, "the number of key/value heads");
  in(c.head_dim, Bounds::head_dim, "the head size");
  in(c.n_ff, Bounds::ff, "the MLP size");
  in(c.n_ctx_train, Bounds::ctx, "the training context");
  if (c.n_head % c.n_head_kv != 0) bad(file, "the number of attention heads is not a multiple of the key/value heads");
  if (c.n_head * c.head_dim > 4 * Bounds::embd) bad(file, "n_head * head_dim is out of bounds");
  if (!(c.norm_eps > 0 && c.norm_eps < 1)) bad(file, "the normalisation epsilon is outside (0, 1)");
  if (c.arch != "gpt2" && !(c.rope_theta > 1 && c.rope_theta < 1e12)) bad(file, "the RoPE base is outside (1, 1e12)");
  if (c.bos >= c.n_vocab) bad(file, "the bos id " + std::to_string(c.bos) + " is outside the vocabulary");
  for (int64_t e : c.eos)
    if (e >= c.n_vocab) bad(file, "the eos id " + std::to_string(e) + " is outside the vocabulary");
}

int64_t parameter_count(const ModelConfig &c) {
  // Each term is bounded (Bounds), so the sums fit 64 bits.
  const int64_t E = c.n_embd, D = c.head_dim;
  int64_t qkv = (c.n_head + 2 * c.n_head_kv) * D * E + (c.qkv_bias ? (c.n_head + 2 * c.n_head_kv) * D : 0);
  int64_t o = c.n_head * D * E + (c.o_bias ? E : 0);
  int64_t mlp = c.arch == "gpt2" ? 2 * E * c.n_ff + c.n_ff + E : 3 * E * c.n_ff + (c.mlp_bias ? 2 * c.n_ff + E : 0);
  int64_t norms = c.arch == "gpt2" ? 4 * E : 2 * E;
  int64_t per_layer = qkv + o + mlp + norms;
  int64_t total = c.n_layer * per_layer + c.n_vocab * E + (c.tied_head ? 0 : c.n_vocab * E) +
                  (c.arch == "gpt2" ? c.n_ctx_train * E + 2 * E : E);
  return total;
}

}  // namespace lm
}  // namespace ctorch
