// Pooling: MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d and
// AdaptiveMaxPool2d, as torch/nn/modules/pooling.py: no parameters; the
// attributes keep what the caller wrote (AvgPool1d alone expands them with
// _single), which is what extra_repr prints; forward calls the at:: op
// torch.nn.functional reaches. With return_indices=False the max pools
// return one output, as Python returns one tensor (forward_n with room for
// one output works); with it, (output, indices).
#include "module.h"
#include "layers_util.h"

#include <ATen/ops/adaptive_avg_pool1d.h>
#include <ATen/ops/adaptive_avg_pool2d.h>
#include <ATen/ops/adaptive_avg_pool3d.h>
#include <ATen/ops/adaptive_max_pool2d.h>
#include <ATen/ops/avg_pool1d.h>
#include <ATen/ops/avg_pool2d.h>
#include <ATen/ops/avg_pool3d.h>
#include <ATen/ops/max_pool1d.h>
#include <ATen/ops/max_pool1d_with_indices.h>
#include <ATen/ops/max_pool2d.h>
#include <ATen/ops/max_pool2d_with_indices.h>
#include <ATen/ops/max_pool3d.h>
#include <ATen/ops/max_pool3d_with_indices.h>

#include <tuple>

namespace ctorch {
namespace nn {
namespace {

using layers::given_repr;
using layers::py_bool;
using layers::tuple_repr;

// stride=None means the kernel size, in the value and in the repr.
std::vector<int64_t> stride_or_kernel(const Args &a, size_t nd) {
  return a.is_none("stride") ? a.ints("kernel_size", nd) : a.ints("stride", nd);
}
std::string stride_repr(const Args &a) { return given_repr(a, a.is_none("stride") ? "kernel_size" : "stride"); }

class MaxPool : public Module {
 public:
  MaxPool(const char *kind, const Args &a, size_t nd)
      : Module(kind),
        nd_(nd),
        kernel_(a.ints("kernel_size", nd)),
        stride_(stride_or_kernel(a, nd)),
        padding_(a.ints("padding", nd)),
        dilation_(a.ints("dilation", nd)),
        return_indices_(a.b("return_indices")),
        ceil_mode_(a.b("ceil_mode")) {
    repr_ = "kernel_size=" + given_repr(a, "kernel_size") + ", stride=" + stride_repr(a) +
            ", padding=" + given_repr(a, "padding") + ", dilation=" + given_repr(a, "dilation") +
            ", ceil_mode=" + py_bool(ceil_mode_);
  }

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    const at::Tensor &x = in[0];
    if (return_indices_) {
      std::tuple<at::Tensor, at::Tensor> r;
      switch (nd_) {
        case 1: r = at::max_pool1d_with_indices(x, kernel_, stride_, padding_, dilation_, ceil_mode_); break;
        case 2: r = at::max_pool2d_with_indices(x, kernel_, stride_, padding_, dilation_, ceil_mode_); break;
        default: r = at::max_pool3d_with_indices(x, kernel_, stride_, padding_, dilation_, ceil_mode_); break;
      }
      return {std::get<0>(r), std::get<1>(r)};
    }
    switch (nd_) {
      case 1: return {at::max_pool1d(x, kernel_, stride_, padding_, dilation_, ceil_mode_)};
      case 2: return {at::max_pool2d(x, kernel_, stride_, padding_, dilation_, ceil_mode_)};
      default: return {at::max_pool3d(x, kernel_, stride_, padding_, dilation_, ceil_mode_)};
    }
  }
  std::string extra_repr() const override { return repr_; }
  CTORCH_NN_COPYABLE(MaxPool)

 private:
  size_t nd_;
  std::vector<int64_t> kernel_, stride_, padding_, dilation_;
  bool return_indices_, ceil_mode_;
  std::string repr_;
};

class AvgPool : public Module {
 public:
  AvgPool(const char *kind, const Args &a, size_t nd)
      : Module(kind),
        nd_(nd),
        kernel_(a.ints("kernel_size", nd)),
        stride_(stride_or_kernel(a, nd)),
        padding_(a.ints("padding", nd)),
        ceil_mode_(a.b("ceil_mode")),
        count_include_pad_(a.b("count_include_pad")) {
    if (nd > 1 && !a.is_none("divisor_override")) divisor_override_ = a.i("divisor_override");
    // AvgPool1d keeps _single(...) tuples; AvgPool2d/3d what was written.
    if (nd == 1)
      repr_ = "kernel_size=" + tuple_repr(kernel_) + ", stride=" + tuple_repr(stride_) +
              ", padding=" + tuple_repr(padding_);
    else
      repr_ = "kernel_size=" + given_repr(a, "kernel_size") + ", stride=" + stride_repr(a) +
              ", padding=" + given_repr(a, "padding");
  }

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    const at::Tensor &x = in[0];
    switch (nd_) {
      case 1: return {at::avg_pool1d(x, kernel_, stride_, padding_, ceil_mode_, count_include_pad_)};
      case 2:
        return {at::avg_pool2d(x, kernel_, stride_, padding_, ceil_mode_, count_include_pad_, divisor_override_)};
      default:
        return {at::avg_pool3d(x, kernel_, stride_, padding_, ceil_mode_, count_include_pad_, divisor_override_)};
    }
  }
  std::string extra_repr() const override { return repr_; }
  CTORCH_NN_COPYABLE(AvgPool)

 private:
  size_t nd_;
  std::vector<int64_t> kernel_, stride_, padding_;
  bool ceil_mode_, count_include_pad_;
  c10::optional<int64_t> divisor_override_;
  std::string repr_;
};

// AdaptiveAvgPool1d/2d/3d and AdaptiveMaxPool2d (max = true).
class AdaptivePool : public Module {
 public:
  AdaptivePool(const char *kind, const Args &a, size_t nd, bool max)
      : Module(kind), nd_(nd), max_(max), size_(a.ints("output_size", nd)) {
    if (max) return_indices_ = a.b("return_indices");
    repr_ = "output_size=" + given_repr(a, "output_size");
  }

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    const at::Tensor &x = in[0];
    if (max_) {
      auto r = at::adaptive_max_pool2d(x, size_);
      if (!return_indices_) return {std::get<0>(r)};
      return {std::get<0>(r), std::get<1>(r)};
    }
    switch (nd_) {
      case 1: return {at::adaptive_avg_pool1d(x, size_)};
      case 2: return {at::adaptive_avg_pool2d(x, size_)};
      default: return {at::adaptive_avg_pool3d(x, size_)};
    }
  }
  std::string extra_repr() const override { return repr_; }
  CTORCH_NN_COPYABLE(AdaptivePool)

 private:
  size_t nd_;
  bool max_, return_indices_ = false;
  std::vector<int64_t> size_;
  std::string repr_;
};

}  // namespace

// Signatures in full per kind: bindings-gen reads them from the source text.
CTORCH_NN_KIND("MaxPool1d",
               "kernel_size: int[1], stride: int[1]? = None, padding: int[1] = 0, dilation: int[1] = 1, "
               "return_indices: bool = False, ceil_mode: bool = False",
               "input: Tensor -> output: Tensor, indices: Tensor?",
               [](const Args &a) { return std::make_shared<MaxPool>("MaxPool1d", a, 1); });
CTORCH_NN_KIND("MaxPool2d",
               "kernel_size: int[2], stride: int[2]? = None, padding: int[2] = 0, dilation: int[2] = 1, "
               "return_indices: bool = False, ceil_mode: bool = False",
               "input: Tensor -> output: Tensor, indices: Tensor?",
               [](const Args &a) { return std::make_shared<MaxPool>("MaxPool2d", a, 2); });
CTORCH_NN_KIND("MaxPool3d",
               "kernel_size: int[3], stride: int[3]? = None, padding: int[3] = 0, dilation: int[3] = 1, "
               "return_indices: bool = False, ceil_mode: bool = False",
               "input: Tensor -> output: Tensor, indices: Tensor?",
               [](const Args &a) { return std::make_shared<MaxPool>("MaxPool3d", a, 3); });
CTORCH_NN_KIND("AvgPool1d",
               "kernel_size: int[1], stride: int[1]? = None, padding: int[1] = 0, ceil_mode: bool = False, "
               "count_include_pad: bool = True",
               "input: Tensor -> Tensor", [](const Args &a) { return std::make_shared<AvgPool>("AvgPool1d", a, 1); });
CTORCH_NN_KIND("AvgPool2d",
               "kernel_size: int[2], stride: int[2]? = None, padding: int[2] = 0, ceil_mode: bool = False, "
               "count_include_pad: bool = True, divisor_override: int? = None",
               "input: Tensor -> Tensor", [](const Args &a) { return std::make_shared<AvgPool>("AvgPool2d", a, 2); });
CTORCH_NN_KIND("AvgPool3d",
               "kernel_size: int[3], stride: int[3]? = None, padding: int[3] = 0, ceil_mode: bool = False, "
               "count_include_pad: bool = True, divisor_override: int? = None",
               "input: Tensor -> Tensor", [](const Args &a) { return std::make_shared<AvgPool>("AvgPool3d", a, 3); });
CTORCH_NN_KIND("AdaptiveAvgPool1d", "output_size: int[1]", "input: Tensor -> Tensor",
               [](const Args &a) { return std::make_shared<AdaptivePool>("AdaptiveAvgPool1d", a, 1, false); });
CTORCH_NN_KIND("AdaptiveAvgPool2d", "output_size: int[2]", "input: Tensor -> Tensor",
               [](const Args &a) { return std::make_shared<AdaptivePool>("AdaptiveAvgPool2d", a, 2, false); });
CTORCH_NN_KIND("AdaptiveAvgPool3d", "output_size: int[3]", "input: Tensor -> Tensor",
               [](const Args &a) { return std::make_shared<AdaptivePool>("AdaptiveAvgPool3d", a, 3, false); });
CTORCH_NN_KIND("AdaptiveMaxPool2d", "output_size: int[2], return_indices: bool = False",
               "input: Tensor -> output: Tensor, indices: Tensor?",
               [](const Args &a) { return std::make_shared<AdaptivePool>("AdaptiveMaxPool2d", a, 2, true); });

}  // namespace nn
}  // namespace ctorch
