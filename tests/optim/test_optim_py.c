/* NAdam, RAdam, Adamax, Adadelta, LBFGS: options as PyTorch validates them,
 * ctorch_optimizer_step_closure and its failures (bad closure, a closure
 * that fails), LBFGS's refusals, state save/load, schedules on the new
 * kinds. Their arithmetic is compared with torch.optim by
 * optim_vs_torch.py. */
#include <math.h>
#include <string.h>

#include "../check_main.h"

static const int64_t four[1] = {4};

static ctorch_tensor param(float a) {
  const float v[4] = {a, -0.5f, 0.25f, 2.0f};
  ctorch_tensor t = ct_floats(v, four, 1);
  CT_OK(ctorch_tensor_set_requires_grad(t, 1));
  return t;
}

/* loss = sum(p^2) for one parameter; counts its calls; fails from call `fail_at` on. */
typedef struct {
  ctorch_optimizer opt;
  ctorch_tensor p;
  int calls, fail_at;
  ctorch_status fail_with;
} quad;

static ctorch_status quad_closure(void *user_data, double *loss) {
  quad *q = (quad *)user_data;
  ctorch_tensor sq = NULL, s = NULL;
  ++q->calls;
  if (q->fail_at && q->calls >= q->fail_at) return q->fail_with;
  if (ctorch_optimizer_zero_grad(q->opt, 1) != CTORCH_OK) return CTORCH_RUNTIME;
  if (ctorch_pow_Tensor_Scalar(&sq, q->p, ctorch_scalar_int(2)) != CTORCH_OK) return CTORCH_RUNTIME;
  if (ctorch_sum(&s, sq, NULL) != CTORCH_OK) return CTORCH_RUNTIME;
  if (ctorch_tensor_backward(s, NULL, 0, 0, NULL, 0) != CTORCH_OK) return CTORCH_RUNTIME;
  if (ctorch_tensor_item_double(loss, s) != CTORCH_OK) return CTORCH_RUNTIME;
  ctorch_tensor_free(sq);
  ctorch_tensor_free(s);
  return CTORCH_OK;
}

static double elem(ctorch_tensor t, int i) {
  float *v = NULL;
  CT_OK(ctorch_tensor_data_ptr((void **)&v, t));
  return v[i];
}

static const ctorch_optimizer_kind new_kinds[5] = {CTORCH_OPTIM_NADAM, CTORCH_OPTIM_RADAM, CTORCH_OPTIM_ADAMAX,
                                                   CTORCH_OPTIM_ADADELTA, CTORCH_OPTIM_LBFGS};

START_TEST(defaults_are_pytorchs) {
  ctorch_optim_options_v2 o;
  CT_OK(ctorch_optim_options_default_v2(&o, CTORCH_OPTIM_NADAM));
  ck_assert(o.lr == 2e-3 && o.beta1 == 0.9 && o.beta2 == 0.999 && o.eps == 1e-8 && o.weight_decay == 0 &&
            o.momentum_decay == 4e-3 && !o.decoupled_weight_decay);
  CT_OK(ctorch_optim_options_default_v2(&o, CTORCH_OPTIM_RADAM));
  ck_assert(o.lr == 1e-3 && o.eps == 1e-8);
  CT_OK(ctorch_optim_options_default_v2(&o, CTORCH_OPTIM_ADAMAX));
  ck_assert(o.lr == 2e-3 && o.eps == 1e-8);
  CT_OK(ctorch_optim_options_default_v2(&o, CTORCH_OPTIM_ADADELTA));
  ck_assert(o.lr == 1.0 && o.rho == 0.9 && o.eps == 1e-6);
  CT_OK(ctorch_optim_options_default_v2(&o, CTORCH_OPTIM_LBFGS));
  ck_assert(o.lr == 1.0 && o.max_iter == 20 && o.max_eval == 0 && o.tolerance_grad == 1e-7 &&
            o.tolerance_change == 1e-9 && o.history_size == 100 && o.line_search == CTORCH_LINE_SEARCH_NONE);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optim_options_default_v2(&o, (ctorch_optimizer_kind)10));
  CT_ERROR_HAS("kind");
}
END_TEST

/* Each refusal names the field, as Python's constructors do. */
static void refuses(ctorch_optimizer_kind kind, void (*edit)(ctorch_optim_options_v2 *), ctorch_status want, const char *field) {
  ctorch_tensor p = param(1.0f);
  ctorch_optimizer opt = NULL;
  ctorch_optim_options_v2 o;
  CT_OK(ctorch_optim_options_default_v2(&o, kind));
  edit(&o);
  CT_FAILS(want, ctorch_optimizer_new_v2(&opt, kind, &p, 1, &o));
  ck_assert_ptr_null(opt);
  CT_ERROR_HAS("ctorch_optimizer_new");
  CT_ERROR_HAS(field);
  ctorch_tensor_free(p);
}
static void beta1_one(ctorch_optim_options_v2 *o) { o->beta1 = 1.0; }
static void beta2_neg(ctorch_optim_options_v2 *o) { o->beta2 = -0.1; }
static void eps_neg(ctorch_optim_options_v2 *o) { o->eps = -1; }
static void lr_nan(ctorch_optim_options_v2 *o) { o->lr = NAN; }
static void wd_neg(ctorch_optim_options_v2 *o) { o->weight_decay = -1; }
static void md_neg(ctorch_optim_options_v2 *o) { o->momentum_decay = -1e-3; }
static void rho_big(ctorch_optim_options_v2 *o) { o->rho = 1.5; }
static void decoupled(ctorch_optim_options_v2 *o) { o->decoupled_weight_decay = 1; }
static void iter0(ctorch_optim_options_v2 *o) { o->max_iter = 0; }
static void eval_neg(ctorch_optim_options_v2 *o) { o->max_eval = -1; }
static void hist0(ctorch_optim_options_v2 *o) { o->history_size = 0; }
static void ls_bad(ctorch_optim_options_v2 *o) { o->line_search = 7; }
static void tol_nan(ctorch_optim_options_v2 *o) { o->tolerance_grad = NAN; }
static void tolc_neg(ctorch_optim_options_v2 *o) { o->tolerance_change = -1; }

START_TEST(bad_options_name_the_field) {
  int k;
  for (k = 0; k < 3; ++k) {
    refuses(new_kinds[k], beta1_one, CTORCH_INVALID_ARGUMENT, "beta1");
    refuses(new_kinds[k], beta2_neg, CTORCH_INVALID_ARGUMENT, "beta2");
    refuses(new_kinds[k], eps_neg, CTORCH_INVALID_ARGUMENT, "eps");
    refuses(new_kinds[k], wd_neg, CTORCH_INVALID_ARGUMENT, "weight_decay");
  }
  for (k = 0; k < 5; ++k) refuses(new_kinds[k], lr_nan, CTORCH_INVALID_ARGUMENT, "lr");
  refuses(CTORCH_OPTIM_NADAM, md_neg, CTORCH_INVALID_ARGUMENT, "momentum_decay");
  refuses(CTORCH_OPTIM_ADAMAX, decoupled, CTORCH_INVALID_ARGUMENT, "decoupled_weight_decay");
  refuses(CTORCH_OPTIM_ADADELTA, rho_big, CTORCH_INVALID_ARGUMENT, "rho");
  refuses(CTORCH_OPTIM_ADADELTA, eps_neg, CTORCH_INVALID_ARGUMENT, "eps");
  refuses(CTORCH_OPTIM_LBFGS, iter0, CTORCH_INVALID_ARGUMENT, "max_iter");
  refuses(CTORCH_OPTIM_LBFGS, eval_neg, CTORCH_INVALID_ARGUMENT, "max_eval");
  refuses(CTORCH_OPTIM_LBFGS, hist0, CTORCH_INVALID_ARGUMENT, "history_size");
  refuses(CTORCH_OPTIM_LBFGS, ls_bad, CTORCH_INVALID_ARGUMENT, "line_search");
  refuses(CTORCH_OPTIM_LBFGS, tol_nan, CTORCH_INVALID_ARGUMENT, "tolerance_grad");
  refuses(CTORCH_OPTIM_LBFGS, tolc_neg, CTORCH_INVALID_ARGUMENT, "tolerance_change");
}
END_TEST

/* decoupled_weight_decay: taken where the PyTorch followed has it (2.x), refused naming it by a 1.13 build. */
START_TEST(decoupled_weight_decay_by_version) {
  ctorch_tensor p = param(1.0f);
  ctorch_optimizer opt = NULL;
  ctorch_optim_options_v2 o;
  ctorch_status st;
  int k;
  for (k = 0; k < 2; ++k) {
    CT_OK(ctorch_optim_options_default_v2(&o, new_kinds[k]));
    o.decoupled_weight_decay = 1;
    o.weight_decay = 0.1;
    st = ctorch_optimizer_new_v2(&opt, new_kinds[k], &p, 1, &o);
    if (st == CTORCH_OK) {
      ctorch_optim_options_v2 got;
      CT_OK(ctorch_optimizer_get_options_v2(&got, opt, 0));
      ck_assert_int_eq(got.decoupled_weight_decay, 1);
      ctorch_optimizer_free(opt);
      opt = NULL;
    } else {
      ck_assert_int_eq(st, CTORCH_NOT_IMPLEMENTED);
      CT_ERROR_HAS("decoupled_weight_decay");
    }
  }
  ctorch_tensor_free(p);
}
END_TEST

START_TEST(closure_arguments) {
  quad q = {0};
  double loss = -1;
  q.p = param(1.0f);
  CT_OK(ctorch_optimizer_new(&q.opt, CTORCH_OPTIM_NADAM, &q.p, 1, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_step_closure(&loss, q.opt, NULL, &q));
  CT_ERROR_HAS("ctorch_optimizer_step_closure");
  CT_ERROR_HAS("closure");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_step_closure(NULL, q.opt, quad_closure, &q));
  CT_ERROR_HAS("loss_out");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_step_closure(&loss, NULL, quad_closure, &q));
  CT_ERROR_HAS("opt");
  ck_assert_int_eq(q.calls, 0);
  /* success: the loss of the parameter before the step (1 + 0.25 + 0.0625 + 4) */
  CT_OK(ctorch_optimizer_step_closure(&loss, q.opt, quad_closure, &q));
  ck_assert(loss == 5.3125);
  ck_assert_int_eq(q.calls, 1);
  ck_assert(elem(q.p, 0) < 1.0);
  ctorch_optimizer_free(q.opt);
  ctorch_tensor_free(q.p);
}
END_TEST

/* A failing closure: its status, a message naming it, the parameters unchanged (first-order kinds). */
START_TEST(closure_failing) {
  int k;
  for (k = 0; k < 4; ++k) {
    quad q = {0};
    double loss = -1;
    q.p = param(1.0f);
    CT_OK(ctorch_optimizer_new(&q.opt, new_kinds[k], &q.p, 1, NULL));
    q.fail_at = 1;
    q.fail_with = CTORCH_VALUE;
    CT_FAILS(CTORCH_VALUE, ctorch_optimizer_step_closure(&loss, q.opt, quad_closure, &q));
    CT_ERROR_HAS("closure");
    CT_ERROR_HAS("CTORCH_VALUE");
    ck_assert(elem(q.p, 0) == 1.0);
    /* a status outside the enum: RUNTIME */
    q.fail_with = (ctorch_status)1234;
    CT_FAILS(CTORCH_RUNTIME, ctorch_optimizer_step_closure(&loss, q.opt, quad_closure, &q));
    CT_ERROR_HAS("closure");
    /* and it still steps afterwards */
    q.fail_at = 0;
    CT_OK(ctorch_optimizer_step_closure(&loss, q.opt, quad_closure, &q));
    ck_assert(elem(q.p, 0) < 1.0);
    ctorch_optimizer_free(q.opt);
    ctorch_tensor_free(q.p);
  }
}
END_TEST

START_TEST(lbfgs_refusals_and_failing_closure) {
  quad q = {0};
  double loss = -1;
  ctorch_tensor other = param(3.0f);
  ctorch_optim_options_v2 o;
  q.p = param(1.0f);
  CT_OK(ctorch_optimizer_new(&q.opt, CTORCH_OPTIM_LBFGS, &q.p, 1, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_step(q.opt));
  CT_ERROR_HAS("ctorch_optimizer_step_closure");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_add_param_group(q.opt, &other, 1, NULL));
  CT_ERROR_HAS("parameter groups");
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_optimizer_save(q.opt, "/tmp/ctorch_lbfgs_never_written"));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_optimizer_load(q.opt, "/tmp/ctorch_lbfgs_never_written"));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_optimizer_save_state_dict(q.opt, "/tmp/ctorch_lbfgs_never_written"));
  /* the closure fails on its third call, inside the iterations */
  q.fail_at = 3;
  q.fail_with = CTORCH_INDEX;
  CT_FAILS(CTORCH_INDEX, ctorch_optimizer_step_closure(&loss, q.opt, quad_closure, &q));
  CT_ERROR_HAS("closure");
  CT_ERROR_HAS("call 3");
  ck_assert_int_eq(q.calls, 3);
  ctorch_optimizer_free(q.opt);
  ctorch_tensor_free(q.p);
  /* a fresh one minimises sum(p^2) */
  q.p = param(1.0f);
  q.calls = 0, q.fail_at = 0;
  CT_OK(ctorch_optim_options_default_v2(&o, CTORCH_OPTIM_LBFGS));
  o.line_search = CTORCH_LINE_SEARCH_STRONG_WOLFE;
  CT_OK(ctorch_optimizer_new_v2(&q.opt, CTORCH_OPTIM_LBFGS, &q.p, 1, &o));
  CT_OK(ctorch_optimizer_step_closure(&loss, q.opt, quad_closure, &q));
  ck_assert(loss > 5.0);
  ck_assert(q.calls >= 2 && q.calls <= 25);
  ck_assert(fabs(elem(q.p, 0)) < 1e-3 && fabs(elem(q.p, 3)) < 1e-3);
  CT_OK(ctorch_optimizer_get_options_v2(&o, q.opt, 0));
  ck_assert_int_eq(o.max_eval, 25); /* Python's max_iter * 5 // 4 */
  ctorch_optimizer_free(q.opt);
  ctorch_tensor_free(q.p);
  ctorch_tensor_free(other);
}
END_TEST

START_TEST(complex_params_refused) {
  const float v[4] = {1, 2, 3, 4};
  ctorch_tensor p = ct_floats(v, four, 1), c = NULL;
  ctorch_optimizer opt = NULL;
  const ctorch_dtype cf = CTORCH_COMPLEX64;
  int k;
  CT_OK(ctorch_to_dtype(&c, p, cf, 0, 1, NULL));
  CT_OK(ctorch_tensor_set_requires_grad(c, 1));
  for (k = 0; k < 5; ++k) {
    CT_FAILS(CTORCH_TYPE, ctorch_optimizer_new(&opt, new_kinds[k], &c, 1, NULL));
    CT_ERROR_HAS("params");
  }
  ctorch_tensor_free(c);
  ctorch_tensor_free(p);
}
END_TEST

/* save / load: a loaded optimizer continues exactly as the saved one. */
START_TEST(save_load_continue) {
  int k;
  for (k = 0; k < 4; ++k) {
    quad a = {0}, b = {0};
    double loss;
    int i;
    char path[64];
    snprintf(path, sizeof path, "/tmp/ctorch_optim_py_%d_%d.pt", (int)getpid(), k);
    a.p = param(1.0f);
    b.p = param(1.0f);
    CT_OK(ctorch_optimizer_new(&a.opt, new_kinds[k], &a.p, 1, NULL));
    CT_OK(ctorch_optimizer_new(&b.opt, new_kinds[k], &b.p, 1, NULL));
    for (i = 0; i < 3; ++i) CT_OK(ctorch_optimizer_step_closure(&loss, a.opt, quad_closure, &a));
    for (i = 0; i < 3; ++i) CT_OK(ctorch_optimizer_step_closure(&loss, b.opt, quad_closure, &b));
    CT_OK(ctorch_optimizer_set_lr(a.opt, 0, 0.125));
    CT_OK(ctorch_optimizer_save(a.opt, path));
    ctorch_optimizer_free(b.opt);
    CT_OK(ctorch_optimizer_new(&b.opt, new_kinds[k], &b.p, 1, NULL));
    CT_OK(ctorch_optimizer_load(b.opt, path));
    {
      double lr = 0;
      CT_OK(ctorch_optimizer_get_lr(&lr, b.opt, 0));
      ck_assert(lr == 0.125);
    }
    CT_OK(ctorch_optimizer_step_closure(&loss, a.opt, quad_closure, &a));
    CT_OK(ctorch_optimizer_step_closure(&loss, b.opt, quad_closure, &b));
    for (i = 0; i < 4; ++i) ck_assert_msg(elem(a.p, i) == elem(b.p, i), "kind %d element %d", (int)new_kinds[k], i);
    /* an archive of another kind is refused, the optimizer unchanged */
    {
      ctorch_optimizer other = NULL;
      CT_OK(ctorch_optimizer_new(&other, new_kinds[(k + 1) % 4], &b.p, 1, NULL));
      ck_assert_int_ne(ctorch_optimizer_load(other, path), CTORCH_OK);
      ctorch_optimizer_free(other);
    }
    unlink(path);
    ctorch_optimizer_free(a.opt);
    ctorch_optimizer_free(b.opt);
    ctorch_tensor_free(a.p);
    ctorch_tensor_free(b.p);
  }
}
END_TEST

/* Schedules: OneCycleLR cycles NAdam's/RAdam's/Adamax's beta1 (Python's use_beta1); Adadelta and LBFGS have no momentum. */
START_TEST(schedules_on_new_kinds) {
  int k;
  for (k = 0; k < 5; ++k) {
    ctorch_tensor p = param(1.0f);
    ctorch_optimizer opt = NULL;
    ctorch_lr_scheduler s = NULL;
    ctorch_lr_schedule_options so;
    ctorch_optim_options_v2 o;
    double lr = 0;
    CT_OK(ctorch_optimizer_new(&opt, new_kinds[k], &p, 1, NULL));
    CT_OK(ctorch_lr_schedule_options_default(&so, CTORCH_LR_ONE_CYCLE));
    so.max_lr = 0.01;
    so.total_steps = 10;
    if (k < 3) {
      CT_OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_ONE_CYCLE, &so));
      CT_OK(ctorch_optimizer_get_options_v2(&o, opt, 0));
      ck_assert(o.beta1 == so.max_momentum);
      CT_OK(ctorch_lr_scheduler_step(s));
      CT_OK(ctorch_optimizer_get_options_v2(&o, opt, 0));
      ck_assert(o.beta1 < so.max_momentum);
      ctorch_lr_scheduler_free(s);
    } else {
      CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_ONE_CYCLE, &so));
      CT_ERROR_HAS("cycle_momentum");
      so.cycle_momentum = 0;
      CT_OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_ONE_CYCLE, &so));
      CT_OK(ctorch_lr_scheduler_step(s));
      CT_OK(ctorch_optimizer_get_lr(&lr, opt, 0));
      ck_assert(lr > 0.01 / 25.0 && lr < 0.01);
      ctorch_lr_scheduler_free(s);
    }
    ctorch_optimizer_free(opt);
    ctorch_tensor_free(p);
  }
}
END_TEST

/* The first release's 96-byte ctorch_optim_options with the kinds added
 * after it (docs/abi.md): the old entry points read and write its bytes
 * only, and the fields it lacks take their defaults. */
START_TEST(old_struct_with_new_kinds) {
  for (int k = 0; k < 5; ++k) {
    struct {
      ctorch_optim_options o;
      unsigned char after[80];
    } g;
    memset(&g, 0xA5, sizeof g);
    CT_OK(ctorch_optim_options_default(&g.o, new_kinds[k]));
    for (size_t i = 0; i < sizeof g.after; ++i) ck_assert_int_eq(g.after[i], 0xA5);
    ctorch_optim_options_v2 want;
    CT_OK(ctorch_optim_options_default_v2(&want, new_kinds[k]));
    ck_assert(g.o.lr == want.lr && g.o.eps == want.eps && g.o.beta1 == want.beta1);
    g.o.lr = 0.125;
    ctorch_tensor p = param(1.0f);
    ctorch_optimizer opt = NULL;
    CT_OK(ctorch_optimizer_new(&opt, new_kinds[k], &p, 1, &g.o));
    ctorch_optim_options_v2 got;
    CT_OK(ctorch_optimizer_get_options_v2(&got, opt, 0));
    ck_assert(got.lr == 0.125 && got.momentum_decay == want.momentum_decay && got.rho == want.rho &&
              got.max_iter == want.max_iter && got.history_size == want.history_size);
    memset(&g, 0xA5, sizeof g);
    CT_OK(ctorch_optimizer_get_options(&g.o, opt, 0));
    ck_assert(g.o.lr == 0.125);
    for (size_t i = 0; i < sizeof g.after; ++i) ck_assert_int_eq(g.after[i], 0xA5);
    ctorch_optimizer_free(opt);
    ctorch_tensor_free(p);
  }
  ctorch_optim_options o;
  ctorch_tensor p = param(1.0f);
  ctorch_optimizer opt = NULL;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new(&opt, (ctorch_optimizer_kind)10, &p, 1, NULL));
  CT_ERROR_HAS("ctorch_optimizer_new");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new_v2(&opt, (ctorch_optimizer_kind)-1, &p, 1, NULL));
  CT_ERROR_HAS("ctorch_optimizer_new_v2");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optim_options_default(&o, (ctorch_optimizer_kind)10));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_add_param_group(NULL, &p, 1, &o));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_add_param_group_v2(NULL, &p, 1, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_get_options_v2(NULL, opt, 0));
  ctorch_tensor_free(p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("optim_py");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, defaults_are_pytorchs);
  tcase_add_test(tc, bad_options_name_the_field);
  tcase_add_test(tc, decoupled_weight_decay_by_version);
  tcase_add_test(tc, closure_arguments);
  tcase_add_test(tc, closure_failing);
  tcase_add_test(tc, lbfgs_refusals_and_failing_closure);
  tcase_add_test(tc, complex_params_refused);
  tcase_add_test(tc, save_load_continue);
  tcase_add_test(tc, schedules_on_new_kinds);
  tcase_add_test(tc, old_struct_with_new_kinds);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
