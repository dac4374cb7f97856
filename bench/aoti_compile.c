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
 * gets one package per batch size: traced from C, the sizes its C++ code
 * computes (the attention's reshapes) are constants of the trace, so its
 * batch size is fixed (export refuses to make it dynamic).
 *
 * Usage: aoti_compile WORKDIR [THREADS]
 * Prints per model: the compile time, max |package - eager| at batch 1 and
 * 256, and per batch the median microseconds per forward of each way over 7
 * interleaved rounds and eager/package (> 1: the package is faster). torch
 * < 2.6 cannot compile: prints "skipped: ..." and exits 77. */
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

/* Median microseconds per forward, eager and package, over ROUNDS interleaved rounds. */
static void measure(const char *name, ctorch_nn_module m, ctorch_aoti_package pkg, ctorch_tensor x, int64_t b) {
  ctorch_autograd_scope sc = NULL;
  double te[ROUNDS], tp[ROUNDS], per_call_s, e, p, t0;
  long iters;
  int r;
  printf("%s batch %lld max_abs_diff %.3g\n", name, (long long)b, max_diff(m, pkg, x));
  CHECK(ctorch_autograd_scope_enter(&sc, CTORCH_SCOPE_INFERENCE_MODE));
  run_eager(m, x, 3);
  run_package(pkg, x, 3);
  t0 = bench_now();
  run_eager(m, x, 3);
  per_call_s = (bench_now() - t0) / 3;
  iters = (long)(0.3 / (per_call_s > 1e-6 ? per_call_s : 1e-6)); /* ~0.3 s per way and round */
  if (iters < 2) iters = 2;
  for (r = 0; r < ROUNDS; ++r) {
    t0 = bench_now();
    run_eager(m, x, iters);
    te[r] = (bench_now() - t0) * 1e6 / (double)iters;
    t0 = bench_now();
    run_package(pkg, x, iters);
    tp[r] = (bench_now() - t0) * 1e6 / (double)iters;
  }
  CHECK(ctorch_autograd_scope_leave(sc));
  e = bench_median(te, ROUNDS);
  p = bench_median(tp, ROUNDS);
  printf("%s batch %lld eager_us %.1f aoti_us %.1f eager/aoti %.2f\n", name, (long long)b, e, p, e / p);
}

/* Traces m on x and compiles it (dynamic: batch 1..256), timing the compile. */
static ctorch_aoti_package compile(const char *name, ctorch_nn_module m, ctorch_tensor x, int dynamic,
                                   const char *workdir) {
  ctorch_module traced = NULL;
  ctorch_aoti_package pkg = NULL;
  char path[4096];
  double t0;
  CHECK(trace_nn_module(&traced, m, x, name));
  snprintf(path, sizeof path, "%s/%s.pt2", workdir, name);
  t0 = bench_now();
  if (ctorch_py_aoti_compile(traced, &x, 1, path, dynamic, 256) != CTORCH_OK)
    bench_die("ctorch_py_aoti_compile", ctorch_py_last_error());
  printf("%s compile_s %.1f%s\n", name, bench_now() - t0, dynamic ? " (dynamic batch 1..256)" : "");
  CHECK(ctorch_aoti_package_load(&pkg, path, NULL));
  ctorch_module_free(traced);
  return pkg;
}

static void bench_model(const char *name, int transformer, const char *workdir) {
  int64_t batches[2] = {1, 256};
  ctorch_aoti_package pkg = NULL;
  ctorch_nn_module m;
  int bi;
  CHECK(ctorch_manual_seed(0));
  m = transformer ? make_transformer() : make_lenet5();
  CHECK(ctorch_nn_module_train(m, 0));
  if (!transformer) {
    ctorch_tensor ex = input(0, 8);
    pkg = compile(name, m, ex, 1, workdir);
    ctorch_tensor_free(ex);
  }
  for (bi = 0; bi < 2; ++bi) {
    ctorch_tensor x = input(transformer, batches[bi]);
    if (transformer) pkg = compile(name, m, x, 0, workdir);
    measure(name, m, pkg, x, batches[bi]);
    if (transformer) {
      ctorch_aoti_package_free(pkg);
      pkg = NULL;
    }
    ctorch_tensor_free(x);
  }
  ctorch_aoti_package_free(pkg);
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
