/* Soak: resident memory must stay flat once warm.
 *
 * Phase 1: --cycles create/op/free cycles (default 100,000). Each cycle
 *   creates tensors (copying C data and over C memory), runs ops, an
 *   in-place op, a list-returning op, a failing op (error path), a DLPack
 *   round trip, and frees everything. RSS is sampled after the first 10%
 *   (warm-up: allocator pools, libtorch's lazy singletons) and at the end.
 * Phase 2: --steps LeNet-5 training steps (default 1,000; needs the training
 *   API: ctorch_optimizer_*, ctorch_tensor_backward). Synthetic fixed batches
 *   (the point is memory, not accuracy), AdamW, batch 64. RSS sampled after
 *   the first 10% of steps and at the end.
 *
 * Prints the samples and growth in KiB; the last line is
 *   soak: ops +X KiB over N cycles, lenet +Y KiB over M steps
 * Exits 1 if a phase grew by more than its bound (--ops-bound-kib, default
 * 4096; --train-bound-kib, default 8192; --no-bound disables the check), or
 * on any ctorch failure. Bounds: one leaked 12-float tensor per cycle would
 * grow phase 1 by ~30 MiB over 90,000 cycles; one leaked activation per
 * step grows phase 2 by >= 800 KiB per step. The bounds leave room for
 * malloc's arena growth and fragmentation, not for a per-iteration leak.
 */
#include <ctorch.h>
#include <dlpack/dlpack.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                                                           \
  do {                                                                                                        \
    ctorch_status st_ = (call);                                                                               \
    if (st_ != CTORCH_OK) {                                                                                   \
      fprintf(stderr, "soak: line %d: %s -> %s: %s\n", __LINE__, #call, ctorch_status_name(st_), ctorch_last_error()); \
      exit(1);                                                                                                \
    }                                                                                                         \
  } while (0)

static long rss_kib(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2) {
    fprintf(stderr, "soak: cannot read /proc/self/statm\n");
    exit(1);
  }
  fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void release_free(void *p) { free(p); }

static void one_cycle(long i) {
  float data[24];
  int64_t shape[2] = {4, 6}, shape_t[2] = {6, 4};
  ctorch_tensor a = NULL, b = NULL, c = NULL, d = NULL, s = NULL, e = NULL, back = NULL;
  ctorch_tensor_list parts = NULL;
  DLManagedTensor *m = NULL;
  double v = 0;
  float *blob = malloc(sizeof data);
  for (int k = 0; k < 24; ++k) data[k] = blob[k] = (float)((i + k) % 13) * 0.5f;
  CHECK(ctorch_tensor_from_data(&a, data, sizeof data, shape, 2, CTORCH_FLOAT32));
  CHECK(ctorch_tensor_from_blob(&b, blob, shape_t, NULL, 2, CTORCH_FLOAT32, ctorch_device_cpu(), release_free, blob));
  CHECK(ctorch_matmul(&c, a, b));
  CHECK(ctorch_add_Tensor(&d, c, c, ctorch_scalar_float(0.5)));
  CHECK(ctorch_relu_(d));
  CHECK(ctorch_sum(&s, d, NULL));
  CHECK(ctorch_tensor_item_double(&v, s));
  CHECK(ctorch_split_Tensor(&parts, a, 2, 0));
  /* error path: shapes do not multiply */
  if (ctorch_mm(&e, a, a) == CTORCH_OK) {
    fprintf(stderr, "soak: mismatched mm succeeded\n");
    exit(1);
  }
  CHECK(ctorch_to_dlpack(&m, d));
  CHECK(ctorch_from_dlpack(&back, m));
  if (v < 0) exit(1);
  ctorch_tensor_list_free(parts);
  ctorch_tensor_free(back);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(c);
  ctorch_tensor_free(d);
  ctorch_tensor_free(s);
}

#ifdef CTORCH_HARDEN_HAVE_OPTIM
enum { NP = 10, BATCH = 64, NBATCH = 8 };

static void layer(ctorch_tensor *w, ctorch_tensor *b, const int64_t *ws, size_t wd) {
  CHECK(ctorch_randn(w, ws, wd, NULL, NULL, NULL, NULL));
  CHECK(ctorch_mul__Scalar(*w, ctorch_scalar_float(0.1)));
  CHECK(ctorch_zeros(b, ws, 1, NULL, NULL, NULL, NULL));
  CHECK(ctorch_tensor_set_requires_grad(*w, 1));
  CHECK(ctorch_tensor_set_requires_grad(*b, 1));
}

static void step(ctorch_tensor *p, ctorch_optimizer opt, ctorch_tensor x, ctorch_tensor y) {
  static const int64_t one[2] = {1, 1}, zero[2] = {0, 0}, two[2] = {2, 2};
  ctorch_tensor t[16] = {0}, loss = NULL;
  int n = 0;
  CHECK(ctorch_conv2d(&t[n], x, p[0], p[1], one, 2, zero, 2, one, 2, 1)); ++n;
  CHECK(ctorch_relu(&t[n], t[n - 1])); ++n;
  CHECK(ctorch_max_pool2d(&t[n], t[n - 1], two, 2, two, 2, zero, 2, one, 2, 0)); ++n;
  CHECK(ctorch_conv2d(&t[n], t[n - 1], p[2], p[3], one, 2, zero, 2, one, 2, 1)); ++n;
  CHECK(ctorch_relu(&t[n], t[n - 1])); ++n;
  CHECK(ctorch_max_pool2d(&t[n], t[n - 1], two, 2, two, 2, zero, 2, one, 2, 0)); ++n;
  CHECK(ctorch_flatten_using_ints(&t[n], t[n - 1], 1, -1)); ++n;
  CHECK(ctorch_linear(&t[n], t[n - 1], p[4], p[5])); ++n;
  CHECK(ctorch_relu(&t[n], t[n - 1])); ++n;
  CHECK(ctorch_linear(&t[n], t[n - 1], p[6], p[7])); ++n;
  CHECK(ctorch_relu(&t[n], t[n - 1])); ++n;
  CHECK(ctorch_linear(&t[n], t[n - 1], p[8], p[9])); ++n;
  CHECK(ctorch_cross_entropy_loss(&loss, t[n - 1], y, NULL, 1, -100, 0.0));
  CHECK(ctorch_optimizer_zero_grad(opt, 1));
  CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  CHECK(ctorch_optimizer_step(opt));
  for (int k = 0; k < n; ++k) ctorch_tensor_free(t[k]);
  ctorch_tensor_free(loss);
}

static void train(int steps, long *r0, long *r1) {
  static const int64_t c1[4] = {6, 1, 5, 5}, c2[4] = {16, 6, 5, 5};
  static const int64_t f1[2] = {120, 256}, f2[2] = {84, 120}, f3[2] = {10, 84};
  const int64_t xs[4] = {BATCH, 1, 28, 28}, ys[1] = {BATCH};
  const ctorch_dtype i64 = CTORCH_INT64;
  ctorch_tensor p[NP], x[NBATCH], y[NBATCH];
  ctorch_optimizer opt = NULL;
  ctorch_optim_options o;
  CHECK(ctorch_manual_seed(1));
  layer(&p[0], &p[1], c1, 4);
  layer(&p[2], &p[3], c2, 4);
  layer(&p[4], &p[5], f1, 2);
  layer(&p[6], &p[7], f2, 2);
  layer(&p[8], &p[9], f3, 2);
  for (int k = 0; k < NBATCH; ++k) {
    CHECK(ctorch_randn(&x[k], xs, 4, NULL, NULL, NULL, NULL));
    CHECK(ctorch_randint(&y[k], 10, ys, 1, &i64, NULL, NULL, NULL));
  }
  CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAMW));
  CHECK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_ADAMW, p, NP, &o));
  for (int s = 0; s < steps; ++s) {
    if (s == steps / 10) *r0 = rss_kib();
    step(p, opt, x[s % NBATCH], y[s % NBATCH]);
  }
  *r1 = rss_kib();
  ctorch_optimizer_free(opt);
  for (int k = 0; k < NP; ++k) ctorch_tensor_free(p[k]);
  for (int k = 0; k < NBATCH; ++k) {
    ctorch_tensor_free(x[k]);
    ctorch_tensor_free(y[k]);
  }
}
#endif

int main(int argc, char **argv) {
  long cycles = 100000, ops_bound = 4096, train_bound = 8192;
  int steps = 1000, bound = 1;
  long r_start, r_warm, r_end, t0 = 0, t1 = 0;
  for (int i = 1; i < argc; ++i) {
    const char *v = i + 1 < argc ? argv[i + 1] : "0";
    if (!strcmp(argv[i], "--cycles")) cycles = atol(v), ++i;
    else if (!strcmp(argv[i], "--steps")) steps = atoi(v), ++i;
    else if (!strcmp(argv[i], "--ops-bound-kib")) ops_bound = atol(v), ++i;
    else if (!strcmp(argv[i], "--train-bound-kib")) train_bound = atol(v), ++i;
    else if (!strcmp(argv[i], "--no-bound")) bound = 0;
    else {
      fprintf(stderr, "usage: soak [--cycles N] [--steps M] [--ops-bound-kib K] [--train-bound-kib K] [--no-bound]\n");
      return 2;
    }
  }
  if (cycles < 10 || steps < 0) return 2;
  CHECK(ctorch_set_num_threads(1));
  r_start = rss_kib();
  r_warm = r_start;
  for (long i = 0; i < cycles; ++i) {
    if (i == cycles / 10) r_warm = rss_kib();
    one_cycle(i);
  }
  r_end = rss_kib();
  printf("ops: rss start %ld KiB, after warm-up (%ld cycles) %ld KiB, end (%ld cycles) %ld KiB, growth %+ld KiB\n", r_start,
         cycles / 10, r_warm, cycles, r_end, r_end - r_warm);
#ifdef CTORCH_HARDEN_HAVE_OPTIM
  if (steps) {
    train(steps, &t0, &t1);
    printf("lenet: rss after warm-up (%d steps) %ld KiB, end (%d steps) %ld KiB, growth %+ld KiB\n", steps / 10, t0,
           steps, t1, t1 - t0);
  }
#else
  if (steps) {
    fprintf(stderr, "soak: the training API (optimizers, backward) is not in this build: LeNet-5 phase not run\n");
    printf("soak: ops %+ld KiB over %ld cycles, lenet NOT RUN (no training API)\n", r_end - r_warm, cycles);
    return 3;
  }
#endif
  {
    int over = bound && ((r_end - r_warm) > ops_bound || (t1 - t0) > train_bound);
    if (over) fprintf(stderr, "soak: growth above bound (ops %ld KiB, lenet %ld KiB)\n", ops_bound, train_bound);
    printf("soak: ops %+ld KiB over %ld cycles, lenet %+ld KiB over %d steps\n", r_end - r_warm, cycles, t1 - t0, steps);
    return over ? 1 : 0;
  }
}
