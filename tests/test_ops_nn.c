/* Generated conv/pool, loss and layer ops, checked against hand-computed values. */
#include "test_ops_util.h"

static const float k_1to9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const float k_1to16[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

START_TEST(conv2d) {
  ctorch_tensor x = TF(SHAPE(1, 1, 3, 3), 4, k_1to9), w = TF(SHAPE(1, 1, 2, 2), 4, F(1, 1, 1, 1));
  ctorch_tensor bias = TV(1, F(1)), r = NULL;
  const int64_t one[1] = {1}, zero[1] = {0};
  CT_OK(ctorch_conv2d(&r, x, w, bias, one, 1, zero, 1, one, 1, 1));
  expect_shape(r, SHAPE(1, 1, 2, 2), 4);
  EXPECT(r, 1e-5, 13, 17, 25, 29);
  ctorch_tensor_free(r);
  /* Tensor? bias = NULL: no bias. Padding 1 grows the output to 4x4. */
  CT_OK(ctorch_conv2d(&r, x, w, NULL, one, 1, one, 1, one, 1, 1));
  expect_shape(r, SHAPE(1, 1, 4, 4), 4);
  EXPECT(r, 1e-5, 1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9);
  FREE(r, x, w, bias);
}
END_TEST

START_TEST(conv1d) {
  ctorch_tensor x = TF(SHAPE(1, 1, 4), 3, F(1, 2, 4, 8)), w = TF(SHAPE(1, 1, 2), 3, F(1, -1)), r = NULL;
  const int64_t one[1] = {1}, zero[1] = {0};
  CT_OK(ctorch_conv1d(&r, x, w, NULL, one, 1, zero, 1, one, 1, 1));
  EXPECT(r, 1e-6, -1, -2, -4);
  FREE(r, x, w);
}
END_TEST

START_TEST(pooling) {
  ctorch_tensor x = TF(SHAPE(1, 1, 4, 4), 4, k_1to16), r = NULL, idx = NULL;
  const int64_t two[2] = {2, 2}, zero[2] = {0, 0}, one[2] = {1, 1}, out1[2] = {1, 1};
  CT_OK(ctorch_max_pool2d(&r, x, two, 2, two, 2, zero, 2, one, 2, 0));
  EXPECT(r, 0, 6, 8, 14, 16);
  ctorch_tensor_free(r);
  CT_OK(ctorch_max_pool2d_with_indices(&r, &idx, x, two, 2, two, 2, zero, 2, one, 2, 0));
  EXPECT(r, 0, 6, 8, 14, 16);
  EXPECT(idx, 0, 5, 7, 13, 15);
  ctorch_tensor_free(r);
  CT_OK(ctorch_avg_pool2d(&r, x, two, 2, two, 2, zero, 2, 0, 1, NULL));
  EXPECT(r, 1e-6, 3.5, 5.5, 11.5, 13.5);
  ctorch_tensor_free(r);
  {
    int64_t div = 1; /* int? divisor_override given */
    CT_OK(ctorch_avg_pool2d(&r, x, two, 2, two, 2, zero, 2, 0, 1, &div));
    EXPECT(r, 1e-6, 14, 22, 46, 54);
    ctorch_tensor_free(r);
  }
  CT_OK(ctorch_adaptive_avg_pool2d(&r, x, out1, 2));
  expect_shape(r, SHAPE(1, 1, 1, 1), 4);
  EXPECT(r, 1e-6, 8.5);
  FREE(r, idx, x);
}
END_TEST

START_TEST(regression_losses) {
  ctorch_tensor p = TV(3, F(1, 2, 3)), t = TV(3, F(1, 1, 1)), r = NULL;
  CT_OK(ctorch_mse_loss(&r, p, t, 1)); /* mean */
  EXPECT(r, 1e-6, 5.0 / 3);
  ctorch_tensor_free(r);
  CT_OK(ctorch_mse_loss(&r, p, t, 2)); /* sum */
  EXPECT(r, 1e-6, 5);
  ctorch_tensor_free(r);
  CT_OK(ctorch_mse_loss(&r, p, t, 0)); /* none */
  EXPECT(r, 1e-6, 0, 1, 4);
  ctorch_tensor_free(r);
  CT_OK(ctorch_l1_loss(&r, p, t, 1));
  EXPECT(r, 1e-6, 1);
  ctorch_tensor_free(r);
  CT_OK(ctorch_smooth_l1_loss(&r, p, t, 0, 1.0));
  EXPECT(r, 1e-6, 0, 0.5, 1.5);
  FREE(r, p, t);
}
END_TEST

START_TEST(classification_losses) {
  ctorch_tensor logits = TF(SHAPE(2, 2), 2, F(0, 0, 0, 0.69314718f)), target = TI(SHAPE(2), 1, I64(1, 1)), r = NULL;
  ctorch_tensor logp = TF(SHAPE(1, 2), 2, F(-1, -2)), t1 = TI(SHAPE(1), 1, I64(1));
  ctorch_tensor prob = TV(2, F(0.5f, 0.25f)), y = TV(2, F(1, 0));
  /* row 0: -log(1/2); row 1: softmax([0, ln2])[1] = 2/3. */
  CT_OK(ctorch_cross_entropy_loss(&r, logits, target, NULL, 0, -100, 0.0));
  EXPECT(r, 1e-5, log(2.0), -log(2.0 / 3));
  ctorch_tensor_free(r);
  CT_OK(ctorch_nll_loss(&r, logp, t1, NULL, 1, -100));
  EXPECT(r, 1e-6, 2);
  ctorch_tensor_free(r);
  CT_OK(ctorch_binary_cross_entropy(&r, prob, y, NULL, 0));
  EXPECT(r, 1e-5, log(2.0), -log(0.75));
  FREE(r, logits, target, logp, t1, prob, y);
}
END_TEST

START_TEST(softmax_family) {
  ctorch_tensor x = TV(2, F(0, 1.0986123f)), r = NULL;
  CT_OK(ctorch_softmax_int(&r, x, 0, NULL));
  EXPECT(r, 1e-6, 0.25, 0.75);
  ctorch_tensor_free(r);
  CT_OK(ctorch_log_softmax_int(&r, x, 0, NULL));
  EXPECT(r, 1e-6, log(0.25), log(0.75));
  FREE(r, x);
}
END_TEST

START_TEST(layers) {
  ctorch_tensor in = TF(SHAPE(1, 2), 2, F(1, 2)), w = TF(SHAPE(2, 2), 2, F(1, 1, 1, -1)), b = TV(2, F(0, 1)), r = NULL;
  ctorch_tensor emb = TF(SHAPE(3, 2), 2, F(0, 1, 10, 11, 20, 21)), ix = TI(SHAPE(2), 1, I64(2, 0));
  ctorch_tensor ln = TV(2, F(1, 3));
  const int64_t norm_shape[1] = {2};
  CT_OK(ctorch_linear(&r, in, w, b));
  EXPECT(r, 1e-6, 3, 0);
  ctorch_tensor_free(r);
  CT_OK(ctorch_embedding(&r, emb, ix, -1, 0, 0));
  EXPECT(r, 0, 20, 21, 0, 1);
  ctorch_tensor_free(r);
  CT_OK(ctorch_layer_norm(&r, ln, norm_shape, 1, NULL, NULL, 1e-5, 0));
  EXPECT(r, 1e-4, -1, 1);
  ctorch_tensor_free(r);
  /* dropout in eval mode is the identity. */
  CT_OK(ctorch_dropout(&r, in, 0.5, 0));
  EXPECT(r, 0, 1, 2);
  FREE(r, in, w, b, emb, ix, ln);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_nn");
  TCase *tc = tcase_create("nn");
  tcase_add_test(tc, conv2d);
  tcase_add_test(tc, conv1d);
  tcase_add_test(tc, pooling);
  tcase_add_test(tc, regression_losses);
  tcase_add_test(tc, classification_losses);
  tcase_add_test(tc, softmax_family);
  tcase_add_test(tc, layers);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
