// Gradient checkpointing (ctorch_nn_checkpoint, ctorch_nn_checkpoint_sequential):
// torch.utils.checkpoint with use_reentrant=False's semantics.
//
// How: one custom autograd node per checkpointed run of modules. Its forward
// runs the modules with grad recording off (torch::autograd::Function::apply
// turns it off), so none of their activations is kept: the node saves only
// the run's input. Its backward runs them again with grad recording on and
// differentiates that recomputed graph with torch::autograd::grad, with
// respect to the input AND the run's parameters, which are inputs of the node
// too. Python's use_reentrant=False swaps saved tensors through
// saved_tensors_hooks, which libtorch's C++ API only offers with Python
// objects (1.13 and 2.15 alike: at::SavedTensorDefaultHooks holds PyObject
// hooks), so the node is how C++ gets the same contract: parameters' gradients
// come back through the outer graph (so ctorch_autograd_grad works, and
// .grad is accumulated by the outer engine once), not accumulated by an inner
// backward as the reentrant variant does. The recompute runs the same kernels
// on the same values, so gradients are bit-identical to the plain forward's
// and to Python's checkpoint.
#define CTORCH_COMPAT_AUTOCAST
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#include "core/internal.h"
#include "nn/nn_internal.h"

#include <ATen/Context.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <mutex>

// A named namespace, not an anonymous one: the folder's files are compiled
// together in unity batches, where file-local names could collide.
namespace ctorch_checkpoint {

using ctorch::fail_arg;
namespace nn = ctorch::nn;

constexpr const char *kRunKey = "ctorch_checkpoint_run";

// One default generator's state, saved for the recompute (Python's
// preserve_rng_state: torch.get_rng_state(), and torch.cuda.get_rng_state()
// for the CUDA devices of the inputs).
struct RngState {
  at::Generator gen;
  at::Tensor state;
};

at::Tensor get_state(at::Generator &g) {
  std::lock_guard<std::mutex> lock(g.mutex());
  return g.get_state();
}
void set_state(at::Generator &g, const at::Tensor &s) {
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_state(s);
}

// Sets the saved states for the recompute and puts the generators back as
// they were when it ends, also when it throws (Python's fork_rng).
class RngFork {
 public:
  explicit RngFork(const std::vector<RngState> &saved) {
    for (const auto &s : saved) {
      RngState now{s.gen, get_state(const_cast<at::Generator &>(s.gen))};
      set_state(const_cast<at::Generator &>(s.gen), s.state);
      restore_.push_back(std::move(now));
    }
  }
  ~RngFork() {
    for (auto &s : restore_) {
      try {
        set_state(s.gen, s.state);
      } catch (...) {  // a state it gave us a moment ago: cannot fail in practice
      }
    }
  }
  RngFork(const RngFork &) = delete;
  RngFork &operator=(const RngFork &) = delete;

 private:
  std::vector<RngState> restore_;
};

// The autocast state of the forward, used again for the recompute (Python
// records the device's and the CPU's autocast arguments and re-enters them).
struct AutocastState {
  bool cpu_on = false, cuda_on = false;
  at::ScalarType cpu_dtype = at::kBFloat16, cuda_dtype = at::kHalf;
  static AutocastState now() {
    namespace c = ctorch::compat;
    return {c::autocast_enabled(c10::DeviceType::CPU), c::autocast_enabled(c10::DeviceType::CUDA),
            c::autocast_dtype(c10::DeviceType::CPU), c::autocast_dtype(c10::DeviceType::CUDA)};
  }
  void set() const {
    namespace c = ctorch::compat;
    c::set_autocast_enabled(c10::DeviceType::CPU, cpu_on);
    c::set_autocast_enabled(c10::DeviceType::CUDA, cuda_on);
    c::set_autocast_dtype(c10::DeviceType::CPU, cpu_dtype);
    c::set_autocast_dtype(c10::DeviceType::CUDA, cuda_dtype);
  }
};
class AutocastScope {
 public:
  explicit AutocastScope(const AutocastState &s) : before_(AutocastState::now()) { s.set(); }
  ~AutocastScope() {
    try {
      before_.set();
    } catch (...) {
    }
  }

 private:
  AutocastState before_;
};

// What one checkpointed run needs in backward: the modules (children
// [first, last] of `owner`, or `owner` itself when `whole`), the number of
// parameters passed to the node after the input, and the saved states.
struct Run : torch::CustomClassHolder {
  nn::ModulePtr owner;
  bool whole = true;
  size_t first = 0, last = 0;
  size_t n_params = 0;
  std::vector<RngState> rng;
  AutocastState autocast;

  at::Tensor forward(const at::Tensor &x) const {
    if (whole) {
      std::vector<at::Tensor> res = nn::run_forward(*owner, {x}, nullptr);
      if (res.empty()) ctorch::fail(CTORCH_VALUE, owner->kind() + ".forward returned no output");
      return res[0];
    }
    at::Tensor y = x;
    for (size_t i = first; i <= last; ++i) y = owner->call(i, y);
    return y;
  }
};

struct CheckpointFn : torch::autograd::Function<CheckpointFn> {
  // all = [input, parameters...]
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext *ctx, at::TensorList all,
                                                const c10::intrusive_ptr<Run> &run) {
    ctx->saved_data[kRunKey] = c10::IValue::make_capsule(run);
    ctx->save_for_backward({all[0]});
    return {run->forward(all[0])};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto cap = ctx->saved_data.at(kRunKey).toCapsule();
    const Run &run = *static_cast<Run *>(cap.get());
    at::Tensor x = ctx->get_saved_variables()[0];
    // The recompute's own leaf: gradients stop at it, and the outer graph
    // carries them on from this node.
    at::Tensor xd = x.detach();
    xd.requires_grad_(x.requires_grad());
    at::Tensor y;
    {
      RngFork fork(run.rng);
      AutocastScope ac(run.autocast);
      at::AutoGradMode on(true);
      y = run.forward(xd);
    }
    std::vector<at::Tensor> wrt;
    std::vector<size_t> slot;  // index in the node's inputs of each wrt entry
    if (xd.requires_grad()) wrt.push_back(xd), slot.push_back(0);
    torch::autograd::variable_list result(run.n_params + 2);  // input, parameters, the run (non-tensor)
    std::vector<at::Tensor> ps = run_params(run);
    for (size_t i = 0; i < ps.size(); ++i) wrt.push_back(ps[i]), slot.push_back(1 + i);
    if (wrt.empty() || !y.requires_grad()) return result;
    // create_graph when the caller's backward records (grad mode is on in a
    // backward only then), as autograd does for a built-in node.
    bool create = at::GradMode::is_enabled();
    auto grads = torch::autograd::grad({y}, wrt, {grad_out[0]}, create, create, /*allow_unused=*/true);
    for (size_t i = 0; i < grads.size(); ++i) result[slot[i]] = grads[i];
    return result;
  }

  // The parameters given to the node, in its input order (run_params below).
  static std::vector<at::Tensor> run_params(const Run &run);
};

// The parameters of the run's modules that require grad, each once.
std::vector<at::Tensor> params_of(const Run &run) {
  std::vector<at::Tensor> out;
  auto add = [&](nn::Module &m) {
    for (auto &kv : nn::named_tensors(m, /*params=*/true, /*recurse=*/true))
      if (kv.second.requires_grad()) {
        bool seen = false;
        for (auto &o : out) seen = seen || o.is_same(kv.second);
        if (!seen) out.push_back(kv.second);
      }
  };
  if (run.whole) add(*run.owner);
  else
    for (size_t i = run.first; i <= run.last; ++i) add(*run.owner->children[i].second);
  return out;
}
std::vector<at::Tensor> CheckpointFn::run_params(const Run &run) {
  // The set of parameters is fixed at forward: a module changed since (a
  // parameter replaced) is the caller's error, refused rather than misread.
  std::vector<at::Tensor> p = params_of(run);
  if (p.size() != run.n_params)
    ctorch::fail(CTORCH_RUNTIME, "checkpointed modules changed their parameters between forward and backward");
  return p;
}

at::Tensor checkpoint(c10::intrusive_ptr<Run> run, const at::Tensor &x, uint32_t flags) {
  // Without grad recording there is nothing to save or recompute (Python
  // runs the function plainly then too).
  if (!at::GradMode::is_enabled()) return run->forward(x);
  std::vector<at::Tensor> all{x};
  for (auto &p : params_of(*run)) all.push_back(p);
  run->n_params = all.size() - 1;
  if (!(flags & CTORCH_CHECKPOINT_NO_RNG_STATE)) {
    at::Generator cpu = at::globalContext().defaultGenerator(c10::DeviceType::CPU);
    run->rng.push_back({cpu, get_state(cpu)});
    if (x.is_cuda()) {
      at::Generator g = at::globalContext().defaultGenerator(x.device());
      run->rng.push_back({g, get_state(g)});
    }
  }
  run->autocast = AutocastState::now();
  return CheckpointFn::apply(at::TensorList(all), run)[0];
}

void check_flags(uint32_t flags) {
  if (flags & ~CTORCH_CHECKPOINT_NO_RNG_STATE)
    fail_arg("flags", "unknown bits 0x" + c10::str(std::hex, flags & ~CTORCH_CHECKPOINT_NO_RNG_STATE) +
                          " (only CTORCH_CHECKPOINT_NO_RNG_STATE is defined)");
}

}  // namespace ctorch_checkpoint

extern "C" {

CTORCH_API ctorch_status ctorch_nn_checkpoint(ctorch_tensor *out, ctorch_nn_module m, ctorch_tensor input,
                                              uint32_t flags) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(m, "m");
  ctorch::require_tensor(input, "input");
  ctorch_checkpoint::check_flags(flags);
  auto run = c10::make_intrusive<ctorch_checkpoint::Run>();
  run->owner = m->m;
  ctorch::nn::reset_error_path();
  *out = ctorch::give(ctorch_checkpoint::checkpoint(run, ctorch::own(input), flags));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_nn_checkpoint_sequential(ctorch_tensor *out, ctorch_nn_module seq, size_t segments,
                                                         ctorch_tensor input, uint32_t flags) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(seq, "seq");
  ctorch::require_tensor(input, "input");
  ctorch_checkpoint::check_flags(flags);
  const ctorch::nn::ModulePtr &owner = seq->m;
  size_t n = owner->children.size();
  if (segments < 1 || segments > n)
    ctorch::fail_arg("segments", "must be between 1 and the number of children of the " + owner->kind() + " (" +
                             std::to_string(n) + "), got " + std::to_string(segments));
  ctorch::nn::reset_error_path();
  // Python's split: segments - 1 checkpointed runs of n / segments children,
  // then the rest run plainly ("the last chunk has to be non-volatile").
  size_t size = n / segments;
  at::Tensor x = ctorch::own(input);
  size_t next = 0;
  for (size_t s = 0; s + 1 < segments; ++s) {
    auto run = c10::make_intrusive<ctorch_checkpoint::Run>();
    run->owner = owner;
    run->whole = false;
    run->first = next;
    run->last = next + size - 1;
    x = ctorch_checkpoint::checkpoint(run, x, flags);
    next += size;
  }
  for (size_t i = next; i < n; ++i) x = owner->call(i, x);
  *out = ctorch::give(std::move(x));
  CTORCH_CATCH
}

}  // extern "C"
