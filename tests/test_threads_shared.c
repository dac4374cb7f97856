/* Serving from threads: N threads share ONE model and run
 * many forwards at once on different inputs; every output must equal, bit
 * for bit, what a single thread computed for the same input beforehand.
 * This is what include/ctorch.h's "Sharing one handle between threads" section
 * promises for nn modules (eval, under no_grad or inference mode, and with
 * grad recording on) and TorchScript modules (modules Python scripted and
 * traced: tests/python/make_jit_models.py; those tcases are tagged python)
 * and AOTInductor packages (one run at a time inside: the package's single
 * model instance; tagged aoti_compile, libtorch >= 2.6).
 * The threads start together behind a barrier so the forwards overlap.
 * Intra-op threads are set to 1 first: the comparison is bit for bit, and a
 * kernel may split its work differently with another thread count. */
#include <pthread.h>

#include "check_main.h"

#define N_THREADS 4
#define ITERS 150
#define N_INPUTS 8

typedef ctorch_status (*forward_fn)(ctorch_tensor *out, void *model, ctorch_tensor x);

typedef struct {
  forward_fn fwd;
  void *model;
  ctorch_autograd_scope_kind mode;
  ctorch_tensor inputs[N_INPUTS];
  void *want[N_INPUTS]; /* the single-thread outputs' bytes */
  size_t want_bytes[N_INPUTS];
  pthread_barrier_t start;
} shared_case;

typedef struct {
  shared_case *c;
  int id;
  int failures; /* calls that failed or outputs that differed */
  char msg[768];
} worker;

/* The bytes of a float32 output; 0 for anything else (every model here
 * returns float32). */
static size_t bytes_of(ctorch_tensor t) {
  int64_t n = 0;
  ctorch_dtype dt;
  if (ctorch_tensor_numel(&n, t) != CTORCH_OK || ctorch_tensor_dtype(&dt, t) != CTORCH_OK || dt != CTORCH_FLOAT32)
    return 0;
  return (size_t)n * sizeof(float);
}

static void *run_worker(void *arg) {
  worker *w = arg;
  shared_case *c = w->c;
  ctorch_autograd_scope scope = NULL;
  void *got = NULL;
  int i;
  /* The intra-op thread count, as the reference had it. libtorch 2.x gives
   * a new thread the process's count lazily, at its first parallel_for; a
   * kernel reaching MKL/oneDNN before that runs with the default count and
   * may differ in the last bits (a TransformerEncoderLayer's first forward
   * in a new thread, in Python's threads too; measured on 2.15.0). */
  if (ctorch_set_num_threads(1) != CTORCH_OK) {
    snprintf(w->msg, sizeof w->msg, "set_num_threads: %s", ctorch_last_error());
    w->failures++;
  }
  /* grad mode is per thread: each worker opens its own scope */
  if (ctorch_autograd_scope_enter(&scope, c->mode) != CTORCH_OK) {
    snprintf(w->msg, sizeof w->msg, "scope_enter: %s", ctorch_last_error());
    w->failures++;
  }
  pthread_barrier_wait(&c->start);
  for (i = 0; i < ITERS && !w->failures; ++i) {
    int k = (w->id * 3 + i) % N_INPUTS;
    ctorch_tensor out = NULL;
    ctorch_status st = c->fwd(&out, c->model, c->inputs[k]);
    if (st != CTORCH_OK) {
      snprintf(w->msg, sizeof w->msg, "thread %d, call %d: %s: %s", w->id, i, ctorch_status_name(st),
               ctorch_last_error());
      w->failures++;
      break;
    }
    got = realloc(got, c->want_bytes[k]); /* > 0: checked by run_shared */
    if (bytes_of(out) != c->want_bytes[k] || ctorch_tensor_copy_to(got, c->want_bytes[k], out) != CTORCH_OK ||
        memcmp(got, c->want[k], c->want_bytes[k]) != 0) {
      snprintf(w->msg, sizeof w->msg, "thread %d, call %d: the output for input %d differs from one thread's", w->id,
               i, k);
      w->failures++;
    }
    ctorch_tensor_free(out);
  }
  free(got);
  if (scope && ctorch_autograd_scope_leave(scope) != CTORCH_OK && !w->failures) {
    snprintf(w->msg, sizeof w->msg, "scope_leave: %s", ctorch_last_error());
    w->failures++;
  }
  return NULL;
}

/* Inputs of the given shape (seeded), the single-thread references, then N
 * threads sharing the model; asserts every output matched. */
static void run_shared(forward_fn fwd, void *model, ctorch_autograd_scope_kind mode, const int64_t *shape,
                       size_t ndim) {
  shared_case c;
  worker w[N_THREADS];
  pthread_t th[N_THREADS];
  ctorch_autograd_scope scope = NULL;
  int i, distinct = 0;
  memset(&c, 0, sizeof c);
  c.fwd = fwd;
  c.model = model;
  c.mode = mode;
  CT_OK(ctorch_set_num_threads(1));
  CT_OK(ctorch_manual_seed(45));
  for (i = 0; i < N_INPUTS; ++i) CT_OK(ctorch_randn(&c.inputs[i], shape, ndim, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_autograd_scope_enter(&scope, mode));
  for (i = 0; i < N_INPUTS; ++i) {
    ctorch_tensor out = NULL;
    CT_OK(fwd(&out, model, c.inputs[i]));
    c.want_bytes[i] = bytes_of(out);
    ck_assert_uint_gt(c.want_bytes[i], 0);
    c.want[i] = malloc(c.want_bytes[i]);
    CT_OK(ctorch_tensor_copy_to(c.want[i], c.want_bytes[i], out));
    ctorch_tensor_free(out);
  }
  CT_OK(ctorch_autograd_scope_leave(scope));
  /* the inputs give different outputs (else a mix-up between threads could pass) */
  for (i = 1; i < N_INPUTS; ++i)
    distinct += c.want_bytes[i] != c.want_bytes[0] || memcmp(c.want[i], c.want[0], c.want_bytes[0]) != 0;
  ck_assert_int_eq(distinct, N_INPUTS - 1);

  ck_assert_int_eq(pthread_barrier_init(&c.start, NULL, N_THREADS), 0);
  for (i = 0; i < N_THREADS; ++i) {
    w[i].c = &c;
    w[i].id = i;
    w[i].failures = 0;
    w[i].msg[0] = 0;
    ck_assert_int_eq(pthread_create(&th[i], NULL, run_worker, &w[i]), 0);
  }
  for (i = 0; i < N_THREADS; ++i) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&c.start);
  for (i = 0; i < N_THREADS; ++i) ck_assert_msg(w[i].failures == 0, "%s", w[i].msg);
  for (i = 0; i < N_INPUTS; ++i) {
    ctorch_tensor_free(c.inputs[i]);
    free(c.want[i]);
  }
}

/* ---- nn modules --------------------------------------------------------- */

static ctorch_status nn_forward(ctorch_tensor *out, void *m, ctorch_tensor x) {
  return ctorch_nn_module_forward(out, (ctorch_nn_module)m, x);
}
static ctorch_status nn_forward_first(ctorch_tensor *out, void *m, ctorch_tensor x) {
  return ctorch_nn_module_forward_first(out, (ctorch_nn_module)m, &x, 1, NULL);
}

static void append(ctorch_nn_module s, const char *kind, const char *args) {
  ctorch_nn_module c = NULL;
  CT_OK(ctorch_nn_new(&c, kind, args));
  CT_OK(ctorch_nn_module_append(s, c));
  ctorch_nn_module_free(c);
}

/* Conv, BatchNorm (its running statistics made non-trivial by a few
 * training-mode forwards first), ReLU, pooling, Linear; then eval. */
static ctorch_nn_module convnet(void) {
  ctorch_nn_module s = NULL;
  int64_t shape[4] = {4, 1, 8, 8};
  int i;
  CT_OK(ctorch_manual_seed(7));
  CT_OK(ctorch_nn_new(&s, "Sequential", ""));
  append(s, "Conv2d", "1, 4, 3, padding=1");
  append(s, "BatchNorm2d", "4");
  append(s, "ReLU", "");
  append(s, "MaxPool2d", "2");
  append(s, "Flatten", "");
  append(s, "Linear", "64, 16");
  append(s, "ReLU", "");
  append(s, "Linear", "16, 5");
  for (i = 0; i < 3; ++i) {
    ctorch_tensor x = NULL, y = NULL;
    CT_OK(ctorch_randn(&x, shape, 4, NULL, NULL, NULL, NULL));
    CT_OK(ctorch_nn_module_forward(&y, s, x));
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
  }
  CT_OK(ctorch_nn_module_train(s, 0));
  return s;
}

START_TEST(nn_sequential_eval_no_grad) {
  ctorch_nn_module s = convnet();
  int64_t shape[4] = {2, 1, 8, 8};
  run_shared(nn_forward, s, CTORCH_SCOPE_NO_GRAD, shape, 4);
  ctorch_nn_module_free(s);
}
END_TEST

START_TEST(nn_sequential_eval_inference_mode) {
  ctorch_nn_module s = convnet();
  int64_t shape[4] = {3, 1, 8, 8};
  run_shared(nn_forward, s, CTORCH_SCOPE_INFERENCE_MODE, shape, 4);
  ctorch_nn_module_free(s);
}
END_TEST

/* With grad recording on, each forward builds its own graph over the shared
 * parameters: the outputs are the same values. */
START_TEST(nn_sequential_eval_with_grad) {
  ctorch_nn_module s = convnet();
  int64_t shape[4] = {2, 1, 8, 8};
  run_shared(nn_forward, s, CTORCH_SCOPE_ENABLE_GRAD, shape, 4);
  ctorch_nn_module_free(s);
}
END_TEST

/* An LSTM (flattened weights, two layers) and a Transformer encoder layer
 * (attention, layer norm): their forward reads the module and writes nothing. */
START_TEST(nn_recurrent_and_attention_inference_mode) {
  ctorch_nn_module lstm = NULL, enc = NULL;
  int64_t shape[3] = {2, 5, 8};
  CT_OK(ctorch_manual_seed(8));
  CT_OK(ctorch_nn_new(&lstm, "LSTM", "8, 12, num_layers=2, batch_first=True"));
  CT_OK(ctorch_nn_module_train(lstm, 0));
  run_shared(nn_forward_first, lstm, CTORCH_SCOPE_INFERENCE_MODE, shape, 3);
  CT_OK(ctorch_nn_new(&enc, "TransformerEncoderLayer", "8, 2, dim_feedforward=16, dropout=0.0, batch_first=True"));
  CT_OK(ctorch_nn_module_train(enc, 0));
  run_shared(nn_forward_first, enc, CTORCH_SCOPE_NO_GRAD, shape, 3);
  ctorch_nn_module_free(lstm);
  ctorch_nn_module_free(enc);
}
END_TEST

/* ---- TorchScript modules ------------------------------------------------ */

static ctorch_status jit_forward(ctorch_tensor *out, void *m, ctorch_tensor x) {
  return ctorch_module_forward_tensors(out, (ctorch_module)m, &x, 1);
}

static ctorch_module load_jit(const char *name) {
  static char dir[4096], err[8400];
  static int made = -1;
  char path[4096 + 64];
  ctorch_module m = NULL;
  if (made < 0) made = ct_make_with_python("tests/python/make_jit_models.py", "jit_models_threads", dir, sizeof dir,
                                           err, sizeof err);
  ck_assert_msg(made == 1, "TorchScript models were not generated: %s", err);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  CT_OK(ctorch_module_load(&m, path, NULL));
  return m;
}

START_TEST(torchscript_traced_no_grad) {
  ctorch_module m = load_jit("traced.pt"); /* conv, relu, linear (traced) */
  int64_t shape[4] = {2, 1, 6, 6};
  run_shared(jit_forward, m, CTORCH_SCOPE_NO_GRAD, shape, 4);
  ctorch_module_free(m);
}
END_TEST

START_TEST(torchscript_scripted_inference_mode) {
  ctorch_module m = load_jit("scripted.pt"); /* linear, batch norm in eval (scripted) */
  int64_t shape[2] = {5, 4};
  run_shared(jit_forward, m, CTORCH_SCOPE_INFERENCE_MODE, shape, 2);
  ctorch_module_free(m);
}
END_TEST

/* ---- AOTInductor packages (libtorch >= 2.6) ----------------------------- */

/* tests/models/make_aoti_package.py's model: (x [2, 4], b [3]) -> (fc2(tanh(
 * fc1(x))) + b, tanh(fc1(x))); the threads vary x and share b. */
static ctorch_tensor g_aoti_b;

static ctorch_status aoti_forward(ctorch_tensor *out, void *p, ctorch_tensor x) {
  ctorch_tensor in[2];
  ctorch_tensor_list l = NULL;
  ctorch_status st;
  in[0] = x;
  in[1] = g_aoti_b;
  st = ctorch_aoti_package_run(&l, (ctorch_aoti_package)p, in, 2);
  if (st != CTORCH_OK) return st;
  st = ctorch_tensor_list_get(out, l, 0);
  ctorch_tensor_list_free(l);
  return st;
}

START_TEST(aoti_package_run) {
  static char dir[4096], err[8400];
  char path[4096 + 64];
  float b[3];
  int64_t b_shape[1] = {3}, x_shape[2] = {2, 4};
  size_t n = 0;
  char *bytes;
  ctorch_aoti_package p = NULL;
  ck_assert_msg(ct_make_with_python("tests/models/make_aoti_package.py", "aoti_package_threads", dir, sizeof dir, err,
                                    sizeof err),
                "the AOTInductor package was not made: %s", err);
  snprintf(path, sizeof path, "%s/b.bin", dir);
  bytes = ct_read_file(path, &n);
  ck_assert_uint_eq(n, sizeof b);
  memcpy(b, bytes, sizeof b);
  free(bytes);
  CT_OK(ctorch_tensor_from_data(&g_aoti_b, b, sizeof b, b_shape, 1, CTORCH_FLOAT32));
  snprintf(path, sizeof path, "%s/mlp.pt2", dir);
  CT_OK(ctorch_aoti_package_load(&p, path, NULL));
  run_shared(aoti_forward, p, CTORCH_SCOPE_NO_GRAD, x_shape, 2);
  ctorch_aoti_package_free(p);
  ctorch_tensor_free(g_aoti_b);
}
END_TEST

/* Training mode: a BatchNorm's forward writes its running statistics and
 * num_batches_tracked. 8 threads x 200 forwards of one shared model on the
 * same input lose no update: the buffers equal those of a copy that made
 * the 1,600 forwards in one thread (every update is the same one, so their
 * order does not matter, bit for bit). */
#define BN_THREADS 8
#define BN_ITERS 200
typedef struct {
  ctorch_nn_module m;
  ctorch_tensor x;
  pthread_barrier_t *start;
  int failures;
} bn_worker;

static void *bn_run(void *arg) {
  bn_worker *w = arg;
  int i;
  pthread_barrier_wait(w->start);
  for (i = 0; i < BN_ITERS; ++i) {
    ctorch_tensor y = NULL;
    if (ctorch_nn_module_forward(&y, w->m, w->x) != CTORCH_OK) w->failures++;
    ctorch_tensor_free(y);
  }
  return NULL;
}

static void bn_buffers(ctorch_nn_module m, const char *prefix, float mean[6], float var[6], int64_t *n) {
  char name[64];
  ctorch_tensor t = NULL;
  snprintf(name, sizeof name, "%s.running_mean", prefix);
  CT_OK(ctorch_nn_module_tensor(&t, m, name));
  CT_OK(ctorch_tensor_copy_to(mean, 6 * sizeof(float), t));
  ctorch_tensor_free(t);
  snprintf(name, sizeof name, "%s.running_var", prefix);
  CT_OK(ctorch_nn_module_tensor(&t, m, name));
  CT_OK(ctorch_tensor_copy_to(var, 6 * sizeof(float), t));
  ctorch_tensor_free(t);
  snprintf(name, sizeof name, "%s.num_batches_tracked", prefix);
  CT_OK(ctorch_nn_module_tensor(&t, m, name));
  CT_OK(ctorch_tensor_item_int64(n, t));
  ctorch_tensor_free(t);
}

START_TEST(nn_batchnorm_training_shared) {
  ctorch_nn_module s = NULL, ref = NULL;
  ctorch_tensor x = NULL, y = NULL;
  int64_t shape[2] = {16, 6};
  pthread_t th[BN_THREADS];
  bn_worker w[BN_THREADS];
  pthread_barrier_t start;
  const char *layers[2] = {"1", "3"};
  int i, l;
  CT_OK(ctorch_manual_seed(3));
  CT_OK(ctorch_nn_new(&s, "Sequential", ""));
  append(s, "Linear", "6, 6");
  append(s, "BatchNorm1d", "6");
  append(s, "ReLU", "");
  append(s, "BatchNorm1d", "6, momentum=None");
  CT_OK(ctorch_nn_module_clone(&ref, s));
  CT_OK(ctorch_randn(&x, shape, 2, NULL, NULL, NULL, NULL));
  for (i = 0; i < BN_THREADS * BN_ITERS; ++i) {
    CT_OK(ctorch_nn_module_forward(&y, ref, x));
    ctorch_tensor_free(y);
  }
  ck_assert_int_eq(pthread_barrier_init(&start, NULL, BN_THREADS), 0);
  for (i = 0; i < BN_THREADS; ++i) {
    w[i] = (bn_worker){s, x, &start, 0};
    ck_assert_int_eq(pthread_create(&th[i], NULL, bn_run, &w[i]), 0);
  }
  for (i = 0; i < BN_THREADS; ++i) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);
  for (i = 0; i < BN_THREADS; ++i) ck_assert_int_eq(w[i].failures, 0);
  for (l = 0; l < 2; ++l) {
    float m1[6], v1[6], m2[6], v2[6];
    int64_t n1 = 0, n2 = 0;
    bn_buffers(s, layers[l], m1, v1, &n1);
    bn_buffers(ref, layers[l], m2, v2, &n2);
    ck_assert_int_eq(n1, BN_THREADS * BN_ITERS);
    ck_assert_int_eq(n2, BN_THREADS * BN_ITERS);
    ck_assert_msg(memcmp(m1, m2, sizeof m1) == 0 && memcmp(v1, v2, sizeof v1) == 0,
                  "layer %s: running statistics differ from one thread's", layers[l]);
  }
  ctorch_tensor_free(x);
  ctorch_nn_module_free(s);
  ctorch_nn_module_free(ref);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("threads_shared");
  TCase *tc = tcase_create("nn");
  TCase *jit = tcase_create("torchscript");
  TCase *aoti = tcase_create("aoti");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, nn_sequential_eval_no_grad);
  tcase_add_test(tc, nn_sequential_eval_inference_mode);
  tcase_add_test(tc, nn_sequential_eval_with_grad);
  tcase_add_test(tc, nn_recurrent_and_attention_inference_mode);
  tcase_add_test(tc, nn_batchnorm_training_shared);
  suite_add_tcase(s, tc);
  tcase_set_tags(jit, "python");
  tcase_set_timeout(jit, 300);
  tcase_add_test(jit, torchscript_traced_no_grad);
  tcase_add_test(jit, torchscript_scripted_inference_mode);
  suite_add_tcase(s, jit);
  /* making the package compiles C++: about 20 s with a warm inductor cache,
   * minutes cold on 2 cores */
  tcase_set_tags(aoti, "aoti_compile");
  tcase_set_timeout(aoti, 900);
  tcase_add_test(aoti, aoti_package_run);
  suite_add_tcase(s, aoti);
  return s;
}

CTORCH_CHECK_MAIN()
