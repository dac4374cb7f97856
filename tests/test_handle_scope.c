/* Handle scopes (ctorch_handle_scope_*): what a scope records and frees,
 * nesting, keep, frees inside a scope, leaving out of order or from the
 * wrong thread, autograd through kept handles, custom functions whose
 * outputs ctorch takes over, and no leak (native CPU bytes come back). */
#include <math.h>
#include <pthread.h>

#include "check_main.h"

/* 1 MiB of float32 zeros: big enough that a leak shows in ctorch_memory_bytes. */
#define BIG 262144

static ctorch_tensor big(void) {
  const int64_t n = BIG;
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  ctorch_tensor t = NULL;
  CT_OK(ctorch_zeros(&t, &n, 1, &f32, NULL, NULL, NULL));
  return t;
}

static ctorch_tensor dvec(const double *v, int64_t n) {
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_from_data(&t, v, (size_t)n * sizeof(double), &n, 1, CTORCH_FLOAT64));
  return t;
}

static int64_t cpu_bytes(void) {
  int64_t b = -1;
  CT_OK(ctorch_memory_bytes(&b, CTORCH_DEVICE_CPU));
  return b;
}

/* Exactly one big() tensor alive since `before`: malloc's usable size is a
 * little more than the 1 MiB asked for, by an amount that varies. */
static void one_big_alive(int64_t before) {
  int64_t n = cpu_bytes() - before;
  ck_assert_msg(n >= BIG * 4 && n < BIG * 4 + 65536, "%lld bytes alive, not one 1 MiB tensor", (long long)n);
}

static size_t scope_size(void) {
  size_t n = 12345;
  CT_OK(ctorch_handle_scope_size(&n));
  return n;
}

/* Reads t's size: a freed handle would crash here (or in ASan builds, report). */
static int64_t numel(ctorch_tensor t) {
  int64_t n = -1;
  CT_OK(ctorch_tensor_numel(&n, t));
  return n;
}

static double item(ctorch_tensor t) {
  double d = 0;
  CT_OK(ctorch_tensor_item_double(&d, t));
  return d;
}

START_TEST(leave_frees_what_the_scope_recorded) {
  int64_t before = cpu_bytes();
  ctorch_handle_scope s = NULL;
  ctorch_tensor a, b, c = NULL, d = NULL;
  ck_assert_uint_eq(scope_size(), 0);
  CT_OK(ctorch_handle_scope_enter(&s));
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(scope_size(), 0);
  a = big();
  b = big();
  CT_OK(ctorch_add_Tensor(&c, a, b, ctorch_scalar_int(1)));
  /* a multi-output op records each handle */
  {
    ctorch_tensor v = NULL, i = NULL;
    CT_OK(ctorch_max_dim(&v, &i, c, 0, 0));
  }
  CT_OK(ctorch_tensor_clone(&d, c));
  ck_assert_uint_eq(scope_size(), 6);
  ck_assert_int_ge(cpu_bytes() - before, 4 * BIG * 4);
  CT_OK(ctorch_handle_scope_leave(s));
  ck_assert_uint_eq(scope_size(), 0);
  ck_assert_int_eq(cpu_bytes(), before);
}
END_TEST

START_TEST(argument_errors) {
  ctorch_handle_scope s = NULL, other = NULL;
  ctorch_tensor t = big();
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_handle_scope_enter(NULL));
  CT_ERROR_HAS("ctorch_handle_scope_enter");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_handle_scope_leave(NULL));
  CT_ERROR_HAS("ctorch_handle_scope_leave");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_handle_scope_size(NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_handle_scope_keep(NULL));
  CT_ERROR_HAS("argument 't'");
  /* never a scope: refused without being dereferenced */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_handle_scope_leave((ctorch_handle_scope)(uintptr_t)0x10));
  CT_ERROR_HAS("not a handle scope open on this thread");
  /* keep without any scope, or of a handle no scope recorded: no-op */
  CT_OK(ctorch_handle_scope_keep(t));
  CT_OK(ctorch_handle_scope_enter(&s));
  CT_OK(ctorch_handle_scope_keep(t));
  ck_assert_uint_eq(scope_size(), 0);
  CT_OK(ctorch_handle_scope_leave(s));
  /* twice: refused, and a scope opened since is not mistaken for it */
  CT_OK(ctorch_handle_scope_enter(&other));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_handle_scope_leave(s));
  CT_ERROR_HAS("left already");
  ck_assert_ptr_ne(s, other);
  CT_OK(ctorch_handle_scope_leave(other));
  /* t was made before any scope: still the caller's */
  ck_assert_int_eq(numel(t), BIG);
  ctorch_tensor_free(t);
}
END_TEST

START_TEST(nesting_and_keep) {
  int64_t before = cpu_bytes();
  ctorch_handle_scope outer = NULL, inner = NULL;
  ctorch_tensor a, b, c, e = NULL;
  CT_OK(ctorch_handle_scope_enter(&outer));
  a = big();
  CT_OK(ctorch_handle_scope_enter(&inner));
  ck_assert_uint_eq(scope_size(), 0); /* the innermost's count */
  b = big();
  c = big();
  ck_assert_uint_eq(scope_size(), 2);
  CT_OK(ctorch_handle_scope_keep(c)); /* to the outer scope */
  ck_assert_uint_eq(scope_size(), 1);
  CT_OK(ctorch_handle_scope_leave(inner));
  ck_assert_uint_eq(scope_size(), 2); /* a and c */
  CT_OK(ctorch_fill__Scalar(c, ctorch_scalar_float(2.0))); /* c is alive */
  CT_OK(ctorch_tensor_ref(&e, c)); /* a new handle to c's tensor */
  CT_ASSERT_SAME(e, c);
  ck_assert_uint_eq(scope_size(), 3);
  CT_OK(ctorch_handle_scope_keep(e)); /* one record out of all scopes: the caller's */
  ck_assert_uint_eq(scope_size(), 2);
  CT_OK(ctorch_handle_scope_keep(c)); /* and the other */
  ck_assert_uint_eq(scope_size(), 1);
  CT_OK(ctorch_handle_scope_leave(outer)); /* frees a */
  {
    ctorch_tensor m = NULL;
    CT_OK(ctorch_mean(&m, c, NULL));
    ck_assert_double_eq(item(m), 2.0);
    ctorch_tensor_free(m);
  }
  one_big_alive(before);
  ctorch_tensor_free(c);
  ctorch_tensor_free(e);
  (void)a;
  (void)b;
  ck_assert_int_eq(cpu_bytes(), before);
}
END_TEST

START_TEST(free_inside_a_scope_forgets_one_record) {
  int64_t before = cpu_bytes();
  ctorch_handle_scope s = NULL;
  ctorch_tensor x = big(), a = NULL, r1 = NULL, r2 = NULL;
  CT_OK(ctorch_handle_scope_enter(&s));
  a = big();
  ctorch_tensor_free(a); /* freed at once, forgotten: no double free at leave */
  ck_assert_uint_eq(scope_size(), 0);
  one_big_alive(before);
  /* two new handles to x's tensor: one record each */
  CT_OK(ctorch_tensor_ref(&r1, x));
  CT_OK(ctorch_tensor_contiguous(&r2, x));
  CT_ASSERT_SAME(r1, x);
  CT_ASSERT_SAME(r2, x);
  ck_assert_uint_eq(scope_size(), 2);
  ctorch_tensor_free(r1);
  ck_assert_uint_eq(scope_size(), 1);
  CT_OK(ctorch_handle_scope_leave(s)); /* drops r2's reference only */
  ck_assert_int_eq(numel(x), BIG); /* x still alive */
  one_big_alive(before);
  ctorch_tensor_free(x);
  ck_assert_int_eq(cpu_bytes(), before);
}
END_TEST

START_TEST(leaving_an_outer_scope_leaves_the_inner_ones) {
  int64_t before = cpu_bytes();
  ctorch_handle_scope s1 = NULL, s2 = NULL, s3 = NULL;
  CT_OK(ctorch_handle_scope_enter(&s1));
  (void)big();
  CT_OK(ctorch_handle_scope_enter(&s2));
  (void)big();
  CT_OK(ctorch_handle_scope_enter(&s3));
  (void)big();
  (void)big();
  CT_OK(ctorch_handle_scope_leave(s2)); /* leaves s3, then s2 */
  ck_assert_uint_eq(scope_size(), 1); /* s1's */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_handle_scope_leave(s3));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_handle_scope_leave(s2));
  one_big_alive(before);
  CT_OK(ctorch_handle_scope_leave(s1));
  ck_assert_int_eq(cpu_bytes(), before);
}
END_TEST

/* ---- threads ---- */

typedef struct {
  ctorch_handle_scope scope; /* in: a scope of the main thread */
  ctorch_status leave_status;
  size_t size_seen;          /* the thread's innermost scope size, seen from the thread */
  size_t size_own;           /* after making 3 tensors in its own scope */
  ctorch_tensor made;        /* a tensor made with no scope open on the thread */
  int leave_open;            /* exit with a scope still open */
} thread_args;

static void *other_thread(void *p) {
  thread_args *a = p;
  ctorch_handle_scope mine = NULL;
  if (a->scope) {
    a->leave_status = ctorch_handle_scope_leave(a->scope);
    return NULL;
  }
  a->size_seen = scope_size();
  a->made = big(); /* the main thread's scope does not record it */
  CT_OK(ctorch_handle_scope_enter(&mine));
  (void)big();
  (void)big();
  (void)big();
  a->size_own = scope_size();
  if (!a->leave_open) CT_OK(ctorch_handle_scope_leave(mine));
  return NULL;
}

START_TEST(leave_from_another_thread_is_refused) {
  int64_t before = cpu_bytes();
  ctorch_handle_scope s = NULL;
  pthread_t th;
  thread_args a;
  memset(&a, 0, sizeof a);
  CT_OK(ctorch_handle_scope_enter(&s));
  (void)big();
  a.scope = s;
  ck_assert_int_eq(pthread_create(&th, NULL, other_thread, &a), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_int_eq(a.leave_status, CTORCH_INVALID_ARGUMENT);
  ck_assert_uint_eq(scope_size(), 1); /* nothing freed */
  one_big_alive(before);
  CT_OK(ctorch_handle_scope_leave(s));
  ck_assert_int_eq(cpu_bytes(), before);
}
END_TEST

START_TEST(threads_are_independent) {
  int64_t before = cpu_bytes();
  ctorch_handle_scope s = NULL;
  pthread_t th;
  thread_args a;
  memset(&a, 0, sizeof a);
  CT_OK(ctorch_handle_scope_enter(&s));
  (void)big();
  ck_assert_int_eq(pthread_create(&th, NULL, other_thread, &a), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_uint_eq(a.size_seen, 0);
  ck_assert_uint_eq(a.size_own, 3);
  ck_assert_uint_eq(scope_size(), 1); /* not the other thread's handles */
  CT_OK(ctorch_handle_scope_leave(s));
  /* `made` was not recorded anywhere: still alive, the caller frees it */
  one_big_alive(before);
  ctorch_tensor_free(a.made);
  ck_assert_int_eq(cpu_bytes(), before);
}
END_TEST

START_TEST(a_thread_that_ends_leaves_its_scopes) {
  int64_t before = cpu_bytes();
  pthread_t th;
  thread_args a;
  memset(&a, 0, sizeof a);
  a.leave_open = 1;
  ck_assert_int_eq(pthread_create(&th, NULL, other_thread, &a), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_uint_eq(a.size_own, 3);
  one_big_alive(before); /* only `made` */
  ctorch_tensor_free(a.made);
  ck_assert_int_eq(cpu_bytes(), before);
}
END_TEST

/* ---- autograd ---- */

#define N 4
static const double X[N] = {0.3, -1.2, 2.0, 0.75};

START_TEST(backward_through_kept_handles) {
  ctorch_handle_scope s = NULL;
  ctorch_tensor x = dvec(X, N), y = NULL, z = NULL, l = NULL, g = NULL;
  double gv[N];
  int i;
  CT_OK(ctorch_tensor_set_requires_grad(x, 1));
  CT_OK(ctorch_handle_scope_enter(&s));
  CT_OK(ctorch_sin(&y, x));
  CT_OK(ctorch_mul_Tensor(&z, y, x));
  CT_OK(ctorch_sum(&l, z, NULL));
  CT_OK(ctorch_handle_scope_keep(l));
  CT_OK(ctorch_handle_scope_leave(s)); /* y and z go; the graph keeps what backward needs */
  CT_OK(ctorch_tensor_backward(l, NULL, 0, 0, NULL, 0));
  CT_OK(ctorch_tensor_grad(&g, x));
  CT_OK(ctorch_tensor_copy_to(gv, sizeof gv, g));
  for (i = 0; i < N; ++i) ck_assert(fabs(gv[i] - (cos(X[i]) * X[i] + sin(X[i]))) < 1e-12);
  ctorch_tensor_free(g);
  ctorch_tensor_free(l);
  ctorch_tensor_free(x);
}
END_TEST

/* forward: outputs[0] = x * x; backward: 2 x g. Both make handles with ops,
 * which the open scope records and ctorch then takes over. */
static ctorch_status square_forward(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *in, size_t n_in,
                                    ctorch_tensor *out, size_t n_out) {
  (void)ud;
  (void)n_in;
  (void)n_out;
  CT_OK(ctorch_autograd_ctx_save_for_backward(ctx, in, 1));
  return ctorch_mul_Tensor(&out[0], in[0], in[0]);
}

static ctorch_status square_backward(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *gout, size_t n_out,
                                     ctorch_tensor *gin, size_t n_in) {
  ctorch_tensor_list saved = NULL;
  ctorch_tensor x = NULL, t = NULL;
  ctorch_status st;
  (void)ud;
  (void)n_out;
  (void)n_in;
  CT_OK(ctorch_autograd_ctx_saved_tensors(&saved, ctx));
  CT_OK(ctorch_tensor_list_get(&x, saved, 0)); /* list elements are recorded too */
  ctorch_tensor_list_free(saved);
  CT_OK(ctorch_mul_Tensor(&t, gout[0], x));
  st = ctorch_mul_Scalar(&gin[0], t, ctorch_scalar_float(2.0));
  ctorch_tensor_free(x);
  ctorch_tensor_free(t);
  return st;
}

START_TEST(custom_function_outputs_are_taken_from_the_scope) {
  int64_t before = cpu_bytes();
  ctorch_handle_scope s = NULL;
  ctorch_tensor x = dvec(X, N), y = NULL, l = NULL, g = NULL;
  double gv[N];
  int i;
  CT_OK(ctorch_tensor_set_requires_grad(x, 1));
  CT_OK(ctorch_handle_scope_enter(&s));
  CT_OK(ctorch_autograd_function_apply(&y, 1, square_forward, square_backward, NULL, NULL, &x, 1));
  ck_assert_uint_eq(scope_size(), 1); /* y, not the callback's output ctorch took */
  CT_OK(ctorch_sum(&l, y, NULL));
  CT_OK(ctorch_tensor_backward(l, NULL, 0, 0, NULL, 0)); /* the backward callback runs on this thread */
  ck_assert_uint_eq(scope_size(), 2); /* y and l */
  CT_OK(ctorch_tensor_grad(&g, x));
  CT_OK(ctorch_handle_scope_keep(g));
  CT_OK(ctorch_handle_scope_leave(s));
  CT_OK(ctorch_tensor_copy_to(gv, sizeof gv, g));
  for (i = 0; i < N; ++i) ck_assert(fabs(gv[i] - 2 * X[i]) < 1e-15);
  ctorch_tensor_free(g);
  ctorch_tensor_free(x);
  ck_assert_int_eq(cpu_bytes(), before);
}
END_TEST

START_TEST(list_elements_are_recorded_not_lists) {
  ctorch_handle_scope s = NULL;
  ctorch_tensor x = big(), e = NULL;
  ctorch_tensor_list parts = NULL;
  size_t n = 0;
  CT_OK(ctorch_handle_scope_enter(&s));
  CT_OK(ctorch_split_Tensor(&parts, x, BIG / 4, 0));
  ck_assert_uint_eq(scope_size(), 0);
  CT_OK(ctorch_tensor_list_size(&n, parts));
  ck_assert_uint_eq(n, 4);
  CT_OK(ctorch_tensor_list_get(&e, parts, 2));
  ck_assert_uint_eq(scope_size(), 1);
  ctorch_tensor_list_free(parts);
  CT_OK(ctorch_handle_scope_leave(s));
  ctorch_tensor_free(x);
}
END_TEST

/* A training-loop shape: a scope per step, thousands of handles, and the
 * native memory back where it started. */
START_TEST(no_leak_over_many_scopes) {
  int64_t before = cpu_bytes();
  ctorch_tensor w = big();
  int step, k;
  CT_OK(ctorch_tensor_set_requires_grad(w, 1));
  for (step = 0; step < 200; ++step) {
    ctorch_handle_scope s = NULL;
    ctorch_tensor t = w, l = NULL;
    CT_OK(ctorch_handle_scope_enter(&s));
    for (k = 0; k < 10; ++k) {
      ctorch_tensor u = NULL;
      CT_OK(ctorch_mul_Scalar(&u, t, ctorch_scalar_float(1.0001)));
      t = u;
    }
    CT_OK(ctorch_sum(&l, t, NULL));
    CT_OK(ctorch_tensor_backward(l, NULL, 0, 0, NULL, 0));
    ck_assert_uint_eq(scope_size(), 11);
    CT_OK(ctorch_handle_scope_leave(s));
  }
  CT_OK(ctorch_tensor_set_grad(w, NULL));
  ctorch_tensor_free(w);
  ck_assert_int_eq(cpu_bytes(), before);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("handle_scope");
  TCase *tc = tcase_create("handle_scope");
  tcase_add_test(tc, leave_frees_what_the_scope_recorded);
  tcase_add_test(tc, argument_errors);
  tcase_add_test(tc, nesting_and_keep);
  tcase_add_test(tc, free_inside_a_scope_forgets_one_record);
  tcase_add_test(tc, leaving_an_outer_scope_leaves_the_inner_ones);
  tcase_add_test(tc, leave_from_another_thread_is_refused);
  tcase_add_test(tc, threads_are_independent);
  tcase_add_test(tc, a_thread_that_ends_leaves_its_scopes);
  tcase_add_test(tc, backward_through_kept_handles);
  tcase_add_test(tc, custom_function_outputs_are_taken_from_the_scope);
  tcase_add_test(tc, list_elements_are_recorded_not_lists);
  tcase_add_test(tc, no_leak_over_many_scopes);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
