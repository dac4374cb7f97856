// Stands in for libtorch's private header of this path, which Debian's
// libtorch-dev 1.13.1 does not ship although its c10d/reducer.hpp includes
// it. The build adds this folder to the include path only where the real
// header is missing (CMakeLists.txt), so a libtorch that ships it uses its
// own.
//
// reducer.hpp needs two names from it: the gradient callback type, which it
// checks against its own with a static_assert, and the context pointer type,
// which it holds as a member. Both are declared here as libtorch declares
// them; ctorch only holds the pointer (the Reducer's constructor and
// destructor, compiled into libtorch, are the only code that touches it), so
// the class itself stays incomplete to ctorch.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>

namespace torch {
namespace distributed {
namespace autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor &)>;
};

using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace autograd
}  // namespace distributed
}  // namespace torch
