/* The C baseline of bench/bindings: per-call add, mul, relu and transpose on
 * 1 element (each result freed, the best of 5 rounds), and one training step
 * of a 784-128-10 MLP (batch 64, Adam), through ctorch's C API exactly as the
 * bindings call it. Prints JSON. Usage: bench_c ITERS STEPS */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ctorch.h"

#define OK(call)                                                      \
  do {                                                                \
    if ((call) != CTORCH_OK) {                                        \
      fprintf(stderr, "%s: %s\n", #call, ctorch_last_error());        \
      exit(1);                                                        \
    }                                                                 \
  } while (0)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static ctorch_tensor param(int64_t rows, int64_t cols, double fan_in) {
  ctorch_tensor t = NULL;
  int64_t shape[2] = {rows, cols};
  double b = 1.0 / __builtin_sqrt(fan_in);
  OK(ctorch_empty_memory_format(&t, shape, cols ? 2 : 1, NULL, NULL, NULL, NULL, NULL));
  OK(ctorch_init_uniform_(t, -b, b));
  OK(ctorch_tensor_set_requires_grad(t, 1));
  return t;
}

enum { ADD, MUL, RELU, TRANSPOSE, NOPS };

static void call(int op, ctorch_tensor a, ctorch_tensor m, ctorch_tensor *r) {
  switch (op) {
    case ADD: OK(ctorch_add_Tensor(r, a, a, ctorch_scalar_int(1))); break;
    case MUL: OK(ctorch_mul_Tensor(r, a, a)); break;
    case RELU: OK(ctorch_relu(r, a)); break;
    default: OK(ctorch_transpose_int(r, m, 0, 1)); break;
  }
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 200000, steps = argc > 2 ? atol(argv[2]) : 200, i;
  static const char *names[NOPS] = {"add", "mul", "relu", "transpose"};
  int64_t one = 1, one_one[2] = {1, 1}, xs[2] = {64, 784}, ys = 64;
  float v = 1.0f;
  double op_ns[NOPS];
  ctorch_tensor a = NULL, m = NULL, r = NULL, x = NULL, y = NULL, w1, b1, w2, b2, h, hr, logits, loss, params[4];
  ctorch_optimizer opt = NULL;
  ctorch_optim_options o;
  double t0, step_us, best = 1e30;
  int rep, op;
  OK(ctorch_set_num_threads(1));
  OK(ctorch_manual_seed(0));
  OK(ctorch_tensor_from_data(&a, &v, sizeof v, &one, 1, CTORCH_FLOAT32));
  OK(ctorch_tensor_from_data(&m, &v, sizeof v, one_one, 2, CTORCH_FLOAT32));
  /* Rounds interleaved across the ops, so a change of the machine's load reaches every op's best. */
  for (op = 0; op < NOPS; ++op) op_ns[op] = 1e30;
  for (rep = 0; rep < 5; ++rep) {
    for (op = 0; op < NOPS; ++op) {
      double ns;
      t0 = now();
      for (i = 0; i < iters; ++i) {
        call(op, a, m, &r);
        ctorch_tensor_free(r);
      }
      ns = (now() - t0) * 1e9 / iters;
      if (ns < op_ns[op]) op_ns[op] = ns;
    }
  }

  OK(ctorch_randn(&x, xs, 2, NULL, NULL, NULL, NULL));
  {
    int64_t hi = 10;
    ctorch_dtype i64 = CTORCH_INT64;
    OK(ctorch_randint(&y, hi, &ys, 1, &i64, NULL, NULL, NULL));
  }
  w1 = param(128, 784, 784), b1 = param(128, 0, 784), w2 = param(10, 128, 128), b2 = param(10, 0, 128);
  params[0] = w1, params[1] = b1, params[2] = w2, params[3] = b2;
  OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAM));
  o.lr = 1e-3;
  OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_ADAM, params, 4, &o));
  best = 1e30;
  for (rep = 0; rep < 3; ++rep) {
    t0 = now();
    for (i = 0; i < steps; ++i) {
      OK(ctorch_linear(&h, x, w1, b1));
      OK(ctorch_relu(&hr, h));
      OK(ctorch_linear(&logits, hr, w2, b2));
      OK(ctorch_cross_entropy_loss(&loss, logits, y, NULL, CTORCH_REDUCTION_MEAN, -100, 0.0));
      OK(ctorch_optimizer_zero_grad(opt, 1));
      OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
      OK(ctorch_optimizer_step(opt));
      ctorch_tensor_free(h), ctorch_tensor_free(hr), ctorch_tensor_free(logits), ctorch_tensor_free(loss);
    }
    step_us = (now() - t0) * 1e6 / steps;
    if (step_us < best) best = step_us;
  }
  printf("{\"binding\": \"c\"");
  for (op = 0; op < NOPS; ++op) printf(", \"%s_ns\": %.1f", names[op], op_ns[op]);
  printf(", \"train_step_us\": %.1f}\n", best);
  return 0;
}
