/* The inference optimiser (issue 50 item 2): ctorch_nn_module_optimize_for_inference
 * and ctorch_module_optimize_for_inference. Outputs against the module in
 * eval mode (tolerance: 1e-4 of the output's largest magnitude; the oneDNN
 * convolutions and the folded weights round differently), the report of
 * what was applied, the input module left as it was, the options; with
 * Python (the "python" tcase): the folded state dict and repr bit for bit
 * those of torch.ao.quantization.fuse_modules, and a scripted ResNet-like
 * model frozen and optimised. */
#include <math.h>
#include <string.h>

#include "../nn_test_util.h"

static void add(ctorch_nn_module s, const char *kind, const char *args) {
  ctorch_nn_module c = nn(kind, args);
  CT_OK(ctorch_nn_module_append(s, c));
  ctorch_nn_module_free(c);
}

/* optimize_vs_torch.py's seq_model: Conv-BN-ReLU, Conv-BN, Conv-ReLU, Linear-BN1d-ReLU. */
static ctorch_nn_module seq_model(void) {
  static const char *bns[] = {"1", "4", "9"};
  ctorch_nn_module s = nn("Sequential", "");
  size_t i;
  CT_OK(ctorch_manual_seed(1));
  add(s, "Conv2d", "3, 8, 3, padding=1");
  add(s, "BatchNorm2d", "8");
  add(s, "ReLU", "");
  add(s, "Conv2d", "8, 8, 3, stride=2, padding=1, bias=False");
  add(s, "BatchNorm2d", "8");
  add(s, "Conv2d", "8, 4, 1");
  add(s, "ReLU", "");
  add(s, "Flatten", "");
  add(s, "Linear", "64, 16");
  add(s, "BatchNorm1d", "16");
  add(s, "ReLU", "");
  add(s, "Linear", "16, 5");
  /* BatchNorm statistics and affine parameters away from the identity */
  CT_OK(ctorch_nn_module_requires_grad(s, 0));
  for (i = 0; i < 3; ++i) {
    static const char *names[4] = {"running_mean", "running_var", "weight", "bias"};
    static const double lo[4] = {-0.2, 0.5, 0.5, -0.2}, hi[4] = {0.2, 1.5, 1.5, 0.2};
    int k;
    for (k = 0; k < 4; ++k) {
      char path[32];
      ctorch_tensor t = NULL;
      snprintf(path, sizeof path, "%s.%s", bns[i], names[k]);
      CT_OK(ctorch_nn_module_tensor(&t, s, path));
      CT_OK(ctorch_uniform_(t, lo[k], hi[k], NULL));
      ctorch_tensor_free(t);
    }
  }
  CT_OK(ctorch_nn_module_requires_grad(s, 1));
  return s;
}

static ctorch_tensor randn4(int64_t a, int64_t b, int64_t c, int64_t d) {
  int64_t sz[4] = {a, b, c, d};
  ctorch_tensor t = NULL;
  CT_OK(ctorch_randn(&t, sz, 4, NULL, NULL, NULL, NULL));
  return t;
}

static double max_abs(ctorch_tensor t) {
  ctorch_tensor a = NULL, m = NULL;
  double v = 0;
  CT_OK(ctorch_abs(&a, t));
  CT_OK(ctorch_max(&m, a));
  CT_OK(ctorch_tensor_item_double(&v, m));
  ctorch_tensor_free(a), ctorch_tensor_free(m);
  return v;
}

/* |opt(x) - ref(x)| <= tol * max|ref(x)| */
static void expect_close(ctorch_nn_module ref, ctorch_nn_module opt, ctorch_tensor x, double tol) {
  ctorch_tensor a = NULL, b = NULL;
  double d, scale;
  CT_OK(ctorch_nn_module_forward(&a, ref, x));
  CT_OK(ctorch_nn_module_forward(&b, opt, x));
  d = ct_max_abs_diff(a, b), scale = max_abs(a);
  ck_assert_msg(scale > 0.01, "the reference output is too small to compare (%g)", scale);
  ck_assert_msg(d <= tol * scale, "max |diff| %g > %g * max |ref| %g", d, tol, scale);
  ctorch_tensor_free(a), ctorch_tensor_free(b);
}

static void expect_has(const char *report, const char *line) {
  ck_assert_msg(strstr(report, line) != NULL, "report lacks '%s':\n%s", line, report);
}

START_TEST(sequential_folded_fused_prepacked) {
  ctorch_nn_module m = seq_model(), opt = NULL, plain = NULL;
  ctorch_tensor x2 = randn4(2, 3, 8, 8), x1 = randn4(1, 3, 8, 8);
  char *report = NULL, *before = NULL, *after = NULL;
  int training = 0;
  CT_OK(ctorch_nn_module_repr(&before, m));
  CT_OK(ctorch_nn_module_optimize_for_inference(&opt, &report, m, NULL));
  expect_has(report, "fold_bn 1 into 0\n");
  expect_has(report, "fuse_relu 2 into 0 (ConvReLU2d)\n");
  expect_has(report, "fold_bn 4 into 3\n");
  expect_has(report, "fuse_relu 6 into 5 (ConvReLU2d)\n");
  expect_has(report, "fold_bn 9 into 8\n");
  expect_has(report, "fuse_relu 10 into 8 (LinearReLU)\n");
  expect_has(report, "prepack 0 mkldnn_prepacked::conv2d_prepack channels_last\n");
  expect_has(report, "prepack 3 mkldnn_prepacked::conv2d_prepack");
  /* the input module as it was: training mode, same structure */
  CT_OK(ctorch_nn_module_is_training(&training, m));
  ck_assert_int_eq(training, 1);
  CT_OK(ctorch_nn_module_repr(&after, m));
  ck_assert_str_eq(before, after);
  CT_OK(ctorch_nn_module_is_training(&training, opt));
  ck_assert_int_eq(training, 0);
  /* outputs: batch 2, batch 1 (another prepacked shape), batch 2 again */
  CT_OK(ctorch_nn_module_train(m, 0));
  expect_close(m, opt, x2, 1e-4);
  expect_close(m, opt, x1, 1e-4);
  expect_close(m, opt, x2, 1e-4);
  /* fold and fuse only: the plain ops on folded weights */
  ctorch_string_free(report);
  CT_OK(ctorch_nn_module_optimize_for_inference(&plain, &report, m, "prepack=0"));
  ck_assert_ptr_null(strstr(report, "prepack "));
  expect_has(report, "fold_bn 1 into 0\n");
  expect_close(m, plain, x2, 1e-5);
  ctorch_string_free(report), ctorch_string_free(before), ctorch_string_free(after);
  ctorch_nn_module_free(m), ctorch_nn_module_free(opt), ctorch_nn_module_free(plain);
  ctorch_tensor_free(x2), ctorch_tensor_free(x1);
}
END_TEST

/* Nothing folded where it would change the result: a BatchNorm without
 * running statistics, a module used twice; fold=0 and fuse=0 respected. */
START_TEST(what_is_left_alone) {
  ctorch_nn_module s = nn("Sequential", ""), shared = nn("Conv2d", "3, 3, 1"), opt = NULL;
  ctorch_tensor x = randn4(2, 3, 4, 4);
  char *report = NULL;
  add(s, "Conv2d", "3, 3, 3, padding=1");
  add(s, "BatchNorm2d", "3, track_running_stats=False");
  CT_OK(ctorch_nn_module_append(s, shared));
  add(s, "BatchNorm2d", "3");
  CT_OK(ctorch_nn_module_append(s, shared));
  CT_OK(ctorch_nn_module_optimize_for_inference(&opt, &report, s, "fuse=0"));
  expect_has(report, "skip fold_bn 1: track_running_stats=False");
  ck_assert_ptr_null(strstr(report, "fold_bn 3"));
  CT_OK(ctorch_nn_module_train(s, 0));
  expect_close(s, opt, x, 1e-4);
  ctorch_string_free(report);
  ctorch_nn_module_free(opt);
  CT_OK(ctorch_nn_module_optimize_for_inference(&opt, &report, s, "fold=0,fuse=0,prepack=0,channels_last=0"));
  ck_assert_str_eq(report, "");
  ctorch_string_free(report);
  ctorch_nn_module_free(opt);
  /* no report asked */
  CT_OK(ctorch_nn_module_optimize_for_inference(&opt, NULL, s, ""));
  ctorch_nn_module_free(opt);
  ctorch_nn_module_free(s), ctorch_nn_module_free(shared);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(bad_arguments) {
  ctorch_nn_module s = nn("Sequential", ""), opt = NULL;
  ctorch_module jm = NULL;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_optimize_for_inference(&opt, NULL, s, "fold=2"));
  CT_ERROR_HAS("options");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_optimize_for_inference(&opt, NULL, s, "speed=1"));
  CT_ERROR_HAS("options");
  ck_assert_ptr_null(opt);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_optimize_for_inference(NULL, NULL, s, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_optimize_for_inference(&opt, NULL, NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_optimize_for_inference(&jm, NULL, NULL, NULL));
  CT_ERROR_HAS("'m'");
  ctorch_nn_module_free(s);
}
END_TEST

START_TEST(thread_policy_reported) {
  char *s = NULL;
  int n = 0;
  char want[64];
  CT_OK(ctorch_get_num_threads(&n));
  CT_OK(ctorch_thread_policy(&s));
  snprintf(want, sizeof want, "intra_op_threads=%d\n", n);
  expect_has(s, want);
  expect_has(s, "inter_op_threads=");
  expect_has(s, "OMP_WAIT_POLICY=");
  ctorch_string_free(s);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_thread_policy(NULL));
}
END_TEST

/* ---- with Python ---------------------------------------------------------- */

static int run_py(const char *args) {
  const char *py = getenv("CTORCH_TORCH_PYTHON"), *src = getenv("CTORCH_SOURCE_DIR");
  char cmd[8192];
  ck_assert_msg(py && src, "CTORCH_TORCH_PYTHON and CTORCH_SOURCE_DIR must be set (run under ctest)");
  snprintf(cmd, sizeof cmd, "'%s' '%s/tests/nn/optimize_vs_torch.py' %s", py, src, args);
  return system(cmd);
}

START_TEST(folded_like_fuse_modules) {
  ctorch_nn_module m = seq_model(), opt = NULL;
  ctorch_tensor_dict sd = NULL;
  char dir[] = "/tmp/ctorch-optimize-XXXXXX", path[256], *repr = NULL;
  int rc;
  ck_assert_ptr_nonnull(mkdtemp(dir));
  CT_OK(ctorch_nn_module_state_dict(&sd, m));
  snprintf(path, sizeof path, "%s/orig.pt", dir);
  CT_OK(ctorch_tensor_dict_save(path, sd));
  ctorch_tensor_dict_free(sd);
  CT_OK(ctorch_nn_module_optimize_for_inference(&opt, NULL, m, NULL));
  CT_OK(ctorch_nn_module_state_dict(&sd, opt));
  snprintf(path, sizeof path, "%s/opt.pt", dir);
  CT_OK(ctorch_tensor_dict_save(path, sd));
  CT_OK(ctorch_nn_module_repr(&repr, opt));
  snprintf(path, sizeof path, "%s/opt_repr.txt", dir);
  ct_write_file(path, repr, strlen(repr));
  snprintf(path, sizeof path, "fuse '%s'", dir);
  rc = run_py(path);
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(path), 0);
  ck_assert_msg(rc == 0, "the folded module differs from fuse_modules' (exit %d)", rc);
  ctorch_string_free(repr);
  ctorch_tensor_dict_free(sd);
  ctorch_nn_module_free(m), ctorch_nn_module_free(opt);
}
END_TEST

START_TEST(torchscript_frozen_and_optimized) {
  char dir[] = "/tmp/ctorch-optimize-XXXXXX", path[256], *report = NULL, *report0 = NULL;
  ctorch_module m = NULL, opt = NULL, frozen = NULL;
  ctorch_tensor x = randn4(2, 3, 16, 16), x1 = randn4(1, 3, 16, 16), ref = NULL, got = NULL, p = NULL;
  ctorch_tensor_dict params = NULL;
  size_t n = 0;
  int training = 0, rc, k;
  double d;
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "make '%s'", dir);
  rc = run_py(path);
  ck_assert_msg(rc == 0, "optimize_vs_torch.py make failed (exit %d)", rc);
  snprintf(path, sizeof path, "%s/resnetish.pt", dir);
  CT_OK(ctorch_module_load(&m, path, NULL));
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(path), 0);
  CT_OK(ctorch_module_optimize_for_inference(&opt, &report, m, NULL));
  expect_has(report, "pass torch::jit::freeze\n");
  expect_has(report, "pass torch::jit::optimize_for_inference\n");
  expect_has(report, "aten::batch_norm: 4 -> 0\n");
  expect_has(report, "prim::mkldnn_convolution: 0 -> 4\n"); /* ConvertFrozenOpsToMKLDNN: both libtorch builds have oneDNN */
  /* m unchanged: still training, still has its parameters */
  CT_OK(ctorch_module_is_training(&training, m));
  ck_assert_int_eq(training, 1);
  CT_OK(ctorch_module_named_parameters(&params, m));
  CT_OK(ctorch_tensor_dict_size(&n, params));
  ck_assert_uint_eq(n, 14); /* 4 convs, 4 BatchNorms x 2, fc x 2 */
  ctorch_tensor_dict_free(params);
  CT_OK(ctorch_module_eval(m));
  for (k = 0; k < 2; ++k) {
    ctorch_tensor in = k ? x1 : x;
    CT_OK(ctorch_module_forward_tensors(&ref, m, &in, 1));
    CT_OK(ctorch_module_forward_tensors(&got, opt, &in, 1));
    d = ct_max_abs_diff(ref, got);
    ck_assert_msg(d <= 1e-4 * max_abs(ref), "optimised: max |diff| %g, max |ref| %g", d, max_abs(ref));
    ctorch_tensor_free(ref), ctorch_tensor_free(got);
  }
  /* freeze only */
  CT_OK(ctorch_module_optimize_for_inference(&frozen, &report0, m, "mkldnn=0"));
  ck_assert_ptr_null(strstr(report0, "optimize_for_inference"));
  expect_has(report0, "aten::batch_norm: 4 -> 0\n");
  CT_OK(ctorch_module_forward_tensors(&ref, m, &x, 1));
  CT_OK(ctorch_module_forward_tensors(&got, frozen, &x, 1));
  d = ct_max_abs_diff(ref, got);
  ck_assert_msg(d <= 1e-5 * max_abs(ref), "frozen: max |diff| %g", d);
  CT_FAILS(CTORCH_INDEX, ctorch_module_parameter(&p, frozen, "fc.weight")); /* constants now */
  { /* refused options: no module comes back (a fresh out-parameter: opt is still ours to free) */
    ctorch_module none = NULL;
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_optimize_for_inference(&none, NULL, m, "methods=nope"));
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_optimize_for_inference(&none, NULL, m, "mkldnn=yes"));
    ck_assert_ptr_null(none);
  }
  ctorch_tensor_free(ref), ctorch_tensor_free(got);
  ctorch_string_free(report), ctorch_string_free(report0);
  ctorch_module_free(m), ctorch_module_free(opt), ctorch_module_free(frozen);
  ctorch_tensor_free(x), ctorch_tensor_free(x1);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("nn_optimize");
  TCase *tc = tcase_create("optimize"), *py = tcase_create("python");
  tcase_add_test(tc, sequential_folded_fused_prepacked);
  tcase_add_test(tc, what_is_left_alone);
  tcase_add_test(tc, bad_arguments);
  tcase_add_test(tc, thread_policy_reported);
  tcase_set_tags(py, "python");
  tcase_add_test(py, folded_like_fuse_modules);
  tcase_add_test(py, torchscript_frozen_and_optimized);
  suite_add_tcase(s, tc);
  suite_add_tcase(s, py);
  return s;
}

CTORCH_CHECK_MAIN()
