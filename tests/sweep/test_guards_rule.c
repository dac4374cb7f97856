/* The rule for guards (shim/ops/guards.h): refuse only what
 * libtorch crashes on or PyTorch itself refuses. The 18 operators the
 * differential test found refusing inputs libtorch computes: each lifted
 * input now computes, and gives what the equivalent accepted input gives
 * (libtorch reads the same elements); each kept refusal still answers
 * INVALID_ARGUMENT naming the argument. */
#include "../check_main.h"

static ctorch_tensor ramp(const int64_t *sizes, size_t ndim) {
  float v[512];
  size_t n = 1, i;
  for (i = 0; i < ndim; ++i) n *= (size_t)sizes[i];
  ck_assert_uint_le(n, 512);
  for (i = 0; i < n; ++i) v[i] = (float)(i + 1) / 7.0f;
  return ct_floats(v, sizes, ndim);
}

static ctorch_tensor longs(const int64_t *v, const int64_t *sizes, size_t ndim) {
  size_t n = 1, i;
  ctorch_tensor t = NULL;
  for (i = 0; i < ndim; ++i) n *= (size_t)sizes[i];
  CT_OK(ctorch_tensor_from_data(&t, v, n * sizeof(int64_t), sizes, ndim, CTORCH_INT64));
  return t;
}

static void assert_equal(ctorch_tensor a, ctorch_tensor b) {
  int eq = 0;
  CT_OK(ctorch_equal(&eq, a, b));
  ck_assert_msg(eq, "the lifted input computed something other than the accepted equivalent");
}

static void free4(ctorch_tensor *r) {
  int i;
  for (i = 0; i < 4; ++i) {
    ctorch_tensor_free(r[i]);
    r[i] = NULL;
  }
}

START_TEST(embedding_bag_2d_indices_compute_except_max) {
  int64_t s_w[2] = {10, 3}, s22[2] = {2, 2}, s4 = 4, s2 = 2, s221[3] = {2, 2, 1};
  int64_t idx[4] = {1, 2, 3, 4}, off[2] = {0, 1};
  ctorch_tensor w = ramp(s_w, 2), i2 = longs(idx, s22, 2), i1 = longs(idx, &s4, 1), o = longs(off, &s2, 1),
                i3 = longs(idx, s221, 3), a[4] = {0}, b[4] = {0};
  int64_t mode;
  /* 2-D indices with sum or mean: computed (1.13 and 2.15), alike by the
   * three entry points; the sum is that of the flattened 1-D indices. */
  for (mode = 0; mode <= 1; ++mode) {
    CT_OK(ctorch_embedding_bag(&b[0], &b[1], &b[2], &b[3], w, i2, o, 0, mode, 0, NULL, 0));
    if (mode == 0) {
      CT_OK(ctorch_embedding_bag(&a[0], &a[1], &a[2], &a[3], w, i1, o, 0, mode, 0, NULL, 0));
      assert_equal(a[0], b[0]);
      free4(a);
    }
    CT_OK(ctorch__embedding_bag(&a[0], &a[1], &a[2], &a[3], w, i2, o, 0, mode, 0, NULL, 0, -1));
    assert_equal(a[0], b[0]);
    free4(a);
    CT_OK(ctorch__embedding_bag_forward_only(&a[0], &a[1], &a[2], &a[3], w, i2, o, 0, mode, 0, NULL, 0, -1));
    assert_equal(a[0], b[0]);
    free4(a);
    free4(b);
  }
  /* Kept: mode max with 2-D indices crashes libtorch (SIGSEGV/abort, 1.13 and 2.15). */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_embedding_bag(&a[0], &a[1], &a[2], &a[3], w, i2, o, 0, 2, 0, NULL, 0));
  CT_ERROR_HAS("argument 'indices'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__embedding_bag(&a[0], &a[1], &a[2], &a[3], w, i2, o, 0, 2, 0, NULL, 0, -1));
  /* Kept: 3-D indices, which libtorch 2.x refuses. */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__embedding_bag(&a[0], &a[1], &a[2], &a[3], w, i3, o, 0, 0, 0, NULL, 0, -1));
  CT_ERROR_HAS("argument 'indices'");
  ctorch_tensor_free(w);
  ctorch_tensor_free(i1);
  ctorch_tensor_free(i2);
  ctorch_tensor_free(i3);
  ctorch_tensor_free(o);
}
END_TEST

START_TEST(fractional_pool_takes_a_larger_sample_batch) {
  int64_t sx[4] = {1, 2, 8, 8}, sx3[5] = {1, 2, 6, 6, 6}, k2[2] = {2, 2}, o4[2] = {4, 4}, k3[3] = {2, 2, 2},
          o3[3] = {3, 3, 3}, s122[3] = {1, 2, 2}, s322[3] = {3, 2, 2}, s132[3] = {1, 3, 2}, s123[3] = {1, 2, 3},
          s323[3] = {3, 2, 3};
  float u[18] = {0.3f, 0.6f, 0.1f, 0.9f, 0.5f, 0.2f, 0.7f, 0.4f, 0.8f, 0.25f, 0.35f, 0.45f,
                 0.55f, 0.65f, 0.75f, 0.85f, 0.95f, 0.05f};
  ctorch_tensor x = ramp(sx, 4), x3 = ramp(sx3, 5), small = ct_floats(u, s122, 3), big = ct_floats(u, s322, 3),
                wrong_c = ct_floats(u, s132, 3), small3 = ct_floats(u, s123, 3), big3 = ct_floats(u, s323, 3);
  ctorch_tensor a0 = NULL, a1 = NULL, b0 = NULL, b1 = NULL, out = NULL, idx = NULL;
  /* A batch of samples larger than the input's: its first rows are used (1.13 and 2.15 alike). */
  CT_OK(ctorch_fractional_max_pool2d(&a0, &a1, x, k2, 2, o4, 2, small));
  CT_OK(ctorch_fractional_max_pool2d(&b0, &b1, x, k2, 2, o4, 2, big));
  assert_equal(a0, b0);
  assert_equal(a1, b1);
  CT_OK(ctorch_empty_like(&out, a0, NULL, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_empty_like(&idx, a1, NULL, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_fractional_max_pool2d_output(x, k2, 2, o4, 2, big, out, idx));
  assert_equal(a0, out);
  ctorch_tensor_free(a0);
  ctorch_tensor_free(a1);
  ctorch_tensor_free(b0);
  ctorch_tensor_free(b1);
  CT_OK(ctorch_fractional_max_pool3d(&a0, &a1, x3, k3, 3, o3, 3, small3));
  CT_OK(ctorch_fractional_max_pool3d(&b0, &b1, x3, k3, 3, o3, 3, big3));
  assert_equal(a0, b0);
  ctorch_tensor_free(a0);
  ctorch_tensor_free(a1);
  /* Kept: samples for another channel count, which libtorch 2.x refuses. */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_fractional_max_pool2d(&a0, &a1, x, k2, 2, o4, 2, wrong_c));
  CT_ERROR_HAS("argument 'random_samples'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_fractional_max_pool2d_output(x, k2, 2, o4, 2, wrong_c, out, idx));
  ctorch_tensor_free(b0);
  ctorch_tensor_free(b1);
  ctorch_tensor_free(out);
  ctorch_tensor_free(idx);
  ctorch_tensor_free(x);
  ctorch_tensor_free(x3);
  ctorch_tensor_free(small);
  ctorch_tensor_free(big);
  ctorch_tensor_free(small3);
  ctorch_tensor_free(big3);
  ctorch_tensor_free(wrong_c);
}
END_TEST

START_TEST(slow_conv3d_kernel_inside_the_weight_computes) {
  int64_t sx[5] = {1, 2, 5, 5, 5}, sw[5] = {3, 2, 2, 2, 2}, k1[3] = {1, 1, 1}, k123[3] = {1, 2, 3}, k3[3] = {3, 3, 3},
          one[3] = {1, 1, 1}, zero[3] = {0, 0, 0}, sizes[5];
  ctorch_tensor x = ramp(sx, 5), w = ramp(sw, 5), r = NULL, out = NULL;
  /* kernel_size other than the weight's, its product within it: computed (1.13, 2.15). */
  CT_OK(ctorch_slow_conv3d(&r, x, w, k1, 3, NULL, one, 3, zero, 3));
  CT_OK(ctorch_tensor_sizes(sizes, 5, r));
  ck_assert_int_eq(sizes[2], 5);
  ck_assert_int_eq(sizes[4], 5);
  ctorch_tensor_free(r);
  CT_OK(ctorch_slow_conv3d(&r, x, w, k123, 3, NULL, one, 3, zero, 3));
  CT_OK(ctorch_tensor_sizes(sizes, 5, r));
  ck_assert_int_eq(sizes[3], 4);
  ck_assert_int_eq(sizes[4], 3);
  CT_OK(ctorch_empty_like(&out, r, NULL, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_slow_conv3d_out(x, w, k123, 3, NULL, one, 3, zero, 3, out));
  assert_equal(r, out);
  ctorch_tensor_free(r);
  CT_OK(ctorch_slow_conv3d_forward(&r, x, w, k1, 3, NULL, one, 3, zero, 3));
  ctorch_tensor_free(r);
  /* Kept: a kernel larger than the weight reads past it (results vary with the heap). */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_slow_conv3d(&r, x, w, k3, 3, NULL, one, 3, zero, 3));
  CT_ERROR_HAS("argument 'kernel_size'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_slow_conv3d_forward(&r, x, w, k3, 3, NULL, one, 3, zero, 3));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_slow_conv3d_forward_output(x, w, k3, 3, NULL, one, 3, zero, 3, out));
  ctorch_tensor_free(out);
  ctorch_tensor_free(x);
  ctorch_tensor_free(w);
}
END_TEST

START_TEST(scalar_weight_norm_and_batch_norm_backward) {
  int64_t s23[2] = {2, 3}, s2 = 2, s1 = 1, s3 = 3, s0 = 0, s6 = 6;
  ctorch_tensor v = ramp(s23, 2), g23 = ramp(s23, 2), g2 = ramp(&s2, 1), g1 = ramp(&s1, 1), c3 = ramp(&s3, 1),
                c2 = ramp(&s2, 1), c6 = ramp(&s6, 1), empty = NULL, a = NULL, b = NULL, r[3] = {0}, q[3] = {0},
                strided = NULL;
  ctorch_scalar s;
  static const int mask[3] = {1, 1, 1};
  int i;
  /* _local_scalar_dense of several elements: the first (1.13 and 2.15); empty: refused (1.13 SIGSEGV). */
  CT_OK(ctorch__local_scalar_dense(&s, v));
  ck_assert_double_eq_tol(s.f, 1.0 / 7.0, 1e-6);
  CT_OK(ctorch_zeros(&empty, &s0, 1, NULL, NULL, NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__local_scalar_dense(&s, empty));
  CT_ERROR_HAS("argument 'self'");
  /* _weight_norm with a larger g: its first elements per slice, as a g of exactly that many. */
  CT_OK(ctorch__weight_norm(&a, v, g23, 0));
  CT_OK(ctorch__weight_norm(&b, v, g2, 0));
  assert_equal(a, b);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  CT_OK(ctorch__weight_norm(&a, v, g23, -1));
  ctorch_tensor_free(a);
  /* Kept: fewer g than slices is read past (results vary with the heap); an empty v is SIGFPE in 1.13. */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__weight_norm(&a, v, g1, 0));
  CT_ERROR_HAS("argument 'g'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__weight_norm(&a, v, g2, 1));
  /* Kept: native_channel_shuffle of 2-D input (libtorch 2.x refuses it). */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_native_channel_shuffle(&a, v, 3));
  CT_ERROR_HAS("argument 'self'");
  /* Batch-norm backward with per-channel tensors of more than C elements: their first C. */
  CT_OK(ctorch__batch_norm_impl_index_backward(&r[0], &r[1], &r[2], 0, v, v, g23, g23, g23, g23, g23, 1, 1e-5, mask, 3,
                                               empty));
  CT_OK(ctorch__batch_norm_impl_index_backward(&q[0], &q[1], &q[2], 0, v, v, c3, c3, c3, c3, c3, 1, 1e-5, mask, 3,
                                               empty));
  for (i = 0; i < 3; ++i) {
    assert_equal(r[i], q[i]);
    ctorch_tensor_free(r[i]);
    ctorch_tensor_free(q[i]);
  }
  /* Kept: fewer than C (read past), a strided view (read as flat), no saved stats in training (SIGSEGV). */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__batch_norm_impl_index_backward(&r[0], &r[1], &r[2], 0, v, v, c3, c3, c3,
                                                                           c2, c2, 1, 1e-5, mask, 3, empty));
  CT_ERROR_HAS("argument 'save_mean'");
  {
    int64_t start = 0, end = 6, step = 2;
    CT_OK(ctorch_slice_Tensor(&strided, c6, 0, &start, &end, step));
  }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__batch_norm_impl_index_backward(&r[0], &r[1], &r[2], 0, v, v, c3, c3, c3,
                                                                           strided, strided, 1, 1e-5, mask, 3, empty));
  CT_ERROR_HAS("contiguous");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__batch_norm_impl_index_backward(&r[0], &r[1], &r[2], 0, v, v, c3, c3, c3,
                                                                           NULL, NULL, 1, 1e-5, mask, 3, empty));
  ctorch_tensor_free(strided);
  ctorch_tensor_free(empty);
  ctorch_tensor_free(v);
  ctorch_tensor_free(g23);
  ctorch_tensor_free(g2);
  ctorch_tensor_free(g1);
  ctorch_tensor_free(c3);
  ctorch_tensor_free(c2);
  ctorch_tensor_free(c6);
}
END_TEST

START_TEST(rnn_cells_keep_the_gate_count_check) {
  /* lstm_cell with w_ih [4,3] for hidden 3: 1.13 computes it, 2.15 refuses
   * ("weight_ih first dim must be 4 * hidden_size"): kept. */
  int64_t s23[2] = {2, 3}, s43[2] = {4, 3}, s12_3[2] = {12, 3}, s9_3[2] = {9, 3};
  ctorch_tensor x = ramp(s23, 2), w = ramp(s43, 2), w12 = ramp(s12_3, 2), w9 = ramp(s9_3, 2), hx[2], r0 = NULL,
                r1 = NULL;
  hx[0] = x;
  hx[1] = x;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_lstm_cell(&r0, &r1, x, hx, 2, w, w, NULL, NULL));
  CT_ERROR_HAS("argument 'w_hh'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_gru_cell(&r0, x, x, w, w, NULL, NULL));
  /* the right shapes compute */
  CT_OK(ctorch_lstm_cell(&r0, &r1, x, hx, 2, w12, w12, NULL, NULL));
  ctorch_tensor_free(r0);
  ctorch_tensor_free(r1);
  CT_OK(ctorch_gru_cell(&r0, x, x, w9, w9, NULL, NULL));
  ctorch_tensor_free(r0);
  ctorch_tensor_free(x);
  ctorch_tensor_free(w);
  ctorch_tensor_free(w12);
  ctorch_tensor_free(w9);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("guards_rule");
  TCase *tc = tcase_create("guards_rule");
  tcase_add_test(tc, embedding_bag_2d_indices_compute_except_max);
  tcase_add_test(tc, fractional_pool_takes_a_larger_sample_batch);
  tcase_add_test(tc, slow_conv3d_kernel_inside_the_weight_computes);
  tcase_add_test(tc, scalar_weight_norm_and_batch_norm_backward);
  tcase_add_test(tc, rnn_cells_keep_the_gate_count_check);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
