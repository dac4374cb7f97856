// at::parallel_for, compiled with OpenMP.
//
// libtorch's at::parallel_for is an inline template, and with libtorch's
// OpenMP backend (PyPI's and Debian's: AT_PARALLEL_OPENMP) it runs its work
// on the intra-op threads only in a translation unit compiled with OpenMP:
// ATen/ParallelOpenMP.h defines INTRA_OP_PARALLEL under _OPENMP, and
// without it the template runs every chunk on the calling thread. ctorch
// compiles without OpenMP, so without this file the inference Linear's
// "split across the threads" runs on one thread (perf: the second thread
// spun in libgomp and never entered the kernel). This file alone is
// compiled with -fopenmp (CMakeLists.txt) and linked to the libgomp that
// libtorch_cpu loads, so libtorch's thread team runs the chunks. Where the
// compiler is not GCC (the clang sanitizer builds: clang's OpenMP calls
// LLVM's runtime, not libgomp) it is compiled without, and runs serially:
// the same results, one thread.
#include "infer/intra_op.h"

#include <ATen/Parallel.h>

namespace ctorch {
namespace infer {

void intra_op_for(int64_t n, const std::function<void(int64_t)> &f) {
  at::parallel_for(0, n, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t s = lo; s < hi; ++s) f(s);
  });
}

}  // namespace infer
}  // namespace ctorch
