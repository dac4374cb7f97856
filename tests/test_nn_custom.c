/* Custom modules (C callbacks, registration, Python's dotted names, shared
 * user data), deep copies, the catalogue and shape checks on the meta
 * device. test_nn.c has the rest of the module layer's core. */
#define _GNU_SOURCE

#include "nn_test_util.h"

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
  CT_ASSERT_SAME(a, b); /* ... to one shared module, as deepcopy keeps it */
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
  ctorch_nn_module_free(k0); /* before k0 is reused as the failing call's out-parameter */
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
  /* a name registered again: replaced in its place when it is of the same
     kind, refused when it is of another (Python's KeyError) */
  {
    ctorch_tensor scale2 = NULL, got = NULL;
    int same = 0;
    CT_OK(ctorch_tensor_from_data(&scale2, (float[]){3.0f}, sizeof(float), &one, 1, CTORCH_FLOAT32));
    CT_OK(ctorch_nn_module_register_parameter(net, "scale", scale2));
    CT_OK(ctorch_nn_module_tensor(&got, net, "scale"));
    CT_OK(ctorch_tensor_is_same(&same, got, scale2));
    ck_assert_int_eq(same, 1);
    ctorch_tensor_free(got);
    CT_OK(ctorch_nn_module_named_parameters(&d, net, 1));
    ck_assert_str_eq(keys_of(d, buf, sizeof buf), "scale,fc.weight,fc.bias");
    ctorch_tensor_dict_free(d);
    CT_OK(ctorch_nn_module_register_parameter(net, "scale", scale)); /* back, for the forwards below */
    CT_OK(ctorch_nn_module_register_buffer(net, "count", scale2, 0)); /* now non-persistent */
    CT_OK(ctorch_nn_module_state_dict(&d, net));
    ck_assert_str_eq(keys_of(d, buf, sizeof buf), "scale,fc.weight,fc.bias");
    ctorch_tensor_dict_free(d);
    CT_OK(ctorch_nn_module_register_buffer(net, "count", count, 1));
    CT_OK(ctorch_nn_module_state_dict(&d, net));
    ck_assert_str_eq(keys_of(d, buf, sizeof buf), "scale,count,fc.weight,fc.bias");
    ctorch_tensor_dict_free(d);
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, "count", scale2));
    CT_ERROR_HAS("'count' is already a buffer");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_buffer(net, "scale", count, 1));
    CT_ERROR_HAS("'scale' is already a parameter");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_buffer(net, "fc", count, 1));
    CT_ERROR_HAS("'fc' is already a child");
    ctorch_tensor_free(scale2);
  }
  /* registration errors */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, "fc", scale));
  CT_ERROR_HAS("'fc'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, "a.b", scale));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, "", scale));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, "c", count));
  CT_ERROR_HAS("floating");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(net, NULL, scale));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_nn_module_register_parameter(NULL, "q", scale));
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
  Suite *s = suite_create("nn_custom");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, clone_is_deep_and_keeps_sharing);
  tcase_add_test(tc, custom_modules);
  tcase_add_test(tc, catalogue_lists_kinds);
  tcase_add_test(tc, shape_check_on_meta);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
