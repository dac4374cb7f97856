// The optimiser's reduced precisions (Options::precision): what a Linear
// or a Conv2d becomes under bf16 and int8-dynamic, and the refusals made
// before anything is rewritten.
//
// bf16: the weights are converted once and kept in bf16 (the module's own
// tensors: half the memory); each call converts its float32 input to bf16,
// runs oneDNN's bf16 kernel (a Linear through mkldnn::_linear_pointwise
// with the weight prepacked where libtorch registers it, else at::linear;
// a Conv2d through at::convolution, channels-last) and gives float32 back,
// so everything between (norms, softmax, residual adds) stays float32.
// Autocast would cast every weight again at every call under inference
// mode (its cache keeps only leaf tensors that require grad).
//
// int8-dynamic: torch.ao.quantization.quantize_dynamic's default recipe
// (per-tensor symmetric int8 weights, MinMaxObserver's scale; uint8
// activations quantised per call from their own range) on libtorch's
// kernels: quantized::linear_prepack once, quantized::linear_dynamic at
// every call, called by name through the dispatcher.
//
// int8-static: PyTorch's eager static quantisation recipe with each Conv2d
// (ConvReLU2d) and Linear (LinearReLU) quantised on its own, as a
// QuantStub -> quantised op -> DeQuantStub island: float32 in and out, so a
// custom forward's residual adds and everything between stays float32.
// Observers (MinMaxObserver, quint8, per tensor affine) on each island's
// input and output see the calibration batches the caller gives; weights
// are quantised per output channel (PerChannelMinMaxObserver, qint8,
// symmetric: default_per_channel_weight_observer) and prepacked once
// (quantized::conv2d_prepack, quantized::linear_prepack); each call runs
// quantize_per_tensor, quantized::conv2d(_relu) / linear(_relu) and
// dequantize. The qparams are computed with the observers' own float32
// arithmetic, so a PyTorch model of the same islands, calibrated on the
// same batches, holds the same int8 tensors and gives the same outputs.
#include "infer/optimize.h"

#include "infer/cpu.h"
#include "infer/options.h"
#include "text/text.h"

#include <ATen/Context.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/max.h>
#include <ATen/ops/min.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/quantize_per_channel.h>
#include <ATen/ops/quantize_per_tensor.h>
#include <ATen/ops/relu.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace ctorch {
namespace infer {

namespace {

bool cpu_float(const at::Tensor &t) {
  return t.scalar_type() == at::kFloat && t.device().is_cpu() && t.layout() == at::kStrided;
}

bool needs_grad(const at::Tensor &x, const Module &m) {
  if (!at::GradMode::is_enabled()) return false;
  if (x.requires_grad()) return true;
  for (const auto &p : m.params)
    if (p.t.defined() && p.t.requires_grad()) return true;
  return false;
}

c10::optional<at::Tensor> opt(const at::Tensor &t) { return t.defined() ? c10::optional<at::Tensor>(t) : c10::nullopt; }

bool has_engine(at::QEngine e) {
  const auto &have = at::globalContext().supportedQEngines();
  return std::find(have.begin(), have.end(), e) != have.end();
}

// The first of x86 (2.x: fbgemm's and oneDNN's kernels, chosen per shape),
// fbgemm and onednn among this libtorch's engines; false where none is.
bool int8_engine(at::QEngine *engine) {
  for (at::QEngine want : {at::QEngine::X86, at::QEngine::FBGEMM, at::QEngine::ONEDNN})
    if (has_engine(want)) return *engine = want, true;
  return false;
}

std::string engine_list() {
  std::string s;
  for (at::QEngine e : at::globalContext().supportedQEngines()) s += (s.empty() ? "" : ", ") + c10::toString(e);
  return s.empty() ? "none" : s;
}

// Packed weights are made for the process's current engine: it is set for
// the prepack and put back (one prepack at a time, so two optimisers do not
// restore each other's choice).
std::mutex engine_mu;

c10::IValue prepack_on(at::QEngine engine, const c10::OperatorHandle &op, std::vector<c10::IValue> args) {
  std::lock_guard<std::mutex> lock(engine_mu);
  at::Context &ctx = at::globalContext();
  at::QEngine before = ctx.qEngine();
  ctx.setQEngine(engine);
  c10::IValue packed;
  try {
    packed = call_boxed(op, std::move(args));
  } catch (...) {
    ctx.setQEngine(before);
    throw;
  }
  ctx.setQEngine(before);
  return packed;
}

// quantize_dynamic's weight: MinMaxObserver(qint8, per_tensor_symmetric)'s
// scale (the larger of |min| and |max| over 127.5, at least float32's
// epsilon; computed in float32 as the observer does), zero point 0, then
// quantized::linear_prepack with the float bias.
c10::IValue prepack_int8(const at::Tensor &weight, const at::Tensor &bias, at::QEngine engine) {
  at::NoGradGuard no_grad;
  at::Tensor w = weight.contiguous();
  float lo = std::min(w.min().item<float>(), 0.f), hi = std::max(w.max().item<float>(), 0.f);
  float scale = std::max(std::max(-lo, hi) / 127.5f, FLT_EPSILON);
  at::Tensor q = at::quantize_per_tensor(w, scale, 0, at::kQInt8);
  static const c10::optional<c10::OperatorHandle> prepack = find_op("quantized::linear_prepack");
  return prepack_on(engine, *prepack, {q, bias.defined() ? c10::IValue(bias.contiguous()) : c10::IValue()});
}

// int8-dynamic under int8_engine=auto, on a CPU with VNNI: calls of at
// least this many rows run oneDNN's kernels, fewer rows the first engine's
// (2.x's x86, that is fbgemm's). On many rows oneDNN's u8 x s8 GEMM is the
// faster, on a few fbgemm's, as oneDNN makes its primitive at every call.
// With VNNI alone the two are level near 128 rows (BERT-base's shapes,
// 2.15.0, Zen 4); where the CPU has AMX's int8 tiles, which oneDNN uses and
// fbgemm does not, near 32 (oneDNN's time 0.73-1.03 of fbgemm's at 32 rows,
// 0.43-0.79 at 128, 1.10-1.48 at 8: bench/probes/int8_engines.py, a Xeon
// with AMX, 1 and 2 threads).
constexpr int64_t kInt8LargeRows = 256;
constexpr int64_t kInt8LargeRowsAmx = 32;

// A Linear with int8 weights (kind "Linear", the float32 weight and bias
// kept as its tensors, so keys, repr and load_state_dict are the Linear's;
// the packed int8 copy, a quarter of the weight's size, lives in the module
// and is made again when its tensors change). Float32 CPU inputs without
// grad run quantized::linear_dynamic; anything else at::linear in float32.
// With a second engine for large calls (Options::int8_large_engine), its
// packed copy is made at the first call of Options::int8_large_rows rows or
// more.
class Int8Linear : public Module {
 public:
  Int8Linear(const Module &linear, at::QEngine engine, at::QEngine large_engine, int64_t large_rows,
             bool reduce_range)
      : Module(linear.kind()), repr_(linear.extra_repr()), engines_{engine, large_engine}, large_rows_(large_rows),
        reduce_range_(reduce_range), cache_(std::make_shared<Cache>()) {
    register_parameter("weight", linear.params[0].t);
    register_parameter("bias", linear.params[1].t);
    packed(0);  // at optimisation time: a weight the engine refuses fails here, not at the first call
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    const at::Tensor &x = in[0], &w = params[0].t;
    if (needs_grad(x, *this) || !cpu_float(x) || x.dim() < 1 || x.size(-1) != w.size(1) || x.numel() == 0)
      return {at::linear(x, w, opt(params[1].t))};
    static const c10::optional<c10::OperatorHandle> run = find_op("quantized::linear_dynamic");
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = w.size(0);
    at::Tensor x2 = x.reshape({-1, x.size(-1)}).contiguous();
    int which = engines_[1] != at::QEngine::NoQEngine && x2.size(0) >= large_rows_;
    return {call_boxed(*run, {x2, packed(which), reduce_range_}).toTensor().view(shape)};
  }
  std::string extra_repr() const override { return repr_; }
  void tensors_changed() override { cache_ = std::make_shared<Cache>(); }
  CTORCH_NN_COPYABLE(Int8Linear)

 private:
  c10::IValue packed(int which) {
    std::lock_guard<std::mutex> lock(cache_->mu);
    c10::IValue &p = cache_->packed[which];
    if (p.isNone()) p = prepack_int8(params[0].t, params[1].t, engines_[which]);
    return p;
  }
  struct Cache {
    std::mutex mu;
    c10::IValue packed[2];  // LinearPackedParamsBase (torchbind) objects: engines_[0]'s, engines_[1]'s
  };
  std::string repr_;
  at::QEngine engines_[2];
  int64_t large_rows_;  // calls of at least this many rows run engines_[1] (where set)
  bool reduce_range_;
  std::shared_ptr<Cache> cache_;
};

// A Linear kept in bf16 (kind "Linear", bf16 weight and bias as its
// tensors). Floating inputs are converted to bf16 and the output back to
// the input's dtype; others go to at::linear with its errors.
class Bf16Linear : public Module {
 public:
  Bf16Linear(const Module &linear, bool onednn) : Module(linear.kind()), repr_(linear.extra_repr()) {
    at::NoGradGuard no_grad;
    const at::Tensor &b = linear.params[1].t;
    register_parameter("weight", linear.params[0].t.to(at::kBFloat16).contiguous());
    register_parameter("bias", b.defined() ? b.to(at::kBFloat16) : b);
    if (onednn) {
      static const c10::optional<c10::OperatorHandle> reorder = find_op("mkldnn::_reorder_linear_weight");
      packed_ = call_boxed(*reorder, {params[0].t, c10::IValue()}).toTensor();
    }
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    return {run(in[0], Act())};
  }
  at::Tensor run(const at::Tensor &x, const Act &act) {
    const at::Tensor &w = params[0].t, &b = params[1].t;
    if (!at::isFloatingType(x.scalar_type())) return activate(at::linear(x, w, opt(b)), act);
    at::Tensor xb = x.to(at::kBFloat16);
    bool fits = packed_.defined() && !needs_grad(x, *this) && x.device().is_cpu() && x.layout() == at::kStrided &&
                x.dim() >= 1 && x.size(-1) == w.size(1) && x.numel() > 0;
    if (fits) {
      static const c10::optional<c10::OperatorHandle> run_op = find_op("mkldnn::_linear_pointwise");
      c10::IValue algorithm;
      if (act.kind == Act::GELU) algorithm = std::string(act.tanh ? "tanh" : "none");
      at::Tensor y = call_boxed(*run_op, {xb, packed_, b.defined() ? c10::IValue(b) : c10::IValue(),
                                          std::string(act.attr()), c10::List<c10::optional<at::Scalar>>(), algorithm})
                         .toTensor();
      return y.to(x.scalar_type());
    }
    return activate(at::linear(xb, w, opt(b)).to(x.scalar_type()), act);
  }
  std::string extra_repr() const override { return repr_; }
  // New tensors (load_state_dict, to): oneDNN's copy would be stale, so
  // the module runs at::linear from then on.
  void tensors_changed() override { packed_ = at::Tensor(); }
  CTORCH_NN_COPYABLE(Bf16Linear)

 private:
  std::string repr_;
  at::Tensor packed_;  // oneDNN's blocked layout of the bf16 weight (an MKLDNN tensor), or undefined
};

// A Conv2d kept in bf16 (kind, repr and spec the Conv2d's; bf16 weight,
// channels-last where asked, and bias). Floating inputs are converted to
// bf16 (channels-last where asked) and the output back to their dtype.
class Bf16Conv : public Module {
 public:
  Bf16Conv(const Module &conv, const Spec &s, std::vector<int64_t> padding, bool channels_last)
      : Module(conv.kind()), spec_(s), padding_(std::move(padding)), channels_last_(channels_last),
        repr_(conv.extra_repr()) {
    at::NoGradGuard no_grad;
    const at::Tensor &b = conv.params[1].t;
    register_parameter("weight", conv.params[0].t.to(at::kBFloat16).contiguous(format()));
    register_parameter("bias", b.defined() ? b.to(at::kBFloat16) : b);
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    const at::Tensor &x = in[0], &w = params[0].t, &b = params[1].t;
    if (!at::isFloatingType(x.scalar_type()) || x.dim() != 4)
      return {at::convolution(x, w, opt(b), spec_.stride, padding_, spec_.dilation, false, {0, 0}, spec_.groups)};
    at::Tensor xb = x.to(at::kBFloat16).contiguous(format());
    return {at::convolution(xb, w, opt(b), spec_.stride, padding_, spec_.dilation, false, {0, 0}, spec_.groups)
                .to(x.scalar_type())};
  }
  std::string extra_repr() const override { return repr_; }
  bool spec(Spec &s) const override {
    s = spec_;
    return true;
  }
  CTORCH_NN_COPYABLE(Bf16Conv)

 private:
  at::MemoryFormat format() const {
    return channels_last_ ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  }
  Spec spec_;
  std::vector<int64_t> padding_;
  bool channels_last_;
  std::string repr_;
};

c10::optional<c10::OperatorHandle> conv_new(const char *name) {
  return c10::Dispatcher::singleton().findSchema({name, "new"});
}

// MinMaxObserver's running range (float32, as torch.aminmax gives it).
struct Range {
  bool seen = false;
  float lo = 0, hi = 0;
  void observe(const at::Tensor &t) {
    if (t.numel() == 0) return;
    float a = t.min().item<float>(), b = t.max().item<float>();
    lo = seen ? std::min(lo, a) : a, hi = seen ? std::max(hi, b) : b, seen = true;
  }
  // MinMaxObserver(quint8, per_tensor_affine).calculate_qparams(), op for
  // op in float32: scale = (max(hi, 0) - min(lo, 0)) / (qmax - qmin), at
  // least float32's epsilon; zero point qmin - round(min(lo, 0) / scale)
  // (half to even), clamped to [qmin, qmax]. qmax 127 with reduce_range.
  void qparams(bool reduce_range, double *scale, int64_t *zero_point) const {
    const int qmin = 0, qmax = reduce_range ? 127 : 255;
    float lo0 = std::min(lo, 0.f), hi0 = std::max(hi, 0.f);
    float s = std::max((hi0 - lo0) / static_cast<float>(qmax - qmin), FLT_EPSILON);
    float r = std::nearbyint(lo0 / s);
    *scale = s;
    *zero_point = std::min<int64_t>(std::max<int64_t>(qmin - static_cast<int64_t>(r), qmin), qmax);
  }
};

// default_per_channel_weight_observer's int8 weight: per output channel,
// scale max(|min(w, 0)|, max(w, 0)) / 127.5 (at least float32's epsilon),
// zero point 0, then quantize_per_channel along dim 0 (nnq's from_float).
at::Tensor quantize_weight(const at::Tensor &w) {
  at::Tensor flat = w.contiguous().reshape({w.size(0), -1});
  at::Tensor lo = std::get<0>(flat.min(1)).clamp_max(0), hi = std::get<0>(flat.max(1)).clamp_min(0);
  at::Tensor scale = (at::maximum(-lo, hi) / 127.5).clamp_min(FLT_EPSILON);
  return at::quantize_per_channel(w.contiguous(), scale.to(at::kDouble), at::zeros_like(scale, at::kLong), 0,
                                  at::kQInt8);
}

// A Conv2d or a Linear quantised statically (kind, repr, spec and the
// folded float32 tensors of the module it replaces, so keys and
// load_state_dict stay the module's). Three states, shared by copies:
// calibrating (the float32 op, its input and output ranges observed),
// calibrated (qparams fixed, the weight quantised and prepacked, made again
// after its tensors change), or never reached by a calibration batch (the
// float32 op). Inputs with grad, of another dtype, device or width run the
// float32 op.
class StaticInt8 : public Module {
 public:
  StaticInt8(const Module &op, const Spec *conv, std::vector<int64_t> padding, at::QEngine engine, bool reduce_range)
      : Module(op.kind()), conv_(conv != nullptr), padding_(std::move(padding)), repr_(op.extra_repr()),
        state_(std::make_shared<State>()) {
    if (conv) spec_ = *conv;
    state_->engine = engine;
    state_->reduce_range = reduce_range;
    register_parameter("weight", op.params[0].t);
    register_parameter("bias", op.params[1].t);
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    return {run(in[0], false)};
  }
  at::Tensor run(const at::Tensor &x, bool relu) {
    const at::Tensor &w = params[0].t;
    bool fits = cpu_float(x) && !needs_grad(x, *this) && x.numel() > 0 &&
                (conv_ ? x.dim() == 4 && x.size(1) == w.size(1) * spec_.groups : x.dim() >= 1 && x.size(-1) == w.size(1));
    std::shared_ptr<State> st = state_;
    if (!fits || !st->calibrated) {
      at::Tensor y = float_op(x, relu);
      if (fits && st->calibrating) {
        std::lock_guard<std::mutex> lock(st->mu);
        st->in.observe(x), st->out.observe(y), st->relu = relu;
      }
      return y;
    }
    c10::IValue packed = pack(*st);
    // Channels-last: the layout the quantized convolutions compute in (they would convert to it).
    at::Tensor qx = at::quantize_per_tensor(conv_ ? x.contiguous(at::MemoryFormat::ChannelsLast)
                                                  : x.reshape({-1, x.size(-1)}).contiguous(),
                                            st->in_scale, st->in_zp, at::kQUInt8);
    if (conv_) {
      // The ".new" overloads take the packed weight's own geometry (the
      // unnamed ones are the older schema with stride, padding... again).
      static const c10::optional<c10::OperatorHandle> plain = conv_new("quantized::conv2d"),
                                                      fused = conv_new("quantized::conv2d_relu");
      return call_boxed(relu ? *fused : *plain, {qx, packed, st->out_scale, st->out_zp}).toTensor().dequantize();
    }
    static const c10::optional<c10::OperatorHandle> plain = find_op("quantized::linear"),
                                                    fused = find_op("quantized::linear_relu");
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = w.size(0);
    at::Tensor y = call_boxed(relu ? *fused : *plain, {qx, packed, st->out_scale, st->out_zp}).toTensor();
    return y.dequantize().view(shape);
  }
  // Calibration over: the qparams from the observed ranges and the packed
  // weight, or false where no batch reached the module (it stays float32).
  bool finish(std::string *op) {
    State &st = *state_;
    st.calibrating = false;
    if (!st.in.seen) return false;
    st.in.qparams(st.reduce_range, &st.in_scale, &st.in_zp);
    st.out.qparams(st.reduce_range, &st.out_scale, &st.out_zp);
    st.calibrated = true;
    pack(st);
    *op = std::string("quantized::") + (conv_ ? "conv2d" : "linear") + (st.relu ? "_relu" : "") + " (" +
          c10::toString(st.engine) + " engine, reduce_range=" + (st.reduce_range ? "1" : "0") + ")";
    return true;
  }
  std::string extra_repr() const override { return repr_; }
  bool spec(Spec &s) const override {
    if (conv_) s = spec_;
    return conv_;
  }
  // New tensors: the same activation qparams, the weight quantised again.
  void tensors_changed() override {
    auto st = std::make_shared<State>();
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      st->copy_params(*state_);
    }
    state_ = st;
  }
  CTORCH_NN_COPYABLE(StaticInt8)

 private:
  struct State {
    std::mutex mu;
    bool calibrating = true, calibrated = false, relu = false, reduce_range = false;
    at::QEngine engine = at::QEngine::NoQEngine;
    Range in, out;
    double in_scale = 1, out_scale = 1;
    int64_t in_zp = 0, out_zp = 0;
    c10::IValue packed;  // a Conv2dPackedParamsBase or LinearPackedParamsBase (torchbind) object
    void copy_params(const State &o) {
      calibrating = o.calibrating, calibrated = o.calibrated, relu = o.relu, reduce_range = o.reduce_range;
      engine = o.engine, in = o.in, out = o.out;
      in_scale = o.in_scale, out_scale = o.out_scale, in_zp = o.in_zp, out_zp = o.out_zp;
    }
  };
  at::Tensor float_op(const at::Tensor &x, bool relu) const {
    const at::Tensor &w = params[0].t, &b = params[1].t;
    at::Tensor y = conv_ ? at::conv2d(x, w, opt(b), spec_.stride, padding_, spec_.dilation, spec_.groups)
                         : at::linear(x, w, opt(b));
    return relu ? at::relu_(y) : y;
  }
  c10::IValue pack(State &st) {
    std::lock_guard<std::mutex> lock(st.mu);
    if (!st.packed.isNone()) return st.packed;
    at::NoGradGuard no_grad;
    at::Tensor qw = quantize_weight(params[0].t);
    const at::Tensor &b = params[1].t;
    c10::IValue bias = b.defined() ? c10::IValue(b.contiguous()) : c10::IValue();
    if (conv_) {
      static const c10::optional<c10::OperatorHandle> op = find_op("quantized::conv2d_prepack");
      st.packed = prepack_on(st.engine, *op, {qw, bias, spec_.stride, padding_, spec_.dilation, spec_.groups});
    } else {
      static const c10::optional<c10::OperatorHandle> op = find_op("quantized::linear_prepack");
      st.packed = prepack_on(st.engine, *op, {qw, bias});
    }
    return st.packed;
  }
  bool conv_;
  Spec spec_;
  std::vector<int64_t> padding_;
  std::string repr_;
  std::shared_ptr<State> state_;
};

}  // namespace

bool int8_engine_value(const OptionItem &item, at::QEngine *e) {
  static const std::pair<const char *, at::QEngine> names[] = {{"auto", at::QEngine::NoQEngine},
                                                               {"x86", at::QEngine::X86},
                                                               {"fbgemm", at::QEngine::FBGEMM},
                                                               {"onednn", at::QEngine::ONEDNN}};
  for (const auto &n : names)
    if (item.value == n.first) return *e = n.second, true;
  return false;
}

namespace {

// o.int8_engine: the one int8_engine= asks for (NOT_IMPLEMENTED where this
// libtorch lacks it), else the first of int8_engine()'s; false where none.
bool chosen_engine(Options &o, const char *precision) {
  if (o.int8_engine_asked == at::QEngine::NoQEngine) return int8_engine(&o.int8_engine);
  if (!has_engine(o.int8_engine_asked))
    fail(CTORCH_NOT_IMPLEMENTED, std::string("argument 'options': precision=") + precision + " with int8_engine=" +
                                     text::ascii_lower(c10::toString(o.int8_engine_asked)) +
                                     ": this libtorch's quantized engines are " + engine_list());
  o.int8_engine = o.int8_engine_asked;
  return true;
}

}  // namespace

void check_precision(Options &o) {
  switch (o.precision) {
    case Precision::Float32: return;
    case Precision::BF16: {
      const CpuFeatures &f = cpu_features();
      const char *cap = std::getenv("CTORCH_BF16_ISA");
      bool has = (f.avx512_bf16 || f.amx_bf16) && !(cap && std::string(cap) == "none");
      if (!has && !o.bf16_emulate)
        fail(CTORCH_NOT_IMPLEMENTED,
             "argument 'options': precision=bf16 needs a CPU with bf16 instructions (AVX512_BF16 or AMX_BF16), "
             "which this one lacks" + std::string(cap && std::string(cap) == "none" ? " (CTORCH_BF16_ISA=none)" : "") +
                 ": oneDNN would emulate them, slower than float32; bf16_emulate=1 asks for that anyway");
      return;
    }
    case Precision::Int8Dynamic: {
      if (!chosen_engine(o, "int8-dynamic"))
        fail(CTORCH_NOT_IMPLEMENTED, "argument 'options': precision=int8-dynamic needs libtorch's x86, fbgemm or "
                                     "onednn quantized engine; this libtorch has " + engine_list());
      if (!find_op("quantized::linear_prepack") || !find_op("quantized::linear_dynamic"))
        fail(CTORCH_NOT_IMPLEMENTED, "argument 'options': precision=int8-dynamic: this libtorch registers no "
                                     "quantized::linear_dynamic");
      // Activations in the full uint8 range where the CPU multiplies u8 x s8
      // in 32-bit sums (VNNI); without, the engines' 16-bit intermediate
      // sums can saturate, and PyTorch's 7-bit range (reduce_range) avoids it.
      const CpuFeatures &f = cpu_features();
      o.int8_reduce_range = !(f.avx512_vnni || f.avx_vnni);
      // Large calls on oneDNN's kernels where they are faster (kInt8LargeRows, kInt8LargeRowsAmx).
      if (o.int8_engine_asked == at::QEngine::NoQEngine && !o.int8_reduce_range &&
          o.int8_engine != at::QEngine::ONEDNN && has_engine(at::QEngine::ONEDNN)) {
        o.int8_large_engine = at::QEngine::ONEDNN;
        o.int8_large_rows = f.amx_int8 ? kInt8LargeRowsAmx : kInt8LargeRows;
      }
      return;
    }
    case Precision::Int8Static: {
      if (!chosen_engine(o, "int8-static"))
        fail(CTORCH_NOT_IMPLEMENTED, "argument 'options': precision=int8-static needs libtorch's x86, fbgemm or "
                                     "onednn quantized engine; this libtorch has " + engine_list());
      for (const char *op : {"quantized::conv2d_prepack", "quantized::linear_prepack", "quantized::linear",
                             "quantized::linear_relu", "quantized::conv2d.new", "quantized::conv2d_relu.new"})
        if (std::strchr(op, '.') ? !conv_new(std::string(op).substr(0, std::strlen(op) - 4).c_str()) : !find_op(op))
          fail(CTORCH_NOT_IMPLEMENTED, std::string("argument 'options': precision=int8-static: this libtorch "
                                                   "registers no ") + op);
      const CpuFeatures &f = cpu_features();
      o.int8_reduce_range = !(f.avx512_vnni || f.avx_vnni);  // as int8-dynamic's
      return;
    }
  }
}

ModulePtr precision_linear(const ModulePtr &linear, const Options &o, const std::string &path, std::ostream &report) {
  const at::Tensor &w = linear->params[0].t;
  if (!cpu_float(w)) {
    report << "skip " << precision_name(o.precision) << " " << path << ": not a float32 CPU weight\n";
    return linear;
  }
  if (o.precision == Precision::Int8Static)
    return std::make_shared<StaticInt8>(*linear, nullptr, std::vector<int64_t>(), o.int8_engine, o.int8_reduce_range);
  if (o.precision == Precision::Int8Dynamic) {
    report << "int8 " << path << " quantized::linear_dynamic (" << c10::toString(o.int8_engine)
           << " engine, reduce_range=" << o.int8_reduce_range << ")";
    if (o.int8_large_engine != at::QEngine::NoQEngine)
      report << "; " << c10::toString(o.int8_large_engine) << " engine from " << o.int8_large_rows << " rows";
    report << "\n";
    return std::make_shared<Int8Linear>(*linear, o.int8_engine, o.int8_large_engine, o.int8_large_rows,
                                        o.int8_reduce_range);
  }
  bool onednn = o.linear_onednn && find_op("mkldnn::_linear_pointwise") && find_op("mkldnn::_reorder_linear_weight");
  report << "bf16 " << path << (onednn ? " mkldnn::_linear_pointwise (weight prepacked)" : " at::linear") << "\n";
  return std::make_shared<Bf16Linear>(*linear, onednn);
}

ModulePtr precision_conv(const ModulePtr &conv, const Module::Spec &s, std::vector<int64_t> padding, const Options &o,
                         const std::string &path, std::ostream &report) {
  if (o.precision == Precision::Int8Static)
    return std::make_shared<StaticInt8>(*conv, &s, std::move(padding), o.int8_engine, o.int8_reduce_range);
  report << "bf16 " << path << " at::convolution" << (o.channels_last ? " channels_last" : "") << "\n";
  return std::make_shared<Bf16Conv>(*conv, s, std::move(padding), o.channels_last);
}

at::Tensor precision_fused(Module &op, const at::Tensor &x, const Act &act, bool *done) {
  if (auto *l = dynamic_cast<Bf16Linear *>(&op)) return *done = true, l->run(x, act);
  auto *q = dynamic_cast<StaticInt8 *>(&op);
  if (q && act.kind == Act::ReLU) return *done = true, q->run(x, true);
  *done = false;
  return at::Tensor();
}

bool is_static_int8(const Module &m) { return dynamic_cast<const StaticInt8 *>(&m) != nullptr; }

void finish_static_int8(const std::vector<std::pair<std::string, ModulePtr>> &mods, std::ostream &report) {
  for (const auto &pm : mods) {
    std::string op;
    if (static_cast<StaticInt8 &>(*pm.second).finish(&op)) report << "int8 " << pm.first << " " << op << "\n";
    else report << "skip int8-static " << pm.first << ": no calibration batch reached it (it runs float32)\n";
  }
}

}  // namespace infer
}  // namespace ctorch
