// CUDA devices through the C ABI: availability, current device,
// synchronisation, properties and allocator counters, generators, pinned
// memory and asynchronous copies, CUDA graphs.
//
// Design: only device-generic libtorch interfaces are used here (no CUDA
// header): at::globalContext().hasCUDA() / at::getNumGPUs() and the CUDA
// hooks for availability and synchronisation, c10's VirtualGuardImpl for the
// current device, Context::defaultGenerator for generators. They exist in
// libtorch 1.13 and 2.x alike, link against libtorch_cpu/libc10 only, and
// behave the same whether or not the libtorch has CUDA, so this file compiles
// and runs everywhere. What needs CUDA headers is behind cuda_backend.h.
#define CTORCH_COMPAT_CUDA_INIT  // compat::lazy_init_cuda
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#include "core/cuda_backend.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>

using ctorch::Borrowed;

// ---- helpers shared with stream.cpp, amp.cpp and dist.cpp --------------------

namespace ctorch {

int cuda_device_count() {
  // hasCUDA() is false in a libtorch without CUDA and, in a CUDA build, when
  // no device (or no driver) is found; it does not initialise CUDA.
  return at::hasCUDA() ? static_cast<int>(at::getNumGPUs()) : 0;
}

void cuda_lazy_init() { compat::lazy_init_cuda(); }

std::string cuda_absence_reason() {
  // A CUDA build of libtorch registers its CUDA device guard when
  // libc10_cuda loads; a CPU-only one has none.
  if (!c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA)) return "this libtorch was built without CUDA";
  return "no CUDA device is visible to this process (libtorch has CUDA; check the driver and CUDA_VISIBLE_DEVICES)";
}

int cuda_device(int device, const char *arg) {
  if (device < -1) fail_arg(arg, "CUDA device ordinal " + std::to_string(device) + " is negative (-1 = current)");
  int n = cuda_device_count();
  std::string name = device < 0 ? std::string("cuda") : "cuda:" + std::to_string(device);
  if (n == 0) fail(CTORCH_NOT_IMPLEMENTED, std::string("argument '") + arg + "': " + name + " is not available: " + cuda_absence_reason());
  if (device < 0) return c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getDevice().index();
  if (device >= n)
    fail_arg(arg, name + " does not exist (" + std::to_string(n) + " CUDA device" + (n == 1 ? "" : "s") + ")");
  return device;
}

c10::Device cuda_device(const ctorch_device &device, const char *arg, const char *what) {
  c10::Device d = to_device(device, arg);
  if (d.type() != c10::DeviceType::CUDA)
    fail_arg(arg, std::string(what) + " needs a CUDA device, got " + d.str());
  return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(cuda_device(device.index, arg)));
}

at::Generator new_generator(const c10::Device &dev, uint64_t seed) {
  if (dev.is_cpu()) return at::detail::createCPUGenerator(seed);
  if (dev.type() != c10::DeviceType::CUDA)
    fail(CTORCH_NOT_IMPLEMENTED, "argument 'device': generators can be created for CPU and CUDA, not " + dev.str());
  // A copy of the device's default generator, reseeded: Generator::clone and
  // Context::defaultGenerator are device-generic (no CUDA header needed) and
  // give the same CUDAGeneratorImpl torch.Generator(device="cuda") makes.
  at::Generator def = at::globalContext().defaultGenerator(dev);  // shares the impl
  at::Generator g;
  {
    std::lock_guard<std::mutex> lock(def.mutex());
    g = def.clone();
  }
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_current_seed(seed);
  return g;
}

std::string nccl_unavailable_reason() {
  if (cuda_device_count() == 0) return cuda_absence_reason();
  if (!cuda_backend::compiled())
    return "this ctorch was built without its CUDA backend (incomplete CUDA headers: see cmake/ctorch_cuda.cmake)";
  if (!cuda_backend::nccl_compiled())
    return "this ctorch was built without nccl.h (configure with CTORCH_NCCL_INCLUDE_DIR)";
  return "";
}

}  // namespace ctorch

namespace {

ctorch_generator_s &live_generator(ctorch_generator g) {
  ctorch::require_ptr(g, "g");
  return *g;
}

}  // namespace

// One capture state per graph handle: the thread that began it must end it
// (the side stream is made current on that thread only).
struct ctorch_cuda_graph_s {
  ctorch::cuda_backend::Graph *graph = nullptr;
  bool capturing = false;
  std::thread::id owner;
  ctorch::Live<ctorch_cuda_graph_s> live{this};  // last: see core/internal.h
};

extern "C" {

// ---- devices -----------------------------------------------------------------

CTORCH_API ctorch_status ctorch_cuda_current_device(int *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = ctorch::cuda_device(-1, "device");
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_set_device(int device) {
  CTORCH_TRY
  if (device < 0) ctorch::fail_arg("device", "must be a CUDA ordinal >= 0, got " + std::to_string(device));
  int d = ctorch::cuda_device(device, "device");
  c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).setDevice(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(d)));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_synchronize(int device) {
  CTORCH_TRY
  int d = ctorch::cuda_device(device, "device");
  at::detail::getCUDAHooks().deviceSynchronize(static_cast<c10::DeviceIndex>(d));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_synchronize_all(void) {
  CTORCH_TRY
  int n = ctorch::cuda_device_count();
  if (n == 0) ctorch::fail(CTORCH_NOT_IMPLEMENTED, "cuda is not available: " + ctorch::cuda_absence_reason());
  for (int d = 0; d < n; ++d) at::detail::getCUDAHooks().deviceSynchronize(static_cast<c10::DeviceIndex>(d));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_get_device_properties(ctorch_cuda_device_properties *out, int device) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  std::memset(out, 0, sizeof *out);
  auto p = ctorch::cuda_backend::properties(ctorch::cuda_device(device, "device"));
  std::strncpy(out->name, p.name.c_str(), sizeof out->name - 1);
  out->total_memory = p.total_memory;
  out->major = p.major;
  out->minor = p.minor;
  out->multi_processor_count = p.multi_processor_count;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_memory_stats_get(ctorch_cuda_memory_stats *out, int device) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  std::memset(out, 0, sizeof *out);
  auto s = ctorch::cuda_backend::memory_stats(ctorch::cuda_device(device, "device"));
  out->allocated_bytes = s.allocated;
  out->reserved_bytes = s.reserved;
  out->peak_allocated_bytes = s.peak_allocated;
  out->peak_reserved_bytes = s.peak_reserved;
  out->num_alloc_retries = s.alloc_retries;
  out->num_ooms = s.ooms;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_reset_peak_memory_stats(int device) {
  CTORCH_TRY
  ctorch::cuda_backend::reset_peak_memory_stats(ctorch::cuda_device(device, "device"));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_empty_cache(void) {
  CTORCH_TRY
  if (ctorch::cuda_device_count() == 0)
    ctorch::fail(CTORCH_NOT_IMPLEMENTED, "cuda is not available: " + ctorch::cuda_absence_reason());
  ctorch::cuda_backend::empty_cache();
  CTORCH_CATCH
}

// ---- generators ----------------------------------------------------------------

CTORCH_API ctorch_status ctorch_generator_default(ctorch_generator *out, ctorch_device device) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  c10::Device dev = ctorch::to_device(device, "device");
  if (dev.type() == c10::DeviceType::CUDA) dev = ctorch::cuda_device(device, "device", "a CUDA generator");
  else if (!dev.is_cpu())
    ctorch::fail(CTORCH_NOT_IMPLEMENTED, "argument 'device': default generators are available for CPU and CUDA, not " + dev.str());
  // at::Generator is a counted reference to the GeneratorImpl: this handle
  // shares the default generator, it does not copy it.
  *out = new ctorch_generator_s{at::globalContext().defaultGenerator(dev)};
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_generator_initial_seed(uint64_t *out, ctorch_generator g) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  auto &gen = live_generator(g).gen;
  std::lock_guard<std::mutex> lock(gen.mutex());
  *out = gen.current_seed();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_generator_device(ctorch_device *out, ctorch_generator g) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = ctorch::from_device(live_generator(g).gen.device());
  CTORCH_CATCH
}

// ---- pinned memory and asynchronous copies -----------------------------------

CTORCH_API ctorch_status ctorch_tensor_pin_memory(ctorch_tensor *out, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_tensor(t, "t");
  Borrowed b(t);
  if (!b->is_cpu()) ctorch::fail_arg("t", "only CPU tensors can be pinned, this one is on " + b->device().str());
  // Pinned memory comes from the CUDA host allocator: asking for it without
  // CUDA makes libtorch try (and fail) to initialise a driver.
  if (ctorch::cuda_device_count() == 0)
    ctorch::fail(CTORCH_NOT_IMPLEMENTED, "pinned memory needs cuda, which is not available: " + ctorch::cuda_absence_reason());
  *out = ctorch::give(b->pin_memory());
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_is_pinned(int *out, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ctorch::require_tensor(t, "t");
  Borrowed b(t);
  *out = b->is_cpu() && ctorch::cuda_device_count() > 0 && b->is_pinned() ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_to_device_async(ctorch_tensor *out, ctorch_tensor t, ctorch_device device) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_tensor(t, "t");
  c10::Device dev = ctorch::to_device(device, "device");
  if (dev.type() == c10::DeviceType::CUDA) dev = ctorch::cuda_device(device, "device", "a CUDA copy");
  Borrowed b(t);
  *out = ctorch::give(b->to(dev, /*non_blocking=*/true));
  CTORCH_CATCH
}

// ---- CUDA graphs -----------------------------------------------------------------

CTORCH_API ctorch_status ctorch_cuda_graph_new(ctorch_cuda_graph *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (ctorch::cuda_device_count() == 0)
    ctorch::fail(CTORCH_NOT_IMPLEMENTED, "CUDA graphs need cuda, which is not available: " + ctorch::cuda_absence_reason());
  auto h = std::make_unique<ctorch_cuda_graph_s>();
  h->graph = ctorch::cuda_backend::graph_new();
  *out = h.release();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_graph_capture_begin(ctorch_cuda_graph g, ctorch_cuda_graph share_pool) {
  CTORCH_TRY
  ctorch::require_ptr(g, "g");
  if (g->capturing) ctorch::fail(CTORCH_RUNTIME, "argument 'g': is already capturing");
  if (share_pool) ctorch::check_handle(share_pool, "share_pool");
  if (share_pool == g) ctorch::fail_arg("share_pool", "is the graph being captured");
  if (share_pool && share_pool->capturing) ctorch::fail_arg("share_pool", "is still capturing; end its capture first");
  ctorch::cuda_backend::graph_capture_begin(g->graph, share_pool ? share_pool->graph : nullptr);
  g->capturing = true;
  g->owner = std::this_thread::get_id();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_graph_capture_end(ctorch_cuda_graph g) {
  CTORCH_TRY
  ctorch::require_ptr(g, "g");
  if (!g->capturing) ctorch::fail(CTORCH_RUNTIME, "argument 'g': is not capturing (call ctorch_cuda_graph_capture_begin)");
  if (g->owner != std::this_thread::get_id())
    ctorch::fail(CTORCH_RUNTIME, "argument 'g': its capture began on another thread; end it on that thread");
  g->capturing = false;  // whatever capture_end does, the capture is over
  ctorch::cuda_backend::graph_capture_end(g->graph);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_graph_replay(ctorch_cuda_graph g) {
  CTORCH_TRY
  ctorch::require_ptr(g, "g");
  if (g->capturing) ctorch::fail(CTORCH_RUNTIME, "argument 'g': is still capturing (call ctorch_cuda_graph_capture_end)");
  ctorch::cuda_backend::graph_replay(g->graph);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_graph_reset(ctorch_cuda_graph g) {
  CTORCH_TRY
  ctorch::require_ptr(g, "g");
  if (g->capturing) ctorch::fail(CTORCH_RUNTIME, "argument 'g': is still capturing (call ctorch_cuda_graph_capture_end)");
  ctorch::cuda_backend::graph_reset(g->graph);
  CTORCH_CATCH
}

CTORCH_API void ctorch_cuda_graph_free(ctorch_cuda_graph g) {
  if (!ctorch::release_handle(g, __func__)) return;
  ctorch::cuda_backend::graph_free(g->graph);
  delete g;
}

}  // extern "C"
