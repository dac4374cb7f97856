// Differences between the libtorch versions ctorch builds against (Debian's
// 1.13 and PyPI's 2.x), each as one named inline function or macro with the
// versions it covers. Nothing else in shim/ tests TORCH_VERSION_*.
#pragma once

#include <c10/core/Allocator.h>
#include <torch/csrc/api/include/torch/version.h>

#include <cstdint>

#if TORCH_VERSION_MAJOR >= 2
#include <c10/core/CachingDeviceAllocator.h>
#endif

// c10::Allocator::allocate is const in 1.13, non-const in 2.x (since 2.3);
// 2.x also requires copy_data (since 2.3), which a wrapping allocator
// forwards to the allocator it wraps.
#if TORCH_VERSION_MAJOR >= 2
#define CTORCH_COMPAT_ALLOCATE_CONST
#define CTORCH_COMPAT_ALLOCATOR_COPY_DATA(base) \
  void copy_data(void *dest, const void *src, std::size_t count) const override { base->copy_data(dest, src, count); }
#else
#define CTORCH_COMPAT_ALLOCATE_CONST const
#define CTORCH_COMPAT_ALLOCATOR_COPY_DATA(base)
#endif

namespace ctorch {
namespace compat {

// Bytes CUDA's caching allocator has handed out, over all devices. 2.x
// exposes it through c10's device-generic DeviceAllocator (2.8+); 1.13 has
// no such interface in c10 (and Debian's build has no CUDA): 0.
inline int64_t cuda_allocated_bytes(int n_devices) {
#if TORCH_VERSION_MAJOR >= 2
  int64_t total = 0;
  auto *a = c10::getDeviceAllocator(c10::DeviceType::CUDA);
  for (int i = 0; i < n_devices; ++i)
    total += a->getDeviceStats(static_cast<c10::DeviceIndex>(i)).allocated_bytes[0].current;
  return total;
#else
  (void)n_devices;
  return 0;
#endif
}

}  // namespace compat
}  // namespace ctorch
