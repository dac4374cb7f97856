// Private to the optimizer area: the optimizers libtorch lacks (NAdam, RAdam,
// Adamax, Adadelta) or has with other arithmetic (LBFGS), written as the
// installed PyTorch's Python single-tensor implementations do them, op for
// op, as torch::optim::Optimizer subclasses, so the rest of optim/ (groups,
// lr, schedules, save/load) treats them like libtorch's.
#pragma once

#include "optim_internal.h"

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>

#include <memory>
#include <vector>

namespace ctorch {
namespace optim {

// The kinds written here.
inline bool is_py_kind(ctorch_optimizer_kind k) { return k >= CTORCH_OPTIM_NADAM && k <= CTORCH_OPTIM_LBFGS; }

// A group's options: the C struct itself (and the kind it is for).
struct PyOptions : torch::optim::OptimizerCloneableOptions<PyOptions> {
  explicit PyOptions(double lr = 0) { o.lr = lr; }
  ctorch_optimizer_kind kind = CTORCH_OPTIM_NADAM;
  ctorch_optim_options_v2 o{};
  double get_lr() const override { return o.lr; }
  void set_lr(const double lr) override { o.lr = lr; }
  void serialize(torch::serialize::OutputArchive &archive) const override;
  void serialize(torch::serialize::InputArchive &archive) override;
};

// Per-parameter state of NAdam, RAdam, Adamax, Adadelta: the step count and
// two buffers (a, b: exp_avg and exp_avg_sq / exp_inf; Adadelta's
// square_avg and acc_delta), NAdam's mu_product (a float32 scalar tensor,
// as Python keeps it).
struct PyState : torch::optim::OptimizerCloneableParamState<PyState> {
  int64_t step = 0;
  at::Tensor a, b, mu_product;
  void serialize(torch::serialize::OutputArchive &archive) const override;
  void serialize(torch::serialize::InputArchive &archive) override;
};

// The names Python gives the buffers a and b of `kind`.
const char *state_name_a(ctorch_optimizer_kind kind);
const char *state_name_b(ctorch_optimizer_kind kind);

// Validates like the Python constructor of `kind` (message names the field).
std::unique_ptr<PyOptions> make_py_options(ctorch_optimizer_kind kind, const ctorch_optim_options_v2 &o);
// Builds an optimizer of a kind written here.
std::unique_ptr<torch::optim::Optimizer> construct_py(ctorch_optimizer_kind kind,
                                                      const std::vector<torch::optim::OptimizerParamGroup> &groups,
                                                      const torch::optim::OptimizerOptions &d);
// Gives each group of opt the options its entry in groups has: libtorch 2.x's
// add_param_group merges a group's options with the defaults field by field
// for its own option classes and loses PyOptions' fields (found by
// optim_vs_torch.py on 2.15.0: group 1 stepped with group 0's options).
void keep_group_options(torch::optim::Optimizer &opt, const std::vector<torch::optim::OptimizerParamGroup> &groups);
// LBFGS (optim_lbfgs.cpp). Its step needs a closure returning the loss.
std::unique_ptr<torch::optim::Optimizer> make_lbfgs(const std::vector<torch::optim::OptimizerParamGroup> &groups,
                                                    const PyOptions &d);

}  // namespace optim
}  // namespace ctorch
