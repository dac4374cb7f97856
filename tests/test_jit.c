/* TorchScript, running: modules scripted and traced by Python at test time
 * (tests/python/make_jit_models.py, run once before the tests fork), run
 * from C and compared with the outputs Python saved alongside: forward and
 * methods, the values they take and return, training mode, parameters and
 * buffers. Loading what is not a good module, and modules through memory
 * and streams: test_jit_load.c.
 * ctest-requires: python */
#include "jit_test_util.h"

static ctorch_module load_scripted(void) {
  ctorch_module m = NULL;
  CT_OK(ctorch_module_load(&m, model_path("scripted.pt"), NULL));
  ck_assert_ptr_nonnull(m);
  return m;
}

static ctorch_value tval(ctorch_tensor t) {
  ctorch_value v = NULL;
  CT_OK(ctorch_value_tensor(&v, t));
  return v;
}

START_TEST(scripted_forward_matches_python) {
  ctorch_module m = load_scripted();
  ctorch_tensor x = ref("x"), want = ref("forward"), got = NULL;
  ctorch_value arg = tval(x), out = NULL;
  ctorch_value_kind k;
  int training = -1;

  CT_OK(ctorch_module_is_training(&training, m));
  ck_assert_int_eq(training, 0); /* saved after eval() */
  CT_OK(ctorch_module_forward(&out, m, &arg, 1));
  CT_OK(ctorch_value_kind_of(&k, out));
  ck_assert_int_eq(k, CTORCH_VALUE_TENSOR);
  CT_OK(ctorch_value_to_tensor(&got, out));
  ck_assert_msg(max_diff(got, want) < 1e-5, "forward differs from Python by %g", max_diff(got, want));
  ctorch_tensor_free(got);
  got = NULL;

  /* The tensor-only convenience gives the same. */
  CT_OK(ctorch_module_forward_tensors(&got, m, &x, 1));
  ck_assert(max_diff(got, want) < 1e-5);
  ctorch_tensor_free(got);

  ctorch_value_free(out);
  ctorch_value_free(arg);
  ctorch_tensor_free(x);
  ctorch_tensor_free(want);
  ctorch_module_free(m);
}
END_TEST

START_TEST(traced_forward_matches_python) {
  ctorch_module m = NULL;
  ctorch_device cpu = ctorch_device_cpu();
  ctorch_tensor x = ref("xt"), want = ref("traced"), got = NULL;
  CT_OK(ctorch_module_load(&m, model_path("traced.pt"), &cpu));
  CT_OK(ctorch_module_forward_tensors(&got, m, &x, 1));
  ck_assert_msg(max_diff(got, want) < 1e-5, "traced forward differs by %g", max_diff(got, want));
  ctorch_tensor_free(got);
  got = NULL;
  /* Wrong arity: a status, not a crash. */
  CT_FAILS(CTORCH_TYPE, ctorch_module_forward_tensors(&got, m, NULL, 0));
  ck_assert_ptr_null(got);
  CT_ERROR_HAS("forward");
  ctorch_tensor_free(x);
  ctorch_tensor_free(want);
  ctorch_module_free(m);
}
END_TEST

START_TEST(method_with_containers_and_scalars) {
  ctorch_module m = load_scripted();
  ctorch_tensor xs[3] = {ref("xs0"), ref("xs1"), ref("xs2")};
  ctorch_tensor want_sum = ref("combine_sum"), want_max = ref("combine_max"), t = NULL;
  ctorch_value items[3], args[5], opt_vals[2], out = NULL, e = NULL, e2 = NULL, key = NULL;
  const char *opt_keys[2] = {"alpha", "beta"};
  const char *s = NULL;
  size_t n = 0, i;
  int64_t iv = 0;
  char *ty = NULL;
  ctorch_value_kind k;
  int has = -1;

  CT_OK(ctorch_module_has_method(&has, m, "combine"));
  ck_assert_int_eq(has, 1);
  CT_OK(ctorch_module_has_method(&has, m, "nope"));
  ck_assert_int_eq(has, 0);

  for (i = 0; i < 3; ++i) items[i] = tval(xs[i]);
  CT_OK(ctorch_value_list(&args[0], items, 3));
  CT_OK(ctorch_value_double(&opt_vals[0], 0.5));
  CT_OK(ctorch_value_double(&opt_vals[1], 3.0));
  CT_OK(ctorch_value_dict_str(&args[1], opt_keys, opt_vals, 2));
  CT_OK(ctorch_value_int(&args[2], 7));
  CT_OK(ctorch_value_string(&args[3], "abc"));
  CT_OK(ctorch_value_bool(&args[4], 1));
  CT_OK(ctorch_value_type_str(&ty, args[0]));
  ck_assert_str_eq(ty, "List[Tensor]");
  ctorch_string_free(ty);
  CT_OK(ctorch_value_type_str(&ty, args[1]));
  ck_assert_str_eq(ty, "Dict[str, float]");
  ctorch_string_free(ty);

  CT_OK(ctorch_module_run_method(&out, m, "combine", args, 5));
  /* (Tensor, Dict[str, Tensor], List[int], str) */
  CT_OK(ctorch_value_kind_of(&k, out));
  ck_assert_int_eq(k, CTORCH_VALUE_TUPLE);
  CT_OK(ctorch_value_size(&n, out));
  ck_assert_uint_eq(n, 4);

  CT_OK(ctorch_value_get(&e, out, 0));
  CT_OK(ctorch_value_to_tensor(&t, e));
  ck_assert(max_diff(t, want_sum) < 1e-5);
  ctorch_tensor_free(t);
  ctorch_value_free(e);

  CT_OK(ctorch_value_get(&e, out, 1));
  CT_OK(ctorch_value_kind_of(&k, e));
  ck_assert_int_eq(k, CTORCH_VALUE_DICT);
  CT_OK(ctorch_value_size(&n, e));
  ck_assert_uint_eq(n, 2);
  CT_OK(ctorch_value_dict_key(&key, e, 1));
  CT_OK(ctorch_value_to_string(&s, key));
  ck_assert_str_eq(s, "max");
  CT_OK(ctorch_value_dict_value(&e2, e, 1));
  CT_OK(ctorch_value_to_tensor(&t, e2));
  ck_assert(max_diff(t, want_max) < 1e-6);
  ctorch_tensor_free(t);
  ctorch_value_free(e2);
  ctorch_value_free(key);
  CT_FAILS(CTORCH_INDEX, ctorch_value_dict_key(&key, e, 2));
  ck_assert_ptr_null(key);
  ctorch_value_free(e);

  CT_OK(ctorch_value_get(&e, out, 2));
  CT_OK(ctorch_value_kind_of(&k, e));
  ck_assert_int_eq(k, CTORCH_VALUE_LIST);
  CT_OK(ctorch_value_get(&e2, e, 1));
  CT_OK(ctorch_value_to_int(&iv, e2));
  ck_assert_int_eq(iv, 14);
  ctorch_value_free(e2);
  CT_FAILS(CTORCH_INDEX, ctorch_value_get(&e2, e, 2));
  ctorch_value_free(e);

  CT_OK(ctorch_value_get(&e, out, 3));
  CT_OK(ctorch_value_to_string(&s, e));
  ck_assert_str_eq(s, "abc!");
  CT_FAILS(CTORCH_TYPE, ctorch_value_to_int(&iv, e));
  CT_ERROR_HAS("str");
  ctorch_value_free(e);

  /* Wrong argument types: TYPE with the schema in the message. */
  ctorch_value_free(args[3]);
  CT_OK(ctorch_value_int(&args[3], 1));
  CT_FAILS(CTORCH_TYPE, ctorch_module_run_method(&e, m, "combine", args, 5));
  CT_ERROR_HAS("combine");
  CT_FAILS(CTORCH_TYPE, ctorch_module_run_method(&e, m, "combine", args, 2));
  CT_FAILS(CTORCH_INDEX, ctorch_module_run_method(&e, m, "no_such_method", args, 5));
  CT_ERROR_HAS("no_such_method");

  ctorch_value_free(out);
  for (i = 0; i < 5; ++i) ctorch_value_free(args[i]);
  for (i = 0; i < 3; ++i) {
    ctorch_value_free(items[i]);
    ctorch_tensor_free(xs[i]);
  }
  ctorch_value_free(opt_vals[0]);
  ctorch_value_free(opt_vals[1]);
  ctorch_tensor_free(want_sum);
  ctorch_tensor_free(want_max);
  ctorch_module_free(m);
}
END_TEST

START_TEST(optional_int_dict_empty_list_and_raise) {
  ctorch_module m = load_scripted();
  ctorch_tensor x = ref("xs0"), t = NULL, want = NULL;
  ctorch_value none = NULL, out = NULL, vals[2], args[2], empty = NULL;
  int64_t keys[2] = {10, -4}, iv = -1;
  double dv = 0;
  ctorch_value_kind k;
  float a[6], b[6];
  int i;

  CT_OK(ctorch_value_none(&none));
  CT_OK(ctorch_module_run_method(&out, m, "maybe_double", &none, 1));
  CT_OK(ctorch_value_kind_of(&k, out));
  ck_assert_int_eq(k, CTORCH_VALUE_NONE);
  ctorch_value_free(out);
  vals[0] = tval(x);
  CT_OK(ctorch_module_run_method(&out, m, "maybe_double", vals, 1));
  CT_OK(ctorch_value_to_tensor(&t, out));
  CT_OK(ctorch_tensor_copy_to(a, sizeof a, t));
  CT_OK(ctorch_tensor_copy_to(b, sizeof b, x));
  for (i = 0; i < 6; ++i) ck_assert_float_eq(a[i], 2 * b[i]);
  ctorch_tensor_free(t);
  ctorch_value_free(out);

  /* Dict[int, Tensor] */
  CT_OK(ctorch_value_tensor(&vals[1], x));
  want = x;
  CT_OK(ctorch_value_dict_int(&args[0], keys, vals, 2));
  CT_OK(ctorch_value_int(&args[1], -4));
  CT_OK(ctorch_module_run_method(&out, m, "by_index", args, 2));
  CT_OK(ctorch_value_to_tensor(&t, out));
  ck_assert(max_diff(t, want) == 0);
  ctorch_tensor_free(t);
  ctorch_value_free(out);
  ctorch_value_free(args[1]);
  CT_OK(ctorch_value_int(&args[1], 3));
  CT_FAILS(CTORCH_RUNTIME, ctorch_module_run_method(&out, m, "by_index", args, 2)); /* KeyError inside */
  ctorch_value_free(args[1]);
  ctorch_value_free(args[0]);

  /* An empty list takes the parameter's element type. */
  CT_OK(ctorch_value_list(&empty, NULL, 0));
  CT_OK(ctorch_module_run_method(&out, m, "count", &empty, 1));
  CT_OK(ctorch_value_to_int(&iv, out));
  ck_assert_int_eq(iv, 0);
  ctorch_value_free(out);
  ctorch_value_free(empty);

  /* Scalars in and out; an exception raised by the model is a status. */
  CT_OK(ctorch_value_int(&args[0], 5));
  CT_OK(ctorch_module_run_method(&out, m, "checked", args, 1));
  CT_OK(ctorch_value_to_double(&dv, out));
  ck_assert_double_eq(dv, 2.5);
  ctorch_value_free(out);
  ctorch_value_free(args[0]);
  CT_OK(ctorch_value_int(&args[0], -1));
  out = (ctorch_value)0x1;
  CT_FAILS(CTORCH_RUNTIME, ctorch_module_run_method(&out, m, "checked", args, 1));
  ck_assert_ptr_null(out);
  CT_ERROR_HAS("v must not be negative");
  ctorch_value_free(args[0]);

  ctorch_value_free(vals[0]);
  ctorch_value_free(vals[1]);
  ctorch_value_free(none);
  ctorch_tensor_free(x);
  ctorch_module_free(m);
}
END_TEST

START_TEST(values_build_and_reject) {
  ctorch_value v[3], l = NULL, e = NULL;
  ctorch_tensor t = NULL;
  const char *keys[2] = {"a", NULL};
  int b = -1;
  int64_t iv = 0;
  double dv = 0;
  size_t n = 9;
  char *ty = NULL;

  CT_OK(ctorch_value_int(&v[0], 1));
  CT_OK(ctorch_value_double(&v[1], 2.5));
  CT_OK(ctorch_value_bool(&v[2], 7));
  CT_OK(ctorch_value_to_bool(&b, v[2]));
  ck_assert_int_eq(b, 1);
  CT_OK(ctorch_value_to_int(&iv, v[2]));
  ck_assert_int_eq(iv, 1);
  CT_OK(ctorch_value_to_double(&dv, v[0]));
  ck_assert_double_eq(dv, 1.0);
  CT_FAILS(CTORCH_TYPE, ctorch_value_to_bool(&b, v[0]));
  CT_FAILS(CTORCH_TYPE, ctorch_value_to_tensor(&t, v[0]));
  ck_assert_ptr_null(t);
  CT_FAILS(CTORCH_TYPE, ctorch_value_size(&n, v[0]));

  /* int and float do not unify: lists are homogeneous in TorchScript... */
  CT_FAILS(CTORCH_TYPE, ctorch_value_list(&l, v, 2));
  ck_assert_ptr_null(l);
  CT_ERROR_HAS("tuple");
  /* ...tuples are not. */
  CT_OK(ctorch_value_tuple(&l, v, 3));
  CT_OK(ctorch_value_type_str(&ty, l));
  ck_assert_str_eq(ty, "Tuple[int, float, bool]");
  ctorch_string_free(ty);
  CT_OK(ctorch_value_size(&n, l));
  ck_assert_uint_eq(n, 3);
  CT_OK(ctorch_value_get(&e, l, 1));
  CT_OK(ctorch_value_to_double(&dv, e));
  ck_assert_double_eq(dv, 2.5);
  ctorch_value_free(e);
  ctorch_value_free(l);

  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_value_dict_str(&l, keys, v, 2));
  CT_ERROR_HAS("keys");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_value_list(&l, NULL, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_value_tensor(&l, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_value_string(&l, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_value_kind_of(NULL, v[0]));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_value_size(&n, NULL));
  ctorch_value_free(NULL);
  ctorch_module_free(NULL);
  ctorch_value_free(v[0]);
  ctorch_value_free(v[1]);
  ctorch_value_free(v[2]);
}
END_TEST

START_TEST(train_eval_parameters_buffers) {
  ctorch_module m = load_scripted();
  ctorch_tensor_dict params = NULL, bufs = NULL, sd = NULL;
  ctorch_tensor x = ref("x"), want = ref("forward"), got = NULL, p = NULL, q = NULL, rm = NULL;
  const char *name = NULL;
  size_t n = 0, i;
  int training = -1;
  float before[3], after[3];
  ctorch_device bad = {77, 0};

  CT_OK(ctorch_module_named_parameters(&params, m));
  CT_OK(ctorch_tensor_dict_size(&n, params));
  ck_assert_uint_eq(n, 4);
  CT_OK(ctorch_tensor_dict_key(&name, params, 0));
  ck_assert_str_eq(name, "inner.fc.weight");
  CT_OK(ctorch_module_named_buffers(&bufs, m));
  CT_OK(ctorch_tensor_dict_size(&n, bufs));
  ck_assert_uint_eq(n, 4);

  /* Every parameter and buffer equals the state dict Python saved. */
  CT_OK(ctorch_load_dict(&sd, model_path("state_dict.pt")));
  CT_OK(ctorch_tensor_dict_size(&n, sd));
  ck_assert_uint_eq(n, 8);
  for (i = 0; i < 4; ++i) {
    CT_OK(ctorch_tensor_dict_key(&name, params, i));
    CT_OK(ctorch_tensor_dict_get(&p, params, i));
    CT_OK(ctorch_tensor_dict_find(&q, sd, name));
    ck_assert_msg(max_diff(p, q) == 0, "parameter %s differs", name);
    ctorch_tensor_free(p);
    ctorch_tensor_free(q);
  }
  for (i = 0; i < 3; ++i) { /* the float buffers; num_batches_tracked is int64 */
    CT_OK(ctorch_tensor_dict_key(&name, bufs, i));
    CT_OK(ctorch_tensor_dict_get(&p, bufs, i));
    CT_OK(ctorch_tensor_dict_find(&q, sd, name));
    ck_assert_msg(max_diff(p, q) == 0, "buffer %s differs", name);
    ctorch_tensor_free(p);
    ctorch_tensor_free(q);
  }

  CT_OK(ctorch_module_parameter(&p, m, "bn.weight"));
  ck_assert_ptr_nonnull(p);
  ctorch_tensor_free(p);
  p = (ctorch_tensor)0x1;
  CT_FAILS(CTORCH_INDEX, ctorch_module_parameter(&p, m, "bn.running_mean"));
  ck_assert_ptr_null(p);
  CT_FAILS(CTORCH_INDEX, ctorch_module_buffer(&p, m, "nope"));
  CT_ERROR_HAS("nope");

  /* Training mode: dropout and batch statistics change the output and
   * update running_mean in place (the buffer handle shares storage). */
  CT_OK(ctorch_module_buffer(&rm, m, "bn.running_mean"));
  CT_OK(ctorch_tensor_copy_to(before, sizeof before, rm));
  CT_OK(ctorch_module_train(m, 1));
  CT_OK(ctorch_module_is_training(&training, m));
  ck_assert_int_eq(training, 1);
  CT_OK(ctorch_module_forward_tensors(&got, m, &x, 1));
  ck_assert_msg(max_diff(got, want) > 1e-3, "train-mode output equals eval-mode output");
  ctorch_tensor_free(got);
  CT_OK(ctorch_tensor_copy_to(after, sizeof after, rm));
  ck_assert_msg(memcmp(before, after, sizeof before) != 0, "running_mean did not change in training mode");
  CT_OK(ctorch_module_eval(m));
  CT_OK(ctorch_module_is_training(&training, m));
  ck_assert_int_eq(training, 0);

  CT_OK(ctorch_module_to_device(m, ctorch_device_cpu()));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_to_device(m, bad));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_train(NULL, 1));
  CT_ERROR_HAS("'m'");

  ctorch_tensor_free(rm);
  ctorch_tensor_dict_free(params);
  ctorch_tensor_dict_free(bufs);
  ctorch_tensor_dict_free(sd);
  ctorch_tensor_free(x);
  ctorch_tensor_free(want);
  ctorch_module_free(m);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("jit");
  TCase *tc = tcase_create("jit");
  make_models("jit_models");
  tcase_add_test(tc, scripted_forward_matches_python);
  tcase_add_test(tc, traced_forward_matches_python);
  tcase_add_test(tc, method_with_containers_and_scalars);
  tcase_add_test(tc, optional_int_dict_empty_list_and_raise);
  tcase_add_test(tc, values_build_and_reject);
  tcase_add_test(tc, train_eval_parameters_buffers);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
