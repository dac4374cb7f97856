/* Training states (ctorch_train_state_*), schedulers' state files
 * (ctorch_lr_scheduler_save_state_dict / _load_state_dict) and the loader's
 * position, C to C: what comes back, what is refused and that a refused
 * file changes nothing. Against PyTorch: tests/train/schedules_vs_torch.py
 * and train_state_vs_torch.py; after SIGKILL: tests/train/resume_kill.c. */
#include <math.h>

#include "check_main.h"
#include "tmp_files.h"

static void make_dir(void) { ct_tmp_dir_make("train_state"); }

static ctorch_tensor param(float v) {
  const float x[3] = {v, 2 * v, 3 * v};
  const int64_t n = 3;
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_from_data(&t, x, sizeof x, &n, 1, CTORCH_FLOAT32));
  CT_OK(ctorch_tensor_set_requires_grad(t, 1));
  return t;
}

static ctorch_lr_scheduler make_sched(ctorch_optimizer opt, ctorch_lr_schedule kind) {
  ctorch_lr_schedule_options o;
  ctorch_lr_scheduler s = NULL;
  CT_OK(ctorch_lr_schedule_options_default(&o, kind));
  o.gamma = 0.5, o.step_size = 2, o.t_max = 10;
  CT_OK(ctorch_lr_scheduler_new(&s, opt, kind, &o));
  return s;
}

START_TEST(scheduler_state_round_trip_and_refusals) {
  ctorch_tensor p = param(1);
  ctorch_optimizer opt = NULL;
  ctorch_lr_scheduler a, b, other;
  int64_t e = 0;
  double lr = 0, lr2 = 0;
  CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, &p, 1, NULL));
  a = make_sched(opt, CTORCH_LR_STEP);
  for (int i = 0; i < 5; ++i) CT_OK(ctorch_lr_scheduler_step(a));
  CT_OK(ctorch_lr_scheduler_get_last_lr(&lr, a, 0));
  CT_OK(ctorch_lr_scheduler_save_state_dict(a, ct_tmp_path("step.pt")));
  b = make_sched(opt, CTORCH_LR_STEP);
  CT_OK(ctorch_lr_scheduler_load_state_dict(b, ct_tmp_path("step.pt")));
  CT_OK(ctorch_lr_scheduler_epoch(&e, b));
  ck_assert_int_eq(e, 5);
  CT_OK(ctorch_lr_scheduler_get_last_lr(&lr2, b, 0));
  ck_assert(lr == lr2);
  /* another class's file: refused, naming the key, b unchanged */
  other = make_sched(opt, CTORCH_LR_EXPONENTIAL);
  CT_OK(ctorch_lr_scheduler_save_state_dict(other, ct_tmp_path("exp.pt")));
  CT_FAILS(CTORCH_VALUE, ctorch_lr_scheduler_load_state_dict(b, ct_tmp_path("exp.pt")));
  CT_ERROR_HAS("step_size");
  CT_FAILS(CTORCH_VALUE, ctorch_lr_scheduler_load_state_dict(other, ct_tmp_path("step.pt")));
  CT_ERROR_HAS("'step_size' is not an attribute of ExponentialLR");
  CT_OK(ctorch_lr_scheduler_epoch(&e, b));
  ck_assert_int_eq(e, 5);
  /* a tensor file, a missing file, bad arguments */
  CT_OK(ctorch_save(ct_tmp_path("t.pt"), p));
  CT_FAILS(CTORCH_VALUE, ctorch_lr_scheduler_load_state_dict(b, ct_tmp_path("t.pt")));
  CT_FAILS(CTORCH_IO, ctorch_lr_scheduler_load_state_dict(b, ct_tmp_path("missing.pt")));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_save_state_dict(NULL, ct_tmp_path("x.pt")));
  CT_ERROR_HAS("s");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_save_state_dict(a, NULL));
  CT_ERROR_HAS("path");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lr_scheduler_load_state_dict(NULL, ct_tmp_path("step.pt")));
  CT_FAILS(CTORCH_IO, ctorch_lr_scheduler_save_state_dict(a, "/nonexistent-dir/s.pt"));
  ctorch_lr_scheduler_free(a);
  ctorch_lr_scheduler_free(b);
  ctorch_lr_scheduler_free(other);
  ctorch_optimizer_free(opt);
  ctorch_tensor_free(p);
}
END_TEST

START_TEST(loader_position_and_seek) {
  ctorch_tensor x = NULL, y = NULL, first = NULL;
  ctorch_data_loader l = NULL;
  const int64_t n = 10;
  ctorch_tensor big = NULL;
  uint64_t epoch = 9;
  int64_t batch = 9;
  int has = 0;
  CT_OK(ctorch_arange(&big, ctorch_scalar_int(n), NULL, NULL, NULL, NULL));
  CT_OK(ctorch_data_loader_new(&l, big, NULL, 3, 1, 5, 0));
  CT_OK(ctorch_data_loader_position(&epoch, &batch, l));
  ck_assert(epoch == 0 && batch == 0);
  CT_OK(ctorch_data_loader_start_epoch(l, 2));
  CT_OK(ctorch_data_loader_next(&has, &first, &y, l));
  CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
  CT_OK(ctorch_data_loader_position(&epoch, &batch, l));
  ck_assert(epoch == 2 && batch == 2);
  ctorch_tensor_free(x);
  /* seeking to (2, 1) gives the batch that came second */
  CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
  ctorch_tensor_free(x);
  CT_OK(ctorch_data_loader_seek(l, 2, 1));
  CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
  ctorch_tensor_free(x);
  {
    int64_t v0[3] = {0}, v1[3] = {1};
    ctorch_tensor s0 = NULL;
    CT_OK(ctorch_data_loader_seek(l, 2, 0));
    CT_OK(ctorch_data_loader_next(&has, &s0, &y, l));
    CT_OK(ctorch_tensor_copy_to(v0, sizeof v0, s0));
    CT_OK(ctorch_tensor_copy_to(v1, sizeof v1, first));
    ck_assert(memcmp(v0, v1, sizeof v0) == 0);
    ctorch_tensor_free(s0);
  }
  CT_OK(ctorch_data_loader_position(NULL, NULL, l));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_seek(l, 0, 5));
  CT_ERROR_HAS("batch");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_seek(l, 0, -1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_seek(NULL, 0, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_position(&epoch, &batch, NULL));
  CT_OK(ctorch_data_loader_seek(l, 3, 4)); /* the end of epoch 3: nothing left */
  CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
  ck_assert_int_eq(has, 0);
  ctorch_tensor_free(first);
  ctorch_data_loader_free(l);
  ctorch_tensor_free(big);
}
END_TEST

static ctorch_nn_module linear(const char *args) {
  ctorch_nn_module m = NULL;
  CT_OK(ctorch_nn_new(&m, "Linear", args));
  return m;
}

START_TEST(train_state_round_trip_keep_and_refusals) {
  ctorch_nn_module net = linear("3, 2"), other = linear("3, 4");
  ctorch_tensor_list ps = NULL;
  ctorch_tensor w = NULL;
  ctorch_optimizer opt = NULL;
  ctorch_lr_scheduler s = NULL;
  int64_t epoch = 0, step = 0;
  double metric = 0;
  char *latest = NULL;
  size_t n = 0;
  CT_OK(ctorch_nn_module_parameters(&ps, net));
  CT_OK(ctorch_tensor_list_size(&n, ps));
  {
    ctorch_tensor p[2];
    CT_OK(ctorch_tensor_list_get(&p[0], ps, 0));
    CT_OK(ctorch_tensor_list_get(&p[1], ps, 1));
    CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_ADAM, p, 2, NULL));
    w = p[0];
    ctorch_tensor_free(p[1]);
  }
  s = make_sched(opt, CTORCH_LR_COSINE);
  CT_OK(ctorch_lr_scheduler_step(s));
  CT_OK(ctorch_train_state_save(ct_tmp_path("a.pt"), net, opt, s, NULL, 3, 17, 0.5));
  CT_OK(ctorch_train_state_load(&epoch, &step, &metric, ct_tmp_path("a.pt"), net, opt, s, NULL));
  ck_assert(epoch == 3 && step == 17 && metric == 0.5);
  CT_OK(ctorch_train_state_load(NULL, NULL, NULL, ct_tmp_path("a.pt"), NULL, NULL, NULL, NULL));
  /* NaN metric: None, and NaN again */
  CT_OK(ctorch_train_state_save(ct_tmp_path("nan.pt"), net, opt, s, NULL, 3, 17, NAN));
  CT_OK(ctorch_train_state_load(&epoch, &step, &metric, ct_tmp_path("nan.pt"), net, opt, s, NULL));
  ck_assert(isnan(metric));
  /* kept checkpoints: the newest 2 and the best (lowest) */
  {
    const double m[5] = {0.9, 0.3, 0.5, 0.7, 0.8};
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", ct_tmp_path("ck"));
    CT_OK(ctorch_train_state_latest(&latest, dir));
    ck_assert_ptr_null(latest);
    for (int i = 0; i < 5; ++i) CT_OK(ctorch_train_state_save_kept(dir, 2, CTORCH_BEST_MIN, net, opt, s, NULL, 0, i + 1, m[i]));
    CT_OK(ctorch_train_state_latest(&latest, dir));
    ck_assert_ptr_nonnull(strstr(latest, "checkpoint-000000000005.pt"));
    ctorch_string_free(latest);
    ck_assert_int_ne(access(ct_tmp_path("ck/checkpoint-000000000003.pt"), F_OK), 0);
    ck_assert_int_eq(access(ct_tmp_path("ck/checkpoint-000000000004.pt"), F_OK), 0);
    CT_OK(ctorch_train_state_load(&epoch, &step, &metric, ct_tmp_path("ck/best.pt"), net, opt, s, NULL));
    ck_assert(step == 2 && metric == 0.3);
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_train_state_save_kept(dir, 0, CTORCH_BEST_MIN, net, opt, s, NULL, 0, 1, 0));
    CT_ERROR_HAS("keep_last");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_train_state_save_kept(dir, 2, (ctorch_best_mode)7, net, opt, s, NULL, 0, 1, 0));
    CT_ERROR_HAS("best");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_train_state_save_kept(dir, 2, CTORCH_BEST_NONE, net, opt, s, NULL, 0, -1, 0));
    CT_ERROR_HAS("step");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_train_state_save_kept(NULL, 2, CTORCH_BEST_NONE, net, opt, s, NULL, 0, 1, 0));
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_train_state_latest(NULL, dir));
  }
  /* a state for another model: refused, nothing changed (not the optimizer either) */
  {
    double lr_before = 0, lr_after = 0;
    float before[6], after[6];
    CT_OK(ctorch_tensor_copy_to(before, sizeof before, w));
    CT_OK(ctorch_optimizer_get_lr(&lr_before, opt, 0));
    CT_FAILS(CTORCH_VALUE, ctorch_train_state_load(&epoch, &step, &metric, ct_tmp_path("a.pt"), other, opt, s, NULL));
    CT_ERROR_HAS("weight");
    CT_OK(ctorch_tensor_copy_to(after, sizeof after, w));
    CT_OK(ctorch_optimizer_get_lr(&lr_after, opt, 0));
    ck_assert(memcmp(before, after, sizeof before) == 0 && lr_before == lr_after);
  }
  /* a file without a part asked for; a loader position that does not fit */
  {
    ctorch_data_loader l = NULL;
    CT_OK(ctorch_train_state_save(ct_tmp_path("empty.pt"), NULL, NULL, NULL, NULL, 1, 0, NAN));
    CT_FAILS(CTORCH_VALUE, ctorch_train_state_load(&epoch, &step, &metric, ct_tmp_path("empty.pt"), net, opt, s, NULL));
    CT_ERROR_HAS("'model'");
    CT_OK(ctorch_data_loader_new(&l, w, NULL, 1, 0, 0, 0));
    CT_OK(ctorch_data_loader_seek(l, 0, 2));
    CT_OK(ctorch_train_state_save(ct_tmp_path("loader.pt"), NULL, NULL, NULL, l, 1, 0, NAN));
    ctorch_data_loader_free(l);
    CT_OK(ctorch_data_loader_new(&l, w, NULL, 2, 0, 0, 0)); /* 1 batch now: position 2 does not fit */
    CT_FAILS(CTORCH_VALUE, ctorch_train_state_load(&epoch, &step, &metric, ct_tmp_path("loader.pt"), NULL, NULL, NULL, l));
    CT_ERROR_HAS("loader");
    ctorch_data_loader_free(l);
  }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_train_state_save(NULL, net, opt, s, NULL, 0, 0, 0));
  CT_ERROR_HAS("path");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_train_state_save("", net, opt, s, NULL, 0, 0, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_train_state_load(&epoch, &step, &metric, NULL, net, opt, s, NULL));
  CT_FAILS(CTORCH_IO, ctorch_train_state_load(&epoch, &step, &metric, ct_tmp_path("missing.pt"), net, opt, s, NULL));
  CT_OK(ctorch_save(ct_tmp_path("t.pt"), w));
  CT_FAILS(CTORCH_VALUE, ctorch_train_state_load(&epoch, &step, &metric, ct_tmp_path("t.pt"), net, opt, s, NULL));
  ctorch_lr_scheduler_free(s);
  ctorch_optimizer_free(opt);
  ctorch_tensor_free(w);
  ctorch_tensor_list_free(ps);
  ctorch_nn_module_free(net);
  ctorch_nn_module_free(other);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("train_state");
  TCase *tc = tcase_create("train_state");
  tcase_add_checked_fixture(tc, make_dir, ct_tmp_dir_remove);
  tcase_add_test(tc, scheduler_state_round_trip_and_refusals);
  tcase_add_test(tc, loader_position_and_seek);
  tcase_add_test(tc, train_state_round_trip_keep_and_refusals);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
