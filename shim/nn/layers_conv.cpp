// Convolutions: Conv1d/2d/3d and ConvTranspose1d/2d/3d, as torch.nn's
// _ConvNd and _ConvTransposeNd (torch/nn/modules/conv.py): the same
// attributes (expanded to tuples by _single/_pair/_triple), parameters
// (weight, then bias or None), reset_parameters draws and forward calls.
#include "module.h"
#include "layers_util.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/conv1d.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/conv3d.h>
#include <ATen/ops/conv_transpose1d.h>
#include <ATen/ops/conv_transpose2d.h>
#include <ATen/ops/conv_transpose3d.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/pad.h>

#include <cmath>

namespace ctorch {
namespace nn {
namespace {

using layers::all_equal;
using layers::opt;
using layers::tuple_repr;
using layers::value_error;

class Conv : public Module {
 public:
  Conv(const char *kind, const Args &a, size_t nd, bool transposed)
      : Module(kind), nd_(nd), transposed_(transposed) {
    in_ = a.i("in_channels");
    out_ = a.i("out_channels");
    kernel_ = a.ints("kernel_size", nd);
    stride_ = a.ints("stride", nd);
    dilation_ = a.ints("dilation", nd);
    groups_ = a.i("groups");
    padding_mode_ = a.s("padding_mode");
    if (transposed) {
      padding_ = a.ints("padding", nd);
      output_padding_ = a.ints("output_padding", nd);
    } else if (a.get("padding").kind == Value::Str) {
      padding_str_ = a.s("padding");
    } else {
      padding_ = a.ints("padding", nd);
    }
    output_padding_.resize(nd, 0);
    // _ConvNd.__init__'s checks, in its order and with its messages.
    if (groups_ <= 0) fail_arg("groups", "groups must be a positive integer");
    if (in_ % groups_ != 0) fail_arg("groups", "in_channels must be divisible by groups");
    if (out_ % groups_ != 0) fail_arg("groups", "out_channels must be divisible by groups");
    // A string padding ('' included: it is not the ints path) must be one of Python's two.
    if (!transposed && a.get("padding").kind == Value::Str) {
      if (padding_str_ != "same" && padding_str_ != "valid")
        fail_arg("padding", "Invalid padding string '" + padding_str_ + "', should be one of {'valid', 'same'}");
      if (padding_str_ == "same" && !all_equal(stride_, 1))
        fail_arg("padding", "padding='same' is not supported for strided convolutions");
    }
    if (padding_mode_ != "zeros" && padding_mode_ != "reflect" && padding_mode_ != "replicate" &&
        padding_mode_ != "circular")
      fail_arg("padding_mode", "padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got "
                               "padding_mode='" + padding_mode_ + "'");
    if (transposed && padding_mode_ != "zeros")
      fail_arg("padding_mode", std::string("Only \"zeros\" padding mode is supported for ") + kind);
    // _reversed_padding_repeated_twice: F.pad's order (last dimension first).
    rev_pad_.assign(2 * nd, 0);
    if (padding_str_ == "same") {
      for (size_t d = 0; d < nd; ++d) {
        int64_t total = dilation_[d] * (kernel_[d] - 1), left = total / 2;
        size_t i = nd - 1 - d;
        rev_pad_[2 * i] = left;
        rev_pad_[2 * i + 1] = total - left;
      }
    } else if (padding_str_.empty()) {
      for (size_t d = 0; d < nd; ++d) rev_pad_[2 * (nd - 1 - d)] = rev_pad_[2 * (nd - 1 - d) + 1] = padding_[d];
    }

    at::TensorOptions o = a.factory();
    // Reserved, then appended: GCC 12 reads an insert into a 2-element
    // vector made from a braced list as a write past its end
    // (-Wstringop-overflow, a false positive).
    std::vector<int64_t> shape;
    shape.reserve(2 + kernel_.size());
    shape.push_back(transposed ? in_ : out_);
    shape.push_back(transposed ? out_ / groups_ : in_ / groups_);
    shape.insert(shape.end(), kernel_.begin(), kernel_.end());
    register_parameter("weight", at::empty(shape, o));
    register_parameter("bias", a.b("bias") ? at::empty({out_}, o) : at::Tensor());
    reset_parameters();
  }

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &kw) override {
    const at::Tensor &x = in[0], &w = params[0].t, &b = params[1].t;
    if (transposed_) {
      std::vector<int64_t> op = output_padding(x, kw);
      switch (nd_) {
        case 1: return {at::conv_transpose1d(x, w, opt(b), stride_, padding_, op, groups_, dilation_)};
        case 2: return {at::conv_transpose2d(x, w, opt(b), stride_, padding_, op, groups_, dilation_)};
        default: return {at::conv_transpose3d(x, w, opt(b), stride_, padding_, op, groups_, dilation_)};
      }
    }
    if (padding_mode_ != "zeros") {
      // Python pads first, then convolves with no padding.
      at::Tensor p = at::pad(x, rev_pad_, padding_mode_);
      std::vector<int64_t> zero(nd_, 0);
      return {conv(p, w, b, zero)};
    }
    if (!padding_str_.empty()) {
      switch (nd_) {
        case 1: return {at::conv1d(x, w, opt(b), stride_, padding_str_, dilation_, groups_)};
        case 2: return {at::conv2d(x, w, opt(b), stride_, padding_str_, dilation_, groups_)};
        default: return {at::conv3d(x, w, opt(b), stride_, padding_str_, dilation_, groups_)};
      }
    }
    return {conv(x, w, b, padding_)};
  }

  std::string extra_repr() const override {
    std::string s = std::to_string(in_) + ", " + std::to_string(out_) + ", kernel_size=" + tuple_repr(kernel_) +
                    ", stride=" + tuple_repr(stride_);
    // str.format prints a padding string bare (padding=same).
    if (!padding_str_.empty())
      s += ", padding=" + padding_str_;
    else if (!all_equal(padding_, 0))
      s += ", padding=" + tuple_repr(padding_);
    if (!all_equal(dilation_, 1)) s += ", dilation=" + tuple_repr(dilation_);
    if (!all_equal(output_padding_, 0)) s += ", output_padding=" + tuple_repr(output_padding_);
    if (groups_ != 1) s += ", groups=" + std::to_string(groups_);
    if (!params[1].t.defined()) s += ", bias=False";
    if (padding_mode_ != "zeros") s += ", padding_mode=" + padding_mode_;
    return s;
  }

  bool spec(Spec &s) const override {
    if (transposed_) return false;
    s.nd = nd_, s.stride = stride_, s.padding = padding_, s.dilation = dilation_, s.groups = groups_;
    s.padding_str = padding_str_, s.padding_mode = padding_mode_;
    return true;
  }

  CTORCH_NN_COPYABLE(Conv)

 private:
  // _ConvNd.reset_parameters: kaiming_uniform_(weight, a=sqrt(5)), then the
  // bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  void reset_parameters() {
    at::NoGradGuard ng;
    kaiming_uniform_(params[0].t, std::sqrt(5.0));
    if (params[1].t.defined()) {
      int64_t fi = fan_in(params[0].t);
      double bound = fi > 0 ? 1.0 / std::sqrt(static_cast<double>(fi)) : 0.0;
      uniform_(params[1].t, -bound, bound);
    }
  }

  at::Tensor conv(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b, const std::vector<int64_t> &pad) const {
    switch (nd_) {
      case 1: return at::conv1d(x, w, opt(b), stride_, pad, dilation_, groups_);
      case 2: return at::conv2d(x, w, opt(b), stride_, pad, dilation_, groups_);
      default: return at::conv3d(x, w, opt(b), stride_, pad, dilation_, groups_);
    }
  }

  // _ConvTransposeNd._output_padding: forward's output_size picks the
  // output padding that reaches it.
  std::vector<int64_t> output_padding(const at::Tensor &x, const Args &kw) const {
    if (kw.is_none("output_size")) return output_padding_;
    std::vector<int64_t> size = kw.ints("output_size");
    size_t n = nd_;
    bool batched = x.dim() == static_cast<int64_t>(n) + 2;
    size_t non_spatial = batched ? 2 : 1;
    if (size.size() == non_spatial + n) size.erase(size.begin(), size.begin() + non_spatial);
    if (size.size() != n)
      value_error("ConvTranspose" + std::to_string(n) + "D: for " + std::to_string(x.dim()) +
                  "D input, output_size must have " + std::to_string(n) + " or " + std::to_string(non_spatial + n) +
                  " elements (got " + std::to_string(size.size()) + ")");
    std::vector<int64_t> res(n), lo(n), hi(n);
    for (size_t d = 0; d < n; ++d) {
      lo[d] = (x.size(d + non_spatial) - 1) * stride_[d] - 2 * padding_[d] + dilation_[d] * (kernel_[d] - 1) + 1;
      hi[d] = lo[d] + stride_[d] - 1;
    }
    for (size_t d = 0; d < n; ++d)
      if (size[d] < lo[d] || size[d] > hi[d])
        value_error("requested an output size of " + tuple_repr(size) + ", but valid sizes range from " +
                    tuple_repr(lo) + " to " + tuple_repr(hi));
    for (size_t d = 0; d < n; ++d) res[d] = size[d] - lo[d];
    return res;
  }

  size_t nd_;
  bool transposed_;
  int64_t in_, out_, groups_;
  std::vector<int64_t> kernel_, stride_, padding_, dilation_, output_padding_, rev_pad_;
  std::string padding_str_, padding_mode_;
};

ModulePtr conv(const char *kind, const Args &a, size_t nd, bool transposed) {
  return std::make_shared<Conv>(kind, a, nd, transposed);
}

}  // namespace

// The signatures are written out in full for each kind: bindings-gen reads
// the three strings of every CTORCH_NN_KIND from the source text.
CTORCH_NN_KIND("Conv1d",
               "in_channels: int, out_channels: int, kernel_size: int[1], stride: int[1] = 1, padding: int[1]|str = 0, "
               "dilation: int[1] = 1, groups: int = 1, bias: bool = True, padding_mode: str = 'zeros', "
               "device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor -> Tensor", [](const Args &a) { return conv("Conv1d", a, 1, false); });
CTORCH_NN_KIND("Conv2d",
               "in_channels: int, out_channels: int, kernel_size: int[2], stride: int[2] = 1, padding: int[2]|str = 0, "
               "dilation: int[2] = 1, groups: int = 1, bias: bool = True, padding_mode: str = 'zeros', "
               "device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor -> Tensor", [](const Args &a) { return conv("Conv2d", a, 2, false); });
CTORCH_NN_KIND("Conv3d",
               "in_channels: int, out_channels: int, kernel_size: int[3], stride: int[3] = 1, padding: int[3]|str = 0, "
               "dilation: int[3] = 1, groups: int = 1, bias: bool = True, padding_mode: str = 'zeros', "
               "device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor -> Tensor", [](const Args &a) { return conv("Conv3d", a, 3, false); });
CTORCH_NN_KIND("ConvTranspose1d",
               "in_channels: int, out_channels: int, kernel_size: int[1], stride: int[1] = 1, padding: int[1] = 0, "
               "output_padding: int[1] = 0, groups: int = 1, bias: bool = True, dilation: int[1] = 1, "
               "padding_mode: str = 'zeros', device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor; output_size: int[]? = None -> Tensor",
               [](const Args &a) { return conv("ConvTranspose1d", a, 1, true); });
CTORCH_NN_KIND("ConvTranspose2d",
               "in_channels: int, out_channels: int, kernel_size: int[2], stride: int[2] = 1, padding: int[2] = 0, "
               "output_padding: int[2] = 0, groups: int = 1, bias: bool = True, dilation: int[2] = 1, "
               "padding_mode: str = 'zeros', device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor; output_size: int[]? = None -> Tensor",
               [](const Args &a) { return conv("ConvTranspose2d", a, 2, true); });
CTORCH_NN_KIND("ConvTranspose3d",
               "in_channels: int, out_channels: int, kernel_size: int[3], stride: int[3] = 1, padding: int[3] = 0, "
               "output_padding: int[3] = 0, groups: int = 1, bias: bool = True, dilation: int[3] = 1, "
               "padding_mode: str = 'zeros', device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor; output_size: int[]? = None -> Tensor",
               [](const Args &a) { return conv("ConvTranspose3d", a, 3, true); });

}  // namespace nn
}  // namespace ctorch
