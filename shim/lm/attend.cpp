// One head's attention for the fused decode step (attend.h). The scores'
// dot products and the weighted sum of the values are where the time goes
// at long contexts, so each has a vector variant; the softmax between them
// is shared. Each variant carries its instruction set in a target
// attribute (x86.h).
#include "lm/attend.h"

#include <algorithm>
#include <cmath>

#include "lm/qkernels.h"
#include "lm/x86.h"

CTORCH_LM_VECTOR_BEGIN

namespace ctorch {
namespace lm {

namespace {

// p[0, n) = softmax(p[0, n)), as ATen's: exp(x - max), then times 1 / sum.
void softmax(float *p, int64_t n) {
  float top = -INFINITY;
  for (int64_t j = 0; j < n; ++j) top = std::max(top, p[j]);
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (p[j] = std::exp(p[j] - top));
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j) p[j] *= inv;
}

void attend_scalar(const float *q, const float *keys, const float *vals, int64_t j0, int64_t L, int64_t D,
                   float scale, float *prob, float *out) {
  for (int64_t j = j0; j < L; ++j) {
    const float *k = keys + j * D;
    // Sixteen partial sums, which the compiler may keep in vector registers.
    float acc[16] = {0};
    int64_t d = 0;
    for (; d + 16 <= D; d += 16)
      for (int i = 0; i < 16; ++i) acc[i] += q[d + i] * k[d + i];
    float s = 0;
    for (; d < D; ++d) s += q[d] * k[d];
    for (int i = 0; i < 16; ++i) s += acc[i];
    prob[j] = s * scale;
  }
  softmax(prob + j0, L - j0);
  std::fill_n(out, D, 0.0f);
  for (int64_t j = j0; j < L; ++j)
    for (int64_t d = 0; d < D; ++d) out[d] += prob[j] * vals[j * D + d];
}

#ifdef CTORCH_LM_X86

// D a multiple of 16.
__attribute__((target("avx512f"))) void attend_512(const float *q, const float *keys, const float *vals, int64_t j0,
                                                   int64_t L, int64_t D, float scale, float *prob, float *out) {
  for (int64_t j = j0; j < L; ++j) {
    const float *k = keys + j * D;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + d), _mm512_loadu_ps(k + d), acc);
    prob[j] = _mm512_reduce_add_ps(acc) * scale;
  }
  softmax(prob + j0, L - j0);
  for (int64_t d = 0; d < D; d += 16) {
    __m512 o = _mm512_setzero_ps();
    for (int64_t j = j0; j < L; ++j) o = _mm512_fmadd_ps(_mm512_set1_ps(prob[j]), _mm512_loadu_ps(vals + j * D + d), o);
    _mm512_storeu_ps(out + d, o);
  }
}

// D a multiple of 8.
__attribute__((target("avx2,fma"))) void attend_256(const float *q, const float *keys, const float *vals, int64_t j0,
                                                    int64_t L, int64_t D, float scale, float *prob, float *out) {
  for (int64_t j = j0; j < L; ++j) {
    const float *k = keys + j * D;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t d = 0; d < D; d += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(k + d), acc);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    prob[j] = _mm_cvtss_f32(s) * scale;
  }
  softmax(prob + j0, L - j0);
  for (int64_t d = 0; d < D; d += 8) {
    __m256 o = _mm256_setzero_ps();
    for (int64_t j = j0; j < L; ++j) o = _mm256_fmadd_ps(_mm256_set1_ps(prob[j]), _mm256_loadu_ps(vals + j * D + d), o);
    _mm256_storeu_ps(out + d, o);
  }
}

#endif

}  // namespace

void attend(const float *q, const float *keys, const float *vals, int64_t j0, int64_t L, int64_t D, float scale,
            float *prob, float *out) {
#ifdef CTORCH_LM_X86
  const qk::Isa isa = qk::isa_active();
  if (isa == qk::Isa::avx512 && D % 16 == 0) return attend_512(q, keys, vals, j0, L, D, scale, prob, out);
  if (isa != qk::Isa::scalar && D % 8 == 0) return attend_256(q, keys, vals, j0, L, D, scale, prob, out);
#endif
  attend_scalar(q, keys, vals, j0, L, D, scale, prob, out);
}

}  // namespace lm
}  // namespace ctorch

CTORCH_LM_VECTOR_END
