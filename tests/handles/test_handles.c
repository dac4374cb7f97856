/* Handle validation (shim/core/handles.cpp): for every handle type ctorch
 * can make here, a handle freed before the call, a pointer ctorch never
 * returned (a static variable's address) and a handle of another type each
 * get CTORCH_INVALID_ARGUMENT naming the argument, from two or three entry
 * points; freeing a handle twice (or freeing a foreign pointer) does
 * nothing and records why. Under AddressSanitizer this also shows that no
 * check reads the freed memory (a use after free would be reported).
 *
 * Handle types that need CUDA (streams, events, stream scopes, CUDA graphs)
 * are checked with foreign and wrong-type pointers only (they cannot be made
 * on a CPU-only machine); AOTInductor packages (libtorch >= 2.6 and a
 * compiled package) are not exercised here. */
#include "handle_checks.h"

/* A pointer ctorch never returned. */
static int64_t foreign_word[4];
#define FOREIGN(T) ((T)(void *)foreign_word)

#define FREED(type) "is not a live " type " handle"
#define WRONG(got, want) "is a " got " handle, not a " want

/* A free given a freed or foreign pointer does nothing but record why. */
#define FREE_IS_HARMLESS(free_fn, h, type)                                   \
  do {                                                                       \
    free_fn(h);                                                              \
    ck_assert_msg(strstr(ctorch_last_error(), #free_fn) != NULL, "%s", ctorch_last_error()); \
    CT_ERROR_HAS("nothing was freed");                                       \
    CT_ERROR_HAS(type);                                                      \
  } while (0)

static ctorch_nn_module linear(void) {
  ctorch_nn_module m = NULL;
  CT_OK(ctorch_nn_new(&m, "Linear", "2, 3"));
  return m;
}

static ctorch_generator generator(void) {
  ctorch_generator g = NULL;
  CT_OK(ctorch_generator_new(&g, ctorch_device_cpu(), 7));
  return g;
}

static ctorch_optimizer sgd(ctorch_tensor p) {
  ctorch_optimizer o = NULL;
  ctorch_optim_options opts;
  CT_OK(ctorch_optim_options_default(&opts, CTORCH_OPTIM_SGD));
  opts.lr = 0.1;
  CT_OK(ctorch_optimizer_new(&o, CTORCH_OPTIM_SGD, &p, 1, &opts));
  return o;
}

START_TEST(nn_module) {
  ctorch_nn_module m = linear();
  ctorch_generator g = generator();
  ctorch_tensor x = vec(2), y = NULL;
  const char *kind = NULL;
  CT_OK(ctorch_nn_module_forward(&y, m, x));
  ctorch_tensor_free(y);
  ctorch_nn_module_free(m);
  /* The crash: forward of a freed module. */
  BAD(ctorch_nn_module_forward(&y, m, x), "m", FREED("ctorch_nn_module"));
  ck_assert_ptr_null(y);
  BAD(ctorch_nn_module_kind(&kind, m), "m", FREED("ctorch_nn_module"));
  BAD(ctorch_nn_module_train(m, 1), "m", FREED("ctorch_nn_module"));
  BAD(ctorch_nn_module_forward(&y, FOREIGN(ctorch_nn_module), x), "m", FREED("ctorch_nn_module"));
  BAD(ctorch_nn_module_forward(&y, (ctorch_nn_module)(void *)g, x), "m", WRONG("ctorch_generator", "ctorch_nn_module"));
  /* A freed module passed as another constructor's argument. */
  {
    ctorch_nn_module enc = NULL;
    const char *names[] = {"encoder_layer"};
    BAD(ctorch_nn_new_with_modules(&enc, "TransformerEncoder", "num_layers=1", names, &m, 1), "modules[0]",
        FREED("ctorch_nn_module"));
  }
  FREE_IS_HARMLESS(ctorch_nn_module_free, m, "ctorch_nn_module");
  FREE_IS_HARMLESS(ctorch_nn_module_free, FOREIGN(ctorch_nn_module), "ctorch_nn_module");
  FREE_IS_HARMLESS(ctorch_nn_module_free, (ctorch_nn_module)(void *)g, "ctorch_generator");
  /* The generator was not freed by the wrong-type free. */
  CT_OK(ctorch_generator_set_seed(g, 3));
  ctorch_generator_free(g);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(tensor_list_and_generator) {
  ctorch_nn_module m = linear();
  ctorch_tensor_list l = NULL;
  ctorch_tensor t = NULL;
  size_t n = 0;
  uint64_t seed = 0;
  ctorch_generator g = generator();
  CT_OK(ctorch_nn_module_parameters(&l, m));
  CT_OK(ctorch_tensor_list_size(&n, l));
  ck_assert_uint_eq(n, 2);
  ctorch_tensor_list_free(l);
  BAD(ctorch_tensor_list_size(&n, l), "list", FREED("ctorch_tensor_list"));
  BAD(ctorch_tensor_list_get(&t, l, 0), "list", FREED("ctorch_tensor_list"));
  BAD(ctorch_tensor_list_size(&n, FOREIGN(ctorch_tensor_list)), "list", FREED("ctorch_tensor_list"));
  BAD(ctorch_tensor_list_size(&n, (ctorch_tensor_list)(void *)m), "list", WRONG("ctorch_nn_module", "ctorch_tensor_list"));
  FREE_IS_HARMLESS(ctorch_tensor_list_free, l, "ctorch_tensor_list");

  CT_OK(ctorch_generator_initial_seed(&seed, g));
  ck_assert_uint_eq(seed, 7);
  ctorch_generator_free(g);
  BAD(ctorch_generator_set_seed(g, 1), "g", FREED("ctorch_generator"));
  BAD(ctorch_generator_initial_seed(&seed, g), "g", FREED("ctorch_generator"));
  BAD(ctorch_generator_set_seed(FOREIGN(ctorch_generator), 1), "g", FREED("ctorch_generator"));
  BAD(ctorch_generator_set_seed((ctorch_generator)(void *)m, 1), "g", WRONG("ctorch_nn_module", "ctorch_generator"));
  {
    /* A generated operator's Generator? argument is checked too. */
    const int64_t size = 3;
    ctorch_tensor r = NULL;
    BAD(ctorch_rand_generator(&r, &size, 1, g, NULL, NULL, NULL, NULL), "generator", FREED("ctorch_generator"));
  }
  FREE_IS_HARMLESS(ctorch_generator_free, g, "ctorch_generator");
  ctorch_nn_module_free(m);
}
END_TEST

START_TEST(optimizer_and_scheduler) {
  ctorch_tensor p = vec(3);
  ctorch_optimizer o = sgd(p), o2 = sgd(p);
  ctorch_lr_scheduler s = NULL;
  ctorch_nn_module m = linear();
  double lr = 0;
  int64_t epoch = 0;
  CT_OK(ctorch_lr_scheduler_step_lr(&s, o2, 1, 0.5));
  ctorch_optimizer_free(o);
  BAD(ctorch_optimizer_step(o), "opt", FREED("ctorch_optimizer"));
  BAD(ctorch_optimizer_get_lr(&lr, o, 0), "opt", FREED("ctorch_optimizer"));
  BAD(ctorch_optimizer_zero_grad(o, 1), "opt", FREED("ctorch_optimizer"));
  BAD(ctorch_optimizer_step(FOREIGN(ctorch_optimizer)), "opt", FREED("ctorch_optimizer"));
  BAD(ctorch_optimizer_step((ctorch_optimizer)(void *)m), "opt", WRONG("ctorch_nn_module", "ctorch_optimizer"));
  {
    ctorch_lr_scheduler s2 = NULL;
    BAD(ctorch_lr_scheduler_step_lr(&s2, o, 1, 0.5), "opt", FREED("ctorch_optimizer"));
    ck_assert_ptr_null(s2);
  }
  FREE_IS_HARMLESS(ctorch_optimizer_free, o, "ctorch_optimizer");

  CT_OK(ctorch_lr_scheduler_step(s));
  ctorch_lr_scheduler_free(s);
  BAD(ctorch_lr_scheduler_step(s), "s", FREED("ctorch_lr_scheduler"));
  BAD(ctorch_lr_scheduler_epoch(&epoch, s), "s", FREED("ctorch_lr_scheduler"));
  BAD(ctorch_lr_scheduler_get_last_lr(&lr, s, 0), "s", FREED("ctorch_lr_scheduler"));
  BAD(ctorch_lr_scheduler_step(FOREIGN(ctorch_lr_scheduler)), "s", FREED("ctorch_lr_scheduler"));
  BAD(ctorch_lr_scheduler_step((ctorch_lr_scheduler)(void *)o2), "s", WRONG("ctorch_optimizer", "ctorch_lr_scheduler"));
  FREE_IS_HARMLESS(ctorch_lr_scheduler_free, s, "ctorch_lr_scheduler");
  /* The optimizer the scheduler held still works. */
  CT_OK(ctorch_optimizer_get_lr(&lr, o2, 0));
  ctorch_optimizer_free(o2);
  ctorch_nn_module_free(m);
  ctorch_tensor_free(p);
}
END_TEST

START_TEST(data_transform_dict) {
  const int64_t shape[] = {4, 1, 2, 2};
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  ctorch_tensor x = NULL, y = vec(4), out = NULL;
  ctorch_dataset ds = NULL;
  ctorch_data_loader dl = NULL;
  ctorch_transform tf = NULL;
  ctorch_tensor_dict d = NULL;
  int64_t len = 0;
  size_t n = 0;
  CT_OK(ctorch_ones(&x, shape, 4, &f32, NULL, NULL, NULL));

  CT_OK(ctorch_dataset_from_tensors(&ds, x, y));
  CT_OK(ctorch_data_loader_from_dataset(&dl, ds, 2, 0, 0, 0));
  ctorch_dataset_free(ds);
  BAD(ctorch_dataset_len(&len, ds), "ds", FREED("ctorch_dataset"));
  {
    ctorch_data_loader dl2 = NULL;
    BAD(ctorch_data_loader_from_dataset(&dl2, ds, 2, 0, 0, 0), "ds", FREED("ctorch_dataset"));
  }
  BAD(ctorch_dataset_len(&len, FOREIGN(ctorch_dataset)), "ds", FREED("ctorch_dataset"));
  BAD(ctorch_dataset_len(&len, (ctorch_dataset)(void *)dl), "ds", WRONG("ctorch_data_loader", "ctorch_dataset"));
  FREE_IS_HARMLESS(ctorch_dataset_free, ds, "ctorch_dataset");

  /* The loader keeps the dataset it was made from. */
  CT_OK(ctorch_data_loader_num_batches(&len, dl));
  ck_assert_int_eq(len, 2);
  ctorch_data_loader_free(dl);
  BAD(ctorch_data_loader_num_batches(&len, dl), "loader", FREED("ctorch_data_loader"));
  BAD(ctorch_data_loader_start_epoch(dl, 1), "loader", FREED("ctorch_data_loader"));
  BAD(ctorch_data_loader_size(&len, FOREIGN(ctorch_data_loader)), "loader", FREED("ctorch_data_loader"));
  FREE_IS_HARMLESS(ctorch_data_loader_free, dl, "ctorch_data_loader");

  CT_OK(ctorch_transform_random_horizontal_flip(&tf, 0.5));
  CT_OK(ctorch_tensor_dict_new(&d));
  ctorch_transform_free(tf);
  BAD(ctorch_transform_apply(&out, tf, x, NULL), "t", FREED("ctorch_transform"));
  {
    ctorch_transform c = NULL;
    BAD(ctorch_transform_compose(&c, &tf, 1), "ts", FREED("ctorch_transform"));
  }
  BAD(ctorch_transform_apply(&out, FOREIGN(ctorch_transform), x, NULL), "t", FREED("ctorch_transform"));
  BAD(ctorch_transform_apply(&out, (ctorch_transform)(void *)d, x, NULL), "t", WRONG("ctorch_tensor_dict", "ctorch_transform"));
  FREE_IS_HARMLESS(ctorch_transform_free, tf, "ctorch_transform");

  CT_OK(ctorch_tensor_dict_set(d, "x", x));
  ctorch_tensor_dict_free(d);
  BAD(ctorch_tensor_dict_size(&n, d), "d", FREED("ctorch_tensor_dict"));
  BAD(ctorch_tensor_dict_set(d, "y", y), "d", FREED("ctorch_tensor_dict"));
  BAD(ctorch_tensor_dict_get(&out, d, 0), "d", FREED("ctorch_tensor_dict"));
  BAD(ctorch_tensor_dict_size(&n, FOREIGN(ctorch_tensor_dict)), "d", FREED("ctorch_tensor_dict"));
  FREE_IS_HARMLESS(ctorch_tensor_dict_free, d, "ctorch_tensor_dict");
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
}
END_TEST

START_TEST(values_writer_scopes) {
  ctorch_value v = NULL, l = NULL;
  ctorch_summary_writer w = NULL;
  ctorch_autograd_scope sc = NULL;
  int64_t i = 0;
  const char *path = NULL;
  char dir[] = "/tmp/ctorch_handles_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));

  CT_OK(ctorch_value_int(&v, 5));
  ctorch_value_free(v);
  BAD(ctorch_value_to_int(&i, v), "v", FREED("ctorch_value"));
  BAD(ctorch_value_list(&l, &v, 1), "items", FREED("ctorch_value"));
  BAD(ctorch_value_to_int(&i, FOREIGN(ctorch_value)), "v", FREED("ctorch_value"));
  FREE_IS_HARMLESS(ctorch_value_free, v, "ctorch_value");

  CT_OK(ctorch_summary_writer_new(&w, dir, NULL));
  CT_OK(ctorch_summary_writer_add_scalar(w, "a", 1.0, 0, 0.0));
  ctorch_summary_writer_free(w);
  BAD(ctorch_summary_writer_add_scalar(w, "a", 1.0, 1, 0.0), "writer", FREED("ctorch_summary_writer"));
  BAD(ctorch_summary_writer_flush(w), "writer", FREED("ctorch_summary_writer"));
  BAD(ctorch_summary_writer_path(&path, w), "writer", FREED("ctorch_summary_writer"));
  BAD(ctorch_summary_writer_flush(FOREIGN(ctorch_summary_writer)), "writer", FREED("ctorch_summary_writer"));
  FREE_IS_HARMLESS(ctorch_summary_writer_free, w, "ctorch_summary_writer");

  /* Leaving a scope releases it: a second leave is a freed handle. */
  CT_OK(ctorch_autograd_scope_enter(&sc, CTORCH_SCOPE_NO_GRAD));
  CT_OK(ctorch_autograd_scope_leave(sc));
  BAD(ctorch_autograd_scope_leave(sc), "scope", FREED("ctorch_autograd_scope"));
  BAD(ctorch_autograd_scope_leave(FOREIGN(ctorch_autograd_scope)), "scope", FREED("ctorch_autograd_scope"));
  {
    ctorch_autocast_scope ac = NULL;
    BAD(ctorch_autocast_scope_leave(FOREIGN(ctorch_autocast_scope)), "scope", FREED("ctorch_autocast_scope"));
    CT_OK(ctorch_autocast_scope_enter(&ac, CTORCH_DEVICE_CPU, CTORCH_BFLOAT16, 1, 1));
    BAD(ctorch_autograd_scope_leave((ctorch_autograd_scope)(void *)ac), "scope",
        WRONG("ctorch_autocast_scope", "ctorch_autograd_scope"));
    CT_OK(ctorch_autocast_scope_leave(ac));
    BAD(ctorch_autocast_scope_leave(ac), "scope", FREED("ctorch_autocast_scope"));
  }
  {
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
  }
}
END_TEST

/* The context a custom function's callbacks get lives for the callback only. */
static ctorch_autograd_ctx kept_ctx;
static ctorch_status fwd(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *in, size_t n_in, ctorch_tensor *out,
                         size_t n_out) {
  (void)ud;
  (void)n_in;
  (void)n_out;
  kept_ctx = ctx;
  return ctorch_clone(&out[0], in[0], NULL);
}
static ctorch_status bwd(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *go, size_t n_out, ctorch_tensor *gi,
                         size_t n_in) {
  (void)ctx;
  (void)ud;
  (void)n_out;
  (void)n_in;
  return ctorch_clone(&gi[0], go[0], NULL);
}

START_TEST(autograd_ctx_after_callback) {
  ctorch_tensor x = vec(2), y = NULL, l = NULL;
  int need = 0;
  CT_OK(ctorch_autograd_function_apply(&y, 1, fwd, bwd, NULL, NULL, &x, 1));
  ck_assert_ptr_nonnull(kept_ctx);
  BAD(ctorch_autograd_ctx_needs_input_grad(&need, kept_ctx, 0), "ctx", FREED("ctorch_autograd_ctx"));
  BAD(ctorch_autograd_ctx_saved_tensors(&(ctorch_tensor_list){NULL}, FOREIGN(ctorch_autograd_ctx)), "ctx",
      FREED("ctorch_autograd_ctx"));
  ctorch_tensor_free(y);
  ctorch_tensor_free(l);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(script_module_and_tracer) {
  ctorch_tracer tr = NULL;
  ctorch_module mod = NULL;
  ctorch_tensor x = vec(2), y = NULL, z = NULL;
  int on = 0;
  CT_OK(ctorch_tracer_new(&tr, "M"));
  CT_OK(ctorch_tracer_begin(tr, &x, 1));
  CT_OK(ctorch_mul_Tensor(&y, x, x));
  CT_OK(ctorch_tracer_finish(&mod, tr, &y, 1));
  ctorch_tracer_free(tr);
  BAD(ctorch_tracer_abandon(tr), "trace", FREED("ctorch_tracer"));
  BAD(ctorch_tracer_add_parameter(tr, "w", x), "trace", FREED("ctorch_tracer"));
  BAD(ctorch_tracer_abandon((ctorch_tracer)(void *)mod), "trace", WRONG("ctorch_module", "ctorch_tracer"));
  FREE_IS_HARMLESS(ctorch_tracer_free, tr, "ctorch_tracer");

  CT_OK(ctorch_module_forward_tensors(&z, mod, &x, 1));
  ctorch_tensor_free(z);
  z = NULL;
  ctorch_module_free(mod);
  BAD(ctorch_module_forward_tensors(&z, mod, &x, 1), "m", FREED("ctorch_module"));
  BAD(ctorch_module_is_training(&on, mod), "m", FREED("ctorch_module"));
  BAD(ctorch_module_eval(FOREIGN(ctorch_module)), "m", FREED("ctorch_module"));
  FREE_IS_HARMLESS(ctorch_module_free, mod, "ctorch_module");
  ctorch_tensor_free(y);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(dist_store_group_work) {
  char path[] = "/tmp/ctorch_handles_store_XXXXXX";
  int fd = mkstemp(path);
  ctorch_store st = NULL;
  ctorch_process_group pg = NULL;
  ctorch_work wk = NULL;
  ctorch_tensor t = vec(2);
  int64_t v = 0;
  int r = -1, done = 0;
  ck_assert_int_ge(fd, 0);
  close(fd);
  unlink(path);
  CT_OK(ctorch_store_file_new(&st, path, 1, 10000));
  CT_OK(ctorch_process_group_new_gloo(&pg, st, 0, 1, 10000));
  CT_OK(ctorch_dist_all_reduce_async(&wk, pg, t, CTORCH_REDUCE_SUM));
  CT_OK(ctorch_work_wait(wk, 10000));
  ctorch_work_free(wk);
  BAD(ctorch_work_wait(wk, 10), "work", FREED("ctorch_work"));
  BAD(ctorch_work_is_completed(&done, wk), "work", FREED("ctorch_work"));
  BAD(ctorch_work_wait((ctorch_work)(void *)pg, 10), "work", WRONG("ctorch_process_group", "ctorch_work"));
  FREE_IS_HARMLESS(ctorch_work_free, wk, "ctorch_work");

  ctorch_process_group_free(pg);
  BAD(ctorch_process_group_rank(&r, pg), "pg", FREED("ctorch_process_group"));
  BAD(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_SUM), "pg", FREED("ctorch_process_group"));
  BAD(ctorch_dist_average_tensors(pg, &t, 1, 0), "pg", FREED("ctorch_process_group"));
  BAD(ctorch_process_group_rank(&r, (ctorch_process_group)(void *)st), "pg", WRONG("ctorch_store", "ctorch_process_group"));
  FREE_IS_HARMLESS(ctorch_process_group_free, pg, "ctorch_process_group");

  CT_OK(ctorch_store_add(&v, st, "k", 1));
  ctorch_store_free(st);
  BAD(ctorch_store_add(&v, st, "k", 1), "store", FREED("ctorch_store"));
  BAD(ctorch_store_set(st, "k", "x", 1), "store", FREED("ctorch_store"));
  {
    ctorch_process_group pg2 = NULL;
    BAD(ctorch_process_group_new_gloo(&pg2, st, 0, 1, 1000), "store", FREED("ctorch_store"));
  }
  BAD(ctorch_store_add(&v, FOREIGN(ctorch_store), "k", 1), "store", FREED("ctorch_store"));
  FREE_IS_HARMLESS(ctorch_store_free, st, "ctorch_store");
  unlink(path);
  ctorch_tensor_free(t);
}
END_TEST

START_TEST(grad_scaler) {
  ctorch_grad_scaler s = NULL;
  ctorch_tensor p = vec(2);
  ctorch_optimizer o = sgd(p);
  double scale = 0;
  int stepped = 0;
  CT_OK(ctorch_grad_scaler_new(&s, ctorch_device_cpu(), NULL));
  CT_OK(ctorch_grad_scaler_get_scale(&scale, s));
  ctorch_grad_scaler_free(s);
  BAD(ctorch_grad_scaler_get_scale(&scale, s), "s", FREED("ctorch_grad_scaler"));
  BAD(ctorch_grad_scaler_step(&stepped, s, o), "s", FREED("ctorch_grad_scaler"));
  BAD(ctorch_grad_scaler_update(FOREIGN(ctorch_grad_scaler), NULL), "s", FREED("ctorch_grad_scaler"));
  FREE_IS_HARMLESS(ctorch_grad_scaler_free, s, "ctorch_grad_scaler");
  CT_OK(ctorch_grad_scaler_new(&s, ctorch_device_cpu(), NULL));
  ctorch_optimizer_free(o);
  BAD(ctorch_grad_scaler_step(&stepped, s, o), "opt", FREED("ctorch_optimizer"));
  ctorch_grad_scaler_free(s);
  ctorch_tensor_free(p);
}
END_TEST

/* CUDA-only handle types: foreign and wrong-type pointers are refused
 * before the device is looked at. */
START_TEST(device_handles_foreign) {
  int out = 0;
  ctorch_generator g = generator();
  BAD(ctorch_stream_query(&out, FOREIGN(ctorch_stream)), "s", FREED("ctorch_stream"));
  BAD(ctorch_stream_query(&out, (ctorch_stream)(void *)g), "s", WRONG("ctorch_generator", "ctorch_stream"));
  BAD(ctorch_event_query(&out, FOREIGN(ctorch_event)), "e", FREED("ctorch_event"));
  BAD(ctorch_cuda_graph_replay(FOREIGN(ctorch_cuda_graph)), "g", FREED("ctorch_cuda_graph"));
  BAD(ctorch_stream_scope_leave(FOREIGN(ctorch_stream_scope)), "scope", FREED("ctorch_stream_scope"));
  FREE_IS_HARMLESS(ctorch_stream_free, FOREIGN(ctorch_stream), "ctorch_stream");
  FREE_IS_HARMLESS(ctorch_event_free, (ctorch_event)(void *)g, "ctorch_generator");
  FREE_IS_HARMLESS(ctorch_cuda_graph_free, FOREIGN(ctorch_cuda_graph), "ctorch_cuda_graph");
  ctorch_generator_free(g);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("handles");
  TCase *tc = tcase_create("freed_foreign_wrong_type");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, nn_module);
  tcase_add_test(tc, tensor_list_and_generator);
  tcase_add_test(tc, optimizer_and_scheduler);
  tcase_add_test(tc, data_transform_dict);
  tcase_add_test(tc, values_writer_scopes);
  tcase_add_test(tc, autograd_ctx_after_callback);
  tcase_add_test(tc, script_module_and_tracer);
  tcase_add_test(tc, dist_store_group_work);
  tcase_add_test(tc, grad_scaler);
  tcase_add_test(tc, device_handles_foreign);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
