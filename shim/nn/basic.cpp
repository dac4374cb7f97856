// The modules the core needs for its own tests and that every model uses:
// Linear, Identity, Flatten, ReLU (torch/nn/modules/linear.py, flatten.py,
// activation.py), with Python's registration order, init and extra_repr.
#include "nn/module.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/flatten.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/relu.h>

#include <cmath>

namespace ctorch {
namespace nn {
namespace {

class Linear : public Module {
 public:
  explicit Linear(const Args &a) : Module("Linear") {
    in_ = a.i("in_features");
    out_ = a.i("out_features");
    if (in_ < 0 || out_ < 0)
      fail(CTORCH_INVALID_ARGUMENT, "Linear: in_features and out_features must be >= 0, got " + std::to_string(in_) +
                                        " and " + std::to_string(out_));
    at::TensorOptions o = a.factory();
    register_parameter("weight", at::empty({out_, in_}, o));
    register_parameter("bias", a.b("bias") ? at::empty({out_}, o) : at::Tensor());
    reset_parameters();
  }
  // reset_parameters(): kaiming_uniform_(weight, a=sqrt(5)), then the bias
  // from U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  void reset_parameters() {
    kaiming_uniform_(params[0].t, std::sqrt(5.0));
    if (params[1].t.defined()) {
      int64_t fi = fan_in(params[0].t);
      double bound = fi > 0 ? 1 / std::sqrt(static_cast<double>(fi)) : 0;
      uniform_(params[1].t, -bound, bound);
    }
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    return {at::linear(in[0], params[0].t, params[1].t)};
  }
  std::string extra_repr() const override {
    return "in_features=" + std::to_string(in_) + ", out_features=" + std::to_string(out_) +
           ", bias=" + (params[1].t.defined() ? "True" : "False");
  }
  CTORCH_NN_COPYABLE(Linear)

 private:
  int64_t in_, out_;
};

CTORCH_NN_KIND("Linear",
               "in_features: int, out_features: int, bias: bool = True, device: Device? = None, "
               "dtype: ScalarType? = None",
               "input: Tensor -> Tensor", [](const Args &a) { return std::make_shared<Linear>(a); });

// Python's Identity takes and ignores any arguments; here none (there is
// nothing to configure, and a typo should not pass silently).
class Identity : public Module {
 public:
  explicit Identity(const Args &) : Module("Identity") {}
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override { return {in[0]}; }
  CTORCH_NN_COPYABLE(Identity)
};

CTORCH_NN_KIND("Identity", "", "input: Tensor -> Tensor", [](const Args &a) { return std::make_shared<Identity>(a); });

class Flatten : public Module {
 public:
  explicit Flatten(const Args &a) : Module("Flatten"), start_(a.i("start_dim")), end_(a.i("end_dim")) {}
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    return {in[0].flatten(start_, end_)};
  }
  std::string extra_repr() const override {
    return "start_dim=" + std::to_string(start_) + ", end_dim=" + std::to_string(end_);
  }
  CTORCH_NN_COPYABLE(Flatten)

 private:
  int64_t start_, end_;
};

CTORCH_NN_KIND("Flatten", "start_dim: int = 1, end_dim: int = -1", "input: Tensor -> Tensor",
               [](const Args &a) { return std::make_shared<Flatten>(a); });

class ReLU : public Module {
 public:
  explicit ReLU(const Args &a) : Module("ReLU"), inplace_(a.b("inplace")) {}
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    if (inplace_) {
      at::Tensor x = in[0];
      return {at::relu_(x)};
    }
    return {at::relu(in[0])};
  }
  std::string extra_repr() const override { return inplace_ ? "inplace=True" : ""; }
  CTORCH_NN_COPYABLE(ReLU)

 private:
  bool inplace_;
};

CTORCH_NN_KIND("ReLU", "inplace: bool = False", "input: Tensor -> Tensor",
               [](const Args &a) { return std::make_shared<ReLU>(a); });

}  // namespace
}  // namespace nn
}  // namespace ctorch
