/* Optimizers, schedules and init: each optimizer's first two steps against
 * its update rule written out by hand in double precision. */
#define _GNU_SOURCE
#include <math.h>
#include <unistd.h>

#include "check_main.h"

#define NP 3

static ctorch_tensor dvec(const double *v, size_t n) {
  int64_t sz = (int64_t)n;
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_from_data(&t, v, n * sizeof(double), &sz, 1, CTORCH_FLOAT64));
  return t;
}

static ctorch_tensor param(const double *v) {
  ctorch_tensor t = dvec(v, NP);
  CT_OK(ctorch_tensor_set_requires_grad(t, 1));
  return t;
}

static void set_grad(ctorch_tensor p, const double *g) {
  ctorch_tensor gt = dvec(g, NP);
  CT_OK(ctorch_tensor_set_grad(p, gt));
  ctorch_tensor_free(gt);
}

static void expect_values(ctorch_tensor t, const double *want, double tol) {
  double got[NP];
  int i;
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, t));
  for (i = 0; i < NP; ++i)
    ck_assert_msg(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])), "element %d: got %.17g want %.17g", i, got[i], want[i]);
}

static const double P0[NP] = {1.0, -2.0, 0.5};
static const double G[2][NP] = {{0.5, -1.0, 2.0}, {-0.3, 0.25, 1.5}};

/* Runs two steps of `kind` with options o and returns the parameter values. */
static void run_two_steps(ctorch_optimizer_kind kind, const ctorch_optim_options *o, double *out) {
  ctorch_tensor p = param(P0);
  ctorch_optimizer opt = NULL;
  int s;
  CT_OK(ctorch_optimizer_new(&opt, kind, &p, 1, o));
  for (s = 0; s < 2; ++s) {
    set_grad(p, G[s]);
    CT_OK(ctorch_optimizer_step(opt));
  }
  CT_OK(ctorch_tensor_copy_to(out, NP * sizeof(double), p));
  ctorch_optimizer_free(opt);
  ctorch_tensor_free(p);
}

static void check_close(const double *got, const double *want) {
  int i;
  for (i = 0; i < NP; ++i)
    ck_assert_msg(fabs(got[i] - want[i]) <= 1e-12 * (1 + fabs(want[i])), "element %d: got %.17g want %.17g", i, got[i], want[i]);
}

static void sgd_case(double momentum, double dampening, int nesterov, double wd) {
  ctorch_optim_options o;
  double p[NP], buf[NP], got[NP];
  int s, i;
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
  o.lr = 0.1;
  o.momentum = momentum;
  o.dampening = dampening;
  o.nesterov = nesterov;
  o.weight_decay = wd;
  run_two_steps(CTORCH_OPTIM_SGD, &o, got);
  memcpy(p, P0, sizeof p);
  for (s = 0; s < 2; ++s)
    for (i = 0; i < NP; ++i) {
      double d = G[s][i] + wd * p[i];
      if (momentum != 0) {
        buf[i] = s == 0 ? d : momentum * buf[i] + (1 - dampening) * d;
        d = nesterov ? d + momentum * buf[i] : buf[i];
      }
      p[i] -= 0.1 * d;
    }
  check_close(got, p);
}

START_TEST(sgd_plain) { sgd_case(0, 0, 0, 0); }
END_TEST
START_TEST(sgd_momentum_dampening_weight_decay) { sgd_case(0.9, 0.2, 0, 0.01); }
END_TEST
START_TEST(sgd_nesterov) { sgd_case(0.8, 0, 1, 0.05); }
END_TEST

static void adam_case(ctorch_optimizer_kind kind, double wd, int amsgrad) {
  ctorch_optim_options o;
  double p[NP], m[NP] = {0}, v[NP] = {0}, vmax[NP] = {0}, got[NP];
  const double lr = 0.01, b1 = 0.8, b2 = 0.95, eps = 1e-6;
  int s, i;
  CT_OK(ctorch_optim_options_default(&o, kind));
  o.lr = lr;
  o.beta1 = b1;
  o.beta2 = b2;
  o.eps = eps;
  o.weight_decay = wd;
  o.amsgrad = amsgrad;
  run_two_steps(kind, &o, got);
  memcpy(p, P0, sizeof p);
  for (s = 0; s < 2; ++s) {
    double bc1 = 1 - pow(b1, s + 1), bc2 = 1 - pow(b2, s + 1);
    for (i = 0; i < NP; ++i) {
      double g = G[s][i], denom;
      if (kind == CTORCH_OPTIM_ADAMW) p[i] *= 1 - lr * wd;
      else g += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      if (vmax[i] < v[i]) vmax[i] = v[i];
      denom = sqrt(amsgrad ? vmax[i] : v[i]) / sqrt(bc2) + eps;
      p[i] -= lr / bc1 * m[i] / denom;
    }
  }
  check_close(got, p);
}

START_TEST(adam_rule) { adam_case(CTORCH_OPTIM_ADAM, 0.1, 0); }
END_TEST
START_TEST(adam_amsgrad_rule) { adam_case(CTORCH_OPTIM_ADAM, 0, 1); }
END_TEST
START_TEST(adamw_rule) { adam_case(CTORCH_OPTIM_ADAMW, 0.1, 0); }
END_TEST

static void rmsprop_case(double momentum, int centered) {
  ctorch_optim_options o;
  double p[NP], sq[NP] = {0}, ga[NP] = {0}, buf[NP] = {0}, got[NP];
  const double lr = 0.01, alpha = 0.9, eps = 1e-8, wd = 0.02;
  int s, i;
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_RMSPROP));
  o.lr = lr;
  o.alpha = alpha;
  o.eps = eps;
  o.weight_decay = wd;
  o.momentum = momentum;
  o.centered = centered;
  run_two_steps(CTORCH_OPTIM_RMSPROP, &o, got);
  memcpy(p, P0, sizeof p);
  for (s = 0; s < 2; ++s)
    for (i = 0; i < NP; ++i) {
      double g = G[s][i] + wd * p[i], avg;
      sq[i] = alpha * sq[i] + (1 - alpha) * g * g;
      if (centered) {
        ga[i] = alpha * ga[i] + (1 - alpha) * g;
        avg = sqrt(sq[i] - ga[i] * ga[i]) + eps;
      } else {
        avg = sqrt(sq[i]) + eps;
      }
      if (momentum > 0) {
        buf[i] = momentum * buf[i] + g / avg;
        p[i] -= lr * buf[i];
      } else {
        p[i] -= lr * g / avg;
      }
    }
  check_close(got, p);
}

START_TEST(rmsprop_rule) { rmsprop_case(0, 0); }
END_TEST
START_TEST(rmsprop_centered_momentum_rule) { rmsprop_case(0.5, 1); }
END_TEST

START_TEST(adagrad_rule) {
  ctorch_optim_options o;
  double p[NP], sum[NP], got[NP];
  const double lr = 0.1, lr_decay = 0.05, wd = 0.01, init = 0.2, eps = 1e-10;
  int s, i;
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAGRAD));
  o.lr = lr;
  o.lr_decay = lr_decay;
  o.weight_decay = wd;
  o.initial_accumulator_value = init;
  run_two_steps(CTORCH_OPTIM_ADAGRAD, &o, got);
  memcpy(p, P0, sizeof p);
  for (i = 0; i < NP; ++i) sum[i] = init;
  for (s = 0; s < 2; ++s) {
    double clr = lr / (1 + s * lr_decay);
    for (i = 0; i < NP; ++i) {
      double g = G[s][i] + wd * p[i];
      sum[i] += g * g;
      p[i] -= clr * g / (sqrt(sum[i]) + eps);
    }
  }
  check_close(got, p);
}
END_TEST

/* A parameter group added to Adagrad later gets its state (sum =
 * initial_accumulator_value) as the constructor's groups do: libtorch made
 * it in the constructor only, so step() failed an internal assert and left a
 * null state that ctorch_optimizer_save then dereferenced (SIGSEGV). */
START_TEST(adagrad_added_group) {
  static const double a0[NP] = {1, 1, 1}, b0[NP] = {2, -1, 0.5}, g[NP] = {1, 2, 3};
  const double lr = 0.1, init = 0.3, eps = 1e-10;
  ctorch_tensor a = param(a0), b = param(b0);
  ctorch_optimizer opt = NULL;
  ctorch_optim_options o;
  double got[NP];
  char path[] = "/tmp/ctorch_adagrad_XXXXXX";
  int fd = mkstemp(path), i;
  ck_assert_int_ge(fd, 0);
  close(fd);
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAGRAD));
  o.lr = lr;
  CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_ADAGRAD, &a, 1, &o));
  o.initial_accumulator_value = init;
  CT_OK(ctorch_optimizer_add_param_group(opt, &b, 1, &o));
  set_grad(a, g);
  set_grad(b, g);
  CT_OK(ctorch_optimizer_step(opt));
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, b));
  for (i = 0; i < NP; ++i) ck_assert(fabs(got[i] - (b0[i] - lr * g[i] / (sqrt(init + g[i] * g[i]) + eps))) < 1e-9);
  CT_OK(ctorch_optimizer_save(opt, path));
  CT_OK(ctorch_optimizer_load(opt, path));
  unlink(path);
  ctorch_optimizer_free(opt);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
}
END_TEST

START_TEST(defaults_match_pytorch) {
  ctorch_optim_options o;
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAMW));
  ck_assert(o.lr == 1e-3 && o.weight_decay == 1e-2 && o.beta1 == 0.9 && o.beta2 == 0.999 && o.eps == 1e-8);
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAM));
  ck_assert(o.weight_decay == 0 && o.amsgrad == 0);
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_RMSPROP));
  ck_assert(o.lr == 1e-2 && o.alpha == 0.99);
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAGRAD));
  ck_assert(o.eps == 1e-10);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optim_options_default(&o, (ctorch_optimizer_kind)10));
}
END_TEST

START_TEST(param_groups_and_lr) {
  static const double a0[NP] = {1, 1, 1}, b0[NP] = {2, 2, 2}, g[NP] = {1, 2, 3};
  ctorch_tensor a = param(a0), b = param(b0);
  ctorch_optimizer opt = NULL;
  ctorch_optim_options o, got;
  ctorch_tensor_list lst = NULL;
  size_t n = 0;
  double lr = 0, wa[NP], wb[NP];
  int i;
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
  o.lr = 0.1;
  CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, &a, 1, &o));
  o.lr = 0.5;
  o.momentum = 0.3;
  CT_OK(ctorch_optimizer_add_param_group(opt, &b, 1, &o));
  CT_OK(ctorch_optimizer_num_param_groups(&n, opt));
  ck_assert_uint_eq(n, 2);
  CT_OK(ctorch_optimizer_get_lr(&lr, opt, 1));
  ck_assert(lr == 0.5);
  CT_OK(ctorch_optimizer_get_options(&got, opt, 1));
  ck_assert(got.momentum == 0.3 && got.lr == 0.5);
  CT_OK(ctorch_optimizer_get_options(&got, opt, 0));
  ck_assert(got.momentum == 0 && got.lr == 0.1);
  CT_OK(ctorch_optimizer_params(&lst, opt, 1));
  CT_OK(ctorch_tensor_list_size(&n, lst));
  ck_assert_uint_eq(n, 1);
  ctorch_tensor_list_free(lst);
  /* a parameter cannot be in two groups */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_add_param_group(opt, &a, 1, NULL));
  CT_ERROR_HAS("ctorch_optimizer_add_param_group");
  CT_FAILS(CTORCH_INDEX, ctorch_optimizer_get_lr(&lr, opt, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_set_lr(opt, 0, -1.0));
  CT_OK(ctorch_optimizer_set_lr(opt, 0, 0.25));
  set_grad(a, g);
  set_grad(b, g);
  CT_OK(ctorch_optimizer_step(opt));
  for (i = 0; i < NP; ++i) {
    wa[i] = a0[i] - 0.25 * g[i];
    wb[i] = b0[i] - 0.5 * g[i];
  }
  expect_values(a, wa, 1e-15);
  expect_values(b, wb, 1e-15);
  ctorch_optimizer_free(opt);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
}
END_TEST

START_TEST(zero_grad_modes) {
  static const double g[NP] = {1, 2, 3}, z[NP] = {0, 0, 0};
  ctorch_tensor p = param(P0), gr = NULL;
  ctorch_optimizer opt = NULL;
  CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_ADAM, &p, 1, NULL));
  set_grad(p, g);
  CT_OK(ctorch_optimizer_zero_grad(opt, 0));
  CT_OK(ctorch_tensor_grad(&gr, p));
  ck_assert_ptr_nonnull(gr);
  expect_values(gr, z, 0);
  ctorch_tensor_free(gr);
  CT_OK(ctorch_optimizer_zero_grad(opt, 1));
  CT_OK(ctorch_tensor_grad(&gr, p));
  ck_assert_ptr_null(gr);
  /* a step with no gradients leaves the parameter alone */
  CT_OK(ctorch_optimizer_step(opt));
  expect_values(p, P0, 0);
  ctorch_optimizer_free(opt);
  ctorch_tensor_free(p);
}
END_TEST

START_TEST(bad_arguments) {
  static const double v[NP] = {1, 2, 3};
  ctorch_optimizer opt = (ctorch_optimizer)1;
  ctorch_optim_options o;
  ctorch_tensor p = param(P0), c = NULL, q = dvec(v, NP), i64 = NULL;
  int64_t sz = 2, iv[2] = {1, 2};
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, NULL, 0, NULL));
  ck_assert_ptr_null(opt);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new(&opt, (ctorch_optimizer_kind)-1, &p, 1, NULL));
  CT_ERROR_HAS("kind");
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
  o.nesterov = 1;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, &p, 1, &o));
  CT_ERROR_HAS("nesterov");
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAM));
  o.beta1 = 1.0;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new(&opt, CTORCH_OPTIM_ADAM, &p, 1, &o));
  CT_ERROR_HAS("beta1");
  /* a computed (non-leaf) tensor */
  CT_OK(ctorch_tensor_clone(&c, p));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, &c, 1, NULL));
  CT_ERROR_HAS("leaf");
  CT_OK(ctorch_tensor_from_data(&i64, iv, sizeof iv, &sz, 1, CTORCH_INT64));
  CT_FAILS(CTORCH_TYPE, ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, &i64, 1, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_step(NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_optimizer_zero_grad(NULL, 1));
  ctorch_optimizer_free(NULL);
  ctorch_tensor_free(c);
  ctorch_tensor_free(q);
  ctorch_tensor_free(i64);
  ctorch_tensor_free(p);
}
END_TEST

START_TEST(state_save_load) {
  char path[] = "/tmp/ctorch_optim_XXXXXX", junk[] = "/tmp/ctorch_junk_XXXXXX", sgdp[] = "/tmp/ctorch_sgd_XXXXXX";
  int fd = mkstemp(path), fj = mkstemp(junk), fs = mkstemp(sgdp);
  ctorch_tensor a = param(P0), b = param(P0), c = param(P0);
  ctorch_optimizer oa = NULL, ob = NULL, oc = NULL, os = NULL;
  double va[NP], vb[NP], vc[NP];
  int i, differs = 0;
  FILE *f;
  ck_assert(fd >= 0 && fj >= 0 && fs >= 0);
  close(fd);
  f = fdopen(fj, "w");
  fputs("this is not an archive", f);
  fclose(f);
  close(fs);
  CT_OK(ctorch_optimizer_new(&oa, CTORCH_OPTIM_ADAM, &a, 1, NULL));
  CT_OK(ctorch_optimizer_new(&ob, CTORCH_OPTIM_ADAM, &b, 1, NULL));
  CT_OK(ctorch_optimizer_new(&oc, CTORCH_OPTIM_ADAM, &c, 1, NULL));
  /* a and b (and c) take the same first step; b then gets a's state from disk */
  set_grad(a, G[0]);
  CT_OK(ctorch_optimizer_step(oa));
  set_grad(b, G[0]);
  CT_OK(ctorch_optimizer_step(ob));
  set_grad(c, G[0]);
  CT_OK(ctorch_optimizer_step(oc));
  CT_OK(ctorch_optimizer_save(oa, path));
  CT_OK(ctorch_optimizer_set_lr(oa, 0, 0.005));
  CT_OK(ctorch_optimizer_save(oa, path));
  /* a fresh optimizer over b with its state replaced by a's */
  ctorch_optimizer_free(ob);
  CT_OK(ctorch_optimizer_new(&ob, CTORCH_OPTIM_ADAM, &b, 1, NULL));
  CT_OK(ctorch_optimizer_load(ob, path));
  {
    double lr = 0;
    CT_OK(ctorch_optimizer_get_lr(&lr, ob, 0));
    ck_assert(lr == 0.005);
  }
  /* c keeps its own state but gets the same lr, so only the state differs */
  ctorch_optimizer_free(oc);
  CT_OK(ctorch_optimizer_new(&oc, CTORCH_OPTIM_ADAM, &c, 1, NULL));
  CT_OK(ctorch_optimizer_set_lr(oc, 0, 0.005));
  set_grad(a, G[1]);
  set_grad(b, G[1]);
  set_grad(c, G[1]);
  CT_OK(ctorch_optimizer_step(oa));
  CT_OK(ctorch_optimizer_step(ob));
  CT_OK(ctorch_optimizer_step(oc));
  CT_OK(ctorch_tensor_copy_to(va, sizeof va, a));
  CT_OK(ctorch_tensor_copy_to(vb, sizeof vb, b));
  CT_OK(ctorch_tensor_copy_to(vc, sizeof vc, c));
  for (i = 0; i < NP; ++i) {
    ck_assert_msg(va[i] == vb[i], "restored state differs at %d: %.17g vs %.17g", i, va[i], vb[i]);
    if (vc[i] != va[i]) differs = 1;
  }
  ck_assert_msg(differs, "a fresh optimizer gave the same result: the state was not exercised");
  /* errors: missing file, garbage file, state of another kind */
  CT_FAILS(CTORCH_IO, ctorch_optimizer_load(ob, "/nonexistent/ctorch/state.pt"));
  CT_ERROR_HAS("ctorch_optimizer_load");
  CT_FAILS(CTORCH_IO, ctorch_optimizer_load(ob, junk));
  CT_FAILS(CTORCH_IO, ctorch_optimizer_save(ob, "/nonexistent/dir/state.pt"));
  CT_OK(ctorch_optimizer_new(&os, CTORCH_OPTIM_SGD, &c, 1, NULL));
  CT_OK(ctorch_optimizer_save(os, sgdp));
  ck_assert_int_ne(ctorch_optimizer_load(ob, sgdp), CTORCH_OK);
  /* the failed loads left ob usable */
  CT_OK(ctorch_optimizer_step(ob));
  ctorch_optimizer_free(oa);
  ctorch_optimizer_free(ob);
  ctorch_optimizer_free(oc);
  ctorch_optimizer_free(os);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(c);
  unlink(path);
  unlink(junk);
  unlink(sgdp);
}
END_TEST

START_TEST(step_lr_schedule) {
  /* PyTorch: StepLR(step_size=3, gamma=0.1) from lr 1.0 gives 1,1,1,.1,.1,.1,.01 */
  static const double want[7] = {1, 1, 1, 0.1, 0.1, 0.1, 0.01};
  ctorch_tensor p = param(P0), q = param(P0);
  ctorch_optimizer opt = NULL;
  ctorch_lr_scheduler s = NULL;
  ctorch_optim_options o;
  int e;
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
  o.lr = 1.0;
  CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, &p, 1, &o));
  o.lr = 4.0;
  CT_OK(ctorch_optimizer_add_param_group(opt, &q, 1, &o));
  CT_OK(ctorch_lr_scheduler_step_lr(&s, opt, 3, 0.1));
  /* the scheduler keeps the optimizer alive */
  ctorch_optimizer_free(opt);
  for (e = 0; e < 7; ++e) {
    double lr0 = 0, lr1 = 0;
    int64_t ep = -1;
    CT_OK(ctorch_lr_scheduler_epoch(&ep, s));
    ck_assert_int_eq(ep, e);
    CT_OK(ctorch_lr_scheduler_get_last_lr(&lr0, s, 0));
    CT_OK(ctorch_lr_scheduler_get_last_lr(&lr1, s, 1));
    ck_assert_msg(fabs(lr0 - want[e]) < 1e-15, "epoch %d: lr %.17g want %.17g", e, lr0, want[e]);
    ck_assert_msg(fabs(lr1 - 4 * want[e]) < 1e-14, "epoch %d: group 1 lr %.17g", e, lr1);
    CT_OK(ctorch_lr_scheduler_step(s));
  }
  {
    double x = 0;
    CT_FAILS(CTORCH_INDEX, ctorch_lr_scheduler_get_last_lr(&x, s, 2));
  }
  {
    ctorch_lr_scheduler s2 = NULL; /* a failing call NULLs its out-param: not s */
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_step_lr(&s2, NULL, 3, 0.1));
    /* the message names the function called, not the one it shares code with */
    CT_ERROR_HAS("ctorch_lr_scheduler_step_lr");
    ck_assert_msg(strstr(ctorch_last_error(), "ctorch_lr_scheduler_new") == NULL, "%s", ctorch_last_error());
  }
  ctorch_lr_scheduler_free(s);
  ctorch_tensor_free(p);
  ctorch_tensor_free(q);
}
END_TEST

START_TEST(cosine_schedule_matches_recursive_form) {
  /* PyTorch's CosineAnnealingLR.get_lr() is a recursive (chainable) form;
   * the closed form we use must agree with it, also past t_max. */
  const double base = 0.2, eta_min = 0.01;
  const int64_t tmax = 5;
  ctorch_tensor p = param(P0);
  ctorch_optimizer opt = NULL;
  ctorch_lr_scheduler s = NULL;
  ctorch_optim_options o;
  double rec = base;
  int64_t e;
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAMW));
  o.lr = base;
  CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_ADAMW, &p, 1, &o));
  CT_OK(ctorch_lr_scheduler_cosine(&s, opt, tmax, eta_min));
  for (e = 0; e < 13; ++e) {
    double lr = 0, glr = 0;
    if (e == 0) rec = base;
    else if ((e - 1 - tmax) % (2 * tmax) == 0) rec = rec + (base - eta_min) * (1 - cos(M_PI / tmax)) / 2;
    else rec = (1 + cos(M_PI * e / tmax)) / (1 + cos(M_PI * (e - 1) / tmax)) * (rec - eta_min) + eta_min;
    CT_OK(ctorch_lr_scheduler_get_last_lr(&lr, s, 0));
    CT_OK(ctorch_optimizer_get_lr(&glr, opt, 0));
    ck_assert(lr == glr);
    ck_assert_msg(fabs(lr - rec) < 1e-12, "epoch %lld: %.17g vs recursive %.17g", (long long)e, lr, rec);
    CT_OK(ctorch_lr_scheduler_step(s));
  }
  {
    ctorch_lr_scheduler s2 = NULL; /* a failing call NULLs its out-param: not s */
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_cosine(&s2, opt, 0, 0));
    CT_ERROR_HAS("ctorch_lr_scheduler_cosine");
    CT_ERROR_HAS("t_max");
    ck_assert_msg(strstr(ctorch_last_error(), "ctorch_lr_scheduler_new") == NULL, "%s", ctorch_last_error());
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_step_lr(&s2, opt, 0, 0.1));
    CT_ERROR_HAS("ctorch_lr_scheduler_step_lr");
    CT_ERROR_HAS("step_size");
  }
  ctorch_lr_scheduler_free(s);
  ctorch_lr_scheduler_free(NULL);
  ctorch_optimizer_free(opt);
  ctorch_tensor_free(p);
}
END_TEST

/* ---- init ---------------------------------------------------------------- */

static ctorch_tensor fzeros(const int64_t *sizes, size_t ndim) {
  size_t n = 1, i;
  float *buf;
  ctorch_tensor t = NULL;
  for (i = 0; i < ndim; ++i) n *= (size_t)sizes[i];
  buf = calloc(n, sizeof(float));
  CT_OK(ctorch_tensor_from_data(&t, buf, n * sizeof(float), sizes, ndim, CTORCH_FLOAT32));
  free(buf);
  return t;
}

static void min_max_mean_sd(ctorch_tensor t, double *mn, double *mx, double *mean, double *sd) {
  int64_t n = 0, i;
  float *p = NULL;
  double s = 0, s2 = 0;
  CT_OK(ctorch_tensor_numel(&n, t));
  CT_OK(ctorch_tensor_data_ptr((void **)&p, t));
  *mn = INFINITY;
  *mx = -INFINITY;
  for (i = 0; i < n; ++i) {
    if (p[i] < *mn) *mn = p[i];
    if (p[i] > *mx) *mx = p[i];
    s += p[i];
    s2 += (double)p[i] * p[i];
  }
  *mean = s / n;
  *sd = sqrt(s2 / n - *mean * *mean);
}

/* The schedules' failure paths (their values are compared with torch in
 * tests/train/schedules_vs_torch.py): every refusal names the argument or
 * field and leaves the lrs alone; a failing callback's status comes back. */
static int lambda_calls;
static ctorch_status failing_lambda(void *user, int64_t epoch, size_t group, double *f) {
  (void)user, (void)group;
  ++lambda_calls;
  *f = 0.5;
  return epoch >= 2 ? CTORCH_VALUE : CTORCH_OK;
}

START_TEST(schedule_failures) {
  ctorch_tensor p = param(P0), q = param(P0);
  ctorch_optimizer opt = NULL, other = NULL, ada = NULL;
  ctorch_lr_scheduler s = NULL, s2 = NULL, seq[2] = {NULL, NULL}, bad = (ctorch_lr_scheduler)0x1;
  ctorch_lr_schedule_options o;
  ctorch_optim_options oo;
  double lr = 0;
  int64_t ms[1] = {3};
  CT_OK(ctorch_optim_options_default(&oo, CTORCH_OPTIM_SGD));
  CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, &p, 1, &oo));
  CT_OK(ctorch_optimizer_new(&other, CTORCH_OPTIM_SGD, &q, 1, &oo));
  CT_OK(ctorch_optimizer_new(&ada, CTORCH_OPTIM_ADAGRAD, &q, 1, NULL));

  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_schedule_options_default(&o, (ctorch_lr_schedule)99));
  CT_ERROR_HAS("argument 'kind'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_schedule_options_default(NULL, CTORCH_LR_STEP));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_new(&bad, opt, (ctorch_lr_schedule)-1, NULL));
  ck_assert_ptr_null(bad);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_new(&s, NULL, CTORCH_LR_EXPONENTIAL, NULL));
  CT_ERROR_HAS("argument 'opt'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_STEP, NULL));
  CT_ERROR_HAS("argument 'options'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_MULTI_STEP, NULL));
  CT_ERROR_HAS("ctorch_lr_scheduler_multi_step");
  CT_OK(ctorch_lr_schedule_options_default(&o, CTORCH_LR_LINEAR));
  o.start_factor = 0;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_LINEAR, &o));
  CT_ERROR_HAS("argument 'start_factor'");
  CT_OK(ctorch_lr_schedule_options_default(&o, CTORCH_LR_CYCLIC));
  o.base_lr = 0.01, o.max_lr = 0.1, o.mode = 7;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_CYCLIC, &o));
  CT_ERROR_HAS("argument 'mode'");
  o.mode = CTORCH_CYCLIC_TRIANGULAR;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_new(&s, ada, CTORCH_LR_CYCLIC, &o));
  CT_ERROR_HAS("argument 'cycle_momentum'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_multi_step(&s, opt, NULL, 2, 0.1));
  CT_ERROR_HAS("argument 'milestones'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_lambda(&s, opt, CTORCH_LR_LAMBDA, NULL, NULL));
  CT_ERROR_HAS("argument 'fn'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_lambda(&s, opt, CTORCH_LR_STEP, failing_lambda, NULL));
  CT_ERROR_HAS("argument 'kind'");
  ck_assert_ptr_null(s);

  /* a callback failing at epoch 2: the step fails with its status, lr and epoch unchanged */
  CT_OK(ctorch_lr_scheduler_lambda(&s, opt, CTORCH_LR_MULTIPLICATIVE, failing_lambda, NULL));
  CT_OK(ctorch_lr_scheduler_step(s));
  CT_OK(ctorch_optimizer_get_lr(&lr, opt, 0));
  ck_assert(lr == 0.01 * 0.5);
  CT_FAILS(CTORCH_VALUE, ctorch_lr_scheduler_step(s));
  CT_ERROR_HAS("lr_lambda callback returned CTORCH_VALUE at epoch 2");
  CT_OK(ctorch_optimizer_get_lr(&lr, opt, 0));
  ck_assert(lr == 0.01 * 0.5);
  {
    int64_t ep = 0;
    CT_OK(ctorch_lr_scheduler_epoch(&ep, s));
    ck_assert_int_eq(ep, 1);
  }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_step_metric(s, 1.0));
  CT_ERROR_HAS("is not a ReduceLROnPlateau");
  ctorch_lr_scheduler_free(s);
  s = NULL;

  CT_OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_REDUCE_ON_PLATEAU, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_step(s));
  CT_ERROR_HAS("ctorch_lr_scheduler_step_metric");
  /* a plateau cannot be sequenced */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_chained(&s2, &s, 1));
  CT_ERROR_HAS("ReduceLROnPlateau");
  ctorch_lr_scheduler_free(s);

  CT_OK(ctorch_lr_scheduler_new(&seq[0], opt, CTORCH_LR_EXPONENTIAL, NULL));
  CT_OK(ctorch_lr_scheduler_new(&seq[1], other, CTORCH_LR_EXPONENTIAL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_sequential(&s2, opt, seq, 2, ms, 1));
  CT_ERROR_HAS("schedules another optimizer");
  ctorch_lr_scheduler_free(seq[1]);
  CT_OK(ctorch_lr_scheduler_new(&seq[1], opt, CTORCH_LR_EXPONENTIAL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_sequential(&s2, opt, seq, 2, ms, 0));
  CT_ERROR_HAS("argument 'n_milestones'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_chained(&s2, seq, 0));
  CT_ERROR_HAS("argument 'n'");
  {
    ctorch_lr_scheduler with_null[2] = {seq[0], NULL};
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_chained(&s2, with_null, 2));
    CT_ERROR_HAS("entry 1 is NULL");
  }
  ck_assert_ptr_null(s2);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_step(NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_step_metric(NULL, 0.0));
  ctorch_lr_scheduler_free(seq[0]);
  ctorch_lr_scheduler_free(seq[1]);
  ctorch_optimizer_free(opt);
  ctorch_optimizer_free(other);
  ctorch_optimizer_free(ada);
  ctorch_tensor_free(p);
  ctorch_tensor_free(q);
}
END_TEST

START_TEST(init_gains_and_fans) {
  static const int64_t conv[4] = {16, 6, 5, 5};
  ctorch_tensor w = fzeros(conv, 4), v = fzeros(conv, 1);
  double g = 0;
  int64_t fi = 0, fo = 0;
  CT_OK(ctorch_init_calculate_gain(&g, CTORCH_NONLINEARITY_RELU, 0));
  ck_assert(fabs(g - sqrt(2.0)) < 1e-15);
  CT_OK(ctorch_init_calculate_gain(&g, CTORCH_NONLINEARITY_TANH, 0));
  ck_assert(fabs(g - 5.0 / 3) < 1e-15);
  CT_OK(ctorch_init_calculate_gain(&g, CTORCH_NONLINEARITY_LEAKY_RELU, sqrt(5.0)));
  ck_assert(fabs(g - sqrt(2.0 / 6)) < 1e-15);
  CT_OK(ctorch_init_calculate_gain(&g, CTORCH_NONLINEARITY_SIGMOID, 0));
  ck_assert(g == 1.0);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_init_calculate_gain(&g, (ctorch_nonlinearity)42, 0));
  CT_OK(ctorch_init_calculate_fan_in_and_fan_out(&fi, &fo, w));
  ck_assert_int_eq(fi, 6 * 25);
  ck_assert_int_eq(fo, 16 * 25);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_init_calculate_fan_in_and_fan_out(&fi, &fo, v));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_init_kaiming_uniform_(v, 0, CTORCH_FAN_IN, CTORCH_NONLINEARITY_RELU));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_init_kaiming_uniform_(w, 0, (ctorch_fan_mode)7, CTORCH_NONLINEARITY_RELU));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_init_uniform_(NULL, 0, 1));
  ctorch_tensor_free(w);
  ctorch_tensor_free(v);
}
END_TEST

START_TEST(init_distributions) {
  static const int64_t big[2] = {400, 250}; /* fan_in 250, fan_out 400 */
  ctorch_tensor w = fzeros(big, 2);
  double mn, mx, mean, sd, b;
  int leaf = 0;
  CT_OK(ctorch_tensor_set_requires_grad(w, 1));
  /* kaiming_uniform_(a=sqrt(5)) as nn.Linear does: bound = sqrt(6/((1+5) fan_in)) */
  CT_OK(ctorch_init_kaiming_uniform_(w, sqrt(5.0), CTORCH_FAN_IN, CTORCH_NONLINEARITY_LEAKY_RELU));
  min_max_mean_sd(w, &mn, &mx, &mean, &sd);
  b = 1.0 / sqrt(250.0);
  ck_assert_msg(mn >= -b && mx <= b && mx > 0.99 * b && mn < -0.99 * b, "range [%g, %g] vs bound %g", mn, mx, b);
  ck_assert(fabs(sd - b / sqrt(3.0)) < 0.02 * b);
  /* init records no graph: w stays a leaf without grad_fn */
  CT_OK(ctorch_tensor_is_leaf(&leaf, w));
  ck_assert_int_eq(leaf, 1);
  CT_OK(ctorch_init_kaiming_normal_(w, 0, CTORCH_FAN_OUT, CTORCH_NONLINEARITY_RELU));
  min_max_mean_sd(w, &mn, &mx, &mean, &sd);
  ck_assert_msg(fabs(sd - sqrt(2.0 / 400)) < 0.02 * sqrt(2.0 / 400), "kaiming_normal sd %g", sd);
  CT_OK(ctorch_init_xavier_uniform_(w, 2.0));
  min_max_mean_sd(w, &mn, &mx, &mean, &sd);
  b = 2.0 * sqrt(6.0 / 650);
  ck_assert(mn >= -b && mx <= b && mx > 0.99 * b);
  CT_OK(ctorch_init_xavier_normal_(w, 1.0));
  min_max_mean_sd(w, &mn, &mx, &mean, &sd);
  ck_assert(fabs(sd - sqrt(2.0 / 650)) < 0.02 * sqrt(2.0 / 650));
  CT_OK(ctorch_init_normal_(w, 3.0, 0.5));
  min_max_mean_sd(w, &mn, &mx, &mean, &sd);
  ck_assert(fabs(mean - 3.0) < 0.01 && fabs(sd - 0.5) < 0.01);
  CT_OK(ctorch_init_uniform_(w, -3.0, -1.0));
  min_max_mean_sd(w, &mn, &mx, &mean, &sd);
  ck_assert(mn >= -3.0 && mx <= -1.0 && fabs(mean + 2.0) < 0.01);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_init_uniform_(w, 1.0, -1.0));
  CT_OK(ctorch_init_constant_(w, 0.75));
  min_max_mean_sd(w, &mn, &mx, &mean, &sd);
  ck_assert(mn == 0.75 && mx == 0.75);
  CT_OK(ctorch_init_ones_(w));
  min_max_mean_sd(w, &mn, &mx, &mean, &sd);
  ck_assert(mn == 1 && mx == 1);
  CT_OK(ctorch_init_zeros_(w));
  min_max_mean_sd(w, &mn, &mx, &mean, &sd);
  ck_assert(mn == 0 && mx == 0);
  ctorch_tensor_free(w);
}
END_TEST

START_TEST(init_is_seeded) {
  static const int64_t sz[2] = {8, 8};
  ctorch_tensor a = fzeros(sz, 2), b = fzeros(sz, 2);
  float va[64], vb[64];
  CT_OK(ctorch_manual_seed(7));
  CT_OK(ctorch_init_xavier_uniform_(a, 1.0));
  CT_OK(ctorch_manual_seed(7));
  CT_OK(ctorch_init_xavier_uniform_(b, 1.0));
  CT_OK(ctorch_tensor_copy_to(va, sizeof va, a));
  CT_OK(ctorch_tensor_copy_to(vb, sizeof vb, b));
  ck_assert(memcmp(va, vb, sizeof va) == 0);
  CT_OK(ctorch_init_xavier_uniform_(b, 1.0));
  CT_OK(ctorch_tensor_copy_to(vb, sizeof vb, b));
  ck_assert(memcmp(va, vb, sizeof va) != 0);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("optim");
  TCase *tc = tcase_create("optim");
  tcase_add_test(tc, sgd_plain);
  tcase_add_test(tc, sgd_momentum_dampening_weight_decay);
  tcase_add_test(tc, sgd_nesterov);
  tcase_add_test(tc, adam_rule);
  tcase_add_test(tc, adam_amsgrad_rule);
  tcase_add_test(tc, adamw_rule);
  tcase_add_test(tc, rmsprop_rule);
  tcase_add_test(tc, rmsprop_centered_momentum_rule);
  tcase_add_test(tc, adagrad_rule);
  tcase_add_test(tc, adagrad_added_group);
  tcase_add_test(tc, defaults_match_pytorch);
  tcase_add_test(tc, param_groups_and_lr);
  tcase_add_test(tc, zero_grad_modes);
  tcase_add_test(tc, bad_arguments);
  tcase_add_test(tc, state_save_load);
  tcase_add_test(tc, step_lr_schedule);
  tcase_add_test(tc, cosine_schedule_matches_recursive_form);
  tcase_add_test(tc, schedule_failures);
  tcase_add_test(tc, init_gains_and_fans);
  tcase_add_test(tc, init_distributions);
  tcase_add_test(tc, init_is_seeded);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
