/* A model written in C, compiled by AOTInductor through the Python bridge
 * (ctorch_py_aoti_compile: C-built with ctorch's nn modules, traced from C,
 * torch.export, aoti_compile_and_package), then run from C against the same
 * model run eagerly from C (ctorch_nn_module_forward, inference mode). CPU.
 *
 * Models: LeNet-5 (examples/lenet5_nn.h) on [B, 1, 28, 28], and a
 * Transformer encoder classifier with the shape of examples/transformer.c
 * (Linear(28, 64), two TransformerEncoderLayer(64, 4 heads, feed-forward
 * 128, batch_first), then Flatten and Linear(28*64, 10)) on [B, 28, 28].
 * LeNet-5 gets one package with a dynamic batch (1..256). The Transformer
 * gets two packages per batch size: traced from C, the sizes its C++ code
 * computes (the attention's reshapes) are constants of the trace, so its
 * batch size is fixed (export refuses to make it dynamic). "transformer" is
 * traced with grad on (the decomposed layer, which Inductor compiles);
 * "transformer_fused" under no_grad (the layer's fast path: one
 * aten::_transformer_encoder_layer_fwd per layer, kept as one op in the
 * package and run by AOTI's proxy executor), to compare them
 * (docs/inference-benchmarks.md); bench/probes/aoti_transformer.py is the Python-only control.
 *
 * Usage: [CTORCH_BENCH_PROFILE=1] aoti_compile WORKDIR [THREADS]
 * Prints per model: the compile time, max |package - eager| at batch 1 and
 * 256, and per batch the median microseconds per forward of each way over 7
 * interleaved rounds (the starting way rotates) and eager/package (> 1: the
 * package is faster); with CTORCH_BENCH_PROFILE, the profiler's top
 * operators of each way. Inductor options reach the compile through the
 * environment, as Python reads them (TORCHINDUCTOR_FREEZING=1,
 * TORCHINDUCTOR_MAX_AUTOTUNE=1). torch < 2.6 cannot compile: prints
 * "skipped: ..." and exits 77. */
#include <string.h>

#include <ctorch.h>
#include <ctorch_python.h>

#include "bench.h"

#define CHECK(call)                                                 \
  do {                                                              \
    if ((call) != CTORCH_OK) bench_die(#call, ctorch_last_error()); \
  } while (0)

#include "lenet5_nn.h"
#include "trace_nn.h"

enum { ROUNDS = 7 };

static ctorch_nn_module make_transformer(void) {
  ctorch_nn_module seq = nn_make("Sequential", "");
  nn_add(seq, NULL, nn_make("Linear", "28, 64"));
  nn_add(seq, NULL, nn_make("TransformerEncoderLayer", "64, 4, dim_feedforward=128, batch_first=True"));
  nn_add(seq, NULL, nn_make("TransformerEncoderLayer", "64, 4, dim_feedforward=128, batch_first=True"));
  nn_add(seq, NULL, nn_make("Flatten", ""));
  nn_add(seq, NULL, nn_make("Linear", "1792, 10"));
  return seq;
}

static ctorch_tensor input(int transformer, int64_t b) {
  ctorch_tensor x = NULL;
  int64_t img[4] = {b, 1, 28, 28}, rows[3] = {b, 28, 28};
  CHECK(ctorch_randn(&x, transformer ? rows : img, transformer ? 3 : 4, NULL, NULL, NULL, NULL));
  return x;
}

static void run_eager(ctorch_nn_module m, ctorch_tensor x, long n) {
  long i;
  for (i = 0; i < n; ++i) {
    ctorch_tensor y = NULL;
    CHECK(ctorch_nn_module_forward(&y, m, x));
    ctorch_tensor_free(y);
  }
}

static void run_package(ctorch_aoti_package p, ctorch_tensor x, long n) {
  long i;
  for (i = 0; i < n; ++i) {
    ctorch_tensor_list out = NULL;
    CHECK(ctorch_aoti_package_run(&out, p, &x, 1));
    ctorch_tensor_list_free(out);
  }
}

static double max_diff(ctorch_nn_module m, ctorch_aoti_package p, ctorch_tensor x) {
  ctorch_tensor a = NULL, b = NULL, d = NULL, e = NULL, mx = NULL;
  ctorch_tensor_list out = NULL;
  double v = -1;
  CHECK(ctorch_nn_module_forward(&a, m, x));
  CHECK(ctorch_aoti_package_run(&out, p, &x, 1));
  CHECK(ctorch_tensor_list_get(&b, out, 0));
  CHECK(ctorch_sub_Tensor(&d, a, b, ctorch_scalar_int(1)));
  CHECK(ctorch_abs(&e, d));
  CHECK(ctorch_max(&mx, e));
  CHECK(ctorch_tensor_item_double(&v, mx));
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(d);
  ctorch_tensor_free(e);
  ctorch_tensor_free(mx);
  ctorch_tensor_list_free(out);
  return v;
}

enum { MAX_PKGS = 2 };

/* With CTORCH_BENCH_PROFILE set: the operators 5 eager forwards and 5 runs
 * of each package call (libtorch's profiler, self time first). A package's
 * own C++ kernels do not show; the library calls it makes do. */
static void profile(const char *name, ctorch_nn_module m, ctorch_aoti_package *pkgs, const char **labels, int np,
                    ctorch_tensor x) {
  int k;
  if (!getenv("CTORCH_BENCH_PROFILE")) return;
  for (k = -1; k < np; ++k) {
    ctorch_profiler pr = NULL;
    char *table = NULL;
    CHECK(ctorch_profiler_start(&pr, 0));
    if (k < 0) run_eager(m, x, 5);
    else run_package(pkgs[k], x, 5);
    CHECK(ctorch_profiler_stop(pr));
    CHECK(ctorch_profiler_table(&table, pr, "self_cpu_time_total", 12));
    printf("--- profile %s %s (5 calls)\n%s\n", name, k < 0 ? "eager" : labels[k][0] ? labels[k] : "package", table);
    ctorch_string_free(table);
    ctorch_profiler_free(pr);
  }
}

/* Median microseconds per forward, eager and each package, over ROUNDS
 * rounds in which every way runs in turn (the starting way rotates). */
static void measure(const char *name, ctorch_nn_module m, ctorch_aoti_package *pkgs, const char **labels, int np,
                    ctorch_tensor x, int64_t b) {
  ctorch_autograd_scope sc = NULL;
  double t[MAX_PKGS + 1][ROUNDS], med[MAX_PKGS + 1], per_call_s, t0;
  long iters;
  int r, k, w;
  for (k = 0; k < np; ++k)
    printf("%s%s batch %lld max_abs_diff %.3g\n", name, labels[k], (long long)b, max_diff(m, pkgs[k], x));
  CHECK(ctorch_autograd_scope_enter(&sc, CTORCH_SCOPE_INFERENCE_MODE));
  run_eager(m, x, 3);
  for (k = 0; k < np; ++k) run_package(pkgs[k], x, 3);
  t0 = bench_now();
  run_eager(m, x, 3);
  per_call_s = (bench_now() - t0) / 3;
  iters = (long)(0.3 / (per_call_s > 1e-6 ? per_call_s : 1e-6)); /* ~0.3 s per way and round */
  if (iters < 2) iters = 2;
  for (r = 0; r < ROUNDS; ++r) {
    for (k = 0; k <= np; ++k) {
      w = (r + k) % (np + 1); /* 0 = eager, 1.. = the packages */
      t0 = bench_now();
      if (w == 0) run_eager(m, x, iters);
      else run_package(pkgs[w - 1], x, iters);
      t[w][r] = (bench_now() - t0) * 1e6 / (double)iters;
    }
  }
  profile(name, m, pkgs, labels, np, x);
  CHECK(ctorch_autograd_scope_leave(sc));
  for (k = 0; k <= np; ++k) med[k] = bench_median(t[k], ROUNDS);
  for (k = 0; k < np; ++k)
    printf("%s%s batch %lld eager_us %.1f aoti_us %.1f eager/aoti %.2f\n", name, labels[k], (long long)b, med[0],
           med[k + 1], med[0] / med[k + 1]);
}

/* Traces m on x and compiles it (dynamic: batch 1..256), timing the
 * compile. fused: the trace runs under no_grad, where a
 * TransformerEncoderLayer takes its fast path, so the trace (and the
 * exported program) keeps aten::_transformer_encoder_layer_fwd as one op,
 * which the package runs through AOTI's proxy executor; with grad on (the
 * parameters need it) the trace records the decomposed layer (linear,
 * scaled_dot_product_attention, layer_norm), which Inductor compiles. */
static ctorch_aoti_package compile(const char *name, ctorch_nn_module m, ctorch_tensor x, int dynamic, int fused,
                                   const char *workdir) {
  ctorch_module traced = NULL;
  ctorch_aoti_package pkg = NULL;
  ctorch_autograd_scope sc = NULL;
  char path[4096];
  double t0;
  if (fused) CHECK(ctorch_autograd_scope_enter(&sc, CTORCH_SCOPE_NO_GRAD));
  CHECK(trace_nn_module(&traced, m, x, name));
  if (fused) CHECK(ctorch_autograd_scope_leave(sc));
  snprintf(path, sizeof path, "%s/%s%s.pt2", workdir, name, fused ? "_fused" : "");
  t0 = bench_now();
  if (ctorch_py_aoti_compile(traced, &x, 1, path, dynamic, 256) != CTORCH_OK)
    bench_die("ctorch_py_aoti_compile", ctorch_py_last_error());
  printf("%s%s compile_s %.1f%s\n", name, fused ? "_fused" : "", bench_now() - t0,
         dynamic ? " (dynamic batch 1..256)" : "");
  CHECK(ctorch_aoti_package_load(&pkg, path, NULL));
  ctorch_module_free(traced);
  return pkg;
}

/* LeNet-5: one dynamic package. The Transformer: per batch size, the
 * decomposed layer's package and the fused kernel's ("_fused"). */
static void bench_model(const char *name, int transformer, const char *workdir) {
  int64_t batches[2] = {1, 256};
  const char *labels[MAX_PKGS] = {"", "_fused"};
  ctorch_aoti_package pkgs[MAX_PKGS] = {NULL, NULL};
  ctorch_nn_module m;
  int bi, k, np = transformer ? 2 : 1;
  CHECK(ctorch_manual_seed(0));
  m = transformer ? make_transformer() : make_lenet5();
  CHECK(ctorch_nn_module_train(m, 0));
  if (!transformer) {
    ctorch_tensor ex = input(0, 8);
    pkgs[0] = compile(name, m, ex, 1, 0, workdir);
    ctorch_tensor_free(ex);
  }
  for (bi = 0; bi < 2; ++bi) {
    ctorch_tensor x = input(transformer, batches[bi]);
    if (transformer)
      for (k = 0; k < np; ++k) pkgs[k] = compile(name, m, x, 0, k, workdir);
    measure(name, m, pkgs, labels, np, x, batches[bi]);
    if (transformer)
      for (k = 0; k < np; ++k) {
        ctorch_aoti_package_free(pkgs[k]);
        pkgs[k] = NULL;
      }
    ctorch_tensor_free(x);
  }
  ctorch_aoti_package_free(pkgs[0]);
  ctorch_nn_module_free(m);
}

int main(int argc, char **argv) {
  const char *v = NULL;
  if (argc < 2) {
    fprintf(stderr, "usage: aoti_compile WORKDIR [THREADS]\n");
    return 2;
  }
  CHECK(ctorch_set_num_threads(argc > 2 ? atoi(argv[2]) : 1));
  CHECK(ctorch_torch_version(&v));
  if (ctorch_py_start(NULL, NULL) != CTORCH_OK) bench_die("ctorch_py_start", ctorch_py_last_error());
  if (strncmp(v, "1.", 2) == 0) {
    printf("skipped: torch %s has no torch.export + AOTInductor packaging\n", v);
    return 77;
  }
  printf("torch %s, %d thread(s)\n", v, argc > 2 ? atoi(argv[2]) : 1);
  bench_model("lenet5", 0, argv[1]);
  bench_model("transformer", 1, argv[1]);
  return 0;
}
