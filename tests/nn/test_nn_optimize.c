/* The inference optimiser: ctorch_nn_module_optimize_for_inference
 * and ctorch_module_optimize_for_inference. Outputs against the module in
 * eval mode (tolerance: 1e-4 of the output's largest magnitude; the oneDNN
 * convolutions and the folded weights round differently), the report of
 * what was applied, the input module left as it was, the options; the
 * inference Linear (one row split across 1 and 2 intra-op threads, several
 * rows through oneDNN where libtorch registers it, fused activations, with
 * and without bias, in a Sequential and called by path from a custom
 * module's C forward) within 1e-5 of the output's largest magnitude, and
 * what it leaves to at::linear; the packed one-row kernels (AVX-512, AVX2,
 * none: the report against the CPU, the outputs); with Python (the "python" tcase): the
 * folded state dict and repr bit for bit those of
 * torch.ao.quantization.fuse_modules, the optimised Linears' outputs
 * against torch.nn's, and a scripted ResNet-like model frozen and
 * optimised. */
#define _GNU_SOURCE /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "../nn_test_util.h"

/* optimize_vs_torch.py's seq_model: Conv-BN-ReLU, Conv-BN, Conv-ReLU, Linear-BN1d-ReLU. */
static ctorch_nn_module seq_model(void) {
  static const char *bns[] = {"1", "4", "9"};
  ctorch_nn_module s = nn("Sequential", "");
  size_t i;
  CT_OK(ctorch_manual_seed(1));
  seq_add(s, "Conv2d", "3, 8, 3, padding=1");
  seq_add(s, "BatchNorm2d", "8");
  seq_add(s, "ReLU", "");
  seq_add(s, "Conv2d", "8, 8, 3, stride=2, padding=1, bias=False");
  seq_add(s, "BatchNorm2d", "8");
  seq_add(s, "Conv2d", "8, 4, 1");
  seq_add(s, "ReLU", "");
  seq_add(s, "Flatten", "");
  seq_add(s, "Linear", "64, 16");
  seq_add(s, "BatchNorm1d", "16");
  seq_add(s, "ReLU", "");
  seq_add(s, "Linear", "16, 5");
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
  ck_assert_ptr_null(strstr(report, "mkldnn_prepacked"));
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
  seq_add(s, "Conv2d", "3, 3, 3, padding=1");
  seq_add(s, "BatchNorm2d", "3, track_running_stats=False");
  CT_OK(ctorch_nn_module_append(s, shared));
  seq_add(s, "BatchNorm2d", "3");
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
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_optimize_for_inference(&opt, NULL, s, "linear=2"));
  CT_ERROR_HAS("'linear=2'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_optimize_for_inference(&opt, NULL, s, "split_rows=yes"));
  CT_ERROR_HAS("options");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_optimize_for_inference(&opt, NULL, s, "linear_onednn"));
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
  expect_has(s, "CTORCH_HEAP=");
  ctorch_string_free(s);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_thread_policy(NULL));
}
END_TEST

/* ---- the inference Linear ------------------------------------------------ */

/* Whether this libtorch registers oneDNN's Linear (PyPI's 2.x: yes; Debian's 1.13.1: no). */
static int has_onednn_linear(void) {
  ctorch_op op = NULL;
  int ok = ctorch_op_find(&op, "mkldnn::_linear_pointwise", NULL) == CTORCH_OK;
  ctorch_op_free(op);
  return ok;
}

static ctorch_tensor randn_n(const int64_t *sz, size_t n) {
  ctorch_tensor t = NULL;
  CT_OK(ctorch_randn(&t, sz, n, NULL, NULL, NULL, NULL));
  return t;
}

/* Linear(in, out, bias) appended to s. */
static void add_linear(ctorch_nn_module s, int in, int out, int bias) {
  char a[64];
  snprintf(a, sizeof a, "%d, %d, bias=%s", in, out, bias ? "True" : "False");
  seq_add(s, "Linear", a);
}

/* optimize_vs_torch.py's linear_model: each activation a Linear can take as
 * a post-op; weights over the split's smallest (2^20: "0", "2", "8"), one
 * under it and over oneDNN's (2^18: "4"), one under both ("6"). */
static ctorch_nn_module linear_model(int bias) {
  ctorch_nn_module s = nn("Sequential", "");
  CT_OK(ctorch_manual_seed(2));
  add_linear(s, 512, 2048, bias);
  seq_add(s, "ReLU", "");
  add_linear(s, 2048, 512, bias);
  seq_add(s, "GELU", "approximate='tanh'");
  add_linear(s, 512, 512, bias);
  seq_add(s, "SiLU", "");
  add_linear(s, 512, 64, bias);
  seq_add(s, "GELU", "");
  add_linear(s, 64, 16384, bias);
  return s;
}

/* One row (2-d and 3-d), several rows (2-d and 3-d), for an input width. */
static const int64_t row_shapes[4][3] = {{1, 0, 0}, {1, 1, 0}, {5, 0, 0}, {2, 3, 0}};
static ctorch_tensor row_input(int k, int64_t width) {
  int64_t sz[3];
  size_t n = row_shapes[k][1] ? 3 : 2;
  sz[0] = row_shapes[k][0], sz[1] = row_shapes[k][1] ? row_shapes[k][1] : width, sz[2] = width;
  return randn_n(sz, n);
}

/* ref and opt on every input shape at 1 and 2 intra-op threads, within tol
 * of the largest output. */
static void expect_close_rows(ctorch_nn_module ref, ctorch_nn_module opt, int64_t width, double tol) {
  int threads0 = 1, t, k;
  CT_OK(ctorch_get_num_threads(&threads0));
  for (t = 1; t <= 2; ++t) {
    CT_OK(ctorch_set_num_threads(t));
    for (k = 0; k < 4; ++k) {
      ctorch_tensor x = row_input(k, width);
      expect_close(ref, opt, x, tol);
      ctorch_tensor_free(x);
    }
  }
  CT_OK(ctorch_set_num_threads(threads0));
}

/* In a Sequential: every Linear rewritten, the activations fused (oneDNN's
 * post-ops where it runs), with and without bias. Tolerance 1e-5 of the
 * largest output: a split output column is the same dot product over the
 * same inputs (the BLAS may block it differently for a narrower matrix),
 * and oneDNN sums in its own order and computes GELU and SiLU with its own
 * approximations; float32 rounding of those (measured: under 1e-6). */
START_TEST(linear_in_sequential) {
  int bias, onednn = has_onednn_linear();
  for (bias = 0; bias <= 1; ++bias) {
    ctorch_nn_module m = linear_model(bias), opt = NULL, plain = NULL;
    ctorch_tensor a = NULL, b = NULL, x;
    char *report = NULL, *repr = NULL;
    const char *const paths[] = {"0", "2", "4", "6", "8"};
    int i;
    CT_OK(ctorch_nn_module_optimize_for_inference(&opt, &report, m, NULL));
    expect_has(report, "fuse_relu 1 into 0 (LinearReLU)\n");
    expect_has(report, "fuse_gelu 3 into 2 (LinearGELU)\n");
    expect_has(report, "fuse_silu 5 into 4 (LinearSiLU)\n");
    expect_has(report, "fuse_gelu 7 into 6 (LinearGELU)\n");
    /* each may add ", weight copied to [in, out] rows" (or [out, in]): the layout depends on the BLAS */
    expect_has(report, "split 0 columns");
    expect_has(report, "split 2 columns");
    expect_has(report, "skip split 4: 262144 weights, under the 1048576 it pays for\n");
    expect_has(report, "skip split 6: 32768 weights, under the 1048576 it pays for\n");
    expect_has(report, "split 8 columns");
    for (i = 0; i < 5; ++i) {
      char line[96];
      if (!onednn)
        snprintf(line, sizeof line, "skip prepack %s: this libtorch registers no mkldnn::_linear_pointwise\n", paths[i]);
      else if (i == 3) snprintf(line, sizeof line, "skip prepack 6: 32768 weights, under the 262144 it pays for\n");
      else snprintf(line, sizeof line, "prepack %s mkldnn::_linear_pointwise\n", paths[i]);
      expect_has(report, line);
    }
    /* fuse_modules' structure: the Linear as "0.0", its tensors the same values */
    CT_OK(ctorch_nn_module_repr(&repr, opt));
    ck_assert_msg(strstr(repr, "(2): LinearGELU(\n    (0): Linear(in_features=2048, out_features=512, bias=") != NULL,
                  "%s", repr);
    CT_OK(ctorch_nn_module_tensor(&a, m, "4.weight"));
    CT_OK(ctorch_nn_module_tensor(&b, opt, "4.0.weight"));
    ck_assert(ct_max_abs_diff(a, b) == 0);
    CT_OK(ctorch_nn_module_train(m, 0));
    expect_close_rows(m, opt, 512, 1e-5);
    /* linear=0: fused pairs of plain Linears, the activation after: what eval computes, bit for bit */
    ctorch_string_free(report);
    CT_OK(ctorch_nn_module_optimize_for_inference(&plain, &report, m, "linear=0"));
    ck_assert_ptr_null(strstr(report, "split "));
    ck_assert_ptr_null(strstr(report, "mkldnn::_linear_pointwise"));
    expect_has(report, "fuse_silu 5 into 4 (LinearSiLU)\n");
    x = row_input(2, 512);
    ctorch_tensor_free(a), ctorch_tensor_free(b);
    CT_OK(ctorch_nn_module_forward(&a, m, x));
    CT_OK(ctorch_nn_module_forward(&b, plain, x));
    ck_assert(ct_max_abs_diff(a, b) == 0);
    ctorch_nn_module_free(plain);
    ctorch_string_free(report);
    /* each lever alone */
    CT_OK(ctorch_nn_module_optimize_for_inference(&plain, &report, m, "split_rows=0"));
    ck_assert_ptr_null(strstr(report, "split "));
    expect_close_rows(m, plain, 512, 1e-5);
    ctorch_nn_module_free(plain);
    ctorch_string_free(report);
    CT_OK(ctorch_nn_module_optimize_for_inference(&plain, &report, m, "linear_onednn=0,fuse=0"));
    ck_assert_ptr_null(strstr(report, "_linear_pointwise"));
    ck_assert_ptr_null(strstr(report, "fuse_"));
    expect_has(report, "split 8 columns");
    expect_close_rows(m, plain, 512, 1e-5);
    ctorch_nn_module_free(plain);
    ctorch_string_free(report), ctorch_string_free(repr);
    ctorch_tensor_free(a), ctorch_tensor_free(b), ctorch_tensor_free(x);
    ctorch_nn_module_free(m), ctorch_nn_module_free(opt);
  }
}
END_TEST

/* The packed one-row kernels (shim/infer/gemv_f32.cpp): widths that are not
 * whole 16-float chunks (300, 1000) and output counts that are not whole
 * 8-row groups (257), with and without bias, a fused ReLU. */
static ctorch_nn_module gemv_model(int bias) {
  ctorch_nn_module s = nn("Sequential", "");
  CT_OK(ctorch_manual_seed(4));
  add_linear(s, 300, 1000, bias);
  seq_add(s, "ReLU", "");
  add_linear(s, 1000, 257, !bias);
  return s;
}

/* What the report must say of the kernels on this CPU: "avx512" or "avx2"
 * (capped by cap, CTORCH_GEMV_ISA's value, or NULL), or NULL where no kernel
 * runs here. */
static const char *gemv_isa_here(const char *cap) {
#if defined(__x86_64__)
  if (cap && strcmp(cap, "none") == 0) return NULL;
  if ((!cap || strcmp(cap, "avx2") != 0) && __builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
#endif
  (void)cap;
  return NULL;
}

static int intel_cpu(void) {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(0, &a, &b, &c, &d) && b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;
#else
  return 0;
#endif
}

/* Rewrites gemv_model with the kernels capped at cap (set before the first
 * use in this process: check forks each test), checks the report against
 * the CPU, and the outputs against the plain module at 1 and 2 threads. */
static void check_gemv(const char *cap) {
  const char *isa;
  int bias;
  if (cap) setenv("CTORCH_GEMV_ISA", cap, 1);
  isa = gemv_isa_here(cap);
  for (bias = 0; bias <= 1; ++bias) {
    ctorch_nn_module m = gemv_model(bias), opt = NULL, off = NULL;
    char *report = NULL, *report_off = NULL, want[128];
    CT_OK(ctorch_nn_module_optimize_for_inference(&opt, &report, m, NULL));
    if (isa && !strstr(report, "skip gemv 0: MKL on an Intel CPU")) {
      snprintf(want, sizeof want, "gemv 0 one-row kernel (%s, a packed copy of the weight)\n", isa);
      expect_has(report, want);
      snprintf(want, sizeof want, "gemv 2 one-row kernel (%s, a packed copy of the weight)\n", isa);
      expect_has(report, want);
    } else if (isa) {
      /* the one case where a kernel could run and does not: MKL, which splits one row itself on Intel */
      ck_assert_msg(intel_cpu(), "gemv refused on a CPU not made by Intel: %s", report);
    } else {
      expect_has(report, "skip gemv 0: no kernel for this CPU");
      ck_assert_ptr_null(strstr(report, " one-row kernel ("));
    }
    CT_OK(ctorch_nn_module_train(m, 0));
    expect_close_rows(m, opt, 300, 1e-5);
    /* linear_gemv=0: no kernel, no report line, the same outputs */
    CT_OK(ctorch_nn_module_optimize_for_inference(&off, &report_off, m, "linear_gemv=0"));
    ck_assert_ptr_null(strstr(report_off, "gemv "));
    expect_close_rows(m, off, 300, 1e-5);
    ctorch_string_free(report), ctorch_string_free(report_off);
    ctorch_nn_module_free(m), ctorch_nn_module_free(opt), ctorch_nn_module_free(off);
  }
}

START_TEST(linear_gemv) { check_gemv(NULL); }
END_TEST

/* The AVX2 kernel on an AVX-512 machine too, and none at all. */
START_TEST(linear_gemv_avx2) { check_gemv("avx2"); }
END_TEST

START_TEST(linear_gemv_none) { check_gemv("none"); }
END_TEST

/* A custom module whose C forward calls its children by path:
 * out(act(proj(x))). */
static ctorch_status by_path_forward(void *user_data, ctorch_nn_module self, const ctorch_tensor *inputs,
                                     size_t n_inputs, const char *kwargs, ctorch_tensor *outputs, size_t max_outputs,
                                     size_t *n_outputs) {
  ctorch_tensor h = NULL, g = NULL;
  ctorch_status st = ctorch_nn_module_forward_child(&h, self, "proj", inputs[0]);
  (void)user_data, (void)n_inputs, (void)kwargs, (void)max_outputs;
  if (!st) st = ctorch_nn_module_forward_child(&g, self, "act", h);
  if (!st) st = ctorch_nn_module_forward_child(&outputs[0], self, "out", g);
  if (!st) *n_outputs = 1;
  ctorch_tensor_free(h), ctorch_tensor_free(g);
  return st;
}

static ctorch_nn_module by_path_model(int bias) {
  ctorch_nn_module m = NULL, c;
  char a[64];
  CT_OK(ctorch_manual_seed(3));
  CT_OK(ctorch_nn_custom_new(&m, "TwoLayer", by_path_forward, NULL, NULL));
  snprintf(a, sizeof a, "256, 4096, bias=%s", bias ? "True" : "False");
  c = nn("Linear", a);
  CT_OK(ctorch_nn_module_register_module(m, "proj", c));
  ctorch_nn_module_free(c);
  c = nn("GELU", "");
  CT_OK(ctorch_nn_module_register_module(m, "act", c));
  ctorch_nn_module_free(c);
  snprintf(a, sizeof a, "4096, 256, bias=%s", bias ? "True" : "False");
  c = nn("Linear", a);
  CT_OK(ctorch_nn_module_register_module(m, "out", c));
  ctorch_nn_module_free(c);
  return m;
}

/* Inside a custom module: its Linears rewritten (not fused: its data flow
 * is its C code's), reached by path, the same outputs. */
START_TEST(linear_in_custom_module) {
  int bias;
  for (bias = 0; bias <= 1; ++bias) {
    ctorch_nn_module m = by_path_model(bias), opt = NULL;
    char *report = NULL, *repr = NULL;
    CT_OK(ctorch_nn_module_optimize_for_inference(&opt, &report, m, NULL));
    expect_has(report, "note (root): custom module (C forward)");
    expect_has(report, "split proj columns");
    expect_has(report, "split out columns");
    ck_assert_ptr_null(strstr(report, "fuse_"));
    CT_OK(ctorch_nn_module_repr(&repr, opt));
    ck_assert_msg(strstr(repr, "(proj): Linear(in_features=256, out_features=4096") != NULL, "%s", repr);
    CT_OK(ctorch_nn_module_train(m, 0));
    expect_close_rows(m, opt, 256, 1e-5);
    ctorch_string_free(report), ctorch_string_free(repr);
    ctorch_nn_module_free(m), ctorch_nn_module_free(opt);
  }
}
END_TEST

/* What the inference Linear leaves to at::linear: inputs that need grad,
 * other dtypes (a float64 module is not rewritten at all), wrong shapes
 * (at::linear's own error); a Linear held twice stays one module. */
START_TEST(linear_falls_back) {
  ctorch_nn_module s = nn("Sequential", ""), shared = nn("Linear", "1024, 1024"), opt = NULL, d64 = NULL, o64 = NULL;
  ctorch_tensor x = row_input(0, 1024), bad = row_input(0, 100), a = NULL, b = NULL, w = NULL;
  char *report = NULL;
  int rg = 0, threads0 = 1;
  double sum = 1;
  CT_OK(ctorch_get_num_threads(&threads0));
  CT_OK(ctorch_set_num_threads(2));
  CT_OK(ctorch_nn_module_append(s, shared));
  seq_add(s, "Tanh", "");
  CT_OK(ctorch_nn_module_append(s, shared));
  CT_OK(ctorch_nn_module_optimize_for_inference(&opt, &report, s, NULL));
  expect_has(report, "split 0 columns");
  ck_assert_ptr_null(strstr(report, "split 2 "));
  ctorch_string_free(report);
  /* grad: the input requires it (grad mode on): at::linear, bit for bit, with a graph */
  CT_OK(ctorch_nn_module_train(s, 0));
  CT_OK(ctorch_tensor_set_requires_grad(x, 1));
  CT_OK(ctorch_nn_module_get(&d64, opt, "0"));
  CT_OK(ctorch_nn_module_forward(&a, shared, x));
  CT_OK(ctorch_nn_module_forward(&b, d64, x));
  CT_OK(ctorch_tensor_requires_grad(&rg, b));
  ck_assert_int_eq(rg, 1);
  ck_assert(ct_max_abs_diff(a, b) == 0);
  ctorch_tensor_free(a), ctorch_tensor_free(b);
  /* a wrong width: at::linear's error, through the optimised module too */
  CT_FAILS(CTORCH_RUNTIME, ctorch_nn_module_forward(&b, opt, bad));
  CT_ERROR_HAS("shapes cannot be multiplied");
  /* the module held at "0" and "2" is one module in the result too */
  CT_OK(ctorch_nn_module_tensor(&w, opt, "0.weight"));
  CT_OK(ctorch_zero_(w));
  ctorch_tensor_free(w);
  CT_OK(ctorch_nn_module_tensor(&w, opt, "2.weight"));
  CT_OK(ctorch_sum(&a, w, NULL));
  CT_OK(ctorch_tensor_item_double(&sum, a));
  ck_assert(sum == 0);
  ctorch_tensor_free(a), ctorch_tensor_free(w);
  ctorch_nn_module_free(d64);
  /* float64: left as it is */
  d64 = nn("Linear", "1024, 1024");
  CT_OK(ctorch_nn_module_to(d64, NULL, CTORCH_FLOAT64));
  CT_OK(ctorch_nn_module_optimize_for_inference(&o64, &report, d64, NULL));
  expect_has(report, "skip linear (root): not a float32 CPU weight\n");
  ctorch_string_free(report);
  CT_OK(ctorch_set_num_threads(threads0));
  ctorch_nn_module_free(s), ctorch_nn_module_free(shared), ctorch_nn_module_free(opt);
  ctorch_nn_module_free(d64), ctorch_nn_module_free(o64);
  ctorch_tensor_free(x), ctorch_tensor_free(bad);
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

START_TEST(linear_like_torch_nn) {
  char dir[] = "/tmp/ctorch-optimize-XXXXXX", path[256];
  int bias, rc, threads0 = 1;
  ck_assert_ptr_nonnull(mkdtemp(dir));
  CT_OK(ctorch_get_num_threads(&threads0));
  for (bias = 0; bias <= 1; ++bias) {
    ctorch_nn_module m = linear_model(bias), opt = NULL;
    ctorch_tensor_dict sd = NULL, io = NULL;
    int t, k;
    CT_OK(ctorch_nn_module_state_dict(&sd, m));
    snprintf(path, sizeof path, "%s/linear_b%d.pt", dir, bias);
    CT_OK(ctorch_tensor_dict_save(path, sd));
    CT_OK(ctorch_nn_module_optimize_for_inference(&opt, NULL, m, NULL));
    CT_OK(ctorch_tensor_dict_new(&io));
    for (k = 0; k < 4; ++k) {
      ctorch_tensor x = row_input(k, 512);
      char name[32];
      snprintf(name, sizeof name, "x%d", k);
      CT_OK(ctorch_tensor_dict_set(io, name, x));
      for (t = 1; t <= 2; ++t) {
        ctorch_tensor y = NULL;
        CT_OK(ctorch_set_num_threads(t));
        CT_OK(ctorch_nn_module_forward(&y, opt, x));
        snprintf(name, sizeof name, "y%d_t%d", k, t);
        CT_OK(ctorch_tensor_dict_set(io, name, y));
        ctorch_tensor_free(y);
      }
      ctorch_tensor_free(x);
    }
    CT_OK(ctorch_set_num_threads(threads0));
    snprintf(path, sizeof path, "%s/linear_io_b%d.pt", dir, bias);
    CT_OK(ctorch_tensor_dict_save(path, io));
    ctorch_tensor_dict_free(sd), ctorch_tensor_dict_free(io);
    ctorch_nn_module_free(m), ctorch_nn_module_free(opt);
  }
  snprintf(path, sizeof path, "linear '%s'", dir);
  rc = run_py(path);
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(path), 0);
  ck_assert_msg(rc == 0, "the optimised Linears' outputs differ from torch.nn's (exit %d)", rc);
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
    /* reduced precisions are for module trees */
    CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_module_optimize_for_inference(&none, NULL, m, "precision=int8-dynamic"));
    CT_ERROR_HAS("ctorch_nn_module_optimize_for_inference");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_optimize_for_inference(&none, NULL, m, "precision=fp8"));
    ck_assert_ptr_null(none);
    CT_OK(ctorch_module_optimize_for_inference(&none, NULL, m, "precision=float32,mkldnn=0"));
    ck_assert_ptr_nonnull(none);
    ctorch_module_free(none);
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
  tcase_add_test(tc, linear_in_sequential);
  tcase_add_test(tc, linear_in_custom_module);
  tcase_add_test(tc, linear_falls_back);
  tcase_add_test(tc, linear_gemv);
  tcase_add_test(tc, linear_gemv_avx2);
  tcase_add_test(tc, linear_gemv_none);
  tcase_set_tags(py, "python");
  tcase_add_test(py, folded_like_fuse_modules);
  tcase_add_test(py, linear_like_torch_nn);
  tcase_add_test(py, torchscript_frozen_and_optimized);
  suite_add_tcase(s, tc);
  suite_add_tcase(s, py);
  return s;
}

CTORCH_CHECK_MAIN()
