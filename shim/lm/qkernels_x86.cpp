// The AVX2+FMA and AVX-512 kernels over packed quantised rows (qkernels.h's
// layouts). Each function carries its instruction set in a target
// attribute, so this file builds with the compiler's default flags and the
// variant runs only where qkernels.cpp's check of the CPU chose it.
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
// Each unpacked value is bit-equal to the scalar unpacking's (a multiply,
// then an add: never fused). Every unpacked register is then multiplied into every row of x: M rows
// share one unpacking. Several weight rows run together (R) and each sum
// is split in two registers, so that enough independent multiply-add
// chains are in flight to hide their latency at M = 1.
#include "lm/qkernels.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define CTORCH_QK_X86 1
#endif

// GCC 12's AVX-512 intrinsics start from a self-initialised "undefined"
// register (`__m512 __Y = __Y;`), which -Wmaybe-uninitialized reports at
// every inlined use: a false report.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace ctorch {
namespace lm {
namespace qk {

#ifdef CTORCH_QK_X86
namespace {

// The loops over the template's fixed counts (rows, accumulators) unrolled,
// so that the accumulator arrays live in registers: GCC at -O2 keeps them
// in memory otherwise.
#define CTORCH_UNROLL _Pragma("GCC unroll 16")
#define AVX512 __attribute__((target("avx512f"), always_inline)) inline
#define AVX512_FN __attribute__((target("avx512f")))
#define AVX2 __attribute__((target("avx2,fma"), always_inline)) inline
#define AVX2_FN __attribute__((target("avx2,fma")))

// ---- AVX-512 ---------------------------------------------------------------

// scale * k + offset for k = 0..15: a multiply and an add (two roundings,
// as the scalar unpacking and GGUF's dequantisation), so that every value
// is bit-equal to theirs whatever the scales.
// (GCC fuses a multiply and an add of intrinsics into one multiply-add
// where the target has FMA; the empty asm makes the product a value of its
// own, rounded, before the add.)
AVX512 __m512 q4_table(const View &w, int64_t r, int64_t g, __m512 iota) {
  __m512 p = _mm512_mul_ps(iota, _mm512_set1_ps(w.scale[r * w.ngroups + g]));
  __asm__("" : "+v"(p));
  return _mm512_add_ps(p, _mm512_set1_ps(w.offset[r * w.ngroups + g]));
}

// Rows [r0, r1) unpacked into out (for the prefill's tiles).
AVX512_FN void dequant_512(const View &w, int64_t r0, int64_t r1, float *out) {
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int64_t r = r0; r < r1; ++r, out += w.cols) {
    if (w.fmt == kQ4) {
      for (int64_t g = 0; g < w.ngroups; ++g) {
        const __m512 table = q4_table(w, r, g, iota);
        const __m512i b = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(w.data + r * w.row_bytes + g * 16)));
        _mm512_storeu_ps(out + 32 * g, _mm512_permutexvar_ps(b, table));
        _mm512_storeu_ps(out + 32 * g + 16, _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), table));
      }
    } else {
      const int shift = w.group == 32 ? 1 : 0;
      for (int64_t c = 0; c < w.cols / 16; ++c) {
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w.data + r * w.row_bytes + c * 16));
        _mm512_storeu_ps(out + 16 * c, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)),
                                                     _mm512_set1_ps(w.scale[r * w.ngroups + (c >> shift)])));
      }
    }
  }
}

// Weight rows r .. r+R-1, all M rows of x: 2 accumulators per pair.
template <int R, int M>
AVX512 void q4_512(const View &w, int64_t r, const float *x, int64_t ldx, float *y, int64_t ldy) {
  __m512 acc[R][M][2];
  CTORCH_UNROLL
  for (int i = 0; i < R; ++i)
    CTORCH_UNROLL
    for (int m = 0; m < M; ++m) acc[i][m][0] = acc[i][m][1] = _mm512_setzero_ps();
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int64_t g = 0; g < w.ngroups; ++g) {
    const float *xg = x + g * 32;
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const int64_t ri = r + i;
      const uint8_t *p = w.data + ri * w.row_bytes + g * 16;
      const __m512 table = q4_table(w, ri, g, iota);
      const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
      const __m512 lo = _mm512_permutexvar_ps(b, table);
      const __m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), table);
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m) {
        acc[i][m][0] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(xg + m * ldx), acc[i][m][0]);
        acc[i][m][1] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(xg + m * ldx + 16), acc[i][m][1]);
      }
    }
  }
  CTORCH_UNROLL
  for (int i = 0; i < R; ++i)
    CTORCH_UNROLL
    for (int m = 0; m < M; ++m) y[m * ldy + r + i] = _mm512_reduce_add_ps(_mm512_add_ps(acc[i][m][0], acc[i][m][1]));
}

// Q8 in chunks of 16 values (a group of 16 is one chunk, of 32 two): the
// chunk's scale is scale[c * 16 / group].
template <int R, int M>
AVX512 void q8_512(const View &w, int64_t r, const float *x, int64_t ldx, float *y, int64_t ldy) {
  __m512 acc[R][M][2];
  CTORCH_UNROLL
  for (int i = 0; i < R; ++i)
    CTORCH_UNROLL
    for (int m = 0; m < M; ++m) acc[i][m][0] = acc[i][m][1] = _mm512_setzero_ps();
  const int shift = w.group == 32 ? 1 : 0;
  const int64_t chunks = w.cols / 16;
  int64_t c = 0;
  for (; c + 2 <= chunks; c += 2) {
    const float *xc = x + c * 16;
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const int64_t ri = r + i;
      const int8_t *q = reinterpret_cast<const int8_t *>(w.data + ri * w.row_bytes + c * 16);
      const float *s = w.scale + ri * w.ngroups;
      const __m512 w0 = _mm512_mul_ps(
          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(q)))),
          _mm512_set1_ps(s[c >> shift]));
      const __m512 w1 = _mm512_mul_ps(
          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(q + 16)))),
          _mm512_set1_ps(s[(c + 1) >> shift]));
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m) {
        acc[i][m][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xc + m * ldx), acc[i][m][0]);
        acc[i][m][1] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xc + m * ldx + 16), acc[i][m][1]);
      }
    }
  }
  for (; c < chunks; ++c) {  // an odd count of 16-value groups
    const float *xc = x + c * 16;
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const int64_t ri = r + i;
      const int8_t *q = reinterpret_cast<const int8_t *>(w.data + ri * w.row_bytes + c * 16);
      const __m512 w0 = _mm512_mul_ps(
          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(q)))),
          _mm512_set1_ps(w.scale[ri * w.ngroups + (c >> shift)]));
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m) acc[i][m][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xc + m * ldx), acc[i][m][0]);
    }
  }
  CTORCH_UNROLL
  for (int i = 0; i < R; ++i)
    CTORCH_UNROLL
    for (int m = 0; m < M; ++m) y[m * ldy + r + i] = _mm512_reduce_add_ps(_mm512_add_ps(acc[i][m][0], acc[i][m][1]));
}

// Rows per step: 4 for one or two rows of x, 2 up to 4, else 1 (at most
// 16 accumulators of the 32 registers).
template <int M>
constexpr int rows_512() {
  return M <= 2 ? 4 : M <= 4 ? 2 : 1;
}

template <int M, bool Q4>
AVX512_FN void run_512(const View &w, int64_t r0, int64_t r1, const float *x, int64_t ldx, float *y, int64_t ldy) {
  constexpr int R = rows_512<M>();
  int64_t r = r0;
  for (; r + R <= r1; r += R) {
    if (Q4) q4_512<R, M>(w, r, x, ldx, y, ldy);
    else q8_512<R, M>(w, r, x, ldx, y, ldy);
  }
  for (; r < r1; ++r) {
    if (Q4) q4_512<1, M>(w, r, x, ldx, y, ldy);
    else q8_512<1, M>(w, r, x, ldx, y, ldy);
  }
}

template <bool Q4>
AVX512_FN void kernel_512(const View &w, int64_t r0, int64_t r1, const float *x, int64_t M, int64_t ldx, float *y,
                          int64_t ldy) {
  switch (M) {
    case 1: return run_512<1, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 2: return run_512<2, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 3: return run_512<3, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 4: return run_512<4, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 5: return run_512<5, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 6: return run_512<6, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 7: return run_512<7, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 8: return run_512<8, Q4>(w, r0, r1, x, ldx, y, ldy);
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

// 16 registers: A accumulators per (weight row, x row) pair, A = 2 where
// R * M <= 4, else 1.
template <int R, int M, int A>
AVX2 void q4_256(const View &w, int64_t r, const float *x, int64_t ldx, float *y, int64_t ldy) {
  __m256 acc[R][M][A];
  CTORCH_UNROLL
  for (int i = 0; i < R; ++i)
    CTORCH_UNROLL
    for (int m = 0; m < M; ++m)
      CTORCH_UNROLL
      for (int a = 0; a < A; ++a) acc[i][m][a] = _mm256_setzero_ps();
  const __m256i low = _mm256_set1_epi32(0x0F);
  for (int64_t g = 0; g < w.ngroups; ++g) {
    const float *xg = x + g * 32;
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const int64_t ri = r + i;
      const uint8_t *p = w.data + ri * w.row_bytes + g * 16;
      const __m256 s = _mm256_set1_ps(w.scale[ri * w.ngroups + g]), o = _mm256_set1_ps(w.offset[ri * w.ngroups + g]);
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
          acc[i][m][k % A] = _mm256_fmadd_ps(v[k], _mm256_loadu_ps(xg + m * ldx + 8 * k), acc[i][m][k % A]);
    }
  }
  CTORCH_UNROLL
  for (int i = 0; i < R; ++i)
    CTORCH_UNROLL
    for (int m = 0; m < M; ++m) {
      __m256 t = acc[i][m][0];
      CTORCH_UNROLL
      for (int a = 1; a < A; ++a) t = _mm256_add_ps(t, acc[i][m][a]);
      y[m * ldy + r + i] = hsum256(t);
    }
}

// Q8 in chunks of 16 values (two registers), the chunk's scale
// scale[c * 16 / group].
template <int R, int M, int A>
AVX2 void q8_256(const View &w, int64_t r, const float *x, int64_t ldx, float *y, int64_t ldy) {
  __m256 acc[R][M][A];
  CTORCH_UNROLL
  for (int i = 0; i < R; ++i)
    CTORCH_UNROLL
    for (int m = 0; m < M; ++m)
      CTORCH_UNROLL
      for (int a = 0; a < A; ++a) acc[i][m][a] = _mm256_setzero_ps();
  const int shift = w.group == 32 ? 1 : 0;
  const int64_t chunks = w.cols / 16;
  for (int64_t c = 0; c < chunks; ++c) {
    const float *xc = x + c * 16;
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      const int64_t ri = r + i;
      const int8_t *q = reinterpret_cast<const int8_t *>(w.data + ri * w.row_bytes + c * 16);
      const __m256 s = _mm256_set1_ps(w.scale[ri * w.ngroups + (c >> shift)]);
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i *>(q));
      const __m256 v[2] = {_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(raw)), s),
                           _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(raw, 8))), s)};
      CTORCH_UNROLL
      for (int m = 0; m < M; ++m)
        CTORCH_UNROLL
        for (int k = 0; k < 2; ++k)
          acc[i][m][k % A] = _mm256_fmadd_ps(v[k], _mm256_loadu_ps(xc + m * ldx + 8 * k), acc[i][m][k % A]);
    }
  }
  CTORCH_UNROLL
  for (int i = 0; i < R; ++i)
    CTORCH_UNROLL
    for (int m = 0; m < M; ++m) {
      __m256 t = acc[i][m][0];
      CTORCH_UNROLL
      for (int a = 1; a < A; ++a) t = _mm256_add_ps(t, acc[i][m][a]);
      y[m * ldy + r + i] = hsum256(t);
    }
}

template <int M, bool Q4>
AVX2_FN void run_256(const View &w, int64_t r0, int64_t r1, const float *x, int64_t ldx, float *y, int64_t ldy) {
  constexpr int R = M == 1 ? 2 : 1;
  constexpr int A = R * M <= 4 ? 2 : 1;
  int64_t r = r0;
  for (; r + R <= r1; r += R) {
    if (Q4) q4_256<R, M, A>(w, r, x, ldx, y, ldy);
    else q8_256<R, M, A>(w, r, x, ldx, y, ldy);
  }
  for (; r < r1; ++r) {
    if (Q4) q4_256<1, M, A>(w, r, x, ldx, y, ldy);
    else q8_256<1, M, A>(w, r, x, ldx, y, ldy);
  }
}

template <bool Q4>
AVX2_FN void kernel_256(const View &w, int64_t r0, int64_t r1, const float *x, int64_t M, int64_t ldx, float *y,
                        int64_t ldy) {
  switch (M) {
    case 1: return run_256<1, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 2: return run_256<2, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 3: return run_256<3, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 4: return run_256<4, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 5: return run_256<5, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 6: return run_256<6, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 7: return run_256<7, Q4>(w, r0, r1, x, ldx, y, ldy);
    case 8: return run_256<8, Q4>(w, r0, r1, x, ldx, y, ldy);
    default: return;
  }
}

#undef CTORCH_UNROLL
#undef AVX512
#undef AVX512_FN
#undef AVX2
#undef AVX2_FN

}  // namespace

Kernel avx512_kernel(int fmt) { return fmt == kQ4 ? kernel_512<true> : kernel_512<false>; }
Dequant avx512_dequant() { return dequant_512; }
Kernel avx2_kernel(int fmt) { return fmt == kQ4 ? kernel_256<true> : kernel_256<false>; }

#else  // not x86: only the scalar kernels

Kernel avx512_kernel(int) { return nullptr; }
Dequant avx512_dequant() { return nullptr; }
Kernel avx2_kernel(int) { return nullptr; }

#endif

}  // namespace qk
}  // namespace lm
}  // namespace ctorch

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#undef CTORCH_QK_X86
