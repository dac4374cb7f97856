// The prompt's products with 8-bit activations (qkernels.h, "Int8
// activations"): each row of x quantised per group of 32 values to int8
// with one scale (llama.cpp's Q8_0 activations), then multiplied by the
// packed Q8 or Q4 blocks in 32-bit integers with AVX-512 VNNI's vpdpbusd
// (64 products a step), each group's integer sum scaled once.
//
// Why: a prompt is compute-bound, and Debian's libtorch has no fast
// float32 GEMM to hand the unpacked weights to (qweight.cpp's
// prefill_rows_of). The float32 kernels make one multiply-add per
// product and one load of x for each; vpdpbusd makes four products an
// instruction lane and reads x once for R weight rows.
//
// vpdpbusd multiplies unsigned bytes by signed bytes:
//   Q4: the nibbles (0..15) are the unsigned side, x the signed; the
//       group's offset adds offset * sum(x) (the sum of the float32 x).
//   Q8: both sides are signed, so x goes in as x + 128 (its sign bit
//       flipped) and the sum starts from -128 * sum(w) lane by lane
//       (vpdpbusd of 0x80 bytes with w, once per weight block, shared by
//       every row of x): the integers are exact.
// The result differs from the float32 kernels' by x's rounding to 8 bits
// (a relative 1/254 of each group's largest value at most), as llama.cpp's
// does; each row's result does not depend on the other rows in x. The
// packed data is prefetched ahead as the float32 kernels do it
// (qprefetch.h): decode reads it once, from memory.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "lm/qkernels.h"
#include "lm/qprefetch.h"
#include "lm/x86.h"

CTORCH_LM_VECTOR_BEGIN

namespace ctorch {
namespace lm {
namespace qk {

#ifdef CTORCH_LM_X86
namespace {

#define VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c"), always_inline)) inline
#define VNNI_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c")))

VNNI float table_at(const View &w, const float *f, const uint16_t *h, int64_t k) {
  return w.half ? _cvtsh_ss(h[k]) : f[k];
}

// Row m of x: its groups' scales into a.d16 (two groups a pair), values
// into a.q, sums into a.sum.
VNNI_FN void quantize_row(const float *x, int64_t K, int8_t *q, float *d16, float *sum) {
  const int64_t groups = K / 32;
  for (int64_t g = 0; g < groups; ++g) {
    const __m512 x0 = _mm512_loadu_ps(x + 32 * g), x1 = _mm512_loadu_ps(x + 32 * g + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    const __m512 vid = _mm512_set1_ps(id);
    // (round to nearest even: the products stay within [-127, 127])
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q + 32 * g),
                     _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(x0, vid))));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q + 32 * g + 16),
                     _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(x1, vid))));
    for (int j = 0; j < 8; ++j) d16[16 * (g / 2) + 8 * (g % 2) + j] = d;
    sum[g] = _mm512_reduce_add_ps(_mm512_add_ps(x0, x1));
  }
  if (groups % 2) {  // the pair's missing half: zero values and scales
    std::memset(q + 32 * groups, 0, 32);
    for (int j = 0; j < 8; ++j) d16[16 * (groups / 2) + 8 + j] = 0.f;
  }
}

// Weight rows r .. r+R-1 times rows m0 .. m0+MB-1 of a.
template <int R, int MB, int F>
VNNI void block(const View &w, int64_t r, const Acts8 &a, int64_t m0, float *y, int64_t ldy) {
  __m512 acc[R][MB];
  CTORCH_UNROLL
  for (int i = 0; i < R; ++i)
    CTORCH_UNROLL
    for (int m = 0; m < MB; ++m) acc[i][m] = _mm512_setzero_ps();
  const int64_t kp = a.pairs * 64;
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  constexpr int64_t step = F == kQ8 ? 64 : 32;  // bytes of a row per pair of groups
  const Ahead ahead = ahead_of<R>(w, r);
  for (int64_t p = 0; p < a.pairs; ++p) {
    const int64_t g = 2 * p;
    const bool two = g + 1 < w.ngroups;
    if (w.prefetch) prefetch(ahead, p * step * R, step * R);
    __m512i wv[R], base[R];
    __m512 ws[R];
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const int64_t k = (r + i) * w.scale_stride + g;
      const float s0 = table_at(w, w.scale, w.scale16, k), s1 = two ? table_at(w, w.scale, w.scale16, k + 1) : 0.f;
      ws[i] = _mm512_castpd_ps(
          _mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(s0)), _mm256_castps_pd(_mm256_set1_ps(s1)), 1));
      const uint8_t *row = w.data + (r + i) * w.row_bytes;
      if (F == kQ8) {
        wv[i] = two ? _mm512_loadu_si512(row + 64 * p) : _mm512_maskz_loadu_epi8(0xFFFFFFFFull, row + 64 * p);
        base[i] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), flip, wv[i]));
      } else {
        const __m256i b = two ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row + 32 * p))
                              : _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(row + 32 * p)));
        const __m256i nib = _mm256_set1_epi8(0x0F);
        const __m256i lo = _mm256_and_si256(b, nib), hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), nib);
        // [lo g, lo g+1, hi g, hi g+1] in 16-byte lanes, to x's order
        // [lo g, hi g, lo g+1, hi g+1]
        const __m512i c = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        wv[i] = _mm512_shuffle_i64x2(c, c, _MM_SHUFFLE(3, 1, 2, 0));
        base[i] = _mm512_setzero_si512();
      }
    }
    CTORCH_UNROLL
    for (int m = 0; m < MB; ++m) {
      const __m512i xq = _mm512_loadu_si512(a.q.data() + (m0 + m) * kp + 64 * p);
      const __m512 xd = _mm512_loadu_ps(a.d16.data() + ((m0 + m) * a.pairs + p) * 16);
      const __m512i xu = F == kQ8 ? _mm512_xor_si512(xq, flip) : xq;
      CTORCH_UNROLL
      for (int i = 0; i < R; ++i) {
        const __m512i d = F == kQ8 ? _mm512_dpbusd_epi32(base[i], xu, wv[i]) : _mm512_dpbusd_epi32(base[i], wv[i], xu);
        acc[i][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(ws[i], xd), acc[i][m]);
      }
    }
  }
  if (F == kQ4) {  // the offsets: sum over groups of offset * sum(x)
    const int64_t ng = w.ngroups;
    const int64_t sstride = a.pairs * 2;
    for (int64_t g = 0; g < ng; g += 16) {
      const __mmask16 mk = ng - g >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (ng - g)) - 1);
      __m512 wo[R];
      CTORCH_UNROLL
      for (int i = 0; i < R; ++i) {
        const int64_t k = (r + i) * w.scale_stride + g;
        wo[i] = w.half ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mk, w.offset16 + k))
                       : _mm512_maskz_loadu_ps(mk, w.offset + k);
      }
      CTORCH_UNROLL
      for (int m = 0; m < MB; ++m) {
        const __m512 xs = _mm512_maskz_loadu_ps(mk, a.sum.data() + (m0 + m) * sstride + g);
        CTORCH_UNROLL
        for (int i = 0; i < R; ++i) acc[i][m] = _mm512_fmadd_ps(wo[i], xs, acc[i][m]);
      }
    }
  }
  CTORCH_UNROLL
  for (int i = 0; i < R; ++i)
    CTORCH_UNROLL
    for (int m = 0; m < MB; ++m) y[(m0 + m) * ldy + r + i] = _mm512_reduce_add_ps(acc[i][m]);
}

// 4 weight rows by 4 rows of x: 16 accumulators, and the weight blocks
// (their bytes, base sums and scales) in registers beside them.
constexpr int kR = 4, kMB = 4;

template <int MB, int F>
VNNI void rows_for(const View &w, int64_t r0, int64_t r1, const Acts8 &a, int64_t m0, float *y, int64_t ldy) {
  int64_t r = r0;
  for (; r + kR <= r1; r += kR) block<kR, MB, F>(w, r, a, m0, y, ldy);
  for (; r < r1; ++r) block<1, MB, F>(w, r, a, m0, y, ldy);
}

// Blocks of 64 weight rows (in the L2 cache) go over every 4 rows of x
// (in the L1 cache).
template <int F>
VNNI_FN void run(const View &w, int64_t r0, int64_t r1, const Acts8 &a, float *y, int64_t ldy) {
  for (int64_t b = r0; b < r1; b += 64) {
    const int64_t e = std::min(r1, b + 64);
    int64_t m = 0;
    for (; m + kMB <= a.M; m += kMB) rows_for<kMB, F>(w, b, e, a, m, y, ldy);
    switch (a.M - m) {
      case 3: rows_for<3, F>(w, b, e, a, m, y, ldy); break;
      case 2: rows_for<2, F>(w, b, e, a, m, y, ldy); break;
      case 1: rows_for<1, F>(w, b, e, a, m, y, ldy); break;
      default: break;
    }
  }
}

}  // namespace

bool int8_supported() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") && isa_supported(Isa::avx512);
}

void quantize_acts(const float *x, int64_t M, int64_t K, int64_t ldx, Acts8 &a) {
  a.M = M;
  a.K = K;
  a.pairs = (K / 32 + 1) / 2;
  a.q.resize(size_t(M * a.pairs * 64));
  a.d16.resize(size_t(M * a.pairs * 16));
  a.sum.resize(size_t(M * a.pairs * 2));
  for (int64_t m = 0; m < M; ++m)
    quantize_row(x + m * ldx, K, a.q.data() + m * a.pairs * 64, a.d16.data() + m * a.pairs * 16,
                 a.sum.data() + m * a.pairs * 2);
}

void int8_rows(const View &w, int64_t r0, int64_t r1, const Acts8 &a, float *y, int64_t ldy) {
  if (w.fmt == kQ8) run<kQ8>(w, r0, r1, a, y, ldy);
  else run<kQ4>(w, r0, r1, a, y, ldy);
}

#else

bool int8_supported() { return false; }
void quantize_acts(const float *, int64_t, int64_t, int64_t, Acts8 &) {}
void int8_rows(const View &, int64_t, int64_t, const Acts8 &, float *, int64_t) {}

#endif

}  // namespace qk
}  // namespace lm
}  // namespace ctorch

CTORCH_LM_VECTOR_END
