// Native memory accounting for garbage-collected bindings
// (ctorch_memory_bytes): libtorch's default CPU allocator is wrapped by one
// that counts the bytes of every live allocation in an atomic, and CUDA's
// caching allocator is asked for its own statistics.
#define CTORCH_COMPAT_MEMORY
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#include "cuda_backend.h"  // ctorch::cuda_lazy_init

#include <ATen/Context.h>
#include <c10/core/CPUAllocator.h>
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

std::atomic<int64_t> g_cpu_bytes{0};
c10::DeleterFnPtr g_base_deleter = nullptr;

// Sizes are taken from the C allocator (malloc_usable_size) at allocation
// and at release, which gives the same number for the same block: the
// deleter then needs no context of its own, so a counted DataPtr keeps
// data == context and raw_allocate/raw_deleter keep working.
void counted_delete(void *p) {
  if (p) g_cpu_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  g_base_deleter(p);
}

struct CountingCPUAllocator final : c10::Allocator {
  explicit CountingCPUAllocator(c10::Allocator *base) : base_(base) {}

  c10::DataPtr allocate(size_t n) CTORCH_COMPAT_ALLOCATE_CONST override {
    c10::DataPtr p = base_->allocate(n);
    // Only plain malloc'ed blocks with the default deleter are counted;
    // anything else passes through untouched.
    if (!p.get() || p.get() != p.get_context() || p.get_deleter() != g_base_deleter) return p;
    c10::Device dev = p.device();
    void *data = p.release_context();
    g_cpu_bytes.fetch_add(static_cast<int64_t>(malloc_usable_size(data)), std::memory_order_relaxed);
    return c10::DataPtr(data, data, &counted_delete, dev);
  }
  c10::DeleterFnPtr raw_deleter() const override { return &counted_delete; }
  CTORCH_COMPAT_ALLOCATOR_COPY_DATA(base_)

 private:
  c10::Allocator *base_;
};

// CTORCH_HEAP=keep (read when the library is loaded): glibc keeps freed
// memory for the next allocation instead of giving it back to the system.
// By default glibc serves blocks above a threshold (128 KiB, rising as such
// blocks are freed) with mmap and trims the heap's free top above another,
// so a model whose calls make and free megabytes of activations can get
// every page of them from the kernel again at every call.
// A service that runs the same shapes over and over keeps its peak instead
// (docs/modules.md, "Memory between calls"). Elsewhere, and for any other
// value, the C library's own policy.
void apply_heap_policy() {
#ifdef __GLIBC__
  const char *v = std::getenv("CTORCH_HEAP");
  if (!v || std::strcmp(v, "keep") != 0) return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: bigger blocks are mmap'ed still
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

// Installed when the library is loaded, before any ctorch call: tensors
// allocated earlier keep their own deleters and are simply not counted.
struct Installer {
  Installer() {
    apply_heap_policy();
    c10::Allocator *base = c10::GetCPUAllocator();
    // Wrap only libtorch's own default allocator: its blocks come from the
    // C allocator, which malloc_usable_size needs.
    if (base != c10::GetDefaultCPUAllocator()) return;
    {
      c10::DataPtr probe = base->allocate(1);
      if (!probe.get() || probe.get() != probe.get_context()) return;
      g_base_deleter = probe.get_deleter();
    }
    if (!g_base_deleter) return;
    // Leaked on purpose: storages allocated through it may outlive any
    // static destructor.
    static auto *counting = new CountingCPUAllocator(base);
    c10::SetCPUAllocator(counting, /*priority=*/0);
  }
};
Installer g_installer;

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_memory_cpu_counter(const int64_t **out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  // std::atomic<int64_t> is lock-free with int64_t's layout on every platform ctorch builds on.
  static_assert(sizeof(g_cpu_bytes) == sizeof(int64_t) && std::atomic<int64_t>::is_always_lock_free,
                "the counter is read as a plain int64_t");
  *out = reinterpret_cast<const int64_t *>(&g_cpu_bytes);
  CTORCH_CATCH
}

CTORCH_API void ctorch_tensor_free_many(const ctorch_tensor *handles, size_t n) {
  if (!handles) return;
  for (size_t i = 0; i < n; ++i) ctorch_tensor_free(handles[i]);
}

CTORCH_API ctorch_status ctorch_memory_bytes(int64_t *out, ctorch_device_type type) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = 0;
  switch (type) {
    case CTORCH_DEVICE_CPU:
      *out = g_cpu_bytes.load(std::memory_order_relaxed);
      break;
    case CTORCH_DEVICE_CUDA:
      // The allocator's statistics need libtorch's lazy CUDA initialisation
      // (before it they fail with "Invalid device argument"): nothing is
      // allocated then, but asking must still work.
      if (at::hasCUDA()) {
        ctorch::cuda_lazy_init();
        *out = ctorch::compat::cuda_allocated_bytes(static_cast<int>(at::getNumGPUs()), [](int d) {
          return static_cast<int64_t>(ctorch::cuda_backend::memory_stats(d).allocated);
        });
      }
      break;
    case CTORCH_DEVICE_META:
    case CTORCH_DEVICE_MPS:
    case CTORCH_DEVICE_XPU:
    case CTORCH_DEVICE_HIP:
      ctorch::fail(CTORCH_NOT_IMPLEMENTED, "argument 'type': no memory count for this device type");
    default:
      ctorch::fail_arg("type", "invalid ctorch_device_type value " + std::to_string(static_cast<int>(type)));
  }
  CTORCH_CATCH
}

}  // extern "C"
