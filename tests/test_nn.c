/* The module layer's core (ctorch_nn_*): every function's success and
 * failure paths, argument parsing, state dicts strict and not, training a
 * Sequential with an optimizer, custom modules, deep copies, to(), repr,
 * the catalogue, shape checks, and ctorch_tensor_dict_new/set/save. The
 * numbers against torch.nn are tests/python/nn_core_vs_torch.py's. */
#define _GNU_SOURCE
#include <math.h>

#include "check_main.h"
#include "tmp_files.h"

static void make_dir(void) { ct_tmp_dir_make("nn"); }

static ctorch_nn_module nn(const char *kind, const char *args) {
  ctorch_nn_module m = NULL;
  CT_OK(ctorch_nn_new(&m, kind, args));
  ck_assert_ptr_nonnull(m);
  return m;
}

static ctorch_tensor randn2(int64_t a, int64_t b) {
  int64_t sz[2] = {a, b};
  ctorch_tensor t = NULL;
  CT_OK(ctorch_randn(&t, sz, 2, NULL, NULL, NULL, NULL));
  return t;
}

static void expect_repr(ctorch_nn_module m, const char *want) {
  char *s = NULL;
  CT_OK(ctorch_nn_module_repr(&s, m));
  ck_assert_msg(strcmp(s, want) == 0, "repr:\n%s\nwanted:\n%s", s, want);
  ctorch_string_free(s);
}

/* The dict's keys joined by ',' into buf. */
static const char *keys_of(ctorch_tensor_dict d, char *buf, size_t cap) {
  size_t n = 0, i;
  buf[0] = 0;
  CT_OK(ctorch_tensor_dict_size(&n, d));
  for (i = 0; i < n; ++i) {
    const char *k = NULL;
    CT_OK(ctorch_tensor_dict_key(&k, d, i));
    if (i) strncat(buf, ",", cap - strlen(buf) - 1);
    strncat(buf, k, cap - strlen(buf) - 1);
  }
  return buf;
}

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

static ctorch_nn_module mlp(void) {
  ctorch_nn_module s = nn("Sequential", ""), c;
  c = nn("Linear", "4, 8");
  CT_OK(ctorch_nn_module_append(s, c));
  ctorch_nn_module_free(c);
  c = nn("ReLU", "");
  CT_OK(ctorch_nn_module_append(s, c));
  ctorch_nn_module_free(c);
  c = nn("Linear", "8, 1");
  CT_OK(ctorch_nn_module_append(s, c));
  ctorch_nn_module_free(c);
  return s;
}

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
    ck_assert_ptr_eq(y, x);
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

/* Whether a and b hold equal values. */
static int same_values(ctorch_tensor a, ctorch_tensor b) {
  int eq = 0;
  CT_OK(ctorch_equal(&eq, a, b));
  return eq;
}

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
    ck_assert_ptr_eq(t, wb);
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

START_TEST(clone_is_deep_and_keeps_sharing) {
  ctorch_nn_module s = nn("Sequential", ""), lin = nn("Linear", "3, 3"), k = NULL, k0 = NULL, k1 = NULL;
  ctorch_tensor a = NULL, b = NULL, orig = NULL, copy = NULL;
  CT_OK(ctorch_nn_module_append(s, lin));
  CT_OK(ctorch_nn_module_append(s, lin));
  CT_OK(ctorch_nn_module_clone(&k, s));
  CT_OK(ctorch_nn_module_get(&k0, k, "0"));
  CT_OK(ctorch_nn_module_get(&k1, k, "1"));
  ck_assert_ptr_ne(k0, k1); /* two handles ... */
  CT_OK(ctorch_nn_module_tensor(&a, k, "0.weight"));
  CT_OK(ctorch_nn_module_tensor(&b, k, "1.weight"));
  ck_assert_ptr_eq(a, b); /* ... to one shared module, as deepcopy keeps it */
  CT_OK(ctorch_nn_module_tensor(&orig, s, "0.weight"));
  ck_assert_ptr_ne(a, orig);
  ck_assert(same_values(a, orig));
  CT_OK(ctorch_init_zeros_(orig));
  ck_assert(!same_values(a, orig));
  CT_OK(ctorch_nn_module_tensor(&copy, k, "0.bias"));
  {
    int rg = 0;
    CT_OK(ctorch_tensor_requires_grad(&rg, copy));
    ck_assert_int_eq(rg, 1);
  }
  expect_repr(k, "Sequential(\n  (0): Linear(in_features=3, out_features=3, bias=True)\n"
                 "  (1): Linear(in_features=3, out_features=3, bias=True)\n)");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_clone(NULL, s));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_clone(&k0, NULL));
  ck_assert_ptr_null(k0);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(orig);
  ctorch_tensor_free(copy);
  ctorch_nn_module_free(k1);
  ctorch_nn_module_free(k);
  ctorch_nn_module_free(lin);
  ctorch_nn_module_free(s);
}
END_TEST

/* ---- custom modules ---- */

static int user_data_freed = 0;
static void free_counter(void *p) {
  ck_assert_ptr_eq(p, &user_data_freed);
  ++user_data_freed;
}

/* forward: fc(x) * scale */
static ctorch_status net_forward(void *ud, ctorch_nn_module self, const ctorch_tensor *in, size_t n,
                                 const char *kwargs, ctorch_tensor *out, size_t max_out, size_t *n_out) {
  ctorch_nn_module fc = NULL;
  ctorch_tensor h = NULL, s = NULL;
  ctorch_status st;
  (void)ud;
  *n_out = 0;
  if (n != 1 || max_out < 1) return CTORCH_INVALID_ARGUMENT;
  if (strcmp(kwargs, "fail=True") == 0) return ctorch_nn_new(&fc, "Nope", ""); /* a failing ctorch call */
  if ((st = ctorch_nn_module_get(&fc, self, "fc")) != CTORCH_OK) return st;
  st = ctorch_nn_module_forward(&h, fc, in[0]);
  ctorch_nn_module_free(fc);
  if (st != CTORCH_OK) return st;
  if ((st = ctorch_nn_module_tensor(&s, self, "scale")) != CTORCH_OK) return st;
  st = ctorch_mul_Tensor(&out[0], h, s);
  ctorch_tensor_free(h);
  ctorch_tensor_free(s);
  if (st == CTORCH_OK) *n_out = 1;
  return st;
}

START_TEST(custom_modules) {
  ctorch_nn_module net = NULL, fc = nn("Linear", "3, 2"), k = NULL, outer = NULL;
  ctorch_tensor scale = NULL, count = NULL, x = randn2(4, 3), y = NULL, outs[2];
  ctorch_tensor_dict d = NULL;
  char buf[256];
  int64_t one = 1;
  size_t n = 0;
  user_data_freed = 0;
  CT_OK(ctorch_nn_custom_new(&net, "Net", net_forward, &user_data_freed, free_counter));
  CT_OK(ctorch_tensor_from_data(&scale, (float[]){2.0f}, sizeof(float), &one, 1, CTORCH_FLOAT32));
  CT_OK(ctorch_tensor_from_data(&count, (int64_t[]){0}, sizeof(int64_t), &one, 1, CTORCH_INT64));
  CT_OK(ctorch_nn_module_register_parameter(net, "scale", scale));
  CT_OK(ctorch_nn_module_register_buffer(net, "count", count, 1));
  CT_OK(ctorch_nn_module_register_buffer(net, "tmp", count, 0));
  CT_OK(ctorch_nn_module_register_module(net, "fc", fc));
  CT_OK(ctorch_nn_module_register_parameter(net, "none", NULL));
  {
    int rg = 0;
    CT_OK(ctorch_tensor_requires_grad(&rg, scale));
    ck_assert_int_eq(rg, 1); /* register_parameter sets it on the tensor itself */
  }
  CT_OK(ctorch_nn_module_named_parameters(&d, net, 1));
  ck_assert_str_eq(keys_of(d, buf, sizeof buf), "scale,fc.weight,fc.bias");
  ctorch_tensor_dict_free(d);
  CT_OK(ctorch_nn_module_named_buffers(&d, net, 1));
  ck_assert_str_eq(keys_of(d, buf, sizeof buf), "count");  /* tmp is count: once */
  ctorch_tensor_dict_free(d);
  CT_OK(ctorch_nn_module_state_dict(&d, net));
  ck_assert_str_eq(keys_of(d, buf, sizeof buf), "scale,count,fc.weight,fc.bias");
  ctorch_tensor_dict_free(d);
  expect_repr(net, "Net(\n  (fc): Linear(in_features=3, out_features=2, bias=True)\n)");
  CT_OK(ctorch_nn_module_forward(&y, net, x));
  {
    int64_t sz[2];
    CT_OK(ctorch_tensor_sizes(sz, 2, y));
    ck_assert_int_eq(sz[1], 2);
  }
  ctorch_tensor_free(y);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_forward_n(net, &x, 1, "fail=True", outs, 2, &n));
  CT_ERROR_HAS("custom module 'Net'");
  CT_ERROR_HAS("Nope");
  /* inside a parent, with Python's dotted names */
  outer = nn("Sequential", "");
  CT_OK(ctorch_nn_module_append(outer, net));
  CT_OK(ctorch_nn_module_named_parameters(&d, outer, 1));
  ck_assert_str_eq(keys_of(d, buf, sizeof buf), "0.scale,0.fc.weight,0.fc.bias");
  ctorch_tensor_dict_free(d);
  CT_OK(ctorch_nn_module_forward(&y, outer, x));
  ctorch_tensor_free(y);
  /* registration errors */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, "scale", scale));
  CT_ERROR_HAS("'scale'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, "fc", scale));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, "a.b", scale));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, "", scale));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, "c", count));
  CT_ERROR_HAS("floating");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, NULL, scale));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(NULL, "q", scale));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_buffer(net, "count", count, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_buffer(NULL, "z", count, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_buffer(net, NULL, count, 1));
  {
    ctorch_tensor nl = NULL;
    CT_OK(ctorch_mul_Tensor(&nl, scale, scale)); /* not a leaf */
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, "nl", nl));
    CT_ERROR_HAS("leaf");
    ctorch_tensor_free(nl);
  }
  /* set_tensor replaces a value by name; NULL sets None */
  CT_OK(ctorch_nn_module_set_tensor(outer, "0.fc.bias", NULL));
  expect_repr(net, "Net(\n  (fc): Linear(in_features=3, out_features=2, bias=False)\n)");
  CT_FAILS(CTORCH_INDEX, ctorch_nn_module_set_tensor(outer, "0.fc.nope", NULL));
  CT_ERROR_HAS("0.fc.nope");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_set_tensor(outer, "0.scale", count));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_set_tensor(outer, NULL, scale));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_set_tensor(NULL, "0.scale", scale));
  /* a clone shares user_data: freed once, after the last module goes */
  CT_OK(ctorch_nn_module_clone(&k, net));
  CT_OK(ctorch_nn_module_forward(&y, k, x));
  ctorch_tensor_free(y);
  ctorch_nn_module_free(outer);
  ctorch_nn_module_free(net);
  ck_assert_int_eq(user_data_freed, 0);
  ctorch_nn_module_free(k);
  ck_assert_int_eq(user_data_freed, 1);
  /* no forward: NOT_IMPLEMENTED; argument errors */
  CT_OK(ctorch_nn_custom_new(&net, "Holder", NULL, NULL, NULL));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_nn_module_forward(&y, net, x));
  CT_ERROR_HAS("Holder");
  ctorch_nn_module_free(net);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_custom_new(NULL, "X", NULL, NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_custom_new(&net, NULL, NULL, NULL, NULL));
  CT_ERROR_HAS("type_name");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_custom_new(&net, "", NULL, NULL, NULL));
  ctorch_nn_module_free(fc);
  ctorch_tensor_free(scale);
  ctorch_tensor_free(count);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(catalogue_lists_kinds) {
  char *j = NULL;
  CT_OK(ctorch_nn_catalogue(&j));
  ck_assert_ptr_nonnull(strstr(j, "{\"kind\": \"Linear\", \"init\": [{\"name\": \"in_features\", \"type\": \"int\""));
  ck_assert_ptr_nonnull(strstr(j, "{\"name\": \"bias\", \"type\": \"bool\", \"optional\": false, \"required\": false, "
                                  "\"default\": \"True\"}"));
  ck_assert_ptr_nonnull(strstr(j, "\"kind\": \"Sequential\""));
  ctorch_string_free(j);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_catalogue(NULL));
}
END_TEST

START_TEST(shape_check_on_meta) {
  ctorch_nn_module s = nn("Sequential", ""), c = nn("Flatten", "");
  int64_t good[4] = {2, 1, 28, 28}, bad[2] = {2, 100};
  const int64_t *shapes[1] = {good};
  size_t nd[1] = {4};
  char *out = NULL;
  CT_OK(ctorch_nn_module_append(s, c));
  ctorch_nn_module_free(c);
  c = nn("Linear", "784, 10");
  CT_OK(ctorch_nn_module_append(s, c));
  ctorch_nn_module_free(c);
  c = nn("ReLU", "");
  CT_OK(ctorch_nn_module_append(s, c));
  ctorch_nn_module_free(c);
  CT_OK(ctorch_nn_module_shape_check(&out, s, shapes, nd, 1));
  ck_assert_str_eq(out, "0: [2, 784]\n1: [2, 10]\n2: [2, 10]\n(output): [2, 10]\n");
  ctorch_string_free(out);
  shapes[0] = bad;
  nd[0] = 2;
  out = (char *)1;
  CT_FAILS(CTORCH_VALUE, ctorch_nn_module_shape_check(&out, s, shapes, nd, 1));
  ck_assert_ptr_null(out);
  CT_ERROR_HAS("in module '1' (Linear)");
  CT_ERROR_HAS("[2, 100]");
  CT_ERROR_HAS("784");
  /* the module itself is untouched (its parameters are still real) */
  {
    ctorch_tensor w = NULL;
    double v = 0;
    ctorch_tensor t = NULL;
    CT_OK(ctorch_nn_module_tensor(&w, s, "1.weight"));
    CT_OK(ctorch_sum(&t, w, NULL));
    CT_OK(ctorch_tensor_item_double(&v, t));
    ctorch_tensor_free(t);
    ctorch_tensor_free(w);
  }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_shape_check(NULL, s, shapes, nd, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_shape_check(&out, NULL, shapes, nd, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_shape_check(&out, s, NULL, nd, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_shape_check(&out, s, shapes, NULL, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_shape_check(&out, s, shapes, nd, 0));
  CT_ERROR_HAS("n_inputs");
  ctorch_nn_module_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("nn");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, new_parses_python_arguments);
  tcase_add_test(tc, new_errors_name_the_option);
  tcase_add_test(tc, forward_checks_inputs);
  tcase_add_test(tc, sequential_names_repr_and_children);
  tcase_add_test(tc, containers);
  tcase_add_test(tc, load_state_dict_strict_and_not);
  tcase_add_test(tc, sequential_trains_with_an_optimizer);
  tcase_add_test(tc, train_eval_freeze_count);
  tcase_add_test(tc, to_casts_floating_tensors);
  tcase_add_test(tc, clone_is_deep_and_keeps_sharing);
  tcase_add_test(tc, custom_modules);
  tcase_add_test(tc, catalogue_lists_kinds);
  tcase_add_test(tc, shape_check_on_meta);
  suite_add_tcase(s, tc);
  tc = tcase_create("files");
  tcase_add_checked_fixture(tc, make_dir, ct_tmp_dir_remove);
  tcase_add_test(tc, state_dict_saved_and_loaded_back);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
