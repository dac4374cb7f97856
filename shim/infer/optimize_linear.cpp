// The inference optimiser's Linear: InferLinear,
// which ctorch_nn_module_optimize_for_inference puts in place of every
// Linear of the tree (optimize.cpp), and infer_linear, which decides.
//
// One row (decoding) first goes through the packed kernels of gemv_f32.cpp
// where the BLAS's one-row product is slow (OpenBLAS; MKL on an x86 CPU not
// made by Intel, where it takes its generic path) and the CPU has AVX2 or
// AVX-512: they read the weight as one stream and split its rows across the
// intra-op threads (gemv_f32.cpp has the measurements).
// Elsewhere (MKL on Intel, no AVX2): MKL runs a one-row GEMM on one thread
// whatever the intra-op thread count, and OpenBLAS's one-row product slows
// sharply above about a million weights (1 x 1024 x 1024: 0.77 ms, 4.7x
// 1 x 768 x 768's time for 1.8x its work; as two column blocks, 0.29 ms),
// so at 2+ intra-op threads the output columns are split into one block per
// thread (intra_op_for); each thread makes one BLAS call on its block, and
// the BLAS runs single-threaded inside the parallel region (MKL and
// OpenBLAS-openmp both see omp_in_parallel). The weight is read in the
// layout the BLAS's one-row kernel reads faster for its shape (infer_linear),
// from a copy made at the first one-row call where it is stored the other
// way; at one thread too. Where the split pays: optimize.h's
// kSplitMinWeights. On x86 CPUs not made by Intel without the kernels, a
// one-row input at 2+ threads goes through oneDNN as below. (The split
// runs on the intra-op threads only because intra_op.cpp is compiled with
// OpenMP: at::parallel_for is parallel only there. The measurement behind
// the oneDNN rule on AMD saw the split when it was still serial.)
//
// Several rows: oneDNN's inner product (mkldnn::_linear_pointwise, which
// PyPI's libtorch 2.x registers; 1.13.1 does not) with the weight prepacked
// once into oneDNN's blocked layout (mkldnn::_reorder_linear_weight), the
// activation of a fused pair as its post-op. MKL takes a non-Intel path on
// AMD; oneDNN dispatches on the instruction set.
#include "infer/optimize.h"

#include "infer/cpu.h"
#include "infer/gemv_f32.h"
#include "infer/intra_op.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>  // at::in_parallel_region, at::get_num_threads
#include <ATen/core/grad_mode.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/silu.h>

#include <algorithm>

namespace ctorch {
namespace infer {

static bool mkl_generic_cpu();

InferLinear::InferLinear(const Module &linear, bool split, bool relayout, bool in_out_rows, bool onednn, bool gemv)
    : Module(linear.kind()), repr_(linear.extra_repr()), split_(split), relayout_(relayout),
      in_out_rows_(in_out_rows), onednn_(onednn), gemv_(gemv), cache_(std::make_shared<Cache>()) {
  register_parameter("weight", linear.params[0].t);
  register_parameter("bias", linear.params[1].t);
}

std::vector<at::Tensor> InferLinear::forward(const std::vector<at::Tensor> &in, const Args &) {
  return {run(in[0], Act())};
}

at::Tensor activate(at::Tensor y, const Act &act) {
  switch (act.kind) {
    case Act::ReLU: return at::relu_(y);
    case Act::GELU: return at::gelu_(y, act.tanh ? "tanh" : "none");
    case Act::SiLU: return at::silu_(y);
    case Act::None: break;
  }
  return y;
}

at::Tensor InferLinear::run(const at::Tensor &x, const Act &act) {
  const at::Tensor &w = params[0].t, &b = params[1].t;
  bool grad = at::GradMode::is_enabled() &&
              (x.requires_grad() || w.requires_grad() || (b.defined() && b.requires_grad()));
  // What the fast paths assume; anything else is at::linear's (its errors too).
  auto cpu_float = [](const at::Tensor &t) {
    return t.scalar_type() == at::kFloat && t.device().is_cpu() && t.layout() == at::kStrided;
  };
  bool fits = !grad && x.dim() >= 1 && cpu_float(x) && cpu_float(w) && w.dim() == 2 && x.size(-1) == w.size(1) &&
              w.size(0) > 0 && (!b.defined() || (cpu_float(b) && b.dim() == 1 && b.size(0) == w.size(0)));
  if (fits && x.numel() > 0) {
    int64_t rows = x.numel() / x.size(-1);
    // Inside a parallel region (a caller's at::parallel_for) the threads are taken: one call.
    int64_t threads = at::in_parallel_region() ? 1 : at::get_num_threads();
    // One row: the packed kernels where infer_linear chose them. Else, at
    // 2+ threads on a CPU where MKL takes its generic path, oneDNN's kernel
    // (it used both threads where the split, then serial, did not: AMD EPYC
    // Zen 4, 2.15.0, generate.c 34.6-37.9 tok/s against
    // 29.8-31.2). On Intel MKL splits one row itself and oneDNN was the
    // slower (docs/inference-benchmarks.md), so the split stays there.
    if (rows == 1 && gemv_) return activate(gemv_run(x, gemv_packed(), w.size(0), b, threads), act);
    if (rows == 1 && threads >= 2 && onednn_ && mkl_generic_cpu()) {
      at::Tensor packed = prepacked();
      if (packed.defined()) return onednn(x, packed, act);
    }
    if (rows == 1 && split_) {
      std::vector<int64_t> shape = x.sizes().vec();
      shape.back() = w.size(0);
      return activate(one_row(x.reshape({1, x.size(-1)}), threads), act).view(shape);
    }
    if (rows >= 2 && onednn_) {
      at::Tensor packed = prepacked();
      if (packed.defined()) return onednn(x, packed, act);
    }
  }
  return activate(at::linear(x, w, b.defined() ? c10::optional<at::Tensor>(b) : c10::nullopt), act);
}

// The weight as the one-row path reads it, as a [in, out]-shaped matrix:
// the transposed view of the stored weight, or, where infer_linear chose
// the other layout, a copy laid out so (made at the first one-row call).
at::Tensor InferLinear::in_out() {
  const at::Tensor &w = params[0].t;
  if (!relayout_) return w.t();
  std::lock_guard<std::mutex> lock(cache_->mu);
  if (!cache_->laid_out.defined()) cache_->laid_out = in_out_rows_ ? w.t().contiguous() : w.contiguous().t();
  return cache_->laid_out;
}

// [1, K] x the weight [K, N] + bias: one BLAS call (at::linear's own when
// the weight is not laid out again), or with 2+ threads one per thread on a
// block of output columns, a whole number of 64-byte lines (16 floats) so
// that the threads never write the same cache line.
at::Tensor InferLinear::one_row(const at::Tensor &x2, int64_t threads) {
  at::Tensor wt = in_out();
  const at::Tensor &b = params[1].t;
  if (threads < 2) return b.defined() ? at::addmm(b, x2, wt) : at::mm(x2, wt);
  int64_t n_out = wt.size(1);
  int64_t block = ((n_out + threads - 1) / threads + 15) / 16 * 16;
  at::Tensor y = at::empty({1, n_out}, x2.options());
  intra_op_for(threads, [&](int64_t s) {
    int64_t n0 = s * block, n = std::min(block, n_out - n0);
    if (n <= 0) return;
    at::Tensor ys = y.narrow(1, n0, n), ws = wt.narrow(1, n0, n);
    if (b.defined()) at::addmm_out(ys, b.narrow(0, n0, n), x2, ws);
    else at::mm_out(ys, x2, ws);
  });
  return y;
}

// oneDNN's layout of the weight, or undefined at the first several-row call:
// packing reads and writes the whole weight, more than one call saves (a
// decoder's prompt is one such call per Linear), so it is made at the second
// one. For any number of rows (batch_size None): measured level with the
// layout for the call's own number (8-128 rows).
at::Tensor InferLinear::prepacked() {
  std::lock_guard<std::mutex> lock(cache_->mu);
  if (!cache_->packed.defined() && cache_->several_calls++ >= 1) {
    static const c10::optional<c10::OperatorHandle> reorder = find_op("mkldnn::_reorder_linear_weight");
    cache_->packed = call_boxed(*reorder, {params[0].t.contiguous(), c10::IValue()}).toTensor();
  }
  return cache_->packed;
}

// gemv_pack's copy of the weight, made at the first one-row call.
at::Tensor InferLinear::gemv_packed() {
  std::lock_guard<std::mutex> lock(cache_->mu);
  if (!cache_->gemv.defined()) cache_->gemv = gemv_pack(params[0].t);
  return cache_->gemv;
}

at::Tensor InferLinear::onednn(const at::Tensor &x, const at::Tensor &packed, const Act &act) {
  static const c10::optional<c10::OperatorHandle> run_op = find_op("mkldnn::_linear_pointwise");
  const at::Tensor &b = params[1].t;
  c10::IValue algorithm;
  if (act.kind == Act::GELU) algorithm = std::string(act.tanh ? "tanh" : "none");
  return call_boxed(*run_op, {x, packed, b.defined() ? c10::IValue(b) : c10::IValue(), std::string(act.attr()),
                              c10::List<c10::optional<at::Scalar>>(), algorithm})
      .toTensor();
}

ModulePtr infer_linear(const ModulePtr &linear, const Options &o, const std::string &path, std::ostream &report) {
  const at::Tensor &w = linear->params[0].t;
  if (!o.linear) return linear;
  if (w.scalar_type() != at::kFloat || !w.device().is_cpu() || w.layout() != at::kStrided) {
    report << "skip linear " << path << ": not a float32 CPU weight\n";
    return linear;
  }
  auto small = [&](int64_t least) {
    return std::to_string(w.numel()) + " weights, under the " + std::to_string(least) + " it pays for";
  };
  bool split = false, relayout = false, in_out_rows = false, onednn = false, gemv = false;
  if (o.split_rows) {
    split = w.numel() >= kSplitMinWeights;
    // The layout each BLAS's one-row kernel reads faster, measured (x 1 row,
    // in x out: 768 x 2304, 768 x 3072, 768 x 50257, 3072 x 768, 1024 x 1024):
    // MKL, [in, out] rows where out >= in (1.2-1.75x over [out, in]; 0.8x for
    // 3072 x 768); OpenBLAS, [out, in] rows where out >= in (1.1-1.3x split
    // over [in, out] blocks) and [in, out] where out < in (1.3x).
    int64_t n_out = w.size(0), n_in = w.size(1);
    bool stored_in_out = w.stride(0) == 1 && w.stride(1) == n_out, stored_out_in = w.is_contiguous();
    in_out_rows = at::hasMKL() ? n_out >= n_in : n_out < n_in;
    relayout = split && !(in_out_rows ? stored_in_out : stored_out_in);
    if (split)
      report << "split " << path << " columns"
             << (relayout ? in_out_rows ? ", weight copied to [in, out] rows" : ", weight copied to [out, in] rows" : "")
             << "\n";
    else report << "skip split " << path << ": " << small(kSplitMinWeights) << "\n";
  }
  if (o.linear_onednn) {
    bool registered = find_op("mkldnn::_linear_pointwise") && find_op("mkldnn::_reorder_linear_weight");
    onednn = registered && w.numel() >= kOnednnMinWeights;
    if (onednn) report << "prepack " << path << " mkldnn::_linear_pointwise\n";
    else if (!registered)
      report << "skip prepack " << path << ": this libtorch registers no mkldnn::_linear_pointwise\n";
    else report << "skip prepack " << path << ": " << small(kOnednnMinWeights) << "\n";
  }
  if (o.split_rows && o.linear_gemv) {
    const char *isa = gemv_isa();
    bool slow_blas = !at::hasMKL() || mkl_generic_cpu();
    gemv = isa && slow_blas && w.numel() >= kGemvMinWeights;
    if (gemv) report << "gemv " << path << " one-row kernel (" << isa << ", a packed copy of the weight)\n";
    else if (!isa)
      report << "skip gemv " << path
             << ": no kernel for this CPU (AVX2 with FMA, or AVX-512F), or CTORCH_GEMV_ISA=none\n";
    else if (!slow_blas) report << "skip gemv " << path << ": MKL on an Intel CPU (its one-row product is split)\n";
    else report << "skip gemv " << path << ": " << small(kGemvMinWeights) << "\n";
  }
  if (!split && !onednn && !gemv) return linear;
  return std::make_shared<InferLinear>(*linear, split, relayout, in_out_rows, onednn, gemv);
}

// An x86 CPU not made by Intel, where MKL takes its generic path; false
// elsewhere (no MKL question to ask).
static bool mkl_generic_cpu() { return cpu_features().x86 && !cpu_features().intel; }

}  // namespace infer
}  // namespace ctorch
