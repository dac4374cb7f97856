// The module optimiser's oneDNN ResNet (resnet.h). Why it exists: libtorch's
// own oneDNN convolutions (eager, TorchScript-optimised) re-lay every
// weight into the blocked layout their kernels read at every call (for
// ResNet-50 at batch 1 about an eighth of the time on AVX-512), and no ATen
// operator keeps a weight in that layout; oneDNN's own API does: each
// primitive is created for the real input shape and its weight reordered
// once into the layout it asks for (weights_desc()).
//
// One plan per input shape: the stem convolution reads the caller's NCHW
// tensor in place; every later activation lives in one of four buffers
// (libtorch tensors) in oneDNN's blocked layout (nChw16c on AVX-512, else
// nChw8c; CTORCH_ONEDNN_LAYOUT=nChw16c|nChw8c|nhwc overrides it, for
// measuring); a block's last convolution accumulates into the residual
// (sum post-op, then ReLU), in place, as ONNX Runtime's NCHWc convolutions
// do; the global average pool writes the caller-visible [N, C, 1, 1]
// tensor, and the Linear ("fc", as the optimiser rewrote it) runs on it.
//
// Its int8 twin (precision=int8-static, oneDNN 3.x): the same plan with
// int8 convolutions. The stem's signed input is quantised to s8
// (symmetric); every ReLU output is u8 with zero point 0, the downsample
// branch's output s8 (symmetric); weights are s8, symmetric per output
// channel, from the folded float32 weight; the activation scales are
// MinMax over the calibration batches, observed on the float32 plan's
// buffers. A block's last convolution reads its residual in place through
// the sum post-op (its own scale and data type: s8 after a downsample, u8
// otherwise), then ReLU, then its output scale. int8 activations flow
// between layers in nhwc: oneDNN 3.2's int8 kernels for AVX-512 VNNI
// (brgconv) read nhwc, and for nChw16c it has only its reference kernel,
// hundreds of times slower (measured); the last block's output is dequantised
// to float32 for the average pool and the Linear. oneDNN 2.x takes int8
// scales another way (output scales, the bias in the accumulator's
// domain), which the plan does not implement: there it is refused and
// int8-static runs as its islands.
#include "infer/onednn/resnet.h"

#include "infer/onednn/dnnl_compat.h"
#include "infer/optimize.h"

#include <ATen/TensorOperators.h>
#include <ATen/core/grad_mode.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <ATen/ops/max_pool2d.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/zeros.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace ctorch {
namespace infer {

namespace {

using dnnl::memory;
using tag = memory::format_tag;

// A conv (and the BatchNorm after it, or none) by position: the indices of
// the path from the ResNet module down to their parent, then their indices
// in it. Positions, not pointers: a copy of the module (clone) has the same
// positions, and the optimiser replaces children in their places.
struct ConvAt {
  std::vector<size_t> parent;
  size_t conv = 0, bn = SIZE_MAX;
};

struct Block {
  std::vector<ConvAt> convs;  // ReLU after each but the last, which adds the residual first
  bool down = false;
  ConvAt downsample;
};

struct Shape {
  ConvAt stem;
  int64_t pool_k = 3, pool_s = 2, pool_p = 1;
  size_t maxpool = 0, avgpool = 0, fc = 0;
  std::vector<Block> blocks;
};

size_t child_index(const Module &m, const std::string &name) {
  for (size_t i = 0; i < m.children.size(); ++i)
    if (m.children[i].first == name && m.children[i].second) return i;
  return SIZE_MAX;
}

bool is_conv2d(const Module &m) {
  Module::Spec s;
  return m.spec(s) && s.nd == 2 && m.kind() == "Conv2d" && s.padding_mode == "zeros" && s.padding_str.empty() &&
         m.params.size() == 2 && m.params[0].t.defined() && m.params[0].t.scalar_type() == at::kFloat;
}

bool is_bn2d(const Module &m) {
  Module::Spec s;
  return m.spec(s) && s.batch_norm_nd == 2 && m.buffers.size() >= 2 && m.buffers[0].t.defined();
}

// "name=INT" in a repr.
bool repr_int(const std::string &repr, const std::string &name, int64_t &v) {
  size_t at = repr.find(name + "=");
  if (at == std::string::npos) return false;
  char *end = nullptr;
  const char *p = repr.c_str() + at + name.size() + 1;
  v = std::strtoll(p, &end, 10);
  return end != p && (*end == ',' || *end == ')' || *end == '\0');
}

// conv_name then bn_name (a BatchNorm2d, or an Identity where the optimiser
// folded it already) in parent.
bool conv_at(const Module &parent, std::vector<size_t> path, const std::string &conv_name,
             const std::string &bn_name, ConvAt &c, std::string &why) {
  c.parent = std::move(path);
  c.conv = child_index(parent, conv_name);
  c.bn = child_index(parent, bn_name);
  if (c.conv == SIZE_MAX || !is_conv2d(*parent.children[c.conv].second))
    return why = "no float32 Conv2d '" + conv_name + "' (zero padding given as numbers)", false;
  if (c.bn == SIZE_MAX) return why = "no '" + bn_name + "' after '" + conv_name + "'", false;
  const Module &bn = *parent.children[c.bn].second;
  if (bn.kind() == "Identity") c.bn = SIZE_MAX;
  else if (!is_bn2d(bn)) return why = "'" + bn_name + "' is not a BatchNorm2d with running statistics", false;
  return true;
}

// torchvision's ResNet layout, or why not.
bool match(const Module &m, Shape &sh, std::string &why) {
  if (!conv_at(m, {}, "conv1", "bn1", sh.stem, why)) return false;
  sh.maxpool = child_index(m, "maxpool");
  sh.avgpool = child_index(m, "avgpool");
  sh.fc = child_index(m, "fc");
  if (sh.maxpool == SIZE_MAX || m.children[sh.maxpool].second->kind() != "MaxPool2d") return why = "no MaxPool2d 'maxpool'", false;
  std::string pr = m.children[sh.maxpool].second->extra_repr();
  int64_t dil = 1;
  if (!repr_int(pr, "kernel_size", sh.pool_k) || !repr_int(pr, "stride", sh.pool_s) ||
      !repr_int(pr, "padding", sh.pool_p) || (repr_int(pr, "dilation", dil) && dil != 1) ||
      pr.find("ceil_mode=True") != std::string::npos)
    return why = "maxpool is not square, dense and floor-rounded (" + pr + ")", false;
  if (sh.avgpool == SIZE_MAX || m.children[sh.avgpool].second->kind() != "AdaptiveAvgPool2d" ||
      (m.children[sh.avgpool].second->extra_repr() != "output_size=1" &&
       m.children[sh.avgpool].second->extra_repr() != "output_size=(1, 1)"))
    return why = "no AdaptiveAvgPool2d(1) 'avgpool'", false;
  if (sh.fc == SIZE_MAX) return why = "no 'fc'", false;
  for (int l = 1;; ++l) {
    size_t li = child_index(m, "layer" + std::to_string(l));
    if (li == SIZE_MAX) {
      if (l == 1) return why = "no 'layer1'", false;
      break;
    }
    const Module &layer = *m.children[li].second;
    if (layer.kind() != "Sequential" || layer.children.empty()) return why = "layer" + std::to_string(l) + " is not a Sequential of blocks", false;
    for (size_t b = 0; b < layer.children.size(); ++b) {
      const Module &blk = *layer.children[b].second;
      Block bl;
      int n = child_index(blk, "conv3") != SIZE_MAX ? 3 : 2;  // Bottleneck, BasicBlock
      for (int i = 1; i <= n; ++i) {
        ConvAt c;
        if (!conv_at(blk, {li, b}, "conv" + std::to_string(i), "bn" + std::to_string(i), c, why)) return false;
        bl.convs.push_back(c);
      }
      size_t di = child_index(blk, "downsample");
      if (di != SIZE_MAX) {
        const Module &d = *blk.children[di].second;
        if (d.kind() != "Sequential" || d.children.size() != 2) return why = "a downsample is not Sequential(Conv2d, BatchNorm2d)", false;
        if (!conv_at(d, {li, b, di}, d.children[0].first, d.children[1].first, bl.downsample, why)) return false;
        bl.down = true;
      }
      sh.blocks.push_back(std::move(bl));
    }
  }
  return true;
}

// The BatchNorm after at's conv, or null: none, or an Identity where the
// optimiser's walk (which runs after the match) folded it already.
const Module *batch_norm(const Module &parent, const ConvAt &at) {
  if (at.bn == SIZE_MAX) return nullptr;
  const Module *bn = parent.children[at.bn].second.get();
  return bn->kind() == "Identity" ? nullptr : bn;
}

// at's parent (a ResNet module's descendant, by the positions at holds).
Module &parent_of(Module &root, const ConvAt &at) {
  Module *parent = &root;
  for (size_t i : at.parent) parent = parent->children[i].second.get();
  return *parent;
}

tag activation_tag(bool int8) {
  if (const char *e = std::getenv("CTORCH_ONEDNN_LAYOUT")) {
    std::string v = e;
    if (v == "nhwc") return tag::nhwc;
    if (v == "nChw8c") return tag::nChw8c;
    if (v == "nChw16c") return tag::nChw16c;
  }
  if (int8) return tag::nhwc;
  return __builtin_cpu_supports("avx512f") ? tag::nChw16c : tag::nChw8c;
}

// The int8 plan's calibration: MinMax of the input and of each
// convolution's output (in the plan's order: the stem, then per block its
// convolutions but the last, the downsample, the last), over the batches.
struct Int8Ranges {
  struct Range {
    bool seen = false;
    float lo = 0, hi = 0;
    void observe(const at::Tensor &t) {
      float a = t.min().item<float>(), b = t.max().item<float>();
      lo = seen ? std::min(lo, a) : a, hi = seen ? std::max(hi, b) : b, seen = true;
    }
    // u8 with zero point 0 (a ReLU's output), else s8, symmetric.
    float scale(bool u8) const {
      float top = u8 ? std::max(hi, 0.f) : std::max(std::fabs(lo), std::fabs(hi));
      return std::max(top / (u8 ? 255.f : 127.f), FLT_EPSILON);
    }
  };
  bool fixed = false;  // calibration over: plans are int8
  size_t batches = 0;
  Range in;
  std::vector<Range> out;
};

// One input shape's primitives, weights (laid out) and buffers.
struct Plan {
  static constexpr int kInput = -1, kOutput = -2;  // slots: the caller's input, the pooled output
  struct Arg {
    int arg, slot;
    memory::desc md;
  };
  struct Step {
    dnnl::primitive p;
    std::vector<Arg> slot_args;
    std::unordered_map<int, memory> args;
  };
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  const Int8Ranges *q = nullptr;  // set: the int8 plan from these ranges
  tag act = activation_tag(false);
  std::vector<Step> steps;
  std::vector<int> step_conv;  // per step: its convolution's index (Int8Ranges::out), or -1
  int convs = 0;
  void *slots[4] = {};
  std::vector<at::Tensor> keep;  // laid-out weights, biases, the four activation buffers
  std::vector<std::pair<const c10::TensorImpl *, int64_t>> read;  // the module tensors read, with their versions
  size_t slot_bytes = 0;
  int64_t out_c = 0;
  std::string kernels;  // the convolutions' implementations, for the report

  bool current(const std::vector<std::pair<const c10::TensorImpl *, int64_t>> &now) const { return now == read; }

  void add(dnnl::primitive p, std::vector<Arg> slot_args, std::unordered_map<int, memory> fixed = {}) {
    for (const Arg &a : slot_args)
      if (a.slot >= 0) slot_bytes = std::max(slot_bytes, a.md.get_size());
    steps.push_back({std::move(p), std::move(slot_args), std::move(fixed)});
    step_conv.push_back(-1);
  }

  // A one-element (or per-channel) float32 scale as a oneDNN memory that
  // the plan keeps alive.
  memory scale_mem(const at::Tensor &s) {
    at::Tensor c = s.to(at::kFloat).contiguous().reshape({-1});
    keep.push_back(c);
    return memory(memory::desc({c.numel()}, memory::data_type::f32, tag::x), eng, c.data_ptr());
  }
  memory scale_mem(float s) { return scale_mem(at::full({1}, s, at::kFloat)); }

  // A reorder from slot src to slot dst, scaled by src_scale (src's
  // quantisation scale: dequantise) or divided by dst_scale (quantise).
  void scaled_reorder(int src, const memory::desc &from, int dst, const memory::desc &to, float src_scale,
                      float dst_scale) {
#if DNNL_VERSION_MAJOR >= 3
    dnnl::primitive_attr attr;
    std::unordered_map<int, memory> fixed;
    if (src_scale != 1.f) attr.set_scales_mask(DNNL_ARG_SRC, 0), fixed[DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC] = scale_mem(src_scale);
    if (dst_scale != 1.f) attr.set_scales_mask(DNNL_ARG_DST, 0), fixed[DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST] = scale_mem(dst_scale);
    add(dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, to, attr)),
        {{DNNL_ARG_FROM, src, from}, {DNNL_ARG_TO, dst, to}}, std::move(fixed));
#else
    (void)src, (void)from, (void)dst, (void)to, (void)src_scale, (void)dst_scale;
    throw dnnl::error(dnnl_unimplemented, "the int8 plan needs oneDNN 3");
#endif
  }

  // conv (+ bn folded) from slot src (dims in d, layout src_tag) to slot dst;
  // d becomes the output's dims.
  // int8: src's data type and scale (updated to dst's), the residual's
  // data type and scale where sum.
  struct Q8 {
    memory::data_type dt = memory::data_type::f32, sum_dt = memory::data_type::undef;
    float scale = 1, sum_scale = 1;
  };

  void conv(Module &root, const ConvAt &at, int src, int dst, bool sum, bool relu, memory::dims &d, tag src_tag,
            Q8 *q8 = nullptr) {
    int index = convs++;
    Module *parent = &parent_of(root, at);
    const ModulePtr &conv = parent->children[at.conv].second;
    Module::Spec s;
    conv->spec(s);
    ModulePtr folded = conv->shallow_copy();
    if (const Module *bn = batch_norm(*parent, at)) fold_bn(*folded, *bn, false);
    at::Tensor w = folded->params[0].t.contiguous(), b = folded->params[1].t;
    int64_t oc = w.size(0), g = s.groups;
    b = b.defined() ? b.contiguous() : at::zeros({oc}, w.options());
    memory::dims wd = g == 1 ? memory::dims{oc, w.size(1), w.size(2), w.size(3)}
                             : memory::dims{g, oc / g, w.size(1), w.size(2), w.size(3)};
    memory::dims out = {d[0], oc, 0, 0}, stride(2), dil(2), pl(2), pr(2);
    for (int i = 0; i < 2; ++i) {
      int64_t k = (w.size(2 + i) - 1) * s.dilation[i] + 1;
      out[2 + i] = (d[2 + i] + 2 * s.padding[i] - k) / s.stride[i] + 1;
      stride[i] = s.stride[i], dil[i] = s.dilation[i] - 1, pl[i] = s.padding[i];
      pr[i] = (out[2 + i] - 1) * s.stride[i] + k - d[2 + i] - pl[i];
    }
    if (q) return conv8(w, b, wd, g, index, src, dst, sum, relu, d, out, stride, dil, pl, pr, src_tag, *q8);
    memory::desc src_md(d, memory::data_type::f32, src_tag), dst_md(out, memory::data_type::f32, act),
        w_any(wd, memory::data_type::f32, tag::any), b_md({oc}, memory::data_type::f32, tag::x);
    auto pd = onednn::conv_pd(eng, src_md, w_any, b_md, dst_md, stride, dil, pl, pr, onednn::post_ops(sum, relu));
    at::Tensor laid = at::empty({static_cast<int64_t>(pd.weights_desc().get_size() / 4 + 1)}, w.options());
    memory user(memory::desc(wd, memory::data_type::f32, g == 1 ? tag::oihw : tag::goihw), eng, w.data_ptr());
    memory wm(pd.weights_desc(), eng, laid.data_ptr()), bm(b_md, eng, b.data_ptr());
    dnnl::reorder(user, wm).execute(strm, user, wm);
    strm.wait();
    conv_step(pd, laid, b, index, {{DNNL_ARG_SRC, src, src_md}, {DNNL_ARG_DST, dst, dst_md}},
              {{DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_BIAS, bm}});
    d = out;
  }

  // A convolution's step: its laid-out weight and bias kept, its kernel
  // named for the report, its index noted for calibration.
  void conv_step(const dnnl::convolution_forward::primitive_desc &pd, const at::Tensor &laid, const at::Tensor &b,
                 int index, std::vector<Arg> slot_args, std::unordered_map<int, memory> fixed) {
    keep.push_back(laid);
    keep.push_back(b);
    std::string impl = pd.impl_info_str();
    if (kernels.find(impl) == std::string::npos) kernels += (kernels.empty() ? "" : " ") + impl;
    add(dnnl::convolution_forward(pd), std::move(slot_args), std::move(fixed));
    step_conv.back() = index;
  }

  // conv's int8 form: weights s8 per output channel (symmetric, max |w| /
  // 127), the output u8 after ReLU, else s8, at the calibrated scale; the
  // float32 bias added to the dequantised sum (oneDNN 3's semantics).
  void conv8(const at::Tensor &w, const at::Tensor &b, const memory::dims &wd, int64_t g, int index, int src, int dst,
             bool sum, bool relu, memory::dims &d, const memory::dims &out, const memory::dims &stride,
             const memory::dims &dil, const memory::dims &pl, const memory::dims &pr, tag src_tag, Q8 &q8) {
#if DNNL_VERSION_MAJOR >= 3
    using dt = memory::data_type;
    int64_t oc = w.size(0);
    dt dst_dt = relu ? dt::u8 : dt::s8;
    float dst_scale = q->out.at(index).scale(relu);
    memory::desc src_md(d, q8.dt, src_tag), dst_md(out, dst_dt, act), w_any(wd, dt::s8, tag::any),
        b_md({oc}, dt::f32, tag::x);
    dnnl::post_ops po;
    if (sum) po.append_sum(q8.sum_scale, 0, q8.sum_dt);
    if (relu) po.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    int wmask = g == 1 ? 1 : 3;  // per output channel (groups x their channels where grouped)
    attr.set_scales_mask(DNNL_ARG_SRC, 0);
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, wmask);
    attr.set_scales_mask(DNNL_ARG_DST, 0);
    auto pd = onednn::conv_pd(eng, src_md, w_any, b_md, dst_md, stride, dil, pl, pr, attr);
    at::Tensor wscale = (std::get<0>(w.abs().reshape({oc, -1}).max(1)) / 127.f).clamp_min(FLT_EPSILON);
    memory wsm = scale_mem(wscale);
    at::Tensor laid = at::empty({static_cast<int64_t>(pd.weights_desc().get_size())}, at::kChar);
    memory user(memory::desc(wd, dt::f32, g == 1 ? tag::oihw : tag::goihw), eng, w.data_ptr());
    memory wm(pd.weights_desc(), eng, laid.data_ptr()), bm(b_md, eng, b.data_ptr());
    dnnl::primitive_attr rattr;
    rattr.set_scales_mask(DNNL_ARG_DST, wmask);
    dnnl::reorder(dnnl::reorder::primitive_desc(eng, user.get_desc(), eng, pd.weights_desc(), rattr))
        .execute(strm, {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, wm}, {DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, wsm}});
    strm.wait();
    conv_step(pd, laid, b, index, {{DNNL_ARG_SRC, src, src_md}, {DNNL_ARG_DST, dst, dst_md}},
              {{DNNL_ARG_WEIGHTS, wm},
               {DNNL_ARG_BIAS, bm},
               {DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, scale_mem(q8.scale)},
               {DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, wsm},
               {DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, scale_mem(dst_scale)}});
    q8.dt = dst_dt, q8.scale = dst_scale;
    d = out;
#else
    (void)w, (void)b, (void)wd, (void)g, (void)index, (void)src, (void)dst, (void)sum, (void)relu, (void)d, (void)out;
    (void)stride, (void)dil, (void)pl, (void)pr, (void)src_tag, (void)q8;
    throw dnnl::error(dnnl_unimplemented, "the int8 plan needs oneDNN 3");
#endif
  }

  void pool(bool max, int src, int dst, memory::dims &d, int64_t k, int64_t s, int64_t p, tag dst_tag,
            memory::data_type dt = memory::data_type::f32) {
    memory::dims out = {d[0], d[1], 0, 0}, kernel = {k, k}, stride = {s, s}, pl = {p, p}, pr(2);
    if (!max) kernel = {d[2], d[3]}, stride = {1, 1}, pl = {0, 0};
    for (int i = 0; i < 2; ++i) {
      out[2 + i] = (d[2 + i] + 2 * pl[i] - kernel[i]) / stride[i] + 1;
      pr[i] = (out[2 + i] - 1) * stride[i] + kernel[i] - d[2 + i] - pl[i];
    }
    memory::desc src_md(d, dt, act), dst_md(out, dt, dst_tag);
    add(dnnl::pooling_forward(onednn::pool_pd(eng, max, src_md, dst_md, stride, kernel, pl, pr)),
        {{DNNL_ARG_SRC, src, src_md}, {DNNL_ARG_DST, dst, dst_md}});
    d = out;
  }

  // The whole network for input dims d.
  // The whole network for input dims d (int8 where q is set).
  void build(Module &root, const Shape &sh, memory::dims d) {
    using dt = memory::data_type;
    Q8 q8, *qp = q ? &q8 : nullptr;  // int8: the current activation's type and scale
    if (q) {
      act = activation_tag(true);
      q8.dt = dt::s8, q8.scale = q->in.scale(false);
      scaled_reorder(kInput, memory::desc(d, dt::f32, tag::nchw), 2, memory::desc(d, dt::s8, act), 1.f, q8.scale);
      conv(root, sh.stem, 2, 0, false, true, d, act, qp);
    } else {
      conv(root, sh.stem, kInput, 0, false, true, d, tag::nchw);
    }
    pool(true, 0, 1, d, sh.pool_k, sh.pool_s, sh.pool_p, act, q8.dt);
    int cur = 1;
    for (const Block &bl : sh.blocks) {
      int free[3], n = 0;
      for (int s = 0; s < 4; ++s)
        if (s != cur) free[n++] = s;
      memory::dims x = d;
      Q8 res8 = q8;  // the residual: the block's input, or the downsample's output
      int src = cur;
      size_t last = bl.convs.size() - 1;
      for (size_t i = 0; i < last; ++i) {
        conv(root, bl.convs[i], src, free[i], false, true, d, act, qp);
        src = free[i];
      }
      int res = cur;
      if (bl.down) {
        memory::dims dd = x;
        res = free[2];
        conv(root, bl.downsample, cur, res, false, false, dd, act, q ? &res8 : nullptr);
      }
      q8.sum_dt = res8.dt, q8.sum_scale = res8.scale;
      conv(root, bl.convs[last], src, res, true, true, d, act, qp);
      cur = res;
    }
    out_c = d[1];
    int free[3], n = 0;
    for (int s = 0; s < 4; ++s)
      if (s != cur) free[n++] = s;
    if (q) {  // the last block's output dequantised for the average pool
      scaled_reorder(cur, memory::desc(d, q8.dt, act), free[1], memory::desc(d, dt::f32, act), q8.scale, 1.f);
      cur = free[1];
    }
    memory::dims pooled = d;
    pool(false, cur, free[0], pooled, 0, 0, 0, act);
    memory::desc from(pooled, memory::data_type::f32, act), to(pooled, memory::data_type::f32, tag::nchw);
    add(dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, to)),
        {{DNNL_ARG_FROM, free[0], from}, {DNNL_ARG_TO, kOutput, to}});
    for (int s = 0; s < 4; ++s) keep.push_back(at::empty({static_cast<int64_t>(slot_bytes / 4 + 1)}, at::kFloat));
    for (int s = 0; s < 4; ++s) slots[s] = keep[keep.size() - 4 + s].data_ptr();
    for (Step &st : steps)
      for (const Arg &a : st.slot_args)
        st.args[a.arg] = memory(a.md, eng, a.slot >= 0 ? slots[a.slot] : DNNL_MEMORY_NONE);
  }

  // observe: the float32 plan's convolution outputs observed (calibration).
  void run(void *in, void *out, Int8Ranges *observe = nullptr) {
    if (observe && observe->out.size() < static_cast<size_t>(convs)) observe->out.resize(convs);
    for (size_t i = 0; i < steps.size(); ++i) {
      Step &st = steps[i];
      for (const Arg &a : st.slot_args)
        if (a.slot < 0) st.args[a.arg].set_data_handle(a.slot == kInput ? in : out);
      st.p.execute(strm, st.args);
      if (!observe || step_conv[i] < 0) continue;
      strm.wait();
      for (const Arg &a : st.slot_args)
        if (a.arg == DNNL_ARG_DST)  // blocked padding holds zeros, which MinMax's range includes anyway
          observe->out[step_conv[i]].observe(
              at::from_blob(slots[a.slot], {static_cast<int64_t>(a.md.get_size() / 4)}, at::kFloat));
    }
    strm.wait();
  }
};

// The module tensors a plan reads, with their versions: a plan made from
// other ones is made again.
void tensors_read(Module &root, const Shape &sh, std::vector<std::pair<const c10::TensorImpl *, int64_t>> &v) {
  auto one = [&](const ConvAt &at) {
    Module *parent = &parent_of(root, at);
    auto note = [&](const at::Tensor &t) {
      if (t.defined()) v.emplace_back(t.unsafeGetTensorImpl(), t._version());
    };
    const Module &c = *parent->children[at.conv].second;
    note(c.params[0].t);
    note(c.params[1].t);
    if (const Module *bn = batch_norm(*parent, at)) {
      for (const auto &e : bn->params) note(e.t);
      for (const auto &e : bn->buffers) note(e.t);
    }
  };
  one(sh.stem);
  for (const Block &bl : sh.blocks) {
    for (const ConvAt &c : bl.convs) one(c);
    if (bl.down) one(bl.downsample);
  }
}

class OnednnResNet : public Module {
 public:
  OnednnResNet(const Module &m, Shape sh, bool int8)
      : Module(m.kind()), sh_(std::move(sh)), cache_(std::make_shared<Cache>()),
        q_(int8 ? std::make_shared<Int8Ranges>() : nullptr) {
    for (const auto &c : m.children) register_module(c.first, c.second);
  }

  // int8: calibration over; false where no batch reached the plan (it
  // stays float32).
  bool finish_int8(std::ostream &report) {
    if (!q_) return false;
    std::lock_guard<std::mutex> lock(cache_->mu);
    if (!q_->in.seen) {
      report << "skip onednn_resnet int8 (root): no calibration batch ran the plan; it stays float32\n";
      q_ = nullptr;
      return false;
    }
    q_->fixed = true;
    cache_->plans.clear();
    report << "onednn_resnet int8 (root): " << q_->out.size() << " int8 convolutions (s8 input, u8 ReLU outputs, "
           << "s8 downsample outputs, s8 weights per output channel), activation scales MinMax over "
           << q_->batches << " calibration batches; the pooled features dequantised to float32\n";
    return true;
  }

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    const at::Tensor &x = in.at(0);
    bool plannable = x.defined() && x.dim() == 4 && x.scalar_type() == at::kFloat && x.device().is_cpu() &&
                     !(x.requires_grad() && at::GradMode::is_enabled()) && x.size(0) > 0;
    std::shared_ptr<Plan> plan = plannable ? plan_for(x) : nullptr;
    if (!plan) return {torchvision_forward(x)};
    at::Tensor xc = x.contiguous();
    at::Tensor pooled = at::empty({x.size(0), plan->out_c, 1, 1}, x.options());
    {
      std::lock_guard<std::mutex> lock(cache_->run_mu);  // the plan's buffers serve one call at a time
      Int8Ranges *observe = q_ && !q_->fixed ? q_.get() : nullptr;
      if (observe) observe->in.observe(xc), ++observe->batches;
      plan->run(xc.data_ptr(), pooled.data_ptr(), observe);
    }
    return {call(sh_.fc, pooled.flatten(1))};
  }

  // The plans made so far: "onednn_plans=[(INPUT SIZES): N threads, KERNELS, ...]"
  // (KERNELS "none" where oneDNN refused the shape and the children run),
  // then ", int8=True" for the calibrated int8 plan.
  std::string extra_repr() const override {
    std::lock_guard<std::mutex> lock(cache_->mu);
    if (cache_->plans.empty()) return "";
    std::string r = "onednn_plans=[";
    for (const auto &p : cache_->plans) {
      r += r.back() == '[' ? "(" : ", (";
      for (size_t i = 0; i + 1 < p.first.size(); ++i) r += (i ? ", " : "") + std::to_string(p.first[i]);
      r += "): " + std::to_string(p.first.back()) + " threads, " + (p.second ? p.second->kernels : std::string("none"));
    }
    return r + "]" + (q_ && q_->fixed ? ", int8=True" : "");
  }

  ModulePtr shallow_copy() const override {
    auto c = std::make_shared<OnednnResNet>(*this);
    c->cache_ = std::make_shared<Cache>();  // a copy lays out its own tensors
    return c;
  }

 private:
  struct Cache {
    std::mutex mu, run_mu;
    std::map<std::vector<int64_t>, std::shared_ptr<Plan>> plans;  // by sizes and threads; null: oneDNN refused
  };

  std::shared_ptr<Plan> plan_for(const at::Tensor &x) {
    std::vector<std::pair<const c10::TensorImpl *, int64_t>> now;
    tensors_read(*this, sh_, now);
    // Keyed by the intra-op thread count too: oneDNN sizes some kernels'
    // work split for the threads there are when it creates the primitive.
    std::vector<int64_t> key = x.sizes().vec();
    key.push_back(at::get_num_threads());
    std::lock_guard<std::mutex> lock(cache_->mu);
    auto it = cache_->plans.find(key);
    if (it != cache_->plans.end() && (!it->second || it->second->current(now))) return it->second;
    std::shared_ptr<Plan> p;
    try {
      at::NoGradGuard ng;
      p = std::make_shared<Plan>();
      if (q_ && q_->fixed) p->q = q_.get();
      p->read = std::move(now);
      p->build(*this, sh_, x.sizes().vec());
    } catch (const dnnl::error &) {
      p = nullptr;  // a shape oneDNN has no kernel for: torchvision's forward through the children
    }
    if (cache_->plans.size() >= 8) cache_->plans.clear();  // shapes change without bound: keep the memory bounded
    cache_->plans[key] = p;
    return p;
  }

  at::Tensor conv_bn(const ConvAt &at, at::Tensor x) {
    Module *parent = &parent_of(*this, at);
    x = parent->call(at.conv, x);
    return at.bn == SIZE_MAX ? x : parent->call(at.bn, x);
  }

  // torchvision ResNet._forward_impl by the children.
  at::Tensor torchvision_forward(const at::Tensor &in) {
    at::Tensor x = at::relu(conv_bn(sh_.stem, in));
    x = call(sh_.maxpool, x);
    for (const Block &bl : sh_.blocks) {
      at::Tensor h = x;
      for (size_t i = 0; i < bl.convs.size(); ++i) {
        h = conv_bn(bl.convs[i], h);
        if (i + 1 < bl.convs.size()) h = at::relu(h);
      }
      x = at::relu(h + (bl.down ? conv_bn(bl.downsample, x) : x));
    }
    return call(sh_.fc, call(sh_.avgpool, x).flatten(1));
  }

  Shape sh_;
  std::shared_ptr<Cache> cache_;
  std::shared_ptr<Int8Ranges> q_;  // int8: the calibrated ranges (fixed once calibrated), shared by copies
};

}  // namespace

nn::ModulePtr onednn_resnet(const nn::ModulePtr &m, std::ostream &report, bool int8) {
  Shape sh;
  std::string why;
  if (!match(*m, sh, why)) {
    report << "skip onednn_resnet (root): not shaped as torchvision's ResNet: " << why << "\n";
    return m;
  }
#if DNNL_VERSION_MAJOR < 3
  if (int8) {
    report << "skip onednn_resnet int8 (root): oneDNN " << DNNL_VERSION_MAJOR << "." << DNNL_VERSION_MINOR
           << " takes int8 scales as output scales with the bias in the accumulator's domain, which the int8 plan "
              "does not implement (it needs oneDNN 3); int8-static runs as its islands\n";
    return m;
  }
#endif
  size_t convs = 1;
  for (const Block &b : sh.blocks) convs += b.convs.size() + b.down;
  report << "onednn_resnet (root): " << sh.blocks.size() << " blocks, " << convs
         << " convolutions with their BatchNorms folded, run by oneDNN " << DNNL_VERSION_MAJOR << "."
         << DNNL_VERSION_MINOR << " (weights laid out once per input shape, ReLU and the residual add as post-ops)\n";
  return std::make_shared<OnednnResNet>(*m, std::move(sh), int8);
}

bool onednn_resnet_int8_finish(nn::Module &m, std::ostream &report) {
  auto *r = dynamic_cast<OnednnResNet *>(&m);
  return r && r->finish_int8(report);
}

}  // namespace infer
}  // namespace ctorch
