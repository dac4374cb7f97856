// Private to lm/'s fused decode step (model_step.cpp): the attention of one
// query head of one new token over its key head's cached prefix, in
// float32, with a portable variant and AVX2+FMA and AVX-512 ones chosen as
// the packed kernels' are (qkernels.h: qk::isa_active, CTORCH_LM_KERNELS).
#pragma once

#include <cstdint>

namespace ctorch {
namespace lm {

// out[0, D) = sum over j in [j0, L) of softmax_j(scale * q . keys_j) vals_j,
// keys_j and vals_j the rows j of [L, D] row-major arrays; the softmax in
// float32 (the largest score subtracted first). prob: scratch of at least L
// floats. j0 < L.
void attend(const float *q, const float *keys, const float *vals, int64_t j0, int64_t L, int64_t D, float scale,
            float *prob, float *out);

}  // namespace lm
}  // namespace ctorch
