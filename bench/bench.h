/* Shared by the C and C++ halves of the benchmarks. */
#ifndef CTORCH_BENCH_H
#define CTORCH_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void bench_die(const char *what, const char *msg) {
  fprintf(stderr, "bench: %s failed: %s\n", what, msg);
  exit(1);
}

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of xs[0..n) (sorts xs). */
static inline double bench_median(double *xs, size_t n) {
  qsort(xs, n, sizeof *xs, bench_cmp_double);
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

/* Each returns ns per call over `iters` calls. Tensors are ctorch handles. */
typedef double (*bench_fn)(void *a, void *b, long iters);
double bench_c_add(void *a, void *b, long iters);
double bench_c_add_inplace(void *a, void *b, long iters);
double bench_c_mul(void *a, void *b, long iters);
double bench_c_relu(void *a, void *b, long iters);
double bench_c_transpose(void *a, void *b, long iters);
double bench_c_matmul(void *a, void *b, long iters);
double bench_c_dlpack(void *a, void *b, long iters);
double bench_c_add_in_scope(void *a, void *b, long iters);
double bench_c_add_scope_leave(void *a, void *b, long iters);

#ifdef __cplusplus
}
#endif
#endif
