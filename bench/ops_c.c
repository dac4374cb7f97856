/* Per-call cost of ctorch ops called from C: the loop a language binding runs. */
#include "bench.h"

#include <ctorch.h>

#define CHECKED(call)                                                               \
  do {                                                                              \
    if ((call) != CTORCH_OK) bench_die(#call, ctorch_last_error());                 \
  } while (0)

double bench_c_add(void *a, void *b, long iters) {
  ctorch_scalar one = ctorch_scalar_int(1);
  ctorch_tensor r;
  long i;
  double t0 = bench_now();
  for (i = 0; i < iters; ++i) {
    CHECKED(ctorch_add_Tensor(&r, (ctorch_tensor)a, (ctorch_tensor)b, one));
    ctorch_tensor_free(r);
  }
  return (bench_now() - t0) * 1e9 / (double)iters;
}

double bench_c_mul(void *a, void *b, long iters) {
  ctorch_tensor r;
  long i;
  double t0 = bench_now();
  for (i = 0; i < iters; ++i) {
    CHECKED(ctorch_mul_Tensor(&r, (ctorch_tensor)a, (ctorch_tensor)b));
    ctorch_tensor_free(r);
  }
  return (bench_now() - t0) * 1e9 / (double)iters;
}

double bench_c_relu(void *a, void *b, long iters) {
  ctorch_tensor r;
  long i;
  double t0 = bench_now();
  (void)b;
  for (i = 0; i < iters; ++i) {
    CHECKED(ctorch_relu(&r, (ctorch_tensor)a));
    ctorch_tensor_free(r);
  }
  return (bench_now() - t0) * 1e9 / (double)iters;
}

double bench_c_transpose(void *a, void *b, long iters) {
  ctorch_tensor r;
  long i;
  double t0 = bench_now();
  (void)b;
  for (i = 0; i < iters; ++i) {
    CHECKED(ctorch_transpose_int(&r, (ctorch_tensor)a, 0, 1));
    ctorch_tensor_free(r);
  }
  return (bench_now() - t0) * 1e9 / (double)iters;
}

double bench_c_matmul(void *a, void *b, long iters) {
  ctorch_tensor r;
  long i;
  double t0 = bench_now();
  for (i = 0; i < iters; ++i) {
    CHECKED(ctorch_matmul(&r, (ctorch_tensor)a, (ctorch_tensor)b));
    ctorch_tensor_free(r);
  }
  return (bench_now() - t0) * 1e9 / (double)iters;
}

/* One DLPack exchange through ctorch: export, import, drop. */
double bench_c_dlpack(void *a, void *b, long iters) {
  struct DLManagedTensor *m;
  ctorch_tensor r;
  long i;
  double t0 = bench_now();
  (void)b;
  for (i = 0; i < iters; ++i) {
    CHECKED(ctorch_to_dlpack(&m, (ctorch_tensor)a));
    CHECKED(ctorch_from_dlpack(&r, m));
    ctorch_tensor_free(r);
  }
  return (bench_now() - t0) * 1e9 / (double)iters;
}
