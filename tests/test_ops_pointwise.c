/* Generated pointwise operators, their in-place (op_) and out= variants. */
#include "test_ops_util.h"

START_TEST(arithmetic) {
  ctorch_tensor a = TV(3, F(1, 2, 3)), b = TV(3, F(10, 20, 30)), r = NULL;
  CT_OK(ctorch_add_Tensor(&r, a, b, ctorch_scalar_int(2)));
  EXPECT(r, 0, 21, 42, 63);
  ctorch_tensor_free(r);
  CT_OK(ctorch_add_Scalar(&r, a, ctorch_scalar_float(0.5), ctorch_scalar_int(1)));
  EXPECT(r, 0, 1.5, 2.5, 3.5);
  ctorch_tensor_free(r);
  CT_OK(ctorch_sub_Tensor(&r, b, a, ctorch_scalar_int(1)));
  EXPECT(r, 0, 9, 18, 27);
  ctorch_tensor_free(r);
  CT_OK(ctorch_mul_Tensor(&r, a, b));
  EXPECT(r, 0, 10, 40, 90);
  ctorch_tensor_free(r);
  CT_OK(ctorch_div_Tensor(&r, b, a));
  EXPECT(r, 1e-6, 10, 10, 10);
  ctorch_tensor_free(r);
  CT_OK(ctorch_pow_Tensor_Scalar(&r, a, ctorch_scalar_int(2)));
  EXPECT(r, 0, 1, 4, 9);
  ctorch_tensor_free(r);
  CT_OK(ctorch_addcmul(&r, a, a, b, ctorch_scalar_float(2.0)));
  EXPECT(r, 1e-5, 21, 82, 183);
  ctorch_tensor_free(r);
  CT_OK(ctorch_lerp_Scalar(&r, a, b, ctorch_scalar_float(0.5)));
  EXPECT(r, 1e-6, 5.5, 11, 16.5);
  FREE(r, a, b);
}
END_TEST

START_TEST(div_rounding_modes_str_arg) {
  ctorch_tensor a = TV(2, F(7, -7)), b = TV(2, F(2, 2)), r = NULL;
  CT_OK(ctorch_div_Tensor_mode(&r, a, b, "floor"));
  EXPECT(r, 0, 3, -4);
  ctorch_tensor_free(r);
  CT_OK(ctorch_div_Tensor_mode(&r, a, b, "trunc"));
  EXPECT(r, 0, 3, -3);
  ctorch_tensor_free(r);
  /* str? NULL = None: true division. */
  CT_OK(ctorch_div_Tensor_mode(&r, a, b, NULL));
  EXPECT(r, 0, 3.5, -3.5);
  ctorch_tensor_free(r);
  r = (ctorch_tensor)a; /* must be reset to NULL on failure */
  CT_FAILS(CTORCH_RUNTIME, ctorch_div_Tensor_mode(&r, a, b, "sideways"));
  ck_assert_ptr_null(r);
  CT_ERROR_HAS("ctorch_div_Tensor_mode");
  FREE(a, b);
}
END_TEST

START_TEST(unary) {
  ctorch_tensor x = TV(3, F(-1, 2, -3)), r = NULL, e = NULL;
  CT_OK(ctorch_neg(&r, x));
  EXPECT(r, 0, 1, -2, 3);
  ctorch_tensor_free(r);
  CT_OK(ctorch_abs(&r, x));
  EXPECT(r, 0, 1, 2, 3);
  ctorch_tensor_free(r);
  CT_OK(ctorch_sign(&r, x));
  EXPECT(r, 0, -1, 1, -1);
  ctorch_tensor_free(r);
  CT_OK(ctorch_reciprocal(&r, x));
  EXPECT(r, 1e-7, -1, 0.5, -1.0 / 3);
  ctorch_tensor_free(r);
  e = TV(2, F(0, 0.69314718f));
  CT_OK(ctorch_exp(&r, e));
  EXPECT(r, 1e-6, 1, 2);
  ctorch_tensor_free(r);
  ctorch_tensor_free(e);
  e = TV(2, F(1, 2.7182817f));
  CT_OK(ctorch_log(&r, e));
  EXPECT(r, 1e-6, 0, 1);
  ctorch_tensor_free(r);
  ctorch_tensor_free(e);
  e = TV(2, F(4, 9));
  CT_OK(ctorch_sqrt(&r, e));
  EXPECT(r, 0, 2, 3);
  FREE(r, e, x);
}
END_TEST

START_TEST(activations_and_rounding) {
  ctorch_tensor x = TV(3, F(-1, 0, 2)), h = TV(3, F(1.5f, -1.5f, 2.5f)), r = NULL;
  CT_OK(ctorch_relu(&r, x));
  EXPECT(r, 0, 0, 0, 2);
  ctorch_tensor_free(r);
  CT_OK(ctorch_sigmoid(&r, x));
  EXPECT(r, 1e-6, 1 / (1 + exp(1.0)), 0.5, 1 / (1 + exp(-2.0)));
  ctorch_tensor_free(r);
  CT_OK(ctorch_tanh(&r, x));
  EXPECT(r, 1e-6, tanh(-1.0), 0, tanh(2.0));
  ctorch_tensor_free(r);
  CT_OK(ctorch_floor(&r, h));
  EXPECT(r, 0, 1, -2, 2);
  ctorch_tensor_free(r);
  CT_OK(ctorch_ceil(&r, h));
  EXPECT(r, 0, 2, -1, 3);
  ctorch_tensor_free(r);
  CT_OK(ctorch_round(&r, h)); /* half to even */
  EXPECT(r, 0, 2, -2, 2);
  FREE(r, x, h);
}
END_TEST

START_TEST(clamp_optional_scalars) {
  ctorch_tensor x = TV(3, F(-1, 1, 3)), r = NULL;
  ctorch_scalar lo = ctorch_scalar_int(0), hi = ctorch_scalar_float(2.0);
  CT_OK(ctorch_clamp(&r, x, &lo, &hi));
  EXPECT(r, 0, 0, 1, 2);
  ctorch_tensor_free(r);
  CT_OK(ctorch_clamp(&r, x, NULL, &hi)); /* Scalar? NULL = no lower bound */
  EXPECT(r, 0, -1, 1, 2);
  ctorch_tensor_free(r);
  r = NULL;
  CT_OK(ctorch_clamp_(x, &lo, NULL)); /* in place, no out-params */
  EXPECT(x, 0, 0, 1, 3);
  FREE(r, x);
}
END_TEST

START_TEST(comparisons_and_where) {
  ctorch_tensor a = TV(3, F(1, 5, 3)), b = TV(3, F(1, 2, 4)), r = NULL, c = NULL;
  CT_OK(ctorch_eq_Tensor(&c, a, b));
  expect_dtype(c, CTORCH_BOOL);
  EXPECT(c, 0, 1, 0, 0);
  ctorch_tensor_free(c);
  CT_OK(ctorch_gt_Scalar(&c, a, ctorch_scalar_int(2)));
  EXPECT(c, 0, 0, 1, 1);
  CT_OK(ctorch_where_self(&r, c, a, b));
  EXPECT(r, 0, 1, 5, 3);
  ctorch_tensor_free(r);
  CT_OK(ctorch_maximum(&r, a, b));
  EXPECT(r, 0, 1, 5, 4);
  ctorch_tensor_free(r);
  CT_OK(ctorch_minimum(&r, a, b));
  EXPECT(r, 0, 1, 2, 3);
  FREE(r, c, a, b);
}
END_TEST

START_TEST(type_promotion) {
  ctorch_tensor i = TI(SHAPE(2), 1, I64(1, 2)), f = TV(2, F(0.5f, 0.25f)), r = NULL;
  ctorch_dtype dt = (ctorch_dtype)0;
  CT_OK(ctorch_add_Tensor(&r, i, f, ctorch_scalar_int(1)));
  expect_dtype(r, CTORCH_FLOAT32);
  EXPECT(r, 0, 1.5, 2.25);
  CT_OK(ctorch_result_type_Tensor(&dt, i, f)); /* ScalarType return */
  ck_assert_int_eq(dt, CTORCH_FLOAT32);
  FREE(r, i, f);
}
END_TEST

START_TEST(inplace_variants_mutate_argument) {
  ctorch_tensor a = TV(3, F(1, -2, 3)), b = TV(3, F(1, 1, 1)), keep = NULL;
  /* keep is a second handle to a: in-place ops must be visible through it. */
  CT_OK(ctorch_tensor_ref(&keep, a));
  CT_OK(ctorch_add__Tensor(a, b, ctorch_scalar_int(10)));
  EXPECT(keep, 0, 11, 8, 13);
  CT_OK(ctorch_mul__Scalar(a, ctorch_scalar_int(-1)));
  EXPECT(keep, 0, -11, -8, -13);
  CT_OK(ctorch_relu_(a));
  EXPECT(keep, 0, 0, 0, 0);
  CT_OK(ctorch_fill__Scalar(a, ctorch_scalar_float(2.5)));
  EXPECT(keep, 0, 2.5, 2.5, 2.5);
  CT_OK(ctorch_exp_(b));
  EXPECT(b, 1e-6, exp(1.0), exp(1.0), exp(1.0));
  CT_OK(ctorch_zero_(a));
  EXPECT(keep, 0, 0, 0, 0);
  /* The mutated argument must still be alive and usable (no reference stolen). */
  ck_assert_int_eq(numel_of(a), 3);
  FREE(keep, a, b);
}
END_TEST

START_TEST(out_variants) {
  ctorch_tensor a = TV(3, F(1, 2, 3)), b = TV(3, F(4, 5, 6)), out = NULL, empty = NULL;
  ctorch_tensor m = TF(SHAPE(2, 2), 2, F(1, 2, 3, 4)), n = TF(SHAPE(2, 2), 2, F(5, 6, 7, 8)), mo = NULL;
  float zeros[4] = {0, 0, 0, 0};
  out = TV(3, zeros);
  CT_OK(ctorch_add_out(a, b, ctorch_scalar_int(1), out));
  EXPECT(out, 0, 5, 7, 9);
  /* An empty out= tensor is resized, as in libtorch. */
  empty = TV(0, zeros);
  CT_OK(ctorch_add_out(a, b, ctorch_scalar_int(-1), empty));
  expect_shape(empty, SHAPE(3), 1);
  EXPECT(empty, 0, -3, -3, -3);
  mo = TF(SHAPE(2, 2), 2, zeros);
  CT_OK(ctorch_mm_out(m, n, mo));
  EXPECT(mo, 0, 19, 22, 43, 50);
  /* out= with a mismatched dtype fails cleanly. */
  {
    ctorch_tensor io = TI(SHAPE(3), 1, I64(0, 0, 0));
    CT_FAILS(CTORCH_RUNTIME, ctorch_add_out(a, b, ctorch_scalar_float(0.5), io));
    CT_ERROR_HAS("ctorch_add_out");
    ctorch_tensor_free(io);
  }
  FREE(a, b, out, empty, m, n, mo);
}
END_TEST

START_TEST(non_tensor_returns) {
  ctorch_tensor a = TF(SHAPE(2, 3), 2, F(1, 2, 3, 4, 5, 6)), b = TV(1, F(2.5f)), z = TV(1, F(0));
  int64_t n = -1;
  int flag = -1;
  ctorch_scalar s;
  CT_OK(ctorch_size_int(&n, a, 1));
  ck_assert_int_eq(n, 3);
  CT_OK(ctorch_size_int(&n, a, -2));
  ck_assert_int_eq(n, 2);
  CT_OK(ctorch_is_same_size(&flag, a, a));
  ck_assert_int_eq(flag, 1);
  CT_OK(ctorch_is_same_size(&flag, a, b));
  ck_assert_int_eq(flag, 0);
  CT_OK(ctorch__local_scalar_dense(&s, b)); /* Scalar return */
  ck_assert_int_eq(s.kind, CTORCH_SCALAR_FLOAT);
  ck_assert(s.f == 2.5);
  CT_OK(ctorch_is_nonzero(&flag, z));
  ck_assert_int_eq(flag, 0);
  CT_OK(ctorch_is_nonzero(&flag, b));
  ck_assert_int_eq(flag, 1);
  FREE(a, b, z);
}
END_TEST

/* Wrappers go through the dispatcher, so autograd records them. */
START_TEST(autograd_through_generated_ops) {
  ctorch_tensor x = TV(3, F(1, 2, 3)), y = NULL, s = NULL, d = NULL;
  int flag = -1;
  CT_OK(ctorch_requires_grad_(x, 1));
  CT_OK(ctorch_mul_Tensor(&y, x, x));
  CT_OK(ctorch_tensor_requires_grad(&flag, y));
  ck_assert_int_eq(flag, 1);
  CT_OK(ctorch_is_leaf(&flag, y));
  ck_assert_int_eq(flag, 0);
  CT_OK(ctorch_is_leaf(&flag, x));
  ck_assert_int_eq(flag, 1);
  CT_OK(ctorch_sum(&s, y, NULL));
  CT_OK(ctorch__backward(s, &x, 1, NULL, NULL, 0));
  /* In-place on a leaf that requires grad is refused by autograd. */
  CT_FAILS(CTORCH_RUNTIME, ctorch_add__Tensor(x, x, ctorch_scalar_int(1)));
  CT_ERROR_HAS("ctorch_add__Tensor: a leaf Variable that requires grad");
  CT_OK(ctorch_detach(&d, y));
  CT_OK(ctorch_tensor_requires_grad(&flag, d));
  ck_assert_int_eq(flag, 0);
  EXPECT(d, 0, 1, 4, 9);
  FREE(x, y, s, d);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_pointwise");
  TCase *tc = tcase_create("pointwise");
  tcase_add_test(tc, arithmetic);
  tcase_add_test(tc, div_rounding_modes_str_arg);
  tcase_add_test(tc, unary);
  tcase_add_test(tc, activations_and_rounding);
  tcase_add_test(tc, clamp_optional_scalars);
  tcase_add_test(tc, comparisons_and_where);
  tcase_add_test(tc, type_promotion);
  tcase_add_test(tc, inplace_variants_mutate_argument);
  tcase_add_test(tc, out_variants);
  tcase_add_test(tc, non_tensor_returns);
  tcase_add_test(tc, autograd_through_generated_ops);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
