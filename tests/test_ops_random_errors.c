/* Generated random ops under fixed seeds (determinism + statistics), and the
 * error statuses generated wrappers report. */
#include "test_ops_util.h"

#define N 20000

static void stats(ctorch_tensor t, double *mean, double *sd, double *lo, double *hi) {
  static double v[N];
  size_t n = 0, i;
  double s = 0, ss = 0;
  ctorch_tensor d = NULL;
  n = (size_t)numel_of(t);
  ck_assert_uint_le(n, N);
  CT_OK(ctorch_tensor_to_dtype(&d, t, CTORCH_FLOAT64));
  CT_OK(ctorch_tensor_copy_to(v, n * sizeof(double), d));
  ctorch_tensor_free(d);
  *lo = v[0];
  *hi = v[0];
  for (i = 0; i < n; ++i) {
    s += v[i];
    if (v[i] < *lo) *lo = v[i];
    if (v[i] > *hi) *hi = v[i];
  }
  *mean = s / (double)n;
  for (i = 0; i < n; ++i) ss += (v[i] - *mean) * (v[i] - *mean);
  *sd = sqrt(ss / (double)(n - 1));
}

/* torch.equal: same shape and elements (a bool-returning generated op). */
static int same_values(ctorch_tensor a, ctorch_tensor b) {
  int eq = -1;
  CT_OK(ctorch_equal(&eq, a, b));
  ck_assert(eq == 0 || eq == 1);
  return eq;
}

START_TEST(global_seed_is_deterministic) {
  ctorch_tensor a = NULL, b = NULL, c = NULL;
  double mean, sd, lo, hi;
  CT_OK(ctorch_manual_seed(1234));
  CT_OK(ctorch_rand(&a, SHAPE(N), 1, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_manual_seed(1234));
  CT_OK(ctorch_rand(&b, SHAPE(N), 1, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_rand(&c, SHAPE(N), 1, NULL, NULL, NULL, NULL));
  ck_assert(same_values(a, b));
  ck_assert(!same_values(b, c));
  stats(a, &mean, &sd, &lo, &hi);
  ck_assert(lo >= 0.0 && hi < 1.0);
  ck_assert_msg(fabs(mean - 0.5) < 0.02, "uniform mean %g", mean);
  ck_assert_msg(fabs(sd - sqrt(1.0 / 12)) < 0.02, "uniform sd %g", sd);
  FREE(a, b, c);
}
END_TEST

START_TEST(randn_statistics) {
  ctorch_tensor a = NULL;
  double mean, sd, lo, hi;
  CT_OK(ctorch_manual_seed(7));
  CT_OK(ctorch_randn(&a, SHAPE(N), 1, NULL, NULL, NULL, NULL));
  stats(a, &mean, &sd, &lo, &hi);
  ck_assert_msg(fabs(mean) < 0.05, "normal mean %g", mean);
  ck_assert_msg(fabs(sd - 1) < 0.05, "normal sd %g", sd);
  ctorch_tensor_free(a);
}
END_TEST

START_TEST(integer_random_ops) {
  ctorch_tensor r = NULL, sorted = NULL, idx = NULL, expect = NULL;
  double mean, sd, lo, hi;
  ctorch_dtype i64 = CTORCH_INT64;
  CT_OK(ctorch_manual_seed(99));
  /* At the ATen level dtype=None means the default float dtype (Python's
   * int64 default for randint is applied by its argument parser, not ATen). */
  CT_OK(ctorch_randint_low(&r, 3, 7, SHAPE(N), 1, &i64, NULL, NULL, NULL));
  expect_dtype(r, CTORCH_INT64);
  stats(r, &mean, &sd, &lo, &hi);
  ck_assert(lo == 3 && hi == 6); /* [low, high) and every end reached */
  ck_assert_msg(fabs(mean - 4.5) < 0.05, "randint mean %g", mean);
  ctorch_tensor_free(r);
  /* randperm is a permutation of 0..n-1. */
  CT_OK(ctorch_randperm(&r, 10, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_sort(&sorted, &idx, r, 0, 0));
  CT_OK(ctorch_arange_start_step(&expect, ctorch_scalar_int(0), ctorch_scalar_int(10), ctorch_scalar_int(1), NULL,
                                 NULL, NULL, NULL));
  ck_assert(same_values(sorted, expect));
  FREE(r, sorted, idx, expect);
}
END_TEST

START_TEST(explicit_generators) {
  ctorch_generator g1 = NULL, g2 = NULL, g3 = NULL;
  ctorch_tensor zeros = NULL, a = NULL, b = NULL, c = NULL, p = NULL;
  double mean, sd, lo, hi;
  CT_OK(ctorch_generator_new(&g1, ctorch_device_cpu(), 42));
  CT_OK(ctorch_generator_new(&g2, ctorch_device_cpu(), 42));
  CT_OK(ctorch_generator_new(&g3, ctorch_device_cpu(), 43));
  CT_OK(ctorch_zeros(&zeros, SHAPE(N), 1, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_normal_Tensor_float(&a, zeros, 2.0, g1));
  CT_OK(ctorch_normal_Tensor_float(&b, zeros, 2.0, g2));
  CT_OK(ctorch_normal_Tensor_float(&c, zeros, 2.0, g3));
  ck_assert(same_values(a, b));
  ck_assert(!same_values(a, c));
  stats(a, &mean, &sd, &lo, &hi);
  ck_assert_msg(fabs(mean) < 0.1 && fabs(sd - 2) < 0.1, "normal(0,2): %g %g", mean, sd);
  /* bernoulli(p=0.3) */
  CT_OK(ctorch_bernoulli_p(&p, zeros, 0.3, g1));
  stats(p, &mean, &sd, &lo, &hi);
  ck_assert(lo == 0 && hi == 1);
  ck_assert_msg(fabs(mean - 0.3) < 0.02, "bernoulli mean %g", mean);
  ctorch_tensor_free(p);
  /* uniform_ in place with a generator: reproducible after reseeding. */
  CT_OK(ctorch_generator_set_seed(g1, 5));
  CT_OK(ctorch_uniform_(a, -1, 1, g1));
  CT_OK(ctorch_generator_set_seed(g1, 5));
  CT_OK(ctorch_uniform_(b, -1, 1, g1));
  ck_assert(same_values(a, b));
  stats(a, &mean, &sd, &lo, &hi);
  ck_assert(lo >= -1 && hi < 1 && fabs(mean) < 0.03);
  ctorch_generator_free(g1);
  ctorch_generator_free(g2);
  ctorch_generator_free(g3);
  FREE(zeros, a, b, c);
}
END_TEST

START_TEST(multinomial_and_dropout) {
  ctorch_tensor probs = TV(3, F(0, 1, 0)), r = NULL, ones = NULL;
  double mean, sd, lo, hi;
  CT_OK(ctorch_manual_seed(3));
  CT_OK(ctorch_multinomial(&r, probs, 6, 1, NULL));
  EXPECT(r, 0, 1, 1, 1, 1, 1, 1);
  ctorch_tensor_free(r);
  CT_OK(ctorch_ones(&ones, SHAPE(N), 1, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_dropout(&r, ones, 0.25, 1));
  stats(r, &mean, &sd, &lo, &hi);
  /* kept values are scaled by 1/(1-p); about a quarter are dropped */
  ck_assert(lo == 0 && fabs(hi - 1 / 0.75) < 1e-6);
  ck_assert_msg(fabs(mean - 1) < 0.03, "dropout mean %g", mean);
  FREE(probs, r, ones);
}
END_TEST

START_TEST(shape_mismatch_is_runtime) {
  ctorch_tensor a = TV(3, F(1, 2, 3)), b = TV(4, F(1, 2, 3, 4)), r = (ctorch_tensor)&r;
  CT_FAILS(CTORCH_RUNTIME, ctorch_add_Tensor(&r, a, b, ctorch_scalar_int(1)));
  ck_assert_ptr_null(r);
  ck_assert_msg(strncmp(ctorch_last_error(), "ctorch_add_Tensor: ", 19) == 0, "%s", ctorch_last_error());
  CT_ERROR_HAS("must match the size");
  CT_FAILS(CTORCH_RUNTIME, ctorch_mm(&r, a, b));
  CT_ERROR_HAS("ctorch_mm");
  FREE(a, b);
}
END_TEST

START_TEST(index_out_of_range_is_index) {
  ctorch_tensor a = TV(3, F(1, 2, 3)), r = NULL, bad = TI(SHAPE(1), 1, I64(5));
  CT_FAILS(CTORCH_INDEX, ctorch_select_int(&r, a, 0, 5));
  ck_assert_ptr_null(r);
  CT_ERROR_HAS("ctorch_select_int");
  CT_FAILS(CTORCH_INDEX, ctorch_index_select(&r, a, 0, bad));
  CT_ERROR_HAS("ctorch_index_select");
  CT_FAILS(CTORCH_INDEX, ctorch_size_int(&(int64_t){0}, a, 3));
  FREE(a, bad);
}
END_TEST

START_TEST(huge_allocation_is_out_of_memory) {
  ctorch_tensor r = (ctorch_tensor)&r;
  int64_t n = (int64_t)1 << 50;
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_empty_memory_format(&r, &n, 1, NULL, NULL, NULL, NULL, NULL));
  ck_assert_ptr_null(r);
  CT_ERROR_HAS("ctorch_empty_memory_format");
}
END_TEST

START_TEST(bad_arguments_are_invalid_argument) {
  ctorch_tensor a = TV(3, F(1, 2, 3)), r = NULL;
  ctorch_dtype bad_dtype = (ctorch_dtype)999;
  ctorch_scalar bad_scalar = ctorch_scalar_int(1);
  const int three[3] = {1, 1, 1};
  bad_scalar.kind = 77;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_sum(&r, a, &bad_dtype));
  CT_ERROR_HAS("ctorch_sum: argument 'dtype'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_add_Tensor(&r, a, a, bad_scalar));
  CT_ERROR_HAS("argument 'alpha'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_add_Tensor(NULL, a, a, ctorch_scalar_int(1)));
  CT_ERROR_HAS("argument 'ret'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_add_Tensor(&r, a, NULL, ctorch_scalar_int(1)));
  CT_ERROR_HAS("argument 'other'");
  /* A NULL second out pointer: the first output is still cleared. */
  {
    ctorch_tensor v = (ctorch_tensor)&v;
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_max_dim(&v, NULL, a, 0, 0));
    CT_ERROR_HAS("argument 'ret1'");
    ck_assert_ptr_null(v);
  }
  /* int[] with a NULL pointer but a nonzero length. */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_reshape(&r, a, NULL, 2));
  CT_ERROR_HAS("argument 'shape'");
  /* str (not str?) must not be NULL. */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_linalg_qr(&r, &r, a, NULL));
  CT_ERROR_HAS("argument 'mode'");
  /* bool[3] must have exactly 3 entries. */
  {
    ctorch_tensor x = NULL, go = NULL, w = NULL;
    CT_OK(ctorch_ones(&x, SHAPE(1, 1, 3, 3), 4, NULL, NULL, NULL, NULL));
    CT_OK(ctorch_ones(&w, SHAPE(1, 1, 2, 2), 4, NULL, NULL, NULL, NULL));
    CT_OK(ctorch_ones(&go, SHAPE(1, 1, 2, 2), 4, NULL, NULL, NULL, NULL));
    {
      ctorch_tensor gi = NULL, gw = NULL, gb = NULL;
      const int64_t one[2] = {1, 1}, zero[2] = {0, 0}, bias_sizes[1] = {1};
      CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_convolution_backward(&gi, &gw, &gb, go, x, w, bias_sizes, 1, one, 2, zero,
                                                                    2, one, 2, 0, zero, 2, 1, three, 2));
      CT_ERROR_HAS("argument 'output_mask': expected 3 values, got 2");
      /* and with the right length it works: grad of sum over a 2x2 window of ones */
      CT_OK(ctorch_convolution_backward(&gi, &gw, &gb, go, x, w, bias_sizes, 1, one, 2, zero, 2, one, 2, 0, zero, 2, 1,
                                        three, 3));
      EXPECT(gw, 0, 4, 4, 4, 4);
      EXPECT(gb, 0, 4);
      EXPECT(gi, 0, 1, 2, 1, 2, 4, 2, 1, 2, 1);
      FREE(gi, gw, gb);
      /* An output the mask does not ask for is an undefined tensor: NULL. */
      {
        const int mask[3] = {1, 0, 1};
        CT_OK(ctorch_convolution_backward(&gi, &gw, &gb, go, x, w, bias_sizes, 1, one, 2, zero, 2, one, 2, 0, zero,
                                          2, 1, mask, 3));
        ck_assert_ptr_nonnull(gi);
        ck_assert_ptr_null(gw);
        EXPECT(gb, 0, 4);
        FREE(gi, gb);
      }
    }
    FREE(x, go, w);
  }
  ctorch_tensor_free(a);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_random_errors");
  TCase *tc = tcase_create("random_errors");
  tcase_add_test(tc, global_seed_is_deterministic);
  tcase_add_test(tc, randn_statistics);
  tcase_add_test(tc, integer_random_ops);
  tcase_add_test(tc, explicit_generators);
  tcase_add_test(tc, multinomial_and_dropout);
  tcase_add_test(tc, shape_mismatch_is_runtime);
  tcase_add_test(tc, index_out_of_range_is_index);
  tcase_add_test(tc, huge_allocation_is_out_of_memory);
  tcase_add_test(tc, bad_arguments_are_invalid_argument);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
