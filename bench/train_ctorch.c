/* Training throughput through ctorch from C; same definitions as
 * train_cpp.cpp and train_python.py (see there).
 * Usage: train_ctorch lenet|tiny STEPS [THREADS [none]]  (intra-op threads; default 2 for lenet, 1 for tiny;
 *        none: set the gradients to None each step instead of zeroing them)
 * Prints two rates: over the whole timed run, and at the median step. */
#include <math.h>
#include <string.h>

#include <ctorch.h>

#include "bench.h"

#define CHECK(call)                                                     \
  do {                                                                  \
    if ((call) != CTORCH_OK) bench_die(#call, ctorch_last_error());     \
  } while (0)

#include "lenet5_model.h" /* the network of examples/lenet5.c */

static void run(int lenet, long steps, int threads, int set_to_none) {
  static const int64_t t1[2] = {64, 4}, t2[2] = {2, 64};
  const int64_t xs_lenet[4] = {256, 1, 28, 28}, ys_lenet[1] = {256}, xs_tiny[2] = {1, 4}, ys_tiny[2] = {1, 2};
  const ctorch_dtype f32 = CTORCH_FLOAT32, i64 = CTORCH_INT64;
  ctorch_tensor p[NPARAMS], x = NULL, y = NULL;
  size_t np = lenet ? NPARAMS : 4;
  ctorch_optimizer opt = NULL;
  ctorch_optim_options o;
  long i, warm = lenet ? 5 : 200;
  double t0 = 0, ts, *dt = malloc(sizeof *dt * (size_t)steps), per = lenet ? 256.0 : 1.0;
  size_t k;

  CHECK(ctorch_set_num_threads(threads));
  CHECK(ctorch_manual_seed(0));
  if (lenet) {
    make_model(p);
    CHECK(ctorch_randn(&x, xs_lenet, 4, &f32, NULL, NULL, NULL));
    CHECK(ctorch_randint(&y, 10, ys_lenet, 1, &i64, NULL, NULL, NULL));
    CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAMW));
    o.lr = 1e-3;
    CHECK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_ADAMW, p, np, &o));
  } else {
    make_layer(&p[0], &p[1], t1, 2);
    make_layer(&p[2], &p[3], t2, 2);
    CHECK(ctorch_randn(&x, xs_tiny, 2, &f32, NULL, NULL, NULL));
    CHECK(ctorch_randn(&y, ys_tiny, 2, &f32, NULL, NULL, NULL));
    CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
    o.lr = 0.01;
    CHECK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, p, np, &o));
  }
  for (i = 0; i < warm + steps; ++i) {
    ctorch_handle_scope s;
    ctorch_tensor out, loss;
    ts = bench_now();
    if (i == warm) t0 = ts;
    s = scope_enter(); /* frees the step's tensors */
    /* zeroed, not set to None (unless asked), as in train_cpp.cpp and train_python.py */
    CHECK(ctorch_optimizer_zero_grad(opt, set_to_none));
    if (lenet) {
      out = forward(p, x);
      CHECK(ctorch_cross_entropy_loss(&loss, out, y, NULL, 1, -100, 0.0));
    } else {
      CHECK(ctorch_linear(&out, x, p[0], p[1]));
      CHECK(ctorch_tanh(&out, out));
      CHECK(ctorch_linear(&out, out, p[2], p[3]));
      CHECK(ctorch_mse_loss(&loss, out, y, 1));
    }
    CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    CHECK(ctorch_optimizer_step(opt));
    scope_leave(s);
    if (i >= warm) dt[i - warm] = bench_now() - ts;
  }
  t0 = bench_now() - t0;
  ctorch_optimizer_free(opt);
  for (k = 0; k < np; ++k) ctorch_tensor_free(p[k]);
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  printf("%.3f %.3f\n", per * (double)steps / t0, per / bench_median(dt, (size_t)steps));
  free(dt);
}

int main(int argc, char **argv) {
  int lenet = argc > 1 && strcmp(argv[1], "lenet") == 0;
  if (argc < 3 || argc > 5 || (argc == 5 && strcmp(argv[4], "none") != 0)) {
    fprintf(stderr, "usage: train_ctorch lenet|tiny STEPS [THREADS [none]]\n");
    return 2;
  }
  if (atol(argv[2]) < 1) bench_die("STEPS", "must be at least 1");
  if (argc >= 4 && atoi(argv[3]) < 1) bench_die("THREADS", "must be at least 1");
  run(lenet, atol(argv[2]), argc >= 4 ? atoi(argv[3]) : lenet ? 2 : 1, argc == 5);
  return 0;
}
