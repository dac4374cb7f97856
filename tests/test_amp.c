/* Mixed precision (docs/gpu.md): autocast scopes on the CPU (BFloat16),
 * their nesting and thread-locality, and the loss scaler's state sequence
 * against GradScaler's documented rules (tests/amp/ compares it with Python's
 * GradScaler itself). The tcases tagged "cuda" run as test_amp_cuda, skipped
 * without a CUDA device. */
#include <math.h>
#include <pthread.h>

#include "check_main.h"

static ctorch_tensor mat(float fill, int64_t r, int64_t c) {
  ctorch_tensor t = NULL;
  int64_t sz[2];
  ctorch_dtype f32 = CTORCH_FLOAT32;
  sz[0] = r;
  sz[1] = c;
  CT_OK(ctorch_full(&t, sz, 2, ctorch_scalar_float(fill), &f32, NULL, NULL, NULL));
  return t;
}

static ctorch_dtype dtype_of(ctorch_tensor t) {
  ctorch_dtype d = (ctorch_dtype)0;
  CT_OK(ctorch_tensor_dtype(&d, t));
  return d;
}

/* dtype of a @ a (mm) on this thread's current autocast state. */
static ctorch_dtype mm_dtype(void) {
  ctorch_tensor a = mat(1.5f, 4, 4), r = NULL;
  ctorch_dtype d;
  CT_OK(ctorch_mm(&r, a, a));
  d = dtype_of(r);
  ctorch_tensor_free(r);
  ctorch_tensor_free(a);
  return d;
}

static int torch_major(void) {
  const char *v = NULL;
  CT_OK(ctorch_torch_version(&v));
  return atoi(v);
}

/* ---- autocast ------------------------------------------------------------- */

START_TEST(test_autocast_cpu_bf16) {
  ctorch_autocast_scope s = NULL;
  ctorch_tensor x = mat(0.5f, 3, 4), w = mat(0.25f, 2, 4), b = mat(1.0f, 1, 2), y = NULL, sum = NULL, z = NULL;
  int on = -1;
  ctorch_dtype d = (ctorch_dtype)0;
  CT_OK(ctorch_autocast_is_enabled(&on, CTORCH_DEVICE_CPU));
  ck_assert_int_eq(on, 0);
  ck_assert_int_eq(mm_dtype(), CTORCH_FLOAT32);
  CT_OK(ctorch_autocast_scope_enter(&s, CTORCH_DEVICE_CPU, CTORCH_BFLOAT16, 1, 1));
  CT_OK(ctorch_autocast_is_enabled(&on, CTORCH_DEVICE_CPU));
  ck_assert_int_eq(on, 1);
  CT_OK(ctorch_autocast_get_dtype(&d, CTORCH_DEVICE_CPU));
  ck_assert_int_eq(d, CTORCH_BFLOAT16);
  /* Autocast's lower-precision list: mm, linear run in bfloat16 ... */
  ck_assert_int_eq(mm_dtype(), CTORCH_BFLOAT16);
  CT_OK(ctorch_linear(&y, x, w, b));
  ck_assert_int_eq(dtype_of(y), CTORCH_BFLOAT16);
  /* ... while an op on no list keeps its input's dtype. */
  CT_OK(ctorch_add_Tensor(&z, x, x, ctorch_scalar_float(1.0)));
  ck_assert_int_eq(dtype_of(z), CTORCH_FLOAT32);
  /* The values are the float32 ones, rounded to bfloat16. */
  CT_OK(ctorch_sum(&sum, y, NULL));
  {
    double v = 0;
    CT_OK(ctorch_tensor_item_double(&v, sum));
    ck_assert(fabs(v - 6.0 * (0.5 * 0.25 * 4 + 1.0)) < 0.05);
  }
  CT_OK(ctorch_autocast_scope_leave(s));
  ck_assert_int_eq(mm_dtype(), CTORCH_FLOAT32);
  CT_OK(ctorch_autocast_is_enabled(&on, CTORCH_DEVICE_CPU));
  ck_assert_int_eq(on, 0);
  ctorch_tensor_free(x);
  ctorch_tensor_free(w);
  ctorch_tensor_free(b);
  ctorch_tensor_free(y);
  ctorch_tensor_free(z);
  ctorch_tensor_free(sum);
}
END_TEST

START_TEST(test_autocast_nesting) {
  ctorch_autocast_scope outer = NULL, off = NULL, again = NULL;
  CT_OK(ctorch_autocast_scope_enter(&outer, CTORCH_DEVICE_CPU, CTORCH_BFLOAT16, 1, 1));
  CT_OK(ctorch_autocast_scope_enter(&off, CTORCH_DEVICE_CPU, CTORCH_BFLOAT16, 0, 1));
  ck_assert_int_eq(mm_dtype(), CTORCH_FLOAT32); /* a float32 island */
  CT_OK(ctorch_autocast_scope_enter(&again, CTORCH_DEVICE_CPU, CTORCH_BFLOAT16, 1, 0));
  ck_assert_int_eq(mm_dtype(), CTORCH_BFLOAT16);
  /* Out of order: released; the inner scopes' state stays in force. */
  CT_OK(ctorch_autocast_scope_leave(outer));
  ck_assert_int_eq(mm_dtype(), CTORCH_BFLOAT16);
  CT_OK(ctorch_autocast_scope_leave(again));
  ck_assert_int_eq(mm_dtype(), CTORCH_FLOAT32);
  /* Leaving `off` closes `outer` too: autocast off as before all three. */
  CT_OK(ctorch_autocast_scope_leave(off));
  ck_assert_int_eq(mm_dtype(), CTORCH_FLOAT32);
  {
    int on = -1;
    CT_OK(ctorch_autocast_is_enabled(&on, CTORCH_DEVICE_CPU));
    ck_assert_int_eq(on, 0);
  }
}
END_TEST

struct thread_probe {
  ctorch_autocast_scope scope; /* opened by the main thread */
  int enabled_seen;
  ctorch_dtype mm_seen;
  ctorch_status leave_status;
  ctorch_dtype own_scope_mm;
};

static void *probe_thread(void *p) {
  struct thread_probe *t = (struct thread_probe *)p;
  ctorch_autocast_scope mine = NULL;
  ctorch_autocast_is_enabled(&t->enabled_seen, CTORCH_DEVICE_CPU);
  t->mm_seen = mm_dtype();
  t->leave_status = ctorch_autocast_scope_leave(t->scope); /* not this thread's */
  if (ctorch_autocast_scope_enter(&mine, CTORCH_DEVICE_CPU, CTORCH_BFLOAT16, 1, 1) == CTORCH_OK) {
    t->own_scope_mm = mm_dtype();
    ctorch_autocast_scope_leave(mine);
  }
  return NULL;
}

struct plain_probe {
  ctorch_autocast_scope mine;
  ctorch_dtype mm;
};
static void *open_and_keep(void *p) {
  struct plain_probe *t = (struct plain_probe *)p;
  ctorch_autocast_scope_enter(&t->mine, CTORCH_DEVICE_CPU, CTORCH_BFLOAT16, 1, 1);
  t->mm = mm_dtype();
  ctorch_autocast_scope_leave(t->mine);
  return NULL;
}

START_TEST(test_autocast_thread_local) {
  struct thread_probe t;
  struct plain_probe q;
  pthread_t th;
  memset(&t, 0, sizeof t);
  CT_OK(ctorch_autocast_scope_enter(&t.scope, CTORCH_DEVICE_CPU, CTORCH_BFLOAT16, 1, 1));
  ck_assert_int_eq(pthread_create(&th, NULL, probe_thread, &t), 0);
  pthread_join(th, NULL);
  ck_assert_int_eq(t.enabled_seen, 0);          /* another thread: autocast off */
  ck_assert_int_eq(t.mm_seen, CTORCH_FLOAT32);
  ck_assert_int_eq(t.leave_status, CTORCH_RUNTIME);
  ck_assert_int_eq(t.own_scope_mm, CTORCH_BFLOAT16);
  ck_assert_int_eq(mm_dtype(), CTORCH_BFLOAT16); /* ours is untouched until our next scope call */
  {
    /* t.scope was released by the other thread's leave; this thread's next
     * scope call closes it (its own scope opens after that). */
    ctorch_autocast_scope next = NULL;
    CT_OK(ctorch_autocast_scope_enter(&next, CTORCH_DEVICE_CPU, CTORCH_BFLOAT16, 0, 1));
    CT_OK(ctorch_autocast_scope_leave(next));
    ck_assert_int_eq(mm_dtype(), CTORCH_FLOAT32);
  }
  /* A scope opened elsewhere does not leak into this thread. */
  memset(&q, 0, sizeof q);
  ck_assert_int_eq(pthread_create(&th, NULL, open_and_keep, &q), 0);
  pthread_join(th, NULL);
  ck_assert_int_eq(q.mm, CTORCH_BFLOAT16);
  ck_assert_int_eq(mm_dtype(), CTORCH_FLOAT32);
}
END_TEST

START_TEST(test_autocast_arguments) {
  ctorch_autocast_scope s = NULL;
  int n = 0, on = 0;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autocast_scope_enter(NULL, CTORCH_DEVICE_CPU, CTORCH_BFLOAT16, 1, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autocast_scope_enter(&s, CTORCH_DEVICE_CPU, CTORCH_FLOAT64, 1, 1));
  CT_ERROR_HAS("argument 'dtype'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autocast_scope_enter(&s, CTORCH_DEVICE_META, CTORCH_BFLOAT16, 1, 1));
  CT_ERROR_HAS("meta");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autocast_scope_enter(&s, (ctorch_device_type)77, CTORCH_BFLOAT16, 1, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autocast_scope_leave(NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autocast_is_enabled(&on, CTORCH_DEVICE_XPU));
  ck_assert_ptr_null(s);
  CT_OK(ctorch_cuda_device_count(&n));
  if (n == 0) {
    CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_autocast_scope_enter(&s, CTORCH_DEVICE_CUDA, CTORCH_FLOAT16, 1, 1));
    CT_ERROR_HAS("cuda");
    ck_assert_ptr_null(s);
  }
  /* CPU float16: libtorch 2.x autocasts to it; 1.13 refuses, and then
   * nothing changed. */
  if (torch_major() >= 2) {
    CT_OK(ctorch_autocast_scope_enter(&s, CTORCH_DEVICE_CPU, CTORCH_FLOAT16, 1, 1));
    ck_assert_int_eq(mm_dtype(), CTORCH_FLOAT16);
    CT_OK(ctorch_autocast_scope_leave(s));
  } else {
    CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_autocast_scope_enter(&s, CTORCH_DEVICE_CPU, CTORCH_FLOAT16, 1, 1));
    CT_ERROR_HAS("Half");
    ck_assert_ptr_null(s);
  }
  CT_OK(ctorch_autocast_is_enabled(&on, CTORCH_DEVICE_CPU));
  ck_assert_int_eq(on, 0);
  ck_assert_int_eq(mm_dtype(), CTORCH_FLOAT32);
}
END_TEST

/* Forward under autocast, backward outside: float32 leaves get float32
 * gradients through bfloat16 activations. */
START_TEST(test_autocast_backward) {
  ctorch_autocast_scope s = NULL;
  ctorch_tensor x = mat(0.5f, 8, 4), w = mat(0.1f, 3, 4), y = NULL, loss = NULL, g = NULL;
  CT_OK(ctorch_tensor_set_requires_grad(w, 1));
  CT_OK(ctorch_autocast_scope_enter(&s, CTORCH_DEVICE_CPU, CTORCH_BFLOAT16, 1, 1));
  CT_OK(ctorch_linear(&y, x, w, NULL));
  ck_assert_int_eq(dtype_of(y), CTORCH_BFLOAT16);
  CT_OK(ctorch_sum(&loss, y, NULL));
  CT_OK(ctorch_autocast_scope_leave(s));
  CT_OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  CT_OK(ctorch_tensor_grad(&g, w));
  ck_assert_ptr_nonnull(g);
  ck_assert_int_eq(dtype_of(g), CTORCH_FLOAT32);
  {
    double v = 0;
    ctorch_tensor gs = NULL;
    CT_OK(ctorch_sum(&gs, g, NULL));
    CT_OK(ctorch_tensor_item_double(&v, gs));
    ck_assert(fabs(v - 8 * 3 * 4 * 0.5) < 1e-3); /* d/dw sum(x w^T) = column sums of x */
    ctorch_tensor_free(gs);
  }
  ctorch_tensor_free(x);
  ctorch_tensor_free(w);
  ctorch_tensor_free(y);
  ctorch_tensor_free(loss);
  ctorch_tensor_free(g);
}
END_TEST

/* ---- loss scaler ---------------------------------------------------------- */

struct scaler_fixture {
  ctorch_grad_scaler s;
  ctorch_optimizer opt;
  ctorch_tensor p;
};

static struct scaler_fixture scaler_make(ctorch_device d, double init_scale, int64_t interval) {
  struct scaler_fixture f;
  ctorch_grad_scaler_options o;
  ctorch_optim_options oo;
  ctorch_dtype f32 = CTORCH_FLOAT32;
  const int64_t two = 2;
  CT_OK(ctorch_grad_scaler_options_default(&o));
  ck_assert(o.init_scale == 65536.0 && o.growth_factor == 2.0 && o.backoff_factor == 0.5);
  ck_assert(o.growth_interval == 2000 && o.enabled == 1);
  o.init_scale = init_scale;
  o.growth_interval = interval;
  CT_OK(ctorch_grad_scaler_new(&f.s, d, &o));
  f.p = NULL;
  CT_OK(ctorch_zeros(&f.p, &two, 1, &f32, NULL, &d, NULL));
  CT_OK(ctorch_tensor_set_requires_grad(f.p, 1));
  CT_OK(ctorch_optim_options_default(&oo, CTORCH_OPTIM_SGD));
  oo.lr = 1.0;
  CT_OK(ctorch_optimizer_new(&f.opt, CTORCH_OPTIM_SGD, &f.p, 1, &oo));
  return f;
}

static void scaler_free(struct scaler_fixture *f) {
  ctorch_grad_scaler_free(f->s);
  ctorch_optimizer_free(f->opt);
  ctorch_tensor_free(f->p);
}

static void set_grad2(struct scaler_fixture *f, float a, float b) {
  const float v[2] = {a, b};
  const int64_t sz[1] = {2};
  ctorch_tensor g = ct_floats(v, sz, 1), gd = NULL;
  ctorch_device d;
  CT_OK(ctorch_tensor_device(&d, f->p));
  CT_OK(ctorch_tensor_to_device(&gd, g, d));
  CT_OK(ctorch_tensor_set_grad(f->p, gd));
  ctorch_tensor_free(g);
  ctorch_tensor_free(gd);
}

static void read2(ctorch_tensor t, float out[2]) {
  CT_OK(ctorch_tensor_copy_to(out, 2 * sizeof(float), t));
}

static void expect_state(struct scaler_fixture *f, double scale, int64_t tracker, float p0, float p1) {
  double s = 0;
  int64_t tr = -1;
  float p[2];
  CT_OK(ctorch_grad_scaler_get_scale(&s, f->s));
  CT_OK(ctorch_grad_scaler_get_growth_tracker(&tr, f->s));
  read2(f->p, p);
  ck_assert_msg(s == scale, "scale %g, expected %g", s, scale);
  ck_assert_msg(tr == tracker, "growth tracker %lld, expected %lld", (long long)tr, (long long)tracker);
  ck_assert_msg(p[0] == p0 && p[1] == p1, "p = [%g, %g], expected [%g, %g]", p[0], p[1], p0, p1);
}

/* One iteration: gradient = scale * (a, b), step, check found_inf, update. */
static void iteration(struct scaler_fixture *f, float scale, float a, float b, int want_step) {
  int stepped = -1, found = -1;
  set_grad2(f, scale * a, scale * b);
  CT_OK(ctorch_grad_scaler_step(&stepped, f->s, f->opt));
  ck_assert_int_eq(stepped, want_step);
  CT_OK(ctorch_grad_scaler_found_inf(&found, f->s));
  ck_assert_int_eq(found, !want_step);
  CT_OK(ctorch_grad_scaler_update(f->s, NULL));
  CT_OK(ctorch_grad_scaler_found_inf(&found, f->s)); /* a new iteration has no checks yet */
  ck_assert_int_eq(found, 0);
}

/* GradScaler's documented rules, step by step (growth 2, backoff 0.5,
 * interval 2, init 8; SGD lr 1 so each step is visible in p). */
static void scaler_sequence(ctorch_device d) {
  struct scaler_fixture f = scaler_make(d, 8.0, 2);
  int64_t skipped = -1;
  float g[2];
  ctorch_tensor grad = NULL;
  expect_state(&f, 8, 0, 0, 0);
  iteration(&f, 8, 1, 2, 1); /* unscaled grad (1, 2) */
  expect_state(&f, 8, 1, -1, -2);
  iteration(&f, 8, 1, 1, 1); /* second good step: grows */
  expect_state(&f, 16, 0, -2, -3);
  iteration(&f, 16, INFINITY, 1, 0); /* inf: skipped, backoff */
  expect_state(&f, 8, 0, -2, -3);
  iteration(&f, 8, NAN, 0, 0); /* NaN too */
  expect_state(&f, 4, 0, -2, -3);
  CT_OK(ctorch_grad_scaler_skipped_steps(&skipped, f.s));
  ck_assert_int_eq(skipped, 2);
  /* Explicit unscale (e.g. to clip), then step: grads are unscaled once. */
  set_grad2(&f, 4, -4);
  CT_OK(ctorch_grad_scaler_unscale(f.s, f.opt));
  CT_OK(ctorch_tensor_grad(&grad, f.p));
  read2(grad, g);
  ck_assert(g[0] == 1.0f && g[1] == -1.0f);
  ctorch_tensor_free(grad);
  CT_FAILS(CTORCH_RUNTIME, ctorch_grad_scaler_unscale(f.s, f.opt));
  CT_ERROR_HAS("already");
  CT_OK(ctorch_grad_scaler_step(NULL, f.s, f.opt));
  CT_FAILS(CTORCH_RUNTIME, ctorch_grad_scaler_step(NULL, f.s, f.opt));
  CT_FAILS(CTORCH_RUNTIME, ctorch_grad_scaler_unscale(f.s, f.opt));
  CT_OK(ctorch_grad_scaler_update(f.s, NULL));
  expect_state(&f, 4, 1, -3, -2);
  /* A manual scale leaves the growth tracker alone. */
  {
    double ns = 64;
    set_grad2(&f, 4, 4);
    CT_OK(ctorch_grad_scaler_step(NULL, f.s, f.opt));
    CT_OK(ctorch_grad_scaler_update(f.s, &ns));
    expect_state(&f, 64, 1, -4, -3);
    iteration(&f, 64, 0, 0, 1); /* second good step in a row: grows */
    expect_state(&f, 128, 0, -4, -3);
    ns = -1;
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_grad_scaler_update(f.s, &ns));
  }
  /* update with no check since the last one: refused. */
  CT_FAILS(CTORCH_RUNTIME, ctorch_grad_scaler_update(f.s, NULL));
  CT_ERROR_HAS("no inf checks");
  scaler_free(&f);
}

START_TEST(test_scaler_sequence_cpu) { scaler_sequence(ctorch_device_cpu()); }
END_TEST

START_TEST(test_scaler_scale_and_errors) {
  struct scaler_fixture f = scaler_make(ctorch_device_cpu(), 1024.0, 3);
  ctorch_tensor loss = NULL, scaled = NULL, h = NULL, gs[1];
  ctorch_grad_scaler_options o;
  ctorch_grad_scaler bad = NULL;
  double v = 0;
  int found = -1;
  const float one[1] = {3.0f};
  const int64_t sz[1] = {1};
  loss = ct_floats(one, sz, 1);
  CT_OK(ctorch_grad_scaler_scale(&scaled, f.s, loss));
  CT_OK(ctorch_tensor_item_double(&v, scaled));
  ck_assert(v == 3072.0);
  /* Half gradients are refused, as GradScaler refuses them. */
  CT_OK(ctorch_tensor_to_dtype(&h, f.p, CTORCH_FLOAT16));
  {
    ctorch_tensor hp = NULL, hg = NULL;
    ctorch_optimizer ho = NULL;
    CT_OK(ctorch_tensor_detach(&hp, h));
    CT_OK(ctorch_tensor_clone(&hg, hp));
    CT_OK(ctorch_tensor_set_requires_grad(hp, 1));
    CT_OK(ctorch_tensor_set_grad(hp, hg));
    CT_OK(ctorch_optimizer_new(&ho, CTORCH_OPTIM_SGD, &hp, 1, NULL));
    CT_FAILS(CTORCH_VALUE, ctorch_grad_scaler_step(NULL, f.s, ho));
    CT_ERROR_HAS("FP16");
    ctorch_optimizer_free(ho);
    ctorch_tensor_free(hp);
    ctorch_tensor_free(hg);
  }
  /* Gradients of a loop of one's own: unscale_tensors + found_inf. */
  {
    const float gv[2] = {2048.0f, INFINITY};
    const int64_t gsz[1] = {2};
    float out[2];
    gs[0] = ct_floats(gv, gsz, 1);
    CT_OK(ctorch_grad_scaler_unscale_tensors(f.s, gs, 1));
    read2(gs[0], out);
    ck_assert(out[0] == 2.0f && isinf(out[1]));
    CT_OK(ctorch_grad_scaler_found_inf(&found, f.s));
    ck_assert_int_eq(found, 1);
    CT_OK(ctorch_grad_scaler_update(f.s, NULL));
    CT_OK(ctorch_grad_scaler_get_scale(&v, f.s));
    ck_assert(v == 512.0);
    ctorch_tensor_free(gs[0]);
  }
  /* Options are checked. */
  CT_OK(ctorch_grad_scaler_options_default(&o));
  o.growth_factor = 1.0;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_grad_scaler_new(&bad, ctorch_device_cpu(), &o));
  CT_ERROR_HAS("growth_factor");
  CT_OK(ctorch_grad_scaler_options_default(&o));
  o.backoff_factor = 1.0;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_grad_scaler_new(&bad, ctorch_device_cpu(), &o));
  CT_OK(ctorch_grad_scaler_options_default(&o));
  o.growth_interval = 0;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_grad_scaler_new(&bad, ctorch_device_cpu(), &o));
  CT_OK(ctorch_grad_scaler_options_default(&o));
  o.init_scale = NAN;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_grad_scaler_new(&bad, ctorch_device_cpu(), &o));
  ck_assert_ptr_null(bad);
  ctorch_tensor_free(scaled); /* the failing call below sets its out-handle to NULL */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_grad_scaler_scale(&scaled, NULL, loss));
  ck_assert_ptr_null(scaled);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_grad_scaler_step(NULL, f.s, NULL));
  ctorch_grad_scaler_free(NULL);
  ctorch_tensor_free(loss);
  ctorch_tensor_free(scaled);
  ctorch_tensor_free(h);
  scaler_free(&f);
}
END_TEST

/* Growth that would overflow float32 keeps the scale; disabled passes through. */
START_TEST(test_scaler_overflow_and_disabled) {
  struct scaler_fixture f = scaler_make(ctorch_device_cpu(), 3e38, 1);
  ctorch_grad_scaler_options o;
  ctorch_grad_scaler off = NULL;
  ctorch_tensor loss = NULL, same = NULL;
  double v = 0;
  int stepped = -1;
  const float one[1] = {3.0f};
  const int64_t sz[1] = {1};
  float p[2];
  set_grad2(&f, 0, 0);
  CT_OK(ctorch_grad_scaler_step(NULL, f.s, f.opt));
  CT_OK(ctorch_grad_scaler_update(f.s, NULL));
  CT_OK(ctorch_grad_scaler_get_scale(&v, f.s));
  ck_assert(v == (double)3e38f); /* 6e38 is not a float32: the scale stays */
  CT_OK(ctorch_grad_scaler_options_default(&o));
  o.enabled = 0;
  CT_OK(ctorch_grad_scaler_new(&off, ctorch_device_cpu(), &o));
  loss = ct_floats(one, sz, 1);
  CT_OK(ctorch_grad_scaler_scale(&same, off, loss));
  CT_OK(ctorch_tensor_item_double(&v, same));
  ck_assert(v == 3.0);
  CT_OK(ctorch_grad_scaler_get_scale(&v, off));
  ck_assert(v == 1.0);
  set_grad2(&f, INFINITY, 1); /* a disabled scaler does not look */
  CT_OK(ctorch_grad_scaler_step(&stepped, off, f.opt));
  ck_assert_int_eq(stepped, 1);
  read2(f.p, p);
  ck_assert(isinf(p[0]));
  CT_OK(ctorch_grad_scaler_update(off, NULL));
  ctorch_grad_scaler_free(off);
  ctorch_tensor_free(loss);
  ctorch_tensor_free(same);
  scaler_free(&f);
}
END_TEST

/* ---- CUDA (skipped without a device) ------------------------------------ */

START_TEST(test_autocast_cuda) {
  ctorch_autocast_scope s = NULL, inner = NULL;
  ctorch_device d0 = {CTORCH_DEVICE_CUDA, 0};
  ctorch_tensor a = mat(1.0f, 8, 8), ag = NULL, r = NULL, rc = NULL;
  CT_OK(ctorch_tensor_to_device(&ag, a, d0));
  CT_OK(ctorch_autocast_scope_enter(&s, CTORCH_DEVICE_CUDA, CTORCH_FLOAT16, 1, 1));
  CT_OK(ctorch_mm(&r, ag, ag));
  ck_assert_int_eq(dtype_of(r), CTORCH_FLOAT16);
  ctorch_tensor_free(r);
  /* CUDA autocast does not touch CPU ops. */
  CT_OK(ctorch_mm(&rc, a, a));
  ck_assert_int_eq(dtype_of(rc), CTORCH_FLOAT32);
  CT_OK(ctorch_autocast_scope_enter(&inner, CTORCH_DEVICE_CUDA, CTORCH_BFLOAT16, 1, 1));
  CT_OK(ctorch_mm(&r, ag, ag));
  ck_assert_int_eq(dtype_of(r), CTORCH_BFLOAT16);
  ctorch_tensor_free(r);
  CT_OK(ctorch_autocast_scope_leave(inner));
  CT_OK(ctorch_autocast_scope_leave(s));
  CT_OK(ctorch_mm(&r, ag, ag));
  ck_assert_int_eq(dtype_of(r), CTORCH_FLOAT32);
  ctorch_tensor_free(r);
  ctorch_tensor_free(rc);
  ctorch_tensor_free(a);
  ctorch_tensor_free(ag);
}
END_TEST

START_TEST(test_scaler_sequence_cuda) {
  ctorch_device d0 = {CTORCH_DEVICE_CUDA, 0};
  scaler_sequence(d0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("amp");
  TCase *tc = tcase_create("autocast");
  TCase *sc = tcase_create("scaler");
  TCase *gpu = tcase_create("gpu");
  tcase_add_test(tc, test_autocast_cpu_bf16);
  tcase_add_test(tc, test_autocast_nesting);
  tcase_add_test(tc, test_autocast_thread_local);
  tcase_add_test(tc, test_autocast_arguments);
  tcase_add_test(tc, test_autocast_backward);
  suite_add_tcase(s, tc);
  tcase_add_test(sc, test_scaler_sequence_cpu);
  tcase_add_test(sc, test_scaler_scale_and_errors);
  tcase_add_test(sc, test_scaler_overflow_and_disabled);
  suite_add_tcase(s, sc);
  tcase_set_tags(gpu, "cuda");
  tcase_add_test(gpu, test_autocast_cuda);
  tcase_add_test(gpu, test_scaler_sequence_cuda);
  suite_add_tcase(s, gpu);
  return s;
}

CTORCH_CHECK_MAIN()
