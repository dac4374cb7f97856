// The CUDA backend: the one file of ctorch that includes CUDA headers (c10/cuda,
// ATen/cuda and, where found, ProcessGroupNCCL). Compiled only when the
// libtorch has CUDA (cmake/ctorch_cuda.cmake); see cuda_backend.h. Callers
// have validated the device ordinals.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#ifdef CTORCH_WITH_NCCL
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#define CTORCH_COMPAT_NCCL 1  // compat::nccl_process_group
#include "compat/compat.h"  // directly: a unity build may have read it already without this section
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include <memory>

#include "core/cuda_backend.h"  // after the c10d headers: compat.h's NCCL block uses them

namespace ctorch {
namespace cuda_backend {

bool compiled() noexcept { return true; }

bool nccl_compiled() noexcept {
#ifdef CTORCH_WITH_NCCL
  return true;
#else
  return false;
#endif
}

Properties properties(int device) {
  const cudaDeviceProp *p = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(device));
  Properties r;
  r.name = p->name;
  r.total_memory = static_cast<uint64_t>(p->totalGlobalMem);
  r.major = p->major;
  r.minor = p->minor;
  r.multi_processor_count = p->multiProcessorCount;
  return r;
}

// The caching allocator's tables exist once libtorch's lazy CUDA
// initialisation ran (a first CUDA tensor runs it): the calls below run it
// first, as torch.cuda's do, instead of failing with "Invalid device argument".
MemoryStats memory_stats(int device) {
  cuda_lazy_init();
  auto s = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  // Index 0 is StatType::AGGREGATE (all pools) in 1.13 and 2.x; the enum
  // moved namespace in between, its value did not.
  auto u = [](int64_t v) { return static_cast<uint64_t>(v < 0 ? 0 : v); };
  MemoryStats r;
  r.allocated = u(s.allocated_bytes[0].current);
  r.reserved = u(s.reserved_bytes[0].current);
  r.peak_allocated = u(s.allocated_bytes[0].peak);
  r.peak_reserved = u(s.reserved_bytes[0].peak);
  r.alloc_retries = u(s.num_alloc_retries);
  r.ooms = u(s.num_ooms);
  return r;
}

void reset_peak_memory_stats(int device) {
  cuda_lazy_init();
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
}

void empty_cache() {
  cuda_lazy_init();
  c10::cuda::CUDACachingAllocator::emptyCache();
}

// ---- CUDA graphs ------------------------------------------------------------------

struct Graph {
  std::unique_ptr<at::cuda::CUDAGraph> graph = std::make_unique<at::cuda::CUDAGraph>();
  // The side stream captures run on (capture cannot use the legacy default
  // stream), kept for the graph's life as torch.cuda.graph keeps one.
  c10::optional<c10::cuda::CUDAStream> stream;
  // Makes `stream` current on the capturing thread between begin and end.
  std::unique_ptr<c10::cuda::CUDAStreamGuard> guard;
};

Graph *graph_new() { return new Graph(); }

void graph_free(Graph *g) noexcept {
  if (!g) return;
  if (g->guard) {
    // Freed while capturing: end the capture, or the stream stays in capture
    // mode and every later launch on it fails.
    try {
      g->graph->capture_end();
    } catch (...) {
    }
    g->guard.reset();
  }
  try {
    delete g;
  } catch (...) {
  }
}

void graph_capture_begin(Graph *g, Graph *share_pool) {
  cuda_lazy_init();
  c10::DeviceIndex dev = c10::cuda::current_device();
  // torch.cuda.graph.__enter__: synchronise, return cached blocks so the
  // graph's private pool starts from a clean allocator.
  c10::cuda::device_synchronize();
  c10::cuda::CUDACachingAllocator::emptyCache();
  if (!g->stream || g->stream->device_index() != dev) g->stream = c10::cuda::getStreamFromPool(false, dev);
  decltype(g->graph->pool()) pool{0, 0};  // MempoolId_t, whose namespace moved in 2.x
  if (share_pool) pool = share_pool->graph->pool();
  g->guard = std::make_unique<c10::cuda::CUDAStreamGuard>(*g->stream);
  try {
    g->graph->capture_begin(pool);
  } catch (...) {
    g->guard.reset();
    throw;
  }
}

void graph_capture_end(Graph *g) {
  try {
    g->graph->capture_end();
  } catch (...) {
    g->guard.reset();
    // A failed capture leaves the CUDAGraph unusable: start afresh.
    g->graph = std::make_unique<at::cuda::CUDAGraph>();
    throw;
  }
  g->guard.reset();
}

void graph_replay(Graph *g) { g->graph->replay(); }

void graph_reset(Graph *g) {
  // A fresh instance rather than CUDAGraph::reset(), which some versions do
  // not let capture again; the old one's destructor releases its pool.
  g->graph = std::make_unique<at::cuda::CUDAGraph>();
}

// ---- NCCL ----------------------------------------------------------------------------

c10::intrusive_ptr<c10d::ProcessGroup> nccl_process_group(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                                          int size, std::chrono::milliseconds timeout) {
#ifdef CTORCH_WITH_NCCL
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return compat::nccl_process_group(store, rank, size, opts);
#else
  (void)store, (void)rank, (void)size, (void)timeout;
  fail(CTORCH_NOT_IMPLEMENTED, "the NCCL backend is not available: ctorch was built without nccl.h "
                               "(configure with CTORCH_NCCL_INCLUDE_DIR)");
#endif
}

}  // namespace cuda_backend
}  // namespace ctorch
