// The inference optimiser for module trees:
// ctorch_nn_module_optimize_for_inference. A deep copy of the module in eval
// mode, rewritten inside every Sequential, with the structure and state-dict
// keys torch.ao.quantization.fuse_modules makes in eval mode (so Python can
// check the result key by key):
//   Conv, BatchNorm        -> Conv (fuse_conv_bn_eval's arithmetic), Identity
//   Conv, [BatchNorm,] ReLU -> ConvReLU{1,2,3}d(0: Conv, 1: ReLU), Identity...
//   Linear, BatchNorm1d    -> Linear (fuse_linear_bn_eval's arithmetic), Identity
//   Linear, ReLU/GELU/SiLU -> LinearReLU/LinearGELU/LinearSiLU(0: Linear, 1: act), Identity
// Then, anywhere in the tree (a custom module's children included: these
// compute the same function as what they replace, so a C forward that calls
// them by path gets the same results), every eligible Conv2d (zero padding
// mode, symmetric padding) becomes an InferConv of the same kind, name,
// tensors and repr, whose forward runs oneDNN with the weight prepacked once
// per input shape (mkldnn_prepacked::conv2d_prepack / conv2d_run, registered
// by libtorch 1.13.1 and 2.15.0 alike, called through the dispatcher by
// name) and the ReLU of a ConvReLU2d as the convolution's post-op; and every
// Linear becomes an InferLinear (optimize_linear.cpp).
// Folding and fusion stay inside Sequentials: what a custom module's C
// forward does with its children (which output feeds which input) is not
// known here.
#include "infer/optimize.h"

#include "infer/onednn/resnet.h"
#include "infer/options.h"

#include <ATen/TensorOperators.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace ctorch {
namespace infer {

Options parse_options(const char *text) {
  Options o;
  for (const OptionItem &item : option_items(text)) {
    const std::string &key = item.key;
    if (key == "precision" && precision_value(item, &o.precision)) continue;
    if (key == "int8_engine" && int8_engine_value(item, &o.int8_engine_asked)) continue;
    bool *flag = key == "onednn_resnet" ? &o.onednn_resnet : key == "bf16_emulate" ? &o.bf16_emulate : key == "fold" ? &o.fold : key == "fuse" ? &o.fuse : key == "prepack" ? &o.prepack
                 : key == "channels_last" ? &o.channels_last : key == "linear" ? &o.linear
                 : key == "split_rows" ? &o.split_rows : key == "linear_onednn" ? &o.linear_onednn
                 : key == "linear_gemv" ? &o.linear_gemv : nullptr;
    if (!flag || !flag_value(item, flag))
      fail_arg("options", "'" + item.text + "' is not one of fold, fuse, prepack, channels_last, linear, split_rows, "
                          "linear_onednn, linear_gemv, bf16_emulate, onednn_resnet =0|1, precision=float32|bf16|int8-dynamic|int8-static, "
                          "int8_engine=auto|x86|fbgemm|onednn");
  }
  return o;
}

c10::optional<c10::OperatorHandle> find_op(const char *name) {
  return c10::Dispatcher::singleton().findSchema({name, ""});
}

// 2.x versions between 2.0 and 2.15 added arguments with defaults to
// conv2d_prepack: with the defaults filled in, the call stays the same on
// every version.
c10::IValue call_boxed(const c10::OperatorHandle &op, std::vector<c10::IValue> args) {
  const auto &schema = op.schema();
  for (size_t i = args.size(); i < schema.arguments().size(); ++i) {
    const auto &a = schema.arguments()[i];
    args.push_back(a.default_value() ? *a.default_value() : c10::IValue());
  }
  op.callBoxed(&args);
  return args.at(0);
}

// A 2-d convolution run by oneDNN with its weight prepacked per input shape.
// Kind "Conv2d", the folded module's tensors ("weight", "bias") and repr;
// ActPair asks it to add the ReLU as a post-op.
class InferConv : public Module {
 public:
  InferConv(const Module &conv, const Spec &s, std::vector<int64_t> padding, bool channels_last)
      : Module(conv.kind()), spec_(s), padding_(std::move(padding)), channels_last_(channels_last),
        repr_(conv.extra_repr()), cache_(std::make_shared<Cache>()) {
    register_parameter("weight", conv.params[0].t);
    register_parameter("bias", conv.params[1].t);
  }

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    return {run(in[0], false)};
  }

  at::Tensor run(const at::Tensor &x, bool relu) {
    const at::Tensor &w = params[0].t, &b = params[1].t;
    bool packable = x.dim() == 4 && x.scalar_type() == at::kFloat && x.device().is_cpu() && !x.requires_grad() &&
                    w.scalar_type() == at::kFloat && w.device().is_cpu() && x.size(1) == w.size(1) * spec_.groups;
    if (!packable) {  // the module's own ops (and their errors)
      at::Tensor y = at::conv2d(x, w, b.defined() ? c10::optional<at::Tensor>(b) : c10::nullopt, spec_.stride,
                                padding_, spec_.dilation, spec_.groups);
      return relu ? at::relu_(y) : y;
    }
    at::Tensor xin = x.contiguous(channels_last_ ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
    static const c10::optional<c10::OperatorHandle> run_op = find_op("mkldnn_prepacked::conv2d_run");
    return call_boxed(*run_op, {xin, context(x.sizes().vec(), relu)}).toTensor();
  }

  // The oneDNN context (prepacked weight, primitive) for this input shape.
  c10::IValue context(std::vector<int64_t> sizes, bool relu) {
    std::vector<int64_t> key = sizes;
    key.push_back(relu);
    std::lock_guard<std::mutex> lock(cache_->mu);
    auto it = cache_->ctx.find(key);
    if (it != cache_->ctx.end()) return it->second;
    static const c10::optional<c10::OperatorHandle> prepack = find_op("mkldnn_prepacked::conv2d_prepack");
    const at::Tensor &b = params[1].t;
    at::Tensor w = params[0].t.contiguous(channels_last_ ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
    c10::IValue ctx = call_boxed(*prepack, {w, b.defined() ? c10::IValue(b) : c10::IValue(), spec_.stride, padding_,
                                            spec_.dilation, spec_.groups, sizes, std::string(relu ? "relu" : "none")});
    if (cache_->ctx.size() >= 16) cache_->ctx.clear();  // shapes change without bound: keep the memory bounded
    cache_->ctx.emplace(std::move(key), ctx);
    return ctx;
  }

  std::string extra_repr() const override { return repr_; }
  bool spec(Spec &s) const override {
    s = spec_;
    return true;
  }
  // New tensors (load_state_dict, to, clone): prepack again.
  void tensors_changed() override { cache_ = std::make_shared<Cache>(); }
  CTORCH_NN_COPYABLE(InferConv)

 private:
  struct Cache {
    std::mutex mu;
    std::map<std::vector<int64_t>, c10::IValue> ctx;
  };
  Spec spec_;
  std::vector<int64_t> padding_;
  bool channels_last_;
  std::string repr_;
  std::shared_ptr<Cache> cache_;
};

std::vector<at::Tensor> ActPair::forward(const std::vector<at::Tensor> &in, const Args &) {
  Module *op = children[0].second.get();
  bool done = false;
  at::Tensor y = precision_fused(*op, in[0], act_, &done);
  if (done) return {y};
  if (auto *c = dynamic_cast<InferConv *>(op)) {
    if (act_.kind == Act::ReLU) return {c->run(in[0], true)};
  } else if (auto *l = dynamic_cast<InferLinear *>(op)) {
    return {l->run(in[0], act_)};
  }
  return {activate(call(0, in[0]), act_)};  // a fresh output: in place
}

ModulePtr identity() {
  static const Kind *k = find_kind("Identity");
  return build(*k, parse_args(k->init, "", "Identity"));
}

bool is_conv(const Module &m, Module::Spec &s) { return m.spec(s) && s.nd > 0 && m.kind().rfind("Conv", 0) == 0; }

// torch.nn's Linear (not a custom module of that name, which may compute
// anything).
bool is_linear(const Module &m) {
  return m.kind() == "Linear" && !dynamic_cast<const TextForward *>(&m) && m.params.size() == 2 &&
         m.params[0].name == "weight" && m.params[1].name == "bias" && m.children.empty() &&
         m.params[0].t.defined() && m.params[0].t.dim() == 2;
}

// ReLU, GELU (its approximate read from its repr, "approximate='tanh'") or
// SiLU: the activation a Linear can take as a post-op.
bool activation(const Module &m, Act &a) {
  if (dynamic_cast<const TextForward *>(&m)) return false;
  if (m.kind() == "ReLU") a.kind = Act::ReLU;
  else if (m.kind() == "GELU") a.kind = Act::GELU, a.tanh = m.extra_repr().find("'tanh'") != std::string::npos;
  else if (m.kind() == "SiLU") a.kind = Act::SiLU;
  else return false;
  return true;
}

// A BatchNorm that can be folded into an op of `out` output channels.
bool is_foldable_bn(const Module &m, size_t nd, int64_t out, std::string &why) {
  Module::Spec s;
  if (!m.spec(s) || s.batch_norm_nd != nd) return false;
  if (!m.buffers[0].t.defined() || !m.buffers[1].t.defined()) {
    why = "track_running_stats=False: it normalises with the batch's statistics";
    return false;
  }
  if (m.buffers[0].t.numel() != out) {
    why = "num_features differs from the output channels before it";
    return false;
  }
  return true;
}

// fuse_conv_bn_weights / fuse_linear_bn_weights (torch/nn/utils/fusion.py,
// the same in 1.13.1 and 2.15.0), op for op in the tensors' dtype.
void fold_bn(Module &op, const Module &bn, bool linear) {
  at::NoGradGuard ng;
  Module::Spec s;
  bn.spec(s);
  const at::Tensor &rm = bn.buffers[0].t, &rv = bn.buffers[1].t;
  at::Tensor bw = bn.params[0].t.defined() ? bn.params[0].t : at::ones_like(rm);
  at::Tensor bb = bn.params[1].t.defined() ? bn.params[1].t : at::zeros_like(rm);
  at::Tensor w = op.params[0].t, b = op.params[1].t.defined() ? op.params[1].t : at::zeros_like(rm);
  if (linear) {
    at::Tensor scale = bw * at::rsqrt(rv + s.eps);
    op.params[0].t = w * scale.unsqueeze(-1);
    op.params[1].t = (b - rm) * scale + bb;
  } else {
    at::Tensor rs = at::rsqrt(rv + s.eps);
    std::vector<int64_t> shape(w.dim(), 1);
    shape[0] = -1;
    op.params[0].t = w * (bw * rs).reshape(shape);
    op.params[1].t = (b - rm) * rs * bw + bb;
  }
}

struct Optimizer {
  Options o;
  std::ostringstream report;
  std::map<const Module *, int> uses;  // how many places hold each module

  static std::string join(const std::string &prefix, const std::string &name) {
    return prefix.empty() ? name : prefix + "." + name;
  }

  void count_uses(const Module &m) {
    for (const auto &c : m.children)
      if (c.second && ++uses[c.second.get()] == 1) count_uses(*c.second);
  }

  // The padding oneDNN gets for a Conv2d, or why it stays as it is.
  bool conv2d_padding(const Module::Spec &s, const at::Tensor &w, std::vector<int64_t> &pad, std::string &why) {
    if (s.nd != 2) return why = "not 2-d (oneDNN's prepacked convolution is 2-d)", false;
    if (s.padding_mode != "zeros") return why = "padding_mode='" + s.padding_mode + "'", false;
    if (w.scalar_type() != at::kFloat || !w.device().is_cpu()) return why = "not float32 on the CPU", false;
    if (s.padding_str == "valid") return pad = {0, 0}, true;
    if (s.padding_str == "same") {
      pad.clear();
      for (size_t d = 0; d < 2; ++d) {
        int64_t total = s.dilation[d] * (w.size(2 + d) - 1);
        if (total % 2) return why = "padding='same' pads unevenly here", false;
        pad.push_back(total / 2);
      }
      return true;
    }
    return pad = s.padding, true;
  }

  // A Conv2d (folded already) -> InferConv, when eligible.
  ModulePtr maybe_prepack(const ModulePtr &conv, const std::string &path) {
    Module::Spec s;
    std::vector<int64_t> pad;
    std::string why;
    if (!o.prepack || !is_conv(*conv, s)) return conv;
    if (!conv2d_padding(s, conv->params[0].t, pad, why)) {
      report << "skip prepack " << path << ": " << why << "\n";
      return conv;
    }
    if (!find_op("mkldnn_prepacked::conv2d_prepack") || !find_op("mkldnn_prepacked::conv2d_run")) {
      report << "skip prepack " << path << ": this libtorch registers no mkldnn_prepacked::conv2d_prepack\n";
      return conv;
    }
    report << "prepack " << path << " mkldnn_prepacked::conv2d_prepack" << (o.channels_last ? " channels_last" : "")
           << "\n";
    return std::make_shared<InferConv>(*conv, s, pad, o.channels_last);
  }

  // A conv (folded already) in bf16 or int8-static, when eligible.
  ModulePtr reduced_conv(const ModulePtr &conv, const Module::Spec &s, const std::string &path) {
    std::vector<int64_t> pad;
    std::string why;
    if (!conv2d_padding(s, conv->params[0].t, pad, why)) {
      report << "skip " << precision_name(o.precision) << " " << path << ": " << why << "\n";
      return conv;
    }
    return precision_conv(conv, s, pad, o, path, report);
  }

  // A Linear or a conv -> its inference form, once per module (one held in
  // two places stays one module in both).
  std::map<const Module *, ModulePtr> rewritten;
  // The originals, alive until the walk ends: their addresses key
  // `rewritten`, and a module made later must not take a freed one's.
  std::vector<ModulePtr> originals;
  // int8-static's modules, calibrated after the walk (finish_static_int8).
  std::vector<std::pair<std::string, ModulePtr>> statics;
  ModulePtr rewrite(const ModulePtr &op, const std::string &path) {
    if (dynamic_cast<InferConv *>(op.get()) || dynamic_cast<InferLinear *>(op.get())) return op;
    auto it = rewritten.find(op.get());
    if (it != rewritten.end()) return it->second;
    Module::Spec s;
    ModulePtr r = is_linear(*op) ? (o.precision != Precision::Float32 ? precision_linear(op, o, path, report)
                                                                       : infer_linear(op, o, path, report))
                  : is_conv(*op, s) ? (o.precision == Precision::BF16 || o.precision == Precision::Int8Static
                                           ? reduced_conv(op, s, path) : maybe_prepack(op, path))
                                    : op;
    if (r != op && is_static_int8(*r)) statics.emplace_back(path, r);
    originals.push_back(op);
    rewritten.emplace(op.get(), r);
    rewritten.emplace(r.get(), r);  // met again (a Sequential's rewritten child): left as it is
    return r;
  }

  void sequential(Module &seq, const std::string &prefix) {
    auto &ch = seq.children;
    for (size_t i = 0; i < ch.size(); ++i) {
      ModulePtr op = ch[i].second;
      if (!op || uses[op.get()] > 1) continue;  // held elsewhere too: rewritten by walk, never folded
      Module::Spec s;
      bool conv = is_conv(*op, s), linear = is_linear(*op);
      if (!conv && !linear) continue;
      std::string path = join(prefix, ch[i].first), why;
      size_t j = i + 1;
      int64_t out = op->params[0].t.size(0);
      if (o.fold && j < ch.size() && ch[j].second && uses[ch[j].second.get()] == 1) {
        if (is_foldable_bn(*ch[j].second, conv ? s.nd : 1, out, why)) {
          fold_bn(*op, *ch[j].second, linear);
          report << "fold_bn " << join(prefix, ch[j].first) << " into " << path << "\n";
          ch[j].second = identity();
          ++j;
        } else if (!why.empty()) {
          report << "skip fold_bn " << join(prefix, ch[j].first) << ": " << why << "\n";
        }
      }
      op = rewrite(op, path);
      Act act;
      if (o.fuse && j < ch.size() && ch[j].second && uses[ch[j].second.get()] == 1 &&
          activation(*ch[j].second, act) && (linear || act.kind == Act::ReLU)) {
        static const char *const names[] = {"", "ReLU", "GELU", "SiLU"}, *const lower[] = {"", "relu", "gelu", "silu"};
        std::string kind = (conv ? "Conv" : "Linear") + std::string(names[act.kind]) +
                           (conv ? std::to_string(s.nd) + "d" : "");
        report << "fuse_" << lower[act.kind] << " " << join(prefix, ch[j].first) << " into " << path << " (" << kind
               << ")\n";
        op = std::make_shared<ActPair>(kind, op, ch[j].second, act);
        ch[j].second = identity();
      }
      ch[i].second = op;
    }
  }

  std::set<const Module *> walked;
  void walk(Module &m, const std::string &prefix) {
    if (!walked.insert(&m).second) return;
    if (m.kind() == "Sequential") sequential(m, prefix);
    else if (dynamic_cast<TextForward *>(&m) && !m.children.empty())
      report << "note " << (prefix.empty() ? "(root)" : prefix) << ": custom module (C forward): its Linears and "
             << "Conv2ds are rewritten (they compute the same function), folding and fusion happen only inside its "
             << "Sequentials\n";
    for (auto &c : m.children) {
      Module::Spec s;
      if (!c.second || dynamic_cast<ActPair *>(c.second.get())) continue;  // a pair's children are done
      if (is_linear(*c.second) || is_conv(*c.second, s)) c.second = rewrite(c.second, join(prefix, c.first));
      else walk(*c.second, join(prefix, c.first));
    }
  }
};

}  // namespace infer
}  // namespace ctorch

namespace ctorch {
namespace infer {
namespace {

// Both entry points: calibration[b * per_batch, (b + 1) * per_batch) are
// batch b's forward inputs (int8-static only).
void optimize(ctorch_nn_module *out, char **report, ctorch_nn_module m, const char *options,
              const ctorch_tensor *calibration, size_t n_calibration, size_t per_batch, bool calibrated) {
  require_out(out, "out");
  *out = nullptr;
  if (report) *report = nullptr;
  check_handle(m, "m");
  Optimizer opt;
  opt.o = parse_options(options);
  bool is_static = opt.o.precision == Precision::Int8Static;
  if (is_static && !calibrated)
    fail_arg("options", "precision=int8-static needs calibration batches: "
                        "ctorch_nn_module_optimize_for_inference_calibrated takes them");
  if (calibrated) {
    if (!is_static)
      fail_arg("options", "calibration batches are for precision=int8-static; options say precision=" +
                              std::string(precision_name(opt.o.precision)));
    require_list(calibration, n_calibration, "calibration");
    if (per_batch == 0) fail_arg("inputs_per_batch", "must be at least 1");
    if (n_calibration == 0 || n_calibration % per_batch != 0)
      fail_arg("n_calibration", std::to_string(n_calibration) + " is not a positive multiple of inputs_per_batch (" +
                                    std::to_string(per_batch) + ")");
    for (size_t k = 0; k < n_calibration; ++k) own(calibration[k], "calibration");  // each a live tensor
  }
  check_precision(opt.o);
  nn::ModulePtr copy = nn::clone(*m->m);
  nn::set_train(*copy, false);
  opt.count_uses(*copy);
  // Before the walk: the plan reads the BatchNorms as they are.
  if (opt.o.onednn_resnet) copy = onednn_resnet(copy, opt.report, is_static);
  nn::Module::Spec spec;
  if (is_linear(*copy) || is_conv(*copy, spec)) copy = opt.rewrite(copy, "(root)");
  else opt.walk(*copy, "");
  nn::set_requires_grad(*copy, false);  // after the walk: register_parameter set it on the new modules' tensors
  if (is_static) {
    // The observers see each batch through the rewritten tree (its folded
    // float32 ops), as a prepared PyTorch model is calibrated.
    at::NoGradGuard no_grad;
    for (size_t b = 0; b < n_calibration; b += per_batch) {
      std::vector<at::Tensor> in;
      for (size_t k = 0; k < per_batch; ++k) in.push_back(own(calibration[b + k], "calibration"));
      nn::check_forward_inputs(*copy, in);
      nn::reset_error_path();
      nn::run_forward(*copy, in, nullptr);
    }
    // The int8 plan runs the convolutions: their islands serve only inputs
    // the plan cannot take, and stay float32.
    if (onednn_resnet_int8_finish(*copy, opt.report))
      opt.statics.erase(std::remove_if(opt.statics.begin(), opt.statics.end(),
                                       [](const std::pair<std::string, ModulePtr> &p) {
                                         Module::Spec s;
                                         return p.second->spec(s);
                                       }),
                        opt.statics.end());
    finish_static_int8(opt.statics, opt.report);
  }
  if (report) *report = nn::give_string(opt.report.str());
  *out = new ctorch_nn_module_s{std::move(copy)};
}

}  // namespace
}  // namespace infer
}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_nn_module_optimize_for_inference(ctorch_nn_module *out, char **report,
                                                                 ctorch_nn_module m, const char *options) {
  CTORCH_TRY
  ctorch::infer::optimize(out, report, m, options, nullptr, 0, 0, false);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_module_optimize_for_inference_calibrated(ctorch_nn_module *out, char **report,
                                                                            ctorch_nn_module m, const char *options,
                                                                            const ctorch_tensor *calibration,
                                                                            size_t n_calibration,
                                                                            size_t inputs_per_batch) {
  CTORCH_TRY
  ctorch::infer::optimize(out, report, m, options, calibration, n_calibration, inputs_per_batch, true);
  CTORCH_CATCH
}

}  // extern "C"
