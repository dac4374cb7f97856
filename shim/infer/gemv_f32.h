// One input row times a float32 weight, from a packed copy of the weight
// (decoding). The inference Linear's one-row path where the
// BLAS's one-row kernel is slow: MKL's generic path on x86 CPUs not made by
// Intel, OpenBLAS everywhere (gemv_f32.cpp says what was measured).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace ctorch {
namespace infer {

// "avx512" or "avx2" where this CPU runs the kernels (x86-64 with AVX2 and
// FMA, or AVX-512F), else nullptr: the caller keeps its other paths.
const char *gemv_isa();

// The weight w ([out, in], any strides, float32 CPU) in the kernels' layout:
// groups of 8 output rows, each group's rows interleaved 16 inputs at a
// time, so that a group is one contiguous stream; rows padded to a multiple
// of 8 and inputs to a multiple of 16 with zeros. A NEW 1-D tensor of
// ceil(out / 8) * 8 * ceil(in / 16) * 16 floats.
at::Tensor gemv_pack(const at::Tensor &w);

// x ([..., in] with one row, float32 CPU) times the weight packed by
// gemv_pack from an [out, in] weight, plus b (undefined: none): a NEW
// tensor of x's shape with out as its last size. threads >= 2 splits the
// output rows into one block per thread (at::parallel_for).
at::Tensor gemv_run(const at::Tensor &x, const at::Tensor &packed, int64_t out, const at::Tensor &b, int64_t threads);

}  // namespace infer
}  // namespace ctorch
