/* shim/metrics: each function on small cases whose counts are written out
 * below, and each failure (status and the argument named). The comparison
 * with scikit-learn on random data is metrics_vs_sklearn.py. */
#include <math.h>

#include "check_main.h"

static ctorch_tensor labels(const int64_t *v, int64_t n) {
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_from_data(&t, v, (size_t)n * sizeof(int64_t), &n, 1, CTORCH_INT64));
  return t;
}

/* pred = [0, 1, 2, 2, 1, 0], target = [0, 2, 2, 2, 1, 1], 3 classes.
 * Confusion (rows target): [[1,0,0],[1,1,0],[0,1,2]].
 * Per class: tp 1,1,2; predicted 2,2,2; support 1,2,3. */
static const int64_t P[6] = {0, 1, 2, 2, 1, 0}, T[6] = {0, 2, 2, 2, 1, 1};

#define EQ(got, want) ck_assert_msg(fabs((got) - (want)) < 1e-15, "%s: got %.17g want %.17g", #got, (double)(got), (double)(want))

START_TEST(test_accuracy_labels_and_scores) {
  ctorch_tensor p = labels(P, 6), t = labels(T, 6), s = NULL;
  /* scores whose argmax is P (row 3: a tie between 1 and 2 -> the first, 1) */
  const float sc[6][3] = {{3, 1, 0}, {0, 2, 1}, {0, 1, 5}, {0, 4, 4}, {1, 2, 0}, {9, 0, 0}};
  const int64_t sz[2] = {6, 3};
  double acc = -1;
  CT_OK(ctorch_metric_accuracy(&acc, p, t));
  EQ(acc, 4.0 / 6.0);
  s = ct_floats(&sc[0][0], sz, 2);
  CT_OK(ctorch_metric_accuracy(&acc, s, t));
  EQ(acc, 3.0 / 6.0); /* row 3 predicts 1 (first maximum), target 2 */
  CT_OK(ctorch_metric_top_k_accuracy(&acc, s, t, 1));
  EQ(acc, 4.0 / 6.0); /* sklearn breaks the tie toward the higher class: row 3 hits */
  CT_OK(ctorch_metric_top_k_accuracy(&acc, s, t, 2));
  EQ(acc, 5.0 / 6.0); /* row 5 (target 1, scores 9,0,0): class 1 ranks after 0 and 2 */
  CT_OK(ctorch_metric_top_k_accuracy(&acc, s, t, 3));
  EQ(acc, 1.0);
  CT_OK(ctorch_metric_top_k_accuracy(&acc, s, t, 7));
  EQ(acc, 1.0);
  ctorch_tensor_free(p);
  ctorch_tensor_free(t);
  ctorch_tensor_free(s);
}
END_TEST

START_TEST(test_confusion_matrix) {
  ctorch_tensor p = labels(P, 6), t = labels(T, 6), m = NULL;
  int64_t got[16], sz[2];
  const int64_t want[9] = {1, 0, 0, 1, 1, 0, 0, 1, 2};
  ctorch_dtype dt;
  int i;
  CT_OK(ctorch_metric_confusion_matrix(&m, p, t, 3));
  CT_OK(ctorch_tensor_dtype(&dt, m));
  ck_assert_int_eq(dt, CTORCH_INT64);
  CT_OK(ctorch_tensor_sizes(sz, 2, m));
  ck_assert_int_eq(sz[0], 3);
  ck_assert_int_eq(sz[1], 3);
  CT_OK(ctorch_tensor_copy_to(got, 9 * sizeof(int64_t), m));
  for (i = 0; i < 9; ++i) ck_assert_int_eq(got[i], want[i]);
  ctorch_tensor_free(m);
  /* a fourth class absent from both: a zero row and column */
  CT_OK(ctorch_metric_confusion_matrix(&m, p, t, 4));
  CT_OK(ctorch_tensor_copy_to(got, 16 * sizeof(int64_t), m));
  for (i = 0; i < 16; ++i) ck_assert_int_eq(got[i], (i % 4 == 3 || i >= 12) ? 0 : want[(i / 4) * 3 + i % 4]);
  ctorch_tensor_free(m);
  ctorch_tensor_free(p);
  ctorch_tensor_free(t);
}
END_TEST

START_TEST(test_precision_recall_f1) {
  ctorch_tensor p = labels(P, 6), t = labels(T, 6);
  ctorch_tensor pp = NULL, rr = NULL, ff = NULL, ss = NULL;
  double pr, rc, f1, v[4];
  int64_t sup[4];
  /* per class: p = 1/2, 1/2, 2/2; r = 1/1, 1/2, 2/3; f = 2/3, 2/4, 4/5 */
  const double wp[3] = {0.5, 0.5, 1.0}, wr[3] = {1.0, 0.5, 2.0 / 3.0}, wf[3] = {2.0 / 3.0, 0.5, 0.8};
  int i;
  CT_OK(ctorch_metric_precision_recall_f1(&pr, &rc, &f1, p, t, 3, CTORCH_METRIC_MICRO, 0.0));
  EQ(pr, 4.0 / 6.0);
  EQ(rc, 4.0 / 6.0);
  EQ(f1, 8.0 / 12.0);
  CT_OK(ctorch_metric_precision_recall_f1(&pr, &rc, &f1, p, t, 3, CTORCH_METRIC_MACRO, 0.0));
  EQ(pr, (wp[0] + wp[1] + wp[2]) / 3);
  EQ(rc, (wr[0] + wr[1] + wr[2]) / 3);
  EQ(f1, (wf[0] + wf[1] + wf[2]) / 3);
  CT_OK(ctorch_metric_precision_recall_f1(&pr, NULL, NULL, p, t, 3, CTORCH_METRIC_WEIGHTED, 0.0));
  EQ(pr, (wp[0] * 1 + wp[1] * 2 + wp[2] * 3) / 6);
  CT_OK(ctorch_metric_precision_recall_f1_per_class(&pp, &rr, &ff, &ss, p, t, 3, 0.0));
  CT_OK(ctorch_tensor_copy_to(v, 3 * sizeof(double), pp));
  for (i = 0; i < 3; ++i) EQ(v[i], wp[i]);
  CT_OK(ctorch_tensor_copy_to(v, 3 * sizeof(double), rr));
  for (i = 0; i < 3; ++i) EQ(v[i], wr[i]);
  CT_OK(ctorch_tensor_copy_to(v, 3 * sizeof(double), ff));
  for (i = 0; i < 3; ++i) EQ(v[i], wf[i]);
  CT_OK(ctorch_tensor_copy_to(sup, 3 * sizeof(int64_t), ss));
  ck_assert_int_eq(sup[0], 1);
  ck_assert_int_eq(sup[1], 2);
  ck_assert_int_eq(sup[2], 3);
  ctorch_tensor_free(pp);
  ctorch_tensor_free(rr);
  ctorch_tensor_free(ff);
  ctorch_tensor_free(ss);
  /* class 3 absent from both: zero_division decides its p, r, f */
  pp = rr = ff = ss = NULL;
  CT_OK(ctorch_metric_precision_recall_f1_per_class(&pp, &rr, &ff, NULL, p, t, 4, 1.0));
  CT_OK(ctorch_tensor_copy_to(v, 4 * sizeof(double), ff));
  EQ(v[3], 1.0);
  ctorch_tensor_free(pp);
  ctorch_tensor_free(rr);
  ctorch_tensor_free(ff);
  CT_OK(ctorch_metric_precision_recall_f1_per_class(NULL, NULL, &ff, NULL, p, t, 4, NAN));
  CT_OK(ctorch_tensor_copy_to(v, 4 * sizeof(double), ff));
  ck_assert(isnan(v[3]));
  ctorch_tensor_free(ff);
  /* macro with zero_division 0 counts it as 0; NaN leaves it out */
  CT_OK(ctorch_metric_precision_recall_f1(NULL, NULL, &f1, p, t, 4, CTORCH_METRIC_MACRO, 0.0));
  EQ(f1, (wf[0] + wf[1] + wf[2]) / 4);
  CT_OK(ctorch_metric_precision_recall_f1(NULL, NULL, &f1, p, t, 4, CTORCH_METRIC_MACRO, NAN));
  EQ(f1, (wf[0] + wf[1] + wf[2]) / 3);
  ctorch_tensor_free(p);
  ctorch_tensor_free(t);
}
END_TEST

START_TEST(test_failures) {
  const int64_t bad[6] = {0, 1, 3, 2, 1, 0}, neg[6] = {0, -1, 2, 2, 1, 0};
  ctorch_tensor p = labels(P, 6), t = labels(T, 6), p5 = labels(P, 5), pb = labels(bad, 6), pn = labels(neg, 6);
  ctorch_tensor f = NULL, m = (ctorch_tensor)1, empty = labels(P, 0), t3 = labels(T, 3);
  const float sc[6] = {0, 1, 2, 3, 4, 5};
  const int64_t s23[2] = {2, 3}, s6[1] = {6}, s32[2] = {3, 2};
  ctorch_tensor scores23 = ct_floats(sc, s23, 2), f6 = ct_floats(sc, s6, 1), scores32 = ct_floats(sc, s32, 2);
  double v;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_metric_accuracy(NULL, p, t));
  CT_ERROR_HAS("ctorch_metric_accuracy");
  CT_ERROR_HAS("out");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_metric_accuracy(&v, NULL, t));
  CT_ERROR_HAS("pred");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_metric_accuracy(&v, p, NULL));
  CT_ERROR_HAS("target");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_metric_accuracy(&v, p5, t));
  CT_ERROR_HAS("'pred'");
  CT_FAILS(CTORCH_TYPE, ctorch_metric_accuracy(&v, f6, t));
  CT_ERROR_HAS("'pred'");
  CT_FAILS(CTORCH_TYPE, ctorch_metric_accuracy(&v, p, f6));
  CT_ERROR_HAS("'target'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_metric_accuracy(&v, empty, empty));
  CT_ERROR_HAS("empty");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_metric_accuracy(&v, scores23, t));
  CT_ERROR_HAS("rows");

  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_metric_top_k_accuracy(&v, scores32, t3, 0));
  CT_ERROR_HAS("ctorch_metric_top_k_accuracy");
  CT_ERROR_HAS("'k'");
  CT_FAILS(CTORCH_TYPE, ctorch_metric_top_k_accuracy(&v, p, t, 1));
  CT_ERROR_HAS("'scores'");
  CT_FAILS(CTORCH_VALUE, ctorch_metric_top_k_accuracy(&v, scores32, t3, 1)); /* T has class 2, C = 2 */
  CT_ERROR_HAS("'target'");

  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_metric_confusion_matrix(&m, p, t, 0));
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("ctorch_metric_confusion_matrix");
  CT_ERROR_HAS("num_classes");
  CT_FAILS(CTORCH_VALUE, ctorch_metric_confusion_matrix(&m, pb, t, 3));
  CT_ERROR_HAS("'pred': label 3 at index 2");
  CT_FAILS(CTORCH_VALUE, ctorch_metric_confusion_matrix(&m, pn, t, 3));
  CT_ERROR_HAS("label -1");
  CT_FAILS(CTORCH_VALUE, ctorch_metric_confusion_matrix(&m, t, pb, 3));
  CT_ERROR_HAS("'target'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_metric_confusion_matrix(&m, scores32, t3, 3));
  CT_ERROR_HAS("columns");

  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_metric_precision_recall_f1(&v, NULL, NULL, p, t, 3, (ctorch_metric_average)0, 0.0));
  CT_ERROR_HAS("ctorch_metric_precision_recall_f1");
  CT_ERROR_HAS("average");
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_metric_precision_recall_f1(&v, NULL, NULL, p, t, 3, (ctorch_metric_average)4, 0.0));
  CT_ERROR_HAS("average");
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_metric_precision_recall_f1(&v, NULL, NULL, p, t, 3, CTORCH_METRIC_MACRO, 0.5));
  CT_ERROR_HAS("zero_division");
  CT_FAILS(CTORCH_VALUE, ctorch_metric_precision_recall_f1(&v, NULL, NULL, pb, t, 3, CTORCH_METRIC_MICRO, 0.0));
  CT_ERROR_HAS("'pred'");
  f = (ctorch_tensor)1;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_metric_precision_recall_f1_per_class(&f, NULL, NULL, NULL, p, t, -1, 0.0));
  ck_assert_ptr_null(f);
  CT_ERROR_HAS("ctorch_metric_precision_recall_f1_per_class");
  CT_ERROR_HAS("num_classes");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_metric_precision_recall_f1_per_class(&f, NULL, NULL, NULL, p, t, 3, 2.0));
  CT_ERROR_HAS("zero_division");
  ctorch_tensor_free(p);
  ctorch_tensor_free(t);
  ctorch_tensor_free(p5);
  ctorch_tensor_free(pb);
  ctorch_tensor_free(pn);
  ctorch_tensor_free(empty);
  ctorch_tensor_free(scores23);
  ctorch_tensor_free(scores32);
  ctorch_tensor_free(f6);
  ctorch_tensor_free(t3);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("metrics");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_accuracy_labels_and_scores);
  tcase_add_test(tc, test_confusion_matrix);
  tcase_add_test(tc, test_precision_recall_f1);
  tcase_add_test(tc, test_failures);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
