// The AVX2 (with FMA and F16C) and AVX-512 kernels over packed quantised
// rows (qkernels.h's layouts). Each function carries its instruction set
// in a target attribute (x86.h).
//
// How a block is unpacked:
//   Q4 (AVX-512): the 16 values scale * k + offset, k = 0..15, are formed
//     once per group in one register; the group's 16 bytes widen to 16
//     32-bit lanes, and vpermps looks each lane's low nibble up in that
//     table (it reads only the low 4 bits of an index), then the lanes
//     shifted right by 4 (the high nibbles).
//   Q4 (AVX2): the nibbles widen to 32-bit lanes, convert to float, times
//     the scale plus the offset.
//   Q8: int8 widened, converted, times the group's scale.
//   BF16: widened to 32 bits, shifted into a float32's upper half; F32 as
//     it is.
// Each unpacked value is bit-equal to the scalar unpacking's (a multiply,
// then an add: never fused). Half scales are widened a chunk of groups at
// a time (ScaleRows), not per use. Every unpacked register is then
// multiplied into every row of x: M rows share one unpacking. Several weight rows run together (R) and each sum
// is split in two registers, so that enough independent multiply-add
// chains are in flight to hide their latency at M = 1.
#include "lm/qkernels.h"

#include <algorithm>

#include "lm/qprefetch.h"
#include "lm/x86.h"

CTORCH_LM_VECTOR_BEGIN

namespace ctorch {
namespace lm {
namespace qk {

#ifdef CTORCH_LM_X86
namespace {

#define AVX512 __attribute__((target("avx512f,f16c"), always_inline)) inline
#define AVX512_FN __attribute__((target("avx512f,f16c")))
#define AVX2 __attribute__((target("avx2,fma,f16c"), always_inline)) inline
#define AVX2_FN __attribute__((target("avx2,fma,f16c")))

// n half scales widened (exactly) into float32: 16 or 8 at a time. Not
// inlined: called once per row and chunk of groups.
AVX512_FN void widen_512(const uint16_t *src, int64_t n, float *dst) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    _mm512_storeu_ps(dst + k, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + k))));
  for (; k < n; ++k) dst[k] = _cvtsh_ss(src[k]);
}
AVX2_FN void widen_256(const uint16_t *src, int64_t n, float *dst) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    _mm256_storeu_ps(dst + k, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + k))));
  for (; k < n; ++k) dst[k] = _cvtsh_ss(src[k]);
}

// dst[k] = -8 * src[k] for k < n: a symmetric Q4's offsets.
AVX512_FN void times_minus8_512(const float *src, int64_t n, float *dst) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) _mm512_storeu_ps(dst + k, _mm512_mul_ps(_mm512_loadu_ps(src + k), _mm512_set1_ps(-8.f)));
  for (; k < n; ++k) dst[k] = -8.f * src[k];
}
AVX2_FN void times_minus8_256(const float *src, int64_t n, float *dst) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) _mm256_storeu_ps(dst + k, _mm256_mul_ps(_mm256_loadu_ps(src + k), _mm256_set1_ps(-8.f)));
  for (; k < n; ++k) dst[k] = -8.f * src[k];
}

// The scales and offsets of weight rows r .. r+R-1 for groups [g0, g0 + n),
// n <= kChunk, as float32 pointers the kernels index by g - g0: into the
// tables themselves, or (half scales) into buf, where they are widened
// once for every row of x and every use, so that the loops broadcast
// floats as they do for float32 tables.
constexpr int64_t kChunk = 32;

// A symmetric Q4's offsets (-8 * scale) are formed into buf the same way.
template <int R, bool H>
struct ScaleRows {
  float buf[2 * R][kChunk];
  const float *s[R], *o[R];

  template <bool W512>
  __attribute__((always_inline)) void at(const View &w, int64_t r, int64_t g0, int64_t n) {
    for (int i = 0; i < R; ++i) {
      const int64_t k = (r + i) * w.scale_stride + g0;
      if (!H) {
        s[i] = w.scale + k;
        o[i] = w.offset ? w.offset + k : nullptr;
      } else {
        (W512 ? widen_512 : widen_256)(w.scale16 + k, n, buf[i]);
        s[i] = buf[i];
        o[i] = nullptr;
        if (w.offset16) {
          (W512 ? widen_512 : widen_256)(w.offset16 + k, n, buf[R + i]);
          o[i] = buf[R + i];
        }
      }
      if (w.sym) {
        (W512 ? times_minus8_512 : times_minus8_256)(s[i], n, buf[R + i]);
        o[i] = buf[R + i];
      }
    }
  }
};

// ---- AVX-512 ---------------------------------------------------------------

// scale * k + offset for k = 0..15: a multiply and an add (two roundings,
// as the scalar unpacking and GGUF's dequantisation), so that every value
// is bit-equal to theirs whatever the scales.
// (GCC fuses a multiply and an add of intrinsics into one multiply-add
// where the target has FMA; the empty asm makes the product a value of its
// own, rounded, before the add.)
AVX512 __m512 q4_table(float scale, float offset, __m512 iota) {
  __m512 p = _mm512_mul_ps(iota, _mm512_set1_ps(scale));
  __asm__("" : "+v"(p));
  return _mm512_add_ps(p, _mm512_set1_ps(offset));
}

// Rows [r0, r1) unpacked into out (for the prefill's tiles).
template <bool H>
AVX512 void dequant_rows_512(const View &w, int64_t r0, int64_t r1, float *out) {
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const int64_t per = w.group / 16;  // chunks of 16 values per group
  ScaleRows<1, H> sr;
  for (int64_t r = r0; r < r1; ++r, out += w.cols) {
    for (int64_t g0 = 0; g0 < w.ngroups; g0 += kChunk) {
      const int64_t g1 = std::min(w.ngroups, g0 + kChunk);
      sr.template at<true>(w, r, g0, g1 - g0);
      if (w.fmt == kQ4) {
        for (int64_t g = g0; g < g1; ++g) {
          const __m512 table = q4_table(sr.s[0][g - g0], sr.o[0][g - g0], iota);
          const __m512i b = _mm512_cvtepu8_epi32(
              _mm_loadu_si128(reinterpret_cast<const __m128i *>(w.data + r * w.row_bytes + g * 16)));
          _mm512_storeu_ps(out + 32 * g, _mm512_permutexvar_ps(b, table));
          _mm512_storeu_ps(out + 32 * g + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), table));
        }
      } else {
        for (int64_t c = g0 * per; c < g1 * per; ++c) {
          const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w.data + r * w.row_bytes + c * 16));
          _mm512_storeu_ps(out + 16 * c, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)),
                                                       _mm512_set1_ps(sr.s[0][c / per - g0])));
        }
      }
    }
  }
}

AVX512_FN void dequant_512(const View &w, int64_t r0, int64_t r1, float *out) {
  if (w.half) dequant_rows_512<true>(w, r0, r1, out);
  else dequant_rows_512<false>(w, r0, r1, out);
}

// The R x M pairs' sums, two registers each: zeroed when made, reduced
// into y[m * ldy + r + i] by store.
template <int R, int M>
struct Acc512 {
  __m512 v[R][M][2];
  AVX512 Acc512() {
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i)
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m) v[i][m][0] = v[i][m][1] = _mm512_setzero_ps();
  }
  AVX512 void store(int64_t r, float *y, int64_t ldy) const {
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i)
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m) y[m * ldy + r + i] = _mm512_reduce_add_ps(_mm512_add_ps(v[i][m][0], v[i][m][1]));
  }
};

// Weight rows r .. r+R-1, all M rows of x: 2 accumulators per pair.
template <int R, int M, bool H>
AVX512 void q4_512(const View &w, int64_t r, const float *x, int64_t ldx, float *y, int64_t ldy) {
  Acc512<R, M> acc;
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const Ahead ahead = ahead_of<R>(w, r);
  ScaleRows<R, H> sr;
  for (int64_t g = 0; g < w.ngroups; ++g) {
    const int64_t j = g % kChunk;
    if (j == 0) sr.template at<true>(w, r, g, std::min(kChunk, w.ngroups - g));
    const float *xg = x + g * 32;
    if (w.prefetch) prefetch(ahead, g * 16 * R, 16 * R);
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const int64_t ri = r + i;
      const uint8_t *p = w.data + ri * w.row_bytes + g * 16;
      const __m512 table = q4_table(sr.s[i][j], sr.o[i][j], iota);
      const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
      const __m512 lo = _mm512_permutexvar_ps(b, table);
      const __m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), table);
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m) {
        acc.v[i][m][0] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(xg + m * ldx), acc.v[i][m][0]);
        acc.v[i][m][1] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(xg + m * ldx + 16), acc.v[i][m][1]);
      }
    }
  }
  acc.store(r, y, ldy);
}

// Q8 in chunks of 16 values (a group of 16 is one chunk, of 32 two): the
// chunk's scale is scale[c * 16 / group].
template <int R, int M, bool H>
AVX512 void q8_512(const View &w, int64_t r, const float *x, int64_t ldx, float *y, int64_t ldy) {
  Acc512<R, M> acc;
  const int shift = w.group == 32 ? 1 : 0;
  const int64_t chunks = w.cols / 16;
  const Ahead ahead = ahead_of<R>(w, r);
  // Scales in chunks of kChunk groups: (kChunk << shift) 16-value chunks
  // of the row, an even count, so a pair never straddles two.
  ScaleRows<R, H> sr;
  const int64_t span = kChunk << shift;
  int64_t c = 0;
  for (; c + 2 <= chunks; c += 2) {
    if (c % span == 0) sr.template at<true>(w, r, c >> shift, std::min(kChunk, w.ngroups - (c >> shift)));
    const int64_t j = (c % span) >> shift, j1 = ((c + 1) % span) >> shift;
    const float *xc = x + c * 16;
    if (w.prefetch) prefetch(ahead, c * 16 * R, 32 * R);
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const int64_t ri = r + i;
      const int8_t *q = reinterpret_cast<const int8_t *>(w.data + ri * w.row_bytes + c * 16);
      const __m512 w0 = _mm512_mul_ps(
          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(q)))),
          _mm512_set1_ps(sr.s[i][j]));
      const __m512 w1 = _mm512_mul_ps(
          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(q + 16)))),
          _mm512_set1_ps(sr.s[i][j1]));
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m) {
        acc.v[i][m][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xc + m * ldx), acc.v[i][m][0]);
        acc.v[i][m][1] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xc + m * ldx + 16), acc.v[i][m][1]);
      }
    }
  }
  for (; c < chunks; ++c) {  // an odd count of 16-value groups
    if (c % span == 0) sr.template at<true>(w, r, c >> shift, std::min(kChunk, w.ngroups - (c >> shift)));
    const int64_t j = (c % span) >> shift;
    const float *xc = x + c * 16;
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const int64_t ri = r + i;
      const int8_t *q = reinterpret_cast<const int8_t *>(w.data + ri * w.row_bytes + c * 16);
      const __m512 w0 = _mm512_mul_ps(
          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(q)))),
          _mm512_set1_ps(sr.s[i][j]));
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m) acc.v[i][m][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xc + m * ldx), acc.v[i][m][0]);
    }
  }
  acc.store(r, y, ldy);
}

// 16 values of a BF16 row (widened to 32 bits, shifted into a float32's
// upper half: exact) or of an F32 row, as float32.
template <int F>
AVX512 __m512 wide_512(const uint8_t *p) {
  if (F == kF32) return _mm512_loadu_ps(reinterpret_cast<const float *>(p));
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p))), 16));
}

// BF16 and F32 rows in chunks of 16 values, two chunks per step.
template <int R, int M, int F>
AVX512 void wide_rows_512(const View &w, int64_t r, const float *x, int64_t ldx, float *y, int64_t ldy) {
  constexpr int B = F == kF32 ? 4 : 2;  // bytes per value
  Acc512<R, M> acc;
  const Ahead ahead = ahead_of<R>(w, r);
  for (int64_t c = 0; c + 2 <= w.cols / 16; c += 2) {  // cols: whole groups of 32
    const float *xc = x + c * 16;
    if (w.prefetch) prefetch(ahead, c * 16 * B * R, 32 * B * R);
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const uint8_t *q = w.data + (r + i) * w.row_bytes + c * 16 * B;
      const __m512 w0 = wide_512<F>(q), w1 = wide_512<F>(q + 16 * B);
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m) {
        acc.v[i][m][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xc + m * ldx), acc.v[i][m][0]);
        acc.v[i][m][1] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xc + m * ldx + 16), acc.v[i][m][1]);
      }
    }
  }
  acc.store(r, y, ldy);
}

// Rows per step: 4 for one or two rows of x, 2 up to 4, else 1 (at most
// 16 accumulators of the 32 registers).
template <int M>
constexpr int rows_512() {
  return M <= 2 ? 4 : M <= 4 ? 2 : 1;
}

template <int R, int M, int F, bool H>
AVX512 void rows_of_512(const View &w, int64_t r, const float *x, int64_t ldx, float *y, int64_t ldy) {
  if (F == kQ4) q4_512<R, M, H>(w, r, x, ldx, y, ldy);
  else if (F == kQ8) q8_512<R, M, H>(w, r, x, ldx, y, ldy);
  else wide_rows_512<R, M, F>(w, r, x, ldx, y, ldy);
}

template <int M, int F, bool H>
AVX512_FN void run_512(const View &w, int64_t r0, int64_t r1, const float *x, int64_t ldx, float *y, int64_t ldy) {
  constexpr int R = rows_512<M>();
  int64_t r = r0;
  for (; r + R <= r1; r += R) rows_of_512<R, M, F, H>(w, r, x, ldx, y, ldy);
  for (; r < r1; ++r) rows_of_512<1, M, F, H>(w, r, x, ldx, y, ldy);
}

template <int F, bool H>
AVX512_FN void kernel_512(const View &w, int64_t r0, int64_t r1, const float *x, int64_t M, int64_t ldx, float *y,
                          int64_t ldy) {
  switch (M) {
    case 1: return run_512<1, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 2: return run_512<2, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 3: return run_512<3, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 4: return run_512<4, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 5: return run_512<5, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 6: return run_512<6, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 7: return run_512<7, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 8: return run_512<8, F, H>(w, r0, r1, x, ldx, y, ldy);
    default: return;
  }
}

// ---- AVX2 + FMA ------------------------------------------------------------

AVX2 float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The R x M pairs' sums, A registers each (Acc512's).
template <int R, int M, int A>
struct Acc256 {
  __m256 v[R][M][A];
  AVX2 Acc256() {
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i)
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m)
        CTORCH_UNROLL
        for (int a = 0; a < A; ++a) v[i][m][a] = _mm256_setzero_ps();
  }
  AVX2 void store(int64_t r, float *y, int64_t ldy) const {
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i)
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m) {
        __m256 t = v[i][m][0];
        CTORCH_UNROLL
        for (int a = 1; a < A; ++a) t = _mm256_add_ps(t, v[i][m][a]);
        y[m * ldy + r + i] = hsum256(t);
      }
  }
};

// 16 registers: A accumulators per (weight row, x row) pair, A = 2 where
// R * M <= 4, else 1.
template <int R, int M, int A, bool H>
AVX2 void q4_256(const View &w, int64_t r, const float *x, int64_t ldx, float *y, int64_t ldy) {
  Acc256<R, M, A> acc;
  const __m256i low = _mm256_set1_epi32(0x0F);
  const Ahead ahead = ahead_of<R>(w, r);
  ScaleRows<R, H> sr;
  for (int64_t g = 0; g < w.ngroups; ++g) {
    const int64_t j = g % kChunk;
    if (j == 0) sr.template at<false>(w, r, g, std::min(kChunk, w.ngroups - g));
    const float *xg = x + g * 32;
    if (w.prefetch) prefetch(ahead, g * 16 * R, 16 * R);
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const int64_t ri = r + i;
      const uint8_t *p = w.data + ri * w.row_bytes + g * 16;
      const __m256 s = _mm256_set1_ps(sr.s[i][j]), o = _mm256_set1_ps(sr.o[i][j]);
      // scale * q + offset as a multiply and an add (as the scalar unpacking).
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
      const __m256i b0 = _mm256_cvtepu8_epi32(raw), b1 = _mm256_cvtepu8_epi32(_mm_srli_si128(raw, 8));
      // values 0-7, 8-15 (low nibbles), 16-23, 24-31 (high nibbles)
      __m256 v[4] = {_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(b0, low)), s),
                     _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(b1, low)), s),
                     _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(b0, 4)), s),
                     _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(b1, 4)), s)};
      __asm__("" : "+v"(v[0]), "+v"(v[1]), "+v"(v[2]), "+v"(v[3]));  // no fused multiply-add (q4_table)
      CTORCH_UNROLL
      for (int k = 0; k < 4; ++k) v[k] = _mm256_add_ps(v[k], o);
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m)
        CTORCH_UNROLL
        for (int k = 0; k < 4; ++k)
          acc.v[i][m][k % A] = _mm256_fmadd_ps(v[k], _mm256_loadu_ps(xg + m * ldx + 8 * k), acc.v[i][m][k % A]);
    }
  }
  acc.store(r, y, ldy);
}

// Q8 in chunks of 16 values (two registers), the chunk's scale
// scale[c * 16 / group].
template <int R, int M, int A, bool H>
AVX2 void q8_256(const View &w, int64_t r, const float *x, int64_t ldx, float *y, int64_t ldy) {
  Acc256<R, M, A> acc;
  const int shift = w.group == 32 ? 1 : 0;
  const int64_t chunks = w.cols / 16;
  const Ahead ahead = ahead_of<R>(w, r);
  ScaleRows<R, H> sr;
  const int64_t span = kChunk << shift;
  for (int64_t c = 0; c < chunks; ++c) {
    if (c % span == 0) sr.template at<false>(w, r, c >> shift, std::min(kChunk, w.ngroups - (c >> shift)));
    const int64_t j = (c % span) >> shift;
    const float *xc = x + c * 16;
    if (w.prefetch) prefetch(ahead, c * 16 * R, 16 * R);
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const int64_t ri = r + i;
      const int8_t *q = reinterpret_cast<const int8_t *>(w.data + ri * w.row_bytes + c * 16);
      const __m256 s = _mm256_set1_ps(sr.s[i][j]);
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i *>(q));
      const __m256 v[2] = {_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(raw)), s),
                           _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(raw, 8))), s)};
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m)
        CTORCH_UNROLL
        for (int k = 0; k < 2; ++k)
          acc.v[i][m][k % A] = _mm256_fmadd_ps(v[k], _mm256_loadu_ps(xc + m * ldx + 8 * k), acc.v[i][m][k % A]);
    }
  }
  acc.store(r, y, ldy);
}

// 8 values of a BF16 or F32 row as float32 (wide_512's).
template <int F>
AVX2 __m256 wide_256(const uint8_t *p) {
  if (F == kF32) return _mm256_loadu_ps(reinterpret_cast<const float *>(p));
  return _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))), 16));
}

// BF16 and F32 rows in chunks of 16 values (two registers).
template <int R, int M, int A, int F>
AVX2 void wide_rows_256(const View &w, int64_t r, const float *x, int64_t ldx, float *y, int64_t ldy) {
  constexpr int B = F == kF32 ? 4 : 2;  // bytes per value
  Acc256<R, M, A> acc;
  const Ahead ahead = ahead_of<R>(w, r);
  for (int64_t c = 0; c < w.cols / 16; ++c) {
    const float *xc = x + c * 16;
    if (w.prefetch) prefetch(ahead, c * 16 * B * R, 16 * B * R);
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const uint8_t *q = w.data + (r + i) * w.row_bytes + c * 16 * B;
      const __m256 v[2] = {wide_256<F>(q), wide_256<F>(q + 8 * B)};
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m)
        CTORCH_UNROLL
        for (int k = 0; k < 2; ++k)
          acc.v[i][m][k % A] = _mm256_fmadd_ps(v[k], _mm256_loadu_ps(xc + m * ldx + 8 * k), acc.v[i][m][k % A]);
    }
  }
  acc.store(r, y, ldy);
}

template <int R, int M, int A, int F, bool H>
AVX2 void rows_of_256(const View &w, int64_t r, const float *x, int64_t ldx, float *y, int64_t ldy) {
  if (F == kQ4) q4_256<R, M, A, H>(w, r, x, ldx, y, ldy);
  else if (F == kQ8) q8_256<R, M, A, H>(w, r, x, ldx, y, ldy);
  else wide_rows_256<R, M, A, F>(w, r, x, ldx, y, ldy);
}

template <int M, int F, bool H>
AVX2_FN void run_256(const View &w, int64_t r0, int64_t r1, const float *x, int64_t ldx, float *y, int64_t ldy) {
  constexpr int R = M == 1 ? 2 : 1;
  constexpr int A = R * M <= 4 ? 2 : 1;
  int64_t r = r0;
  for (; r + R <= r1; r += R) rows_of_256<R, M, A, F, H>(w, r, x, ldx, y, ldy);
  for (; r < r1; ++r) rows_of_256<1, M, A, F, H>(w, r, x, ldx, y, ldy);
}

template <int F, bool H>
AVX2_FN void kernel_256(const View &w, int64_t r0, int64_t r1, const float *x, int64_t M, int64_t ldx, float *y,
                        int64_t ldy) {
  switch (M) {
    case 1: return run_256<1, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 2: return run_256<2, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 3: return run_256<3, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 4: return run_256<4, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 5: return run_256<5, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 6: return run_256<6, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 7: return run_256<7, F, H>(w, r0, r1, x, ldx, y, ldy);
    case 8: return run_256<8, F, H>(w, r0, r1, x, ldx, y, ldy);
    default: return;
  }
}

#undef CTORCH_UNROLL
#undef AVX512
#undef AVX512_FN
#undef AVX2
#undef AVX2_FN

}  // namespace

Kernel avx512_kernel(int fmt, bool half) {
  if (fmt == kQ4) return half ? kernel_512<kQ4, true> : kernel_512<kQ4, false>;
  if (fmt == kQ8) return half ? kernel_512<kQ8, true> : kernel_512<kQ8, false>;
  return fmt == kBF16 ? kernel_512<kBF16, false> : kernel_512<kF32, false>;
}
Dequant avx512_dequant() { return dequant_512; }
Kernel avx2_kernel(int fmt, bool half) {
  if (fmt == kQ4) return half ? kernel_256<kQ4, true> : kernel_256<kQ4, false>;
  if (fmt == kQ8) return half ? kernel_256<kQ8, true> : kernel_256<kQ8, false>;
  return fmt == kBF16 ? kernel_256<kBF16, false> : kernel_256<kF32, false>;
}

#else  // not x86: only the scalar kernels

Kernel avx512_kernel(int, bool) { return nullptr; }
Dequant avx512_dequant() { return nullptr; }
Kernel avx2_kernel(int, bool) { return nullptr; }

#endif

}  // namespace qk
}  // namespace lm
}  // namespace ctorch

CTORCH_LM_VECTOR_END
