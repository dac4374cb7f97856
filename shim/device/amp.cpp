// Mixed precision from C: thread-local autocast scopes and a loss scaler with
// torch.amp.GradScaler's semantics.
//
// The scaler runs ATen's own ops, _amp_foreach_non_finite_check_and_unscale_
// and _amp_update_scale_, wherever libtorch has a kernel for them: CUDA in
// every version, CPU from 2.x on (libtorch 1.13 registers CUDA kernels only,
// checked in its native_functions.yaml and at run time). Where there is none
// (a CPU scaler on 1.13) it computes the same thing with ordinary ops:
// found_inf = 1 if any element is not finite, grads *= inv_scale, and the
// scale update in float32 exactly as the kernels do. Which path runs is asked
// of the dispatcher at run time, not decided by version.
#define CTORCH_COMPAT_AUTOCAST 1  // compat::autocast_*
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#include "core/internal.h"
#include "core/cuda_backend.h"
#include "core/exclusive.h"
#include "core/scope_stack.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include <ATen/ops/_amp_update_scale.h>
#include <ATen/ops/full.h>
#include <ATen/ops/isfinite.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

// ---- autocast scopes -------------------------------------------------------------

struct ctorch_autocast_scope_s {
  std::thread::id owner;
  std::atomic<bool> left{false};  // see core/scope_stack.h
  c10::DeviceType device;
  bool prev_enabled;
  at::ScalarType prev_dtype;
  bool prev_cache_enabled;
  bool entered = false;  // set once the state was changed: the destructor restores it
  ~ctorch_autocast_scope_s();
  ctorch::Live<ctorch_autocast_scope_s> live{this};  // last: see core/internal.h
};

namespace {

thread_local ctorch::ScopeStack<ctorch_autocast_scope_s> tls_autocast_scopes;

c10::DeviceType autocast_device(int device_type, const char *arg) {
  switch (device_type) {
    case CTORCH_DEVICE_CPU: return c10::DeviceType::CPU;
    case CTORCH_DEVICE_CUDA: return c10::DeviceType::CUDA;
    default: {
      c10::Device d = ctorch::to_device(ctorch_device{device_type, -1}, arg);  // rejects unknown values
      ctorch::fail_arg(arg, "autocast is supported for CTORCH_DEVICE_CPU and CTORCH_DEVICE_CUDA, got " + d.str());
    }
  }
}

// ---- the scaler's two kernels and their fallbacks --------------------------------

c10::DispatchKey backend_key(const c10::Device &d) {
  return d.is_cuda() ? c10::DispatchKey::CUDA : c10::DispatchKey::CPU;
}

// Does libtorch have a kernel of the in-place op `name` for device d?
bool has_kernel(const char *name, const c10::Device &d) {
  auto op = c10::Dispatcher::singleton().findSchema({name, ""});
  return op.has_value() && op->hasKernelForDispatchKey(backend_key(d));
}

bool native_unscale(const c10::Device &d) {
  static const bool cpu = has_kernel("aten::_amp_foreach_non_finite_check_and_unscale_", c10::Device(c10::DeviceType::CPU));
  return d.is_cpu() ? cpu : true;  // CUDA has had the kernel since 1.6
}
bool native_update(const c10::Device &d) {
  static const bool cpu = has_kernel("aten::_amp_update_scale_", c10::Device(c10::DeviceType::CPU));
  return d.is_cpu() ? cpu : true;
}

// grads *= inv_scale in place; found_inf = 1 if any element of any grad is
// inf or NaN (left as it was otherwise). All on one device, one dtype.
void check_and_unscale(std::vector<at::Tensor> &grads, at::Tensor &found_inf, const at::Tensor &inv_scale) {
  if (native_unscale(found_inf.device())) {
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
    return;
  }
  for (auto &g : grads) {
    if (!at::isfinite(g).all().item<bool>()) found_inf.fill_(1.0);
    g.mul_(inv_scale);
  }
}

// _amp_update_scale_'s rule (aten/src/ATen/native/cuda/AmpKernels.cu).
void update_scale(at::Tensor &scale, at::Tensor &tracker, const at::Tensor &found_inf, double growth, double backoff,
                  int64_t interval) {
  if (native_update(scale.device())) {
    at::_amp_update_scale_(scale, tracker, found_inf, growth, backoff, interval);
    return;
  }
  float s = scale.item<float>();
  int32_t t = tracker.item<int32_t>();
  if (found_inf.item<float>() != 0.0f) {
    s = static_cast<float>(s * backoff);
    t = 0;
  } else if (t + 1 == interval) {
    float grown = static_cast<float>(s * growth);
    if (std::isfinite(grown)) s = grown;
    t = 0;
  } else {
    t = t + 1;
  }
  scale.fill_(s);
  tracker.fill_(t);
}

// Turns a failed ctorch call made from inside the library into an exception
// carrying its status and message.
void check_call(ctorch_status st) {
  if (st != CTORCH_OK) throw ctorch::StatusError(st, ctorch_last_error());
}

}  // namespace

// Closing a scope (core/scope_stack.h deletes it innermost first): restores
// the state in force when it opened. torch.autocast.__exit__: the weight cast
// cache lives until the outermost region closes.
ctorch_autocast_scope_s::~ctorch_autocast_scope_s() {
  if (!entered) return;
  try {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    ctorch::compat::set_autocast_enabled(device, prev_enabled);
    ctorch::compat::set_autocast_dtype(device, prev_dtype);
    at::autocast::set_autocast_cache_enabled(prev_cache_enabled);
  } catch (...) {
    // Restoring values this libtorch accepted before does not fail.
  }
}

// ---- the scaler ------------------------------------------------------------------

struct ctorch_grad_scaler_s {
  enum Stage { READY, UNSCALED, STEPPED };
  struct OptState {
    ctorch_optimizer opt;
    Stage stage = READY;
    at::Tensor found_inf;  // on the scale's device; undefined: no gradient seen
  };

  c10::Device device{c10::DeviceType::CPU};
  double growth_factor = 2.0, backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
  at::Tensor scale;           // float32, 0-dim, on device
  at::Tensor growth_tracker;  // int32, 0-dim, on device
  std::vector<OptState> opts;            // this iteration's optimizers
  std::vector<at::Tensor> tensor_checks;  // this iteration's unscale_tensors results
  int64_t skipped = 0;

  OptState &state(ctorch_optimizer o) {
    for (auto &s : opts)
      if (s.opt == o) return s;
    opts.push_back(OptState{o});
    return opts.back();
  }

  // GradScaler._unscale_grads_: grouped by device and dtype, one found_inf
  // per device, summed onto the scale's device. Undefined if no gradient.
  at::Tensor unscale(const std::vector<at::Tensor> &grads, const char *arg) {
    at::NoGradGuard no_grad;
    at::Tensor inv_scale = scale.to(at::kDouble).reciprocal().to(at::kFloat);
    std::map<std::pair<std::string, int>, std::vector<at::Tensor>> groups;
    for (const auto &g : grads) {
      if (!g.defined()) continue;
      if (g.scalar_type() == at::kHalf)
        ctorch::fail(CTORCH_VALUE, std::string("argument '") + arg + "': attempting to unscale FP16 gradients "
                     "(keep parameters in float32; autocast casts them)");
      at::Tensor v = g.is_sparse() ? g._values() : g;
      groups[{v.device().str(), static_cast<int>(v.scalar_type())}].push_back(v);
    }
    if (groups.empty()) return at::Tensor();
    std::map<std::string, at::Tensor> found_per_device;
    for (auto &kv : groups) {
      c10::Device d = kv.second.front().device();
      auto &found = found_per_device[kv.first.first];
      if (!found.defined()) found = at::full({}, 0.0, at::TensorOptions().dtype(at::kFloat).device(d));
      at::Tensor inv = inv_scale.to(d);
      check_and_unscale(kv.second, found, inv);
    }
    at::Tensor total;
    for (auto &kv : found_per_device) {
      at::Tensor f = kv.second.to(device, /*non_blocking=*/true);
      total = total.defined() ? total + f : f;
    }
    return total;
  }
  // Held by every call on the handle (include/ctorch.h lists scalers as
  // exclusive; core/exclusive.h): two threads' unscale/step/update grow,
  // walk and clear `opts` at once otherwise.
  ctorch::Busy busy;
  ctorch::Live<ctorch_grad_scaler_s> live{this};  // last: see core/internal.h
};

namespace {

ctorch_grad_scaler_s &live_scaler(ctorch_grad_scaler s) {
  ctorch::require_ptr(s, "s");
  return *s;
}

// The scaler held for the call (CTORCH_BUSY while another thread's call on
// it runs): `HeldScaler h(s); auto &sc = h.x;`.
struct HeldScaler {
  explicit HeldScaler(ctorch_grad_scaler s) : x(live_scaler(s)), hold(x.busy, "s", s) {}
  ctorch_grad_scaler_s &x;
  ctorch::Exclusive hold;
};

// Every gradient of every parameter group of opt, through the public API
// (optim.cpp keeps its state private).
std::vector<at::Tensor> optimizer_grads(ctorch_optimizer opt) {
  size_t groups = 0;
  check_call(ctorch_optimizer_num_param_groups(&groups, opt));
  std::vector<at::Tensor> grads;
  for (size_t i = 0; i < groups; ++i) {
    ctorch_tensor_list list = nullptr;
    check_call(ctorch_optimizer_params(&list, opt, i));
    std::unique_ptr<ctorch_tensor_list_s, void (*)(ctorch_tensor_list)> owned(list, ctorch_tensor_list_free);
    for (const auto &p : list->items) grads.push_back(p.grad());
  }
  return grads;
}

void unscale_optimizer(ctorch_grad_scaler_s &sc, ctorch_optimizer opt) {
  auto &st = sc.state(opt);
  if (st.stage == ctorch_grad_scaler_s::UNSCALED)
    ctorch::fail(CTORCH_RUNTIME, "argument 'opt': unscale has already been called on this optimizer since the last update");
  if (st.stage == ctorch_grad_scaler_s::STEPPED)
    ctorch::fail(CTORCH_RUNTIME, "argument 'opt': unscale is being called after step (call ctorch_grad_scaler_update first)");
  st.found_inf = sc.unscale(optimizer_grads(opt), "opt");
  st.stage = ctorch_grad_scaler_s::UNSCALED;
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_autocast_scope_enter(ctorch_autocast_scope *out, ctorch_device_type device_type,
                                                     ctorch_dtype dtype, int enabled, int cache_enabled) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  c10::DeviceType dev = autocast_device(device_type, "device_type");
  at::ScalarType st = ctorch::to_scalar_type(dtype, "dtype");
  if (st != at::kHalf && st != at::kBFloat16)
    ctorch::fail_arg("dtype", std::string("autocast casts to FLOAT16 or BFLOAT16, got ") + c10::toString(st));
  if (dev == c10::DeviceType::CUDA && ctorch::cuda_device_count() == 0)
    ctorch::fail(CTORCH_NOT_IMPLEMENTED, "argument 'device_type': cuda autocast needs cuda, which is not available: " +
                                             ctorch::cuda_absence_reason());
  tls_autocast_scopes.before_enter();  // first: closes scopes left from other threads
  auto s = std::make_unique<ctorch_autocast_scope_s>();
  s->owner = std::this_thread::get_id();
  s->device = dev;
  s->prev_enabled = ctorch::compat::autocast_enabled(dev);
  s->prev_dtype = ctorch::compat::autocast_dtype(dev);
  s->prev_cache_enabled = at::autocast::is_autocast_cache_enabled();
  try {
    // First, so that a dtype this libtorch refuses changes nothing.
    ctorch::compat::set_autocast_dtype(dev, st);
  } catch (const c10::Error &e) {
    ctorch::fail(CTORCH_NOT_IMPLEMENTED, std::string("argument 'dtype': this libtorch's ") + c10::DeviceTypeName(dev, true) +
                                             " autocast refuses " + c10::toString(st) + ": " + e.what_without_backtrace());
  }
  ctorch::compat::set_autocast_enabled(dev, enabled != 0);
  at::autocast::increment_nesting();
  at::autocast::set_autocast_cache_enabled(cache_enabled != 0);
  s->entered = true;
  tls_autocast_scopes.push(s.get());
  *out = s.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_autocast_scope_leave(ctorch_autocast_scope scope) {
  CTORCH_TRY
  tls_autocast_scopes.leave(scope, "autocast ");
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_autocast_is_enabled(int *out, ctorch_device_type device_type) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = ctorch::compat::autocast_enabled(autocast_device(device_type, "device_type")) ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_autocast_get_dtype(ctorch_dtype *out, ctorch_device_type device_type) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = ctorch::from_scalar_type(ctorch::compat::autocast_dtype(autocast_device(device_type, "device_type")));
  CTORCH_CATCH
}

// ---- loss scaling ------------------------------------------------------------------

CTORCH_API ctorch_status ctorch_grad_scaler_options_default(ctorch_grad_scaler_options *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = ctorch_grad_scaler_options{65536.0, 2.0, 0.5, 2000, 1};
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_grad_scaler_new(ctorch_grad_scaler *out, ctorch_device device,
                                                const ctorch_grad_scaler_options *options) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch_grad_scaler_options o{65536.0, 2.0, 0.5, 2000, 1};
  if (options) o = *options;
  c10::Device dev = ctorch::to_device(device, "device");
  if (dev.is_cuda()) dev = ctorch::cuda_device(device, "device", "a CUDA scaler");
  else if (!dev.is_cpu()) ctorch::fail_arg("device", "a scaler lives on CPU or CUDA, got " + dev.str());
  if (!(o.init_scale > 0) || !std::isfinite(o.init_scale))
    ctorch::fail_arg("options", "init_scale must be finite and > 0, got " + std::to_string(o.init_scale));
  if (!(o.growth_factor > 1.0) || !std::isfinite(o.growth_factor))
    ctorch::fail_arg("options", "growth_factor must be finite and > 1, got " + std::to_string(o.growth_factor));
  if (!(o.backoff_factor > 0.0 && o.backoff_factor < 1.0))
    ctorch::fail_arg("options", "backoff_factor must be in (0, 1), got " + std::to_string(o.backoff_factor));
  if (o.growth_interval < 1 || o.growth_interval > INT32_MAX)
    ctorch::fail_arg("options", "growth_interval must be in [1, 2^31), got " + std::to_string(o.growth_interval));
  auto s = std::make_unique<ctorch_grad_scaler_s>();
  s->device = dev;
  s->growth_factor = o.growth_factor;
  s->backoff_factor = o.backoff_factor;
  s->growth_interval = o.growth_interval;
  s->enabled = o.enabled != 0;
  if (s->enabled) {
    s->scale = at::full({}, o.init_scale, at::TensorOptions().dtype(at::kFloat).device(dev));
    s->growth_tracker = at::full({}, 0, at::TensorOptions().dtype(at::kInt).device(dev));
  }
  *out = s.release();
  CTORCH_CATCH
}

CTORCH_API void ctorch_grad_scaler_free(ctorch_grad_scaler s) {
  // A handle in use by another thread's call is not freed (core/exclusive.h).
  if (s && ctorch::handle_kind_of(s) == ctorch::HandleKind::grad_scaler && !ctorch::free_allowed(s->busy, __func__, s))
    return;
  if (ctorch::release_handle(s, __func__)) delete s;
}

CTORCH_API ctorch_status ctorch_grad_scaler_scale(ctorch_tensor *out, ctorch_grad_scaler s, ctorch_tensor loss) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  HeldScaler held(s);
  auto &sc = held.x;
  ctorch::require_tensor(loss, "loss");
  ctorch::Borrowed l(loss);
  if (!sc.enabled) {
    *out = ctorch::give(l.get());
  } else {
    const at::Tensor &scale = l->device() == sc.device ? sc.scale : sc.scale.to(l->device(), /*non_blocking=*/true);
    *out = ctorch::give(l.get() * scale);
  }
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_grad_scaler_unscale(ctorch_grad_scaler s, ctorch_optimizer opt) {
  CTORCH_TRY
  HeldScaler held(s);
  auto &sc = held.x;
  ctorch::require_ptr(opt, "opt");
  if (sc.enabled) unscale_optimizer(sc, opt);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_grad_scaler_unscale_tensors(ctorch_grad_scaler s, const ctorch_tensor *grads, size_t n) {
  CTORCH_TRY
  HeldScaler held(s);
  auto &sc = held.x;
  std::vector<at::Tensor> g = ctorch::tensor_list(grads, n, "grads");
  if (!sc.enabled) return CTORCH_OK;
  at::Tensor f = sc.unscale(g, "grads");
  if (f.defined()) sc.tensor_checks.push_back(std::move(f));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_grad_scaler_step(int *stepped, ctorch_grad_scaler s, ctorch_optimizer opt) {
  CTORCH_TRY
  if (stepped) *stepped = 0;
  HeldScaler held(s);
  auto &sc = held.x;
  ctorch::require_ptr(opt, "opt");
  if (!sc.enabled) {
    check_call(ctorch_optimizer_step(opt));
    if (stepped) *stepped = 1;
    return CTORCH_OK;
  }
  auto &st = sc.state(opt);
  if (st.stage == ctorch_grad_scaler_s::STEPPED)
    ctorch::fail(CTORCH_RUNTIME, "argument 'opt': step has already been called since the last update");
  if (st.stage == ctorch_grad_scaler_s::READY) unscale_optimizer(sc, opt);
  auto &st2 = sc.state(opt);  // unscale_optimizer may have grown the vector
  if (!st2.found_inf.defined())
    ctorch::fail(CTORCH_RUNTIME, "argument 'opt': no parameter of the optimizer has a gradient (no inf checks were recorded)");
  bool found = st2.found_inf.item<float>() != 0.0f;
  if (!found) check_call(ctorch_optimizer_step(opt));
  else ++sc.skipped;
  st2.stage = ctorch_grad_scaler_s::STEPPED;
  if (stepped) *stepped = found ? 0 : 1;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_grad_scaler_update(ctorch_grad_scaler s, const double *new_scale) {
  CTORCH_TRY
  HeldScaler held(s);
  auto &sc = held.x;
  if (!sc.enabled) return CTORCH_OK;
  at::NoGradGuard no_grad;
  if (new_scale) {
    if (!(*new_scale > 0) || !std::isfinite(*new_scale))
      ctorch::fail_arg("new_scale", "must be finite and > 0, got " + std::to_string(*new_scale));
    sc.scale.fill_(*new_scale);
  } else {
    at::Tensor combined;
    auto add = [&](const at::Tensor &f) {
      if (!f.defined()) return;
      combined = combined.defined() ? combined + f : f.clone();
    };
    for (const auto &st : sc.opts) add(st.found_inf);
    for (const auto &f : sc.tensor_checks) add(f);
    if (!combined.defined())
      ctorch::fail(CTORCH_RUNTIME, "no inf checks were recorded since the last update (call ctorch_grad_scaler_step, "
                   "_unscale or _unscale_tensors on gradients first)");
    update_scale(sc.scale, sc.growth_tracker, combined, sc.growth_factor, sc.backoff_factor, sc.growth_interval);
  }
  sc.opts.clear();
  sc.tensor_checks.clear();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_grad_scaler_get_scale(double *out, ctorch_grad_scaler s) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  HeldScaler held(s);
  auto &sc = held.x;
  *out = sc.enabled ? sc.scale.item<double>() : 1.0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_grad_scaler_get_growth_tracker(int64_t *out, ctorch_grad_scaler s) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  HeldScaler held(s);
  auto &sc = held.x;
  *out = sc.enabled ? sc.growth_tracker.item<int64_t>() : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_grad_scaler_found_inf(int *out, ctorch_grad_scaler s) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  HeldScaler held(s);
  auto &sc = held.x;
  bool found = false;
  for (const auto &st : sc.opts)
    if (st.found_inf.defined() && st.found_inf.item<float>() != 0.0f) found = true;
  for (const auto &f : sc.tensor_checks)
    if (f.item<float>() != 0.0f) found = true;
  *out = found ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_grad_scaler_skipped_steps(int64_t *out, ctorch_grad_scaler s) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  HeldScaler held(s);
  *out = held.x.skipped;
  CTORCH_CATCH
}

}  // extern "C"
