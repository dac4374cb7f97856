// Autograd from C: requires_grad/grad plumbing, backward and grad(),
// thread-local grad-mode scopes, and custom functions with C callbacks.
#include "core/exclusive.h"
#include "core/internal.h"
#include "core/scope_stack.h"

#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <memory>
#include <thread>

using ctorch::Borrowed;

// ---- scopes ------------------------------------------------------------------

// One open scope. The guards are libtorch's own RAII types: they remember the
// previous state on construction and restore it on destruction, so leaving
// in LIFO order on the owning thread restores state exactly.
struct ctorch_autograd_scope_s {
  std::thread::id owner;
  std::atomic<bool> left{false};  // see core/scope_stack.h
  std::unique_ptr<at::AutoGradMode> grad;
  std::unique_ptr<c10::InferenceMode> inference;
  ctorch::Live<ctorch_autograd_scope_s> live{this};  // last: see core/internal.h
};

namespace {

// Open scopes of this thread, innermost last; leaving in any order restores
// the state in LIFO order (core/scope_stack.h).
thread_local ctorch::ScopeStack<ctorch_autograd_scope_s> tls_scopes;

// ---- custom functions --------------------------------------------------------

// Keeps the callbacks and user data alive exactly as long as the graph node:
// it sits in the node's ctx->saved_data, so the node's death releases it.
struct CallbackHolder : torch::CustomClassHolder {
  ctorch_autograd_forward_fn forward = nullptr;
  ctorch_autograd_backward_fn backward = nullptr;
  void *user_data = nullptr;
  void (*release)(void *) = nullptr;
  size_t n_outputs = 0;
  size_t n_inputs = 0;
  ~CallbackHolder() override {
    if (release) release(user_data);
  }
};

const char kHolderKey[] = "ctorch.callbacks";

}  // namespace

// The C view of an AutogradContext during one callback.
struct ctorch_autograd_ctx_s {
  torch::autograd::AutogradContext *ctx;
  bool in_forward;
  bool saved = false;
  std::string error;
  // This thread's last failure id when the callback started: a failure the
  // callback's own ctorch calls recorded has a larger one.
  uint64_t failures_before = ctorch_last_error_id();
  // Tensors given to mark_non_differentiable: each must be an output.
  std::vector<const c10::TensorImpl *> marked;
  ctorch::Live<ctorch_autograd_ctx_s> live{this};  // last: see core/internal.h
};

namespace {

// The longest callback message carried into the failure's own message.
constexpr size_t kMaxCallbackMessage = 1024;

// Turns a failing callback status into an exception with the best message
// available: the one the callback set on ctx, else the message of a ctorch
// call that failed during the callback, else a fixed text. Never the
// thread's last error from before the callback: a callback failing without
// a message would carry (and prefix again) the previous call's failure,
// growing the message with every call.
[[noreturn]] void callback_failed(ctorch_status st, const ctorch_autograd_ctx_s &c, const char *which) {
  std::string msg = c.error;
  if (msg.empty() && ctorch_last_error_id() != c.failures_before) msg = ctorch_last_error();
  if (msg.empty())
    msg = std::string("the ") + which + " callback set no message (ctorch_autograd_ctx_set_error sets one)";
  if (msg.size() > kMaxCallbackMessage) msg = msg.substr(0, kMaxCallbackMessage) + "... (truncated)";
  // CTORCH_STATUS_CODE: a status from a ctorch call carries a ticket when tickets are on.
  ctorch_status code = CTORCH_STATUS_CODE(st);
  if (code <= CTORCH_OK || code > CTORCH_UNKNOWN) code = CTORCH_UNKNOWN;
  ctorch::fail(code, std::string(which) + " callback failed with " + ctorch_status_name(code) + ": " + msg);
}

struct CFunction : torch::autograd::Function<CFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext *ctx, at::TensorList inputs,
                                                const c10::intrusive_ptr<CallbackHolder> &h) {
    ctx->saved_data[kHolderKey] = c10::IValue::make_capsule(h);
    ctorch_autograd_ctx_s c{ctx, true};
    // The callback reads borrowed handles: plain impl pointers of the inputs.
    ctorch::Lent lend;
    std::vector<ctorch_tensor> in(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) in[i] = lend(inputs[i]);
    std::vector<ctorch_tensor> out(h->n_outputs, nullptr);
    ctorch_status st = h->forward(&c, h->user_data, in.data(), in.size(), out.data(), out.size());
    torch::autograd::variable_list result;
    result.reserve(out.size());
    // take(): an open handle scope recorded these outputs; the node owns them now.
    for (auto p : out) result.push_back(ctorch::take(p));
    if (st != CTORCH_OK) callback_failed(st, c, "forward");
    for (size_t i = 0; i < result.size(); ++i)
      if (!result[i].defined())
        ctorch::fail(CTORCH_VALUE, "forward callback returned CTORCH_OK but left outputs[" + std::to_string(i) + "] NULL");
    for (const c10::TensorImpl *m : c.marked) {
      bool output = false;
      for (const auto &r : result) output = output || r.unsafeGetTensorImpl() == m;
      if (!output)
        ctorch::fail(CTORCH_INVALID_ARGUMENT,
                     "forward callback passed ctorch_autograd_ctx_mark_non_differentiable a tensor that is not one of "
                     "its outputs");
    }
    return result;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto h = ctx->saved_data.at(kHolderKey).toCapsule();
    auto *holder = static_cast<CallbackHolder *>(h.get());
    ctorch_autograd_ctx_s c{ctx, false};
    ctorch::Lent lend;
    std::vector<ctorch_tensor> gout(grad_outputs.size());
    for (size_t i = 0; i < grad_outputs.size(); ++i) gout[i] = lend(grad_outputs[i]);
    std::vector<ctorch_tensor> gin(holder->n_inputs, nullptr);
    ctorch_status st = holder->backward(&c, holder->user_data, gout.data(), gout.size(), gin.data(), gin.size());
    // One extra undefined gradient for the non-tensor holder argument.
    torch::autograd::variable_list result;
    result.reserve(gin.size() + 1);
    for (auto p : gin) result.push_back(ctorch::take(p));
    result.emplace_back();
    if (st != CTORCH_OK) callback_failed(st, c, "backward");
    return result;
  }
};

void require_ctx(ctorch_autograd_ctx ctx) {
  ctorch::check_handle(ctx, "ctx");
  if (!ctx->ctx) ctorch::fail_arg("ctx", "is NULL");
}

}  // namespace

extern "C" {

// ---- tensor autograd properties ---------------------------------------------

CTORCH_API ctorch_status ctorch_tensor_set_requires_grad(ctorch_tensor t, int requires_grad) {
  CTORCH_TRY
  ctorch::require_tensor(t, "t");
  Borrowed b(t);
  // libtorch's C++ API lets a computed tensor drop requires_grad silently;
  // PyTorch refuses it, and so do we (detach is the way).
  if (!b->is_leaf() && (requires_grad != 0) != b->requires_grad())
    ctorch::fail_arg("t", "requires_grad can only be changed on leaf tensors; use ctorch_tensor_detach for a "
                          "computed tensor that should not require grad");
  b->set_requires_grad(requires_grad != 0);
  CTORCH_CATCH
}

CTORCH_GETTER(ctorch_tensor_is_leaf, int, x.is_leaf() ? 1 : 0)

CTORCH_API ctorch_status ctorch_tensor_retain_grad(ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_tensor(t, "t");
  Borrowed b(t);
  b->retain_grad();
  CTORCH_CATCH
}

CTORCH_GETTER(ctorch_tensor_retains_grad, int, (x.retains_grad() || (x.is_leaf() && x.requires_grad())) ? 1 : 0)

// The three .grad accessors take t's gradient-accumulator lock (core/
// exclusive.h: the mutex a backward holds while AccumulateGrad writes
// .grad), as an optimizer's step and zero_grad do: a backward on another
// thread waits for them instead of racing on the .grad pointer (two threads
// assigning one intrusive_ptr is a double free; a copy racing an assignment
// reads a freed tensor).
CTORCH_API ctorch_status ctorch_tensor_grad(ctorch_tensor *out, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_tensor(t, "t");
  Borrowed b(t);
  at::Tensor g;
  {
    ctorch::GradLocks lock({b.get()});
    g = b->grad();
  }
  *out = ctorch::give(std::move(g));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_set_grad(ctorch_tensor t, ctorch_tensor grad) {
  CTORCH_TRY
  ctorch::require_tensor(t, "t");
  Borrowed b(t);
  if (grad) {
    Borrowed g(grad);
    if (g->sizes() != b->sizes())
      ctorch::fail_arg("grad", "shape " + c10::str(g->sizes()) + " does not match the tensor's " + c10::str(b->sizes()));
    if (g->scalar_type() != b->scalar_type())
      ctorch::fail(CTORCH_TYPE, std::string("argument 'grad': dtype ") + c10::toString(g->scalar_type()) +
                                    " does not match the tensor's " + c10::toString(b->scalar_type()));
    if (g->device() != b->device()) ctorch::fail_arg("grad", "is on another device than the tensor");
  }
  at::Tensor next = grad ? ctorch::own(grad) : at::Tensor();
  at::Tensor previous;  // released after the lock
  {
    ctorch::GradLocks lock({b.get()});
    previous = std::move(b->mutable_grad());
    b->mutable_grad() = std::move(next);
  }
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_zero_grad(ctorch_tensor t, int set_to_none) {
  CTORCH_TRY
  ctorch::require_tensor(t, "t");
  Borrowed b(t);
  ctorch::GradLocks lock({b.get()});
  at::Tensor &g = b->mutable_grad();
  if (!g.defined()) return CTORCH_OK;
  if (set_to_none) {
    g = at::Tensor();
  } else {
    // As Tensor.grad.zero_() after detaching, like torch.optim's zero_grad.
    if (g.grad_fn()) g = g.detach();
    else g.requires_grad_(false);
    g.zero_();
  }
  CTORCH_CATCH
}

CTORCH_TRANSFORM(ctorch_tensor_detach, , x.detach())

CTORCH_API ctorch_status ctorch_tensor_grad_fn_name(const char **out, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = "";
  ctorch::require_tensor(t, "t");
  Borrowed b(t);
  // Node::name() returns a std::string built from a type name; keep a
  // thread-local copy per distinct name so the pointer stays valid.
  const auto &fn = b->grad_fn();
  if (!fn) return CTORCH_OK;
  static thread_local std::vector<std::unique_ptr<std::string>> names;
  std::string n = fn->name();
  for (auto &s : names)
    if (*s == n) {
      *out = s->c_str();
      return CTORCH_OK;
    }
  names.push_back(std::make_unique<std::string>(std::move(n)));
  *out = names.back()->c_str();
  CTORCH_CATCH
}

// ---- backward / grad ---------------------------------------------------------

CTORCH_API ctorch_status ctorch_tensor_backward(ctorch_tensor t, ctorch_tensor gradient, int retain_graph,
                                                int create_graph, const ctorch_tensor *inputs, size_t n_inputs) {
  CTORCH_TRY
  ctorch::require_tensor(t, "t");
  ctorch::require_list(inputs, n_inputs, "inputs");
  Borrowed b(t);
  if (!b->requires_grad())
    ctorch::fail_arg("t", "does not require grad and has no grad_fn (nothing to differentiate)");
  torch::autograd::variable_list grads;
  if (gradient) {
    grads.push_back(ctorch::own(gradient));
  } else if (b->numel() != 1) {
    ctorch::fail_arg("gradient", "is NULL but t has " + std::to_string(b->numel()) +
                                     " elements (a gradient can be implied only for one element)");
  }
  auto in = ctorch::tensor_list(inputs, n_inputs, "inputs");
  torch::autograd::backward({b.get()}, grads, retain_graph != 0, create_graph != 0, in);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_autograd_grad(ctorch_tensor_list *out, const ctorch_tensor *outputs, size_t n_outputs,
                                              const ctorch_tensor *inputs, size_t n_inputs,
                                              const ctorch_tensor *grad_outputs, size_t n_grad_outputs,
                                              int retain_graph, int create_graph, int allow_unused) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_list(outputs, n_outputs, "outputs");
  ctorch::require_list(inputs, n_inputs, "inputs");
  ctorch::require_list(grad_outputs, n_grad_outputs, "grad_outputs");
  if (!n_outputs) ctorch::fail_arg("outputs", "is empty");
  if (!n_inputs) ctorch::fail_arg("inputs", "is empty");
  if (n_grad_outputs && n_grad_outputs != n_outputs)
    ctorch::fail_arg("n_grad_outputs", std::to_string(n_grad_outputs) + " differs from n_outputs " + std::to_string(n_outputs));
  auto outs = ctorch::tensor_list(outputs, n_outputs, "outputs");
  auto ins = ctorch::tensor_list(inputs, n_inputs, "inputs");
  torch::autograd::variable_list gouts;
  if (n_grad_outputs) {
    gouts.reserve(n_grad_outputs);
    for (size_t i = 0; i < n_grad_outputs; ++i) {
      if (!grad_outputs[i] && outs[i].numel() != 1)
        ctorch::fail_arg("grad_outputs", "entry " + std::to_string(i) + " is NULL but outputs[" + std::to_string(i) +
                                             "] has " + std::to_string(outs[i].numel()) + " elements");
      gouts.push_back(grad_outputs[i] ? ctorch::own(grad_outputs[i]) : at::Tensor());
    }
  }
  auto res = torch::autograd::grad(outs, ins, gouts, retain_graph != 0, create_graph != 0, allow_unused != 0);
  *out = ctorch::give_list(std::move(res));
  CTORCH_CATCH
}

// ---- scopes ------------------------------------------------------------------

CTORCH_API ctorch_status ctorch_autograd_scope_enter(ctorch_autograd_scope *out, ctorch_autograd_scope_kind kind) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  tls_scopes.before_enter();  // first: closes scopes left from other threads
  auto s = std::make_unique<ctorch_autograd_scope_s>();
  s->owner = std::this_thread::get_id();
  switch (kind) {
    case CTORCH_SCOPE_NO_GRAD: s->grad = std::make_unique<at::AutoGradMode>(false); break;
    case CTORCH_SCOPE_ENABLE_GRAD: s->grad = std::make_unique<at::AutoGradMode>(true); break;
    case CTORCH_SCOPE_INFERENCE_MODE: s->inference = std::make_unique<c10::InferenceMode>(true); break;
    default: ctorch::fail_arg("kind", "unknown scope kind " + std::to_string(static_cast<int>(kind)));
  }
  tls_scopes.push(s.get());
  *out = s.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_autograd_scope_leave(ctorch_autograd_scope scope) {
  CTORCH_TRY
  tls_scopes.leave(scope, "");
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_autograd_is_grad_enabled(int *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = at::GradMode::is_enabled() ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_autograd_is_inference_mode(int *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = c10::InferenceMode::is_enabled() ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_GETTER(ctorch_tensor_is_inference, int, x.is_inference() ? 1 : 0)

// ---- custom functions --------------------------------------------------------

CTORCH_API ctorch_status ctorch_autograd_function_apply(ctorch_tensor *outputs, size_t n_outputs,
                                                        ctorch_autograd_forward_fn forward,
                                                        ctorch_autograd_backward_fn backward, void *user_data,
                                                        void (*release)(void *user_data),
                                                        const ctorch_tensor *inputs, size_t n_inputs) {
  CTORCH_TRY
  // Armed first so that release runs exactly once whatever fails below.
  c10::intrusive_ptr<CallbackHolder> holder;
  try {
    holder = c10::make_intrusive<CallbackHolder>();
  } catch (...) {
    if (release) release(user_data);
    throw;
  }
  holder->user_data = user_data;
  holder->release = release;
  // Every argument is checked before outputs[] is written: a caller's
  // wrong n_outputs must not make a failing call write n_outputs entries.
  ctorch::require_list(outputs, n_outputs, "outputs");
  if (!n_outputs) ctorch::fail_arg("n_outputs", "must be at least 1");
  ctorch::require_ptr(forward, "forward");
  ctorch::require_ptr(backward, "backward");
  ctorch::require_list(inputs, n_inputs, "inputs");
  auto ins = ctorch::tensor_list(inputs, n_inputs, "inputs");
  for (size_t i = 0; i < n_outputs; ++i) outputs[i] = nullptr;
  holder->forward = forward;
  holder->backward = backward;
  holder->n_outputs = n_outputs;
  holder->n_inputs = n_inputs;
  auto res = CFunction::apply(at::TensorList(ins), holder);
  holder.reset();  // the node (if any) holds the only reference now
  for (size_t i = 0; i < n_outputs; ++i) outputs[i] = ctorch::give(std::move(res[i]));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_autograd_ctx_save_for_backward(ctorch_autograd_ctx ctx, const ctorch_tensor *tensors,
                                                               size_t n) {
  CTORCH_TRY
  require_ctx(ctx);
  if (!ctx->in_forward) ctorch::fail(CTORCH_RUNTIME, "argument 'ctx': tensors can be saved only during forward");
  if (ctx->saved) ctorch::fail(CTORCH_RUNTIME, "argument 'ctx': save_for_backward was already called");
  ctorch::require_list(tensors, n, "tensors");
  ctx->ctx->save_for_backward(ctorch::tensor_list(tensors, n, "tensors"));
  ctx->saved = true;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_autograd_ctx_saved_tensors(ctorch_tensor_list *out, ctorch_autograd_ctx ctx) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  require_ctx(ctx);
  if (ctx->in_forward) ctorch::fail(CTORCH_RUNTIME, "argument 'ctx': saved tensors can be read only during backward");
  *out = ctorch::give_list(ctx->ctx->get_saved_variables());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_autograd_ctx_needs_input_grad(int *out, ctorch_autograd_ctx ctx, size_t i) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  require_ctx(ctx);
  if (ctx->in_forward) ctorch::fail(CTORCH_RUNTIME, "argument 'ctx': needs_input_grad is known only during backward");
  auto h = ctx->ctx->saved_data.at(kHolderKey).toCapsule();
  size_t n = static_cast<CallbackHolder *>(h.get())->n_inputs;
  if (i >= n) ctorch::fail(CTORCH_INDEX, "argument 'i': " + std::to_string(i) + " out of range for " + std::to_string(n) + " inputs");
  *out = ctx->ctx->needs_input_grad(i) ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_autograd_ctx_mark_non_differentiable(ctorch_autograd_ctx ctx,
                                                                     const ctorch_tensor *outputs, size_t n) {
  CTORCH_TRY
  require_ctx(ctx);
  if (!ctx->in_forward) ctorch::fail(CTORCH_RUNTIME, "argument 'ctx': outputs can be marked only during forward");
  ctorch::require_list(outputs, n, "outputs");
  auto marked = ctorch::tensor_list(outputs, n, "outputs");
  // Checked against the outputs once forward returns (they may be set after).
  for (const auto &t : marked) ctx->marked.push_back(t.unsafeGetTensorImpl());
  ctx->ctx->mark_non_differentiable(marked);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_autograd_ctx_set_error(ctorch_autograd_ctx ctx, const char *message) {
  CTORCH_TRY
  require_ctx(ctx);
  ctorch::require_ptr(message, "message");
  ctx->error = message;
  CTORCH_CATCH
}

}  // extern "C"
