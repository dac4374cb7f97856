/* Tensor handle validation (shim/core/tensor_slots.cpp): a tensor handle
 * freed before the call, a pointer or small value ctorch never returned
 * and a handle of another type each get CTORCH_INVALID_ARGUMENT naming the argument, from
 * hand-written entry points and from generated operators (Tensor, Tensor?
 * and Tensor[] arguments); ctorch_tensor_free of a freed or foreign pointer
 * frees nothing and records why; several handles of one tensor are counted
 * one by one; a handle scope's leave releases what it recorded; threads
 * making, checking and freeing handles at once see no false refusal. Under
 * AddressSanitizer this also shows that no check reads the freed memory. */
#include <pthread.h>

#include "handle_checks.h"

static int64_t foreign_word[4];
#define FOREIGN ((ctorch_tensor)(void *)foreign_word)

#define FREED "is not a live ctorch_tensor handle"

/* ctorch has no call that clears the last error: a distinct failure stands
 * in, so that a later CT_ERROR_HAS sees only what came after it. */
static void reset_error(void) {
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dim(NULL, NULL));
}

/* A handle is a slot and a generation: a freed handle stays refused while
 * new handles reuse its slot (until the slot's 65,535th reuse). */

START_TEST(freed_foreign_wrong_type) {
  ctorch_tensor a = vec(3), w = NULL, gone = vec(3), r = NULL;
  const int64_t wshape[2] = {2, 3};
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  CT_OK(ctorch_ones(&w, wshape, 2, &f32, NULL, NULL, NULL));
  ctorch_nn_module m = NULL;
  CT_OK(ctorch_nn_new(&m, "Linear", "3, 2"));
  ctorch_tensor_free(gone);
  int64_t n = 0;
  /* hand-written entry points */
  BAD(ctorch_tensor_numel(&n, gone), "t", FREED);
  BAD(ctorch_tensor_dim(&n, FOREIGN), "t", FREED);
  /* generated operators: Tensor, Tensor? and Tensor[] arguments */
  BAD(ctorch_add_Tensor(&r, a, gone, ctorch_scalar_int(1)), "other", FREED);
  ck_assert_ptr_null(r);
  BAD(ctorch_relu(&r, FOREIGN), "self", FREED);
  BAD(ctorch_linear(&r, a, w, gone), "bias", FREED);
  ctorch_tensor list[3] = {a, a, gone};
  BAD(ctorch_cat(&r, list, 3, 0), "tensors", "element 2 " FREED);
  /* another handle type passed as a tensor */
  BAD(ctorch_relu(&r, (ctorch_tensor)(void *)m), "self", "is a ctorch_nn_module handle, not a ctorch_tensor");
  BAD(ctorch_tensor_numel(&n, (ctorch_tensor)(void *)m), "t", "not a ctorch_tensor");
  /* the live ones still work */
  CT_OK(ctorch_linear(&r, a, w, NULL));
  CT_OK(ctorch_tensor_numel(&n, r));
  ck_assert_int_eq(n, 2);
  ctorch_tensor_free(r);
  ctorch_nn_module_free(m);
  ctorch_tensor_free(w);
  ctorch_tensor_free(a);
}
END_TEST

/* Values ctorch never returned, walked through hand-written and generated
 * entry points and ctorch_tensor_free: each is refused, none is read as a
 * tensor. The small ones with the low bit set (0x1, 0x9, 0x11, 0x10001)
 * name a slot never used (its word 0); a check that let the live bit come
 * from the value rather than the slot took them for a tensor at address 0
 * and crashed. The walk runs before this process makes any tensor (every
 * slot unused) and again beside live and freed handles, whose unaligned
 * and generation-altered neighbours must be refused too. */
static void refuse_everywhere(ctorch_tensor bad, ctorch_tensor live) {
  int64_t n = 0;
  ctorch_dtype dt;
  double d = 0;
  char *text = NULL;
  ctorch_tensor r = NULL;
  ck_assert_msg(ctorch_tensor_dim(&n, bad) == CTORCH_INVALID_ARGUMENT, "dim took %p", (void *)bad);
  CT_ERROR_HAS(FREED);
  BAD(ctorch_tensor_numel(&n, bad), "t", FREED);
  BAD(ctorch_tensor_dtype(&dt, bad), "t", FREED);
  BAD(ctorch_tensor_item_double(&d, bad), "t", FREED);
  BAD(ctorch_tensor_to_string(&text, bad), "t", FREED);
  ck_assert_ptr_null(text);
  BAD(ctorch_relu(&r, bad), "self", FREED);
  ck_assert_ptr_null(r);
  if (live) {
    BAD(ctorch_add_Tensor(&r, live, bad, ctorch_scalar_int(1)), "other", FREED);
    BAD(ctorch_linear(&r, live, live, bad), "bias", FREED);
    ctorch_tensor list[2] = {live, bad};
    BAD(ctorch_cat(&r, list, 2, 0), "tensors", "element 1 " FREED);
    ck_assert_ptr_null(r);
  } else {
    BAD(ctorch_add_Tensor(&r, bad, bad, ctorch_scalar_int(1)), "self", FREED);
  }
  reset_error();
  ctorch_tensor_free(bad);
  CT_ERROR_HAS("nothing was freed");
}

static const uintptr_t kNeverReturned[] = {
    0x1,        0x2,        0x3,        0x4,        0x5,         0x7,         0x8,
    0x9,        0x10,       0x11,       0x19,       0x1000,      0x1001,      0x10001,
    0x20001,    0x7ffff001, 0xdeadbeef, 0xfffffff9, 0x100000001, 0x1000000000001,
    ((uintptr_t)1 << 48) | 0x7fff0000, UINTPTR_MAX, UINTPTR_MAX - 6,
};

START_TEST(never_returned_values) {
  const size_t nvals = sizeof kNeverReturned / sizeof kNeverReturned[0];
  /* no tensor made yet in this process: every slot is unused */
  for (size_t i = 0; i < nvals; ++i) refuse_everywhere((ctorch_tensor)kNeverReturned[i], NULL);
  ctorch_tensor live = vec(3), gone = vec(3), kept[64];
  for (int i = 0; i < 64; ++i) kept[i] = vec(1); /* slots carved and live around them */
  ctorch_tensor_free(gone);
  for (size_t i = 0; i < nvals; ++i) refuse_everywhere((ctorch_tensor)kNeverReturned[i], live);
  refuse_everywhere(gone, live);
  refuse_everywhere(FOREIGN, live);
  refuse_everywhere((ctorch_tensor)((uintptr_t)foreign_word + 1), live); /* unaligned pointer */
  const uintptr_t gen = (uintptr_t)0xffff << 48;
  const ctorch_tensor around[] = {live, kept[0], kept[63]};
  for (size_t k = 0; k < 3; ++k) {
    const uintptr_t v = (uintptr_t)around[k];
    for (uintptr_t low = 1; low < 8; ++low) refuse_everywhere((ctorch_tensor)(v + low), live); /* unaligned */
    refuse_everywhere((ctorch_tensor)(v & ~gen), live);                      /* generation 0 */
    refuse_everywhere((ctorch_tensor)((v & ~gen) | 1), live);                /* generation 0, low bit */
    refuse_everywhere((ctorch_tensor)(v + ((uintptr_t)1 << 48)), live);      /* the next generation */
    refuse_everywhere((ctorch_tensor)(v ^ ((uintptr_t)1 << 32)), live);      /* beyond the offset */
  }
  /* the live handles still work */
  int64_t n = 0;
  CT_OK(ctorch_tensor_numel(&n, live));
  ck_assert_int_eq(n, 3);
  for (int i = 0; i < 64; ++i) {
    CT_OK(ctorch_tensor_numel(&n, kept[i]));
    ctorch_tensor_free(kept[i]);
  }
  ctorch_tensor_free(live);
}
END_TEST

START_TEST(double_and_foreign_free) {
  ctorch_tensor a = vec(2);
  ctorch_nn_module m = NULL;
  CT_OK(ctorch_nn_new(&m, "Linear", "3, 2"));
  ctorch_tensor_free(a);
  reset_error();
  ctorch_tensor_free(a); /* freed twice: nothing happens but the record */
  CT_ERROR_HAS("ctorch_tensor_free");
  CT_ERROR_HAS(FREED);
  CT_ERROR_HAS("nothing was freed");
  reset_error();
  ctorch_tensor_free(FOREIGN);
  CT_ERROR_HAS("nothing was freed");
  reset_error();
  ctorch_tensor_free((ctorch_tensor)(void *)m); /* a module is not freed as a tensor */
  CT_ERROR_HAS("is a ctorch_nn_module handle, not a ctorch_tensor");
  int64_t n = 0;
  ctorch_tensor out = NULL, x = vec(3);
  CT_OK(ctorch_nn_module_forward(&out, m, x)); /* the module is intact */
  CT_OK(ctorch_tensor_numel(&n, out));
  ck_assert_int_eq(n, 2);
  ctorch_tensor_free(out);
  ctorch_tensor_free(x);
  ctorch_nn_module_free(m);
  ctorch_tensor_free(NULL); /* NULL stays quiet */
}
END_TEST

START_TEST(several_handles_one_tensor) {
  ctorch_tensor a = vec(4), b = NULL, c = NULL;
  CT_OK(ctorch_tensor_ref(&b, a));
  CT_OK(ctorch_tensor_ref(&c, a));
  CT_ASSERT_SAME(a, b); /* one tensor, three handles */
  int64_t n = 0;
  ctorch_tensor_free(a);
  BAD(ctorch_tensor_numel(&n, a), "t", FREED); /* a is gone, b and c are not */
  CT_OK(ctorch_tensor_numel(&n, b));
  ctorch_tensor_free(b);
  CT_OK(ctorch_tensor_numel(&n, c));
  ck_assert_int_eq(n, 4);
  ctorch_tensor_free(c);
  /* all three freed: a fourth free is refused, not a fourth decrement */
  reset_error();
  ctorch_tensor_free(c);
  CT_ERROR_HAS("nothing was freed");
}
END_TEST

START_TEST(freed_stays_freed_after_reuse) {
  ctorch_tensor a = vec(2);
  ctorch_tensor_free(a);
  ctorch_tensor fresh[1000];
  for (int i = 0; i < 1000; ++i) fresh[i] = vec(1); /* the first takes a's slot */
  int64_t n = 0;
  BAD(ctorch_tensor_numel(&n, a), "t", FREED);
  for (int i = 0; i < 1000; ++i) {
    CT_OK(ctorch_tensor_numel(&n, fresh[i]));
    ctorch_tensor_free(fresh[i]);
  }
  reset_error();
  ctorch_tensor_free(a); /* and it frees nothing of the new tensors */
  CT_ERROR_HAS("nothing was freed");
  /* a tensor handle where another type is expected */
  ctorch_tensor t = vec(3);
  ctorch_nn_module_free((ctorch_nn_module)(void *)t);
  CT_ERROR_HAS("is a ctorch_tensor handle, not a ctorch_nn_module");
  CT_OK(ctorch_tensor_numel(&n, t));
  ck_assert_int_eq(n, 3);
  ctorch_tensor_free(t);
}
END_TEST

START_TEST(is_same) {
  ctorch_tensor a = vec(4), b = NULL, v = NULL, other = vec(4);
  int same = -1;
  CT_OK(ctorch_tensor_ref(&b, a));
  CT_ASSERT_SAME(a, b);
  CT_OK(ctorch_view(&v, a, (const int64_t[]){2, 2}, 2));
  CT_OK(ctorch_tensor_is_same(&same, a, v)); /* a view is another tensor */
  ck_assert_int_eq(same, 0);
  CT_OK(ctorch_tensor_is_same(&same, a, other));
  ck_assert_int_eq(same, 0);
  BAD(ctorch_tensor_is_same(&same, a, NULL), "b", "NULL");
  BAD(ctorch_tensor_is_same(NULL, a, b), "out", "NULL");
  ctorch_tensor_free(other);
  BAD(ctorch_tensor_is_same(&same, other, a), "a", FREED);
  ctorch_tensor_free(v);
  ctorch_tensor_free(b);
  ctorch_tensor_free(a);
}
END_TEST

/* Handles made on one thread and freed on another (a binding's finaliser
 * thread): the freeing thread's list grows and goes back to the shared pool
 * in batches, so the making thread reuses slots instead of taking new ones. */
enum { kCross = 50000 };
static ctorch_tensor *g_cross;
static void *free_all(void *arg) {
  (void)arg;
  for (int i = 0; i < kCross; ++i) ctorch_tensor_free(g_cross[i]);
  return NULL;
}

START_TEST(freed_on_another_thread) {
  g_cross = malloc(sizeof *g_cross * kCross);
  ck_assert_ptr_nonnull(g_cross);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kCross; ++i) g_cross[i] = vec(1);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, free_all, NULL), 0);
    pthread_join(th, NULL);
    int64_t n = 0;
    for (int i = 0; i < kCross; i += 499) BAD(ctorch_tensor_numel(&n, g_cross[i]), "t", FREED);
  }
  free(g_cross);
}
END_TEST

START_TEST(handle_scope_leave_releases) {
  ctorch_handle_scope s = NULL;
  CT_OK(ctorch_handle_scope_enter(&s));
  ctorch_tensor a = vec(5), keep = vec(6);
  CT_OK(ctorch_handle_scope_keep(keep));
  CT_OK(ctorch_handle_scope_leave(s));
  int64_t n = 0;
  BAD(ctorch_tensor_numel(&n, a), "t", FREED);
  CT_OK(ctorch_tensor_numel(&n, keep));
  ck_assert_int_eq(n, 6);
  ctorch_tensor_free(keep);
}
END_TEST

/* Custom autograd function: the callback's inputs are lent handles (live
 * during the call), its outputs are taken back; an output that is not a live
 * handle is refused. */
static ctorch_status fwd_double(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *in, size_t n_in,
                                ctorch_tensor *out, size_t n_out) {
  (void)ctx;
  (void)n_in;
  (void)n_out;
  if (ud) {
    out[0] = FOREIGN;
    return CTORCH_OK;
  }
  return ctorch_mul_Scalar(&out[0], in[0], ctorch_scalar_float(2.0));
}
static ctorch_status bwd_double(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *go, size_t n_out,
                                ctorch_tensor *gi, size_t n_in) {
  (void)ctx;
  (void)ud;
  (void)n_out;
  (void)n_in;
  return ctorch_mul_Scalar(&gi[0], go[0], ctorch_scalar_float(2.0));
}

START_TEST(callback_handles) {
  ctorch_tensor x = vec(3), y = NULL, g = vec(3);
  CT_OK(ctorch_tensor_set_requires_grad(x, 1));
  CT_OK(ctorch_autograd_function_apply(&y, 1, fwd_double, bwd_double, NULL, NULL, &x, 1));
  CT_OK(ctorch_tensor_backward(y, g, 0, 0, NULL, 0)); /* backward's callback used its lent handles */
  ctorch_tensor_free(y);
  static int flag;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_function_apply(&y, 1, fwd_double, bwd_double, &flag, NULL, &x, 1));
  CT_ERROR_HAS(FREED);
  ctorch_tensor_free(g);
  ctorch_tensor_free(x);
}
END_TEST

/* Threads making, checking and freeing handles at once, some of them extra
 * handles of one shared tensor: every live handle is accepted throughout. */
enum { kThreads = 4, kIters = 20000 };
static ctorch_tensor g_shared;
static int g_failures;

static void *churn(void *arg) {
  (void)arg;
  const int64_t one = 1;
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  for (int i = 0; i < kIters; ++i) {
    ctorch_tensor t = NULL, r = NULL, s = NULL;
    if (ctorch_ones(&t, &one, 1, &f32, NULL, NULL, NULL) != CTORCH_OK ||
        ctorch_add_Tensor(&r, t, g_shared, ctorch_scalar_int(1)) != CTORCH_OK ||
        ctorch_tensor_ref(&s, g_shared) != CTORCH_OK)
      __atomic_add_fetch(&g_failures, 1, __ATOMIC_RELAXED);
    ctorch_tensor_free(t);
    ctorch_tensor_free(r);
    ctorch_tensor_free(s);
  }
  return NULL;
}

START_TEST(threads) {
  g_shared = vec(1);
  pthread_t th[kThreads];
  for (int i = 0; i < kThreads; ++i) ck_assert_int_eq(pthread_create(&th[i], NULL, churn, NULL), 0);
  for (int i = 0; i < kThreads; ++i) pthread_join(th[i], NULL);
  ck_assert_int_eq(g_failures, 0);
  int64_t n = 0;
  CT_OK(ctorch_tensor_numel(&n, g_shared)); /* its count is back to one */
  ctorch_tensor_free(g_shared);
  BAD(ctorch_tensor_numel(&n, g_shared), "t", FREED);
}
END_TEST

/* Many live handles at once (more than fit near their home slots): all
 * accepted, all freed, then all refused. */
START_TEST(many_live) {
  enum { kMany = 300000 };
  ctorch_tensor *hs = malloc(sizeof *hs * kMany);
  ck_assert_ptr_nonnull(hs);
  for (int i = 0; i < kMany; ++i) hs[i] = vec(1);
  int64_t n = 0;
  for (int i = 0; i < kMany; ++i)
    if (ctorch_tensor_numel(&n, hs[i]) != CTORCH_OK) ck_abort_msg("handle %d refused: %s", i, ctorch_last_error());
  for (int i = 0; i < kMany; ++i) ctorch_tensor_free(hs[i]);
  for (int i = 0; i < kMany; i += 997) BAD(ctorch_tensor_numel(&n, hs[i]), "t", FREED);
  free(hs);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("tensor_handles");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, never_returned_values);
  tcase_add_test(tc, freed_foreign_wrong_type);
  tcase_add_test(tc, double_and_foreign_free);
  tcase_add_test(tc, several_handles_one_tensor);
  tcase_add_test(tc, freed_stays_freed_after_reuse);
  tcase_add_test(tc, is_same);
  tcase_add_test(tc, freed_on_another_thread);
  tcase_add_test(tc, handle_scope_leave_releases);
  tcase_add_test(tc, callback_handles);
  tcase_add_test(tc, threads);
  tcase_add_test(tc, many_live);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
