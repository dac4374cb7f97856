// Sequential, ModuleList, ModuleDict (torch/nn/modules/container.py).
// Built empty by ctorch_nn_new; children come with ctorch_nn_module_append
// (indices "0", "1", ...) or ctorch_nn_module_register_module (ModuleDict's
// keys), which is how Python's constructors fill them too.
#include "nn/module.h"

namespace ctorch {
namespace nn {
namespace {

// forward chains the children through Module::call (which names the failing
// child and records shapes for ctorch_nn_module_shape_check); no children:
// the input itself, as Python's loop over nothing returns it.
class Sequential : public Module {
 public:
  explicit Sequential(const Args &) : Module("Sequential") {}
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &in, const Args &) override {
    at::Tensor x = in[0];
    for (size_t k = 0; k < children.size(); ++k) x = call(k, x);
    return {x};
  }
  CTORCH_NN_COPYABLE(Sequential)
};

CTORCH_NN_KIND("Sequential", "", "input: Tensor -> Tensor",
               [](const Args &a) { return std::make_shared<Sequential>(a); });

// ModuleList and ModuleDict hold modules; calling them is an error in Python
// (Module's _forward_unimplemented), and so here.
class Holder : public Module {
 public:
  Holder(const char *kind) : Module(kind) {}
  std::vector<at::Tensor> forward(const std::vector<at::Tensor> &, const Args &) override {
    fail(CTORCH_NOT_IMPLEMENTED, "Module [" + kind() + "] is missing the required \"forward\" function");
  }
  CTORCH_NN_COPYABLE(Holder)
};

// An empty forward signature: no inputs are checked, the call fails above.
CTORCH_NN_KIND("ModuleList", "", "", [](const Args &) { return std::make_shared<Holder>("ModuleList"); });
CTORCH_NN_KIND("ModuleDict", "", "", [](const Args &) { return std::make_shared<Holder>("ModuleDict"); });

}  // namespace
}  // namespace nn
}  // namespace ctorch
