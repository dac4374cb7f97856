/* ctorch_optimizer_set_implementation / _get_ / _resolved_: the
 * choice and its refusals (bad enum, NULL, FOREACH/FUSED for LBFGS, FUSED
 * where the libtorch has no kernel), the default on the CPU, and that the
 * state is one format whichever implementation steps: a run that saves
 * after some foreach steps and continues in a fresh optimizer from the file
 * equals the uninterrupted run bit for bit, and an optimizer may change
 * implementation between steps. The arithmetic is compared with
 * torch.optim by foreach_vs_torch.py. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../check_main.h"

static const int64_t shape[2] = {3, 4};

static const ctorch_optimizer_kind kinds[9] = {CTORCH_OPTIM_SGD,     CTORCH_OPTIM_ADAM,  CTORCH_OPTIM_ADAMW,
                                               CTORCH_OPTIM_RMSPROP, CTORCH_OPTIM_ADAGRAD, CTORCH_OPTIM_NADAM,
                                               CTORCH_OPTIM_RADAM,   CTORCH_OPTIM_ADAMAX, CTORCH_OPTIM_ADADELTA};

static int torch2(void) {
  const char *v = NULL;
  CT_OK(ctorch_torch_version(&v));
  return v[0] >= '2';
}

/* Two parameters seeded by `seed`. */
static void params(ctorch_tensor *p, int seed) {
  CT_OK(ctorch_manual_seed(seed));
  for (int i = 0; i < 2; ++i) {
    CT_OK(ctorch_randn(&p[i], shape, 2, NULL, NULL, NULL, NULL));
    CT_OK(ctorch_tensor_set_requires_grad(p[i], 1));
  }
}

/* grad_i = p_i * 0.5 + (step-dependent) constant, set by hand: deterministic. */
static void set_grads(ctorch_tensor *p, int step) {
  for (int i = 0; i < 2; ++i) {
    ctorch_tensor g = NULL, d = NULL;
    CT_OK(ctorch_tensor_detach(&d, p[i]));
    CT_OK(ctorch_mul_Scalar(&g, d, ctorch_scalar_float(0.5 + 0.1 * step)));
    CT_OK(ctorch_tensor_set_grad(p[i], g));
    ctorch_tensor_free(g);
    ctorch_tensor_free(d);
  }
}

static ctorch_optimizer make(ctorch_optimizer_kind kind, ctorch_tensor *p) {
  ctorch_optim_options_v2 o;
  ctorch_optimizer opt = NULL;
  CT_OK(ctorch_optim_options_default_v2(&o, kind));
  o.weight_decay = 0.05;
  if (kind == CTORCH_OPTIM_SGD || kind == CTORCH_OPTIM_RMSPROP) o.momentum = 0.9;
  if (kind == CTORCH_OPTIM_ADAM || kind == CTORCH_OPTIM_ADAMW) o.amsgrad = 1;
  if (kind == CTORCH_OPTIM_RMSPROP) o.centered = 1;
  CT_OK(ctorch_optimizer_new_v2(&opt, kind, p, 2, &o));
  return opt;
}

static int equal(ctorch_tensor a, ctorch_tensor b) {
  int eq = 0;
  CT_OK(ctorch_equal(&eq, a, b));
  return eq;
}

START_TEST(choice_and_refusals) {
  ctorch_tensor p[2];
  ctorch_optim_impl impl;
  params(p, 1);
  ctorch_optimizer opt = make(CTORCH_OPTIM_ADAM, p);
  CT_OK(ctorch_optimizer_get_implementation(&impl, opt));
  ck_assert_int_eq(impl, CTORCH_OPTIM_IMPL_DEFAULT);
  CT_OK(ctorch_optimizer_resolved_implementation(&impl, opt));
  ck_assert_int_eq(impl, CTORCH_OPTIM_IMPL_FOR_LOOP);  /* CPU parameters: PyTorch's default is the for-loop */
  CT_OK(ctorch_optimizer_set_implementation(opt, CTORCH_OPTIM_IMPL_FOREACH));
  CT_OK(ctorch_optimizer_get_implementation(&impl, opt));
  ck_assert_int_eq(impl, CTORCH_OPTIM_IMPL_FOREACH);
  CT_OK(ctorch_optimizer_resolved_implementation(&impl, opt));
  ck_assert_int_eq(impl, CTORCH_OPTIM_IMPL_FOREACH);
  /* bad enum values: refused, the choice unchanged */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_set_implementation(opt, (ctorch_optim_impl)4));
  CT_ERROR_HAS("impl");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_set_implementation(opt, (ctorch_optim_impl)-1));
  CT_OK(ctorch_optimizer_get_implementation(&impl, opt));
  ck_assert_int_eq(impl, CTORCH_OPTIM_IMPL_FOREACH);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_set_implementation(NULL, CTORCH_OPTIM_IMPL_FOREACH));
  CT_ERROR_HAS("opt");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_get_implementation(NULL, opt));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_get_implementation(&impl, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_resolved_implementation(NULL, opt));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_resolved_implementation(&impl, NULL));
  /* FUSED: 2.x has CPU kernels for Adam, AdamW, SGD, Adagrad; 1.13 none */
  if (torch2()) {
    CT_OK(ctorch_optimizer_set_implementation(opt, CTORCH_OPTIM_IMPL_FUSED));
    CT_OK(ctorch_optimizer_resolved_implementation(&impl, opt));
    ck_assert_int_eq(impl, CTORCH_OPTIM_IMPL_FUSED);
  } else {
    CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_optimizer_set_implementation(opt, CTORCH_OPTIM_IMPL_FUSED));
    CT_ERROR_HAS("fused Adam");
    CT_OK(ctorch_optimizer_get_implementation(&impl, opt));
    ck_assert_int_eq(impl, CTORCH_OPTIM_IMPL_FOREACH);
  }
  ctorch_optimizer_free(opt);
  /* kinds without a fused kernel anywhere */
  opt = make(CTORCH_OPTIM_NADAM, p);
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_optimizer_set_implementation(opt, CTORCH_OPTIM_IMPL_FUSED));
  CT_ERROR_HAS("fused NAdam");
  CT_OK(ctorch_optimizer_set_implementation(opt, CTORCH_OPTIM_IMPL_FOREACH));
  ctorch_optimizer_free(opt);
  /* LBFGS: no foreach, no fused (PyTorch's neither) */
  CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_LBFGS, p, 2, NULL));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_optimizer_set_implementation(opt, CTORCH_OPTIM_IMPL_FOREACH));
  CT_ERROR_HAS("LBFGS");
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_optimizer_set_implementation(opt, CTORCH_OPTIM_IMPL_FUSED));
  CT_OK(ctorch_optimizer_set_implementation(opt, CTORCH_OPTIM_IMPL_FOR_LOOP));
  CT_OK(ctorch_optimizer_resolved_implementation(&impl, opt));
  ck_assert_int_eq(impl, CTORCH_OPTIM_IMPL_FOR_LOOP);
  ctorch_optimizer_free(opt);
  ctorch_tensor_free(p[0]);
  ctorch_tensor_free(p[1]);
}
END_TEST

/* Fused on 2.x refuses complex parameters (PyTorch: floating point only). */
START_TEST(fused_refuses_complex) {
  if (!torch2()) return;
  ctorch_tensor z = NULL;
  ctorch_dtype cf = CTORCH_COMPLEX64;
  ctorch_optimizer opt = NULL;
  CT_OK(ctorch_randn(&z, shape, 2, &cf, NULL, NULL, NULL));
  CT_OK(ctorch_tensor_set_requires_grad(z, 1));
  CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_ADAM, &z, 1, NULL));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_optimizer_set_implementation(opt, CTORCH_OPTIM_IMPL_FUSED));
  CT_ERROR_HAS("floating-point");
  CT_OK(ctorch_optimizer_set_implementation(opt, CTORCH_OPTIM_IMPL_FOREACH));  /* foreach takes complex */
  ctorch_optimizer_free(opt);
  ctorch_tensor_free(z);
}
END_TEST

/* 6 foreach steps in one run == 3 foreach steps, save, a fresh for-loop
 * optimizer loading the file and set to foreach, 3 more steps. */
START_TEST(state_file_is_shared) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/ctorch_foreach_%d.pt", (int)getpid());
  for (int k = 0; k < 9; ++k) {
    ctorch_tensor a[2], b[2];
    params(a, 3);
    params(b, 3);
    ctorch_optimizer oa = make(kinds[k], a), ob = make(kinds[k], b);
    CT_OK(ctorch_optimizer_set_implementation(oa, CTORCH_OPTIM_IMPL_FOREACH));
    CT_OK(ctorch_optimizer_set_implementation(ob, CTORCH_OPTIM_IMPL_FOREACH));
    for (int s = 0; s < 3; ++s) {
      set_grads(a, s), set_grads(b, s);
      CT_OK(ctorch_optimizer_step(oa));
      CT_OK(ctorch_optimizer_step(ob));
    }
    CT_OK(ctorch_optimizer_save(ob, path));
    ctorch_optimizer_free(ob);
    ob = make(kinds[k], b);  /* a fresh optimizer (default: for-loop) over the same tensors */
    CT_OK(ctorch_optimizer_load(ob, path));
    CT_OK(ctorch_optimizer_set_implementation(ob, CTORCH_OPTIM_IMPL_FOREACH));
    for (int s = 3; s < 6; ++s) {
      set_grads(a, s), set_grads(b, s);
      CT_OK(ctorch_optimizer_step(oa));
      CT_OK(ctorch_optimizer_step(ob));
    }
    ck_assert_msg(equal(a[0], b[0]) && equal(a[1], b[1]), "kind %d: resumed foreach run differs", (int)kinds[k]);
    /* switching implementation between steps: the for-loop continues from foreach's state */
    CT_OK(ctorch_optimizer_set_implementation(ob, CTORCH_OPTIM_IMPL_FOR_LOOP));
    set_grads(b, 6);
    CT_OK(ctorch_optimizer_step(ob));
    ck_assert(!equal(a[0], b[0]));  /* it moved */
    CT_OK(ctorch_optimizer_save(ob, path));
    ctorch_optimizer_free(oa);
    ctorch_optimizer_free(ob);
    for (int i = 0; i < 2; ++i) ctorch_tensor_free(a[i]), ctorch_tensor_free(b[i]);
  }
  unlink(path);
}
END_TEST

/* Parameters without a grad are skipped (as Python), and a group added
 * after the choice is stepped too. */
START_TEST(groups_and_missing_grads) {
  for (int k = 0; k < 9; ++k) {
    ctorch_tensor p[2], q[2];
    params(p, 5);
    params(q, 6);
    ctorch_optimizer opt = make(kinds[k], p);
    CT_OK(ctorch_optimizer_set_implementation(opt, CTORCH_OPTIM_IMPL_FOREACH));
    CT_OK(ctorch_optimizer_add_param_group_v2(opt, q, 2, NULL));
    ctorch_tensor before = NULL, g = NULL, d = NULL;
    CT_OK(ctorch_tensor_detach(&d, p[1]));
    CT_OK(ctorch_clone(&before, d, NULL));
    /* grads on p[0] and q[0] only */
    CT_OK(ctorch_ones_like(&g, d, NULL, NULL, NULL, NULL, NULL));
    CT_OK(ctorch_tensor_set_grad(p[0], g));
    CT_OK(ctorch_tensor_set_grad(q[0], g));
    CT_OK(ctorch_optimizer_step(opt));
    ck_assert_msg(equal(before, p[1]), "kind %d stepped a parameter without a grad", (int)kinds[k]);
    CT_OK(ctorch_optimizer_step(opt));
    ctorch_tensor_free(before), ctorch_tensor_free(g), ctorch_tensor_free(d);
    ctorch_optimizer_free(opt);
    for (int i = 0; i < 2; ++i) ctorch_tensor_free(p[i]), ctorch_tensor_free(q[i]);
  }
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("optim_foreach");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, choice_and_refusals);
  tcase_add_test(tc, fused_refuses_complex);
  tcase_add_test(tc, state_file_is_shared);
  tcase_add_test(tc, groups_and_missing_grads);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
