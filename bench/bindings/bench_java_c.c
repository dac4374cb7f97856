/* The C side of the Java binding's per-call benchmark (bench/bindings/run,
 * language java): add, mul, relu and transpose of 1-element float tensors
 * through ctorch's C API, each result freed, the best of 5 rounds, as the
 * JMH benchmark (tests/java: CallCostBench) calls them through the binding.
 * Prints JSON. Usage: bench_java_c ITERS */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ctorch.h"

#define OK(call)                                               \
  do {                                                         \
    if ((call) != CTORCH_OK) {                                 \
      fprintf(stderr, "%s: %s\n", #call, ctorch_last_error()); \
      exit(1);                                                 \
    }                                                          \
  } while (0)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
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
  static const char *names[NOPS] = {"add", "mul", "relu", "transpose"};
  long iters = argc > 1 ? atol(argv[1]) : 200000, i;
  int64_t one = 1, one_one[2] = {1, 1};
  float v = 1.0f;
  ctorch_tensor a = NULL, m = NULL, r = NULL;
  int op, rep;
  OK(ctorch_set_num_threads(1));
  OK(ctorch_tensor_from_data(&a, &v, sizeof v, &one, 1, CTORCH_FLOAT32));
  OK(ctorch_tensor_from_data(&m, &v, sizeof v, one_one, 2, CTORCH_FLOAT32));
  printf("{");
  for (op = 0; op < NOPS; ++op) {
    double best = 1e30;
    for (rep = 0; rep < 5; ++rep) {
      double t0 = now(), ns;
      for (i = 0; i < iters; ++i) {
        call(op, a, m, &r);
        ctorch_tensor_free(r);
      }
      ns = (now() - t0) * 1e9 / iters;
      if (ns < best) best = ns;
    }
    printf("%s\"%s_ns\": %.1f", op ? ", " : "", names[op], best);
  }
  printf("}\n");
  ctorch_tensor_free(a);
  ctorch_tensor_free(m);
  return 0;
}
