/* Optimizer state in the format of Python's optimizer.state_dict()
 * (ctorch_optimizer_save_state_dict / _load_state_dict), C to C: a run
 * saved and resumed in another optimizer steps exactly as the original;
 * group options come back; mismatches and foreign files are refused and
 * leave the optimizer as it was. (C <-> Python: tests/python/
 * test_py_interop_files.py.) */
#include <math.h>

#include "check_main.h"
#include "tmp_files.h"

#define NP 5

static void make_dir(void) { ct_tmp_dir_make("optim_state"); }

static ctorch_tensor fvec(const float *v, int64_t n) {
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_from_data(&t, v, (size_t)n * sizeof(float), &n, 1, CTORCH_FLOAT32));
  return t;
}

/* Parameter i of a run: NP floats, distinct per i. */
static ctorch_tensor param(int i, int64_t n) {
  float v[NP];
  for (int k = 0; k < n; ++k) v[k] = (float)(0.3 * (k + 1) - 0.7 * i);
  ctorch_tensor t = fvec(v, n);
  CT_OK(ctorch_tensor_set_requires_grad(t, 1));
  return t;
}

/* A gradient that depends on the step and the parameter. */
static void set_grad(ctorch_tensor p, int step, int i) {
  float g[NP];
  int64_t n = 0;
  CT_OK(ctorch_tensor_numel(&n, p));
  for (int k = 0; k < n; ++k) g[k] = (float)sin(1.7 * step + 0.9 * k - 0.4 * i);
  ctorch_tensor gt = fvec(g, n);
  CT_OK(ctorch_tensor_set_grad(p, gt));
  ctorch_tensor_free(gt);
}

static void step(ctorch_optimizer opt, ctorch_tensor *ps, int n, int s) {
  for (int i = 0; i < n; ++i) set_grad(ps[i], s, i);
  CT_OK(ctorch_optimizer_step(opt));
}

static void copy_values(ctorch_tensor dst, ctorch_tensor src) {
  float v[NP];
  int64_t n = 0;
  void *d = NULL;
  CT_OK(ctorch_tensor_numel(&n, src));
  CT_OK(ctorch_tensor_copy_to(v, (size_t)n * sizeof(float), src));
  CT_OK(ctorch_tensor_data_ptr(&d, dst));
  memcpy(d, v, (size_t)n * sizeof(float));
}

static void assert_equal(ctorch_tensor a, ctorch_tensor b) {
  float x[NP], y[NP];
  int64_t n = 0;
  CT_OK(ctorch_tensor_numel(&n, a));
  CT_OK(ctorch_tensor_copy_to(x, (size_t)n * sizeof(float), a));
  CT_OK(ctorch_tensor_copy_to(y, (size_t)n * sizeof(float), b));
  for (int k = 0; k < n; ++k) ck_assert_msg(x[k] == y[k], "element %d: %.9g vs %.9g", k, x[k], y[k]);
}

/* Optimizer of kind over ps[0] (group 0, options o) and ps[1..n) (group 1, lr2). */
static ctorch_optimizer make(ctorch_optimizer_kind kind, const ctorch_optim_options *o, double lr2, ctorch_tensor *ps,
                             int n) {
  ctorch_optimizer opt = NULL;
  ctorch_optim_options o2 = *o;
  o2.lr = lr2;
  CT_OK(ctorch_optimizer_new(&opt, kind, ps, 1, o));
  CT_OK(ctorch_optimizer_add_param_group(opt, ps + 1, (size_t)n - 1, &o2));
  return opt;
}

/* Runs 3 steps, saves, resumes in a fresh optimizer (built with default
 * options) over copies of the parameters, and checks that 2 more steps agree
 * exactly. */
static void resume_is_exact(ctorch_optimizer_kind kind, const ctorch_optim_options *o) {
  ctorch_tensor a[3] = {param(0, NP), param(1, 3), param(2, 1)};
  ctorch_tensor b[3] = {param(9, NP), param(9, 3), param(9, 1)};
  ctorch_optim_options dflt, got;
  ctorch_optimizer oa = make(kind, o, o->lr * 0.5, a, 3), ob = NULL;
  CT_OK(ctorch_optim_options_default(&dflt, kind));
  ob = make(kind, &dflt, dflt.lr, b, 3);
  for (int s = 0; s < 3; ++s) step(oa, a, 3, s);
  CT_OK(ctorch_optimizer_save_state_dict(oa, ct_tmp_path("state.pt")));
  for (int i = 0; i < 3; ++i) copy_values(b[i], a[i]);
  CT_OK(ctorch_optimizer_load_state_dict(ob, ct_tmp_path("state.pt")));
  CT_OK(ctorch_optimizer_get_options(&got, ob, 0));
  ck_assert(got.lr == o->lr && got.weight_decay == o->weight_decay);
  if (kind == CTORCH_OPTIM_SGD) {
    ck_assert(got.momentum == o->momentum && got.dampening == o->dampening && got.nesterov == o->nesterov);
  } else {
    ck_assert(got.beta1 == o->beta1 && got.beta2 == o->beta2 && got.eps == o->eps && got.amsgrad == o->amsgrad);
  }
  CT_OK(ctorch_optimizer_get_options(&got, ob, 1));
  ck_assert(got.lr == o->lr * 0.5);
  for (int s = 3; s < 5; ++s) {
    step(oa, a, 3, s);
    step(ob, b, 3, s);
  }
  for (int i = 0; i < 3; ++i) assert_equal(a[i], b[i]);
  ctorch_optimizer_free(oa);
  ctorch_optimizer_free(ob);
  for (int i = 0; i < 3; ++i) {
    ctorch_tensor_free(a[i]);
    ctorch_tensor_free(b[i]);
  }
}

START_TEST(sgd_momentum_resumes_exactly) {
  ctorch_optim_options o;
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
  o.lr = 0.05, o.momentum = 0.9, o.dampening = 0.1, o.weight_decay = 0.01;
  resume_is_exact(CTORCH_OPTIM_SGD, &o);
  o.dampening = 0, o.nesterov = 1;
  resume_is_exact(CTORCH_OPTIM_SGD, &o);
}
END_TEST

START_TEST(adam_and_adamw_resume_exactly) {
  ctorch_optim_options o;
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAM));
  o.lr = 0.02, o.beta1 = 0.8, o.beta2 = 0.95, o.eps = 1e-6, o.weight_decay = 0.1;
  resume_is_exact(CTORCH_OPTIM_ADAM, &o);
  o.amsgrad = 1;
  resume_is_exact(CTORCH_OPTIM_ADAM, &o);
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAMW));
  o.lr = 0.01, o.weight_decay = 0.05;
  resume_is_exact(CTORCH_OPTIM_ADAMW, &o);
}
END_TEST

/* A file this optimizer cannot take leaves it as it was: same lr, and the
 * next steps are those of an untouched twin. */
static void refused_and_unchanged(ctorch_optimizer_kind kind, const char *file, ctorch_status want, const char *needle,
                                  int nparams, int64_t size0) {
  ctorch_tensor a[2] = {param(0, size0), param(1, 3)}, b[2] = {param(0, size0), param(1, 3)};
  ctorch_optim_options o;
  double lr = 0;
  CT_OK(ctorch_optim_options_default(&o, kind));
  o.lr = 0.125;
  ctorch_optimizer oa = NULL, ob = NULL;
  CT_OK(ctorch_optimizer_new(&oa, kind, a, (size_t)nparams, &o));
  CT_OK(ctorch_optimizer_new(&ob, kind, b, (size_t)nparams, &o));
  step(oa, a, nparams, 0);
  step(ob, b, nparams, 0);
  CT_FAILS(want, ctorch_optimizer_load_state_dict(oa, file));
  CT_ERROR_HAS(needle);
  CT_OK(ctorch_optimizer_get_lr(&lr, oa, 0));
  ck_assert(lr == 0.125);
  step(oa, a, nparams, 1);
  step(ob, b, nparams, 1);
  for (int i = 0; i < nparams; ++i) assert_equal(a[i], b[i]);
  ctorch_optimizer_free(oa);
  ctorch_optimizer_free(ob);
  for (int i = 0; i < 2; ++i) {
    ctorch_tensor_free(a[i]);
    ctorch_tensor_free(b[i]);
  }
}

START_TEST(mismatches_are_refused_and_change_nothing) {
  ctorch_tensor p[2] = {param(0, NP), param(1, 3)};
  ctorch_optimizer sgd = NULL, adam = NULL;
  ctorch_optim_options o;
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
  o.momentum = 0.9;
  CT_OK(ctorch_optimizer_new(&sgd, CTORCH_OPTIM_SGD, p, 2, &o));
  step(sgd, p, 2, 0);
  CT_OK(ctorch_optimizer_save_state_dict(sgd, ct_tmp_path("sgd.pt")));
  CT_OK(ctorch_optimizer_new(&adam, CTORCH_OPTIM_ADAM, p, 2, NULL));
  step(adam, p, 2, 0);
  CT_OK(ctorch_optimizer_save_state_dict(adam, ct_tmp_path("adam.pt")));
  CT_OK(ctorch_save_dict(ct_tmp_path("weights.pt"), (const char *[]){"a", "b"}, p, 2));

  /* another optimizer's state */
  refused_and_unchanged(CTORCH_OPTIM_ADAM, ct_tmp_path("sgd.pt"), CTORCH_VALUE, "no 'betas'", 2, NP);
  refused_and_unchanged(CTORCH_OPTIM_SGD, ct_tmp_path("adam.pt"), CTORCH_VALUE, "no 'momentum'", 2, NP);
  /* another number of parameters, another shape */
  refused_and_unchanged(CTORCH_OPTIM_SGD, ct_tmp_path("sgd.pt"), CTORCH_VALUE, "has 2 parameters", 1, NP);
  refused_and_unchanged(CTORCH_OPTIM_SGD, ct_tmp_path("sgd.pt"), CTORCH_VALUE, "shape", 2, 4);
  refused_and_unchanged(CTORCH_OPTIM_ADAM, ct_tmp_path("adam.pt"), CTORCH_VALUE, "shape", 2, 2);
  /* not a state dict; no file */
  refused_and_unchanged(CTORCH_OPTIM_ADAM, ct_tmp_path("weights.pt"), CTORCH_TYPE, "state_dict", 2, NP);
  refused_and_unchanged(CTORCH_OPTIM_ADAM, ct_tmp_path("nope.pt"), CTORCH_IO, "nope.pt", 2, NP);
  ctorch_optimizer_free(sgd);
  ctorch_optimizer_free(adam);
  ctorch_tensor_free(p[0]);
  ctorch_tensor_free(p[1]);
}
END_TEST

START_TEST(unsupported_kinds_and_bad_arguments) {
  ctorch_tensor p = param(0, NP);
  ctorch_optimizer rms = NULL, sgd = NULL;
  CT_OK(ctorch_optimizer_new(&rms, CTORCH_OPTIM_RMSPROP, &p, 1, NULL));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_optimizer_save_state_dict(rms, ct_tmp_path("x.pt")));
  CT_ERROR_HAS("SGD, Adam and AdamW");
  ck_assert_int_ne(access(ct_tmp_path("x.pt"), F_OK), 0);
  CT_OK(ctorch_optimizer_new(&sgd, CTORCH_OPTIM_SGD, &p, 1, NULL));
  CT_OK(ctorch_optimizer_save_state_dict(sgd, ct_tmp_path("s.pt")));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_optimizer_load_state_dict(rms, ct_tmp_path("s.pt")));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_save_state_dict(NULL, ct_tmp_path("s.pt")));
  CT_ERROR_HAS("opt");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_save_state_dict(sgd, NULL));
  CT_ERROR_HAS("path");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_load_state_dict(sgd, ""));
  CT_FAILS(CTORCH_IO, ctorch_optimizer_save_state_dict(sgd, "/nonexistent-dir/s.pt"));
  ctorch_optimizer_free(rms);
  ctorch_optimizer_free(sgd);
  ctorch_tensor_free(p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("optim_state");
  TCase *tc = tcase_create("state_dict");
  tcase_add_checked_fixture(tc, make_dir, ct_tmp_dir_remove);
  tcase_add_test(tc, sgd_momentum_resumes_exactly);
  tcase_add_test(tc, adam_and_adamw_resume_exactly);
  tcase_add_test(tc, mismatches_are_refused_and_change_nothing);
  tcase_add_test(tc, unsupported_kinds_and_bad_arguments);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
