// Work split across libtorch's intra-op threads from ctorch's own code.
#pragma once

#include <cstdint>
#include <functional>

namespace ctorch {
namespace infer {

// f(s) for every s in [0, n), the calls spread over the intra-op threads
// (at::parallel_for, chunks of one), or all on this thread where there is
// one, where the caller already runs inside a parallel region, or where
// the build has no OpenMP (intra_op.cpp says why). An exception from f
// comes out of this call (at::parallel_for's own handling).
void intra_op_for(int64_t n, const std::function<void(int64_t)> &f);

}  // namespace infer
}  // namespace ctorch
