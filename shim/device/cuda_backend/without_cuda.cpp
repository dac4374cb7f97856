// The CUDA backend of a ctorch built against a libtorch without CUDA
// (Debian's 1.13.1, CPU-only wheels), or without the CUDA headers it needs
// (cmake/ctorch_cuda.cmake): every function fails with
// CTORCH_NOT_IMPLEMENTED. The public entry points usually refuse earlier
// (no CUDA device), naming the device; this is the backstop. See
// cuda_backend.h.
#include "core/cuda_backend.h"

namespace ctorch {
namespace cuda_backend {

namespace {
[[noreturn]] void absent(const char *what) {
  fail(CTORCH_NOT_IMPLEMENTED, std::string(what) + " needs ctorch's CUDA backend, which this build lacks (a libtorch "
       "without CUDA, or incomplete CUDA headers: see cmake/ctorch_cuda.cmake)");
}
}  // namespace

bool compiled() noexcept { return false; }
bool nccl_compiled() noexcept { return false; }
Properties properties(int) { absent("device properties"); }
MemoryStats memory_stats(int) { absent("memory statistics"); }
void reset_peak_memory_stats(int) { absent("memory statistics"); }
void empty_cache() { absent("empty_cache"); }

struct Graph {};
Graph *graph_new() { absent("CUDA graphs"); }
void graph_free(Graph *g) noexcept { delete g; }
void graph_capture_begin(Graph *, Graph *) { absent("CUDA graphs"); }
void graph_capture_end(Graph *) { absent("CUDA graphs"); }
void graph_replay(Graph *) { absent("CUDA graphs"); }
void graph_reset(Graph *) { absent("CUDA graphs"); }

c10::intrusive_ptr<c10d::ProcessGroup> nccl_process_group(const c10::intrusive_ptr<c10d::Store> &, int, int,
                                                          std::chrono::milliseconds) {
  absent("the NCCL backend");
}

}  // namespace cuda_backend
}  // namespace ctorch
