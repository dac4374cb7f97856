// The CUDA-specific half of ctorch's GPU support, behind a small interface.
//
// Everything that can be done through libtorch's device-generic c10/ATen
// interfaces (device count, current device, synchronisation, generators,
// streams, events, pinned memory) lives in device.cpp and stream.cpp and
// needs no CUDA header. What libtorch exposes only through its CUDA headers
// (the caching allocator's counters, device properties, CUDA graphs, the NCCL
// process group) lives in exactly one file: cuda_backend/with_cuda.cpp,
// compiled when the libtorch has CUDA (CMake target torch_cuda). Without it,
// cuda_backend/without_cuda.cpp defines the same functions, each failing with
// CTORCH_NOT_IMPLEMENTED, so the library and its symbols are the same on
// every build (cmake/ctorch_cuda.cmake picks the file).
//
// Callers validate arguments and device ordinals before calling in (see
// ctorch::cuda_device); these functions throw ctorch::StatusError or c10
// errors, never return failure codes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "internal.h"

namespace c10d {
class ProcessGroup;
class Store;
}  // namespace c10d

namespace ctorch {

// ---- shared by device.cpp, stream.cpp, amp.cpp, dist.cpp ------------------

// Number of usable CUDA devices (0 without CUDA); never initialises CUDA
// where libtorch has none.
int cuda_device_count();
// Runs libtorch's lazy CUDA initialisation once (the caching allocator's
// per-device state: its statistics fail with "Invalid device argument"
// before it). Callers have checked cuda_device_count() > 0.
void cuda_lazy_init();
// Why CUDA is unusable, for messages: "this libtorch was built without CUDA"
// or "no CUDA device is visible to this process".
std::string cuda_absence_reason();
// Validates a CUDA ordinal argument (-1 = the current device) and returns
// the real ordinal: INVALID_ARGUMENT for < -1, NOT_IMPLEMENTED naming
// "cuda:N" when CUDA is unusable, INVALID_ARGUMENT when N >= device count.
int cuda_device(int device, const char *arg);
// Same for a ctorch_device that must be a CUDA device (INVALID_ARGUMENT
// naming the device otherwise); returns it with a real index.
c10::Device cuda_device(const ctorch_device &device, const char *arg, const char *what);
// A new generator for dev (CPU or CUDA) seeded with seed.
at::Generator new_generator(const c10::Device &dev, uint64_t seed);
// Why an NCCL process group cannot be made here ("" when it can): no NCCL in
// this build, or no CUDA device.
std::string nccl_unavailable_reason();

namespace cuda_backend {

// True in with_cuda.cpp, false in without_cuda.cpp.
bool compiled() noexcept;
// True when with_cuda.cpp was compiled with ProcessGroupNCCL.
bool nccl_compiled() noexcept;

struct Properties {
  std::string name;
  uint64_t total_memory = 0;
  int major = 0, minor = 0, multi_processor_count = 0;
};
Properties properties(int device);

struct MemoryStats {
  uint64_t allocated = 0, reserved = 0, peak_allocated = 0, peak_reserved = 0, alloc_retries = 0, ooms = 0;
};
MemoryStats memory_stats(int device);
void reset_peak_memory_stats(int device);
void empty_cache();

// CUDA graphs: an opaque at::cuda::CUDAGraph plus its capture state.
struct Graph;
Graph *graph_new();
void graph_free(Graph *g) noexcept;
void graph_capture_begin(Graph *g, Graph *share_pool);
void graph_capture_end(Graph *g);
void graph_replay(Graph *g);
void graph_reset(Graph *g);

// A c10d::ProcessGroup whose CUDA backend is ProcessGroupNCCL, on `store`
// (already prefixed for the group, as dist.cpp does for Gloo).
c10::intrusive_ptr<c10d::ProcessGroup> nccl_process_group(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                                          int size, std::chrono::milliseconds timeout);

}  // namespace cuda_backend
}  // namespace ctorch
