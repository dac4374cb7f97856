/* Helpers shared by the numeric tests of generated operators (test_ops_*.c). */
#ifndef CTORCH_TEST_OPS_UTIL_H
#define CTORCH_TEST_OPS_UTIL_H

#include <math.h>

#include "check_main.h"

/* Compound-literal shapes and data: SHAPE(2, 3), F(1, 2, 3). */
#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define F(...) ((const float[]){__VA_ARGS__})
#define I64(...) ((const int64_t[]){__VA_ARGS__})
#define NDIM(...) (sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

/* A float32 tensor of the given shape: TF(SHAPE(2,2), 2, F(1,2,3,4)). */
static inline ctorch_tensor TF(const int64_t *shape, size_t nd, const float *v) { return ct_floats(v, shape, nd); }
/* A 1-d float32 tensor of n values. */
static inline ctorch_tensor TV(size_t n, const float *v) {
  int64_t s = (int64_t)n;
  return ct_floats(v, &s, 1);
}
/* A tensor of int64 values. */
static inline ctorch_tensor TI(const int64_t *shape, size_t nd, const int64_t *v) {
  size_t n = 1, i;
  ctorch_tensor t = NULL;
  for (i = 0; i < nd; ++i) n *= (size_t)shape[i];
  CT_OK(ctorch_tensor_from_data(&t, v, n * sizeof(int64_t), shape, nd, CTORCH_INT64));
  return t;
}
/* A bool tensor from 0/1 bytes. */
static inline ctorch_tensor TB(const int64_t *shape, size_t nd, const unsigned char *v) {
  size_t n = 1, i;
  ctorch_tensor t = NULL;
  for (i = 0; i < nd; ++i) n *= (size_t)shape[i];
  CT_OK(ctorch_tensor_from_data(&t, v, n, shape, nd, CTORCH_BOOL));
  return t;
}

static inline int64_t numel_of(ctorch_tensor t) {
  int64_t n = -1;
  CT_OK(ctorch_tensor_numel(&n, t));
  return n;
}

/* Asserts t has exactly this shape. */
static inline void expect_shape(ctorch_tensor t, const int64_t *shape, size_t nd) {
  int64_t d = -1, got[8];
  size_t i;
  ck_assert_ptr_nonnull(t);
  CT_OK(ctorch_tensor_dim(&d, t));
  ck_assert_int_eq(d, (int64_t)nd);
  CT_OK(ctorch_tensor_sizes(got, 8, t));
  for (i = 0; i < nd; ++i) ck_assert_msg(got[i] == shape[i], "dim %zu: got %lld want %lld", i, (long long)got[i], (long long)shape[i]);
}

/* Values of any real tensor as doubles (converted), row-major; returns numel. */
static inline size_t values_of(ctorch_tensor t, double *out, size_t cap) {
  ctorch_tensor d = NULL;
  int64_t n = numel_of(t);
  ck_assert_msg(n >= 0 && (size_t)n <= cap, "numel %lld exceeds %zu", (long long)n, cap);
  CT_OK(ctorch_tensor_to_dtype(&d, t, CTORCH_FLOAT64));
  CT_OK(ctorch_tensor_copy_to(out, (size_t)n * sizeof(double), d));
  ctorch_tensor_free(d);
  return (size_t)n;
}

/* Asserts t holds exactly n values equal to want within tol (any real dtype). */
static inline void expect_vals(ctorch_tensor t, const double *want, size_t n, double tol) {
  double got[4096];
  size_t m, i;
  ck_assert_ptr_nonnull(t);
  m = values_of(t, got, 4096);
  ck_assert_msg(m == n, "numel %zu, wanted %zu", m, n);
  for (i = 0; i < n; ++i)
    ck_assert_msg(fabs(got[i] - want[i]) <= tol, "element %zu: got %.9g, wanted %.9g", i, got[i], want[i]);
}
#define D(...) ((const double[]){__VA_ARGS__})
#define EXPECT(t, tol, ...) expect_vals((t), D(__VA_ARGS__), sizeof(D(__VA_ARGS__)) / sizeof(double), (tol))

static inline void expect_dtype(ctorch_tensor t, ctorch_dtype want) {
  ctorch_dtype d = (ctorch_dtype)0;
  CT_OK(ctorch_tensor_dtype(&d, t));
  ck_assert_int_eq(d, want);
}

static inline double item(ctorch_tensor t) {
  double v = NAN;
  CT_OK(ctorch_tensor_item_double(&v, t));
  return v;
}

/* Frees up to 16 handles (NULL-terminated list not needed: NULL-safe). */
static inline void free_all(ctorch_tensor *ts, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) {
    ctorch_tensor_free(ts[i]);
    ts[i] = NULL;
  }
}
#define FREE(...)                                                          \
  do {                                                                     \
    ctorch_tensor ft_[] = {__VA_ARGS__};                                   \
    free_all(ft_, sizeof ft_ / sizeof ft_[0]);                             \
  } while (0)

#endif
