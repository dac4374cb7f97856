/* Uses of the Python bridge on a network built with ctorch's nn modules and
 * traced from C (examples/trace_nn.h):
 *   onnx  ctorch_py_onnx_export with a dynamic batch, run by PyPI's
 *         onnxruntime (called through the bridge) at batch 3 and 7: equal to
 *         ctorch's forward within 1e-5;
 *   aoti  ctorch_py_aoti_compile_options with freezing=1 (after its refusals
 *         of bad options): the package's code calls oneDNN's prepacked
 *         convolution and Linear (what freezing does; without it, aten's),
 *         loaded with ctorch_aoti_package_load and run at batch 1 and 5:
 *         equal to ctorch's forward within 1e-5 (torch >= 2.6; on 1.13 the
 *         no_aoti tcase checks the NOT_IMPLEMENTED).
 * Each runs as its own ctest test (tags onnx and aoti), skipped visibly when
 * onnxruntime or AOTInductor is missing. */
#include "py_check.h"
#include "../../examples/trace_nn.h"

static const char *const kLayers[][2] = {
    {"Conv2d", "1, 6, 5, padding=2"}, {"ReLU", ""}, {"MaxPool2d", "2"}, {"Conv2d", "6, 16, 5"},
    {"BatchNorm2d", "16"},           {"ReLU", ""}, {"MaxPool2d", "2"}, {"Flatten", ""},
    {"Linear", "400, 120"},          {"Tanh", ""}, {"Linear", "120, 10"}};

/* LeNet-like, with a BatchNorm (buffers), in eval mode, traced at batch 2. */
static ctorch_module traced_model(ctorch_nn_module *keep) {
  ctorch_nn_module seq = NULL;
  ctorch_module m = NULL;
  ctorch_tensor x = NULL;
  size_t i;
  CT_OK(ctorch_manual_seed(7));
  CT_OK(ctorch_nn_new(&seq, "Sequential", ""));
  for (i = 0; i < sizeof kLayers / sizeof kLayers[0]; ++i) {
    ctorch_nn_module layer = NULL;
    CT_OK(ctorch_nn_new(&layer, kLayers[i][0], kLayers[i][1]));
    CT_OK(ctorch_nn_module_append(seq, layer));
    ctorch_nn_module_free(layer);
  }
  CT_OK(ctorch_nn_module_train(seq, 0));
  CT_OK(ctorch_randn(&x, (int64_t[]){2, 1, 28, 28}, 4, NULL, NULL, NULL, NULL));
  CT_OK(trace_nn_module(&m, seq, x, "LeNetBN"));
  ctorch_tensor_free(x);
  *keep = seq;
  return m;
}

static ctorch_tensor batch(int64_t n) {
  ctorch_tensor x = NULL;
  CT_OK(ctorch_randn(&x, (int64_t[]){n, 1, 28, 28}, 4, NULL, NULL, NULL, NULL));
  return x;
}

static void temp_path(char *buf, size_t cap, const char *suffix) {
  snprintf(buf, cap, "%s/ctorch_uses_%d%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), suffix);
}

static const char *kOrt =
    "import onnxruntime as ort\n"
    "def run(path, x):\n"
    "    s = ort.InferenceSession(path, providers=['CPUExecutionProvider'])\n"
    "    (y,) = s.run(None, {s.get_inputs()[0].name: x.numpy()})\n"
    "    import torch\n"
    "    return torch.from_numpy(y)\n";

START_TEST(onnx_matches_onnxruntime) {
  ctorch_nn_module seq = NULL;
  ctorch_module m = NULL;
  ctorch_py_object ns = NULL, run = NULL;
  char path[512];
  int64_t sizes[2] = {3, 7};
  int i;
  PY_OK(ctorch_py_start(NULL, NULL));
  m = traced_model(&seq);
  temp_path(path, sizeof path, ".onnx");
  {
    ctorch_tensor x = batch(2);
    PY_OK(ctorch_py_onnx_export(m, &x, 1, path, 0, 1));
    ctorch_tensor_free(x);
  }
  PY_OK(ctorch_py_exec(&ns, kOrt, "ort_runner"));
  PY_OK(ctorch_py_getattr(&run, ns, "run"));
  for (i = 0; i < 2; ++i) { /* batches the export never saw: the dynamic axis */
    ctorch_tensor x = batch(sizes[i]), want = NULL, got = NULL;
    ctorch_value args[2] = {NULL, NULL}, out = NULL;
    double diff;
    int64_t shape[2] = {0, 0};
    CT_OK(ctorch_nn_module_forward(&want, seq, x));
    CT_OK(ctorch_value_string(&args[0], path));
    CT_OK(ctorch_value_tensor(&args[1], x));
    PY_OK(ctorch_py_call_values(&out, run, args, 2));
    CT_OK(ctorch_value_to_tensor(&got, out));
    CT_OK(ctorch_tensor_sizes(shape, 2, got));
    ck_assert_int_eq(shape[0], sizes[i]);
    ck_assert_int_eq(shape[1], 10);
    diff = ct_max_abs_diff(want, got);
    ck_assert_msg(diff <= 1e-5, "batch %lld: onnxruntime differs from ctorch by %g", (long long)sizes[i], diff);
    ctorch_value_free(args[0]);
    ctorch_value_free(args[1]);
    ctorch_value_free(out);
    ctorch_tensor_free(x);
    ctorch_tensor_free(want);
    ctorch_tensor_free(got);
  }
  /* errors: a bad path is the exporter's OSError, NULL arguments are checked */
  {
    ctorch_tensor x = batch(2);
    PY_FAILS(CTORCH_IO, ctorch_py_onnx_export(m, &x, 1, "/nonexistent/dir/m.onnx", 0, 1));
    PY_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_py_onnx_export(NULL, &x, 1, path, 0, 1));
    PY_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_py_onnx_export(m, NULL, 1, path, 0, 1));
    PY_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_py_onnx_export(m, &x, 1, path, -1, 1));
    ctorch_tensor_free(x);
  }
  unlink(path);
  ctorch_py_object_free(run);
  ctorch_py_object_free(ns);
  ctorch_module_free(m);
  ctorch_nn_module_free(seq);
}
END_TEST

/* How many calls of oneDNN's fused convolution / Linear the package's C++
 * makes (-1: this torch has no oneDNN, nothing to expect). */
static const char *kPackageCalls =
    "import re, zipfile, torch\n"
    "def onednn_calls(path):\n"
    "    if not torch.backends.mkldnn.is_available():\n"
    "        return -1\n"
    "    z = zipfile.ZipFile(path)\n"
    "    src = ''.join(z.read(n).decode() for n in z.namelist() if n.endswith('.cpp'))\n"
    "    return len(re.findall(r'_convolution_pointwise|_linear_pointwise', src))\n";

START_TEST(aoti_package_matches_eager) {
  ctorch_nn_module seq = NULL;
  ctorch_module m = NULL;
  ctorch_aoti_package pkg = NULL;
  char path[512];
  int64_t sizes[2] = {1, 5};
  int i;
  PY_OK(ctorch_py_start(NULL, NULL));
  m = traced_model(&seq);
  temp_path(path, sizeof path, ".pt2");
  {
    ctorch_tensor x = batch(2);
    /* Options are read before anything compiles: each bad item is refused by name. */
    PY_FAILS(CTORCH_VALUE, ctorch_py_aoti_compile_options(m, &x, 1, path, 1, 512, "no_such_setting=1"));
    PY_ERROR_HAS("no_such_setting");
    PY_FAILS(CTORCH_VALUE, ctorch_py_aoti_compile_options(m, &x, 1, path, 1, 512, "freezing=perhaps"));
    PY_ERROR_HAS("freezing");
    PY_FAILS(CTORCH_VALUE, ctorch_py_aoti_compile_options(m, &x, 1, path, 1, 512, "freezing"));
    PY_FAILS(CTORCH_VALUE, ctorch_py_aoti_compile_options(m, &x, 1, path, 1, 512, "cpp.no_such=1"));
    PY_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_py_aoti_compile(m, &x, 1, path, 1, 1));
    /* The package below is compiled with freezing (weights folded, Linear on
     * prepacked oneDNN): the same outputs as eager within 1e-5.
     * Without inductor's precompiled headers: made anew by every process (300
     * MB under $TMPDIR/torchinductor_$USER, never removed) and used once
     * (tests/models/make_aoti_package.py). */
    PY_OK(ctorch_py_aoti_compile_options(m, &x, 1, path, 1, 512, "freezing=1, aot_inductor.precompile_headers=0"));
    ctorch_tensor_free(x);
  }
  { /* freezing took effect: Inductor freezes only with autograd off, which
     * the bridge must arrange (it did not: the package had aten's calls) */
    ctorch_py_object ns = NULL, fn = NULL;
    ctorch_value arg = NULL, out = NULL;
    int64_t calls = 0;
    PY_OK(ctorch_py_exec(&ns, kPackageCalls, "package_calls"));
    PY_OK(ctorch_py_getattr(&fn, ns, "onednn_calls"));
    CT_OK(ctorch_value_string(&arg, path));
    PY_OK(ctorch_py_call_values(&out, fn, &arg, 1));
    CT_OK(ctorch_value_to_int(&calls, out));
    ck_assert_msg(calls != 0, "freezing=1: the package makes no oneDNN convolution/Linear call");
    ctorch_value_free(arg);
    ctorch_value_free(out);
    ctorch_py_object_free(fn);
    ctorch_py_object_free(ns);
  }
  CT_OK(ctorch_aoti_package_load(&pkg, path, NULL));
  for (i = 0; i < 2; ++i) {
    ctorch_tensor x = batch(sizes[i]), want = NULL, got = NULL;
    ctorch_tensor_list outs = NULL;
    double diff;
    CT_OK(ctorch_nn_module_forward(&want, seq, x));
    CT_OK(ctorch_aoti_package_run(&outs, pkg, &x, 1));
    CT_OK(ctorch_tensor_list_get(&got, outs, 0));
    diff = ct_max_abs_diff(want, got);
    ck_assert_msg(diff <= 1e-5, "batch %lld: the package differs from eager by %g", (long long)sizes[i], diff);
    ctorch_tensor_list_free(outs);
    ctorch_tensor_free(x);
    ctorch_tensor_free(want);
    ctorch_tensor_free(got);
  }
  { /* past max_batch: the package's own check refuses it */
    ctorch_tensor x = batch(600);
    ctorch_tensor_list outs = NULL;
    CT_FAILS(CTORCH_RUNTIME, ctorch_aoti_package_run(&outs, pkg, &x, 1));
    ck_assert_ptr_null(outs);
    ctorch_tensor_free(x);
  }
  ctorch_aoti_package_free(pkg);
  unlink(path);
  ctorch_module_free(m);
  ctorch_nn_module_free(seq);
}
END_TEST

/* Where torch has no torch.export/AOTInductor (1.13), the call says so. */
START_TEST(aoti_absent_is_not_implemented) {
  const char *v = NULL;
  ctorch_nn_module seq = NULL;
  ctorch_module m = NULL;
  ctorch_tensor x = NULL;
  char path[512];
  CT_OK(ctorch_torch_version(&v));
  PY_OK(ctorch_py_start(NULL, NULL));
  m = traced_model(&seq);
  x = batch(2);
  temp_path(path, sizeof path, ".pt2");
  PY_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_py_aoti_compile(m, &x, 1, path, 1, 64));
  PY_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_py_aoti_compile_options(m, &x, 1, path, 1, 64, "freezing=1"));
  ck_assert_msg(strstr(ctorch_py_last_error(), "torch >= 2.6") != NULL, "%s", ctorch_py_last_error());
  ck_assert_msg(strncmp(v, "1.", 2) == 0, "torch %s", v);
  ctorch_tensor_free(x);
  ctorch_module_free(m);
  ctorch_nn_module_free(seq);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("pybridge_uses");
  TCase *onnx = tcase_create("onnx"), *aoti = tcase_create("aoti"), *no_aoti = tcase_create("no_aoti");
  tcase_set_timeout(onnx, 600);
  tcase_set_timeout(aoti, 900);
  tcase_set_tags(onnx, "onnx");
  tcase_add_test(onnx, onnx_matches_onnxruntime);
  tcase_set_tags(aoti, "aoti");
  tcase_add_test(aoti, aoti_package_matches_eager);
  tcase_set_tags(no_aoti, "no_aoti");
  tcase_add_test(no_aoti, aoti_absent_is_not_implemented);
  suite_add_tcase(s, onnx);
  suite_add_tcase(s, aoti);
  suite_add_tcase(s, no_aoti);
  return s;
}

CTORCH_CHECK_MAIN()
