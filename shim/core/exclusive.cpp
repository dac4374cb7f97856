// GradLocks (exclusive.h): the gradient-accumulator locks an optimizer step
// and a zero_grad take so that a concurrent backward waits for them.
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#define CTORCH_COMPAT_AUTOGRAD_NODE
#include "compat/compat.h"
#include "exclusive.h"

#include <algorithm>

namespace {

// Node::mutex_ is protected; a member pointer named through a derived class
// reaches it (the lock AccumulateGrad::apply takes before writing .grad, in
// libtorch 1.13 and 2.x alike).
struct NodeMutex : torch::autograd::Node {
  static std::mutex &of(torch::autograd::Node &n) { return n.*(&NodeMutex::mutex_); }
};

}  // namespace

namespace ctorch {

GradLocks::GradLocks(const std::vector<at::Tensor> &tensors, std::vector<std::shared_ptr<void>> *keep) {
  using compat::NodePtr;
  std::vector<NodePtr> acc;
  acc.reserve(tensors.size());
  for (const at::Tensor &t : tensors) {
    if (!t.defined() || !t.requires_grad() || !t.is_leaf()) continue;
    NodePtr a;
    try {
      a = torch::autograd::impl::grad_accumulator(t);
    } catch (const std::exception &) {
      continue;  // not a leaf after all: it has no .grad a backward writes
    }
    if (a) acc.push_back(std::move(a));
  }
  // One lock per accumulator, in address order: two steps over shared
  // parameters then lock in the same order (a backward holds one at a time).
  auto addr = [](const NodePtr &a, const NodePtr &b) { return a.get() < b.get(); };
  std::sort(acc.begin(), acc.end(), addr);
  acc.erase(std::unique(acc.begin(), acc.end(), [](const NodePtr &a, const NodePtr &b) { return a.get() == b.get(); }),
            acc.end());
  nodes_.reserve(acc.size());
  locked_.reserve(acc.size());
  for (auto &a : acc) {
    std::mutex &m = NodeMutex::of(*a);
    m.lock();
    locked_.push_back(&m);
    nodes_.push_back(std::make_shared<NodePtr>(std::move(a)));  // type-erased owner
  }
  if (keep) *keep = nodes_;
}

GradLocks::~GradLocks() {
  for (auto it = locked_.rbegin(); it != locked_.rend(); ++it) (*it)->unlock();
}

}  // namespace ctorch
