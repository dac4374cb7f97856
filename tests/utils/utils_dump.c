/* The training utilities from C, for utils_vs_torch.py:
 *
 *   utils_dump grads MODEL MODE   MODEL mlp|conv; MODE plain (no checkpoint),
 *       whole (ctorch_nn_checkpoint of the whole Sequential), seq
 *       (ctorch_nn_checkpoint_sequential, 3 segments), norng (seq with
 *       CTORCH_CHECKPOINT_NO_RNG_STATE). After ctorch_manual_seed(0): the
 *       model, x = randn (requires grad), y = forward, loss = (y*y).sum(),
 *       backward, then r = randn(4) (the generator's state after backward).
 *       Prints "Y ...", "G x ...", "G <param name> ...", "R ..." as C99 hex
 *       floats.
 *   utils_dump memory MODE        MODE plain|seq: a 16-layer MLP (width 512,
 *       batch 2048); prints the CPU bytes (ctorch_memory_cpu_counter) held
 *       after forward and the peak over forward + backward (sampled by a
 *       thread), both above the baseline before forward.
 *   utils_dump es MODE PATIENCE MIN_DELTA CHECK_FINITE STOP DIV V...
 *       early stopping (MODE min|max; STOP/DIV a number or none): one line
 *       per value, "S should_stop improved best wait best_step".
 *   utils_dump restore            best-state restore: bit-identical weights.
 *   utils_dump profile PATH       profiles two LeNet-5 training steps, writes
 *       the Chrome trace to PATH and prints the table.
 *   utils_dump errors             the failure paths (exit 1 on a mismatch).
 *   utils_dump --jobs FILE        one such argument list per line (dump_jobs.h).
 * Any other failure: a message and exit 1. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctorch.h>

#include "../dump_jobs.h"
#include "../dump_ok.h"

static void print_tensor(const char *tag, const char *name, ctorch_tensor t) {
  ctorch_tensor c = NULL;
  int64_t n = 0, k;
  double *v;
  const ctorch_dtype f64 = CTORCH_FLOAT64;
  OK(ctorch_to_dtype(&c, t, f64, 0, 1, NULL));
  OK(ctorch_tensor_numel(&n, c));
  OK(ctorch_tensor_data_ptr((void **)&v, c));
  printf("%s %s", tag, name);
  for (k = 0; k < n; ++k) printf(" %a", v[k]);
  printf("\n");
  ctorch_tensor_free(c);
}

static ctorch_nn_module build(const char *model) {
  static const char *mlp[][2] = {{"Linear", "16, 32"}, {"ReLU", ""},   {"Dropout", "0.5"}, {"Linear", "32, 32"},
                                 {"Tanh", ""},         {"Dropout", "0.3"}, {"Linear", "32, 8"}};
  static const char *conv[][2] = {{"Conv2d", "2, 4, 3, padding=1"}, {"ReLU", ""}, {"Dropout", "0.25"},
                                  {"Conv2d", "4, 3, 3"},            {"ReLU", ""}, {"Flatten", ""},
                                  {"Linear", "48, 5"}};
  const char *(*layers)[2] = strcmp(model, "mlp") == 0 ? mlp : conv;
  ctorch_nn_module seq = NULL;
  size_t i;
  OK(ctorch_nn_new(&seq, "Sequential", ""));
  for (i = 0; i < 7; ++i) {
    ctorch_nn_module m = NULL;
    OK(ctorch_nn_new(&m, layers[i][0], layers[i][1]));
    OK(ctorch_nn_module_append(seq, m));
    ctorch_nn_module_free(m);
  }
  return seq;
}

static ctorch_tensor forward(ctorch_nn_module seq, ctorch_tensor x, const char *mode, size_t segments) {
  ctorch_tensor y = NULL;
  if (strcmp(mode, "plain") == 0) OK(ctorch_nn_module_forward(&y, seq, x));
  else if (strcmp(mode, "whole") == 0) OK(ctorch_nn_checkpoint(&y, seq, x, 0));
  else if (strcmp(mode, "seq") == 0) OK(ctorch_nn_checkpoint_sequential(&y, seq, segments, x, 0));
  else if (strcmp(mode, "norng") == 0)
    OK(ctorch_nn_checkpoint_sequential(&y, seq, segments, x, CTORCH_CHECKPOINT_NO_RNG_STATE));
  else {
    fprintf(stderr, "unknown mode %s\n", mode);
    exit(1);
  }
  return y;
}

static ctorch_tensor square_sum(ctorch_tensor y) {
  ctorch_tensor sq = NULL, loss = NULL;
  OK(ctorch_mul_Tensor(&sq, y, y));
  OK(ctorch_sum(&loss, sq, NULL));
  ctorch_tensor_free(sq);
  return loss;
}

static int grads(const char *model, const char *mode) {
  const int64_t mlp_shape[2] = {6, 16}, conv_shape[4] = {2, 2, 6, 6}, four = 4;
  int is_mlp = strcmp(model, "mlp") == 0;
  ctorch_nn_module seq;
  ctorch_tensor x = NULL, y, loss, g = NULL, r = NULL;
  ctorch_tensor_dict params = NULL;
  size_t n = 0, i;
  OK(ctorch_manual_seed(0));
  seq = build(model);
  OK(ctorch_randn(&x, is_mlp ? mlp_shape : conv_shape, is_mlp ? 2 : 4, NULL, NULL, NULL, NULL));
  OK(ctorch_tensor_set_requires_grad(x, 1));
  y = forward(seq, x, mode, 3);
  loss = square_sum(y);
  OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  OK(ctorch_randn(&r, &four, 1, NULL, NULL, NULL, NULL));
  print_tensor("Y", "y", y);
  OK(ctorch_tensor_grad(&g, x));
  print_tensor("G", "x", g);
  ctorch_tensor_free(g);
  OK(ctorch_nn_module_named_parameters(&params, seq, 1));
  OK(ctorch_tensor_dict_size(&n, params));
  for (i = 0; i < n; ++i) {
    const char *name = NULL;
    ctorch_tensor p = NULL;
    OK(ctorch_tensor_dict_key(&name, params, i));
    OK(ctorch_tensor_dict_get(&p, params, i));
    OK(ctorch_tensor_grad(&g, p));
    print_tensor("G", name, g);
    ctorch_tensor_free(g);
    ctorch_tensor_free(p);
  }
  print_tensor("R", "r", r);
  ctorch_tensor_dict_free(params);
  ctorch_tensor_free(r);
  ctorch_tensor_free(loss);
  ctorch_tensor_free(y);
  ctorch_tensor_free(x);
  ctorch_nn_module_free(seq);
  return 0;
}

/* ---- peak memory ---------------------------------------------------------- */

static const int64_t *g_counter;
static volatile int g_sampling;
static int64_t g_peak;

static void *sampler(void *arg) {
  (void)arg;
  while (__atomic_load_n(&g_sampling, __ATOMIC_ACQUIRE)) {
    int64_t v = __atomic_load_n(g_counter, __ATOMIC_RELAXED);
    if (v > g_peak) g_peak = v;
  }
  return NULL;
}

static int memory(const char *mode) {
  const int64_t shape[2] = {2048, 512};
  ctorch_nn_module seq = NULL;
  ctorch_tensor x = NULL, y, loss;
  int64_t base, held;
  pthread_t th;
  int i;
  OK(ctorch_memory_cpu_counter(&g_counter));
  OK(ctorch_manual_seed(0));
  OK(ctorch_nn_new(&seq, "Sequential", ""));
  for (i = 0; i < 16; ++i) {
    ctorch_nn_module lin = NULL, act = NULL;
    OK(ctorch_nn_new(&lin, "Linear", "512, 512"));
    OK(ctorch_nn_new(&act, "ReLU", ""));
    OK(ctorch_nn_module_append(seq, lin));
    OK(ctorch_nn_module_append(seq, act));
    ctorch_nn_module_free(lin);
    ctorch_nn_module_free(act);
  }
  OK(ctorch_randn(&x, shape, 2, NULL, NULL, NULL, NULL));
  OK(ctorch_tensor_set_requires_grad(x, 1));
  base = __atomic_load_n(g_counter, __ATOMIC_RELAXED);
  g_peak = base;
  g_sampling = 1;
  if (pthread_create(&th, NULL, sampler, NULL) != 0) {
    fprintf(stderr, "pthread_create failed\n");
    return 1;
  }
  y = forward(seq, x, mode, 4);
  loss = square_sum(y);
  held = __atomic_load_n(g_counter, __ATOMIC_RELAXED) - base;
  OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  __atomic_store_n(&g_sampling, 0, __ATOMIC_RELEASE);
  pthread_join(th, NULL);
  printf("MEMORY %s held_after_forward %lld peak %lld\n", mode, (long long)held, (long long)(g_peak - base));
  ctorch_tensor_free(loss);
  ctorch_tensor_free(y);
  ctorch_tensor_free(x);
  ctorch_nn_module_free(seq);
  return 0;
}

/* ---- early stopping --------------------------------------------------------- */

static int early_stopping(int argc, char **argv) {
  ctorch_early_stopping es = NULL;
  double stop_thr = 0, div_thr = 0;
  int has_stop = strcmp(argv[6], "none") != 0, has_div = strcmp(argv[7], "none") != 0, i;
  if (has_stop) stop_thr = strtod(argv[6], NULL);
  if (has_div) div_thr = strtod(argv[7], NULL);
  OK(ctorch_early_stopping_new(&es, strcmp(argv[2], "max") == 0 ? CTORCH_BEST_MAX : CTORCH_BEST_MIN,
                               strtoll(argv[3], NULL, 10), strtod(argv[4], NULL), atoi(argv[5]),
                               has_stop ? &stop_thr : NULL, has_div ? &div_thr : NULL, NULL));
  for (i = 8; i < argc; ++i) {
    int stop = -1, improved = -1;
    double best = 0;
    int64_t wait = 0, best_step = 0;
    OK(ctorch_early_stopping_step(&stop, &improved, es, strtod(argv[i], NULL)));
    OK(ctorch_early_stopping_best(&best, &wait, &best_step, es));
    printf("S %d %d %a %lld %lld\n", stop, improved, best, (long long)wait, (long long)best_step);
  }
  ctorch_early_stopping_free(es);
  return 0;
}

/* 0 if a and b (contiguous, same dtype) hold the same bytes. */
static int memcmp_tensors(ctorch_tensor a, ctorch_tensor b) {
  int64_t na = 0, nb = 0;
  void *pa = NULL, *pb = NULL;
  OK(ctorch_tensor_numel(&na, a));
  OK(ctorch_tensor_numel(&nb, b));
  if (na != nb) return 1;
  OK(ctorch_tensor_data_ptr(&pa, a));
  OK(ctorch_tensor_data_ptr(&pb, b));
  return memcmp(pa, pb, (size_t)na * sizeof(float));
}

/* The weights at the best step come back bit for bit after they changed. */
static int restore(void) {
  ctorch_nn_module m = NULL;
  ctorch_early_stopping es = NULL;
  ctorch_tensor w = NULL, b = NULL, saved_w = NULL, saved_b = NULL;
  const double values[] = {1.0, 0.5, 0.7, 0.9};
  int stop = 0, improved = 0;
  size_t i;
  int64_t n = 0;
  OK(ctorch_manual_seed(1));
  OK(ctorch_nn_new(&m, "Linear", "8, 4"));
  OK(ctorch_early_stopping_new(&es, CTORCH_BEST_MIN, 2, 0.0, 1, NULL, NULL, m));
  OK(ctorch_nn_module_tensor(&w, m, "weight"));
  OK(ctorch_nn_module_tensor(&b, m, "bias"));
  for (i = 0; i < 4; ++i) {
    ctorch_autograd_scope ng = NULL;
    OK(ctorch_early_stopping_step(&stop, &improved, es, values[i]));
    if (i == 1) { /* the best (0.5): keep a copy of the weights to compare */
      OK(ctorch_clone(&saved_w, w, NULL));
      OK(ctorch_clone(&saved_b, b, NULL));
    }
    /* an "epoch" of training: the weights change */
    OK(ctorch_autograd_scope_enter(&ng, CTORCH_SCOPE_NO_GRAD));
    OK(ctorch_add__Scalar(w, ctorch_scalar_float(0.1 * (double)(i + 1)), ctorch_scalar_float(1.0)));
    OK(ctorch_mul__Scalar(b, ctorch_scalar_float(1.5)));
    OK(ctorch_autograd_scope_leave(ng));
  }
  if (!stop) {
    fprintf(stderr, "restore: patience 2 should have stopped after 0.7, 0.9\n");
    return 1;
  }
  if (memcmp_tensors(w, saved_w) == 0) {
    fprintf(stderr, "restore: weights did not change before the restore\n");
    return 1;
  }
  OK(ctorch_early_stopping_restore(es));
  if (memcmp_tensors(w, saved_w) != 0 || memcmp_tensors(b, saved_b) != 0) {
    fprintf(stderr, "restore: weights after restore differ from those at the best step\n");
    return 1;
  }
  OK(ctorch_tensor_numel(&n, w));
  printf("RESTORE ok %lld weights bit-identical\n", (long long)n);
  ctorch_tensor_free(w);
  ctorch_tensor_free(b);
  ctorch_tensor_free(saved_w);
  ctorch_tensor_free(saved_b);
  ctorch_early_stopping_free(es);
  ctorch_nn_module_free(m);
  return 0;
}

/* ---- profiler ---------------------------------------------------------------- */

/* Two LeNet-5 training steps (conv6k5-pool-conv16k5-pool-120-84-10, relu,
 * cross entropy, SGD) on random 28x28 inputs, profiled. */
static int profile(const char *path) {
  static const char *layers[][2] = {{"Conv2d", "1, 6, 5, padding=2"}, {"ReLU", ""}, {"MaxPool2d", "2"},
                                    {"Conv2d", "6, 16, 5"},          {"ReLU", ""}, {"MaxPool2d", "2"},
                                    {"Flatten", ""},                 {"Linear", "400, 120"}, {"ReLU", ""},
                                    {"Linear", "120, 84"},           {"ReLU", ""}, {"Linear", "84, 10"}};
  const int64_t shape[4] = {8, 1, 28, 28}, nclass = 10, tshape = 8;
  ctorch_nn_module net = NULL;
  ctorch_tensor_list params = NULL;
  ctorch_optimizer opt = NULL;
  ctorch_profiler prof = NULL;
  char *table = NULL;
  size_t i;
  int step;
  OK(ctorch_manual_seed(0));
  OK(ctorch_nn_new(&net, "Sequential", ""));
  for (i = 0; i < sizeof layers / sizeof layers[0]; ++i) {
    ctorch_nn_module m = NULL;
    OK(ctorch_nn_new(&m, layers[i][0], layers[i][1]));
    OK(ctorch_nn_module_append(net, m));
    ctorch_nn_module_free(m);
  }
  OK(ctorch_nn_module_parameters(&params, net));
  {
    size_t np = 0;
    ctorch_tensor ps[16];
    OK(ctorch_tensor_list_size(&np, params));
    for (i = 0; i < np; ++i) OK(ctorch_tensor_list_get(&ps[i], params, i));
    OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, ps, np, NULL));
    for (i = 0; i < np; ++i) ctorch_tensor_free(ps[i]);
  }
  OK(ctorch_profiler_start(&prof, 1));
  for (step = 0; step < 2; ++step) {
    ctorch_tensor x = NULL, t = NULL, y = NULL, loss = NULL;
    OK(ctorch_randn(&x, shape, 4, NULL, NULL, NULL, NULL));
    const ctorch_dtype i64 = CTORCH_INT64;
    OK(ctorch_randint(&t, nclass, &tshape, 1, &i64, NULL, NULL, NULL));
    OK(ctorch_optimizer_zero_grad(opt, 1));
    OK(ctorch_nn_module_forward(&y, net, x));
    OK(ctorch_cross_entropy_loss(&loss, y, t, NULL, 1, -100, 0.0));
    OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    OK(ctorch_optimizer_step(opt));
    ctorch_tensor_free(x);
    ctorch_tensor_free(t);
    ctorch_tensor_free(y);
    ctorch_tensor_free(loss);
  }
  OK(ctorch_profiler_stop(prof));
  OK(ctorch_profiler_export_chrome_trace(prof, path));
  OK(ctorch_profiler_table(&table, prof, "cpu_time_total", -1));
  fputs(table, stdout);
  ctorch_string_free(table);
  ctorch_profiler_free(prof);
  ctorch_optimizer_free(opt);
  ctorch_tensor_list_free(params);
  ctorch_nn_module_free(net);
  return 0;
}

int utils_errors(void); /* utils_errors.c */

static int run(int argc, char **argv) {
  if (argc >= 4 && strcmp(argv[1], "grads") == 0) return grads(argv[2], argv[3]);
  if (argc >= 3 && strcmp(argv[1], "memory") == 0) return memory(argv[2]);
  if (argc >= 8 && strcmp(argv[1], "es") == 0) return early_stopping(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "restore") == 0) return restore();
  if (argc >= 3 && strcmp(argv[1], "profile") == 0) return profile(argv[2]);
  if (argc >= 2 && strcmp(argv[1], "errors") == 0) return utils_errors();
  fprintf(stderr, "usage: see the comment at the top of utils_dump.c\n");
  return 2;
}

int main(int argc, char **argv) {
  int rc = dump_jobs(argc, argv, run);
  return rc >= 0 ? rc : run(argc, argv);
}
