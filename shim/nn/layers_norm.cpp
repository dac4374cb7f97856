// Normalisation: BatchNorm1d/2d/3d and InstanceNorm1d/2d/3d (torch.nn's
// _NormBase: weight, bias, then the buffers running_mean, running_var,
// num_batches_tracked, each None when its option is off), LayerNorm and
// GroupNorm. No random draws: reset_parameters fills ones and zeros.
// forward follows torch/nn/modules/batchnorm.py and instancenorm.py line
// by line (momentum=None's cumulative average, the num_batches_tracked
// increment, when the running stats are passed and used) and then calls
// the at:: op torch.nn.functional calls, with cudnn_enabled as Python's
// default (torch.backends.cudnn.enabled is True).
#include <mutex>

#include "module.h"
#include "layers_util.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/batch_norm.h>
#include <ATen/ops/group_norm.h>
#include <ATen/ops/instance_norm.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

namespace ctorch {
namespace nn {
namespace {

using layers::given_repr;
using layers::opt;
using layers::py_bool;
using layers::tuple_repr;
using layers::value_error;

std::string size_repr(at::IntArrayRef s) {
  std::string r = "torch.Size([";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "])";
}

// F._verify_batch_size: batch norm needs more than one value per channel.
void verify_batch_size(const std::vector<int64_t> &size, const std::string &shown) {
  int64_t prod = size[0];
  for (size_t i = 2; i < size.size(); ++i) prod *= size[i];
  if (prod == 1) value_error("Expected more than 1 value per channel when training, got input size " + shown);
}

// weight (and bias unless bias=False) when affine, else both None; filled
// as reset_parameters does (init.ones_, init.zeros_).
void register_affine(Module &m, bool affine, bool bias, int64_t n, const at::TensorOptions &o) {
  m.register_parameter("weight", affine ? at::ones({n}, o) : at::Tensor());
  m.register_parameter("bias", affine && bias ? at::zeros({n}, o) : at::Tensor());
}

// The text after "eps=..., affine=...": 2.15 prints whether there is a bias.
std::string bias_repr(const Module &m) {
  return CTORCH_NN_REPR_NORM_BIAS ? std::string(", bias=") + py_bool(m.params[1].t.defined()) : std::string();
}

// BatchNorm1d/2d/3d (instance = false) and InstanceNorm1d/2d/3d.
class Norm : public Module {
 public:
  Norm(const char *kind, const Args &a, size_t nd, bool instance)
      : Module(kind), nd_(nd), instance_(instance) {
    num_features_ = a.i("num_features");
    eps_ = a.f("eps");
    if (!a.is_none("momentum")) momentum_ = a.f("momentum");
    affine_ = a.b("affine");
    track_ = a.b("track_running_stats");
    at::TensorOptions o = a.factory();
    register_affine(*this, affine_, a.b("bias"), num_features_, o);
    if (track_) {
      register_buffer("running_mean", at::zeros({num_features_}, o));
      register_buffer("running_var", at::ones({num_features_}, o));
      // torch.tensor(0, dtype=torch.long, device=device): dtype= is not passed on.
      register_buffer("num_batches_tracked", at::zeros({}, o.dtype(at::kLong)));
    } else {
      register_buffer("running_mean", at::Tensor());
      register_buffer("running_var", at::Tensor());
      register_buffer("num_batches_tracked", at::Tensor());
    }
    repr_ = std::to_string(num_features_) + ", eps=" + given_repr(a, "eps") + ", momentum=" +
            given_repr(a, "momentum") + ", affine=" + py_bool(affine_) + bias_repr(*this) +
            ", track_running_stats=" + py_bool(track_);
  }

  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    // In training mode with running statistics, a forward writes the
    // module's buffers (num_batches_tracked += 1, the running mean and
    // variance in place, inside the kernel), past the storage-write holds
    // that guard in-place operators called through the C API. Forwards of
    // one module from several threads take turns here, so no update is
    // lost; the rest of each forward runs side by side. No caller's code
    // runs under the lock (these kernels call nothing back).
    std::unique_lock<std::mutex> hold(stats_.m, std::defer_lock);
    if (training && track_) hold.lock();
    return {instance_ ? instance_forward(in[0]) : batch_forward(in[0])};
  }
  std::string extra_repr() const override { return repr_; }
  bool spec(Spec &s) const override {
    if (instance_) return false;
    s.batch_norm_nd = nd_, s.eps = eps_;
    return true;
  }
  CTORCH_NN_COPYABLE(Norm)

 private:
  // _BatchNorm.forward
  at::Tensor batch_forward(const at::Tensor &x) {
    int64_t d = x.dim();
    if (nd_ == 1 && d != 2 && d != 3) value_error("expected 2D or 3D input (got " + std::to_string(d) + "D input)");
    if (nd_ > 1 && d != static_cast<int64_t>(nd_) + 2)
      value_error("expected " + std::to_string(nd_ + 2) + "D input (got " + std::to_string(d) + "D input)");
    double factor = momentum_ ? *momentum_ : 0.0;
    at::Tensor &nbt = buffers[2].t;
    if (training && track_ && nbt.defined()) {
      {
        at::NoGradGuard ng;
        nbt.add_(1);
      }
      // momentum=None: the cumulative moving average, 1 / batches seen.
      if (!momentum_) factor = 1.0 / static_cast<double>(nbt.item<int64_t>());
    }
    const at::Tensor &rm = buffers[0].t, &rv = buffers[1].t;
    bool use_batch_stats = training ? true : (!rm.defined() && !rv.defined());
    bool pass_stats = !training || track_;
    if (use_batch_stats) verify_batch_size(x.sizes().vec(), size_repr(x.sizes()));
#if CTORCH_TORCH_AT_LEAST(2, 15)
    // F.batch_norm's eps check, in 2.15.0's functional.py, not in 1.13.1's.
    if (use_batch_stats && eps_ <= 0.0)
      value_error("batch_norm eps must be positive during training, but got " + layers::float_repr(eps_));
    else if (eps_ < 0.0)
      value_error("batch_norm eps must be non-negative, but got " + layers::float_repr(eps_));
#endif
    return at::batch_norm(x, opt(params[0].t), opt(params[1].t), pass_stats ? opt(rm) : c10::nullopt,
                          pass_stats ? opt(rv) : c10::nullopt, use_batch_stats, factor, eps_, true);
  }

  // _InstanceNorm.forward
  at::Tensor instance_forward(const at::Tensor &x) {
    int64_t d = x.dim(), nb = static_cast<int64_t>(nd_) + 1;  // the unbatched rank
    if (d != nb && d != nb + 1)
      value_error("expected " + std::to_string(nb) + "D or " + std::to_string(nb + 1) + "D input (got " +
                  std::to_string(d) + "D input)");
#if CTORCH_TORCH_AT_LEAST(2, 15)
    // 2.15.0 checks the channel count up front when affine (1.13.1 leaves it
    // to the kernel); without affine Python only warns.
    int64_t fd = d - nb;
    if (affine_ && x.size(fd) != num_features_)
      value_error("expected input's size at dim=" + std::to_string(fd) + " to match num_features (" +
                  std::to_string(num_features_) + "), but got: " + std::to_string(x.size(fd)) + ".");
#endif
    if (d == nb) return apply_instance_norm(x.unsqueeze(0)).squeeze(0);
    return apply_instance_norm(x);
  }

  at::Tensor apply_instance_norm(const at::Tensor &x) {
    bool use_input_stats = training || !track_;
    if (use_input_stats) {
      int64_t prod = 1;
      for (int64_t i = 2; i < x.dim(); ++i) prod *= x.size(i);
      if (prod == 1)
        value_error("Expected more than 1 spatial element when training, got input size " + size_repr(x.sizes()));
    }
    return at::instance_norm(x, opt(params[0].t), opt(params[1].t), opt(buffers[0].t), opt(buffers[1].t),
                             use_input_stats, momentum_ ? *momentum_ : 0.0, eps_, true);
  }

  // The lock of the running statistics' updates; a copied module has its own.
  struct StatsLock {
    std::mutex m;
    StatsLock() = default;
    StatsLock(const StatsLock &) {}
    StatsLock &operator=(const StatsLock &) { return *this; }
  };

  StatsLock stats_;
  size_t nd_;
  bool instance_;
  int64_t num_features_;
  double eps_;
  c10::optional<double> momentum_;
  bool affine_, track_;
  std::string repr_;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(const Args &a) : Module("LayerNorm") {
    shape_ = a.ints("normalized_shape");
    eps_ = a.f("eps");
    bool affine = a.b("elementwise_affine");
    at::TensorOptions o = a.factory();
    register_parameter("weight", affine ? at::ones(shape_, o) : at::Tensor());
    register_parameter("bias", affine && a.b("bias") ? at::zeros(shape_, o) : at::Tensor());
    // normalized_shape is kept as tuple(normalized_shape).
    repr_ = tuple_repr(shape_) + ", eps=" + given_repr(a, "eps") + ", elementwise_affine=" + py_bool(affine) +
            bias_repr(*this);
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    return {at::layer_norm(in[0], shape_, opt(params[0].t), opt(params[1].t), eps_, true)};
  }
  std::string extra_repr() const override { return repr_; }
  CTORCH_NN_COPYABLE(LayerNorm)

 private:
  std::vector<int64_t> shape_;
  double eps_;
  std::string repr_;
};

class GroupNorm : public Module {
 public:
  explicit GroupNorm(const Args &a) : Module("GroupNorm") {
    groups_ = a.i("num_groups");
    int64_t channels = a.i("num_channels");
    if (groups_ <= 0 || channels % groups_ != 0)
      fail_arg("num_groups", "num_channels (" + std::to_string(channels) + ") must be divisible by num_groups (" +
                                 std::to_string(groups_) + ")");
    eps_ = a.f("eps");
    bool affine = a.b("affine");
    register_affine(*this, affine, a.b("bias"), channels, a.factory());
    repr_ = std::to_string(groups_) + ", " + std::to_string(channels) + ", eps=" + given_repr(a, "eps") +
            ", affine=" + py_bool(affine) + bias_repr(*this);
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    const at::Tensor &x = in[0];
    if (x.dim() < 2)
      fail(CTORCH_RUNTIME,
           "Expected at least 2 dimensions for input tensor but received " + std::to_string(x.dim()));
    std::vector<int64_t> s{x.size(0) * x.size(1) / groups_, groups_};
    for (int64_t i = 2; i < x.dim(); ++i) s.push_back(x.size(i));
    std::string shown = "[";
    for (size_t i = 0; i < s.size(); ++i) shown += (i ? ", " : "") + std::to_string(s[i]);
    verify_batch_size(s, shown + "]");
    return {at::group_norm(x, groups_, opt(params[0].t), opt(params[1].t), eps_, true)};
  }
  std::string extra_repr() const override { return repr_; }
  CTORCH_NN_COPYABLE(GroupNorm)

 private:
  int64_t groups_;
  double eps_;
  std::string repr_;
};

ModulePtr norm(const char *kind, const Args &a, size_t nd, bool instance) {
  return std::make_shared<Norm>(kind, a, nd, instance);
}

}  // namespace

// Signatures in full per kind: bindings-gen reads them from the source text.
// bias (keyword-only in Python 2.x, absent in 1.13) comes last.
CTORCH_NN_KIND("BatchNorm1d",
               "num_features: int, eps: float = 1e-05, momentum: float? = 0.1, affine: bool = True, "
               "track_running_stats: bool = True, device: Device? = None, dtype: ScalarType? = None, bias: bool = True",
               "input: Tensor -> Tensor", [](const Args &a) { return norm("BatchNorm1d", a, 1, false); });
CTORCH_NN_KIND("BatchNorm2d",
               "num_features: int, eps: float = 1e-05, momentum: float? = 0.1, affine: bool = True, "
               "track_running_stats: bool = True, device: Device? = None, dtype: ScalarType? = None, bias: bool = True",
               "input: Tensor -> Tensor", [](const Args &a) { return norm("BatchNorm2d", a, 2, false); });
CTORCH_NN_KIND("BatchNorm3d",
               "num_features: int, eps: float = 1e-05, momentum: float? = 0.1, affine: bool = True, "
               "track_running_stats: bool = True, device: Device? = None, dtype: ScalarType? = None, bias: bool = True",
               "input: Tensor -> Tensor", [](const Args &a) { return norm("BatchNorm3d", a, 3, false); });
CTORCH_NN_KIND("InstanceNorm1d",
               "num_features: int, eps: float = 1e-05, momentum: float? = 0.1, affine: bool = False, "
               "track_running_stats: bool = False, device: Device? = None, dtype: ScalarType? = None, bias: bool = True",
               "input: Tensor -> Tensor", [](const Args &a) { return norm("InstanceNorm1d", a, 1, true); });
CTORCH_NN_KIND("InstanceNorm2d",
               "num_features: int, eps: float = 1e-05, momentum: float? = 0.1, affine: bool = False, "
               "track_running_stats: bool = False, device: Device? = None, dtype: ScalarType? = None, bias: bool = True",
               "input: Tensor -> Tensor", [](const Args &a) { return norm("InstanceNorm2d", a, 2, true); });
CTORCH_NN_KIND("InstanceNorm3d",
               "num_features: int, eps: float = 1e-05, momentum: float? = 0.1, affine: bool = False, "
               "track_running_stats: bool = False, device: Device? = None, dtype: ScalarType? = None, bias: bool = True",
               "input: Tensor -> Tensor", [](const Args &a) { return norm("InstanceNorm3d", a, 3, true); });
CTORCH_NN_KIND("LayerNorm",
               "normalized_shape: int[], eps: float = 1e-05, elementwise_affine: bool = True, bias: bool = True, "
               "device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor -> Tensor", [](const Args &a) { return std::make_shared<LayerNorm>(a); });
CTORCH_NN_KIND("GroupNorm",
               "num_groups: int, num_channels: int, eps: float = 1e-05, affine: bool = True, "
               "device: Device? = None, dtype: ScalarType? = None, bias: bool = True",
               "input: Tensor -> Tensor", [](const Args &a) { return std::make_shared<GroupNorm>(a); });

}  // namespace nn
}  // namespace ctorch
