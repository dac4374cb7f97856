/* Generated shape/view ops, list-returning ops, indexing/gather/scatter. */
#include "test_ops_util.h"

static ctorch_tensor m23(void) { return TF(SHAPE(2, 3), 2, F(1, 2, 3, 4, 5, 6)); }

START_TEST(views_and_reshapes) {
  ctorch_tensor a = m23(), r = NULL;
  CT_OK(ctorch_reshape(&r, a, SHAPE(3, 2), 2));
  expect_shape(r, SHAPE(3, 2), 2);
  EXPECT(r, 0, 1, 2, 3, 4, 5, 6);
  ctorch_tensor_free(r);
  CT_OK(ctorch_view(&r, a, SHAPE(-1), 1));
  expect_shape(r, SHAPE(6), 1);
  ctorch_tensor_free(r);
  CT_OK(ctorch_transpose_int(&r, a, 0, 1));
  expect_shape(r, SHAPE(3, 2), 2);
  EXPECT(r, 0, 1, 4, 2, 5, 3, 6);
  ctorch_tensor_free(r);
  CT_OK(ctorch_permute(&r, a, SHAPE(1, 0), 2));
  EXPECT(r, 0, 1, 4, 2, 5, 3, 6);
  ctorch_tensor_free(r);
  CT_OK(ctorch_unsqueeze(&r, a, 0));
  expect_shape(r, SHAPE(1, 2, 3), 3);
  {
    ctorch_tensor s = NULL;
    CT_OK(ctorch_squeeze_dim(&s, r, 0));
    expect_shape(s, SHAPE(2, 3), 2);
    ctorch_tensor_free(s);
  }
  ctorch_tensor_free(r);
  CT_OK(ctorch_flatten_using_ints(&r, a, 0, -1));
  expect_shape(r, SHAPE(6), 1);
  ctorch_tensor_free(r);
  CT_OK(ctorch_flip(&r, a, SHAPE(1), 1));
  EXPECT(r, 0, 3, 2, 1, 6, 5, 4);
  FREE(r, a);
}
END_TEST

START_TEST(views_share_storage) {
  ctorch_tensor a = m23(), row = NULL, col = NULL;
  CT_OK(ctorch_select_int(&row, a, 0, 1));
  EXPECT(row, 0, 4, 5, 6);
  CT_OK(ctorch_fill__Scalar(row, ctorch_scalar_int(0))); /* writes through the view */
  EXPECT(a, 0, 1, 2, 3, 0, 0, 0);
  CT_OK(ctorch_narrow(&col, a, 1, 1, 2));
  EXPECT(col, 0, 2, 3, 0, 0);
  FREE(a, row, col);
}
END_TEST

START_TEST(slicing_expand_repeat) {
  ctorch_tensor v = TV(6, F(0, 1, 2, 3, 4, 5)), r = NULL, one = TF(SHAPE(1, 3), 2, F(1, 2, 3));
  int64_t start = 1, end = 6;
  CT_OK(ctorch_slice_Tensor(&r, v, 0, &start, &end, 2));
  EXPECT(r, 0, 1, 3, 5);
  ctorch_tensor_free(r);
  CT_OK(ctorch_slice_Tensor(&r, v, 0, NULL, NULL, 3)); /* SymInt? NULL = open ends */
  EXPECT(r, 0, 0, 3);
  ctorch_tensor_free(r);
  CT_OK(ctorch_expand(&r, one, SHAPE(2, 3), 2, 0));
  EXPECT(r, 0, 1, 2, 3, 1, 2, 3);
  ctorch_tensor_free(r);
  CT_OK(ctorch_repeat(&r, one, SHAPE(1, 2), 2));
  EXPECT(r, 0, 1, 2, 3, 1, 2, 3);
  expect_shape(r, SHAPE(1, 6), 2);
  FREE(r, v, one);
}
END_TEST

START_TEST(cat_and_stack_take_lists) {
  ctorch_tensor a = TV(2, F(1, 2)), b = TV(2, F(3, 4)), r = NULL, xs[2];
  xs[0] = a;
  xs[1] = b;
  CT_OK(ctorch_cat(&r, xs, 2, 0));
  EXPECT(r, 0, 1, 2, 3, 4);
  ctorch_tensor_free(r);
  CT_OK(ctorch_stack(&r, xs, 2, 1));
  expect_shape(r, SHAPE(2, 2), 2);
  EXPECT(r, 0, 1, 3, 2, 4);
  ctorch_tensor_free(r);
  /* A NULL element of a Tensor[] is rejected, naming the argument. */
  xs[1] = NULL;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cat(&r, xs, 2, 0));
  CT_ERROR_HAS("'tensors'");
  FREE(a, b);
}
END_TEST

static void expect_list(ctorch_tensor_list l, size_t n, const double *const *want, const size_t *lens) {
  size_t sz = 0, i;
  CT_OK(ctorch_tensor_list_size(&sz, l));
  ck_assert_uint_eq(sz, n);
  for (i = 0; i < n; ++i) {
    ctorch_tensor e = NULL;
    CT_OK(ctorch_tensor_list_get(&e, l, i));
    expect_vals(e, want[i], lens[i], 0);
    ctorch_tensor_free(e);
  }
}

START_TEST(list_returns) {
  ctorch_tensor v = TV(5, F(1, 2, 3, 4, 5)), a = m23();
  ctorch_tensor_list l = NULL;
  CT_OK(ctorch_split_Tensor(&l, v, 2, 0));
  {
    const double *w[3] = {D(1, 2), D(3, 4), D(5)};
    expect_list(l, 3, w, (const size_t[]){2, 2, 1});
  }
  ctorch_tensor_list_free(l);
  CT_OK(ctorch_chunk(&l, a, 3, 1));
  {
    const double *w[3] = {D(1, 4), D(2, 5), D(3, 6)};
    expect_list(l, 3, w, (const size_t[]){2, 2, 2});
  }
  ctorch_tensor_list_free(l);
  CT_OK(ctorch_unbind_int(&l, a, 0));
  {
    const double *w[2] = {D(1, 2, 3), D(4, 5, 6)};
    expect_list(l, 2, w, (const size_t[]){3, 3});
  }
  ctorch_tensor_list_free(l);
  /* The list outlives the source handle (it owns its references). */
  CT_OK(ctorch_unbind_int(&l, v, 0));
  ctorch_tensor_free(v);
  {
    size_t n = 0;
    ctorch_tensor e = NULL;
    CT_OK(ctorch_tensor_list_size(&n, l));
    ck_assert_uint_eq(n, 5);
    CT_OK(ctorch_tensor_list_get(&e, l, 4));
    EXPECT(e, 0, 5);
    ctorch_tensor_free(e);
  }
  ctorch_tensor_list_free(l);
  ctorch_tensor_free(a);
}
END_TEST

START_TEST(gather_scatter_select) {
  ctorch_tensor v = TV(4, F(10, 20, 30, 40)), a = m23(), r = NULL;
  ctorch_tensor i2 = TI(SHAPE(2), 1, I64(3, 0)), gi = TI(SHAPE(2, 1), 2, I64(2, 0));
  ctorch_tensor zeros = NULL, src = TF(SHAPE(1, 2), 2, F(7, 8)), si = TI(SHAPE(1, 2), 2, I64(2, 0));
  CT_OK(ctorch_index_select(&r, v, 0, i2));
  EXPECT(r, 0, 40, 10);
  ctorch_tensor_free(r);
  CT_OK(ctorch_take(&r, a, i2));
  EXPECT(r, 0, 4, 1);
  ctorch_tensor_free(r);
  CT_OK(ctorch_gather(&r, a, 1, gi, 0));
  EXPECT(r, 0, 3, 4);
  ctorch_tensor_free(r);
  CT_OK(ctorch_zeros(&zeros, SHAPE(2, 3), 2, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_scatter_src(&r, zeros, 1, si, src));
  EXPECT(r, 0, 8, 0, 7, 0, 0, 0);
  FREE(r, v, a, i2, gi, zeros, src, si);
}
END_TEST

START_TEST(advanced_indexing) {
  ctorch_tensor a = m23(), r = NULL, cols = TI(SHAPE(2), 1, I64(2, 0)), idx[2];
  ctorch_tensor mask = TB(SHAPE(2, 3), 2, (const unsigned char[]){1, 0, 0, 0, 0, 1}), val = TV(1, F(100));
  /* Tensor?[]: a NULL entry means "all of this dimension" (a[:, [2, 0]]). */
  idx[0] = NULL;
  idx[1] = cols;
  CT_OK(ctorch_index_Tensor(&r, a, idx, 2));
  expect_shape(r, SHAPE(2, 2), 2);
  EXPECT(r, 0, 3, 1, 6, 4);
  ctorch_tensor_free(r);
  CT_OK(ctorch_masked_select(&r, a, mask));
  EXPECT(r, 0, 1, 6);
  ctorch_tensor_free(r);
  CT_OK(ctorch_masked_fill_Scalar(&r, a, mask, ctorch_scalar_int(-1)));
  EXPECT(r, 0, -1, 2, 3, 4, 5, -1);
  ctorch_tensor_free(r);
  CT_OK(ctorch_nonzero(&r, mask));
  EXPECT(r, 0, 0, 0, 1, 2);
  ctorch_tensor_free(r);
  /* index_put_ with accumulate: a[:, [2, 0]] += 100 (in place). */
  CT_OK(ctorch_index_put_(a, idx, 2, val, 1));
  EXPECT(a, 0, 101, 2, 103, 104, 5, 106);
  FREE(a, cols, mask, val);
}
END_TEST

START_TEST(factories) {
  ctorch_tensor r = NULL;
  ctorch_dtype i64 = CTORCH_INT64;
  ctorch_device cpu = ctorch_device_cpu();
  CT_OK(ctorch_full(&r, SHAPE(2, 2), 2, ctorch_scalar_float(1.5), NULL, NULL, &cpu, NULL));
  EXPECT(r, 0, 1.5, 1.5, 1.5, 1.5);
  ctorch_tensor_free(r);
  CT_OK(ctorch_arange_start_step(&r, ctorch_scalar_int(1), ctorch_scalar_int(10), ctorch_scalar_int(3), &i64,
                                 NULL, NULL, NULL));
  expect_dtype(r, CTORCH_INT64);
  EXPECT(r, 0, 1, 4, 7);
  ctorch_tensor_free(r);
  CT_OK(ctorch_linspace(&r, ctorch_scalar_float(0), ctorch_scalar_float(1), 5, NULL, NULL, NULL, NULL));
  EXPECT(r, 1e-7, 0, 0.25, 0.5, 0.75, 1);
  ctorch_tensor_free(r);
  CT_OK(ctorch_eye(&r, 2, NULL, NULL, NULL, NULL));
  EXPECT(r, 0, 1, 0, 0, 1);
  ctorch_tensor_free(r);
  /* A meta-device tensor: shape only, through the same dispatcher path. */
  {
    ctorch_device meta = {CTORCH_DEVICE_META, -1};
    ctorch_tensor a = NULL, b = NULL;
    CT_OK(ctorch_zeros(&a, SHAPE(3, 4), 2, NULL, NULL, &meta, NULL));
    CT_OK(ctorch_zeros(&b, SHAPE(4, 5), 2, NULL, NULL, &meta, NULL));
    CT_OK(ctorch_mm(&r, a, b));
    expect_shape(r, SHAPE(3, 5), 2);
    FREE(r, a, b);
  }
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("ops_shape_index");
  TCase *tc = tcase_create("shape_index");
  tcase_add_test(tc, views_and_reshapes);
  tcase_add_test(tc, views_share_storage);
  tcase_add_test(tc, slicing_expand_repeat);
  tcase_add_test(tc, cat_and_stack_take_lists);
  tcase_add_test(tc, list_returns);
  tcase_add_test(tc, gather_scatter_select);
  tcase_add_test(tc, advanced_indexing);
  tcase_add_test(tc, factories);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
