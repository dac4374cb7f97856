// Private to the optimizer area: the optimizer handle, shared by optim.cpp
// (the optimizers) and optim_state.cpp (PyTorch-format state dicts).
#pragma once

#include "core/exclusive.h"
#include "core/internal.h"

#include <torch/optim/optimizer.h>

#include <memory>
#include <string>
#include <vector>

namespace ctorch {
namespace optim {

struct Optim {
  ctorch_optimizer_kind kind;
  std::unique_ptr<torch::optim::Optimizer> opt;
  // Python's group['initial_lr'], per group, set by the first scheduler
  // made on the optimizer (schedules.cpp) and shared by the later ones.
  std::vector<double> initial_lr;
  // Other keys a scheduler keeps in Python's param groups, per group, in
  // Python's order (OneCycleLR: max_lr, min_lr, max_momentum, base_momentum;
  // its get_lr reads them from the group, so a state file without them
  // breaks Python's sched.step() after a resume). Written by
  // state_dict_value after 'initial_lr'.
  std::vector<std::vector<std::pair<std::string, double>>> group_keys;
  // How steps run (ctorch_optimizer_set_implementation; optim_foreach.cpp).
  ctorch_optim_impl impl = CTORCH_OPTIM_IMPL_DEFAULT;
  // Held by every call on the optimizer and by its schedulers' calls
  // (core/exclusive.h): concurrent use gets CTORCH_BUSY.
  Busy busy;
  // The parameters' gradient accumulators, kept alive between steps
  // (GradLocks' keeper, core/exclusive.h).
  std::vector<std::shared_ptr<void>> grad_nodes;
};

// Builds an optimizer of `kind` over param groups (groups without options
// take the defaults' copy, as libtorch does).
std::unique_ptr<torch::optim::Optimizer> construct(ctorch_optimizer_kind kind,
                                                   const std::vector<torch::optim::OptimizerParamGroup> &groups,
                                                   const torch::optim::OptimizerOptions &d);
// Validates the options like PyTorch's Python constructors and builds libtorch's.
std::unique_ptr<torch::optim::OptimizerOptions> make_options(ctorch_optimizer_kind kind, const ctorch_optim_options_v2 &o);
// The defaults of a kind (ctorch_optim_options_default).
ctorch_optim_options_v2 defaults(ctorch_optimizer_kind kind);
// PyTorch's class name of a kind ("Adam", "RAdam"), for messages; "optimizer"
// for a value outside the enum.
const char *kind_name(ctorch_optimizer_kind kind);
// Refuses (VALUE, `where` + which parameter and buffer) loaded per-parameter
// state a step would trust: undefined where the step reads it, or not shaped,
// typed and placed like its parameter (optim_state.cpp).
void check_loaded_state(ctorch_optimizer_kind kind, torch::optim::Optimizer &opt, const std::string &where);
// A group's options as the C struct.
ctorch_optim_options_v2 read_options(ctorch_optimizer_kind kind, const torch::optim::OptimizerOptions &base);

}  // namespace optim
}  // namespace ctorch

struct ctorch_optimizer_s {
  std::shared_ptr<ctorch::optim::Optim> o;
  ctorch::Live<ctorch_optimizer_s> live{this};  // last: see core/internal.h
};

namespace ctorch {
namespace optim {
// The optimizer behind a handle; INVALID_ARGUMENT naming 'opt' if NULL.
Optim &require_opt(ctorch_optimizer opt);
// The optimizer behind a handle, held for the life of this object: an entry
// point's `Held h(opt); Optim &o = h.o;` (BUSY if another thread holds it).
struct Held {
  explicit Held(ctorch_optimizer opt, const char *arg = "opt") : o(require_opt(opt)), x(o.busy, arg, opt) {}
  Optim &o;
  Exclusive x;
};
// Every parameter of every group of o, in order.
std::vector<at::Tensor> all_params(Optim &o);
}  // namespace optim
struct PV;
using P = std::shared_ptr<PV>;
namespace optim {
// What o's next step runs: DEFAULT resolved (FOR_LOOP, FOREACH or FUSED).
ctorch_optim_impl resolved_impl(const Optim &o);
// One step of o in its foreach or fused form (optim_foreach.cpp); false when
// the resolved implementation is FOR_LOOP (the caller steps o.opt itself).
bool step_multi_tensor(Optim &o);
// Python's optimizer.state_dict() (optim_state.cpp; SGD, Adam, AdamW, else
// NOT_IMPLEMENTED).
P state_dict_value(Optim &o);
// A new optimizer holding the state dict `root` (checked against o; `in`
// names the file in messages); o is unchanged until the caller assigns
// o.opt = the result.
std::unique_ptr<torch::optim::Optimizer> state_dict_check(Optim &o, const P &root, const std::string &in);
}  // namespace optim
}  // namespace ctorch
