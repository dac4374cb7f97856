/* Generated reductions (incl. tuple-returning ones) and matmul/linalg ops. */
#include "test_ops_util.h"

static ctorch_tensor m22(void) { return TF(SHAPE(2, 2), 2, F(1, 2, 3, 4)); }

START_TEST(sums_and_means) {
  ctorch_tensor a = m22(), r = NULL;
  ctorch_dtype f64 = CTORCH_FLOAT64;
  CT_OK(ctorch_sum(&r, a, NULL));
  EXPECT(r, 0, 10);
  ctorch_tensor_free(r);
  CT_OK(ctorch_sum(&r, a, &f64)); /* ScalarType? given */
  expect_dtype(r, CTORCH_FLOAT64);
  ctorch_tensor_free(r);
  CT_OK(ctorch_sum_dim_IntList(&r, a, I64(0), 1, 0, NULL));
  EXPECT(r, 0, 4, 6);
  ctorch_tensor_free(r);
  CT_OK(ctorch_sum_dim_IntList(&r, a, I64(1), 1, 1, NULL));
  expect_shape(r, SHAPE(2, 1), 2);
  EXPECT(r, 0, 3, 7);
  ctorch_tensor_free(r);
  CT_OK(ctorch_mean(&r, a, NULL));
  EXPECT(r, 1e-6, 2.5);
  ctorch_tensor_free(r);
  CT_OK(ctorch_mean_dim(&r, a, I64(1), 1, 0, NULL));
  EXPECT(r, 1e-6, 1.5, 3.5);
  ctorch_tensor_free(r);
  CT_OK(ctorch_prod(&r, a, NULL));
  EXPECT(r, 0, 24);
  ctorch_tensor_free(r);
  CT_OK(ctorch_cumsum(&r, a, 1, NULL));
  EXPECT(r, 0, 1, 3, 3, 7);
  FREE(r, a);
}
END_TEST

START_TEST(sum_out_variant) {
  ctorch_tensor a = m22(), out = TV(2, F(0, 0));
  CT_OK(ctorch_sum_IntList_out(a, I64(0), 1, 0, NULL, out));
  EXPECT(out, 0, 4, 6);
  FREE(a, out);
}
END_TEST

START_TEST(extrema) {
  ctorch_tensor a = TF(SHAPE(2, 3), 2, F(3, 9, 1, 4, 2, 8)), r = NULL, v = NULL, i = NULL;
  int64_t d = 1;
  CT_OK(ctorch_max(&r, a));
  EXPECT(r, 0, 9);
  ctorch_tensor_free(r);
  CT_OK(ctorch_min(&r, a));
  EXPECT(r, 0, 1);
  ctorch_tensor_free(r);
  CT_OK(ctorch_argmax(&r, a, NULL, 0)); /* int? NULL = flattened */
  expect_dtype(r, CTORCH_INT64);
  EXPECT(r, 0, 1);
  ctorch_tensor_free(r);
  CT_OK(ctorch_argmax(&r, a, &d, 0));
  EXPECT(r, 0, 1, 2);
  ctorch_tensor_free(r);
  /* Tuple return: (values, indices). */
  CT_OK(ctorch_max_dim(&v, &i, a, 1, 0));
  EXPECT(v, 0, 9, 8);
  EXPECT(i, 0, 1, 2);
  ctorch_tensor_free(v);
  ctorch_tensor_free(i);
  CT_OK(ctorch_aminmax(&v, &i, a, NULL, 0));
  EXPECT(v, 0, 1);
  EXPECT(i, 0, 9);
  FREE(v, i, a);
}
END_TEST

START_TEST(tuple_out_variant) {
  ctorch_tensor a = TF(SHAPE(2, 3), 2, F(3, 9, 1, 4, 2, 8)), v = TV(3, F(0, 0, 0)), i = TI(SHAPE(3), 1, I64(0, 0, 0));
  /* max.dim_max(..., *, Tensor(a!) max, Tensor(b!) max_values): both outs are arguments. */
  CT_OK(ctorch_max_dim_max(a, 0, 0, v, i));
  EXPECT(v, 0, 4, 9, 8);
  EXPECT(i, 0, 1, 0, 1);
  FREE(a, v, i);
}
END_TEST

START_TEST(sort_and_topk) {
  ctorch_tensor a = TV(4, F(3, 1, 4, 2)), v = NULL, i = NULL;
  int stable = 1;
  CT_OK(ctorch_sort(&v, &i, a, 0, 0));
  EXPECT(v, 0, 1, 2, 3, 4);
  EXPECT(i, 0, 1, 3, 0, 2);
  ctorch_tensor_free(v);
  ctorch_tensor_free(i);
  CT_OK(ctorch_sort_stable(&v, &i, a, &stable, 0, 1));
  EXPECT(v, 0, 4, 3, 2, 1);
  ctorch_tensor_free(v);
  ctorch_tensor_free(i);
  CT_OK(ctorch_topk(&v, &i, a, 2, -1, 1, 1));
  EXPECT(v, 0, 4, 3);
  EXPECT(i, 0, 2, 0);
  FREE(v, i, a);
}
END_TEST

START_TEST(statistics) {
  ctorch_tensor a = TV(4, F(1, 2, 3, 4)), r = NULL, m = NULL;
  /* var/std.correction: `int? correction` in 1.13, `Scalar? correction` from
   * 2.1, so the C parameter is `const int64_t *` on one and `const
   * ctorch_scalar *` on the other (docs/abi.md). The build's version macros
   * say which; a wrong pointer type is a compile error in the tests
   * (-Werror=incompatible-pointer-types), not a wrong variance. */
#if CTORCH_TORCH_VERSION_MAJOR >= 2
  ctorch_scalar corr = ctorch_scalar_int(1), corr0 = ctorch_scalar_int(0);
#else
  int64_t corr = 1, corr0 = 0;
#endif
  CT_OK(ctorch_var_correction(&r, a, NULL, 0, &corr, 0));
  EXPECT(r, 1e-6, 5.0 / 3);
  ctorch_tensor_free(r);
  CT_OK(ctorch_var_correction(&r, a, NULL, 0, &corr0, 0));
  EXPECT(r, 1e-6, 1.25);
  ctorch_tensor_free(r);
  CT_OK(ctorch_std_mean_correction(&r, &m, a, NULL, 0, &corr, 0));
  EXPECT(r, 1e-6, sqrt(5.0 / 3));
  EXPECT(m, 1e-6, 2.5);
  ctorch_tensor_free(r);
  ctorch_tensor_free(m);
  m = TV(2, F(0, 0));
  CT_OK(ctorch_logsumexp(&r, m, I64(0), 1, 0));
  EXPECT(r, 1e-6, log(2.0));
  ctorch_tensor_free(r);
  ctorch_tensor_free(m);
  m = TF(SHAPE(2, 2), 2, F(3, 4, 6, 8));
  {
    ctorch_scalar p = ctorch_scalar_int(2);
    CT_OK(ctorch_norm_ScalarOpt_dim(&r, m, &p, I64(1), 1, 0));
    EXPECT(r, 1e-5, 5, 10);
  }
  FREE(r, m, a);
}
END_TEST

START_TEST(bool_reductions) {
  ctorch_tensor b = TB(SHAPE(3), 1, (const unsigned char[]){1, 0, 1}), r = NULL;
  CT_OK(ctorch_all(&r, b));
  EXPECT(r, 0, 0);
  ctorch_tensor_free(r);
  CT_OK(ctorch_any(&r, b));
  EXPECT(r, 0, 1);
  FREE(r, b);
}
END_TEST

START_TEST(matmul_family) {
  ctorch_tensor a = m22(), b = TF(SHAPE(2, 2), 2, F(5, 6, 7, 8)), r = NULL, ones = NULL, v = TV(2, F(1, 1));
  ctorch_tensor bt = NULL, bb = NULL;
  CT_OK(ctorch_mm(&r, a, b));
  EXPECT(r, 0, 19, 22, 43, 50);
  ctorch_tensor_free(r);
  CT_OK(ctorch_matmul(&r, a, v));
  EXPECT(r, 0, 3, 7);
  ctorch_tensor_free(r);
  CT_OK(ctorch_mv(&r, a, v));
  EXPECT(r, 0, 3, 7);
  ctorch_tensor_free(r);
  CT_OK(ctorch_ones(&ones, SHAPE(2, 2), 2, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_addmm(&r, ones, a, b, ctorch_scalar_int(2), ctorch_scalar_int(1)));
  EXPECT(r, 0, 21, 24, 45, 52);
  ctorch_tensor_free(r);
  /* bmm over a batch of 2: [a; identity] x [b; b]. */
  {
    ctorch_tensor eye = NULL, xs[2], ys[2];
    CT_OK(ctorch_eye(&eye, 2, NULL, NULL, NULL, NULL));
    xs[0] = a;
    xs[1] = eye;
    ys[0] = b;
    ys[1] = b;
    CT_OK(ctorch_stack(&bt, xs, 2, 0));
    CT_OK(ctorch_stack(&bb, ys, 2, 0));
    CT_OK(ctorch_bmm(&r, bt, bb));
    expect_shape(r, SHAPE(2, 2, 2), 3);
    EXPECT(r, 0, 19, 22, 43, 50, 5, 6, 7, 8);
    ctorch_tensor_free(eye);
    ctorch_tensor_free(r);
  }
  {
    ctorch_tensor x = TV(3, F(1, 2, 3)), y = TV(3, F(4, 5, 6));
    CT_OK(ctorch_dot(&r, x, y));
    EXPECT(r, 0, 32);
    ctorch_tensor_free(r);
    CT_OK(ctorch_outer(&r, v, x));
    EXPECT(r, 0, 1, 2, 3, 1, 2, 3);
    ctorch_tensor_free(r);
    FREE(x, y);
  }
  CT_OK(ctorch_trace(&r, a));
  EXPECT(r, 0, 5);
  FREE(r, a, b, ones, v, bt, bb);
}
END_TEST

START_TEST(linalg) {
  ctorch_tensor a = m22(), r = NULL, rhs = TF(SHAPE(2, 1), 2, F(5, 11)), q = NULL, rr = NULL, qr = NULL;
  CT_OK(ctorch_linalg_det(&r, a));
  EXPECT(r, 1e-5, -2);
  ctorch_tensor_free(r);
  CT_OK(ctorch_linalg_inv(&r, a));
  EXPECT(r, 1e-5, -2, 1, 1.5, -0.5);
  ctorch_tensor_free(r);
  CT_OK(ctorch_linalg_solve(&r, a, rhs, 1));
  EXPECT(r, 1e-5, 1, 2);
  ctorch_tensor_free(r);
  /* QR: Q R reproduces A and Q is orthogonal. */
  CT_OK(ctorch_linalg_qr(&q, &rr, a, "reduced"));
  CT_OK(ctorch_mm(&qr, q, rr));
  EXPECT(qr, 1e-5, 1, 2, 3, 4);
  {
    ctorch_tensor qt = NULL, qtq = NULL;
    CT_OK(ctorch_t(&qt, q));
    CT_OK(ctorch_mm(&qtq, qt, q));
    EXPECT(qtq, 1e-5, 1, 0, 0, 1);
    FREE(qt, qtq);
  }
  FREE(a, rhs, q, rr, qr);
}
END_TEST

START_TEST(linalg_error_status) {
  ctorch_tensor s = TF(SHAPE(2, 2), 2, F(1, 2, 2, 4)), r = NULL;
  CT_FAILS(CTORCH_LINALG, ctorch_linalg_inv(&r, s));
  ck_assert_ptr_null(r);
  CT_ERROR_HAS("ctorch_linalg_inv");
  ctorch_tensor_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_reduce_linalg");
  TCase *tc = tcase_create("reduce_linalg");
  tcase_add_test(tc, sums_and_means);
  tcase_add_test(tc, sum_out_variant);
  tcase_add_test(tc, extrema);
  tcase_add_test(tc, tuple_out_variant);
  tcase_add_test(tc, sort_and_topk);
  tcase_add_test(tc, statistics);
  tcase_add_test(tc, bool_reductions);
  tcase_add_test(tc, matmul_family);
  tcase_add_test(tc, linalg);
  tcase_add_test(tc, linalg_error_status);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
