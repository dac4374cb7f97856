/* Write exclusivity per storage (include/ctorch.h, "Threads"): while a call
 * writes a tensor (an in-place or out= argument, an optimizer's step writing
 * its parameters), another thread's call writing the same storage, through
 * any handle that aliases it (ctorch_tensor_ref, alias, a view, detach),
 * gets CTORCH_BUSY naming the function and argument and changes nothing;
 * the same thread passes; reads and writes of other storages go on. The
 * deterministic cases park thread A inside an optimizer's step closure
 * (which holds the parameter's storage); the hammer cases count: two threads
 * adding 1 through two aliases end at exactly the number of adds that
 * returned OK (a lost update fails), and threads writing storages of their
 * own never see BUSY. */
#include <pthread.h>
#include <stdatomic.h>

#include "check_main.h"

static ctorch_tensor make_vec(float value, int64_t n) {
  ctorch_tensor t = NULL;
  float v[64];
  ck_assert_int_le(n, 64);
  for (int64_t i = 0; i < n; ++i) v[i] = value;
  CT_OK(ctorch_tensor_from_data(&t, v, sizeof(float) * (size_t)n, &n, 1, CTORCH_FLOAT32));
  return t;
}

static double first(ctorch_tensor t) {
  ctorch_tensor e = NULL;
  double v = 0;
  CT_OK(ctorch_select_int(&e, t, 0, 0));
  CT_OK(ctorch_tensor_item_double(&v, e));
  ctorch_tensor_free(e);
  return v;
}

/* ---- A parked inside a step closure that holds the parameter ------------- */

typedef struct {
  ctorch_optimizer opt;
  ctorch_tensor param, alias, other;
  pthread_barrier_t inside, done;
  ctorch_status inplace, out, by_name, by_name_list, read, other_write, reentry;
  char inplace_error[512], out_error[512], by_name_error[512], by_name_list_error[512];
} parked;

static void *thread_b(void *arg) {
  parked *p = arg;
  pthread_barrier_wait(&p->inside);
  ctorch_tensor sum = NULL, view = NULL;
  /* In place through an alias of the held parameter. */
  p->inplace = ctorch_add__Scalar(p->alias, ctorch_scalar_float(1.0), ctorch_scalar_int(1));
  snprintf(p->inplace_error, sizeof p->inplace_error, "%s", ctorch_last_error());
  /* out= a view of it. */
  CT_OK(ctorch_view(&view, p->alias, (int64_t[]){2, 2}, 2));
  ctorch_tensor src = make_vec(5.0f, 4), src2 = NULL;
  CT_OK(ctorch_view(&src2, src, (int64_t[]){2, 2}, 2));
  p->out = ctorch_add_out(src2, src2, ctorch_scalar_int(1), view);
  snprintf(p->out_error, sizeof p->out_error, "%s", ctorch_last_error());
  /* The same in-place add called by name. */
  ctorch_op op = NULL;
  ctorch_value args[2] = {NULL, NULL}, res = NULL;
  CT_OK(ctorch_op_find(&op, "aten::add_", "Scalar"));
  CT_OK(ctorch_value_tensor(&args[0], p->alias));
  CT_OK(ctorch_value_double(&args[1], 1.0));
  p->by_name = ctorch_op_call(&res, op, args, 2, NULL, NULL, 0);
  snprintf(p->by_name_error, sizeof p->by_name_error, "%s", ctorch_last_error());
  ctorch_value_free(res);
  ctorch_value_free(args[0]);
  ctorch_value_free(args[1]);
  ctorch_op_free(op);
  /* A written list by name: _foreach_add_(Tensor(a!)[] self, Scalar). */
  ctorch_value item = NULL, list = NULL;
  res = NULL;
  CT_OK(ctorch_op_find(&op, "aten::_foreach_add_", "Scalar"));
  CT_OK(ctorch_value_tensor(&item, p->alias));
  CT_OK(ctorch_value_list(&list, &item, 1));
  CT_OK(ctorch_value_double(&args[1], 1.0));
  args[0] = list;
  p->by_name_list = ctorch_op_call(&res, op, args, 2, NULL, NULL, 0);
  snprintf(p->by_name_list_error, sizeof p->by_name_list_error, "%s", ctorch_last_error());
  ctorch_value_free(res);
  ctorch_value_free(list);
  ctorch_value_free(item);
  ctorch_value_free(args[1]);
  ctorch_op_free(op);
  /* A read of it, and a write of another storage, go on. */
  p->read = ctorch_add_Scalar(&sum, p->alias, ctorch_scalar_float(1.0), ctorch_scalar_int(1));
  p->other_write = ctorch_add__Scalar(p->other, ctorch_scalar_float(1.0), ctorch_scalar_int(1));
  ctorch_tensor_free(sum);
  ctorch_tensor_free(view);
  ctorch_tensor_free(src2);
  ctorch_tensor_free(src);
  pthread_barrier_wait(&p->done);
  return NULL;
}

static ctorch_status closure(void *user, double *loss) {
  parked *p = user;
  /* The thread that holds the storage writes it itself: allowed. */
  p->reentry = ctorch_add__Scalar(p->alias, ctorch_scalar_float(10.0), ctorch_scalar_int(1));
  pthread_barrier_wait(&p->inside);
  pthread_barrier_wait(&p->done);
  *loss = 1.0;
  return CTORCH_OK;
}

START_TEST(alias_write_busy_while_a_step_writes_the_parameter) {
  parked p = {0};
  ctorch_optim_options o;
  p.param = make_vec(0.0f, 4);
  CT_OK(ctorch_tensor_set_requires_grad(p.param, 1));
  /* An alias made before requires_grad would share the storage all the same;
   * detach() is what a user holds to write a parameter without autograd. */
  CT_OK(ctorch_detach(&p.alias, p.param));
  p.other = make_vec(0.0f, 4);
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
  o.lr = 1.0;
  CT_OK(ctorch_optimizer_new(&p.opt, CTORCH_OPTIM_SGD, &p.param, 1, &o));
  pthread_t b;
  double loss = 0;
  pthread_barrier_init(&p.inside, NULL, 2);
  pthread_barrier_init(&p.done, NULL, 2);
  ck_assert_int_eq(pthread_create(&b, NULL, thread_b, &p), 0);
  CT_OK(ctorch_optimizer_step_closure(&loss, p.opt, closure, &p));
  pthread_join(b, NULL);
  pthread_barrier_destroy(&p.inside);
  pthread_barrier_destroy(&p.done);

  ck_assert_msg(p.reentry == CTORCH_OK, "the holding thread's own write -> %s", ctorch_status_name(p.reentry));
  ck_assert_msg(p.inplace == CTORCH_BUSY, "in-place add through an alias -> %s: %s", ctorch_status_name(p.inplace),
                p.inplace_error);
  ck_assert_msg(strstr(p.inplace_error, "ctorch_add__Scalar") && strstr(p.inplace_error, "'self'") &&
                    strstr(p.inplace_error, "another thread"),
                "the message names the function and the argument: %s", p.inplace_error);
  ck_assert_msg(p.out == CTORCH_BUSY, "out= a view -> %s: %s", ctorch_status_name(p.out), p.out_error);
  ck_assert_msg(strstr(p.out_error, "ctorch_add_out") && strstr(p.out_error, "'out'"), "%s", p.out_error);
  ck_assert_msg(p.by_name == CTORCH_BUSY, "add_ by name -> %s: %s", ctorch_status_name(p.by_name), p.by_name_error);
  ck_assert_msg(strstr(p.by_name_error, "'self'"), "%s", p.by_name_error);
  ck_assert_msg(p.by_name_list == CTORCH_BUSY, "_foreach_add_ by name -> %s: %s", ctorch_status_name(p.by_name_list),
                p.by_name_list_error);
  CT_OK(p.read);
  CT_OK(p.other_write);
  /* Nothing the refused calls would have written is there: only the
   * closure's +10 (no grad, so the step itself changed nothing). */
  ck_assert_double_eq(first(p.param), 10.0);
  ck_assert_double_eq(first(p.other), 1.0);
  /* Free again once the step is over. */
  CT_OK(ctorch_add__Scalar(p.alias, ctorch_scalar_float(1.0), ctorch_scalar_int(1)));
  ck_assert_double_eq(first(p.param), 11.0);
  ctorch_optimizer_free(p.opt);
  ctorch_tensor_free(p.alias);
  ctorch_tensor_free(p.other);
  ctorch_tensor_free(p.param);
}
END_TEST

START_TEST(one_call_writing_one_storage_through_two_handles) {
  /* out= an alias of an input, and a written list holding two aliases of one
   * storage: the calling thread holds it once, the second hold passes. */
  ctorch_tensor t = make_vec(2.0f, 4), a = NULL;
  CT_OK(ctorch_alias(&a, t));
  CT_OK(ctorch_add_out(t, a, ctorch_scalar_int(1), a));
  ck_assert_double_eq(first(t), 4.0);
  ctorch_tensor l[2] = {t, a};
  CT_OK(ctorch__foreach_add__Scalar(l, 2, ctorch_scalar_float(1.0)));
  ck_assert_double_eq(first(t), 6.0);
  ctorch_tensor_free(a);
  ctorch_tensor_free(t);
}
END_TEST

/* ---- hammers --------------------------------------------------------------- */

enum { ADDS = 20000 };

typedef struct {
  ctorch_tensor t;
  long ok, busy, other;
} hammer;

static void *add_ones(void *arg) {
  hammer *h = arg;
  for (int i = 0; i < ADDS; ++i) {
    ctorch_status st = ctorch_add__Scalar(h->t, ctorch_scalar_float(1.0), ctorch_scalar_int(1));
    if (st == CTORCH_OK) h->ok++;
    else if (st == CTORCH_BUSY) h->busy++;
    else h->other++;
  }
  return NULL;
}

static void hammer_aliases(int use_alias) {
  ctorch_tensor t = make_vec(0.0f, 1), a = NULL, b = NULL;
  if (use_alias) {
    CT_OK(ctorch_alias(&a, t));
    CT_OK(ctorch_view(&b, t, (int64_t[]){1}, 1));
  } else {
    CT_OK(ctorch_tensor_ref(&a, t));
    CT_OK(ctorch_tensor_ref(&b, t));
  }
  hammer h[2] = {{.t = a}, {.t = b}};
  pthread_t th[2];
  for (int i = 0; i < 2; ++i) ck_assert_int_eq(pthread_create(&th[i], NULL, add_ones, &h[i]), 0);
  for (int i = 0; i < 2; ++i) pthread_join(th[i], NULL);
  ck_assert_int_eq(h[0].other + h[1].other, 0);
  ck_assert_int_eq(h[0].ok + h[0].busy, ADDS);
  /* Every add that returned OK is in the value: no lost update. */
  ck_assert_msg(first(t) == (double)(h[0].ok + h[1].ok), "value %g after %ld + %ld successful adds (%ld + %ld BUSY)",
                first(t), h[0].ok, h[1].ok, h[0].busy, h[1].busy);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(t);
}

START_TEST(hammered_shallow_clones_lose_no_update) { hammer_aliases(0); }
END_TEST

START_TEST(hammered_views_lose_no_update) { hammer_aliases(1); }
END_TEST

/* Four threads, each cycling through 64 storages of its own: at once they
 * hold storages whose addresses share slots (the overflow path), and still
 * never a BUSY. */
enum { OWN = 64, OWN_ROUNDS = 300 };

typedef struct {
  ctorch_tensor t[OWN];
  long busy, other;
} own_set;

static void *write_own(void *arg) {
  own_set *s = arg;
  for (int r = 0; r < OWN_ROUNDS; ++r)
    for (int i = 0; i < OWN; ++i) {
      ctorch_status st = ctorch_add__Scalar(s->t[i], ctorch_scalar_float(1.0), ctorch_scalar_int(1));
      if (st == CTORCH_BUSY) s->busy++;
      else if (st != CTORCH_OK) s->other++;
    }
  return NULL;
}

START_TEST(distinct_storages_never_busy) {
  own_set s[4];
  pthread_t th[4];
  memset(s, 0, sizeof s);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < OWN; ++i) s[k].t[i] = make_vec(0.0f, 1);
  for (int k = 0; k < 4; ++k) ck_assert_int_eq(pthread_create(&th[k], NULL, write_own, &s[k]), 0);
  for (int k = 0; k < 4; ++k) pthread_join(th[k], NULL);
  for (int k = 0; k < 4; ++k) {
    ck_assert_msg(s[k].busy == 0 && s[k].other == 0, "thread %d: %ld BUSY, %ld errors on its own storages", k,
                  s[k].busy, s[k].other);
    for (int i = 0; i < OWN; ++i) {
      ck_assert_double_eq(first(s[k].t[i]), (double)OWN_ROUNDS);
      ctorch_tensor_free(s[k].t[i]);
    }
  }
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("storage_write");
  TCase *tc = tcase_create("busy");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, alias_write_busy_while_a_step_writes_the_parameter);
  tcase_add_test(tc, one_call_writing_one_storage_through_two_handles);
  tcase_add_test(tc, hammered_shallow_clones_lose_no_update);
  tcase_add_test(tc, hammered_views_lose_no_update);
  tcase_add_test(tc, distinct_storages_never_busy);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
