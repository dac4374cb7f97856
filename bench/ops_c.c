/* Per-call cost of ctorch ops called from C: the loop a language binding runs. */
#include "bench.h"

#include <ctorch.h>

#define CHECKED(call)                                                               \
  do {                                                                              \
    if ((call) != CTORCH_OK) bench_die(#call, ctorch_last_error());                 \
  } while (0)

/* The loop of each per-call benchmark: CALL makes r from the ctorch handles
 * a and b, and r is freed at once, as a binding's temporary would be. */
#define C_LOOP(NAME, CALL)                                                          \
  double NAME(void *pa, void *pb, long iters) {                                     \
    ctorch_tensor a = (ctorch_tensor)pa, b = (ctorch_tensor)pb, r;                  \
    const ctorch_scalar one = ctorch_scalar_int(1);                                 \
    long i;                                                                         \
    double t0 = bench_now();                                                        \
    (void)b;                                                                        \
    (void)one;                                                                      \
    for (i = 0; i < iters; ++i) {                                                   \
      CHECKED(CALL);                                                                \
      ctorch_tensor_free(r);                                                        \
    }                                                                               \
    return (bench_now() - t0) * 1e9 / (double)iters;                                \
  }

C_LOOP(bench_c_add, ctorch_add_Tensor(&r, a, b, one))
C_LOOP(bench_c_mul, ctorch_mul_Tensor(&r, a, b))
C_LOOP(bench_c_relu, ctorch_relu(&r, a))
C_LOOP(bench_c_transpose, ctorch_transpose_int(&r, a, 0, 1))
C_LOOP(bench_c_matmul, ctorch_matmul(&r, a, b))

/* add_ (in place): no result handle; the call holds a's storage for its
 * write (write exclusivity per storage, include/ctorch.h "Threads"). */
double bench_c_add_inplace(void *pa, void *pb, long iters) {
  ctorch_tensor a = (ctorch_tensor)pa, b = (ctorch_tensor)pb;
  const ctorch_scalar one = ctorch_scalar_int(1);
  long i;
  double t0 = bench_now();
  for (i = 0; i < iters; ++i) CHECKED(ctorch_add__Tensor(a, b, one));
  return (bench_now() - t0) * 1e9 / (double)iters;
}

/* add with a handle scope open: each result is recorded, then freed at once
 * (ctorch_tensor_free forgets the record), as a binding's temporary would be. */
double bench_c_add_in_scope(void *pa, void *pb, long iters) {
  ctorch_handle_scope s;
  double ns;
  CHECKED(ctorch_handle_scope_enter(&s));
  ns = bench_c_add(pa, pb, iters);
  CHECKED(ctorch_handle_scope_leave(s));
  return ns;
}

/* add in scopes of 64 calls whose results the scope's leave frees: the
 * scratch-free style of a training step. The enter/leave cost is included. */
double bench_c_add_scope_leave(void *pa, void *pb, long iters) {
  ctorch_tensor a = (ctorch_tensor)pa, b = (ctorch_tensor)pb, r;
  const ctorch_scalar one = ctorch_scalar_int(1);
  ctorch_handle_scope s;
  long i;
  double t0 = bench_now();
  CHECKED(ctorch_handle_scope_enter(&s));
  for (i = 0; i < iters; ++i) {
    CHECKED(ctorch_add_Tensor(&r, a, b, one));
    if (i % 64 == 63) {
      CHECKED(ctorch_handle_scope_leave(s));
      CHECKED(ctorch_handle_scope_enter(&s));
    }
  }
  CHECKED(ctorch_handle_scope_leave(s));
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
