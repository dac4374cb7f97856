// One row times a packed float32 weight (gemv_f32.h): two kernels, AVX-512F
// and AVX2+FMA, chosen once by what the CPU and OS run.
//
// Why our own: decoding multiplies one row by every
// weight of the model, and that streams the weights from memory once per
// token (GPT-2 small: 494 MB). Measured on the project's machine (AMD EPYC
// Zen 4, 2 cores), GFLOP/s at 1 / 2 threads, 1 x 768 x 2304
// (L3-resident) and 1 x 768 x 50257 (the LM head, from DRAM):
//   MKL's one-row product (its generic path on AMD)     27.7 / 27.6    6.6 /  6.6
//   oneDNN, weight prepacked                            30.0 / 46.3    7.6 / 15.6
//   ONNX Runtime (MLAS, weight prepacked)               38.6 / 68.7   11.1 / 22.5
//   these kernels, rows read as stored ([out, in])      40.0 / 69.4    8.4 / 15.0
//   these kernels, the packed layout                    36.5 / 72.0   14.7 / 18.9
// From DRAM the rows read as stored are eight streams 3 KB apart; the
// packed layout (8 rows interleaved 16 floats at a time) is one contiguous
// stream, which the hardware prefetchers follow at nearly twice the rate.
// Eight accumulators (one per row) keep both FMA pipes busy.
//
// CTORCH_GEMV_ISA=avx2|none caps the instruction set (read at the first
// call in a process): the tests run the AVX2 kernel on AVX-512 machines too.
#include "infer/gemv_f32.h"

#include "infer/intra_op.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define CTORCH_GEMV_X86 1
#endif

namespace ctorch {
namespace infer {

namespace {

// y[g*8 + r] = b[g*8 + r] + dot(x[0:kp], group g's row r), groups [g0, g1),
// rows >= n (padding) not written.
using GemvKernel = void (*)(const float *x, const float *p, int64_t kp, const float *b, float *y, int64_t n,
                            int64_t g0, int64_t g1);

#ifdef CTORCH_GEMV_X86
// GCC 12 warns inside its own AVX-512 intrinsics (-Wmaybe-uninitialized on
// the _mm512_undefined_ps their masked builtins take), wherever they are
// inlined: a known false report, silenced here for these kernels only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
void gemv_store(const float *s, const float *b, float *y, int64_t n, int64_t g) {
  for (int64_t r = 0; r < 8 && g * 8 + r < n; ++r) y[g * 8 + r] = s[r] + (b ? b[g * 8 + r] : 0.f);
}

// A group's next 4 KB, fetched while this chunk is multiplied: the stream
// runs ahead of what the hardware prefetcher alone fetches (14.5 -> 15.4
// GFLOP/s on the LM head at one thread).
constexpr int64_t kGemvAhead = 1024;

__attribute__((target("avx2,fma"))) float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The sum of v's 16 lanes.
__attribute__((target("avx512f"))) float hsum512(__m512 v) {
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4E));  // 256-bit halves
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1));  // 128-bit lanes
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4E));        // pairs
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));        // neighbours
  return _mm512_cvtss_f32(v);
}

__attribute__((target("avx512f"))) void rows_avx512(const float *x, const float *p, int64_t kp, const float *b,
                                                     float *y, int64_t n, int64_t g0, int64_t g1) {
  for (int64_t g = g0; g < g1; ++g) {
    const float *q = p + g * 8 * kp;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (int64_t c = 0; c < kp; c += 16, q += 128) {
      for (int l = 0; l < 128; l += 16) _mm_prefetch(reinterpret_cast<const char *>(q + kGemvAhead + l), _MM_HINT_T0);
      __m512 xv = _mm512_loadu_ps(x + c);
      a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q), xv, a0);
      a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 16), xv, a1);
      a2 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 32), xv, a2);
      a3 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 48), xv, a3);
      a4 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 64), xv, a4);
      a5 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 80), xv, a5);
      a6 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 96), xv, a6);
      a7 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 112), xv, a7);
    }
    float s[8] = {hsum512(a0), hsum512(a1), hsum512(a2), hsum512(a3),
                  hsum512(a4), hsum512(a5), hsum512(a6), hsum512(a7)};
    gemv_store(s, b, y, n, g);
  }
}

// The same layout in 8-float halves: each row's two halves go into its one
// accumulator (eight chains still fill both pipes).
__attribute__((target("avx2,fma"))) void rows_avx2(const float *x, const float *p, int64_t kp, const float *b,
                                                   float *y, int64_t n, int64_t g0, int64_t g1) {
  for (int64_t g = g0; g < g1; ++g) {
    const float *q = p + g * 8 * kp;
    __m256 a[8];
    for (auto &v : a) v = _mm256_setzero_ps();
    for (int64_t c = 0; c < kp; c += 16, q += 128) {
      for (int l = 0; l < 128; l += 16) _mm_prefetch(reinterpret_cast<const char *>(q + kGemvAhead + l), _MM_HINT_T0);
      __m256 lo = _mm256_loadu_ps(x + c), hi = _mm256_loadu_ps(x + c + 8);
      for (int r = 0; r < 8; ++r) {
        a[r] = _mm256_fmadd_ps(_mm256_loadu_ps(q + r * 16), lo, a[r]);
        a[r] = _mm256_fmadd_ps(_mm256_loadu_ps(q + r * 16 + 8), hi, a[r]);
      }
    }
    float s[8];
    for (int r = 0; r < 8; ++r) s[r] = hsum256(a[r]);
    gemv_store(s, b, y, n, g);
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

struct GemvIsa {
  const char *name = nullptr;
  GemvKernel kernel = nullptr;
};

GemvIsa gemv_pick() {
  GemvIsa isa;
#ifdef CTORCH_GEMV_X86
  const char *cap = std::getenv("CTORCH_GEMV_ISA");
  std::string c = cap ? cap : "";
  if (c == "none") return isa;
  // __builtin_cpu_supports also asks the OS (XGETBV) whether it saves the
  // registers: a CPU with AVX-512 under an OS that does not is not taken.
  if (c != "avx2" && __builtin_cpu_supports("avx512f")) return {"avx512", rows_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"avx2", rows_avx2};
#endif
  return isa;
}

const GemvIsa &gemv_chosen() {
  static const GemvIsa chosen = gemv_pick();
  return chosen;
}

}  // namespace

const char *gemv_isa() { return gemv_chosen().name; }

at::Tensor gemv_pack(const at::Tensor &w) {
  at::NoGradGuard no_grad;
  int64_t out = w.size(0), in = w.size(1), groups = (out + 7) / 8, kp = (in + 15) / 16 * 16;
  at::Tensor p = at::zeros({groups * 8, kp}, w.options());
  p.narrow(0, 0, out).narrow(1, 0, in).copy_(w);
  return p.view({groups, 8, kp / 16, 16}).permute({0, 2, 1, 3}).contiguous().view({-1});
}

at::Tensor gemv_run(const at::Tensor &x, const at::Tensor &packed, int64_t out, const at::Tensor &b, int64_t threads) {
  GemvKernel kernel = gemv_chosen().kernel;
  int64_t in = x.size(-1), kp = (in + 15) / 16 * 16, groups = (out + 7) / 8;
  TORCH_CHECK(kernel && x.numel() == in && packed.is_contiguous() && packed.numel() == groups * 8 * kp,
              "gemv_run: an input or packed weight it was not made for");
  at::Tensor xc = x.reshape({in}).contiguous();
  if (kp != in) xc = at::constant_pad_nd(xc, {0, kp - in});  // zeros, as the packed inputs
  at::Tensor bc = b.defined() ? b.contiguous() : at::Tensor();
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = out;
  at::Tensor y = at::empty(shape, x.options());
  const float *xp = xc.data_ptr<float>(), *pp = packed.data_ptr<float>();
  const float *bp = bc.defined() ? bc.data_ptr<float>() : nullptr;
  float *yp = y.data_ptr<float>();
  if (threads < 2 || groups < 2 * threads) {
    kernel(xp, pp, kp, bp, yp, out, 0, groups);
    return y;
  }
  // A whole number of 64-byte lines of y per thread (2 groups of 8 floats):
  // the threads never write the same line.
  int64_t block = ((groups + threads - 1) / threads + 1) / 2 * 2;
  intra_op_for(threads, [&](int64_t s) {
    int64_t g0 = s * block, g1 = std::min(groups, g0 + block);
    if (g0 < g1) kernel(xp, pp, kp, bp, yp, out, g0, g1);
  });
  return y;
}

}  // namespace infer
}  // namespace ctorch
