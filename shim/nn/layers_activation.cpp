// Activations: PReLU, LeakyReLU, GELU, SiLU, ELU, Hardswish, Mish, Tanh,
// Sigmoid, Softmax, LogSoftmax (torch/nn/modules/activation.py). Only
// PReLU has a parameter (weight, filled with `init`, no random draw). The
// others are one at:: call chosen at construction, the one
// torch.nn.functional makes (the in-place variant when inplace=True), with
// Python's extra_repr text.
#include "module.h"
#include "layers_util.h"

#include <ATen/ops/elu.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/hardswish.h>
#include <ATen/ops/leaky_relu.h>
#include <ATen/ops/log_softmax.h>
#include <ATen/ops/mish.h>
#include <ATen/ops/prelu.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/tanh.h>
#include <ATen/core/grad_mode.h>

#include <functional>

namespace ctorch {
namespace nn {
namespace {

using layers::given_repr;

// A parameterless module whose forward is one function of its input.
class Pointwise : public Module {
 public:
  using Fn = std::function<at::Tensor(const at::Tensor &)>;
  Pointwise(const char *kind, Fn fn, std::string repr) : Module(kind), fn_(std::move(fn)), repr_(std::move(repr)) {}
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override { return {fn_(in[0])}; }
  std::string extra_repr() const override { return repr_; }
  CTORCH_NN_COPYABLE(Pointwise)

 private:
  Fn fn_;
  std::string repr_;
};

ModulePtr pointwise(const char *kind, Pointwise::Fn fn, std::string repr = "") {
  return std::make_shared<Pointwise>(kind, std::move(fn), std::move(repr));
}

// ", inplace=True" after other options, "inplace=True" alone; "" when off.
std::string inplace_repr(bool inplace, bool alone) {
  return inplace ? (alone ? "inplace=True" : ", inplace=True") : "";
}

// F.silu, F.mish, F.hardswish: the out-of-place op or its in-place twin.
ModulePtr inplace_only(const char *kind, const Args &a, at::Tensor (*op)(const at::Tensor &),
                       at::Tensor &(*op_)(at::Tensor &), bool shows_inplace) {
  bool inplace = a.b("inplace");
  Pointwise::Fn fn;
  if (inplace)
    fn = [op_](const at::Tensor &x) {
      at::Tensor y = x;
      return op_(y);
    };
  else
    fn = [op](const at::Tensor &x) { return op(x); };
  return pointwise(kind, fn, shows_inplace ? inplace_repr(inplace, true) : "");
}

// F._get_softmax_dim: the implicit dim of softmax(dim=None) (deprecated in Python, which warns).
int64_t softmax_dim(const at::Tensor &x, const c10::optional<int64_t> &dim) {
  if (dim) return *dim;
  int64_t n = x.dim();
  return (n == 0 || n == 1 || n == 3) ? 0 : 1;
}

ModulePtr softmax(const char *kind, const Args &a, bool log) {
  c10::optional<int64_t> dim;
  if (!a.is_none("dim")) dim = a.i("dim");
  Pointwise::Fn fn;
  if (log)
    fn = [dim](const at::Tensor &x) { return at::log_softmax(x, softmax_dim(x, dim)); };
  else
    fn = [dim](const at::Tensor &x) { return at::softmax(x, softmax_dim(x, dim)); };
  return pointwise(kind, fn, "dim=" + given_repr(a, "dim"));
}

class PReLU : public Module {
 public:
  explicit PReLU(const Args &a) : Module("PReLU") {
    int64_t n = a.i("num_parameters");
    register_parameter("weight", at::empty({n}, a.factory()));
    // reset_parameters: init.constant_(weight, init).
    at::NoGradGuard ng;
    params[0].t.fill_(a.f("init"));
    repr_ = "num_parameters=" + std::to_string(n);
  }
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    return {at::prelu(in[0], params[0].t)};
  }
  std::string extra_repr() const override { return repr_; }
  CTORCH_NN_COPYABLE(PReLU)

 private:
  std::string repr_;
};

ModulePtr leaky_relu(const Args &a) {
  double slope = a.f("negative_slope");
  bool inplace = a.b("inplace");
  Pointwise::Fn fn;
  if (inplace)
    fn = [slope](const at::Tensor &x) {
      at::Tensor y = x;
      return at::leaky_relu_(y, slope);
    };
  else
    fn = [slope](const at::Tensor &x) { return at::leaky_relu(x, slope); };
  return pointwise("LeakyReLU", fn, "negative_slope=" + given_repr(a, "negative_slope") + inplace_repr(inplace, false));
}

ModulePtr elu(const Args &a) {
  double alpha = a.f("alpha");
  bool inplace = a.b("inplace");
  Pointwise::Fn fn;
  if (inplace)
    fn = [alpha](const at::Tensor &x) {
      at::Tensor y = x;
      return at::elu_(y, alpha);
    };
  else
    fn = [alpha](const at::Tensor &x) { return at::elu(x, alpha); };
  return pointwise("ELU", fn, "alpha=" + given_repr(a, "alpha") + inplace_repr(inplace, false));
}

ModulePtr gelu(const Args &a) {
  std::string approximate = a.s("approximate");
  // GELU's own check (at::gelu names the value too, but as a RuntimeError).
  if (approximate != "none" && approximate != "tanh")
    fail_arg("approximate", "approximate argument must be either none or tanh.");
  return pointwise("GELU", [approximate](const at::Tensor &x) { return at::gelu(x, approximate); },
                   "approximate=" + given_repr(a, "approximate"));
}

// The in-place ops' C++ signatures differ between libtorch versions
// (const Tensor & in 2.x, Tensor & in 1.13); these wrappers fix one type.
at::Tensor silu(const at::Tensor &x) { return at::silu(x); }
at::Tensor &silu_(at::Tensor &x) { return at::silu_(x); }
at::Tensor mish(const at::Tensor &x) { return at::mish(x); }
at::Tensor &mish_(at::Tensor &x) { return at::mish_(x); }
at::Tensor hardswish(const at::Tensor &x) { return at::hardswish(x); }
at::Tensor &hardswish_(at::Tensor &x) { return at::hardswish_(x); }

}  // namespace

// Signatures in full per kind: bindings-gen reads them from the source text.
CTORCH_NN_KIND("PReLU", "num_parameters: int = 1, init: float = 0.25, device: Device? = None, dtype: ScalarType? = None",
               "input: Tensor -> Tensor", [](const Args &a) { return std::make_shared<PReLU>(a); });
CTORCH_NN_KIND("LeakyReLU", "negative_slope: float = 0.01, inplace: bool = False", "input: Tensor -> Tensor",
               [](const Args &a) { return leaky_relu(a); });
CTORCH_NN_KIND("GELU", "approximate: str = 'none'", "input: Tensor -> Tensor", [](const Args &a) { return gelu(a); });
CTORCH_NN_KIND("SiLU", "inplace: bool = False", "input: Tensor -> Tensor",
               [](const Args &a) { return inplace_only("SiLU", a, silu, silu_, true); });
CTORCH_NN_KIND("ELU", "alpha: float = 1.0, inplace: bool = False", "input: Tensor -> Tensor",
               [](const Args &a) { return elu(a); });
// Hardswish has no extra_repr in Python: inplace=True does not show.
CTORCH_NN_KIND("Hardswish", "inplace: bool = False", "input: Tensor -> Tensor",
               [](const Args &a) { return inplace_only("Hardswish", a, hardswish, hardswish_, false); });
CTORCH_NN_KIND("Mish", "inplace: bool = False", "input: Tensor -> Tensor",
               [](const Args &a) { return inplace_only("Mish", a, mish, mish_, true); });
CTORCH_NN_KIND("Tanh", "", "input: Tensor -> Tensor",
               [](const Args &) { return pointwise("Tanh", [](const at::Tensor &x) { return at::tanh(x); }); });
CTORCH_NN_KIND("Sigmoid", "", "input: Tensor -> Tensor",
               [](const Args &) { return pointwise("Sigmoid", [](const at::Tensor &x) { return at::sigmoid(x); }); });
CTORCH_NN_KIND("Softmax", "dim: int? = None", "input: Tensor -> Tensor",
               [](const Args &a) { return softmax("Softmax", a, false); });
CTORCH_NN_KIND("LogSoftmax", "dim: int? = None", "input: Tensor -> Tensor",
               [](const Args &a) { return softmax("LogSoftmax", a, true); });

}  // namespace nn
}  // namespace ctorch
