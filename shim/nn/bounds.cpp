// The size bound of module construction: before a kind
// builds anything, the number of parameter and buffer elements it would
// allocate, and the number of tensors and modules it would make, are worked
// out from its parsed arguments (saturating arithmetic: no overflow) and
// compared with the bounds. Text such as LSTM(.., num_layers=2**62) or
// Embedding(2**40, 2**20) is then refused at once with OUT_OF_MEMORY naming
// the argument, instead of allocating (or looping) until the process dies.
//
// The bounds:
// - elements (parameters + buffers, any dtype): 2^31 by default, i.e. 8 GiB
//   in float32, 16 GiB in float64: more than any one torch.nn layer or
//   stack people build in one call (nn.Transformer() holds 44 M; a
//   250,000 x 8,192 embedding table 2.05 G), and less than the memory of the
//   machines the project runs on, so that a wrong number fails fast instead
//   of swapping. ctorch_nn_set_max_parameters changes it (0: no bound).
// - tensors + modules: 2^16 (65,536), fixed. It stops stacks whose layers
//   hold few or no elements (num_layers=2**62 of a tiny layer) from looping
//   for ever: each object costs hundreds of bytes and microseconds whatever
//   its size. Real stacks stay far below it (a 1,000-layer
//   TransformerEncoder holds about 22,000), and 65,536 tensors build in well under
//   a second.
//
// Every built-in kind has an entry in the table below (a kind missing from
// it is refused with NOT_IMPLEMENTED, so a new kind cannot forget its rule);
// kinds that allocate nothing whatever their arguments have an empty rule.
// The rules mirror the constructors' shapes; tests/test_nn_bounds.c checks
// the count equals the module's on the boundary (bound = count builds,
// bound = count - 1 is refused).
#include "nn/nn_internal.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <unordered_map>

namespace ctorch {
namespace nn {
namespace {

constexpr uint64_t kDefaultMaxElements = uint64_t{1} << 31;
constexpr uint64_t kMaxObjects = uint64_t{1} << 16;
constexpr uint64_t kSat = std::numeric_limits<uint64_t>::max();

std::atomic<uint64_t> g_max_elements{kDefaultMaxElements};

uint64_t sat_add(uint64_t a, uint64_t b) { return a > kSat - b ? kSat : a + b; }
uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kSat : r;
}

struct Size {
  uint64_t elements = 0, objects = 0;
  Size &operator+=(const Size &o) {
    elements = sat_add(elements, o.elements);
    objects = sat_add(objects, o.objects);
    return *this;
  }
  Size times(uint64_t n) const { return Size{sat_mul(elements, n), sat_mul(objects, n)}; }
};

// Reads the arguments a rule needs, remembering the largest integer read:
// the argument a refusal names (num_layers=2**62 rather than hidden_size=20).
// Negative values count as 0 (the constructor refuses them itself). Rules
// read their arguments in signature order, one statement at a time (a tie
// names the first).
class SizeReader {
 public:
  explicit SizeReader(const Args &a) : a_(a) {}
  uint64_t i(const char *name) { return note(name, a_.i(name)); }
  uint64_t i_or(const char *name, uint64_t none) { return a_.is_none(name) ? none : i(name); }
  bool b(const char *name) const { return a_.b(name); }
  // The product of an int[n] (or int[]) argument's values.
  uint64_t prod(const char *name, size_t n = 0) {
    uint64_t p = 1;
    for (int64_t v : a_.ints(name, n)) p = sat_mul(p, note(name, v));
    return p;
  }
  const Value &value(const char *name) const { return a_.get(name); }
  std::string arg_text() const { return arg_.empty() ? "" : " " + arg_ + "=" + std::to_string(arg_value_); }

 private:
  uint64_t note(const char *name, int64_t v) {
    uint64_t u = v < 0 ? 0 : static_cast<uint64_t>(v);
    if (arg_.empty() || u > arg_value_) arg_ = name, arg_value_ = u;
    return u;
  }
  const Args &a_;
  std::string arg_;
  uint64_t arg_value_ = 0;
};

Size tensor(uint64_t n) { return Size{n, 1}; }
Size module() { return Size{0, 1}; }
Size maybe(bool on, uint64_t n) { return on ? tensor(n) : Size{}; }

// Shapes the composite layers share, in elements.
Size linear(uint64_t in, uint64_t out, bool bias) {
  Size s = module();
  s += tensor(sat_mul(in, out));
  s += maybe(bias, out);
  return s;
}
Size layer_norm(uint64_t n, bool affine, bool bias) {
  Size s = module();
  s += maybe(affine, n);
  s += maybe(affine && bias, n);
  return s;
}
Size mha(uint64_t e, uint64_t kdim, uint64_t vdim, bool bias, bool bias_kv) {
  Size s = module();
  if (kdim == e && vdim == e) {
    s += tensor(sat_mul(3, sat_mul(e, e)));
  } else {
    s += tensor(sat_mul(e, e));
    s += tensor(sat_mul(e, kdim));
    s += tensor(sat_mul(e, vdim));
  }
  s += maybe(bias, sat_mul(3, e));
  s += linear(e, e, bias);  // out_proj
  if (bias_kv) s += tensor(e), s += tensor(e);
  return s;
}
// TransformerEncoderLayer (decoder = false) or TransformerDecoderLayer.
Size transformer_layer(uint64_t d, uint64_t ff, bool bias, bool decoder) {
  Size s = module();
  s += mha(d, d, d, bias, false).times(decoder ? 2 : 1);
  s += linear(d, ff, bias);
  s += linear(ff, d, bias);
  s += layer_norm(d, true, bias).times(decoder ? 3 : 2);
  s += module().times(decoder ? 4 : 3);  // dropouts
  return s;
}
Size transformer_layer(SizeReader &r, bool decoder) {
  uint64_t d = r.i("d_model"), ff = r.i("dim_feedforward");
  return transformer_layer(d, ff, r.b("bias"), decoder);
}

// An existing module (an argument passed as a module): its tensors and modules.
Size existing(const Value &v) {
  Size s;
  if (v.kind != Value::Mod || !v.mod) return s;
  for (const auto &m : named_modules(*v.mod)) {
    s += module();
    for (const auto *list : {&m.second->params, &m.second->buffers})
      for (const auto &e : *list)
        if (e.t.defined()) s += tensor(static_cast<uint64_t>(e.t.numel()));
  }
  return s;
}

// RNN (gates 1), LSTM (4) and GRU (3): per layer and direction w_ih, w_hh,
// b_ih, b_hh and LSTM's w_hr; the first layer reads input_size, the others
// the previous layer's output (real_hidden * directions).
Size rnn(SizeReader &r, uint64_t gates, bool lstm) {
  uint64_t in = r.i("input_size"), h = r.i("hidden_size"), layers = r.i("num_layers");
  uint64_t proj = lstm ? r.i("proj_size") : 0;
  bool bias = r.b("bias");
  uint64_t dirs = r.b("bidirectional") ? 2 : 1;
  uint64_t real = proj ? proj : h, gh = sat_mul(gates, h);
  auto layer = [&](uint64_t layer_in) {
    Size s = tensor(sat_mul(gh, layer_in));
    s += tensor(sat_mul(gh, real));
    s += maybe(bias, gh).times(2);
    s += maybe(proj > 0, sat_mul(proj, h));
    return s.times(dirs);
  };
  Size s = module();
  if (layers == 0) return s;
  s += layer(in);
  s += layer(sat_mul(real, dirs)).times(layers - 1);
  return s;
}
Size rnn_cell(SizeReader &r, uint64_t gates) {
  uint64_t in = r.i("input_size"), h = r.i("hidden_size"), gh = sat_mul(gates, h);
  Size s = module();
  s += tensor(sat_mul(gh, in));
  s += tensor(sat_mul(gh, h));
  s += maybe(r.b("bias"), gh).times(2);
  return s;
}

Size conv(SizeReader &r, size_t nd, bool transposed) {
  uint64_t in = r.i("in_channels"), out = r.i("out_channels"), groups = r.i("groups");
  uint64_t k = r.prod("kernel_size", nd);
  if (groups == 0) groups = 1;  // refused by the constructor
  uint64_t w = transposed ? sat_mul(in, out / groups) : sat_mul(out, in / groups);
  Size s = module();
  s += tensor(sat_mul(w, k));
  s += maybe(r.b("bias"), out);
  return s;
}

Size norm(SizeReader &r, const char *features) {
  uint64_t c = r.i(features);
  bool affine = r.b("affine");
  Size s = layer_norm(c, affine, r.b("bias"));
  if (std::string(features) == "num_features" && r.b("track_running_stats")) {
    s += tensor(c).times(2);
    s += tensor(1);
  }
  return s;
}

using Rule = std::function<Size(SizeReader &)>;

const std::unordered_map<std::string, Rule> &rules() {
  static const std::unordered_map<std::string, Rule> table = [] {
    std::unordered_map<std::string, Rule> t;
    // Kinds that allocate nothing, whatever their arguments.
    for (const char *k : {"Identity", "Flatten", "ReLU", "Sequential", "ModuleList", "ModuleDict", "LeakyReLU", "GELU",
                          "SiLU", "ELU", "Hardswish", "Mish", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Unflatten",
                          "PixelShuffle", "Dropout", "Dropout2d", "Upsample", "MaxPool1d", "MaxPool2d", "MaxPool3d",
                          "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
                          "AdaptiveAvgPool3d", "AdaptiveMaxPool2d"})
      t[k] = [](SizeReader &) { return module(); };
    t["Linear"] = [](SizeReader &r) {
      uint64_t in = r.i("in_features"), out = r.i("out_features");
      return linear(in, out, r.b("bias"));
    };
    t["Bilinear"] = [](SizeReader &r) {
      uint64_t in1 = r.i("in1_features"), in2 = r.i("in2_features"), out = r.i("out_features");
      Size s = module();
      s += tensor(sat_mul(out, sat_mul(in1, in2)));
      s += maybe(r.b("bias"), out);
      return s;
    };
    t["PReLU"] = [](SizeReader &r) { return module() += tensor(r.i("num_parameters")); };
    for (const char *k : {"Embedding", "EmbeddingBag"})
      t[k] = [](SizeReader &r) {
        uint64_t num = r.i("num_embeddings"), dim = r.i("embedding_dim");
        return module() += tensor(sat_mul(num, dim));
      };
    for (size_t nd = 1; nd <= 3; ++nd) {
      const std::string d = std::to_string(nd) + "d";
      t["Conv" + d] = [nd](SizeReader &r) { return conv(r, nd, false); };
      t["ConvTranspose" + d] = [nd](SizeReader &r) { return conv(r, nd, true); };
      t["BatchNorm" + d] = [](SizeReader &r) { return norm(r, "num_features"); };
      t["InstanceNorm" + d] = [](SizeReader &r) { return norm(r, "num_features"); };
    }
    t["LayerNorm"] = [](SizeReader &r) {
      return layer_norm(r.prod("normalized_shape"), r.b("elementwise_affine"), r.b("bias"));
    };
    t["GroupNorm"] = [](SizeReader &r) { return norm(r, "num_channels"); };
    t["RNN"] = [](SizeReader &r) { return rnn(r, 1, false); };
    t["LSTM"] = [](SizeReader &r) { return rnn(r, 4, true); };
    t["GRU"] = [](SizeReader &r) { return rnn(r, 3, false); };
    t["RNNCell"] = [](SizeReader &r) { return rnn_cell(r, 1); };
    t["LSTMCell"] = [](SizeReader &r) { return rnn_cell(r, 4); };
    t["GRUCell"] = [](SizeReader &r) { return rnn_cell(r, 3); };
    t["MultiheadAttention"] = [](SizeReader &r) {
      uint64_t e = r.i("embed_dim");
      r.i("num_heads");
      uint64_t kdim = r.i_or("kdim", e), vdim = r.i_or("vdim", e);
      return mha(e, kdim, vdim, r.b("bias"), r.b("add_bias_kv"));
    };
    t["TransformerEncoderLayer"] = [](SizeReader &r) { return transformer_layer(r, false); };
    t["TransformerDecoderLayer"] = [](SizeReader &r) { return transformer_layer(r, true); };
    // The stacks hold num_layers deep copies of the layer passed, and the norm.
    for (const char *k : {"TransformerEncoder", "TransformerDecoder"}) {
      const char *layer = k[11] == 'E' ? "encoder_layer" : "decoder_layer";
      t[k] = [layer](SizeReader &r) {
        Size s = module();
        s += existing(r.value(layer)).times(r.i("num_layers"));
        s += existing(r.value("norm"));
        return s;
      };
    }
    // Transformer: one layer of each kind made first (Python's order), then
    // the stacks of copies, each with its LayerNorm.
    t["Transformer"] = [](SizeReader &r) {
      uint64_t d = r.i("d_model"), ff = r.i("dim_feedforward");
      bool bias = r.b("bias");
      r.i("nhead");
      Size s = module().times(5);  // Transformer, encoder, decoder, their layer lists
      uint64_t n_enc = r.i("num_encoder_layers"), n_dec = r.i("num_decoder_layers");
      s += transformer_layer(d, ff, bias, false).times(sat_add(n_enc, 1));
      s += transformer_layer(d, ff, bias, true).times(sat_add(n_dec, 1));
      s += layer_norm(d, true, bias).times(2);
      return s;
    };
    return t;
  }();
  return table;
}

std::string count_text(uint64_t n) { return n == kSat ? "more than " + std::to_string(kSat) : std::to_string(n); }

void check_size(const Kind &k, const Args &a) {
  auto it = rules().find(k.name);
  if (it == rules().end())
    fail(CTORCH_NOT_IMPLEMENTED, std::string(k.name) + " has no size rule (shim/nn/bounds.cpp)");
  SizeReader r(a);
  Size s = it->second(r);
  const uint64_t max = g_max_elements.load(std::memory_order_relaxed);
  if (max && s.elements > max)
    fail(CTORCH_OUT_OF_MEMORY, std::string(k.name) + r.arg_text() + " would need " + count_text(s.elements) +
                                   " parameter and buffer elements, over the bound of " + std::to_string(max) +
                                   " (ctorch_nn_set_max_parameters); nothing was allocated");
  if (s.objects > kMaxObjects)
    fail(CTORCH_OUT_OF_MEMORY, std::string(k.name) + r.arg_text() + " would make " + count_text(s.objects) +
                                   " tensors and modules, over the bound of " + std::to_string(kMaxObjects) +
                                   " one module may hold; nothing was allocated");
}

}  // namespace

ModulePtr build(const Kind &k, const Args &a) {
  check_size(k, a);
  return k.make(a);
}

}  // namespace nn
}  // namespace ctorch

extern "C" CTORCH_API ctorch_status ctorch_nn_set_max_parameters(uint64_t *previous, uint64_t max_elements) {
  CTORCH_TRY
  uint64_t old = ctorch::nn::g_max_elements.exchange(max_elements);
  if (previous) *previous = old;
  CTORCH_CATCH
}
