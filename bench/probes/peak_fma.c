// bench/probes/peak_fma.c: one core's fp32 FMA peak, measured (GEMM rates
// are stated against it). 16 independent accumulators of 512-bit FMAs, then 12 of 256-bit FMAs,
// best of 5 rounds. Each half is compiled for its instruction set and run only where the CPU
// has it (an AVX2-only machine prints the 256-bit figure alone), so one build runs anywhere.
// Build and run: cc -O2 bench/probes/peak_fma.c -o peak_fma && ./peak_fma
// (Zen 4 runs a 512-bit FMA as two 256-bit halves: both figures come out equal there,
// 117.5 and 117.6 GFLOP/s.)
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

enum { ROUNDS = 5 };
static const long N = 200000000; // FMAs per round, per accumulator set of 16

__attribute__((target("avx512f,fma"))) static double peak512(float *checksum) {
  __m512 a[16], x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
  double best = 0;
  for (int i = 0; i < 16; i++) a[i] = _mm512_set1_ps((float)i);
  for (int r = 0; r < ROUNDS; r++) {
    double t = now();
    for (long k = 0; k < N / 16; k++) {
#define F(i) a[i] = _mm512_fmadd_ps(a[i], x, y);
      F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12) F(13) F(14) F(15)
    }
    t = now() - t;
    double g = (double)(N / 16) * 16 * 16 * 2 / t / 1e9;
    if (g > best) best = g;
  }
  for (int i = 0; i < 16; i++) *checksum += _mm512_reduce_add_ps(a[i]); // keeps the loop alive
  return best;
}

// 12 accumulators, not 16: AVX2 has 16 ymm registers, and 16 accumulators
// plus x and y spilled to memory (67.1 GFLOP/s on Zen 4 against 117.3 for
// the 512-bit loop, which has 32 zmm registers; 117.6 with 12). 12 still cover the FMA
// latency (4 cycles x 2 pipes = 8 in flight).
__attribute__((target("avx2,fma"))) static double peak256(float *checksum) {
  enum { A = 12 };
  __m256 b[A], x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(0.9999999f);
  double best = 0;
  for (int i = 0; i < A; i++) b[i] = _mm256_set1_ps((float)i);
  for (int r = 0; r < ROUNDS; r++) {
    double t = now();
    for (long k = 0; k < N / A; k++) {
#define G(i) b[i] = _mm256_fmadd_ps(b[i], x, y);
      G(0) G(1) G(2) G(3) G(4) G(5) G(6) G(7) G(8) G(9) G(10) G(11)
    }
    t = now() - t;
    double g = (double)(N / A) * A * 8 * 2 / t / 1e9;
    if (g > best) best = g;
  }
  for (int i = 0; i < A; i++) {
    float tmp[8];
    _mm256_storeu_ps(tmp, b[i]);
    *checksum += tmp[0];
  }
  return best;
}

int main(void) {
  float s = 0;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("fma") || !__builtin_cpu_supports("avx2")) {
    printf("peak fp32 one core: this CPU has no AVX2 FMA\n");
    return 0;
  }
  if (__builtin_cpu_supports("avx512f")) {
    double p512 = peak512(&s), p256 = peak256(&s);
    printf("peak fp32 one core: avx512 FMA %.1f GFLOP/s, avx2 FMA %.1f GFLOP/s (checksum %g)\n", p512, p256, s);
  } else {
    double p256 = peak256(&s);
    printf("peak fp32 one core: avx512 none (no avx512f), avx2 FMA %.1f GFLOP/s (checksum %g)\n", p256, s);
  }
  return 0;
}
