/* The inference optimiser's precisions (ctorch_nn_module_optimize_for_inference
 * with precision=bf16 and int8-dynamic, _calibrated with int8-static): on a BERT-like Linear stack and a
 * small CNN, a fixed input set's outputs against the float32 module's, with
 * bounds on the largest difference (relative to the largest output) and on
 * top-1 agreement, and a floor that shows the reduced precision really ran;
 * the tensors each precision keeps (bf16 weights; int8-dynamic keeps the
 * float32 ones and packs again after load_state_dict); the refusals
 * (int8-static without calibration batches, bf16 on a CPU without bf16
 * instructions unless bf16_emulate=1, TorchScript). bf16 runs with bf16_emulate=1 so the test
 * runs on every x86 CPU. With Python (the "python" tcase):
 * precision_vs_torch.py checks int8-dynamic's outputs against
 * torch.ao.quantization.quantize_dynamic's on the same weights and engine,
 * bf16's weights and outputs against the same layers run in bf16 by
 * PyTorch, and int8-static's outputs against torch.ao.quantization's
 * prepare/convert of the same islands calibrated on the same batches.
 * Cost: about 2 s per tcase. */
#define _GNU_SOURCE /* setenv */
#include <stdlib.h>
#include <string.h>

#include "../nn_test_util.h"

/* Two encoder-like feed-forward blocks and a 16-way head (precision_vs_torch.py's bert_like). */
static ctorch_nn_module bert_like(int seed) {
  ctorch_nn_module s = nn("Sequential", "");
  CT_OK(ctorch_manual_seed(seed));
  seq_add(s, "Linear", "256, 1024");
  seq_add(s, "GELU", "");
  seq_add(s, "Linear", "1024, 256");
  seq_add(s, "LayerNorm", "256");
  seq_add(s, "Linear", "256, 1024");
  seq_add(s, "GELU", "approximate='tanh'");
  seq_add(s, "Linear", "1024, 256");
  seq_add(s, "Linear", "256, 16");
  return s;
}

/* Conv-BN-ReLU, Conv-ReLU, pool, a 10-way head (precision_vs_torch.py's cnn). */
static ctorch_nn_module cnn(void) {
  static const char *names[4] = {"running_mean", "running_var", "weight", "bias"};
  static const double lo[4] = {-0.2, 0.5, 0.5, -0.2}, hi[4] = {0.2, 1.5, 1.5, 0.2};
  ctorch_nn_module s = nn("Sequential", "");
  int k;
  CT_OK(ctorch_manual_seed(3));
  seq_add(s, "Conv2d", "3, 16, 3, padding=1");
  seq_add(s, "BatchNorm2d", "16");
  seq_add(s, "ReLU", "");
  seq_add(s, "Conv2d", "16, 32, 3, stride=2, padding=1");
  seq_add(s, "ReLU", "");
  seq_add(s, "AdaptiveAvgPool2d", "1");
  seq_add(s, "Flatten", "");
  seq_add(s, "Linear", "32, 10");
  CT_OK(ctorch_nn_module_requires_grad(s, 0));
  for (k = 0; k < 4; ++k) {
    char path[32];
    ctorch_tensor t = NULL;
    snprintf(path, sizeof path, "1.%s", names[k]);
    CT_OK(ctorch_nn_module_tensor(&t, s, path));
    CT_OK(ctorch_uniform_(t, lo[k], hi[k], NULL));
    ctorch_tensor_free(t);
  }
  CT_OK(ctorch_nn_module_train(s, 0));
  return s;
}

static ctorch_tensor randn_seeded(int seed, const int64_t *sz, size_t n) {
  ctorch_tensor t = NULL;
  CT_OK(ctorch_manual_seed(seed));
  CT_OK(ctorch_randn(&t, sz, n, NULL, NULL, NULL, NULL));
  return t;
}

/* The fixed input sets: 64 rows for the Linear stack, 16 images for the CNN. */
static ctorch_tensor bert_input(void) {
  int64_t sz[2] = {64, 256};
  return randn_seeded(11, sz, 2);
}

/* int8-dynamic's extra sets, so that each engine runs whatever the CPU (its auto engine changes
 * from 256 rows, from 32 with AMX: docs/modules.md): 320 rows and 8 rows. */
static ctorch_tensor bert_input_rows(int64_t rows, int seed) {
  int64_t sz[2] = {rows, 256};
  return randn_seeded(seed, sz, 2);
}

static ctorch_tensor cnn_input(void) {
  int64_t sz[4] = {16, 3, 16, 16};
  return randn_seeded(12, sz, 4);
}

/* The share of rows whose largest logit (last dim) is at the same index. */
/* Calibration batches (int8-static), none of them the input set: 4 of 16 rows, 4 of 4 images. */
#define N_CAL 4
static void bert_calibration(ctorch_tensor *cal) {
  int64_t sz[2] = {16, 256};
  int k;
  for (k = 0; k < N_CAL; ++k) cal[k] = randn_seeded(20 + k, sz, 2);
}

static void cnn_calibration(ctorch_tensor *cal) {
  int64_t sz[4] = {4, 3, 16, 16};
  int k;
  for (k = 0; k < N_CAL; ++k) cal[k] = randn_seeded(30 + k, sz, 4);
}

static void free_all(ctorch_tensor *ts, size_t n) {
  size_t k;
  for (k = 0; k < n; ++k) ctorch_tensor_free(ts[k]);
}

/* opt(x) against ref(x): max |diff| / max |ref| within (floor, bound], top-1 agreement at least agree. */
static void expect_accuracy(const char *what, ctorch_nn_module ref, ctorch_nn_module opt, ctorch_tensor x,
                            double floor, double bound, double agree) {
  ctorch_tensor a = NULL, b = NULL;
  double rel, top1;
  CT_OK(ctorch_nn_module_forward(&a, ref, x));
  CT_OK(ctorch_nn_module_forward(&b, opt, x));
  rel = ct_max_abs_diff(a, b) / max_abs(a);
  top1 = top1_agreement(a, b);
  ck_assert_msg(rel > floor, "%s: max |diff| / max |ref| %g: no more than float32's rounding", what, rel);
  ck_assert_msg(rel <= bound, "%s: max |diff| / max |ref| %g > %g", what, rel, bound);
  ck_assert_msg(top1 >= agree, "%s: top-1 agreement %g < %g", what, top1, agree);
  ctorch_tensor_free(a), ctorch_tensor_free(b);
}

static ctorch_dtype dtype_of(ctorch_nn_module m, const char *path) {
  ctorch_tensor t = NULL;
  ctorch_dtype d;
  CT_OK(ctorch_nn_module_tensor(&t, m, path));
  CT_OK(ctorch_tensor_dtype(&d, t));
  ctorch_tensor_free(t);
  return d;
}

START_TEST(bf16_bert_like) {
  ctorch_nn_module m = bert_like(1), opt = NULL;
  ctorch_tensor x = bert_input();
  char *report = NULL;
  CT_OK(ctorch_nn_module_train(m, 0));
  CT_OK(ctorch_nn_module_optimize_for_inference(&opt, &report, m, "precision=bf16,bf16_emulate=1"));
  expect_has(report, "bf16 0 ");
  expect_has(report, "bf16 7 ");
  expect_has(report, "fuse_gelu 1 into 0 (LinearGELU)\n");
  ck_assert_int_eq(dtype_of(opt, "0.0.weight"), CTORCH_BFLOAT16);
  ck_assert_int_eq(dtype_of(opt, "7.bias"), CTORCH_BFLOAT16);
  ck_assert_int_eq(dtype_of(opt, "3.weight"), CTORCH_FLOAT32); /* LayerNorm stays float32 */
  ck_assert_int_eq(dtype_of(m, "0.weight"), CTORCH_FLOAT32);   /* the input module as it was */
  expect_accuracy("bf16 BERT-like", m, opt, x, 1e-4, 0.03, 0.95);
  ctorch_string_free(report);
  ctorch_nn_module_free(m), ctorch_nn_module_free(opt);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(int8_bert_like) {
  ctorch_nn_module m = bert_like(1), other = bert_like(2), opt = NULL, opt2 = NULL;
  ctorch_tensor x = bert_input(), row = NULL;
  ctorch_tensor_dict sd = NULL;
  char *report = NULL, *lsd = NULL;
  int64_t idx = 5;
  CT_OK(ctorch_nn_module_train(m, 0));
  CT_OK(ctorch_nn_module_train(other, 0));
  CT_OK(ctorch_nn_module_optimize_for_inference(&opt, &report, m, "precision=int8-dynamic"));
  expect_has(report, "int8 0 quantized::linear_dynamic (");
  expect_has(report, "int8 7 quantized::linear_dynamic (");
  ck_assert_int_eq(dtype_of(opt, "0.0.weight"), CTORCH_FLOAT32); /* the float32 weight stays the tensor */
  expect_accuracy("int8-dynamic BERT-like", m, opt, x, 1e-4, 0.08, 0.9);
  /* one row (decoding): quantised from its own range */
  CT_OK(ctorch_select_int(&row, x, 0, idx));
  {
    ctorch_tensor a = NULL, b = NULL;
    double rel;
    CT_OK(ctorch_nn_module_forward(&a, m, row));
    CT_OK(ctorch_nn_module_forward(&b, opt, row));
    rel = ct_max_abs_diff(a, b) / max_abs(a);
    ck_assert_msg(rel > 1e-4 && rel <= 0.08, "one row: max |diff| / max |ref| %g", rel);
    ctorch_tensor_free(a), ctorch_tensor_free(b);
  }
  /* new weights (the state dict of other's optimised copy: the fused pairs' keys): packed again, so the
   * outputs follow them */
  CT_OK(ctorch_nn_module_optimize_for_inference(&opt2, NULL, other, "precision=int8-dynamic"));
  CT_OK(ctorch_nn_module_state_dict(&sd, opt2));
  CT_OK(ctorch_nn_module_load_state_dict(&lsd, opt, sd, 1));
  expect_accuracy("int8-dynamic after load_state_dict", other, opt, x, 1e-4, 0.08, 0.9);
  ctorch_string_free(report), ctorch_string_free(lsd);
  ctorch_tensor_dict_free(sd);
  ctorch_nn_module_free(m), ctorch_nn_module_free(other), ctorch_nn_module_free(opt), ctorch_nn_module_free(opt2);
  ctorch_tensor_free(x), ctorch_tensor_free(row);
}
END_TEST

START_TEST(cnn_precisions) {
  ctorch_nn_module m = cnn(), bf = NULL, q = NULL;
  ctorch_tensor x = cnn_input();
  char *report = NULL;
  CT_OK(ctorch_nn_module_optimize_for_inference(&bf, &report, m, "precision=bf16,bf16_emulate=1"));
  expect_has(report, "fold_bn 1 into 0\n");
  expect_has(report, "bf16 0 at::convolution channels_last\n");
  expect_has(report, "bf16 3 at::convolution channels_last\n");
  expect_has(report, "bf16 7 ");
  ck_assert_int_eq(dtype_of(bf, "0.0.weight"), CTORCH_BFLOAT16);
  expect_accuracy("bf16 CNN", m, bf, x, 1e-4, 0.03, 0.95);
  ctorch_string_free(report);
  /* int8-dynamic: the head in int8, the convolutions on float32's path */
  CT_OK(ctorch_nn_module_optimize_for_inference(&q, &report, m, "precision=int8-dynamic"));
  expect_has(report, "int8 7 quantized::linear_dynamic (");
  expect_has(report, "prepack 0 mkldnn_prepacked::conv2d_prepack");
  expect_accuracy("int8-dynamic CNN", m, q, x, 1e-6, 0.03, 0.95);
  ctorch_string_free(report);
  ctorch_nn_module_free(m), ctorch_nn_module_free(bf), ctorch_nn_module_free(q);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(int8_static) {
  ctorch_nn_module b = bert_like(1), c = cnn(), qb = NULL, qc = NULL;
  ctorch_tensor xb = bert_input(), xc = cnn_input(), calb[N_CAL], calc[N_CAL], y1 = NULL, y2 = NULL;
  ctorch_tensor_dict sd = NULL;
  char *report = NULL, *lsd = NULL;
  bert_calibration(calb);
  cnn_calibration(calc);
  CT_OK(ctorch_nn_module_train(b, 0));
  CT_OK(ctorch_nn_module_optimize_for_inference_calibrated(&qc, &report, c, "precision=int8-static", calc, N_CAL, 1));
  expect_has(report, "fold_bn 1 into 0\n");
  expect_has(report, "int8 0 quantized::conv2d_relu (");
  expect_has(report, "int8 3 quantized::conv2d_relu (");
  expect_has(report, "int8 7 quantized::linear (");
  ck_assert_int_eq(dtype_of(qc, "0.0.weight"), CTORCH_FLOAT32); /* the folded float32 weight stays the tensor */
  expect_accuracy("int8-static CNN", c, qc, xc, 1e-4, 0.08, 0.9);
  ctorch_string_free(report);
  /* its own state dict loaded again: the weights quantised and packed again, the same outputs */
  CT_OK(ctorch_nn_module_forward(&y1, qc, xc));
  CT_OK(ctorch_nn_module_state_dict(&sd, qc));
  CT_OK(ctorch_nn_module_load_state_dict(&lsd, qc, sd, 1));
  CT_OK(ctorch_nn_module_forward(&y2, qc, xc));
  ck_assert_msg(same_values(y1, y2), "outputs changed after loading the same state dict");
  /* the Linear stack: LinearGELU pairs are islands followed by GELU in float32 */
  CT_OK(ctorch_nn_module_optimize_for_inference_calibrated(&qb, &report, b, "precision=int8-static", calb, N_CAL, 1));
  expect_has(report, "int8 0 quantized::linear (");
  expect_has(report, "int8 7 quantized::linear (");
  expect_accuracy("int8-static BERT-like", b, qb, xb, 1e-4, 0.08, 0.9);
  ctorch_string_free(report), ctorch_string_free(lsd);
  ctorch_tensor_dict_free(sd);
  ctorch_tensor_free(y1), ctorch_tensor_free(y2);
  free_all(calb, N_CAL), free_all(calc, N_CAL);
  ctorch_nn_module_free(b), ctorch_nn_module_free(c), ctorch_nn_module_free(qb), ctorch_nn_module_free(qc);
  ctorch_tensor_free(xb), ctorch_tensor_free(xc);
}
END_TEST

START_TEST(refusals) {
  ctorch_nn_module m = bert_like(1), none = NULL, emu = NULL;
  const char *cap = getenv("CTORCH_BF16_ISA");
  ctorch_tensor cal[N_CAL];
  bert_calibration(cal);
  /* int8-static needs calibration batches, and they are for int8-static only */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_optimize_for_inference(&none, NULL, m, "precision=int8-static"));
  CT_ERROR_HAS("ctorch_nn_module_optimize_for_inference_calibrated");
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_nn_module_optimize_for_inference_calibrated(&none, NULL, m, "precision=int8-dynamic", cal, N_CAL, 1));
  CT_ERROR_HAS("precision=int8-static");
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_nn_module_optimize_for_inference_calibrated(&none, NULL, m, "precision=int8-static", cal, 3, 2));
  CT_ERROR_HAS("n_calibration");
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_nn_module_optimize_for_inference_calibrated(&none, NULL, m, "precision=int8-static", cal, 0, 1));
  free_all(cal, N_CAL);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_optimize_for_inference(&none, NULL, m, "precision=fp8"));
  CT_ERROR_HAS("precision=float32|bf16|int8-dynamic|int8-static");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_optimize_for_inference(&none, NULL, m, "bf16_emulate=yes"));
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_nn_module_optimize_for_inference(&none, NULL, m, "precision=int8-dynamic,int8_engine=qnnpack"));
  CT_ERROR_HAS("int8_engine=auto|x86|fbgemm|onednn");
  /* a pinned engine: every call on it (no second engine for large calls), or NOT_IMPLEMENTED where absent */
  {
    ctorch_nn_module pinned = NULL;
    char *report = NULL;
    ctorch_status st = ctorch_nn_module_optimize_for_inference(&pinned, &report, m,
                                                               "precision=int8-dynamic,int8_engine=onednn");
    if (st == CTORCH_OK) {
      expect_has(report, "int8 7 quantized::linear_dynamic (ONEDNN engine, reduce_range=");
      ck_assert_msg(strstr(report, "rows") == NULL, "a pinned engine has no large-call engine: %s", report);
      ctorch_string_free(report);
      ctorch_nn_module_free(pinned);
    } else {
      ck_assert_int_eq(st, CTORCH_NOT_IMPLEMENTED);
      CT_ERROR_HAS("int8_engine=onednn: this libtorch's quantized engines are");
    }
  }
  /* a CPU without bf16 instructions, as the environment's cap makes this one look */
  ck_assert_int_eq(setenv("CTORCH_BF16_ISA", "none", 1), 0);
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_nn_module_optimize_for_inference(&none, NULL, m, "precision=bf16"));
  CT_ERROR_HAS("AVX512_BF16 or AMX_BF16");
  CT_ERROR_HAS("bf16_emulate=1");
  CT_OK(ctorch_nn_module_optimize_for_inference(&emu, NULL, m, "precision=bf16,bf16_emulate=1"));
  ck_assert_int_eq(dtype_of(emu, "0.0.weight"), CTORCH_BFLOAT16);
  if (cap) setenv("CTORCH_BF16_ISA", cap, 1);
  else unsetenv("CTORCH_BF16_ISA");
  ck_assert_ptr_null(none);
  ctorch_nn_module_free(m), ctorch_nn_module_free(emu);
}
END_TEST

/* ---- with Python ---------------------------------------------------------- */

static void save_dict(const char *dir, const char *file, const char **names, ctorch_tensor *ts, size_t n) {
  ctorch_tensor_dict d = NULL;
  char path[512];
  size_t i;
  CT_OK(ctorch_tensor_dict_new(&d));
  for (i = 0; i < n; ++i) CT_OK(ctorch_tensor_dict_set(d, names[i], ts[i]));
  snprintf(path, sizeof path, "%s/%s", dir, file);
  CT_OK(ctorch_tensor_dict_save(path, d));
  ctorch_tensor_dict_free(d);
}

static void save_state(const char *dir, const char *file, ctorch_nn_module m) {
  ctorch_tensor_dict d = NULL;
  char path[512];
  CT_OK(ctorch_nn_module_state_dict(&d, m));
  snprintf(path, sizeof path, "%s/%s", dir, file);
  CT_OK(ctorch_tensor_dict_save(path, d));
  ctorch_tensor_dict_free(d);
}

/* The model, its inputs and both precisions' outputs, optimised state dicts and reports into dir/NAME_*;
 * also int8-dynamic's output for each of the n_extra inputs extra[k] tagged tags[k]: NAME_xTAG.pt,
 * NAME_int8_yTAG.pt. */
static void save_case(const char *dir, const char *name, ctorch_nn_module m, ctorch_tensor x,
                      ctorch_tensor *extra, const char *const *extra_tags, int n_extra, ctorch_tensor *cal) {
  static const char *precisions[3] = {"int8-dynamic", "bf16", "int8-static"}, *tags[3] = {"int8", "bf16", "int8s"};
  const char *in_name[1] = {"x"}, *out_name[1] = {"y"}, *cal_names[N_CAL] = {"0", "1", "2", "3"};
  char file[128], *report = NULL;
  int p;
  snprintf(file, sizeof file, "%s_sd.pt", name);
  save_state(dir, file, m);
  snprintf(file, sizeof file, "%s_x.pt", name);
  save_dict(dir, file, in_name, &x, 1);
  snprintf(file, sizeof file, "%s_cal.pt", name);
  save_dict(dir, file, cal_names, cal, N_CAL);
  for (p = 0; p < 3; ++p) {
    ctorch_nn_module opt = NULL;
    ctorch_tensor y = NULL;
    char options[64], path[512];
    snprintf(options, sizeof options, "precision=%s%s", precisions[p], p == 1 ? ",bf16_emulate=1" : "");
    if (p == 2) CT_OK(ctorch_nn_module_optimize_for_inference_calibrated(&opt, &report, m, options, cal, N_CAL, 1));
    else CT_OK(ctorch_nn_module_optimize_for_inference(&opt, &report, m, options));
    CT_OK(ctorch_nn_module_forward(&y, opt, x));
    snprintf(file, sizeof file, "%s_%s_y.pt", name, tags[p]);
    save_dict(dir, file, out_name, &y, 1);
    for (int k = 0; p == 0 && k < n_extra; ++k) {
      ctorch_tensor ye = NULL;
      CT_OK(ctorch_nn_module_forward(&ye, opt, extra[k]));
      snprintf(file, sizeof file, "%s_x%s.pt", name, extra_tags[k]);
      save_dict(dir, file, in_name, &extra[k], 1);
      snprintf(file, sizeof file, "%s_%s_y%s.pt", name, tags[p], extra_tags[k]);
      save_dict(dir, file, out_name, &ye, 1);
      ctorch_tensor_free(ye);
    }
    snprintf(file, sizeof file, "%s_%s_sd.pt", name, tags[p]);
    save_state(dir, file, opt);
    snprintf(path, sizeof path, "%s/%s_%s_report.txt", dir, name, tags[p]);
    ct_write_file(path, report, strlen(report));
    ctorch_string_free(report);
    ctorch_tensor_free(y);
    ctorch_nn_module_free(opt);
  }
}

START_TEST(precision_like_torch) {
  const char *py = getenv("CTORCH_TORCH_PYTHON"), *src = getenv("CTORCH_SOURCE_DIR");
  char dir[] = "/tmp/ctorch-precision-XXXXXX", cmd[8192];
  ctorch_nn_module b = bert_like(1), c = cnn();
  ctorch_tensor xb = bert_input(), xc = cnn_input(), calb[N_CAL], calc[N_CAL];
  ctorch_tensor xbe[2] = {bert_input_rows(320, 13), bert_input_rows(8, 14)};
  const char *xbe_tags[2] = {"l", "s"};
  int rc;
  bert_calibration(calb);
  cnn_calibration(calc);
  ck_assert_msg(py && src, "CTORCH_TORCH_PYTHON and CTORCH_SOURCE_DIR must be set (run under ctest)");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  CT_OK(ctorch_nn_module_train(b, 0));
  save_case(dir, "bert", b, xb, xbe, xbe_tags, 2, calb);
  save_case(dir, "cnn", c, xc, NULL, NULL, 0, calc);
  snprintf(cmd, sizeof cmd, "'%s' '%s/tests/infer/precision_vs_torch.py' '%s'", py, src, dir);
  rc = system(cmd);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
  ck_assert_msg(rc == 0, "the precisions differ from PyTorch's (exit %d)", rc);
  ctorch_nn_module_free(b), ctorch_nn_module_free(c);
  ctorch_tensor_free(xb), ctorch_tensor_free(xc);
  free_all(xbe, 2);
  free_all(calb, N_CAL), free_all(calc, N_CAL);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("infer_precision");
  TCase *tc = tcase_create("precision"), *py = tcase_create("python");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, bf16_bert_like);
  tcase_add_test(tc, int8_bert_like);
  tcase_add_test(tc, cnn_precisions);
  tcase_add_test(tc, int8_static);
  tcase_add_test(tc, refusals);
  tcase_set_tags(py, "python");
  tcase_set_timeout(py, 120);
  tcase_add_test(py, precision_like_torch);
  suite_add_tcase(s, tc);
  suite_add_tcase(s, py);
  return s;
}

CTORCH_CHECK_MAIN()
