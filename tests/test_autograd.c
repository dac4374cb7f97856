/* Autograd from C: gradients against hand-computed derivatives and central
 * finite differences in double precision (gradcheck-style), higher order
 * through create_graph, grad-mode scopes, and custom C functions. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>

#include "check_main.h"

static ctorch_tensor dvec(const double *v, int64_t n) {
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_from_data(&t, v, (size_t)n * sizeof(double), &n, 1, CTORCH_FLOAT64));
  return t;
}

static ctorch_tensor leaf(const double *v, int64_t n) {
  ctorch_tensor t = dvec(v, n);
  CT_OK(ctorch_tensor_set_requires_grad(t, 1));
  return t;
}

static double item(ctorch_tensor t) {
  double d = 0;
  CT_OK(ctorch_tensor_item_double(&d, t));
  return d;
}

static void values(ctorch_tensor t, double *out, size_t n) { CT_OK(ctorch_tensor_copy_to(out, n * sizeof(double), t)); }

static ctorch_tensor mul(ctorch_tensor a, ctorch_tensor b) {
  ctorch_tensor r = NULL;
  CT_OK(ctorch_mul_Tensor(&r, a, b));
  return r;
}
static ctorch_tensor sum(ctorch_tensor a) {
  ctorch_tensor r = NULL;
  CT_OK(ctorch_sum(&r, a, NULL));
  return r;
}

/* f(x) = sum(sin(x) * x): f' = cos(x) x + sin(x); f'' = 2 cos(x) - x sin(x) */
static ctorch_tensor f_sinx_x(ctorch_tensor x) {
  ctorch_tensor s = NULL, p, r;
  CT_OK(ctorch_sin(&s, x));
  p = mul(s, x);
  r = sum(p);
  ctorch_tensor_free(s);
  ctorch_tensor_free(p);
  return r;
}

#define N 4
static const double X[N] = {0.3, -1.2, 2.0, 0.75};

START_TEST(leaf_properties_and_backward) {
  ctorch_tensor x = dvec(X, N), y, l, g = NULL, d = NULL;
  int v = -1;
  double gv[N];
  const char *name = NULL;
  int i;
  CT_OK(ctorch_tensor_requires_grad(&v, x));
  ck_assert_int_eq(v, 0);
  CT_OK(ctorch_tensor_set_requires_grad(x, 1));
  CT_OK(ctorch_tensor_requires_grad(&v, x));
  ck_assert_int_eq(v, 1);
  CT_OK(ctorch_tensor_is_leaf(&v, x));
  ck_assert_int_eq(v, 1);
  CT_OK(ctorch_tensor_grad(&g, x));
  ck_assert_ptr_null(g);
  y = mul(x, x);
  CT_OK(ctorch_tensor_is_leaf(&v, y));
  ck_assert_int_eq(v, 0);
  CT_OK(ctorch_tensor_grad_fn_name(&name, y));
  ck_assert_str_eq(name, "MulBackward0");
  CT_OK(ctorch_tensor_grad_fn_name(&name, x));
  ck_assert_str_eq(name, "");
  /* turning requires_grad off on a non-leaf is refused */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_set_requires_grad(y, 0));
  CT_ERROR_HAS("ctorch_tensor_set_requires_grad");
  l = sum(y);
  CT_OK(ctorch_tensor_backward(l, NULL, 0, 0, NULL, 0));
  CT_OK(ctorch_tensor_grad(&g, x));
  values(g, gv, N);
  for (i = 0; i < N; ++i) ck_assert(fabs(gv[i] - 2 * X[i]) < 1e-15);
  ctorch_tensor_free(g);
  /* the graph is freed: a second backward fails with a status, not a crash */
  ck_assert_int_ne(ctorch_tensor_backward(l, NULL, 0, 0, NULL, 0), CTORCH_OK);
  CT_ERROR_HAS("ctorch_tensor_backward");
  /* detach shares data but leaves the graph */
  CT_OK(ctorch_tensor_detach(&d, y));
  CT_OK(ctorch_tensor_requires_grad(&v, d));
  ck_assert_int_eq(v, 0);
  CT_OK(ctorch_tensor_is_leaf(&v, d));
  ck_assert_int_eq(v, 1);
  {
    void *pd = NULL, *py = NULL;
    CT_OK(ctorch_tensor_data_ptr(&pd, d));
    CT_OK(ctorch_tensor_data_ptr(&py, y));
    ck_assert_ptr_eq(pd, py);
  }
  /* a tensor with no graph cannot be differentiated */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_backward(d, NULL, 0, 0, NULL, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_backward(NULL, NULL, 0, 0, NULL, 0));
  ctorch_tensor_free(d);
  ctorch_tensor_free(l);
  ctorch_tensor_free(y);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(gradient_argument_retain_and_inputs) {
  static const double W[N] = {2, -1, 0.5, 3}, V[N] = {1, 10, 100, 1000};
  ctorch_tensor x = leaf(X, N), w = leaf(W, N), v = dvec(V, N), y, g = NULL;
  double gv[N];
  int i;
  y = mul(x, w);
  /* non-scalar output without a gradient is refused */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_backward(y, NULL, 1, 0, NULL, 0));
  CT_ERROR_HAS("gradient");
  CT_OK(ctorch_tensor_backward(y, v, 1, 0, NULL, 0));
  CT_OK(ctorch_tensor_backward(y, v, 1, 0, NULL, 0)); /* retained: accumulates */
  CT_OK(ctorch_tensor_grad(&g, x));
  values(g, gv, N);
  for (i = 0; i < N; ++i) ck_assert(fabs(gv[i] - 2 * V[i] * W[i]) < 1e-12);
  ctorch_tensor_free(g);
  CT_OK(ctorch_tensor_grad(&g, w));
  values(g, gv, N);
  for (i = 0; i < N; ++i) ck_assert(fabs(gv[i] - 2 * V[i] * X[i]) < 1e-12);
  ctorch_tensor_free(g);
  /* only `inputs` receive gradients */
  CT_OK(ctorch_tensor_zero_grad(x, 1));
  CT_OK(ctorch_tensor_zero_grad(w, 0));
  CT_OK(ctorch_tensor_backward(y, v, 0, 0, &w, 1));
  CT_OK(ctorch_tensor_grad(&g, x));
  ck_assert_ptr_null(g);
  CT_OK(ctorch_tensor_grad(&g, w));
  values(g, gv, N);
  for (i = 0; i < N; ++i) ck_assert(fabs(gv[i] - V[i] * X[i]) < 1e-12);
  ctorch_tensor_free(g);
  ctorch_tensor_free(y);
  ctorch_tensor_free(x);
  ctorch_tensor_free(w);
  ctorch_tensor_free(v);
}
END_TEST

START_TEST(grad_set_zero_and_retain_grad) {
  static const double G[N] = {1, 2, 3, 4};
  static const double BAD[2] = {1, 2};
  ctorch_tensor x = leaf(X, N), gt = dvec(G, N), bad = dvec(BAD, 2), g = NULL, z, l;
  double gv[N];
  int v = 0, i;
  int32_t iv[N] = {1, 2, 3, 4};
  ctorch_tensor it = NULL;
  int64_t n = N;
  CT_OK(ctorch_tensor_set_grad(x, gt));
  CT_OK(ctorch_tensor_grad(&g, x));
  values(g, gv, N);
  for (i = 0; i < N; ++i) ck_assert(gv[i] == G[i]);
  ctorch_tensor_free(g);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_set_grad(x, bad));
  CT_OK(ctorch_tensor_from_data(&it, iv, sizeof iv, &n, 1, CTORCH_INT32));
  CT_FAILS(CTORCH_TYPE, ctorch_tensor_set_grad(x, it));
  CT_OK(ctorch_tensor_zero_grad(x, 0));
  CT_OK(ctorch_tensor_grad(&g, x));
  values(g, gv, N);
  for (i = 0; i < N; ++i) ck_assert(gv[i] == 0);
  ctorch_tensor_free(g);
  CT_OK(ctorch_tensor_set_grad(x, NULL));
  CT_OK(ctorch_tensor_grad(&g, x));
  ck_assert_ptr_null(g);
  /* retain_grad on an intermediate */
  z = mul(x, x);
  CT_OK(ctorch_tensor_retains_grad(&v, z));
  ck_assert_int_eq(v, 0);
  CT_OK(ctorch_tensor_retain_grad(z));
  CT_OK(ctorch_tensor_retains_grad(&v, z));
  ck_assert_int_eq(v, 1);
  l = sum(z);
  CT_OK(ctorch_tensor_backward(l, NULL, 0, 0, NULL, 0));
  CT_OK(ctorch_tensor_grad(&g, z));
  ck_assert_ptr_nonnull(g);
  values(g, gv, N);
  for (i = 0; i < N; ++i) ck_assert(gv[i] == 1);
  ctorch_tensor_free(g);
  ctorch_tensor_free(l);
  ctorch_tensor_free(z);
  ctorch_tensor_free(x);
  ctorch_tensor_free(gt);
  ctorch_tensor_free(bad);
  ctorch_tensor_free(it);
}
END_TEST

/* Central differences of scalar function f at x (double). */
static void numeric_grad(ctorch_tensor (*f)(ctorch_tensor), const double *x, int64_t n, double *out) {
  const double h = 1e-6;
  double buf[16];
  int64_t i;
  for (i = 0; i < n; ++i) {
    ctorch_tensor t, y;
    double fp, fm;
    memcpy(buf, x, (size_t)n * sizeof(double));
    buf[i] = x[i] + h;
    t = dvec(buf, n);
    y = f(t);
    fp = item(y);
    ctorch_tensor_free(t);
    ctorch_tensor_free(y);
    buf[i] = x[i] - h;
    t = dvec(buf, n);
    y = f(t);
    fm = item(y);
    ctorch_tensor_free(t);
    ctorch_tensor_free(y);
    out[i] = (fp - fm) / (2 * h);
  }
}

/* df/dx as a differentiable tensor (create_graph), for finite differences of f'. */
static ctorch_tensor sum_of_grad(ctorch_tensor x0) {
  ctorch_tensor x = NULL, y, g = NULL, r;
  ctorch_tensor_list gl = NULL;
  CT_OK(ctorch_tensor_detach(&x, x0));
  CT_OK(ctorch_tensor_set_requires_grad(x, 1));
  y = f_sinx_x(x);
  CT_OK(ctorch_autograd_grad(&gl, &y, 1, &x, 1, NULL, 0, 0, 0, 0));
  CT_OK(ctorch_tensor_list_get(&g, gl, 0));
  r = sum(g);
  ctorch_tensor_list_free(gl);
  ctorch_tensor_free(g);
  ctorch_tensor_free(y);
  ctorch_tensor_free(x);
  return r;
}

START_TEST(grad_first_and_second_order) {
  ctorch_tensor x = leaf(X, N), y, g1 = NULL, g2 = NULL, s, none = NULL;
  ctorch_tensor_list l1 = NULL, l2 = NULL;
  double a1[N], a2[N], n1[N], n2[N];
  int i;
  size_t len = 0;
  y = f_sinx_x(x);
  CT_OK(ctorch_autograd_grad(&l1, &y, 1, &x, 1, NULL, 0, 1, 1, 0));
  CT_OK(ctorch_tensor_list_size(&len, l1));
  ck_assert_uint_eq(len, 1);
  CT_OK(ctorch_tensor_list_get(&g1, l1, 0));
  values(g1, a1, N);
  /* .grad is untouched by grad() */
  CT_OK(ctorch_tensor_grad(&none, x));
  ck_assert_ptr_null(none);
  numeric_grad(f_sinx_x, X, N, n1);
  for (i = 0; i < N; ++i) {
    double hand = cos(X[i]) * X[i] + sin(X[i]);
    ck_assert_msg(fabs(a1[i] - hand) < 1e-12, "f' at %d: %.17g vs hand %.17g", i, a1[i], hand);
    ck_assert_msg(fabs(a1[i] - n1[i]) < 1e-7, "f' at %d: %.17g vs numeric %.17g", i, a1[i], n1[i]);
  }
  /* second order: d/dx sum(f'(x)) = f''(x) elementwise */
  s = sum(g1);
  CT_OK(ctorch_autograd_grad(&l2, &s, 1, &x, 1, NULL, 0, 1, 0, 0));
  CT_OK(ctorch_tensor_list_get(&g2, l2, 0));
  values(g2, a2, N);
  numeric_grad(sum_of_grad, X, N, n2);
  for (i = 0; i < N; ++i) {
    double hand = 2 * cos(X[i]) - X[i] * sin(X[i]);
    ck_assert_msg(fabs(a2[i] - hand) < 1e-12, "f'' at %d: %.17g vs hand %.17g", i, a2[i], hand);
    ck_assert_msg(fabs(a2[i] - n2[i]) < 1e-6, "f'' at %d: %.17g vs numeric %.17g", i, a2[i], n2[i]);
  }
  /* backward(create_graph) then differentiate .grad again */
  CT_OK(ctorch_tensor_backward(y, NULL, 1, 1, NULL, 0)); /* as PyTorch: retain_graph defaults to create_graph */
  {
    ctorch_tensor gx = NULL, gs, gg = NULL;
    ctorch_tensor_list l3 = NULL;
    double a3[N];
    int rg = 0;
    CT_OK(ctorch_tensor_grad(&gx, x));
    CT_OK(ctorch_tensor_requires_grad(&rg, gx));
    ck_assert_int_eq(rg, 1);
    gs = sum(gx);
    CT_OK(ctorch_autograd_grad(&l3, &gs, 1, &x, 1, NULL, 0, 0, 0, 0));
    CT_OK(ctorch_tensor_list_get(&gg, l3, 0));
    values(gg, a3, N);
    for (i = 0; i < N; ++i) ck_assert(fabs(a3[i] - a2[i]) < 1e-12);
    ctorch_tensor_list_free(l3);
    ctorch_tensor_free(gg);
    ctorch_tensor_free(gs);
    ctorch_tensor_free(gx);
    CT_OK(ctorch_tensor_set_grad(x, NULL)); /* break the x -> grad -> x cycle */
  }
  ctorch_tensor_list_free(l1);
  ctorch_tensor_list_free(l2);
  ctorch_tensor_free(g1);
  ctorch_tensor_free(g2);
  ctorch_tensor_free(s);
  ctorch_tensor_free(y);
  ctorch_tensor_free(x);
}
END_TEST

/* g(x) = sum(tanh(W x) * c) for a 3x4 W: a multi-op chain checked element by element. */
static ctorch_tensor g_W = NULL, g_c = NULL;
static ctorch_tensor g_tanh_mv(ctorch_tensor x) {
  ctorch_tensor m = NULL, t = NULL, p, r;
  CT_OK(ctorch_mv(&m, g_W, x));
  CT_OK(ctorch_tanh(&t, m));
  p = mul(t, g_c);
  r = sum(p);
  ctorch_tensor_free(m);
  ctorch_tensor_free(t);
  ctorch_tensor_free(p);
  return r;
}

START_TEST(gradcheck_chain_and_grad_outputs) {
  static const double W[12] = {0.1, -0.4, 0.7, 0.2, -0.3, 0.5, 0.05, -0.6, 0.9, 0.1, -0.2, 0.3};
  static const double C[3] = {1.5, -2.0, 0.7};
  int64_t ws[2] = {3, 4};
  ctorch_tensor x = leaf(X, N), y, g = NULL, unused = leaf(C, 3), e = NULL;
  ctorch_tensor_list l = NULL;
  double a[N], num[N];
  int i;
  CT_OK(ctorch_tensor_from_data(&g_W, W, sizeof W, ws, 2, CTORCH_FLOAT64));
  g_c = dvec(C, 3);
  y = g_tanh_mv(x);
  CT_OK(ctorch_autograd_grad(&l, &y, 1, &x, 1, NULL, 0, 1, 0, 0));
  CT_OK(ctorch_tensor_list_get(&g, l, 0));
  values(g, a, N);
  numeric_grad(g_tanh_mv, X, N, num);
  for (i = 0; i < N; ++i) ck_assert_msg(fabs(a[i] - num[i]) < 1e-7, "%d: %.17g vs %.17g", i, a[i], num[i]);
  ctorch_tensor_list_free(l);
  ctorch_tensor_free(g);
  /* an input the output does not depend on */
  ctorch_tensor ins[2];
  ins[0] = x;
  ins[1] = unused;
  ck_assert_int_ne(ctorch_autograd_grad(&l, &y, 1, ins, 2, NULL, 0, 1, 0, 0), CTORCH_OK);
  ck_assert_ptr_null(l);
  CT_OK(ctorch_autograd_grad(&l, &y, 1, ins, 2, NULL, 0, 1, 0, 1));
  CT_OK(ctorch_tensor_list_get(&e, l, 1));
  ck_assert_ptr_null(e);
  ctorch_tensor_list_free(l);
  /* explicit grad_outputs scale the result */
  {
    double two = 2.0, b[N];
    ctorch_tensor go;
    int64_t zero = 0;
    CT_OK(ctorch_tensor_from_data(&go, &two, sizeof two, &zero, 0, CTORCH_FLOAT64));
    CT_OK(ctorch_autograd_grad(&l, &y, 1, &x, 1, &go, 1, 1, 0, 0));
    CT_OK(ctorch_tensor_list_get(&g, l, 0));
    values(g, b, N);
    for (i = 0; i < N; ++i) ck_assert(fabs(b[i] - 2 * a[i]) < 1e-12);
    ctorch_tensor_list_free(l);
    ctorch_tensor_free(g);
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_grad(&l, &y, 1, &x, 1, &go, 2, 1, 0, 0));
    ctorch_tensor_free(go);
  }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_grad(&l, &y, 1, NULL, 0, NULL, 0, 1, 0, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_grad(NULL, &y, 1, &x, 1, NULL, 0, 1, 0, 0));
  ctorch_tensor_free(y);
  ctorch_tensor_free(x);
  ctorch_tensor_free(unused);
  ctorch_tensor_free(g_W);
  ctorch_tensor_free(g_c);
}
END_TEST

/* ---- scopes ---------------------------------------------------------------- */

static int grad_enabled(void) {
  int v = -1;
  CT_OK(ctorch_autograd_is_grad_enabled(&v));
  return v;
}

static int requires(ctorch_tensor t) {
  int v = -1;
  CT_OK(ctorch_tensor_requires_grad(&v, t));
  return v;
}

static void *leave_elsewhere(void *arg) {
  ctorch_status st = ctorch_autograd_scope_leave((ctorch_autograd_scope)arg);
  int enabled = -1;
  ctorch_autograd_is_grad_enabled(&enabled);
  /* this thread's own mode is untouched by the other thread's scope */
  return (void *)(intptr_t)(st == CTORCH_RUNTIME && enabled == 1 ? 1 : 0);
}

/* Every order of leaving three nested scopes (as a binding's destructors
 * may run them): each leave succeeds and releases its handle (no leak under
 * the sanitizer build), and once all are left grad mode is back on. While
 * the innermost still-open scope is open, its mode is in force. */
START_TEST(scopes_leave_in_any_order) {
  static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  static const ctorch_autograd_scope_kind kinds[3] = {CTORCH_SCOPE_NO_GRAD, CTORCH_SCOPE_ENABLE_GRAD,
                                                      CTORCH_SCOPE_NO_GRAD};
  for (int o = 0; o < 6; ++o) {
    ctorch_autograd_scope s[3];
    int open[3] = {1, 1, 1};
    for (int k = 0; k < 3; ++k) CT_OK(ctorch_autograd_scope_enter(&s[k], kinds[k]));
    ck_assert_int_eq(grad_enabled(), 0);
    for (int j = 0; j < 3; ++j) {
      int k = orders[o][j];
      CT_OK(ctorch_autograd_scope_leave(s[k]));
      open[k] = 0;
      /* the mode of the innermost scope not yet left, or on when none is */
      int inner = -1;
      for (int q = 0; q < 3; ++q)
        if (open[q]) inner = q;
      ck_assert_int_eq(grad_enabled(), inner < 0 ? 1 : (kinds[inner] == CTORCH_SCOPE_ENABLE_GRAD));
    }
    ck_assert_int_eq(grad_enabled(), 1);
  }
}
END_TEST

START_TEST(scopes_nest_and_restore) {
  ctorch_tensor x = leaf(X, N), y;
  ctorch_autograd_scope ng = NULL, eg = NULL, inf = NULL;
  int v = 0;
  ck_assert_int_eq(grad_enabled(), 1);
  CT_OK(ctorch_autograd_scope_enter(&ng, CTORCH_SCOPE_NO_GRAD));
  ck_assert_int_eq(grad_enabled(), 0);
  y = mul(x, x);
  ck_assert_int_eq(requires(y), 0);
  ctorch_tensor_free(y);
  CT_OK(ctorch_autograd_scope_enter(&eg, CTORCH_SCOPE_ENABLE_GRAD));
  ck_assert_int_eq(grad_enabled(), 1);
  y = mul(x, x);
  ck_assert_int_eq(requires(y), 1);
  ctorch_tensor_free(y);
  /* out of order: released at once, the inner scope's mode stays in force */
  CT_OK(ctorch_autograd_scope_leave(ng));
  ck_assert_int_eq(grad_enabled(), 1);
  /* leaving the inner one restores the mode from before both */
  CT_OK(ctorch_autograd_scope_leave(eg));
  ck_assert_int_eq(grad_enabled(), 1);
  CT_OK(ctorch_autograd_scope_enter(&ng, CTORCH_SCOPE_NO_GRAD));
  CT_OK(ctorch_autograd_scope_enter(&eg, CTORCH_SCOPE_ENABLE_GRAD));
  /* from another thread: CTORCH_RUNTIME, the handle released, this thread's
   * mode unchanged until its next scope call, which closes it */
  {
    pthread_t th;
    void *ok = NULL;
    ck_assert_int_eq(pthread_create(&th, NULL, leave_elsewhere, eg), 0);
    ck_assert_int_eq(pthread_join(th, &ok), 0);
    ck_assert_msg(ok == (void *)1, "leaving on another thread did not fail cleanly");
  }
  ck_assert_int_eq(grad_enabled(), 1);
  CT_OK(ctorch_autograd_scope_leave(ng)); /* closes eg (left elsewhere), then ng */
  ck_assert_int_eq(grad_enabled(), 1);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_scope_leave(NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_scope_enter(&ng, (ctorch_autograd_scope_kind)5));
  /* inference mode */
  CT_OK(ctorch_autograd_is_inference_mode(&v));
  ck_assert_int_eq(v, 0);
  CT_OK(ctorch_autograd_scope_enter(&inf, CTORCH_SCOPE_INFERENCE_MODE));
  CT_OK(ctorch_autograd_is_inference_mode(&v));
  ck_assert_int_eq(v, 1);
  ck_assert_int_eq(grad_enabled(), 0);
  y = mul(x, x);
  ck_assert_int_eq(requires(y), 0);
  CT_OK(ctorch_tensor_is_inference(&v, y));
  ck_assert_int_eq(v, 1);
  CT_OK(ctorch_autograd_scope_leave(inf));
  CT_OK(ctorch_autograd_is_inference_mode(&v));
  ck_assert_int_eq(v, 0);
  ck_assert_int_eq(grad_enabled(), 1);
  CT_OK(ctorch_tensor_is_inference(&v, x));
  ck_assert_int_eq(v, 0);
  ctorch_tensor_free(y);
  ctorch_tensor_free(x);
}
END_TEST

/* ---- custom functions ------------------------------------------------------ */

typedef struct {
  int forward_calls, backward_calls, released;
  int fail_forward, fail_backward;
  int needs_grad[2];
} counters;

static void release_counters(void *p) { ((counters *)p)->released++; }

/* cube(x) = x^3, saving x; backward = g * 3 x^2 written with differentiable ops */
static ctorch_status cube_forward(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *in, size_t n_in,
                                  ctorch_tensor *out, size_t n_out) {
  counters *c = ud;
  ctorch_status st;
  c->forward_calls++;
  if (n_in != 1 || n_out != 1) return ctorch_autograd_ctx_set_error(ctx, "cube takes one input"), CTORCH_VALUE;
  if (c->fail_forward) {
    ctorch_autograd_ctx_set_error(ctx, "cube refuses on purpose");
    return CTORCH_VALUE;
  }
  st = ctorch_pow_Tensor_Scalar(&out[0], in[0], ctorch_scalar_float(3.0));
  if (st != CTORCH_OK) return st;
  return ctorch_autograd_ctx_save_for_backward(ctx, in, 1);
}

static ctorch_status cube_backward(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *gout, size_t n_out,
                                   ctorch_tensor *gin, size_t n_in) {
  counters *c = ud;
  ctorch_tensor_list saved = NULL;
  ctorch_tensor x = NULL, x2 = NULL, t = NULL;
  ctorch_status st;
  int need = -1;
  (void)n_out;
  (void)n_in;
  c->backward_calls++;
  if (c->fail_backward) /* fail through a real failing ctorch call: its message must come through */
    return ctorch_tensor_list_get(&x, NULL, 0);
  if ((st = ctorch_autograd_ctx_needs_input_grad(&need, ctx, 0)) != CTORCH_OK) return st;
  c->needs_grad[0] = need;
  if ((st = ctorch_autograd_ctx_saved_tensors(&saved, ctx)) != CTORCH_OK) return st;
  st = ctorch_tensor_list_get(&x, saved, 0);
  if (st == CTORCH_OK) st = ctorch_mul_Tensor(&x2, x, x);
  if (st == CTORCH_OK) st = ctorch_mul_Scalar(&t, x2, ctorch_scalar_float(3.0));
  if (st == CTORCH_OK) st = ctorch_mul_Tensor(&gin[0], t, gout[0]);
  ctorch_tensor_list_free(saved);
  ctorch_tensor_free(x);
  ctorch_tensor_free(x2);
  ctorch_tensor_free(t);
  return st;
}

static counters cube_counters;
static ctorch_tensor cube_sum(ctorch_tensor x) {
  ctorch_tensor y = NULL, s;
  CT_OK(ctorch_autograd_function_apply(&y, 1, cube_forward, cube_backward, &cube_counters, NULL, &x, 1));
  s = sum(y);
  ctorch_tensor_free(y);
  return s;
}

START_TEST(custom_function_first_and_second_order) {
  counters c;
  ctorch_tensor x = leaf(X, N), y = NULL, s, g = NULL, g2 = NULL, gs;
  ctorch_tensor_list l = NULL, l2 = NULL;
  double yv[N], a[N], num[N], a2[N];
  const char *name = NULL;
  int i;
  memset(&c, 0, sizeof c);
  CT_OK(ctorch_autograd_function_apply(&y, 1, cube_forward, cube_backward, &c, release_counters, &x, 1));
  ck_assert_int_eq(c.forward_calls, 1);
  ck_assert_int_eq(c.released, 0);
  ck_assert_int_eq(requires(y), 1);
  CT_OK(ctorch_tensor_grad_fn_name(&name, y));
  ck_assert_ptr_nonnull(name);
  ck_assert(name[0] != 0);
  values(y, yv, N);
  for (i = 0; i < N; ++i) ck_assert(fabs(yv[i] - X[i] * X[i] * X[i]) < 1e-15);
  s = sum(y);
  CT_OK(ctorch_autograd_grad(&l, &s, 1, &x, 1, NULL, 0, 1, 1, 0));
  ck_assert_int_eq(c.backward_calls, 1);
  ck_assert_int_eq(c.needs_grad[0], 1);
  CT_OK(ctorch_tensor_list_get(&g, l, 0));
  values(g, a, N);
  memset(&cube_counters, 0, sizeof cube_counters);
  numeric_grad(cube_sum, X, N, num);
  for (i = 0; i < N; ++i) {
    ck_assert(fabs(a[i] - 3 * X[i] * X[i]) < 1e-12);
    ck_assert_msg(fabs(a[i] - num[i]) < 1e-6, "%d: %.17g vs numeric %.17g", i, a[i], num[i]);
  }
  /* second order through the C backward: d/dx sum(3x^2) = 6x */
  gs = sum(g);
  CT_OK(ctorch_autograd_grad(&l2, &gs, 1, &x, 1, NULL, 0, 0, 0, 0));
  CT_OK(ctorch_tensor_list_get(&g2, l2, 0));
  values(g2, a2, N);
  for (i = 0; i < N; ++i) ck_assert_msg(fabs(a2[i] - 6 * X[i]) < 1e-12, "%d: %.17g", i, a2[i]);
  /* backward() fills x.grad through the custom node too */
  CT_OK(ctorch_tensor_backward(s, NULL, 0, 0, NULL, 0));
  {
    ctorch_tensor xg = NULL;
    double b[N];
    CT_OK(ctorch_tensor_grad(&xg, x));
    values(xg, b, N);
    for (i = 0; i < N; ++i) ck_assert(fabs(b[i] - 3 * X[i] * X[i]) < 1e-12);
    ctorch_tensor_free(xg);
  }
  ctorch_tensor_list_free(l);
  ctorch_tensor_list_free(l2);
  ctorch_tensor_free(g);
  ctorch_tensor_free(g2);
  ctorch_tensor_free(gs);
  ck_assert_int_eq(c.released, 0);
  /* dropping the last references to the graph releases user_data once */
  ctorch_tensor_free(s);
  ctorch_tensor_free(y);
  ck_assert_int_eq(c.released, 1);
  ctorch_tensor_free(x);
  ck_assert_int_eq(c.released, 1);
}
END_TEST

/* mix(a, b) = (a * b, a + b) with two inputs and two outputs */
static ctorch_status mix_forward(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *in, size_t n_in,
                                 ctorch_tensor *out, size_t n_out) {
  ctorch_status st;
  (void)ud;
  (void)n_in;
  (void)n_out;
  if ((st = ctorch_mul_Tensor(&out[0], in[0], in[1])) != CTORCH_OK) return st;
  if ((st = ctorch_add_Tensor(&out[1], in[0], in[1], ctorch_scalar_int(1))) != CTORCH_OK) return st;
  return ctorch_autograd_ctx_save_for_backward(ctx, in, 2);
}

static ctorch_status mix_backward(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *gout, size_t n_out,
                                  ctorch_tensor *gin, size_t n_in) {
  counters *c = ud;
  ctorch_tensor_list saved = NULL;
  ctorch_tensor a = NULL, b = NULL, t = NULL;
  ctorch_status st;
  (void)n_out;
  (void)n_in;
  ctorch_autograd_ctx_needs_input_grad(&c->needs_grad[0], ctx, 0);
  ctorch_autograd_ctx_needs_input_grad(&c->needs_grad[1], ctx, 1);
  if ((st = ctorch_autograd_ctx_saved_tensors(&saved, ctx)) != CTORCH_OK) return st;
  ctorch_tensor_list_get(&a, saved, 0);
  ctorch_tensor_list_get(&b, saved, 1);
  ctorch_tensor_list_free(saved);
  /* only the inputs that need a gradient get one */
  if (c->needs_grad[0]) {
    if ((st = ctorch_mul_Tensor(&t, gout[0], b)) == CTORCH_OK) st = ctorch_add_Tensor(&gin[0], t, gout[1], ctorch_scalar_int(1));
    ctorch_tensor_free(t);
    t = NULL;
  }
  if (st == CTORCH_OK && c->needs_grad[1]) {
    if ((st = ctorch_mul_Tensor(&t, gout[0], a)) == CTORCH_OK) st = ctorch_add_Tensor(&gin[1], t, gout[1], ctorch_scalar_int(1));
    ctorch_tensor_free(t);
  }
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  return st;
}

START_TEST(custom_function_two_in_two_out) {
  static const double B[N] = {2, -3, 0.5, 1};
  static const double V0[N] = {1, 2, 3, 4}, V1[N] = {-1, 0.5, 0.25, 2};
  counters c;
  ctorch_tensor a = leaf(X, N), b = dvec(B, N), outs[2] = {NULL, NULL}, ins[2], v0 = dvec(V0, N), v1 = dvec(V1, N),
                l0, l1, tot = NULL, g = NULL;
  double ga[N];
  int i;
  memset(&c, 0, sizeof c);
  ins[0] = a;
  ins[1] = b; /* b does not require grad */
  CT_OK(ctorch_autograd_function_apply(outs, 2, mix_forward, mix_backward, &c, release_counters, ins, 2));
  /* loss = sum(out0 * v0) + sum(out1 * v1): dL/da = v0 * b + v1 */
  {
    ctorch_tensor p0 = mul(outs[0], v0), p1 = mul(outs[1], v1);
    l0 = sum(p0);
    l1 = sum(p1);
    ctorch_tensor_free(p0);
    ctorch_tensor_free(p1);
  }
  CT_OK(ctorch_add_Tensor(&tot, l0, l1, ctorch_scalar_int(1)));
  CT_OK(ctorch_tensor_backward(tot, NULL, 0, 0, NULL, 0));
  ck_assert_int_eq(c.needs_grad[0], 1);
  ck_assert_int_eq(c.needs_grad[1], 0);
  CT_OK(ctorch_tensor_grad(&g, a));
  values(g, ga, N);
  for (i = 0; i < N; ++i) ck_assert(fabs(ga[i] - (V0[i] * B[i] + V1[i])) < 1e-12);
  ctorch_tensor_free(g);
  ctorch_tensor_free(l0);
  ctorch_tensor_free(l1);
  ctorch_tensor_free(tot);
  ctorch_tensor_free(outs[0]);
  ctorch_tensor_free(outs[1]);
  ck_assert_int_eq(c.released, 1);
  /* without any input requiring grad no node is kept: released at once */
  memset(&c, 0, sizeof c);
  ins[0] = b;
  CT_OK(ctorch_autograd_function_apply(outs, 2, mix_forward, mix_backward, &c, release_counters, ins, 2));
  ck_assert_int_eq(c.released, 1);
  ck_assert_int_eq(requires(outs[0]), 0);
  ctorch_tensor_free(outs[0]);
  ctorch_tensor_free(outs[1]);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(v0);
  ctorch_tensor_free(v1);
}
END_TEST

START_TEST(custom_function_errors_propagate) {
  counters c;
  ctorch_tensor x = leaf(X, N), y = (ctorch_tensor)1, s;
  memset(&c, 0, sizeof c);
  c.fail_forward = 1;
  CT_FAILS(CTORCH_VALUE, ctorch_autograd_function_apply(&y, 1, cube_forward, cube_backward, &c, release_counters, &x, 1));
  CT_ERROR_HAS("cube refuses on purpose");
  CT_ERROR_HAS("ctorch_autograd_function_apply");
  ck_assert_ptr_null(y);
  ck_assert_int_eq(c.released, 1);
  /* a failing backward: the status and message of the failing call inside come out of backward() */
  memset(&c, 0, sizeof c);
  c.fail_backward = 1;
  CT_OK(ctorch_autograd_function_apply(&y, 1, cube_forward, cube_backward, &c, release_counters, &x, 1));
  s = sum(y);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_backward(s, NULL, 1, 0, NULL, 0));
  CT_ERROR_HAS("backward callback");
  CT_ERROR_HAS("ctorch_tensor_list_get");
  CT_ERROR_HAS("ctorch_tensor_backward");
  /* the process goes on and the node still works once the callback does */
  c.fail_backward = 0;
  CT_OK(ctorch_tensor_backward(s, NULL, 0, 0, NULL, 0));
  ctorch_tensor_free(s);
  ctorch_tensor_free(y);
  ck_assert_int_eq(c.released, 1);
  /* argument checks */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_function_apply(&y, 1, NULL, cube_backward, &c, NULL, &x, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_function_apply(&y, 0, cube_forward, cube_backward, &c, NULL, &x, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_ctx_save_for_backward(NULL, &x, 1));
  ctorch_tensor_free(x);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("autograd");
  TCase *tc = tcase_create("autograd");
  tcase_add_test(tc, leaf_properties_and_backward);
  tcase_add_test(tc, gradient_argument_retain_and_inputs);
  tcase_add_test(tc, grad_set_zero_and_retain_grad);
  tcase_add_test(tc, grad_first_and_second_order);
  tcase_add_test(tc, gradcheck_chain_and_grad_outputs);
  tcase_add_test(tc, scopes_nest_and_restore);
  tcase_add_test(tc, scopes_leave_in_any_order);
  tcase_add_test(tc, custom_function_first_and_second_order);
  tcase_add_test(tc, custom_function_two_in_two_out);
  tcase_add_test(tc, custom_function_errors_propagate);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
