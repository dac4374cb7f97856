/* Any registered operator by name (include/ctorch.h, "Any registered
 * operator by name") and the enum ranges of schema ints:
 * finding and listing operators, calls checked against the schema, the
 * typed wrappers' guards, enum ranges and unsafe refusals applied by name,
 * and (tagged python / mkldnn_ops) the same operators called by Python's
 * torch.ops on the same inputs, bit-identical.
 * tests/dispatch/dispatch_ref.py writes the inputs and Python's results. */
#include "../check_main.h"

static ctorch_op find(const char *name, const char *overload) {
  ctorch_op op = NULL;
  CT_OK(ctorch_op_find(&op, name, overload));
  return op;
}

static ctorch_value tv(ctorch_tensor t) {
  ctorch_value v = NULL;
  CT_OK(ctorch_value_tensor(&v, t));
  return v;
}

static ctorch_value iv(int64_t x) {
  ctorch_value v = NULL;
  CT_OK(ctorch_value_int(&v, x));
  return v;
}

static ctorch_value dv(double x) {
  ctorch_value v = NULL;
  CT_OK(ctorch_value_double(&v, x));
  return v;
}

static ctorch_value none(void) {
  ctorch_value v = NULL;
  CT_OK(ctorch_value_none(&v));
  return v;
}

static void free_values(ctorch_value *v, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) ctorch_value_free(v[i]);
}

static ctorch_tensor tensor_of(ctorch_value v) {
  ctorch_tensor t = NULL;
  CT_OK(ctorch_value_to_tensor(&t, v));
  return t;
}

static ctorch_tensor item_tensor(ctorch_value v, size_t i) {
  ctorch_value e = NULL;
  ctorch_tensor t;
  CT_OK(ctorch_value_get(&e, v, i));
  t = tensor_of(e);
  ctorch_value_free(e);
  return t;
}

static void assert_equal(ctorch_tensor a, ctorch_tensor b) {
  int eq = 0;
  CT_OK(ctorch_equal(&eq, a, b));
  ck_assert_msg(eq, "tensors differ");
}

static ctorch_tensor floats(int64_t rows, int64_t cols, float scale) {
  float v[256];
  int64_t sizes[2] = {rows, cols};
  int i;
  for (i = 0; i < 256; ++i) v[i] = (float)((i * 7) % 11 - 5) * scale;
  return ct_floats(v, sizes, 2);
}

static ctorch_tensor longs(const int64_t *v, int64_t n) {
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_from_data(&t, v, (size_t)n * sizeof(int64_t), &n, 1, CTORCH_INT64));
  return t;
}

START_TEST(find_schema_and_list) {
  ctorch_op op = find("aten::add", "Tensor"), relu = find("aten::relu", NULL), relu2 = find("aten::relu", "");
  ctorch_op bad = (ctorch_op)1;
  ctorch_value l = NULL, e = NULL, f = NULL;
  char *s = NULL;
  const char *txt = NULL;
  size_t n = 0, i;
  int found = 0, safety = -1;
  CT_OK(ctorch_op_schema(&s, op));
  ck_assert_str_eq(s, "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  ctorch_string_free(s);
  CT_OK(ctorch_op_schema(&s, relu2));
  ck_assert_str_eq(s, "aten::relu(Tensor self) -> Tensor");
  ctorch_string_free(s);
  CT_FAILS(CTORCH_INDEX, ctorch_op_find(&bad, "aten::no_such_op", NULL));
  ck_assert_ptr_null(bad);
  CT_ERROR_HAS("no operator aten::no_such_op");
  CT_FAILS(CTORCH_INDEX, ctorch_op_find(&bad, "aten::add", "NoSuchOverload"));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_find(&bad, "add", NULL));
  CT_ERROR_HAS("has no namespace");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_find(&bad, NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_find(NULL, "aten::add", NULL));
  CT_OK(ctorch_op_safety(&safety, NULL, op));
  ck_assert_int_eq(safety, 0);
  /* every aten:: operator, with its schema text, sorted */
  CT_OK(ctorch_op_list(&l, "aten::"));
  CT_OK(ctorch_value_size(&n, l));
  ck_assert_uint_gt(n, 1500);
  for (i = 0; i < n; ++i) {
    CT_OK(ctorch_value_get(&e, l, i));
    CT_OK(ctorch_value_get(&f, e, 2));
    CT_OK(ctorch_value_to_string(&txt, f));
    ck_assert_msg(strncmp(txt, "aten::", 6) == 0, "'%s' listed under aten::", txt);
    if (strcmp(txt, "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor") == 0) found = 1;
    ctorch_value_free(f);
    ctorch_value_free(e);
  }
  ck_assert(found);
  ctorch_value_free(l);
  /* the whole registry is larger than aten:: alone (prim::, quantized::, ...) */
  CT_OK(ctorch_op_list(&l, NULL));
  CT_OK(ctorch_value_size(&i, l));
  ck_assert_uint_gt(i, n);
  ctorch_value_free(l);
  /* handles are checked like every other handle */
  ctorch_op_free(op);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_schema(&s, op));
  CT_ERROR_HAS("argument 'op'");
  ctorch_op_free(op); /* a second free frees nothing */
  ctorch_op_free(relu);
  ctorch_op_free(relu2);
}
END_TEST

START_TEST(call_matches_the_typed_function) {
  ctorch_op add = find("aten::add", "Tensor"), maxd = find("aten::max", "dim"), ones = find("aten::ones", NULL);
  ctorch_op rt = find("aten::result_type", "Tensor"), idx = find("aten::index", "Tensor");
  ctorch_tensor a = floats(3, 4, 0.5f), b = floats(3, 4, -0.25f), want = NULL, got, w0 = NULL, w1 = NULL;
  ctorch_value args[3], alpha = dv(2.5), out = NULL, dt, szl = NULL;
  const char *kw[] = {"alpha"};
  const char *kwd[] = {"dtype"};
  int64_t sz[2] = {2, 3}, x = -1, ix[2] = {2, 0};
  ctorch_dtype d;
  ctorch_value_kind k;
  ctorch_scalar s25 = ctorch_scalar_float(2.5);
  args[0] = tv(a);
  args[1] = tv(b);
  /* add with alpha by keyword, then by default */
  CT_OK(ctorch_op_call(&out, add, args, 2, kw, &alpha, 1));
  got = tensor_of(out);
  CT_OK(ctorch_add_Tensor(&want, a, b, s25));
  assert_equal(got, want);
  ctorch_tensor_free(got);
  ctorch_tensor_free(want);
  ctorch_value_free(out);
  /* several returns: a tuple in schema order */
  ctorch_value_free(args[1]);
  args[1] = iv(1);
  CT_OK(ctorch_op_call(&out, maxd, args, 2, NULL, NULL, 0));
  CT_OK(ctorch_value_kind_of(&k, out));
  ck_assert_int_eq(k, CTORCH_VALUE_TUPLE);
  CT_OK(ctorch_max_dim(&w0, &w1, a, 1, 0));
  got = item_tensor(out, 0);
  assert_equal(got, w0);
  ctorch_tensor_free(got);
  got = item_tensor(out, 1);
  assert_equal(got, w1);
  ctorch_tensor_free(got);
  ctorch_tensor_free(w0);
  ctorch_tensor_free(w1);
  ctorch_value_free(out);
  ctorch_value_free(args[1]);
  /* ScalarType in ctorch's numbering, both ways */
  CT_OK(ctorch_value_int_list(&szl, sz, 2));
  dt = iv(CTORCH_FLOAT64);
  CT_OK(ctorch_op_call(&out, ones, &szl, 1, kwd, &dt, 1));
  got = tensor_of(out);
  CT_OK(ctorch_tensor_dtype(&d, got));
  ck_assert_int_eq(d, CTORCH_FLOAT64);
  ctorch_value_free(out);
  ctorch_value_free(dt);
  dt = iv(12345);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, ones, &szl, 1, kwd, &dt, 1));
  ck_assert_ptr_null(out);
  CT_ERROR_HAS("'dtype'");
  ctorch_value_free(dt);
  args[1] = tv(got);
  CT_OK(ctorch_op_call(&out, rt, args, 2, NULL, NULL, 0));
  CT_OK(ctorch_value_to_int(&x, out));
  ck_assert_int_eq(x, CTORCH_FLOAT64);
  ctorch_value_free(out);
  ctorch_value_free(args[1]);
  ctorch_tensor_free(got);
  /* Tensor?[] from a list of tensors */
  {
    ctorch_tensor it = longs(ix, 2);
    ctorch_value item = tv(it), lst = NULL;
    CT_OK(ctorch_value_list(&lst, &item, 1));
    args[1] = lst;
    CT_OK(ctorch_op_call(&out, idx, args, 2, NULL, NULL, 0));
    got = tensor_of(out);
    CT_OK(ctorch_index_Tensor(&want, a, &it, 1));
    assert_equal(got, want);
    ctorch_tensor_free(got);
    ctorch_tensor_free(want);
    ctorch_value_free(out);
    ctorch_value_free(lst);
    ctorch_value_free(item);
    ctorch_tensor_free(it);
  }
  free_values(args, 1);
  ctorch_value_free(alpha);
  ctorch_value_free(szl);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_op_free(add);
  ctorch_op_free(maxd);
  ctorch_op_free(ones);
  ctorch_op_free(rt);
  ctorch_op_free(idx);
}
END_TEST

START_TEST(no_return_is_none_and_values_of_every_kind) {
  ctorch_op fill = find("aten::_foreach_add_", "Scalar"), randn = find("aten::randn", "generator");
  ctorch_op mul = find("aten::mul", "Scalar");
  ctorch_tensor a = floats(2, 2, 1.0f), before = NULL, r1, r2;
  ctorch_value args[2], out = NULL, lst = NULL, item, g1 = NULL, g2 = NULL, szl = NULL, o2 = NULL;
  ctorch_generator gen1 = NULL, gen2 = NULL;
  ctorch_value_kind k;
  const char *kwg[] = {"generator"};
  int64_t sz[1] = {5};
  ctorch_scalar c = {CTORCH_SCALAR_COMPLEX, 0, 0, 1.0, 2.0};
  ctorch_device cpu = {CTORCH_DEVICE_CPU, -1}, bad = {99, 0};
  CT_OK(ctorch_tensor_clone(&before, a));
  item = tv(a);
  CT_OK(ctorch_value_list(&lst, &item, 1));
  args[0] = lst;
  args[1] = iv(1);
  CT_OK(ctorch_op_call(&out, fill, args, 2, NULL, NULL, 0));
  CT_OK(ctorch_value_kind_of(&k, out));
  ck_assert_int_eq(k, CTORCH_VALUE_NONE);
  {
    int eq = 1;
    CT_OK(ctorch_equal(&eq, a, before));
    ck_assert_int_eq(eq, 0); /* modified in place */
  }
  ctorch_value_free(out);
  free_values(args, 2);
  ctorch_value_free(item);
  /* generators: two generators seeded alike give the same draw */
  CT_OK(ctorch_generator_new(&gen1, cpu, 7));
  CT_OK(ctorch_generator_new(&gen2, cpu, 7));
  CT_OK(ctorch_value_generator(&g1, gen1));
  CT_OK(ctorch_value_generator(&g2, gen2));
  CT_OK(ctorch_value_int_list(&szl, sz, 1));
  CT_OK(ctorch_op_call(&out, randn, &szl, 1, kwg, &g1, 1));
  CT_OK(ctorch_op_call(&o2, randn, &szl, 1, kwg, &g2, 1));
  r1 = tensor_of(out);
  r2 = tensor_of(o2);
  assert_equal(r1, r2);
  ctorch_tensor_free(r1);
  ctorch_tensor_free(r2);
  ctorch_value_free(out);
  ctorch_value_free(o2);
  /* a complex Scalar */
  args[0] = tv(a);
  CT_OK(ctorch_value_scalar(&args[1], c));
  CT_OK(ctorch_op_call(&out, mul, args, 2, NULL, NULL, 0));
  r1 = tensor_of(out);
  {
    ctorch_dtype d;
    CT_OK(ctorch_tensor_dtype(&d, r1));
    ck_assert_int_eq(d, CTORCH_COMPLEX64);
  }
  ctorch_tensor_free(r1);
  ctorch_value_free(out);
  free_values(args, 2);
  CT_OK(ctorch_value_device(&out, cpu));
  ctorch_value_free(out);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_value_device(&out, bad));
  ctorch_value_free(g1);
  ctorch_value_free(g2);
  ctorch_value_free(szl);
  ctorch_generator_free(gen1);
  ctorch_generator_free(gen2);
  ctorch_tensor_free(a);
  ctorch_tensor_free(before);
  ctorch_op_free(fill);
  ctorch_op_free(randn);
  ctorch_op_free(mul);
}
END_TEST

START_TEST(wrong_count_type_and_keywords_name_the_argument) {
  ctorch_op add = find("aten::add", "Tensor");
  ctorch_tensor a = floats(2, 2, 1.0f);
  ctorch_value args[4], out = NULL, s = NULL;
  const char *kw_bad[] = {"beta"};
  const char *kw_self[] = {"self"};
  CT_OK(ctorch_value_string(&s, "x"));
  args[0] = tv(a);
  args[1] = s;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, add, args, 2, NULL, NULL, 0));
  CT_ERROR_HAS("argument 1 'other' of aten::add.Tensor(");
  CT_ERROR_HAS("expected Tensor, got a str");
  ck_assert_ptr_null(out);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, add, args, 1, NULL, NULL, 0));
  CT_ERROR_HAS("argument 1 'other'");
  CT_ERROR_HAS("missing");
  args[1] = args[0];
  args[2] = args[0];
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, add, args, 3, NULL, NULL, 0));
  CT_ERROR_HAS("3 positional arguments given");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, add, args, 2, kw_bad, &s, 1));
  CT_ERROR_HAS("'beta' is no parameter");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, add, args, 2, kw_self, args, 1));
  CT_ERROR_HAS("given twice");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, add, args, 2, kw_self, NULL, 1));
  args[1] = NULL;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, add, args, 2, NULL, NULL, 0));
  CT_ERROR_HAS("entry 1 is NULL");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, add, NULL, 2, NULL, NULL, 0));
  args[1] = none();
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, add, args, 2, NULL, NULL, 0));
  CT_ERROR_HAS("None given");
  ctorch_value_free(args[1]);
  ctorch_value_free(args[0]);
  ctorch_value_free(s);
  ctorch_tensor_free(a);
  ctorch_op_free(add);
}
END_TEST

/* Every registered operator: too many positional arguments, and a string
 * where the first parameter is a Tensor, are refused before anything runs. */
START_TEST(every_registered_operator_refuses_wrong_count_and_type) {
  ctorch_value l = NULL, e = NULL, f = NULL, nones[300], s = NULL;
  size_t n = 0, i, typed = 0;
  CT_OK(ctorch_value_string(&s, "not a tensor"));
  for (i = 0; i < 300; ++i) nones[i] = s;
  CT_OK(ctorch_op_list(&l, NULL));
  CT_OK(ctorch_value_size(&n, l));
  for (i = 0; i < n; ++i) {
    const char *name = NULL, *ov = NULL, *schema = NULL, *p;
    ctorch_op op = NULL;
    ctorch_value out = NULL, parts[3];
    size_t j;
    CT_OK(ctorch_value_get(&e, l, i));
    for (j = 0; j < 3; ++j) CT_OK(ctorch_value_get(&parts[j], e, j));
    CT_OK(ctorch_value_to_string(&name, parts[0]));
    CT_OK(ctorch_value_to_string(&ov, parts[1]));
    CT_OK(ctorch_value_to_string(&schema, parts[2]));
    CT_OK(ctorch_op_find(&op, name, ov));
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, op, nones, 300, NULL, NULL, 0));
    ck_assert_msg(strstr(ctorch_last_error(), "300 positional arguments given"), "%s: %s", schema, ctorch_last_error());
    p = strchr(schema, '(');
    if (p && strncmp(p + 1, "Tensor ", 7) == 0) {
      CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, op, nones, 1, NULL, NULL, 0));
      ck_assert_msg(strstr(ctorch_last_error(), "argument 0 '"), "%s: %s", schema, ctorch_last_error());
      ++typed;
    }
    ck_assert_ptr_null(out);
    ctorch_op_free(op);
    free_values(parts, 3);
    ctorch_value_free(e);
  }
  ck_assert_uint_gt(typed, 1000);
  (void)f;
  ctorch_value_free(l);
  ctorch_value_free(s);
}
END_TEST

/* The typed wrappers' guards and unsafe flags, applied by operator name. */
START_TEST(guards_and_unsafe_operators_by_name) {
  ctorch_op bn = find("aten::native_batch_norm", NULL), rbd = find("aten::_remove_batch_dim", NULL);
  ctorch_op coo = NULL;
  ctorch_tensor x = floats(2, 3, 1.0f);
  ctorch_value args[8], out = NULL;
  char *why = NULL;
  int safety = -1, i;
  /* running stats undefined in eval mode: libtorch 1.13 SIGSEGV; guarded */
  args[0] = tv(x);
  for (i = 1; i < 5; ++i) args[i] = none();
  args[5] = NULL;
  CT_OK(ctorch_value_bool(&args[5], 0));
  args[6] = dv(0.1);
  args[7] = dv(1e-5);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, bn, args, 8, NULL, NULL, 0));
  CT_ERROR_HAS("ctorch_op_call: argument 'running_mean'");
  ck_assert_ptr_null(out);
  free_values(args, 8);
  /* flagged unsafe: refused, the reason given */
  CT_OK(ctorch_op_safety(&safety, &why, rbd));
  ck_assert_int_eq(safety, 1);
  ck_assert_ptr_nonnull(why);
  ctorch_string_free(why);
  args[0] = tv(x);
  args[1] = iv(0);
  args[2] = iv(1);
  args[3] = iv(0);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, rbd, args, 4, NULL, NULL, 0));
  CT_ERROR_HAS("flagged unsafe");
  CT_ERROR_HAS("ctorch_op_call_unchecked");
  free_values(args, 4);
  /* named _unsafe: refused whatever the list says */
  CT_OK(ctorch_op_find(&coo, "aten::_sparse_coo_tensor_unsafe", NULL));
  CT_OK(ctorch_op_safety(&safety, NULL, coo));
  ck_assert_int_eq(safety, 1);
  ctorch_op_free(coo);
  ctorch_tensor_free(x);
  ctorch_op_free(bn);
  ctorch_op_free(rbd);
}
END_TEST

/* Enum-valued ints out of range, typed and by name. */
static void boxed_enum_refused(const char *name, const char *ov, ctorch_value *args, size_t n, const char *kw,
                               ctorch_value kwv, const char *arg) {
  ctorch_op op = find(name, ov);
  ctorch_value out = NULL;
  const char *kws[1] = {kw};
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_op_call(&out, op, args, n, kw ? kws : NULL, kw ? &kwv : NULL, kw ? 1 : 0));
  ck_assert_msg(strstr(ctorch_last_error(), arg) && strstr(ctorch_last_error(), "out of range"), "%s: %s", name,
                ctorch_last_error());
  ctorch_op_free(op);
}

START_TEST(enum_arguments_out_of_range) {
  ctorch_tensor a = floats(3, 4, 0.5f), b = floats(3, 4, 0.25f), r = NULL, r1 = NULL, r2 = NULL, r3 = NULL;
  ctorch_tensor img = NULL, grid = NULL, w = floats(10, 3, 1.0f), ind, off;
  int64_t iv_[4] = {1, 2, 4, 5}, ov_[2] = {0, 2}, tgt[3] = {0, 1, 3}, dim1[1] = {1}, cm = 3, cm_ok = 2;
  int64_t img_sz[4] = {1, 1, 3, 4}, grid_sz[4] = {1, 2, 2, 2};
  ctorch_tensor t = longs(tgt, 3);
  ctorch_value args[6];
  int64_t bad;
  ind = longs(iv_, 4);
  off = longs(ov_, 2);
  CT_OK(ctorch_reshape(&img, a, img_sz, 4));
  {
    float gv[8] = {-1, -1, 0.5f, 0.5f, 0, 0, 1, 1};
    grid = ct_floats(gv, grid_sz, 4);
  }
  for (bad = -1; bad <= 9; bad += 10) {
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_mse_loss(&r, a, b, bad));
    CT_ERROR_HAS("argument 'reduction'");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cross_entropy_loss(&r, a, t, NULL, bad, -100, 0.0));
    CT_ERROR_HAS("argument 'reduction'");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_grid_sampler(&r, img, grid, bad, 0, 0));
    CT_ERROR_HAS("argument 'interpolation_mode'");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_grid_sampler(&r, img, grid, 0, bad, 0));
    CT_ERROR_HAS("argument 'padding_mode'");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_embedding_bag(&r, &r1, &r2, &r3, w, ind, off, 0, bad, 0, NULL, 0));
    CT_ERROR_HAS("argument 'mode'");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__fft_r2c(&r, a, dim1, 1, bad, 1));
    CT_ERROR_HAS("argument 'normalization'");
    ck_assert_ptr_null(r);
    /* by name: the same ranges */
    args[0] = tv(a);
    args[1] = tv(b);
    args[2] = iv(bad);
    boxed_enum_refused("aten::mse_loss", NULL, args, 3, NULL, NULL, "'reduction'");
    boxed_enum_refused("aten::mse_loss", NULL, args, 2, "reduction", args[2], "'reduction'");
    free_values(args, 3);
    args[0] = tv(img);
    args[1] = tv(grid);
    args[2] = iv(0);
    args[3] = iv(bad);
    args[4] = NULL;
    CT_OK(ctorch_value_bool(&args[4], 0));
    boxed_enum_refused("aten::grid_sampler", NULL, args, 5, NULL, NULL, "'padding_mode'");
    free_values(args, 5);
  }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cdist(&r, a, b, 2.0, &cm));
  CT_ERROR_HAS("argument 'compute_mode'");
  /* in range: computed */
  CT_OK(ctorch_cdist(&r, a, b, 2.0, &cm_ok));
  ctorch_tensor_free(r);
  CT_OK(ctorch_mse_loss(&r, a, b, 2));
  ctorch_tensor_free(r);
  CT_OK(ctorch_grid_sampler(&r, img, grid, 2, 2, 0));
  ctorch_tensor_free(r);
  ctorch_tensor_free(t);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(img);
  ctorch_tensor_free(grid);
  ctorch_tensor_free(w);
  ctorch_tensor_free(ind);
  ctorch_tensor_free(off);
}
END_TEST

/* ---- against Python's torch.ops on the same inputs -------------------- */

static char g_dir[4096];
static int g_refs_ok;
static char g_refs_err[8400];

static ctorch_tensor ref(const char *name) {
  static ctorch_tensor_dict d;
  char path[4200];
  ctorch_tensor t = NULL;
  if (!g_refs_ok) {
    g_refs_ok = ct_make_with_python("tests/dispatch/dispatch_ref.py", "dispatch_refs", g_dir, sizeof g_dir,
                                    g_refs_err, sizeof g_refs_err);
    ck_assert_msg(g_refs_ok, "references were not made: %s", g_refs_err);
    snprintf(path, sizeof path, "%s/refs.pt", g_dir);
    CT_OK(ctorch_load_dict(&d, path));
  }
  CT_OK(ctorch_tensor_dict_find(&t, d, name));
  return t;
}

static ctorch_value call1(const char *name, const char *ov, ctorch_value *args, size_t n, const char *const *kw,
                          ctorch_value *kwv, size_t nkw) {
  ctorch_op op = find(name, ov);
  ctorch_value out = NULL;
  CT_OK(ctorch_op_call(&out, op, args, n, kw, kwv, nkw));
  ctorch_op_free(op);
  return out;
}

static void assert_ref(ctorch_value out, const char *name) {
  ctorch_tensor got = tensor_of(out), want = ref(name);
  assert_equal(got, want);
  ctorch_tensor_free(got);
  ctorch_tensor_free(want);
}

START_TEST(same_as_torch_ops) {
  ctorch_tensor a = ref("a"), b = ref("b"), x = ref("x");
  ctorch_value args[3], kwv[2], out, dims = NULL;
  const char *kw_alpha[] = {"alpha"};
  const char *kw_var[] = {"correction", "keepdim"};
  int64_t d1[1] = {1};
  args[0] = tv(a);
  args[1] = tv(b);
  kwv[0] = dv(2.5);
  out = call1("aten::add", "Tensor", args, 2, kw_alpha, kwv, 1);
  assert_ref(out, "add");
  ctorch_value_free(out);
  free_values(args, 2);
  free_values(kwv, 1);
  /* var.correction: int? correction in 1.13, Scalar? in 2.x: an INT fits both */
  args[0] = tv(x);
  CT_OK(ctorch_value_int_list(&dims, d1, 1));
  args[1] = dims;
  kwv[0] = iv(0);
  CT_OK(ctorch_value_bool(&kwv[1], 1));
  out = call1("aten::var", "correction", args, 2, kw_var, kwv, 2);
  assert_ref(out, "var");
  ctorch_value_free(out);
  free_values(kwv, 2);
  /* max.dim: a tuple */
  args[1] = iv(1);
  out = call1("aten::max", "dim", args, 2, NULL, NULL, 0);
  {
    ctorch_tensor v = item_tensor(out, 0), i = item_tensor(out, 1), rv = ref("max_values"), ri = ref("max_indices");
    assert_equal(v, rv);
    assert_equal(i, ri);
    ctorch_tensor_free(v);
    ctorch_tensor_free(i);
    ctorch_tensor_free(rv);
    ctorch_tensor_free(ri);
  }
  ctorch_value_free(out);
  free_values(args, 3 - 1);
  ctorch_value_free(dims);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(x);
}
END_TEST

/* mkldnn::_linear_pointwise on a weight prepacked by
 * mkldnn::_reorder_linear_weight (libtorch 2.x; absent from 1.13). */
START_TEST(mkldnn_linear_pointwise_prepacked) {
  ctorch_tensor X = ref("lin_x"), W = ref("lin_w"), B = ref("lin_b");
  ctorch_value args[6], packed, out, empty = NULL;
  ctorch_op op = NULL;
  char *why = NULL;
  int safety = -1;
  args[0] = tv(W);
  args[1] = iv(8);
  packed = call1("mkldnn::_reorder_linear_weight", NULL, args, 2, NULL, NULL, 0);
  free_values(args, 2);
  args[0] = tv(X);
  args[1] = packed;
  args[2] = tv(B);
  CT_OK(ctorch_value_string(&args[3], "relu"));
  CT_OK(ctorch_value_list(&empty, NULL, 0));
  args[4] = empty;
  CT_OK(ctorch_value_string(&args[5], ""));
  out = call1("mkldnn::_linear_pointwise", NULL, args, 6, NULL, NULL, 0);
  assert_ref(out, "lin_relu");
  ctorch_value_free(out);
  CT_OK(ctorch_op_find(&op, "mkldnn::_linear_pointwise", NULL));
  CT_OK(ctorch_op_safety(&safety, &why, op));
  ck_assert_int_eq(safety, 2);
  ck_assert_ptr_null(why);
  /* a bad attr is the kernel's own error, not a crash */
  ctorch_value_free(args[3]);
  CT_OK(ctorch_value_string(&args[3], "bogus"));
  CT_FAILS(CTORCH_RUNTIME, ctorch_op_call(&out, op, args, 6, NULL, NULL, 0));
  ctorch_op_free(op);
  free_values(args, 6);
  ctorch_tensor_free(X);
  ctorch_tensor_free(W);
  ctorch_tensor_free(B);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("dispatch");
  TCase *tc = tcase_create("core"), *py = tcase_create("python"), *mk = tcase_create("mkldnn");
  tcase_add_test(tc, find_schema_and_list);
  tcase_add_test(tc, call_matches_the_typed_function);
  tcase_add_test(tc, no_return_is_none_and_values_of_every_kind);
  tcase_add_test(tc, wrong_count_type_and_keywords_name_the_argument);
  tcase_add_test(tc, every_registered_operator_refuses_wrong_count_and_type);
  tcase_add_test(tc, guards_and_unsafe_operators_by_name);
  tcase_add_test(tc, enum_arguments_out_of_range);
  suite_add_tcase(s, tc);
  tcase_add_test(py, same_as_torch_ops);
  tcase_set_tags(py, "python");
  suite_add_tcase(s, py);
  tcase_add_test(mk, mkldnn_linear_pointwise_prepacked);
  tcase_set_tags(mk, "mkldnn_ops");
  suite_add_tcase(s, mk);
  return s;
}

/* The mkldnn_ops tag runs only where libtorch registers the operators
 * (2.x; 1.13 has no mkldnn::_linear_pointwise): skipped (77) elsewhere. */
int main(void) {
  SRunner *sr;
  int failed;
  if (getenv("CTORCH_DISPATCH_MKLDNN")) {
    ctorch_op op = NULL;
    const char *v = "?";
    if (ctorch_op_find(&op, "mkldnn::_linear_pointwise", NULL) != CTORCH_OK) {
      ctorch_torch_version(&v);
      printf("skipped: libtorch %s registers no mkldnn::_linear_pointwise\n", v);
      return 77;
    }
    ctorch_op_free(op);
  }
  if (ct_check_requirements()) return 77;
  ct_fast_child_exit();
  sr = srunner_create(make_suite());
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
