/*
 * The ctorch side of bench/compare/run: one model's
 * forward from C, timed call by call.
 *
 *   model_bench bert     DIR  INPUTS ITERS THREADS OUT
 *   model_bench resnet50 FILE INPUTS ITERS THREADS OUT
 *   model_bench aoti     PKG  INPUTS ITERS THREADS OUT
 *   model_bench resnet50-fold|resnet50-fold-nchw|resnet50-cl|resnet50-fold-mkldnn FILE INPUTS ITERS THREADS OUT
 *
 * bert: examples/bert.c's module tree (BertModel's names) loaded from a
 * save_pretrained folder; resnet50: torchvision's resnet50 built with the
 * module layer under torchvision's names, loaded from a safetensors state
 * dict; aoti: an AOTInductor package (libtorch >= 2.6; exits 2 otherwise);
 * resnet50-fold: the same state dict with each BatchNorm folded into its
 * convolution and channels-last weights and input, forward by the generated
 * ops (resnet_fold.c); -fold-nchw folds only, -cl keeps the BatchNorms,
 * -fold-mkldnn runs the folded model in oneDNN's layout.
 * With MODEL_BENCH_FOLDED=PATH set they also save the convolutions' weights
 * and biases as loaded (folded, before channels-last) to PATH (torch.save),
 * for resnet_fold_check.py's comparison with fuse_conv_bn_eval.
 * Paired modes, eager and optimised in one process, calls
 * alternating, so both see the same load:
 *   model_bench jit-opt FILE INPUTS ITERS THREADS OUT     a TorchScript file, and
 *     ctorch_module_optimize_for_inference of it (frozen + optimize_for_inference)
 *   model_bench resnet50-opt FILE INPUTS ITERS THREADS OUT  the module-layer
 *     ResNet-50 above, and ctorch_nn_module_optimize_for_inference of it
 *   model_bench bert-opt DIR INPUTS ITERS THREADS OUT    the same for BERT's
 *     module tree (examples/bert.c)
 * print `ms=` (eager), `ms_opt=` (optimised), `rel_diff=` (max |opt - eager| /
 * max |eager| of the last call) and the optimiser's report on stderr; OUT
 * gets the optimised output. The single-way forms jit-optimized,
 * resnet50-optimized and bert-optimized (compare.py's ways "ctorch TorchScript
 * optimised (C)" and "ctorch module optimised (C)") time only the optimised
 * module, the unoptimised one freed first, and print `ms=` as the plain modes.
 * INPUTS is a safetensors file with tensors in0, in1, ... (the model's
 * inputs in order, made by compare.py so every way sees the same ones).
 * On a GPU: MODEL_BENCH_DEVICE=cuda[:N] puts the model
 * and the inputs on that device (an AOTI package must have been compiled
 * for it; a TorchScript file is mapped there as it loads) and each timed
 * call ends with ctorch_cuda_synchronize, so a time is the call's whole
 * work on the device; MODEL_BENCH_AMP=bf16|fp16 runs every call inside an
 * autocast scope of the device (torch.autocast(device, dtype)). Unset: the
 * CPU, float32. The optimised modes read the optimiser's options from
 * MODEL_BENCH_OPTIONS, and with MODEL_BENCH_CALIBRATION=FILE (a safetensors
 * file of batches cal0, cal1, ...) pass those batches to
 * ctorch_nn_module_optimize_for_inference_calibrated (precision=int8-static).
 * Prints one line `ms=<t1>,<t2>,...` (wall time of each call after one
 * warm-up call) and writes the first output of the last call to OUT as
 * tensor "out". Under no_grad, dropout off (eval).
 * With MODEL_BENCH_PROFILE=PATH set, the single-way modes run one more
 * call after the timed ones under ctorch's profiler (the calling thread's
 * operators) and write it to PATH as a Chrome trace (compare.py
 * --profile-behind reads it); the timed calls are not profiled.
 */
#define main bert_example_main
#include "bert.c" /* examples/: read_config, make_model, bert_forward */
#undef main

#include "bench.h"

/* torchvision's Bottleneck (v1.5: stride on conv2): boxes for names only; the
 * forward is resnet50_forward's, by paths. */
static ctorch_nn_module bottleneck(int64_t in, int64_t width, int64_t stride) {
  ctorch_nn_module b = box("Bottleneck");
  nn_add(b, "conv1", nn_makef("Conv2d", "%lld, %lld, 1, bias=False", (long long)in, (long long)width));
  nn_add(b, "bn1", nn_makef("BatchNorm2d", "%lld", (long long)width));
  nn_add(b, "conv2", nn_makef("Conv2d", "%lld, %lld, 3, stride=%lld, padding=1, bias=False", (long long)width,
                              (long long)width, (long long)stride));
  nn_add(b, "bn2", nn_makef("BatchNorm2d", "%lld", (long long)width));
  nn_add(b, "conv3", nn_makef("Conv2d", "%lld, %lld, 1, bias=False", (long long)width, (long long)width * 4));
  nn_add(b, "bn3", nn_makef("BatchNorm2d", "%lld", (long long)width * 4));
  if (stride != 1 || in != width * 4) {
    ctorch_nn_module d = nn_make("Sequential", "");
    nn_add(d, NULL, nn_makef("Conv2d", "%lld, %lld, 1, stride=%lld, bias=False", (long long)in, (long long)width * 4,
                             (long long)stride));
    nn_add(d, NULL, nn_makef("BatchNorm2d", "%lld", (long long)width * 4));
    nn_add(b, "downsample", d);
  }
  return b;
}

static const int resnet50_blocks[4] = {3, 4, 6, 3};

/* MODEL_BENCH_DEVICE and MODEL_BENCH_AMP (see the top), read once by main;
 * amp_enter/amp_leave of train_device.h (through bert.c) open the autocast. */
static train_target bench;

/* Where loaders put tensors: NULL on the CPU (a safetensors file's tensors
 * then share its mapping), else the device. */
static const ctorch_device *bench_where(void) {
  return bench.device.type == CTORCH_DEVICE_CPU ? NULL : &bench.device;
}

/* Waits for the device's queued work (a CUDA call returns before its kernels finish). */
static void bench_sync(void) {
  if (bench.device.type == CTORCH_DEVICE_CUDA) CHECK(ctorch_cuda_synchronize(bench.device.index));
}

/* Saves t as tensor "out" of a safetensors file, from the CPU. */
static void save_out(const char *path, ctorch_tensor t) {
  const char *names[1] = {"out"};
  ctorch_tensor host = NULL;
  CHECK(ctorch_tensor_to_device(&host, t, ctorch_device_cpu()));
  CHECK(ctorch_safetensors_save(path, names, &host, 1, NULL, NULL, 0));
  ctorch_tensor_free(host);
}

#include "resnet_fold.c"

static ctorch_status fwd(ctorch_tensor *out, ctorch_nn_module m, const char *prefix, const char *child,
                         ctorch_tensor x) {
  char path[64];
  snprintf(path, sizeof path, "%s%s", prefix, child);
  return ctorch_nn_module_forward_child(out, m, path, x);
}

/* torchvision ResNet._forward_impl, relu in place as there. */
static ctorch_status resnet50_forward(void *cfg, ctorch_nn_module self, const ctorch_tensor *in, size_t n_in,
                                      const char *kwargs, ctorch_tensor *out, size_t max_out, size_t *n_out) {
  ctorch_handle_scope s = NULL;
  ctorch_tensor x = NULL, h = NULL, id = NULL;
  ctorch_status st = ctorch_handle_scope_enter(&s);
  int l, b;
  (void)cfg, (void)kwargs;
  *n_out = 0;
  if (n_in != 1 || max_out < 1) {
    ctorch_handle_scope_leave(s);
    return CTORCH_INVALID_ARGUMENT;
  }
  if (!st) st = fwd(&x, self, "", "conv1", in[0]);
  if (!st) st = fwd(&x, self, "", "bn1", x);
  if (!st) st = ctorch_relu_(x);
  if (!st) st = fwd(&x, self, "", "maxpool", x);
  for (l = 0; !st && l < 4; ++l)
    for (b = 0; !st && b < resnet50_blocks[l]; ++b) {
      char p[32];
      snprintf(p, sizeof p, "layer%d.%d.", l + 1, b);
      id = x;
      st = fwd(&h, self, p, "conv1", x);
      if (!st) st = fwd(&h, self, p, "bn1", h);
      if (!st) st = ctorch_relu_(h);
      if (!st) st = fwd(&h, self, p, "conv2", h);
      if (!st) st = fwd(&h, self, p, "bn2", h);
      if (!st) st = ctorch_relu_(h);
      if (!st) st = fwd(&h, self, p, "conv3", h);
      if (!st) st = fwd(&h, self, p, "bn3", h);
      if (!st && b == 0) st = fwd(&id, self, p, "downsample", x);
      if (!st) st = ctorch_add__Tensor(h, id, ctorch_scalar_int(1));
      if (!st) st = ctorch_relu_(h);
      x = h;
    }
  if (!st) st = fwd(&x, self, "", "avgpool", x);
  if (!st) st = ctorch_flatten_using_ints(&x, x, 1, -1);
  if (!st) st = fwd(&x, self, "", "fc", x);
  if (!st) st = ctorch_handle_scope_keep(out[0] = x);
  ctorch_handle_scope_leave(s);
  *n_out = st ? 0 : 1;
  return st;
}

static ctorch_nn_module make_resnet50(void) {
  ctorch_nn_module m = NULL;
  int64_t in = 64;
  int l, b;
  CHECK(ctorch_nn_custom_new(&m, "ResNet", resnet50_forward, NULL, NULL));
  nn_add(m, "conv1", nn_make("Conv2d", "3, 64, 7, stride=2, padding=3, bias=False"));
  nn_add(m, "bn1", nn_make("BatchNorm2d", "64"));
  nn_add(m, "maxpool", nn_make("MaxPool2d", "3, stride=2, padding=1"));
  for (l = 0; l < 4; ++l) {
    ctorch_nn_module layer = nn_make("Sequential", "");
    char name[16];
    int64_t width = 64 << l;
    for (b = 0; b < resnet50_blocks[l]; ++b) {
      nn_add(layer, NULL, bottleneck(in, width, b == 0 && l > 0 ? 2 : 1));
      in = width * 4;
    }
    snprintf(name, sizeof name, "layer%d", l + 1);
    nn_add(m, name, layer);
  }
  nn_add(m, "avgpool", nn_make("AdaptiveAvgPool2d", "1"));
  nn_add(m, "fc", nn_make("Linear", "2048, 1000"));
  return m;
}

/* One call of whichever way: *out NEW (the first output). */
typedef struct {
  ctorch_module jit; /* a TorchScript module (jit-opt) */
  ctorch_nn_module model;
  ctorch_aoti_package pkg;
  rfold *fold;
  ctorch_tensor in[8];
  size_t n_in;
} way;

static void call(ctorch_tensor *out, const way *w) {
  if (w->jit) {
    CHECK(ctorch_module_forward_tensors(out, w->jit, w->in, w->n_in));
  } else if (w->pkg) {
    ctorch_tensor_list l = NULL;
    CHECK(ctorch_aoti_package_run(&l, w->pkg, w->in, w->n_in));
    CHECK(ctorch_tensor_list_get(out, l, 0));
    ctorch_tensor_list_free(l);
  } else if (w->fold) {
    CHECK(rf_forward(out, w->fold, w->in[0]));
  } else {
    ctorch_tensor outs[2] = {NULL, NULL};
    size_t n = 0, i;
    CHECK(ctorch_nn_module_forward_n(w->model, w->in, w->n_in, NULL, outs, 2, &n));
    *out = outs[0];
    for (i = 1; i < n; ++i) ctorch_tensor_free(outs[i]);
  }
}

/* max |a - b| / max |a| */
static double rel_diff(ctorch_tensor a, ctorch_tensor b) {
  ctorch_tensor d = NULL, m = NULL;
  double num = 0, den = 0;
  CHECK(ctorch_sub_Tensor(&d, a, b, ctorch_scalar_int(1)));
  CHECK(ctorch_abs(&d, d));
  CHECK(ctorch_max(&m, d));
  CHECK(ctorch_tensor_item_double(&num, m));
  ctorch_tensor_free(m), ctorch_tensor_free(d), d = NULL;
  CHECK(ctorch_abs(&d, a));
  CHECK(ctorch_max(&m, d));
  CHECK(ctorch_tensor_item_double(&den, m));
  ctorch_tensor_free(m), ctorch_tensor_free(d);
  return num / den;
}

/* jit-opt, resnet50-opt: eager way e and optimised way o, alternating. */
static int run_pair(way *e, way *o, long iters, const char *out_path) {
  double *ms = malloc(sizeof *ms * (size_t)iters), *ms_opt = malloc(sizeof *ms * (size_t)iters);
  ctorch_tensor a = NULL, b = NULL;
  ctorch_autograd_scope no_grad = NULL;
  ctorch_autocast_scope amp;
  long i;
  CHECK(ctorch_autograd_scope_enter(&no_grad, CTORCH_SCOPE_NO_GRAD));
  amp = amp_enter(&bench);
  call(&a, e), call(&b, o); /* warm-up (the optimised way prepacks here) */
  bench_sync();
  for (i = 0; i < iters; ++i) {
    double t0 = bench_now();
    ctorch_tensor_free(a);
    call(&a, e);
    bench_sync();
    ms[i] = (bench_now() - t0) * 1e3;
    t0 = bench_now();
    ctorch_tensor_free(b);
    call(&b, o);
    bench_sync();
    ms_opt[i] = (bench_now() - t0) * 1e3;
  }
  amp_leave(amp);
  CHECK(ctorch_autograd_scope_leave(no_grad));
  save_out(out_path, b);
  printf("ms=");
  for (i = 0; i < iters; ++i) printf("%s%.3f", i ? "," : "", ms[i]);
  printf("\nms_opt=");
  for (i = 0; i < iters; ++i) printf("%s%.3f", i ? "," : "", ms_opt[i]);
  printf("\nrel_diff=%.3g\n", rel_diff(a, b));
  ctorch_tensor_free(a), ctorch_tensor_free(b);
  free(ms), free(ms_opt);
  return 0;
}

int main(int argc, char **argv) {
  way w = {NULL, NULL, NULL, NULL, {NULL}, 0}, opt = {NULL, NULL, NULL, NULL, {NULL}, 0};
  int pair = 0, only_opt = 0;
  const char *given = argv[1]; /* the mode as typed, for messages */
  rfold fold;
  ctorch_tensor_dict inputs = NULL;
  ctorch_autograd_scope no_grad = NULL;
  ctorch_autocast_scope amp;
  ctorch_tensor out = NULL;
  bert_config cfg;
  long iters, i;
  double *ms;
  if (argc != 7 || atol(argv[4]) < 1) {
    fprintf(stderr, "usage: model_bench bert|resnet50|bert-opt|resnet50-opt|jit-opt|bert-optimized|"
                    "resnet50-optimized|jit-optimized|resnet50-fold|resnet50-fold-nchw|resnet50-cl|resnet50-fold-mkldnn|aoti MODEL INPUTS "
                    "ITERS THREADS OUT\n");
    return 2;
  }
  iters = atol(argv[4]);
  if (atoi(argv[5]) > 0) CHECK(ctorch_set_num_threads(atoi(argv[5])));
  bench.device = ctorch_device_cpu();
  if (getenv("MODEL_BENCH_DEVICE") && parse_device(getenv("MODEL_BENCH_DEVICE"), &bench.device)) {
    fprintf(stderr, "model_bench: MODEL_BENCH_DEVICE=%s: expected cpu, cuda or cuda:N\n", getenv("MODEL_BENCH_DEVICE"));
    return 2;
  }
  if (bench.device.type == CTORCH_DEVICE_CUDA && ctorch_cuda_set_device(bench.device.index)) {
    fprintf(stderr, "model_bench: MODEL_BENCH_DEVICE=%s: %s\n", getenv("MODEL_BENCH_DEVICE"), ctorch_last_error());
    return 2;
  }
  if (getenv("MODEL_BENCH_AMP") && (bench.amp = parse_amp(getenv("MODEL_BENCH_AMP"))) < 0) {
    fprintf(stderr, "model_bench: MODEL_BENCH_AMP=%s: expected none, bf16 or fp16\n", getenv("MODEL_BENCH_AMP"));
    return 2;
  }
  {
    size_t n = strlen(argv[1]);
    only_opt = n > 10 && !strcmp(argv[1] + n - 10, "-optimized");
    if (only_opt) { /* X-optimized -> X-opt; below, X-opt builds both */
      static char mode[64];
      snprintf(mode, sizeof mode, "%.*s", (int)(n - 6), argv[1]);
      argv[1] = mode;
    }
  }
  if (!strcmp(argv[1], "jit-opt")) {
    char *report = NULL;
    CHECK(ctorch_module_load(&w.jit, argv[2], bench_where()));
    CHECK(ctorch_module_eval(w.jit));
    CHECK(ctorch_module_optimize_for_inference(&opt.jit, &report, w.jit, getenv("MODEL_BENCH_OPTIONS")));
    fprintf(stderr, "%s", report);
    ctorch_string_free(report);
    pair = 1;
  } else if (!strcmp(argv[1], "aoti")) {
    int avail = 0;
    CHECK(ctorch_aoti_available(&avail));
    if (!avail) {
      fprintf(stderr, "model_bench: this libtorch has no AOTInductor package loader\n");
      return 2;
    }
    CHECK(ctorch_aoti_package_load(&w.pkg, argv[2], NULL));
  } else if (!strncmp(argv[1], "resnet50-", 9) && strcmp(argv[1], "resnet50-opt")) {
    ctorch_tensor_dict weights = NULL;
    memset(&fold, 0, sizeof fold);
    fold.fold = !strcmp(argv[1], "resnet50-fold") || !strcmp(argv[1], "resnet50-fold-nchw") ||
                !strcmp(argv[1], "resnet50-fold-mkldnn");
    fold.mkldnn = !strcmp(argv[1], "resnet50-fold-mkldnn");
    fold.channels_last = !strcmp(argv[1], "resnet50-fold") || !strcmp(argv[1], "resnet50-cl");
    if (!fold.fold && !fold.channels_last) { /* resnet50-<anything else> */
      fprintf(stderr, "model_bench: unknown model %s\n", given);
      return 2;
    }
    CHECK(ctorch_safetensors_load(&weights, argv[2], bench_where())); /* folded on the device */
    if (getenv("MODEL_BENCH_FOLDED")) CHECK(ctorch_tensor_dict_new(&fold.dump));
    rf_load(&fold, weights);
    ctorch_tensor_dict_free(weights);
    if (fold.dump) {
      CHECK(ctorch_tensor_dict_save(getenv("MODEL_BENCH_FOLDED"), fold.dump));
      ctorch_tensor_dict_free(fold.dump);
      fold.dump = NULL;
    }
    w.fold = &fold;
  } else {
    ctorch_tensor_dict weights = NULL;
    char path[4096];
    if (!strcmp(argv[1], "bert")) {
      cfg = read_config(argv[2]);
      w.model = make_model(&cfg);
      snprintf(path, sizeof path, "%s/model.safetensors", argv[2]);
    } else if (!strcmp(argv[1], "bert-opt")) {
      pair = 1;
      cfg = read_config(argv[2]);
      w.model = make_model(&cfg);
      snprintf(path, sizeof path, "%s/model.safetensors", argv[2]);
    } else if (!strcmp(argv[1], "resnet50") || !strcmp(argv[1], "resnet50-opt")) {
      pair = !strcmp(argv[1], "resnet50-opt");
      w.model = make_resnet50();
      snprintf(path, sizeof path, "%s", argv[2]);
    } else {
      fprintf(stderr, "model_bench: unknown model %s\n", given);
      return 2;
    }
    CHECK(ctorch_safetensors_load(&weights, path, NULL));
    CHECK(ctorch_nn_module_load_state_dict(NULL, w.model, weights, 1));
    ctorch_tensor_dict_free(weights);
    CHECK(ctorch_nn_module_train(w.model, 0));
    if (bench_where()) CHECK(ctorch_nn_module_to(w.model, bench_where(), -1));
    if (pair) {
      char *report = NULL;
      const char *cal_file = getenv("MODEL_BENCH_CALIBRATION");
      if (cal_file) { /* int8-static: the batches cal0, cal1, ... of a safetensors file, one input each */
        ctorch_tensor_dict cal = NULL;
        ctorch_tensor batches[64];
        size_t n = 0;
        CHECK(ctorch_safetensors_load(&cal, cal_file, bench_where()));
        for (; n < 64; ++n) {
          char name[16];
          snprintf(name, sizeof name, "cal%zu", n);
          if (ctorch_tensor_dict_find(&batches[n], cal, name) != CTORCH_OK) break;
        }
        CHECK(ctorch_nn_module_optimize_for_inference_calibrated(&opt.model, &report, w.model,
                                                                  getenv("MODEL_BENCH_OPTIONS"), batches, n, 1));
        while (n) ctorch_tensor_free(batches[--n]);
        ctorch_tensor_dict_free(cal);
      } else {
        CHECK(ctorch_nn_module_optimize_for_inference(&opt.model, &report, w.model, getenv("MODEL_BENCH_OPTIONS")));
      }
      fprintf(stderr, "%s", report);
      ctorch_string_free(report);
    }
  }
  CHECK(ctorch_safetensors_load(&inputs, argv[3], bench_where()));
  for (w.n_in = 0; w.n_in < 8; ++w.n_in) {
    char name[8];
    snprintf(name, sizeof name, "in%zu", w.n_in);
    if (ctorch_tensor_dict_find(&w.in[w.n_in], inputs, name) != CTORCH_OK) break;
  }
  if (pair && only_opt) { /* time the optimised module alone */
    ctorch_module_free(w.jit);
    ctorch_nn_module_free(w.model);
    w.jit = opt.jit, w.model = opt.model;
  } else if (pair) {
    memcpy(opt.in, w.in, sizeof w.in), opt.n_in = w.n_in;
    return run_pair(&w, &opt, iters, argv[6]);
  }
  ms = malloc(sizeof *ms * (size_t)iters);
  CHECK(ctorch_autograd_scope_enter(&no_grad, CTORCH_SCOPE_NO_GRAD));
  amp = amp_enter(&bench);
  call(&out, &w); /* warm-up */
  bench_sync();
  for (i = 0; i < iters; ++i) {
    double t0 = bench_now();
    ctorch_tensor_free(out);
    call(&out, &w);
    bench_sync();
    ms[i] = (bench_now() - t0) * 1e3;
  }
  if (getenv("MODEL_BENCH_PROFILE")) { /* one more call, after the timed ones, under the profiler */
    ctorch_profiler prof;
    CHECK(ctorch_profiler_start(&prof, 0));
    ctorch_tensor_free(out);
    call(&out, &w);
    bench_sync();
    CHECK(ctorch_profiler_stop(prof));
    CHECK(ctorch_profiler_export_chrome_trace(prof, getenv("MODEL_BENCH_PROFILE")));
    ctorch_profiler_free(prof);
  }
  amp_leave(amp);
  CHECK(ctorch_autograd_scope_leave(no_grad));
  save_out(argv[6], out);
  printf("ms=");
  for (i = 0; i < iters; ++i) printf("%s%.3f", i ? "," : "", ms[i]);
  printf("\n");
  free(ms);
  ctorch_tensor_free(out);
  if (w.fold) rf_free(w.fold);
  return 0;
}
