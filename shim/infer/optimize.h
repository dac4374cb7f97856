// What the inference optimiser's files share (optimize.cpp: the options,
// the tree walk, the convolutions and the C entry point; optimize_linear.cpp:
// the inference Linear). Internal to shim/infer/.
#pragma once

#include "infer/options.h"
#include "nn/nn_internal.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/QEngine.h>

#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

namespace ctorch {
namespace infer {

// The optimiser builds and rewrites nn/'s modules: their names unqualified.
using namespace ::ctorch::nn;

struct Options {
  bool fold = true, fuse = true, prepack = true, channels_last = true;
  bool linear = true;      // every Linear becomes an InferLinear (where a lever below applies)
  bool split_rows = true;  // one-row inputs: output columns split across the intra-op threads
  bool linear_onednn = true;  // several rows: oneDNN with the weight prepacked (where registered)
  bool linear_gemv = true;    // one row: the packed kernels of gemv_f32.h (where the BLAS's is slow)
  Precision precision = Precision::Float32;  // precision.cpp
  bool bf16_emulate = false;                 // bf16 on a CPU without bf16 instructions
  bool onednn_resnet = false;  // the root is declared torchvision's ResNet: onednn/resnet.h (where built with oneDNN)
  // int8_engine=x86|fbgemm|onednn pins the quantized engine; NoQEngine
  // (int8_engine=auto, the default) lets check_precision choose.
  at::QEngine int8_engine_asked = at::QEngine::NoQEngine;
  // Set by check_precision for int8-dynamic and int8-static: the engine,
  // and for int8-dynamic under auto the engine of calls with at least
  // int8_large_rows rows (precision.cpp, kInt8LargeRows; NoQEngine: the
  // one engine for every call).
  at::QEngine int8_engine = at::QEngine::NoQEngine;
  at::QEngine int8_large_engine = at::QEngine::NoQEngine;
  int64_t int8_large_rows = 0;
  bool int8_reduce_range = true;
};

// The dispatcher's handle of a registered operator; nullopt where this
// libtorch does not register it.
c10::optional<c10::OperatorHandle> find_op(const char *name);
// A boxed call: the given arguments, then each remaining argument's default.
c10::IValue call_boxed(const c10::OperatorHandle &op, std::vector<c10::IValue> args);

// An activation fused after a conv or Linear (ActPair): oneDNN's post-op
// where the op runs oneDNN, else the same at:: op on the output.
struct Act {
  enum Kind { None, ReLU, GELU, SiLU } kind = None;
  bool tanh = false;  // GELU(approximate='tanh')
  // oneDNN's post-op (mkldnn::_linear_pointwise's attr) and its algorithm.
  const char *attr() const { return kind == ReLU ? "relu" : kind == GELU ? "gelu" : kind == SiLU ? "swish" : "none"; }
};

// bn (eval) folded into op's weight and bias (new tensors; op's others kept):
// fuse_conv_bn_weights / fuse_linear_bn_weights.
void fold_bn(Module &op, const Module &bn, bool linear);

// act applied to y in place (y a fresh output): the same values as the
// activation module's op.
at::Tensor activate(at::Tensor y, const Act &act);

// item's value (auto, x86, fbgemm, onednn) as an engine into *e (auto:
// NoQEngine); false (and *e untouched) for another name.
bool int8_engine_value(const OptionItem &item, at::QEngine *e);

// Refuses (NOT_IMPLEMENTED, with the reason) a precision this CPU or
// libtorch cannot run, before anything is rewritten; for int8-dynamic
// chooses the quantized engine and the activations' range.
void check_precision(Options &o);
// A Linear (float32 CPU weight) as o.precision's module (bf16 or
// int8-dynamic), or itself with a "skip" line; one report line.
ModulePtr precision_linear(const ModulePtr &linear, const Options &o, const std::string &path, std::ostream &report);
// A Conv2d with its oneDNN padding (Optimizer::conv2d_padding) kept in bf16.
ModulePtr precision_conv(const ModulePtr &conv, const Module::Spec &s, std::vector<int64_t> padding, const Options &o,
                         const std::string &path, std::ostream &report);
// act(op(x)) with act as op's post-op where op is a reduced-precision
// module that takes one (*done true), else *done false.
at::Tensor precision_fused(Module &op, const at::Tensor &x, const Act &act, bool *done);
// int8-static: whether m is a statically quantised module (precision_linear
// and precision_conv make them calibrating: float32 with observers); after
// the calibration batches ran, finish_static_int8 fixes each one's qparams
// and prepacks its weight, one report line each ("int8 PATH OP (ENGINE
// engine, reduce_range=0|1)", or "skip int8-static PATH: ..." for one no
// batch reached, which stays float32).
bool is_static_int8(const Module &m);
void finish_static_int8(const std::vector<std::pair<std::string, ModulePtr>> &mods, std::ostream &report);

// The smallest weights (in_features * out_features) an InferLinear takes
// its paths for; below them the fixed cost of a parallel region or of a
// oneDNN call is more than it saves. Measured on the project's machine (AMD
// EPYC, 2 cores, PyPI's 2.15.0 with MKL and Debian's 1.13.1 with OpenBLAS):
// one row at 2 threads, the split lost up to 768 x 768 (0.7-0.97x of
// at::linear) and won from 1024 x 1024 (OpenBLAS 2.1-10x, MKL 1.1-1.2x at
// 768 x 2304); oneDNN at 8-128 rows was level with MKL at 256 x 256
// (0.92-1.12x) and ahead from 512 x 512 (1.13-1.8x).
constexpr int64_t kSplitMinWeights = 1 << 20;
constexpr int64_t kOnednnMinWeights = 1 << 18;
// The packed one-row kernels (gemv_f32.h) beat MKL's generic path and
// OpenBLAS from 256 x 256 (AMD EPYC Zen 4, 2 threads: 1.9 us; MKL 4.1),
// where both threads already pay.
constexpr int64_t kGemvMinWeights = 1 << 16;

// A Linear for inference: kind "Linear", the same tensors, state-dict keys
// and repr; forward computes linear(x, weight, bias) (up to rounding) with
//  - one input row: x times the weight (as stored, or a copy in the layout
//    the BLAS reads faster, made once), with 2+ intra-op threads its output
//    columns split across the threads (at::parallel_for, one BLAS call per
//    thread);
//  - several rows (where this libtorch registers mkldnn::_linear_pointwise),
//    from the second such call: oneDNN with the weight prepacked once
//    (mkldnn::_reorder_linear_weight), the activation of an ActPair as its
//    post-op;
//  - one input row where gemv (an x86 CPU with AVX2 or AVX-512 whose BLAS
//    runs one row slowly: OpenBLAS, or MKL on a CPU not made by Intel):
//    the packed kernels of gemv_f32.h on a packed copy of the weight (made
//    at the first one-row call), before the split;
//  - anything else (grad, other dtype or device, a wrong shape): at::linear,
//    with its own errors.
class InferLinear : public Module {
 public:
  // relayout: the one-row path reads a copy of the weight, with [in, out]
  // rows contiguous if in_out_rows, else [out, in] rows.
  InferLinear(const Module &linear, bool split, bool relayout, bool in_out_rows, bool onednn, bool gemv);
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override;
  // act(linear(x)).
  at::Tensor run(const at::Tensor &x, const Act &act);
  std::string extra_repr() const override { return repr_; }
  void tensors_changed() override { cache_ = std::make_shared<Cache>(); }
  CTORCH_NN_COPYABLE(InferLinear)

 private:
  at::Tensor in_out();
  at::Tensor one_row(const at::Tensor &x2, int64_t threads);
  at::Tensor prepacked();
  at::Tensor gemv_packed();
  at::Tensor onednn(const at::Tensor &x, const at::Tensor &packed, const Act &act);
  // Made on first use; dropped when the module's tensors change.
  struct Cache {
    std::mutex mu;
    at::Tensor laid_out;  // the weight's copy for one-row inputs (where relayout_), [in, out]-shaped
    at::Tensor packed;  // oneDNN's layout of it (an MKLDNN tensor; several-row inputs)
    int64_t several_calls = 0;
    at::Tensor gemv;  // gemv_pack's layout of it (one-row inputs, where gemv_)
  };
  std::string repr_;
  bool split_, relayout_, in_out_rows_, onednn_, gemv_;
  std::shared_ptr<Cache> cache_;
};

// The Linear at `path` as an InferLinear, or itself where no lever applies;
// one report line per lever: "split PATH columns", "prepack PATH
// mkldnn::_linear_pointwise", "skip split|prepack PATH: why".
ModulePtr infer_linear(const ModulePtr &linear, const Options &o, const std::string &path, std::ostream &report);

// A fused pair, torch.ao.nn.intrinsic's structure: children "0" (the conv
// or linear) and "1" (the activation), kind ConvReLU1d/2d/3d, LinearReLU,
// LinearGELU, LinearSiLU. The activation is oneDNN's post-op where "0" runs
// oneDNN (InferConv: ReLU; InferLinear: all three), else it runs after.
class ActPair : public Module {
 public:
  ActPair(std::string kind, ModulePtr op, ModulePtr act, Act a) : Module(std::move(kind)), act_(a) {
    register_module("0", std::move(op));
    register_module("1", std::move(act));
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override;
  CTORCH_NN_COPYABLE(ActPair)

 private:
  Act act_;
};

}  // namespace infer
}  // namespace ctorch
