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
//   Q8: both sides are signed, so w goes in as w + 128 (its sign bit
//       flipped) and the sum starts from -128 * sum(x) lane by lane
//       (computed once per row of x, when it is quantised, and shared by
//       every weight row): the integers are exact.
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

// The middle two 16-byte lanes of a register swapped: x's order to Q4's
// and back (block says why).
constexpr int kSwap = _MM_SHUFFLE(3, 1, 2, 0);

// Row m of x: its groups' scales into a.d16 (two groups a pair), values
// into a.q, sums into a.sum, the Q8 correction into a.c16 (in x's order).
VNNI_FN void quantize_row(const float *x, int64_t K, int8_t *q, float *d16, float *sum, int32_t *qsum,
                          int32_t *c16, bool q4_order) {
  const int64_t groups = K / 32;
  for (int64_t g = 0; g < groups; ++g) {
    const __m512 x0 = _mm512_loadu_ps(x + 32 * g), x1 = _mm512_loadu_ps(x + 32 * g + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    const __m512 vid = _mm512_set1_ps(id);
    // (round to nearest even: the products stay within [-127, 127])
    const __m128i q0 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(x0, vid)));
    const __m128i q1 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(x1, vid)));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q + 32 * g), q0);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q + 32 * g + 16), q1);
    qsum[g] = _mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_cvtepi8_epi32(q0), _mm512_cvtepi8_epi32(q1)));
    for (int j = 0; j < 8; ++j) d16[16 * (g / 2) + 8 * (g % 2) + j] = d;
    sum[g] = _mm512_reduce_add_ps(_mm512_add_ps(x0, x1));
  }
  if (groups % 2) {  // the pair's missing half: zero values and scales
    std::memset(q + 32 * groups, 0, 32);
    qsum[groups] = 0;
    for (int j = 0; j < 8; ++j) d16[16 * (groups / 2) + 8 + j] = 0.f;
  }
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  for (int64_t p = 0; p < (groups + 1) / 2; ++p) {
    const __m512i xq = _mm512_loadu_si512(q + 64 * p);
    _mm512_storeu_si512(c16 + 16 * p, _mm512_sub_epi32(_mm512_setzero_si512(),
                                                       _mm512_dpbusd_epi32(_mm512_setzero_si512(), flip, xq)));
    if (q4_order) {
      _mm512_storeu_si512(q + 64 * p, _mm512_shuffle_i64x2(xq, xq, kSwap));
      const __m512 d = _mm512_loadu_ps(d16 + 16 * p);
      _mm512_storeu_ps(d16 + 16 * p, _mm512_shuffle_f32x4(d, d, kSwap));
    }
  }
}

// The scales of groups g and g + 1 (two: whether g + 1 exists) of the row
// whose scales start at entry k, spread over 16 lanes by idx.
VNNI __m512 pair_scales(const View &w, int64_t k, bool two, __m512i idx) {
  __m128 s;
  if (w.half) {
    uint32_t h = w.scale16[k];
    if (two) std::memcpy(&h, w.scale16 + k, 4);
    s = _mm_cvtph_ps(_mm_cvtsi32_si128(int(h)));
  } else {
    s = two ? _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double *>(w.scale + k))) : _mm_load_ss(w.scale + k);
  }
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(s));
}

// Weight rows r .. r+R-1 times rows m0 .. m0+MB-1 of a.
//
// Each step takes a pair of groups: 64 bytes of x against 64 values of
// each weight row. The work per weight row (its bytes and its scales) is
// what decode, with one row of x, does most of, so it is kept to a few
// instructions; x's side is shared by the R rows.
//   Q8: the weights go in unsigned as w + 128 (their sign bits flipped),
//       x signed; a.c16 holds -128 times x's sums lane by lane, where the
//       sums start: the integers are exact.
//   Q4: the pair's 32 bytes are loaded into both halves of a register,
//       the upper half shifted right by 4 and both masked to nibbles:
//       [low nibbles of g, of g+1, high nibbles of g, of g+1] in 16-byte
//       lanes, so x's middle two 16-byte lanes (g's upper half, g+1's
//       lower) swap places to meet them, and its scales with them: once
//       when x is quantised (Acts8::q4_order) or here, per row of x.
// The weights' two scales are widened once and spread over the lanes
// their group's values meet.
template <int R, int MB, int F>
VNNI void block(const View &w, int64_t r, const Acts8 &a, int64_t m0, float *y, int64_t ldy) {
  __m512 acc[R][MB];
  CTORCH_UNROLL
  for (int i = 0; i < R; ++i)
    CTORCH_UNROLL
    for (int m = 0; m < MB; ++m) acc[i][m] = _mm512_setzero_ps();
  const int64_t kp = a.pairs * 64;
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  const __m512i nib = _mm512_set1_epi8(0x0F);
  const __m512i shift = _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4);
  const __m512i sidx = F == kQ8 ? _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)
                                : _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
  constexpr int64_t step = F == kQ8 ? 64 : 32;  // bytes of a row per pair of groups
  const bool reorder = (F == kQ4) != a.q4_order;
  const Ahead ahead = ahead_of<R>(w, r);
  for (int64_t p = 0; p < a.pairs; ++p) {
    const int64_t g = 2 * p;
    const bool two = g + 1 < w.ngroups;
    if (w.prefetch) prefetch(ahead, p * step * R, step * R);
    __m512i wv[R];
    __m512 ws[R];
    CTORCH_UNROLL
    for (int i = 0; i < R; ++i) {
      ws[i] = pair_scales(w, (r + i) * w.scale_stride + g, two, sidx);
      const uint8_t *row = w.data + (r + i) * w.row_bytes + step * p;
      if (F == kQ8) {
        const __m512i q = two ? _mm512_loadu_si512(row) : _mm512_maskz_loadu_epi8(0xFFFFFFFFull, row);
        wv[i] = _mm512_xor_si512(q, flip);
      } else {
        const __m256i b = two ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row))
                              : _mm256_maskz_loadu_epi8(0xFFFF, row);
        wv[i] = _mm512_and_si512(_mm512_srlv_epi64(_mm512_broadcast_i64x4(b), shift), nib);
      }
    }
    CTORCH_UNROLL
    for (int m = 0; m < MB; ++m) {
      __m512i xq = _mm512_loadu_si512(a.q.data() + (m0 + m) * kp + 64 * p);
      __m512 xd = _mm512_loadu_ps(a.d16.data() + ((m0 + m) * a.pairs + p) * 16);
      const __m512i base =
          F == kQ8 ? _mm512_loadu_si512(a.c16.data() + ((m0 + m) * a.pairs + p) * 16) : _mm512_setzero_si512();
      if (reorder) {
        xq = _mm512_shuffle_i64x2(xq, xq, kSwap);
        xd = _mm512_shuffle_f32x4(xd, xd, kSwap);
      }
      CTORCH_UNROLL
      for (int i = 0; i < R; ++i) {
        const __m512i d = _mm512_dpbusd_epi32(base, wv[i], xq);
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
        if (w.sym)  // -8 * scale
          wo[i] = _mm512_mul_ps(_mm512_set1_ps(-8.f), w.half ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mk, w.scale16 + k))
                                                             : _mm512_maskz_loadu_ps(mk, w.scale + k));
        else
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
// (their bytes and scales) in registers beside them.
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

// ---- Tiled matrices (qkernels.h's layout) ---------------------------------
//
// A tile's vector meets 16 weight rows with one vpdpbusd: each 32-bit lane
// is one row's 4 values against the same 4 values of x, broadcast. A
// group's 8 vpdpbusd accumulate in integers, each lane a row's sum, so the
// conversion and the scales come once per group and 16 rows (the
// row-major kernel pays them on every vpdpbusd) and the sums land in y
// whole, with no reduction across lanes. A tile's bytes and scales are two
// sequential streams.
//   Q8: w + 128 unsigned against x signed, the sum started from
//       -128 * sum(q of x) (Acts8::qsum).
//   Q4: the nibbles unsigned; symmetric (Q4_0): the offset -8 in
//       integers, the sum started from -8 * sum(q of x); with an offset
//       table (Q4_1, Q4_K): offset * sum(x) in float32, as row-major.

// Independent integer sums per row of x: with few rows, vpdpbusd's latency
// would otherwise bound a group's 8 dependent steps.
template <int MB>
constexpr int chains() {
  return MB >= 4 ? 1 : MB >= 2 ? 2 : 4;
}

VNNI __m512i bcast4(const int8_t *p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Tile t (rows 16 t .. 16 t + 15) times rows m0 .. m0 + MB - 1 of a.
// H: half scales; ASYM: an offset table.
template <int MB, int F, bool H, bool ASYM>
VNNI void tile_rows(const View &w, int64_t t, const Acts8 &a, int64_t m0, float *y, int64_t ldy) {
  constexpr int NC = chains<MB>();
  constexpr int64_t gb = F == kQ8 ? 512 : 256;  // a group's bytes in a tile
  constexpr int NV = int(gb / 64);
  const int64_t ng = w.ngroups;
  const uint8_t *data = w.data + t * ng * gb;
  const int64_t s0 = t * ng * kTile;
  const __m512i flip = _mm512_set1_epi8(char(0x80)), nib = _mm512_set1_epi8(0x0F);
  const int8_t *xq[MB];
  const float *xd[MB], *xs[MB];
  const int32_t *xn[MB];
  __m512 acc[MB];
  CTORCH_UNROLL
  for (int m = 0; m < MB; ++m) {
    xq[m] = a.q.data() + (m0 + m) * a.pairs * 64;
    xd[m] = a.d16.data() + (m0 + m) * a.pairs * 16;
    xs[m] = a.sum.data() + (m0 + m) * a.pairs * 2;
    xn[m] = a.qsum.data() + (m0 + m) * a.pairs * 2;
    acc[m] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < ng; ++g) {
    const uint8_t *wg = data + g * gb;
    if (w.prefetch)  // (one stream: the tile's bytes, then the next tile's)
      CTORCH_UNROLL
      for (int c = 0; c < NV; ++c) _mm_prefetch(reinterpret_cast<const char *>(wg + w.prefetch + 64 * c), _MM_HINT_T0);
    // Where Acts8 keeps group g's first and last 16 values of x (its order:
    // x's own or Q4's).
    const int64_t p = g >> 1, h = g & 1;
    const int64_t lo = 64 * p + (a.q4_order ? 16 * h : 32 * h), hi = lo + (a.q4_order ? 32 : 16);
    __m512i s[MB][NC];
    CTORCH_UNROLL
    for (int m = 0; m < MB; ++m) {
      s[m][0] = _mm512_set1_epi32(F == kQ8 ? -128 * xn[m][g] : ASYM ? 0 : -8 * xn[m][g]);
      CTORCH_UNROLL
      for (int c = 1; c < NC; ++c) s[m][c] = _mm512_setzero_si512();
    }
    CTORCH_UNROLL
    for (int v = 0; v < NV; ++v) {
      const __m512i raw = _mm512_loadu_si512(wg + 64 * v);
      if (F == kQ8) {
        const __m512i wv = _mm512_xor_si512(raw, flip);
        const int64_t off = v < 4 ? lo + 4 * v : hi + 4 * (v - 4);
        CTORCH_UNROLL
        for (int m = 0; m < MB; ++m) s[m][v % NC] = _mm512_dpbusd_epi32(s[m][v % NC], wv, bcast4(xq[m] + off));
      } else {
        const __m512i wl = _mm512_and_si512(raw, nib), wh = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nib);
        CTORCH_UNROLL
        for (int m = 0; m < MB; ++m) {
          s[m][(2 * v) % NC] = _mm512_dpbusd_epi32(s[m][(2 * v) % NC], wl, bcast4(xq[m] + lo + 4 * v));
          s[m][(2 * v + 1) % NC] = _mm512_dpbusd_epi32(s[m][(2 * v + 1) % NC], wh, bcast4(xq[m] + hi + 4 * v));
        }
      }
    }
    const int64_t k = s0 + g * kTile;
    const __m512 ws = H ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(w.scale16 + k)))
                        : _mm512_loadu_ps(w.scale + k);
    __m512 wo = _mm512_setzero_ps();
    if (ASYM)
      wo = H ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(w.offset16 + k)))
             : _mm512_loadu_ps(w.offset + k);
    CTORCH_UNROLL
    for (int m = 0; m < MB; ++m) {
      __m512i sum = s[m][0];
      CTORCH_UNROLL
      for (int c = 1; c < NC; ++c) sum = _mm512_add_epi32(sum, s[m][c]);
      const __m512 d = _mm512_set1_ps(xd[m][lo / 4]);  // (d16: one d per 4 values)
      acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(ws, d), acc[m]);
      if (ASYM) acc[m] = _mm512_fmadd_ps(wo, _mm512_set1_ps(xs[m][g]), acc[m]);
    }
  }
  CTORCH_UNROLL
  for (int m = 0; m < MB; ++m) _mm512_storeu_ps(y + (m0 + m) * ldy + t * kTile, acc[m]);
}

// Q6 tiles (qkernels.h): a group is 16 values, 4 steps of vpdpbusd over
// u = q + 32 (0..63), the sum started from -32 * sum(q of x) over the
// group's 16 values (from a.c16: -128 times each 4 values' sum, in x's
// own order). Steps 0-2 are a vector's low 6 bits; step 3 gathers the
// three vectors' top 2 bits.
template <int MB>
VNNI void tile_rows_q6(const View &w, int64_t t, const Acts8 &a, int64_t m0, float *y, int64_t ldy) {
  constexpr int NC = chains<MB>();
  constexpr int64_t gb = 192;  // a group's bytes in a tile
  constexpr int kSel = 0xE4;   // vpternlogd: c ? a : b, bit by bit
  const int64_t ng = w.ngroups, nsup = ng / 16;
  const uint8_t *data = w.data + t * ng * gb;
  const int8_t *sc = w.scale8 + t * ng * kTile;
  const uint16_t *sup = w.super16 + t * nsup * kTile;
  const __m512i m6 = _mm512_set1_epi8(0x3F), m2 = _mm512_set1_epi8(0x03), m4 = _mm512_set1_epi8(0x0C);
  const int8_t *xq[MB];
  const float *xd[MB];
  const int32_t *xc[MB];
  __m512 acc[MB];
  CTORCH_UNROLL
  for (int m = 0; m < MB; ++m) {
    xq[m] = a.q.data() + (m0 + m) * a.pairs * 64;
    xd[m] = a.d16.data() + (m0 + m) * a.pairs * 16;
    xc[m] = a.c16.data() + (m0 + m) * a.pairs * 16;
    acc[m] = _mm512_setzero_ps();
  }
  __m512 d = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    if (g % 16 == 0)
      d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(sup + (g / 16) * kTile)));
    const uint8_t *wg = data + g * gb;
    if (w.prefetch)
      CTORCH_UNROLL
      for (int c = 0; c < 3; ++c) _mm_prefetch(reinterpret_cast<const char *>(wg + w.prefetch + 64 * c), _MM_HINT_T0);
    // The group's 16 values of x: quarter j of pair p in x's own order,
    // where Acts8 keeps them (Q4's order swaps the middle two quarters).
    const int64_t p = g >> 2, j = g & 3;
    const int64_t lo = 64 * p + 16 * (a.q4_order && (j == 1 || j == 2) ? 3 - j : j);
    __m512i s[MB][NC];
    CTORCH_UNROLL
    for (int m = 0; m < MB; ++m) {
      const int32_t *c = xc[m] + 16 * p + 4 * j;
      s[m][0] = _mm512_set1_epi32((c[0] + c[1] + c[2] + c[3]) / 4);
      CTORCH_UNROLL
      for (int k = 1; k < NC; ++k) s[m][k] = _mm512_setzero_si512();
    }
    const __m512i v0 = _mm512_loadu_si512(wg), v1 = _mm512_loadu_si512(wg + 64), v2 = _mm512_loadu_si512(wg + 128);
    // (16-bit shifts carry the next byte's low bits into bits 6-7 of the
    // last term; the final mask clears them)
    const __m512i hi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(v1, 4), _mm512_srli_epi16(v2, 2), m4, kSel);
    const __m512i u[4] = {_mm512_and_si512(v0, m6), _mm512_and_si512(v1, m6), _mm512_and_si512(v2, m6),
                          _mm512_and_si512(_mm512_ternarylogic_epi32(_mm512_srli_epi16(v0, 6), hi, m2, kSel), m6)};
    CTORCH_UNROLL
    for (int v = 0; v < 4; ++v)
      CTORCH_UNROLL
      for (int m = 0; m < MB; ++m) s[m][v % NC] = _mm512_dpbusd_epi32(s[m][v % NC], u[v], bcast4(xq[m] + lo + 4 * v));
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(sc + g * kTile));
    const __m512 ws = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc8)), d);
    CTORCH_UNROLL
    for (int m = 0; m < MB; ++m) {
      __m512i sum = s[m][0];
      CTORCH_UNROLL
      for (int k = 1; k < NC; ++k) sum = _mm512_add_epi32(sum, s[m][k]);
      acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(ws, _mm512_set1_ps(xd[m][lo / 4])), acc[m]);
    }
  }
  CTORCH_UNROLL
  for (int m = 0; m < MB; ++m) _mm512_storeu_ps(y + (m0 + m) * ldy + t * kTile, acc[m]);
}

template <int MB, int F, bool H, bool ASYM>
VNNI void tiles_for(const View &w, int64_t t0, int64_t t1, const Acts8 &a, int64_t m0, float *y, int64_t ldy) {
  for (int64_t t = t0; t < t1; ++t)
    if constexpr (F == kQ6) tile_rows_q6<MB>(w, t, a, m0, y, ldy);
    else tile_rows<MB, F, H, ASYM>(w, t, a, m0, y, ldy);
}

// Blocks of 4 tiles (64 rows, in the L2 cache) over every 8 rows of x.
template <int F, bool H, bool ASYM>
VNNI_FN void run_tiles(const View &w, int64_t r0, int64_t r1, const Acts8 &a, float *y, int64_t ldy) {
  const int64_t t1 = r1 / kTile;
  for (int64_t b = r0 / kTile; b < t1; b += 4) {
    const int64_t e = std::min(t1, b + 4);
    int64_t m = 0;
    for (; m + 8 <= a.M; m += 8) tiles_for<8, F, H, ASYM>(w, b, e, a, m, y, ldy);
    switch (a.M - m) {
      case 7: tiles_for<7, F, H, ASYM>(w, b, e, a, m, y, ldy); break;
      case 6: tiles_for<6, F, H, ASYM>(w, b, e, a, m, y, ldy); break;
      case 5: tiles_for<5, F, H, ASYM>(w, b, e, a, m, y, ldy); break;
      case 4: tiles_for<4, F, H, ASYM>(w, b, e, a, m, y, ldy); break;
      case 3: tiles_for<3, F, H, ASYM>(w, b, e, a, m, y, ldy); break;
      case 2: tiles_for<2, F, H, ASYM>(w, b, e, a, m, y, ldy); break;
      case 1: tiles_for<1, F, H, ASYM>(w, b, e, a, m, y, ldy); break;
      default: break;
    }
  }
}

void tiled_rows(const View &w, int64_t r0, int64_t r1, const Acts8 &a, float *y, int64_t ldy) {
  const bool asym = w.fmt == kQ4 && !w.sym;
  if (w.fmt == kQ6) return run_tiles<kQ6, false, false>(w, r0, r1, a, y, ldy);
  if (w.fmt == kQ8) return w.half ? run_tiles<kQ8, true, false>(w, r0, r1, a, y, ldy)
                                  : run_tiles<kQ8, false, false>(w, r0, r1, a, y, ldy);
  if (w.half) return asym ? run_tiles<kQ4, true, true>(w, r0, r1, a, y, ldy)
                          : run_tiles<kQ4, true, false>(w, r0, r1, a, y, ldy);
  return asym ? run_tiles<kQ4, false, true>(w, r0, r1, a, y, ldy) : run_tiles<kQ4, false, false>(w, r0, r1, a, y, ldy);
}

}  // namespace

bool int8_supported() {
  // Asked once: every product asks.
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
                          isa_supported(Isa::avx512);
  return yes;
}

void quantize_acts(const float *x, int64_t M, int64_t K, int64_t ldx, Acts8 &a, bool q4_order) {
  a.M = M;
  a.q4_order = q4_order;
  a.K = K;
  a.pairs = (K / 32 + 1) / 2;
  a.q.resize(size_t(M * a.pairs * 64));
  a.d16.resize(size_t(M * a.pairs * 16));
  a.sum.resize(size_t(M * a.pairs * 2));
  a.qsum.resize(size_t(M * a.pairs * 2));
  a.c16.resize(size_t(M * a.pairs * 16));
  for (int64_t m = 0; m < M; ++m)
    quantize_row(x + m * ldx, K, a.q.data() + m * a.pairs * 64, a.d16.data() + m * a.pairs * 16,
                 a.sum.data() + m * a.pairs * 2, a.qsum.data() + m * a.pairs * 2, a.c16.data() + m * a.pairs * 16,
                 q4_order);
}

void int8_rows(const View &w, int64_t r0, int64_t r1, const Acts8 &a, float *y, int64_t ldy) {
  if (w.tiled) tiled_rows(w, r0, r1, a, y, ldy);
  else if (w.fmt == kQ8) run<kQ8>(w, r0, r1, a, y, ldy);
  else run<kQ4>(w, r0, r1, a, y, ldy);
}

#else

bool int8_supported() { return false; }
void quantize_acts(const float *, int64_t, int64_t, int64_t, Acts8 &, bool) {}
void int8_rows(const View &, int64_t, int64_t, const Acts8 &, float *, int64_t) {}

#endif

}  // namespace qk
}  // namespace lm
}  // namespace ctorch

CTORCH_LM_VECTOR_END
