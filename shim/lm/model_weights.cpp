// The weights of each architecture by transformers' names, checked against
// the configuration's shapes, converted to the chosen dtype and device, and
// laid out for the forward: q/k/v stacked into one matrix, gate/up into one,
// gpt2's Conv1D matrices transposed into Linear's [out, in].
#include "lm/model_weights.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <map>

#include "core/internal.h"

namespace ctorch {
namespace lm {
namespace weights_detail {

// A matrix as a linear layer holds it: transformers' name and Linear's
// [out, in]; conv: transformers holds it as a Conv1D's [in, out] (gpt2).
struct Part {
  std::string name;
  int64_t out, in;
  bool conv = false;
};

struct Builder {
  const ModelConfig &c;
  const LoadOptions &opt;
  WeightSource &src;
  int64_t converted = 0;  // tensors copied (dtype, device or layout)
  // Packed matrices only on the CPU (the kernels are the CPU's).
  const bool pack = opt.packed && opt.device.is_cpu();
  const bool quant = !opt.quantize.empty();
  std::map<std::string, int64_t> packed;  // matrices kept packed, by format
  int64_t quantised = 0;                  // of which quantised here

  // The tensor in the model's dtype on its device; a tensor already there
  // (same dtype, on the CPU) is shared, not copied.
  at::Tensor put(const at::Tensor &t) {
    at::Tensor r = t.to(opt.device, opt.dtype).contiguous();
    if (!r.is_same(t)) ++converted;
    return r;
  }
  at::Tensor get(const std::string &name, std::vector<int64_t> shape, WeightKind kind = WeightKind::matrix) {
    return src.get(name, shape, kind);
  }
  // Several tensors stacked along dim 0, in the model's dtype (one copy).
  at::Tensor stack(std::vector<at::Tensor> parts) {
    for (auto &p : parts) p = p.to(opt.dtype);
    ++converted;
    return at::cat(parts, 0).to(opt.device).contiguous();
  }
  static std::vector<int64_t> shape_of(const Part &p) {
    return p.conv ? std::vector<int64_t>{p.in, p.out} : std::vector<int64_t>{p.out, p.in};
  }
  // The part's floats in Linear's [out, in].
  at::Tensor fetch(const Part &p) {
    at::Tensor t = get(p.name, shape_of(p));
    return p.conv ? t.t() : t;
  }
  // The part packed: as the source holds it, else quantised here where
  // asked (rows of whole groups; *here set); undefined otherwise.
  QWeight pack_part(const Part &p, bool *here) {
    QWeight w = pack ? src.get_packed(p.name, shape_of(p)) : QWeight();
    *here = false;
    if (!w.defined() && quant && p.in % 32 == 0) {
      w = qweight_quantize(fetch(p), opt.quantize);
      *here = true;
    }
    return w;
  }
  void count(const QWeight &w) { ++packed[w.format()]; }
  // The parts stacked by rows: packed where every part can be (adjacent
  // parts of one format merged into one matrix), else floats.
  Linear linear(const std::vector<Part> &parts) {
    Linear l;
    if (pack || quant) {
      std::vector<QWeight> q;
      int64_t here = 0;
      for (const Part &p : parts) {
        bool h = false;
        QWeight w = pack_part(p, &h);
        if (!w.defined()) {
          q.clear();
          break;
        }
        here += h;
        q.push_back(std::move(w));
      }
      if (!q.empty()) {
        quantised += here;
        std::vector<QWeight> run;
        for (QWeight &w : q) {
          count(w);
          if (!run.empty() && !qweight_same_layout(run[0], w)) {
            l.q.push_back(qweight_cat(run));
            run.clear();
          }
          run.push_back(std::move(w));
        }
        l.q.push_back(qweight_cat(run));
        return l;
      }
    }
    std::vector<at::Tensor> ts;
    for (const Part &p : parts) ts.push_back(fetch(p));
    l.w = ts.size() == 1 ? put(ts[0]) : stack(ts);
    return l;
  }
  // The token embedding [n_vocab, E], packed where the source holds it
  // quantised (lookups unpack only their rows), or quantised here when it
  // is also the output head and the head is to be quantised.
  void embedding(Weights &w, const std::string &name) {
    const Part p{name, c.n_vocab, c.n_embd};
    QWeight q = pack ? src.get_packed(name, shape_of(p)) : QWeight();
    if (!q.defined() && quant && c.tied_head && c.n_embd % 32 == 0) {
      q = qweight_quantize(get(name, shape_of(p)), opt.quantize);
      ++quantised;
    }
    if (q.defined()) {
      count(q);
      w.tok_embd_q = std::move(q);
    } else {
      w.tok_embd = put(get(name, shape_of(p)));
    }
  }
  Linear head(const Weights &w) {
    if (!c.tied_head) return linear({{"lm_head.weight", c.n_vocab, c.n_embd}});
    Linear l;
    if (w.tok_embd_q.defined()) l.q.push_back(w.tok_embd_q);
    else l.w = w.tok_embd;
    return l;
  }
};

Weights llama_family(Builder &b) {
  const ModelConfig &c = b.c;
  const int64_t E = c.n_embd, D = c.head_dim, Q = c.n_head * D, KV = c.n_head_kv * D, F = c.n_ff;
  const std::string p = b.src.has("model.embed_tokens.weight") ? "model." : "";
  Weights w;
  b.embedding(w, p + "embed_tokens.weight");
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string L = p + "layers." + std::to_string(l) + ".";
    LayerWeights lw;
    lw.norm1_w = b.put(b.get(L + "input_layernorm.weight", {E}, WeightKind::norm));
    lw.wqkv = b.linear({{L + "self_attn.q_proj.weight", Q, E}, {L + "self_attn.k_proj.weight", KV, E},
                        {L + "self_attn.v_proj.weight", KV, E}});
    if (c.qkv_bias)
      lw.bqkv = b.stack({b.get(L + "self_attn.q_proj.bias", {Q}, WeightKind::bias),
                         b.get(L + "self_attn.k_proj.bias", {KV}, WeightKind::bias),
                         b.get(L + "self_attn.v_proj.bias", {KV}, WeightKind::bias)});
    lw.wo = b.linear({{L + "self_attn.o_proj.weight", E, Q}});
    if (c.o_bias) lw.bo = b.put(b.get(L + "self_attn.o_proj.bias", {E}, WeightKind::bias));
    lw.norm2_w = b.put(b.get(L + "post_attention_layernorm.weight", {E}, WeightKind::norm));
    lw.wup = b.linear({{L + "mlp.gate_proj.weight", F, E}, {L + "mlp.up_proj.weight", F, E}});
    lw.wdown = b.linear({{L + "mlp.down_proj.weight", E, F}});
    if (c.mlp_bias) {
      lw.bup = b.stack({b.get(L + "mlp.gate_proj.bias", {F}, WeightKind::bias),
                        b.get(L + "mlp.up_proj.bias", {F}, WeightKind::bias)});
      lw.bdown = b.put(b.get(L + "mlp.down_proj.bias", {E}, WeightKind::bias));
    }
    w.layers.push_back(std::move(lw));
  }
  w.out_norm_w = b.put(b.get(p + "norm.weight", {E}, WeightKind::norm));
  w.head = b.head(w);
  return w;
}

Weights gpt2(Builder &b) {
  const ModelConfig &c = b.c;
  const int64_t E = c.n_embd, F = c.n_ff;
  const std::string p = b.src.has("transformer.wte.weight") ? "transformer." : "";
  // Conv1D holds [in, out]: transposed once here into Linear's [out, in].
  auto conv = [&](const std::string &name, int64_t in, int64_t out) { return b.linear({{name, out, in, true}}); };
  Weights w;
  b.embedding(w, p + "wte.weight");
  w.pos_embd = b.put(b.get(p + "wpe.weight", {c.n_ctx_train, E}));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string L = p + "h." + std::to_string(l) + ".";
    LayerWeights lw;
    lw.norm1_w = b.put(b.get(L + "ln_1.weight", {E}, WeightKind::norm));
    lw.norm1_b = b.put(b.get(L + "ln_1.bias", {E}, WeightKind::bias));
    lw.wqkv = conv(L + "attn.c_attn.weight", E, 3 * E);
    lw.bqkv = b.put(b.get(L + "attn.c_attn.bias", {3 * E}, WeightKind::bias));
    lw.wo = conv(L + "attn.c_proj.weight", E, E);
    lw.bo = b.put(b.get(L + "attn.c_proj.bias", {E}, WeightKind::bias));
    lw.norm2_w = b.put(b.get(L + "ln_2.weight", {E}, WeightKind::norm));
    lw.norm2_b = b.put(b.get(L + "ln_2.bias", {E}, WeightKind::bias));
    lw.wup = conv(L + "mlp.c_fc.weight", E, F);
    lw.bup = b.put(b.get(L + "mlp.c_fc.bias", {F}, WeightKind::bias));
    lw.wdown = conv(L + "mlp.c_proj.weight", F, E);
    lw.bdown = b.put(b.get(L + "mlp.c_proj.bias", {E}, WeightKind::bias));
    w.layers.push_back(std::move(lw));
  }
  w.out_norm_w = b.put(b.get(p + "ln_f.weight", {E}, WeightKind::norm));
  w.out_norm_b = b.put(b.get(p + "ln_f.bias", {E}, WeightKind::bias));
  w.head = b.head(w);
  return w;
}

class RandomSource : public WeightSource {
 public:
  explicit RandomSource(uint64_t seed) : gen_(at::detail::createCPUGenerator(seed)) {}
  at::Tensor get(const std::string &, const std::vector<int64_t> &shape, WeightKind kind) override {
    auto o = at::TensorOptions().dtype(at::kFloat);
    if (kind == WeightKind::norm) return at::ones(shape, o);
    if (kind == WeightKind::bias) return at::zeros(shape, o);
    return at::empty(shape, o).normal_(0.0, 0.02, gen_);
  }
  bool has(const std::string &) const override { return true; }
  std::string what() const override { return "random"; }

 private:
  at::Generator gen_;
};

}  // namespace weights_detail

std::unique_ptr<WeightSource> random_source(uint64_t seed) {
  return std::make_unique<weights_detail::RandomSource>(seed);
}

Weights assemble_weights(const ModelConfig &c, const LoadOptions &opt, WeightSource &src,
                         std::vector<std::string> &report) {
  weights_detail::Builder b{c, opt, src};
  Weights w = c.arch == "gpt2" ? weights_detail::gpt2(b) : weights_detail::llama_family(b);
  report.push_back(std::to_string(b.converted) + " tensors converted or laid out anew (" +
                   std::string(c10::toString(opt.dtype)) + " on " + opt.device.str() + ")");
  if (!b.packed.empty()) {
    int64_t n = 0, bytes = 0;
    std::string kinds;
    for (const auto &k : b.packed) {
      n += k.second;
      kinds += (kinds.empty() ? "" : ", ") + k.first + ": " + std::to_string(k.second);
    }
    auto add = [&](const Linear &l) {
      for (const QWeight &q : l.q) bytes += q.nbytes();
    };
    for (const LayerWeights &lw : w.layers) {
      add(lw.wqkv);
      add(lw.wo);
      add(lw.wup);
      add(lw.wdown);
    }
    if (!c.tied_head) add(w.head);
    bytes += w.tok_embd_q.nbytes();
    const std::string size = bytes >= (int64_t(1) << 20) ? std::to_string(bytes >> 20) + " MiB"
                                                          : std::to_string(bytes >> 10) + " KiB";
    std::string line = std::to_string(n) + " matrices packed (" + kinds + "; " + size + "), multiplied by the " +
                       qweight_isa() + " kernels";
    if (b.quantised) line += "; " + std::to_string(b.quantised) + " of them quantised to " + opt.quantize + " here";
    report.push_back(line);
  }
  if (c.tied_head) report.push_back("output head tied to the token embedding");
  if (c.arch != "gpt2") report.push_back("q/k/v and gate/up projections stacked (one matrix product each)");
  return w;
}

}  // namespace lm
}  // namespace ctorch
