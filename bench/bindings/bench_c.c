/* The C baseline of bench/bindings: per-call add on 1 element, and one
 * training step of a 784-128-10 MLP (batch 64, Adam), through ctorch's C API
 * exactly as the bindings call it. Prints JSON. Usage: bench_c ITERS STEPS */
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

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 200000, steps = argc > 2 ? atol(argv[2]) : 200, i;
  int64_t one = 1, xs[2] = {64, 784}, ys = 64;
  float v = 1.0f;
  ctorch_tensor a = NULL, r = NULL, x = NULL, y = NULL, w1, b1, w2, b2, h, hr, logits, loss, params[4];
  ctorch_optimizer opt = NULL;
  ctorch_optim_options o;
  ctorch_scalar alpha = ctorch_scalar_int(1);
  double t0, add_ns, step_us, best = 1e30;
  int rep;
  OK(ctorch_set_num_threads(1));
  OK(ctorch_manual_seed(0));
  OK(ctorch_tensor_from_data(&a, &v, sizeof v, &one, 1, CTORCH_FLOAT32));
  for (rep = 0; rep < 5; ++rep) {
    t0 = now();
    for (i = 0; i < iters; ++i) {
      OK(ctorch_add_Tensor(&r, a, a, alpha));
      ctorch_tensor_free(r);
    }
    add_ns = (now() - t0) * 1e9 / iters;
    if (add_ns < best) best = add_ns;
  }
  add_ns = best;

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
  printf("{\"binding\": \"c\", \"add_ns\": %.1f, \"train_step_us\": %.1f}\n", add_ns, best);
  return 0;
}
