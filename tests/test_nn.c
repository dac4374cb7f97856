/* The module layer's core (ctorch_nn_*): success and failure paths of
 * argument parsing, forward, containers, names, state dicts strict and not,
 * training a Sequential with an optimizer, train/eval, freezing, to(), repr,
 * and ctorch_tensor_dict_new/set/save. Custom modules, clones, the
 * catalogue and shape checks are test_nn_custom.c's; the numbers against
 * torch.nn are tests/python/nn_core_vs_torch.py's. */
#define _GNU_SOURCE

#include "nn_test_util.h"
#include "tmp_files.h"

static void make_dir(void) { ct_tmp_dir_make("nn"); }

static void expect_new_fails(const char *kind, const char *args, const char *needle) {
  ctorch_nn_module m = (ctorch_nn_module)1;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_new(&m, kind, args));
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("ctorch_nn_new");
  CT_ERROR_HAS(needle);
}

START_TEST(new_parses_python_arguments) {
  ctorch_nn_module m = nn("Linear", "784, 10");
  const char *kind = NULL;
  ctorch_tensor w = NULL;
  ctorch_dtype dt;
  CT_OK(ctorch_nn_module_kind(&kind, m));
  ck_assert_str_eq(kind, "Linear");
  expect_repr(m, "Linear(in_features=784, out_features=10, bias=True)");
  ctorch_nn_module_free(m);
  m = nn("Linear", " in_features = 3 , out_features=2, bias=False, dtype=torch.float64 ");
  expect_repr(m, "Linear(in_features=3, out_features=2, bias=False)");
  CT_OK(ctorch_nn_module_tensor(&w, m, "weight"));
  CT_OK(ctorch_tensor_dtype(&dt, w));
  ck_assert_int_eq(dt, CTORCH_FLOAT64);
  ctorch_tensor_free(w);
  CT_OK(ctorch_nn_module_tensor(&w, m, "bias"));
  ck_assert_ptr_null(w); /* None */
  ctorch_nn_module_free(m);
  m = nn("Linear", "2, 2, dtype='float64', device='cpu'");
  ctorch_nn_module_free(m);
  m = nn("Flatten", "0, end_dim=-1");
  expect_repr(m, "Flatten(start_dim=0, end_dim=-1)");
  ctorch_nn_module_free(m);
  m = nn("ReLU", "inplace=True");
  expect_repr(m, "ReLU(inplace=True)");
  ctorch_nn_module_free(m);
  m = nn("ReLU", NULL);
  expect_repr(m, "ReLU()");
  ctorch_nn_module_free(m);
  m = nn("Identity", "");
  expect_repr(m, "Identity()");
  ctorch_nn_module_free(m);
}
END_TEST

START_TEST(new_errors_name_the_option) {
  ctorch_nn_module m = NULL;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_new(NULL, "Linear", "1, 2"));
  CT_ERROR_HAS("out");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_new(&m, NULL, "1, 2"));
  CT_ERROR_HAS("kind");
  expect_new_fails("Linearr", "1, 2", "Linearr");
  expect_new_fails("Linear", "784", "'out_features'");
  expect_new_fails("Linear", "784, 10, bias=3", "'bias'");
  expect_new_fails("Linear", "784, 10, biass=True", "'biass'");
  expect_new_fails("Linear", "784, 10, bias=True, bias=False", "'bias'");
  expect_new_fails("Linear", "784, '10'", "'out_features'");
  expect_new_fails("Linear", "784, 10.5", "'out_features'");
  expect_new_fails("Linear", "in_features=784, 10", "positional");
  expect_new_fails("Linear", "784, 10, True, None, None, 7", "positional");
  expect_new_fails("Linear", "784, (10", "Linear");
  expect_new_fails("Linear", "784, 10, dtype=torch.floot", "torch.floot");
  expect_new_fails("Linear", "784, 10, dtype='floot'", "'dtype'");
  expect_new_fails("Linear", "784, 10, device='gpu:x'", "'device'");
  expect_new_fails("Linear", "784, 10, bias=None", "'bias'");
  expect_new_fails("Linear", "-1, 10", "in_features");
  expect_new_fails("Flatten", "start_dim=1e-5", "'start_dim'");
  expect_new_fails("Identity", "3", "Identity");
}
END_TEST

START_TEST(forward_checks_inputs) {
  ctorch_nn_module m = nn("Linear", "4, 3");
  ctorch_tensor x = randn2(2, 4), y = NULL, outs[2] = {NULL, NULL}, two[2];
  int64_t sz[2];
  size_t n = 9;
  CT_OK(ctorch_nn_module_forward(&y, m, x));
  CT_OK(ctorch_tensor_sizes(sz, 2, y));
  ck_assert_int_eq(sz[0], 2);
  ck_assert_int_eq(sz[1], 3);
  ctorch_tensor_free(y);
  CT_OK(ctorch_nn_module_forward_n(m, &x, 1, NULL, outs, 2, &n));
  ck_assert_uint_eq(n, 1);
  ck_assert_ptr_nonnull(outs[0]);
  ck_assert_ptr_null(outs[1]);
  ctorch_tensor_free(outs[0]);
  CT_OK(ctorch_nn_module_forward_n(m, &x, 1, "", outs, 1, &n));
  ctorch_tensor_free(outs[0]);
  two[0] = x;
  two[1] = x;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_n(m, two, 2, NULL, outs, 2, &n));
  CT_ERROR_HAS("n_inputs");
  CT_ERROR_HAS("takes 1 inputs, got 2");
  ck_assert_uint_eq(n, 0);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_n(m, NULL, 0, NULL, outs, 2, &n));
  CT_ERROR_HAS("n_inputs");
  two[0] = NULL;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_n(m, two, 1, NULL, outs, 2, &n));
  CT_ERROR_HAS("'input'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_n(m, &x, 1, "foo=1", outs, 2, &n));
  CT_ERROR_HAS("'foo'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_n(m, &x, 1, NULL, outs, 0, &n));
  CT_ERROR_HAS("max_outputs");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_n(m, &x, 1, NULL, NULL, 2, &n));
  CT_ERROR_HAS("outputs");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_n(m, &x, 1, NULL, outs, 2, NULL));
  CT_ERROR_HAS("n_outputs");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_n(NULL, &x, 1, NULL, outs, 2, &n));
  CT_ERROR_HAS("'m'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward(NULL, m, x));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward(&y, NULL, x));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward(&y, m, NULL));
  CT_ERROR_HAS("input");
  ctorch_tensor_free(x);
  /* A shape mismatch is the kernel's error, with the module's path. */
  {
    ctorch_nn_module s = nn("Sequential", "");
    ctorch_tensor bad = randn2(2, 5);
    CT_OK(ctorch_nn_module_append(s, m));
    CT_FAILS(CTORCH_RUNTIME, ctorch_nn_module_forward(&y, s, bad));
    CT_ERROR_HAS("in module '0' (Linear)");
    CT_ERROR_HAS("[2, 5]");
    ctorch_tensor_free(bad);
    ctorch_nn_module_free(s);
  }
  ctorch_nn_module_free(m);
  ctorch_nn_module_free(NULL);
}
END_TEST

START_TEST(sequential_names_repr_and_children) {
  ctorch_nn_module s = mlp(), c = NULL;
  ctorch_tensor_dict d = NULL;
  ctorch_tensor t = NULL;
  char buf[512];
  size_t n = 0;
  const char *name = NULL;
  int64_t count = 0;
  CT_OK(ctorch_nn_module_named_parameters(&d, s, 1));
  ck_assert_str_eq(keys_of(d, buf, sizeof buf), "0.weight,0.bias,2.weight,2.bias");
  ctorch_tensor_dict_free(d);
  CT_OK(ctorch_nn_module_named_parameters(&d, s, 0));
  ck_assert_str_eq(keys_of(d, buf, sizeof buf), "");
  ctorch_tensor_dict_free(d);
  CT_OK(ctorch_nn_module_named_buffers(&d, s, 1));
  ck_assert_str_eq(keys_of(d, buf, sizeof buf), "");
  ctorch_tensor_dict_free(d);
  CT_OK(ctorch_nn_module_state_dict(&d, s));
  ck_assert_str_eq(keys_of(d, buf, sizeof buf), "0.weight,0.bias,2.weight,2.bias");
  ctorch_tensor_dict_free(d);
  expect_repr(s, "Sequential(\n  (0): Linear(in_features=4, out_features=8, bias=True)\n  (1): ReLU()\n"
                 "  (2): Linear(in_features=8, out_features=1, bias=True)\n)");
  CT_OK(ctorch_nn_module_num_children(&n, s));
  ck_assert_uint_eq(n, 3);
  CT_OK(ctorch_nn_module_child(&c, &name, s, 1));
  ck_assert_str_eq(name, "1");
  ctorch_nn_module_free(c);
  CT_OK(ctorch_nn_module_child(&c, NULL, s, 0));
  ctorch_nn_module_free(c);
  CT_FAILS(CTORCH_INDEX, ctorch_nn_module_child(&c, &name, s, 3));
  ck_assert_ptr_null(c);
  CT_OK(ctorch_nn_module_get(&c, s, "2"));
  CT_OK(ctorch_nn_module_num_parameters(&count, c, 0));
  ck_assert_int_eq(count, 9);
  ctorch_nn_module_free(c);
  CT_OK(ctorch_nn_module_get(&c, s, ""));
  ctorch_nn_module_free(c);
  CT_FAILS(CTORCH_INDEX, ctorch_nn_module_get(&c, s, "7"));
  CT_ERROR_HAS("'7'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_get(&c, s, NULL));
  CT_OK(ctorch_nn_module_num_parameters(&count, s, 0));
  ck_assert_int_eq(count, 4 * 8 + 8 + 8 + 1);
  CT_OK(ctorch_nn_module_tensor(&t, s, "0.weight"));
  ck_assert_ptr_nonnull(t);
  ctorch_tensor_free(t);
  CT_FAILS(CTORCH_INDEX, ctorch_nn_module_tensor(&t, s, "0.weightt"));
  CT_ERROR_HAS("0.weightt");
  CT_FAILS(CTORCH_INDEX, ctorch_nn_module_tensor(&t, s, "9.weight"));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_num_children(NULL, s));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_named_parameters(NULL, s, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_named_buffers(&d, NULL, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_state_dict(&d, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_repr(NULL, s));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_kind(NULL, s));
  ctorch_nn_module_free(s);
}
END_TEST

START_TEST(containers) {
  ctorch_nn_module l = nn("ModuleList", ""), d = nn("ModuleDict", ""), lin = nn("Linear", "2, 2"), r = NULL;
  ctorch_tensor x = randn2(1, 2), y = NULL;
  ctorch_tensor_dict sd = NULL;
  char buf[256];
  CT_OK(ctorch_nn_module_append(l, lin));
  CT_OK(ctorch_nn_module_append(l, lin)); /* the same module twice: shared, named once */
  CT_OK(ctorch_nn_module_named_parameters(&sd, l, 1));
  ck_assert_str_eq(keys_of(sd, buf, sizeof buf), "0.weight,0.bias");
  ctorch_tensor_dict_free(sd);
  CT_OK(ctorch_nn_module_state_dict(&sd, l));
  ck_assert_str_eq(keys_of(sd, buf, sizeof buf), "0.weight,0.bias,1.weight,1.bias");
  ctorch_tensor_dict_free(sd);
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_nn_module_forward(&y, l, x));
  CT_ERROR_HAS("forward");
  CT_OK(ctorch_nn_module_register_module(d, "enc", lin));
  CT_OK(ctorch_nn_module_register_module(d, "dec", lin));
  CT_OK(ctorch_nn_module_state_dict(&sd, d));
  ck_assert_str_eq(keys_of(sd, buf, sizeof buf), "enc.weight,enc.bias,dec.weight,dec.bias");
  ctorch_tensor_dict_free(sd);
  expect_repr(d, "ModuleDict(\n  (enc): Linear(in_features=2, out_features=2, bias=True)\n"
                 "  (dec): Linear(in_features=2, out_features=2, bias=True)\n)");
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_nn_module_forward(&y, d, x));
  /* append needs a Sequential or ModuleList; nothing contains itself */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_append(d, lin));
  CT_ERROR_HAS("ModuleDict");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_append(l, l));
  CT_ERROR_HAS("itself");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_module(lin, "up", d));
  CT_ERROR_HAS("itself");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_append(NULL, lin));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_append(l, NULL));
  CT_ERROR_HAS("child");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_module(d, "a.b", lin));
  CT_ERROR_HAS("'.'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_module(d, NULL, lin));
  {
    ctorch_nn_module idn = nn("Identity", "");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_module(lin, "weight", idn));
    CT_ERROR_HAS("'weight'");
    ctorch_nn_module_free(idn);
  }
  /* re-registering a child name replaces it in place */
  r = nn("ReLU", "");
  CT_OK(ctorch_nn_module_register_module(d, "enc", r));
  expect_repr(d, "ModuleDict(\n  (enc): ReLU()\n  (dec): Linear(in_features=2, out_features=2, bias=True)\n)");
  /* an empty Sequential returns its input */
  {
    ctorch_nn_module s = nn("Sequential", "");
    CT_OK(ctorch_nn_module_forward(&y, s, x));
    CT_ASSERT_SAME(y, x);
    ctorch_tensor_free(y);
    expect_repr(s, "Sequential()");
    ctorch_nn_module_free(s);
  }
  ctorch_nn_module_free(r);
  ctorch_nn_module_free(l);
  ctorch_nn_module_free(d);
  ctorch_nn_module_free(lin);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(load_state_dict_strict_and_not) {
  ctorch_nn_module a = mlp(), b = mlp();
  ctorch_tensor_dict sd = NULL, bad = NULL;
  ctorch_tensor wa = NULL, wb = NULL, w0 = NULL, t = NULL;
  char *report = NULL;
  CT_OK(ctorch_nn_module_state_dict(&sd, a));
  CT_OK(ctorch_nn_module_tensor(&wa, a, "0.weight"));
  CT_OK(ctorch_nn_module_tensor(&wb, b, "0.weight"));
  ck_assert(!same_values(wa, wb));
  CT_OK(ctorch_nn_module_load_state_dict(&report, b, sd, 1));
  ck_assert_str_eq(report, "");
  ctorch_string_free(report);
  ck_assert(same_values(wa, wb));
  /* the values were copied, not shared */
  ck_assert_ptr_ne(wa, wb);
  ctorch_tensor_free(wb);

  /* missing, unexpected and mis-shaped keys, by name; nothing changes */
  b = (ctorch_nn_module_free(b), mlp());
  CT_OK(ctorch_nn_module_tensor(&w0, b, "0.weight"));
  CT_OK(ctorch_tensor_dict_new(&bad));
  CT_OK(ctorch_tensor_dict_find(&t, sd, "0.weight"));
  CT_OK(ctorch_tensor_dict_set(bad, "0.weight", t));
  ctorch_tensor_free(t);
  CT_OK(ctorch_tensor_dict_find(&t, sd, "0.bias"));
  CT_OK(ctorch_tensor_dict_set(bad, "foo.bar", t));
  CT_OK(ctorch_tensor_dict_set(bad, "2.bias", t)); /* shape [8] where [1] is wanted */
  ctorch_tensor_free(t);
  report = (char *)1;
  CT_FAILS(CTORCH_VALUE, ctorch_nn_module_load_state_dict(&report, b, bad, 1));
  ck_assert_ptr_null(report);
  CT_ERROR_HAS("ctorch_nn_module_load_state_dict");
  CT_ERROR_HAS("\"0.bias\"");
  CT_ERROR_HAS("\"2.weight\"");
  CT_ERROR_HAS("Missing key(s)");
  CT_ERROR_HAS("Unexpected key(s) in state_dict: \"foo.bar\"");
  CT_ERROR_HAS("size mismatch for 2.bias: copying a param with shape [8] from checkpoint, the shape in current model is [1]");
  ck_assert(!same_values(w0, wa));
  /* non-strict: the mis-shaped key is still an error */
  CT_FAILS(CTORCH_VALUE, ctorch_nn_module_load_state_dict(NULL, b, bad, 0));
  CT_ERROR_HAS("2.bias");
  ck_assert(strstr(ctorch_last_error(), "Missing") == NULL);
  ck_assert(!same_values(w0, wa));
  /* non-strict without it: loads what matches, reports the rest */
  ctorch_tensor_dict_free(bad);
  CT_OK(ctorch_tensor_dict_new(&bad));
  CT_OK(ctorch_tensor_dict_find(&t, sd, "0.weight"));
  CT_OK(ctorch_tensor_dict_set(bad, "0.weight", t));
  CT_OK(ctorch_tensor_dict_set(bad, "extra", t));
  ctorch_tensor_free(t);
  CT_OK(ctorch_nn_module_load_state_dict(&report, b, bad, 0));
  ck_assert_str_eq(report, "missing: 0.bias\nmissing: 2.weight\nmissing: 2.bias\nunexpected: extra\n");
  ctorch_string_free(report);
  ck_assert(same_values(w0, wa));
  CT_FAILS(CTORCH_VALUE, ctorch_nn_module_load_state_dict(NULL, b, bad, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_load_state_dict(NULL, b, NULL, 1));
  CT_ERROR_HAS("sd");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_load_state_dict(NULL, NULL, sd, 1));
  ctorch_tensor_dict_free(bad);
  ctorch_tensor_dict_free(sd);
  ctorch_tensor_free(w0);
  ctorch_tensor_free(wa);
  ctorch_nn_module_free(a);
  ctorch_nn_module_free(b);
}
END_TEST

START_TEST(state_dict_saved_and_loaded_back) {
  ctorch_nn_module a = mlp(), b = mlp();
  ctorch_tensor_dict sd = NULL, back = NULL, d = NULL;
  ctorch_tensor wa = NULL, wb = NULL;
  const char *path = ct_tmp_path("nn_sd.pt");
  CT_OK(ctorch_nn_module_state_dict(&sd, a));
  CT_OK(ctorch_tensor_dict_save(path, sd));
  CT_OK(ctorch_load_dict(&back, path));
  CT_OK(ctorch_nn_module_load_state_dict(NULL, b, back, 1));
  CT_OK(ctorch_nn_module_tensor(&wa, a, "2.weight"));
  CT_OK(ctorch_nn_module_tensor(&wb, b, "2.weight"));
  ck_assert(same_values(wa, wb));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dict_save(NULL, sd));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dict_save(path, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dict_new(NULL));
  CT_OK(ctorch_tensor_dict_new(&d));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dict_set(d, NULL, wa));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dict_set(d, "x", NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dict_set(NULL, "x", wa));
  /* set replaces in place */
  CT_OK(ctorch_tensor_dict_set(d, "x", wa));
  CT_OK(ctorch_tensor_dict_set(d, "y", wa));
  CT_OK(ctorch_tensor_dict_set(d, "x", wb));
  {
    char buf[64];
    ctorch_tensor t = NULL;
    ck_assert_str_eq(keys_of(d, buf, sizeof buf), "x,y");
    CT_OK(ctorch_tensor_dict_get(&t, d, 0));
    CT_ASSERT_SAME(t, wb);
    ctorch_tensor_free(t);
  }
  ctorch_tensor_dict_free(d);
  ctorch_tensor_dict_free(sd);
  ctorch_tensor_dict_free(back);
  ctorch_tensor_free(wa);
  ctorch_tensor_free(wb);
  ctorch_nn_module_free(a);
  ctorch_nn_module_free(b);
}
END_TEST

static double loss_of(ctorch_nn_module m, ctorch_tensor x, ctorch_tensor y, ctorch_tensor *loss) {
  ctorch_tensor p = NULL;
  double v = 0;
  CT_OK(ctorch_nn_module_forward(&p, m, x));
  CT_OK(ctorch_mse_loss(loss, p, y, 1));
  CT_OK(ctorch_tensor_item_double(&v, *loss));
  ctorch_tensor_free(p);
  return v;
}

START_TEST(sequential_trains_with_an_optimizer) {
  ctorch_nn_module m;
  ctorch_tensor_list params = NULL;
  ctorch_tensor ps[8], x, y = NULL, loss = NULL;
  ctorch_optimizer opt = NULL;
  ctorch_optim_options o;
  size_t n = 0, i;
  double first = 0, last = 0;
  int step;
  CT_OK(ctorch_manual_seed(0));
  m = mlp();
  x = randn2(32, 4);
  CT_OK(ctorch_sum_dim_IntList(&y, x, (const int64_t[]){1}, 1, 1, NULL));
  CT_OK(ctorch_nn_module_parameters(&params, m));
  CT_OK(ctorch_tensor_list_size(&n, params));
  ck_assert_uint_eq(n, 4);
  for (i = 0; i < n; ++i) CT_OK(ctorch_tensor_list_get(&ps[i], params, i));
  CT_OK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
  o.lr = 0.05;
  CT_OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, ps, n, &o));
  for (step = 0; step < 60; ++step) {
    double v;
    CT_OK(ctorch_nn_module_zero_grad(m, 1));
    v = loss_of(m, x, y, &loss);
    if (step == 0) first = v;
    last = v;
    CT_OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    ctorch_tensor_free(loss);
    CT_OK(ctorch_optimizer_step(opt));
  }
  ck_assert_msg(last < first * 0.5, "loss %g -> %g", first, last);
  /* zero_grad(set_to_none=0) zeroes, 1 drops */
  {
    ctorch_tensor g = NULL;
    double s = 1;
    CT_OK(ctorch_nn_module_zero_grad(m, 0));
    CT_OK(ctorch_tensor_grad(&g, ps[0]));
    ck_assert_ptr_nonnull(g);
    {
      ctorch_tensor a = NULL, t = NULL;
      CT_OK(ctorch_abs(&a, g));
      CT_OK(ctorch_sum(&t, a, NULL));
      CT_OK(ctorch_tensor_item_double(&s, t));
      ctorch_tensor_free(a);
      ctorch_tensor_free(t);
    }
    ck_assert(s == 0);
    ctorch_tensor_free(g);
    CT_OK(ctorch_nn_module_zero_grad(m, 1));
    CT_OK(ctorch_tensor_grad(&g, ps[0]));
    ck_assert_ptr_null(g);
  }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_zero_grad(NULL, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_parameters(NULL, m));
  ctorch_optimizer_free(opt);
  for (i = 0; i < n; ++i) ctorch_tensor_free(ps[i]);
  ctorch_tensor_list_free(params);
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  ctorch_nn_module_free(m);
}
END_TEST

START_TEST(train_eval_freeze_count) {
  ctorch_nn_module m = mlp(), c = NULL;
  int on = -1;
  int64_t n = 0;
  CT_OK(ctorch_nn_module_is_training(&on, m));
  ck_assert_int_eq(on, 1);
  CT_OK(ctorch_nn_module_train(m, 0));
  CT_OK(ctorch_nn_module_is_training(&on, m));
  ck_assert_int_eq(on, 0);
  CT_OK(ctorch_nn_module_get(&c, m, "2"));
  CT_OK(ctorch_nn_module_is_training(&on, c));
  ck_assert_int_eq(on, 0);
  CT_OK(ctorch_nn_module_train(m, 1));
  CT_OK(ctorch_nn_module_is_training(&on, c));
  ck_assert_int_eq(on, 1);
  CT_OK(ctorch_nn_module_requires_grad(c, 0));
  CT_OK(ctorch_nn_module_num_parameters(&n, m, 1));
  ck_assert_int_eq(n, 40);
  CT_OK(ctorch_nn_module_num_parameters(&n, m, 0));
  ck_assert_int_eq(n, 49);
  CT_OK(ctorch_nn_module_requires_grad(m, 1));
  CT_OK(ctorch_nn_module_num_parameters(&n, m, 1));
  ck_assert_int_eq(n, 49);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_is_training(NULL, m));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_train(NULL, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_requires_grad(NULL, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_num_parameters(NULL, m, 0));
  ctorch_nn_module_free(c);
  ctorch_nn_module_free(m);
}
END_TEST

START_TEST(to_casts_floating_tensors) {
  ctorch_nn_module m = mlp(), c = nn("Sequential", "");
  ctorch_tensor w = NULL, buf = NULL, t = NULL;
  ctorch_dtype dt;
  ctorch_device cpu = {CTORCH_DEVICE_CPU, -1}, bad = {99, 0};
  int rg = 0;
  int64_t sz = 3;
  /* an integer buffer keeps its dtype */
  CT_OK(ctorch_tensor_from_data(&buf, (int64_t[]){1, 2, 3}, sizeof(int64_t) * 3, &sz, 1, CTORCH_INT64));
  CT_OK(ctorch_nn_module_register_buffer(c, "steps", buf, 1));
  CT_OK(ctorch_nn_module_register_module(c, "mlp", m));
  CT_OK(ctorch_nn_module_to(c, &cpu, CTORCH_FLOAT64));
  CT_OK(ctorch_nn_module_tensor(&w, c, "mlp.0.weight"));
  CT_OK(ctorch_tensor_dtype(&dt, w));
  ck_assert_int_eq(dt, CTORCH_FLOAT64);
  CT_OK(ctorch_tensor_requires_grad(&rg, w));
  ck_assert_int_eq(rg, 1);
  ctorch_tensor_free(w);
  CT_OK(ctorch_nn_module_tensor(&t, c, "steps"));
  CT_OK(ctorch_tensor_dtype(&dt, t));
  ck_assert_int_eq(dt, CTORCH_INT64);
  ctorch_tensor_free(t);
  CT_OK(ctorch_nn_module_to(c, NULL, -1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_to(c, NULL, CTORCH_INT32));
  CT_ERROR_HAS("dtype");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_to(c, NULL, 1000));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_to(c, &bad, -1));
  CT_ERROR_HAS("device");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_to(NULL, NULL, -1));
  /* forward in float64 */
  {
    ctorch_tensor x = NULL, y = NULL;
    int64_t s2[2] = {2, 4};
    ctorch_dtype f64 = CTORCH_FLOAT64;
    CT_OK(ctorch_randn(&x, s2, 2, &f64, NULL, NULL, NULL));
    CT_OK(ctorch_nn_module_forward(&y, m, x));
    CT_OK(ctorch_tensor_dtype(&dt, y));
    ck_assert_int_eq(dt, CTORCH_FLOAT64);
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
  }
  ctorch_tensor_free(buf);
  ctorch_nn_module_free(m);
  ctorch_nn_module_free(c);
}
END_TEST

/* Module-valued constructor arguments: as text (built while read) and as
 * handles by name (ctorch_nn_new_with_modules); the numbers against
 * torch.nn are tests/nn/cases/seq.txt's te_* and td_* cases. */
START_TEST(module_arguments) {
  char buf[2048], deep[256] = "1, 2, ";
  ctorch_nn_module enc, layer, norm, got = NULL, lin;
  ctorch_tensor_dict sd = NULL;
  ctorch_tensor w = NULL, ones = NULL;
  const char *names[2] = {"encoder_layer", "norm"}, *twice[2] = {"norm", "norm"}, *bad[1] = {"bogus"};
  ctorch_nn_module mods[2];
  int i, eq = 0;
  const int64_t d8[1] = {8};

  enc = nn("TransformerEncoder", "torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16), 2, "
                                 "norm=nn.LayerNorm(8)");
  CT_OK(ctorch_nn_module_state_dict(&sd, enc));
  keys_of(sd, buf, sizeof buf);
  ck_assert_msg(strstr(buf, "layers.1.self_attn.in_proj_weight") && strstr(buf, "norm.bias"), "keys %s", buf);
  ctorch_tensor_dict_free(sd);
  ctorch_nn_module_free(enc);

  /* handles: the layer is copied, the norm is shared */
  layer = nn("TransformerEncoderLayer", "8, 2, dim_feedforward=16");
  norm = nn("LayerNorm", "8");
  mods[0] = layer;
  mods[1] = norm;
  CT_OK(ctorch_nn_new_with_modules(&enc, "TransformerEncoder", "num_layers=3", names, mods, 2));
  CT_OK(ctorch_nn_module_get(&got, enc, "norm"));
  CT_OK(ctorch_full(&ones, d8, 1, ctorch_scalar_float(2.0), NULL, NULL, NULL, NULL));
  CT_OK(ctorch_nn_module_set_tensor(norm, "weight", ones));
  CT_OK(ctorch_nn_module_tensor(&w, got, "weight"));
  CT_OK(ctorch_equal(&eq, w, ones));
  ck_assert_msg(eq, "the encoder's norm is the caller's");
  ctorch_tensor_free(w);
  ctorch_nn_module_free(got);
  CT_OK(ctorch_nn_module_get(&got, enc, "layers.2"));
  ck_assert_ptr_nonnull(got);
  ctorch_nn_module_free(got);

  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_new_with_modules(&got, "TransformerEncoder", "2", names, mods, 2));
  CT_ERROR_HAS("'encoder_layer' given twice"); /* "2" is positional: encoder_layer's place, taken by the handle */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_new_with_modules(&got, "TransformerEncoder", "num_layers=2", twice,
                                                             mods, 2));
  CT_ERROR_HAS("given twice");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_new_with_modules(&got, "TransformerEncoder", "", bad, mods, 1));
  CT_ERROR_HAS("bogus");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_new_with_modules(&got, "TransformerEncoder", "num_layers=2", NULL,
                                                             mods, 2));
  CT_ERROR_HAS("names");
  mods[1] = NULL;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_new_with_modules(&got, "TransformerEncoder", "num_layers=2", names,
                                                             mods, 2));
  CT_ERROR_HAS("modules[1]");
  lin = nn("Linear", "8, 8");
  mods[0] = lin;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_new_with_modules(&got, "TransformerEncoder", "num_layers=2", names,
                                                             mods, 1));
  CT_ERROR_HAS("encoder_layer");
  CT_ERROR_HAS("Linear");
  ck_assert_ptr_null(got);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_new_with_modules(&got, "Linear", "in_features=8", names, mods, 1));
  CT_ERROR_HAS("encoder_layer"); /* Linear has no such argument */

  expect_new_fails("TransformerEncoder", "torch.nn.Linear(8, 8), 2", "encoder_layer");
  expect_new_fails("TransformerEncoder", "torch.nn.Nope(1), 2", "no module kind 'Nope'");
  expect_new_fails("TransformerEncoder", "torch.nn.TransformerEncoderLayer(8, 2, 2", "missing ')'");
  expect_new_fails("TransformerEncoder", "torch.nn.TransformerEncoderLayer(8, bogus=1), 2", "bogus");
  expect_new_fails("Linear", "torch.nn.ReLU(), 2", "in_features");
  for (i = 0; i < 40; ++i) strcat(deep, "(");
  strcat(deep, "3");
  for (i = 0; i < 40; ++i) strcat(deep, ")");
  expect_new_fails("Conv2d", deep, "nested more than");

  ctorch_nn_module_free(lin);
  ctorch_tensor_free(ones);
  ctorch_nn_module_free(enc);
  ctorch_nn_module_free(layer);
  ctorch_nn_module_free(norm);
}
END_TEST

/* A container's child whose forward takes more inputs than the one it is
 * handed (TransformerEncoderLayer's masks) gets their defaults, as from
 * ctorch_nn_module_forward (it read past its inputs before: a crash); one
 * that needs more (MultiheadAttention: query, key, value) fails cleanly. */
START_TEST(sequential_children_take_default_inputs) {
  ctorch_nn_module seq = NULL, layer = NULL, mha = NULL, bad = NULL;
  ctorch_tensor x = NULL, direct = NULL, via = NULL, y = NULL;
  int eq = 0;
  CT_OK(ctorch_manual_seed(0));
  CT_OK(ctorch_nn_new(&seq, "Sequential", ""));
  CT_OK(ctorch_nn_new(&layer, "TransformerEncoderLayer", "8, 2, dim_feedforward=16, batch_first=True"));
  CT_OK(ctorch_nn_module_append(seq, layer));
  CT_OK(ctorch_nn_module_train(seq, 0));
  CT_OK(ctorch_randn(&x, (int64_t[]){2, 5, 8}, 3, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_nn_module_forward(&direct, layer, x));
  CT_OK(ctorch_nn_module_forward(&via, seq, x));
  CT_OK(ctorch_equal(&eq, direct, via));
  ck_assert(eq);
  CT_OK(ctorch_nn_new(&bad, "Sequential", ""));
  CT_OK(ctorch_nn_new(&mha, "MultiheadAttention", "8, 2"));
  CT_OK(ctorch_nn_module_append(bad, mha));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward(&y, bad, x));
  CT_ERROR_HAS("MultiheadAttention");
  ck_assert_ptr_null(y);
  ctorch_tensor_free(x);
  ctorch_tensor_free(direct);
  ctorch_tensor_free(via);
  ctorch_nn_module_free(layer);
  ctorch_nn_module_free(mha);
  ctorch_nn_module_free(seq);
  ctorch_nn_module_free(bad);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("nn");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, new_parses_python_arguments);
  tcase_add_test(tc, new_errors_name_the_option);
  tcase_add_test(tc, forward_checks_inputs);
  tcase_add_test(tc, sequential_names_repr_and_children);
  tcase_add_test(tc, sequential_children_take_default_inputs);
  tcase_add_test(tc, containers);
  tcase_add_test(tc, load_state_dict_strict_and_not);
  tcase_add_test(tc, sequential_trains_with_an_optimizer);
  tcase_add_test(tc, train_eval_freeze_count);
  tcase_add_test(tc, to_casts_floating_tensors);
  tcase_add_test(tc, module_arguments);
  suite_add_tcase(s, tc);
  tc = tcase_create("files");
  tcase_add_checked_fixture(tc, make_dir, ct_tmp_dir_remove);
  tcase_add_test(tc, state_dict_saved_and_loaded_back);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
