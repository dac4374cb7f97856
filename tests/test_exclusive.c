/* Exclusive handles (include/ctorch.h, "Sharing one handle
 * between threads"): a call on an optimizer, LR scheduler, data loader,
 * loss scaler, process group or work while another thread's call on the
 * same handle runs returns CTORCH_BUSY
 * and changes nothing; a call re-entered from the handle's own callback on
 * the same thread passes; a free of a handle in use is refused. The
 * deterministic cases park thread A inside a callback (a step closure, a
 * loader's transform) until thread B has made its call; the hammer cases
 * run training steps from 4 threads at once and require only OK/BUSY and a
 * final state that counts exactly the calls that succeeded. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "check_main.h"
#include "dist/ranks.h"

/* ---- a parked call: A enters a callback, B calls, then A leaves ---------- */

typedef struct {
  ctorch_optimizer opt;
  ctorch_lr_scheduler sched;
  ctorch_data_loader loader;
  pthread_barrier_t inside, done; /* A is inside its callback; B has called */
  ctorch_status b_status;         /* what B's call returned */
  char b_error[512];
  ctorch_status reentry;          /* A's own call from inside its callback */
  int which;                      /* B's call: 0 step, 1 free, 2 scheduler step, 3 loader next */
  int park;                       /* the loader's transform parks A once */
} parked;

static void *thread_b(void *arg) {
  parked *p = arg;
  pthread_barrier_wait(&p->inside);
  int has = 0;
  ctorch_tensor x = NULL, y = NULL;
  switch (p->which) {
    case 0: p->b_status = ctorch_optimizer_step(p->opt); break;
    case 1:
      ctorch_optimizer_free(p->opt); /* returns nothing: refused when busy */
      p->b_status = strstr(ctorch_last_error(), "in use") ? CTORCH_BUSY : CTORCH_OK;
      break;
    case 2: p->b_status = ctorch_lr_scheduler_step(p->sched); break;
    case 3:
      p->b_status = ctorch_data_loader_next(&has, &x, &y, p->loader);
      ctorch_tensor_free(x);
      ctorch_tensor_free(y);
      break;
  }
  snprintf(p->b_error, sizeof p->b_error, "%s", ctorch_last_error());
  pthread_barrier_wait(&p->done);
  return NULL;
}

static ctorch_status closure(void *user, double *loss) {
  parked *p = user;
  /* Re-entry on this thread (Python's closure calls optimizer.zero_grad()). */
  p->reentry = ctorch_optimizer_zero_grad(p->opt, 0);
  pthread_barrier_wait(&p->inside);
  pthread_barrier_wait(&p->done);
  *loss = 1.0;
  return CTORCH_OK;
}

static ctorch_tensor make_param(float value, int64_t n) {
  ctorch_tensor p = NULL;
  float *v = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; ++i) v[i] = value;
  CT_OK(ctorch_tensor_from_data(&p, v, sizeof(float) * (size_t)n, &n, 1, CTORCH_FLOAT32));
  free(v);
  CT_OK(ctorch_tensor_set_requires_grad(p, 1));
  return p;
}

static ctorch_optimizer make_sgd(ctorch_tensor p, double lr) {
  ctorch_optim_options o;
  ctorch_optimizer opt = NULL;
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
  o.lr = lr;
  CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, &p, 1, &o));
  return opt;
}

/* A is parked inside a step closure of p->opt; B makes call `which`. */
static void run_parked(parked *p) {
  pthread_t b;
  double loss = 0;
  pthread_barrier_init(&p->inside, NULL, 2);
  pthread_barrier_init(&p->done, NULL, 2);
  ck_assert_int_eq(pthread_create(&b, NULL, thread_b, p), 0);
  CT_OK(ctorch_optimizer_step_closure(&loss, p->opt, closure, p));
  pthread_join(b, NULL);
  pthread_barrier_destroy(&p->inside);
  pthread_barrier_destroy(&p->done);
  ck_assert_int_eq(p->reentry, CTORCH_OK);
}

START_TEST(optimizer_busy_while_stepping) {
  ctorch_tensor p = make_param(0.0f, 4), g = make_param(1.0f, 4);
  CT_OK(ctorch_tensor_set_grad(p, g));
  parked pk = {.opt = make_sgd(p, 1.0), .which = 0};
  run_parked(&pk);
  ck_assert_msg(pk.b_status == CTORCH_BUSY, "second thread's step -> %s: %s", ctorch_status_name(pk.b_status),
                pk.b_error);
  ck_assert_msg(strstr(pk.b_error, "ctorch_optimizer_step") && strstr(pk.b_error, "'opt'"),
                "the message names the function and the handle: %s", pk.b_error);
  /* The handle is free again: a step now succeeds. */
  CT_OK(ctorch_optimizer_step(pk.opt));
  ck_assert_str_eq(ctorch_status_name(CTORCH_BUSY), "CTORCH_BUSY");
  ctorch_optimizer_free(pk.opt);
  ctorch_tensor_free(g);
  ctorch_tensor_free(p);
}
END_TEST

START_TEST(free_of_a_busy_optimizer_is_refused) {
  ctorch_tensor p = make_param(0.0f, 4);
  parked pk = {.opt = make_sgd(p, 1.0), .which = 1};
  run_parked(&pk);
  ck_assert_msg(pk.b_status == CTORCH_BUSY, "the free went on while a step ran: %s", pk.b_error);
  size_t groups = 0;
  CT_OK(ctorch_optimizer_num_param_groups(&groups, pk.opt)); /* still alive */
  ck_assert_uint_eq(groups, 1);
  ctorch_optimizer_free(pk.opt);
  ctorch_tensor_free(p);
}
END_TEST

START_TEST(scheduler_step_waits_for_its_optimizer) {
  ctorch_tensor p = make_param(0.0f, 4);
  parked pk = {.opt = make_sgd(p, 1.0), .which = 2};
  CT_OK(ctorch_lr_scheduler_step_lr(&pk.sched, pk.opt, 1, 0.5));
  run_parked(&pk);
  ck_assert_msg(pk.b_status == CTORCH_BUSY, "scheduler step during the optimizer's step -> %s: %s",
                ctorch_status_name(pk.b_status), pk.b_error);
  double lr = 0;
  CT_OK(ctorch_optimizer_get_lr(&lr, pk.opt, 0));
  ck_assert_msg(lr == 1.0, "the refused scheduler step changed the lr to %g", lr);
  CT_OK(ctorch_lr_scheduler_step(pk.sched));
  CT_OK(ctorch_optimizer_get_lr(&lr, pk.opt, 0));
  ck_assert_msg(lr == 0.5, "lr %g after one StepLR step", lr);
  ctorch_lr_scheduler_free(pk.sched);
  ctorch_optimizer_free(pk.opt);
  ctorch_tensor_free(p);
}
END_TEST

/* A loader's transform parks A inside ctorch_data_loader_next. */
static ctorch_status parking_transform(void *user, int64_t index, ctorch_tensor data, ctorch_tensor target,
                                       ctorch_tensor *data_out, ctorch_tensor *target_out) {
  parked *p = user;
  (void)index;
  *data_out = data; /* the item unchanged */
  *target_out = target;
  if (p->park) {
    p->park = 0;
    pthread_barrier_wait(&p->inside);
    pthread_barrier_wait(&p->done);
  }
  return CTORCH_OK;
}

START_TEST(loader_busy_while_making_a_batch) {
  float d[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int64_t shape[2] = {8, 1};
  ctorch_tensor data = NULL, x = NULL;
  CT_OK(ctorch_tensor_from_data(&data, d, sizeof d, shape, 2, CTORCH_FLOAT32));
  parked pk = {.which = 3};
  CT_OK(ctorch_data_loader_new(&pk.loader, data, NULL, 2, 0, 0, 0));
  CT_OK(ctorch_data_loader_set_transform_fn(pk.loader, parking_transform, &pk, NULL));
  pthread_t b;
  int has = 0;
  pthread_barrier_init(&pk.inside, NULL, 2);
  pthread_barrier_init(&pk.done, NULL, 2);
  ck_assert_int_eq(pthread_create(&b, NULL, thread_b, &pk), 0);
  pk.park = 1;
  CT_OK(ctorch_data_loader_next(&has, &x, NULL, pk.loader));
  pthread_join(b, NULL);
  ck_assert_int_eq(has, 1);
  ck_assert_msg(pk.b_status == CTORCH_BUSY, "loader next during another next -> %s: %s",
                ctorch_status_name(pk.b_status), pk.b_error);
  /* The refused call took no batch: the epoch still has 3 more. */
  int64_t epoch_batch = -1;
  uint64_t epoch = 0;
  CT_OK(ctorch_data_loader_position(&epoch, &epoch_batch, pk.loader));
  ck_assert_int_eq(epoch_batch, 1);
  ctorch_tensor_free(x);
  ctorch_data_loader_free(pk.loader);
  ctorch_tensor_free(data);
}
END_TEST

/* ---- the hammer: 4 threads train one parameter through one optimizer ---- */

#define HAMMER_THREADS 4
#define HAMMER_ITERS 200

typedef struct {
  ctorch_optimizer opt;
  ctorch_tensor p, x;
  int steps_only; /* 1: only steps (the final value counts them) */
  atomic_int ok_steps, busy, other;
  char other_msg[512];
  pthread_barrier_t start;
} hammer;

static void note(hammer *h, ctorch_status st, int is_step) {
  if (st == CTORCH_OK) {
    if (is_step) atomic_fetch_add(&h->ok_steps, 1);
  } else if (st == CTORCH_BUSY) {
    atomic_fetch_add(&h->busy, 1);
  } else if (atomic_fetch_add(&h->other, 1) == 0) {
    snprintf(h->other_msg, sizeof h->other_msg, "%s: %s", ctorch_status_name(st), ctorch_last_error());
  }
}

static void *hammer_thread(void *arg) {
  hammer *h = arg;
  pthread_barrier_wait(&h->start);
  for (int i = 0; i < HAMMER_ITERS; ++i) {
    if (!h->steps_only) {
      /* forward, backward: loss = sum(p * x), d loss / d p = x */
      ctorch_tensor y = NULL, loss = NULL;
      ctorch_status st = ctorch_mul_Tensor(&y, h->p, h->x);
      if (st == CTORCH_OK) st = ctorch_sum(&loss, y, NULL);
      if (st == CTORCH_OK) st = ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0);
      note(h, st, 0);
      ctorch_tensor_free(loss);
      ctorch_tensor_free(y);
      note(h, ctorch_optimizer_zero_grad(h->opt, i % 2), 0);
    }
    note(h, ctorch_optimizer_step(h->opt), 1);
    double lr = 0;
    note(h, ctorch_optimizer_get_lr(&lr, h->opt, 0), 0);
  }
  return NULL;
}

static void run_hammer(hammer *h) {
  pthread_t t[HAMMER_THREADS];
  pthread_barrier_init(&h->start, NULL, HAMMER_THREADS);
  for (int i = 0; i < HAMMER_THREADS; ++i) ck_assert_int_eq(pthread_create(&t[i], NULL, hammer_thread, h), 0);
  for (int i = 0; i < HAMMER_THREADS; ++i) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&h->start);
  ck_assert_msg(atomic_load(&h->other) == 0, "%d calls failed otherwise than BUSY, first: %s", atomic_load(&h->other),
                h->other_msg);
}

START_TEST(hammered_steps_count_exactly) {
  /* .grad fixed at 1 and lr 1: after k successful steps every element is -k. */
  hammer h = {.p = make_param(0.0f, 64), .steps_only = 1};
  ctorch_tensor g = make_param(1.0f, 64);
  CT_OK(ctorch_tensor_set_grad(h.p, g));
  h.opt = make_sgd(h.p, 1.0);
  run_hammer(&h);
  float v[64];
  CT_OK(ctorch_tensor_copy_to(v, sizeof v, h.p));
  int k = atomic_load(&h.ok_steps);
  ck_assert_int_gt(k, 0);
  for (int i = 0; i < 64; ++i)
    ck_assert_msg(v[i] == (float)-k, "element %d is %g after %d successful steps (%d BUSY)", i, v[i], k,
                  atomic_load(&h.busy));
  ctorch_optimizer_free(h.opt);
  ctorch_tensor_free(g);
  ctorch_tensor_free(h.p);
}
END_TEST

START_TEST(hammered_training_never_corrupts) {
  /* Python's 4-thread repro in C: forward, backward, zero_grad (both kinds)
   * and step on one parameter and one optimizer from 4 threads. Backward
   * writes .grad while zero_grad and step replace and read it: the gradient
   * accumulator's lock orders them; the optimizer's calls take turns (BUSY). */
  hammer h = {.p = make_param(0.5f, 256), .x = make_param(1.0f, 256)};
  CT_OK(ctorch_tensor_set_requires_grad(h.x, 0));
  h.opt = make_sgd(h.p, 0.001);
  run_hammer(&h);
  ctorch_tensor_free(h.x);
  ctorch_optimizer_free(h.opt);
  ctorch_tensor_free(h.p);
}
END_TEST

/* ---- the tensor's own .grad accessors, no optimizer: 4 threads ----------- */

#define GRAD_ITERS 300

typedef struct {
  ctorch_tensor p, x, g;
  atomic_int other;
  char other_msg[512];
  pthread_barrier_t start;
} grad_hammer;

static void *grad_thread(void *arg) {
  grad_hammer *h = arg;
  pthread_barrier_wait(&h->start);
  for (int i = 0; i < GRAD_ITERS; ++i) {
    ctorch_tensor y = NULL, loss = NULL, g = NULL;
    ctorch_status st = ctorch_mul_Tensor(&y, h->p, h->x);
    if (st == CTORCH_OK) st = ctorch_sum(&loss, y, NULL);
    if (st == CTORCH_OK) st = ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0);
    if (st == CTORCH_OK) st = ctorch_tensor_zero_grad(h->p, i % 2);
    if (st == CTORCH_OK) st = ctorch_tensor_set_grad(h->p, i % 3 ? h->g : NULL);
    if (st == CTORCH_OK) st = ctorch_tensor_grad(&g, h->p);
    if (st != CTORCH_OK && atomic_fetch_add(&h->other, 1) == 0)
      snprintf(h->other_msg, sizeof h->other_msg, "%s: %s", ctorch_status_name(st), ctorch_last_error());
    ctorch_tensor_free(g);
    ctorch_tensor_free(loss);
    ctorch_tensor_free(y);
  }
  return NULL;
}

START_TEST(hammered_tensor_grad_accessors_never_corrupt) {
  /* ctorch_tensor_zero_grad, _set_grad and _grad replace and copy p's .grad
   * while backwards on the other threads write it: they take the gradient
   * accumulator's lock a backward holds (as an optimizer's step and zero_grad
   * do), so every call succeeds and the .grad stays a tensor of whole counts
   * (x is 1: each backward adds 1; zero_grad zeroes; set_grad installs g). */
  grad_hammer h = {.p = make_param(0.5f, 256), .x = make_param(1.0f, 256), .g = make_param(1.0f, 256)};
  pthread_t t[HAMMER_THREADS];
  ctorch_tensor g = NULL, c = NULL;
  float v[256];
  CT_OK(ctorch_tensor_set_requires_grad(h.x, 0));
  CT_OK(ctorch_tensor_set_requires_grad(h.g, 0));
  pthread_barrier_init(&h.start, NULL, HAMMER_THREADS);
  for (int i = 0; i < HAMMER_THREADS; ++i) ck_assert_int_eq(pthread_create(&t[i], NULL, grad_thread, &h), 0);
  for (int i = 0; i < HAMMER_THREADS; ++i) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&h.start);
  ck_assert_msg(atomic_load(&h.other) == 0, "%d calls failed, first: %s", atomic_load(&h.other), h.other_msg);
  CT_OK(ctorch_tensor_grad(&g, h.p));
  if (g) {
    CT_OK(ctorch_tensor_contiguous(&c, g));
    CT_OK(ctorch_tensor_copy_to(v, sizeof v, c));
    for (int i = 0; i < 256; ++i)
      ck_assert_msg(v[i] >= 0 && v[i] <= HAMMER_THREADS * GRAD_ITERS + 1 && v[i] == (float)(int)v[i],
                    "grad[%d] = %g", i, v[i]);
    ctorch_tensor_free(c);
    ctorch_tensor_free(g);
  }
  ctorch_tensor_free(h.p), ctorch_tensor_free(h.x), ctorch_tensor_free(h.g);
}
END_TEST

/* ---- gradient clipping beside backwards: 4 threads ---------------------- */

#define CLIP_ITERS 1000

static void *clip_thread(void *arg) {
  grad_hammer *h = arg;
  pthread_barrier_wait(&h->start);
  for (int i = 0; i < CLIP_ITERS; ++i) {
    ctorch_tensor y = NULL, loss = NULL;
    double norm = 0;
    ctorch_status st = ctorch_mul_Tensor(&y, h->p, h->x);
    if (st == CTORCH_OK) st = ctorch_sum(&loss, y, NULL);
    if (st == CTORCH_OK) st = ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0);
    if (st == CTORCH_OK) st = ctorch_clip_grad_norm_(&norm, &h->p, 1, 1e6, 2.0, 0);
    if (st == CTORCH_OK) st = ctorch_clip_grad_value_(&h->p, 1, 1e6);
    if (st == CTORCH_OK && i % 4 == 3) st = ctorch_tensor_zero_grad(h->p, 1); /* .grad dropped: the next backward installs one */
    if (st != CTORCH_OK && atomic_fetch_add(&h->other, 1) == 0)
      snprintf(h->other_msg, sizeof h->other_msg, "%s: %s", ctorch_status_name(st), ctorch_last_error());
    ctorch_tensor_free(loss);
    ctorch_tensor_free(y);
  }
  return NULL;
}

START_TEST(hammered_clipping_never_corrupts) {
  /* clip_grad_norm_ and clip_grad_value_ read p's .grad while backwards on
   * the other threads install and add to it: they take the gradient
   * accumulators' locks as a step does, so every call succeeds and .grad
   * stays a tensor of whole counts (the limits are never reached). */
  grad_hammer h = {.p = make_param(0.5f, 256), .x = make_param(1.0f, 256)};
  pthread_t t[HAMMER_THREADS];
  ctorch_tensor g = NULL;
  float v[256];
  CT_OK(ctorch_tensor_set_requires_grad(h.x, 0));
  pthread_barrier_init(&h.start, NULL, HAMMER_THREADS);
  for (int i = 0; i < HAMMER_THREADS; ++i) ck_assert_int_eq(pthread_create(&t[i], NULL, clip_thread, &h), 0);
  for (int i = 0; i < HAMMER_THREADS; ++i) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&h.start);
  ck_assert_msg(atomic_load(&h.other) == 0, "%d calls failed, first: %s", atomic_load(&h.other), h.other_msg);
  CT_OK(ctorch_tensor_grad(&g, h.p));
  if (g) {
    CT_OK(ctorch_tensor_copy_to(v, sizeof v, g));
    for (int i = 0; i < 256; ++i)
      ck_assert_msg(v[i] >= 0 && v[i] <= HAMMER_THREADS * CLIP_ITERS && v[i] == (float)(int)v[i], "grad[%d] = %g", i,
                    v[i]);
    ctorch_tensor_free(g);
  }
  ctorch_tensor_free(h.p), ctorch_tensor_free(h.x);
}
END_TEST

/* ---- one loss scaler shared by 4 threads, each with its own optimizer ---- */

#define SCALER_ITERS 1000

typedef struct {
  ctorch_grad_scaler s;
  ctorch_optimizer opt[HAMMER_THREADS];
  atomic_int next, ok, busy, other;
  char other_msg[512];
  pthread_barrier_t start;
} scaler_hammer;

static void scaler_note(scaler_hammer *h, ctorch_status st) {
  /* RUNTIME: the scaler's own order checks ("step has already been called",
   * "no inf checks were recorded"), which another thread's update makes
   * legitimately reachable here. */
  if (st == CTORCH_OK) atomic_fetch_add(&h->ok, 1);
  else if (st == CTORCH_BUSY) atomic_fetch_add(&h->busy, 1);
  else if (st != CTORCH_RUNTIME && atomic_fetch_add(&h->other, 1) == 0)
    snprintf(h->other_msg, sizeof h->other_msg, "%s: %s", ctorch_status_name(st), ctorch_last_error());
}

static void *scaler_thread(void *arg) {
  scaler_hammer *h = arg;
  ctorch_optimizer opt = h->opt[atomic_fetch_add(&h->next, 1)];
  pthread_barrier_wait(&h->start);
  for (int i = 0; i < SCALER_ITERS; ++i) {
    int stepped = 0, inf = 0;
    double scale = 0;
    scaler_note(h, ctorch_grad_scaler_unscale(h->s, opt));
    scaler_note(h, ctorch_grad_scaler_step(&stepped, h->s, opt));
    scaler_note(h, ctorch_grad_scaler_found_inf(&inf, h->s));
    scaler_note(h, ctorch_grad_scaler_update(h->s, NULL));
    scaler_note(h, ctorch_grad_scaler_get_scale(&scale, h->s));
  }
  return NULL;
}

START_TEST(hammered_grad_scaler_never_corrupts) {
  /* include/ctorch.h lists loss scalers as exclusive: unscale and step add
   * each optimizer to the scaler's list, update walks and clears it. Four
   * threads doing so at once, unchecked, grew and freed that list under each
   * other (a crash of this test's process); each call now holds the scaler
   * (CTORCH_BUSY to the others). */
  scaler_hammer h = {0};
  ctorch_tensor p[HAMMER_THREADS], g[HAMMER_THREADS];
  pthread_t t[HAMMER_THREADS];
  CT_OK(ctorch_grad_scaler_new(&h.s, ctorch_device_cpu(), NULL));
  for (int i = 0; i < HAMMER_THREADS; ++i) {
    p[i] = make_param(0.0f, 64);
    g[i] = make_param(1.0f, 64);
    CT_OK(ctorch_tensor_set_requires_grad(g[i], 0));
    CT_OK(ctorch_tensor_set_grad(p[i], g[i]));
    h.opt[i] = make_sgd(p[i], 0.001);
  }
  pthread_barrier_init(&h.start, NULL, HAMMER_THREADS);
  for (int i = 0; i < HAMMER_THREADS; ++i) ck_assert_int_eq(pthread_create(&t[i], NULL, scaler_thread, &h), 0);
  for (int i = 0; i < HAMMER_THREADS; ++i) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&h.start);
  ck_assert_msg(atomic_load(&h.other) == 0, "%d calls failed otherwise than BUSY/RUNTIME, first: %s",
                atomic_load(&h.other), h.other_msg);
  ck_assert_int_gt(atomic_load(&h.ok), 0);
  double scale = 0;
  CT_OK(ctorch_grad_scaler_get_scale(&scale, h.s));
  /* Doubled once per 2000 updates without inf (growth_interval), never halved. */
  ck_assert_msg(scale >= 65536.0 && scale <= 65536.0 * (1 << (HAMMER_THREADS * SCALER_ITERS / 2000)), "scale %g",
                scale);
  ctorch_grad_scaler_free(h.s);
  for (int i = 0; i < HAMMER_THREADS; ++i) {
    ctorch_optimizer_free(h.opt[i]);
    ctorch_tensor_free(g[i]);
    ctorch_tensor_free(p[i]);
  }
}
END_TEST

/* ---- a process group and a work: 2 ranks, rank 0's thread A parked in a
 * collective that waits for rank 1, which waits for rank 0's main thread ---- */

#define SPINS (1L << 22) /* calls before giving up on seeing A inside (it enters in microseconds) */

typedef struct {
  ctorch_process_group pg;
  ctorch_work work;
  ctorch_status st;
} parked_dist;

static void *barrier_thread(void *arg) {
  parked_dist *p = arg;
  while ((p->st = ctorch_dist_barrier(p->pg)) == CTORCH_BUSY) sched_yield(); /* main's probe held it */
  return NULL;
}

static void *wait_thread(void *arg) {
  parked_dist *p = arg;
  while ((p->st = ctorch_work_wait(p->work, 0)) == CTORCH_BUSY) sched_yield();
  return NULL;
}

static void signal_file(const char *dir, const char *name) {
  char path[300];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (f) fclose(f);
}

static void await_file(const char *dir, const char *name) {
  char path[300];
  struct stat sb;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  while (stat(path, &sb) != 0) usleep(1000); /* the rank watchdog bounds it */
}

/* Rank 0's main thread while A is in a barrier: nonzero when a check failed. */
static int parked_group_checks(ctorch_process_group pg) {
  int r_rank = 0, n = 0;
  long i;
  float v = 1;
  ctorch_status st = CTORCH_OK;
  for (i = 0; i < SPINS && (st = ctorch_process_group_size(&n, pg)) == CTORCH_OK; ++i) sched_yield();
  RK_CHECK(st == CTORCH_BUSY, "process_group_size during another thread's barrier: %s", ctorch_status_name(st));
  RK_FAILS(CTORCH_BUSY, ctorch_process_group_destroy(pg));
  ctorch_tensor t = ct_fvec(&v, 1);
  st = ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_SUM);
  ctorch_tensor_free(t);
  RK_CHECK(st == CTORCH_BUSY, "all_reduce during another thread's barrier: %s", ctorch_status_name(st));
  ctorch_process_group_free(pg); /* refused: not freed */
  RK_CHECK(strstr(ctorch_last_error(), "in use") != NULL, "free during a barrier: %s", ctorch_last_error());
  return 0;
}

/* Rank 0's main thread while A waits on the work: nonzero when a check failed. */
static int parked_work_checks(ctorch_work w) {
  int r_rank = 0;
  long i;
  ctorch_status st = CTORCH_OK;
  /* A 1 ms wait of our own times out (RUNTIME) until A is the one waiting. */
  for (i = 0; i < SPINS && (st = ctorch_work_wait(w, 1)) != CTORCH_BUSY; ++i)
    RK_CHECK(st == CTORCH_RUNTIME, "a wait before rank 1 joined: %s", ctorch_status_name(st));
  RK_CHECK(st == CTORCH_BUSY, "work_wait during another thread's wait: %s", ctorch_status_name(st));
  ctorch_work_free(w); /* refused: not freed */
  RK_CHECK(strstr(ctorch_last_error(), "in use") != NULL, "free during a wait: %s", ctorch_last_error());
  return 0;
}

static int rank_busy_group(int rank, int size, const char *dir, void *ctx) {
  int r_rank = rank;
  ctorch_process_group pg = NULL;
  float v = (float)(rank + 1);
  ctorch_tensor t = NULL;
  (void)ctx;
  RK_OK(ct_file_group(&pg, dir, rank, size, 60000));
  /* 1. A in a barrier: a query, a destroy, a collective and a free from
   * another thread are BUSY (the destroy freed the c10d group under A). */
  if (rank == 1) {
    await_file(dir, "go1");
    RK_OK(ctorch_dist_barrier(pg));
  } else {
    parked_dist p = {.pg = pg};
    pthread_t a;
    RK_CHECK(pthread_create(&a, NULL, barrier_thread, &p) == 0, "pthread_create");
    int bad = parked_group_checks(pg);
    signal_file(dir, "go1"); /* rank 1 joins A's barrier, failed checks or not */
    pthread_join(a, NULL);
    if (bad) return 1;
    RK_CHECK(p.st == CTORCH_OK, "the parked barrier: %s", ctorch_status_name(p.st));
  }
  /* 2. Two threads waiting on one AVG work: the second is BUSY, and the
   * average is divided once (two waits both ran the division: 0.75, not 1.5). */
  t = ct_fvec(&v, 1);
  if (rank == 1) {
    await_file(dir, "go2");
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_AVG));
  } else {
    parked_dist p = {.pg = pg};
    pthread_t a;
    RK_OK(ctorch_dist_all_reduce_async(&p.work, pg, t, CTORCH_REDUCE_AVG));
    RK_CHECK(pthread_create(&a, NULL, wait_thread, &p) == 0, "pthread_create");
    int bad = parked_work_checks(p.work);
    signal_file(dir, "go2");
    pthread_join(a, NULL);
    if (bad) return 1;
    RK_CHECK(p.st == CTORCH_OK, "the parked wait: %s", ctorch_status_name(p.st));
    RK_OK(ctorch_work_wait(p.work, 0)); /* done: OK again, no second division */
    ctorch_work_free(p.work);
  }
  RK_EXPECT_F(t, 1.5f);
  ctorch_tensor_free(t);
  ctorch_process_group_free(pg);
  return 0;
}

START_TEST(process_group_and_work_busy_while_in_use) {
  int status[2];
  ck_assert_int_eq(ct_run_ranks(2, rank_busy_group, NULL, 120, status), 0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("exclusive");
  TCase *tc = tcase_create("busy");
  tcase_add_test(tc, optimizer_busy_while_stepping);
  tcase_add_test(tc, free_of_a_busy_optimizer_is_refused);
  tcase_add_test(tc, scheduler_step_waits_for_its_optimizer);
  tcase_add_test(tc, loader_busy_while_making_a_batch);
  tcase_add_test(tc, hammered_steps_count_exactly);
  tcase_add_test(tc, hammered_training_never_corrupts);
  tcase_add_test(tc, hammered_tensor_grad_accessors_never_corrupt);
  tcase_add_test(tc, hammered_clipping_never_corrupts);
  tcase_add_test(tc, hammered_grad_scaler_never_corrupts);
  tcase_add_test(tc, process_group_and_work_busy_while_in_use);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
