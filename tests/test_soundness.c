/* Repros from the bindings' safe code, as C calls (the bindings reach the same
 * entry points): each crashed a process or returned silent wrong data.
 *  - sparse constructors with inconsistent indices, then the reads that
 *    trust them (to_dense, coalesce, add, printing): refused at construction
 *    (shim/ops/guards_sparse.h); consistent indices still build and read back
 *    the values;
 *  - _convert_indices_from_coo_to_csr (+ out=) with out-of-range values:
 *    refused; in-range values give the CSR row pointers;
 *  - a bool tensor viewed from uint8 bytes 5 and 255: copy_to and item give
 *    0/1, never the raw byte;
 *  - batch norm's out= forms with a non-contiguous input on libtorch 2.x:
 *    refused; with a contiguous one bit-identical to the functional form
 *    (shim/ops/guards_norm.h). */
#include "check_main.h"

/* Schemas that gained a trailing optional in 2.x (to_dense's masked_grad,
 * the COO constructors' is_coalesced): NULL for it where it exists. */
#if CTORCH_TORCH_VERSION_MAJOR >= 2
#define NEW_OPT , NULL
#else
#define NEW_OPT
#endif

static ctorch_tensor i64(const int64_t *v, const int64_t *shape, size_t ndim) {
  int64_t n = 1;
  for (size_t i = 0; i < ndim; ++i) n *= shape[i];
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_from_data(&t, v, sizeof(int64_t) * (size_t)n, shape, ndim, CTORCH_INT64));
  return t;
}

static ctorch_tensor f32(const float *v, const int64_t *shape, size_t ndim) {
  int64_t n = 1;
  for (size_t i = 0; i < ndim; ++i) n *= shape[i];
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_from_data(&t, v, sizeof(float) * (size_t)n, shape, ndim, CTORCH_FLOAT32));
  return t;
}

/* Every read that trusts a sparse tensor's indices; each must return (any
 * status), never crash: run on whatever a constructor accepted. */
static void read_back(ctorch_tensor s) {
  ctorch_tensor d = NULL, c = NULL, a = NULL;
  char *text = NULL;
  ctorch_scalar one = {.kind = CTORCH_SCALAR_INT, .i = 1};
  (void)ctorch_to_dense(&d, s, NULL NEW_OPT);
  (void)ctorch_coalesce(&c, s);
  (void)ctorch_add_Tensor(&a, s, s, one);
  (void)ctorch_tensor_to_string(&text, s);
  ctorch_string_free(text);
  ctorch_tensor_free(a);
  ctorch_tensor_free(c);
  ctorch_tensor_free(d);
}

START_TEST(sparse_coo_with_bad_indices_is_refused) {
  const int64_t bad[2] = {0, 100000000}, good[2] = {1, 0}, ishape[2] = {1, 2}, vshape[1] = {2}, size[1] = {2};
  const float vals[2] = {1, 2};
  ctorch_tensor ib = i64(bad, ishape, 2), ig = i64(good, ishape, 2), v = f32(vals, vshape, 1), s = NULL, d = NULL;
  ctorch_status st = ctorch__sparse_coo_tensor_unsafe(&s, ib, v, size, 1, NULL, NULL, NULL, NULL NEW_OPT);
  ck_assert_msg(st != CTORCH_OK, "_sparse_coo_tensor_unsafe took index 1e8 for size 2");
  st = ctorch_sparse_coo_tensor_indices_size(&s, ib, v, size, 1, NULL, NULL, NULL, NULL NEW_OPT);
  ck_assert_msg(st != CTORCH_OK, "sparse_coo_tensor took index 1e8 for size 2");
  st = ctorch__sparse_coo_tensor_with_dims_and_tensors(&s, 1, 0, size, 1, ib, v, NULL, NULL, NULL, NULL NEW_OPT);
  ck_assert_msg(st != CTORCH_OK, "_sparse_coo_tensor_with_dims_and_tensors took index 1e8 for size 2");
  /* Consistent indices still work, and read back what was given. */
  CT_OK(ctorch__sparse_coo_tensor_unsafe(&s, ig, v, size, 1, NULL, NULL, NULL, NULL NEW_OPT));
  read_back(s);
  CT_OK(ctorch_to_dense(&d, s, NULL NEW_OPT));
  float got[2] = {0, 0};
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, d));
  ck_assert(got[0] == 2 && got[1] == 1);
  ctorch_tensor_free(d);
  ctorch_tensor_free(s);
  ctorch_tensor_free(v);
  ctorch_tensor_free(ig);
  ctorch_tensor_free(ib);
}
END_TEST

START_TEST(sparse_compressed_with_bad_indices_is_refused) {
  /* crow_indices [0, 1000, 1] for a 2x2 matrix with one value: 2.15's
   * sparse_csr_tensor accepted it and to_dense died (SIGSEGV). */
  const int64_t crow[3] = {0, 1000, 1}, col[1] = {0}, good_crow[3] = {0, 1, 1}, n3[1] = {3}, n1[1] = {1}, size[2] = {2, 2};
  const float one = 7;
  ctorch_tensor cb = i64(crow, n3, 1), cg = i64(good_crow, n3, 1), ci = i64(col, n1, 1), v = f32(&one, n1, 1), s = NULL;
  const ctorch_layout csr = CTORCH_LAYOUT_SPARSE_CSR, csc = CTORCH_LAYOUT_SPARSE_CSC;
  ck_assert(ctorch__sparse_csr_tensor_unsafe(&s, cb, ci, v, size, 2, NULL, NULL, NULL, NULL) != CTORCH_OK);
  ck_assert(ctorch__sparse_csc_tensor_unsafe(&s, cb, ci, v, size, 2, NULL, NULL, NULL, NULL) != CTORCH_OK);
  ck_assert(ctorch__sparse_compressed_tensor_unsafe(&s, cb, ci, v, size, 2, NULL, &csr, NULL, NULL) != CTORCH_OK);
  ck_assert(ctorch__sparse_compressed_tensor_unsafe(&s, cb, ci, v, size, 2, NULL, &csc, NULL, NULL) != CTORCH_OK);
  ck_assert(ctorch_sparse_csr_tensor_crow_col_value_size(&s, cb, ci, v, size, 2, NULL, NULL, NULL, NULL) != CTORCH_OK);
  ck_assert(ctorch_sparse_csr_tensor_crow_col_value(&s, cb, ci, v, NULL, NULL, NULL, NULL) != CTORCH_OK);
  ck_assert(ctorch_sparse_csc_tensor_ccol_row_value(&s, cb, ci, v, NULL, NULL, NULL, NULL) != CTORCH_OK);
  /* A consistent CSR: [[7, 0], [0, 0]]. */
  CT_OK(ctorch__sparse_csr_tensor_unsafe(&s, cg, ci, v, size, 2, NULL, NULL, NULL, NULL));
  ctorch_tensor d = NULL;
  CT_OK(ctorch_to_dense(&d, s, NULL NEW_OPT));
  float got[4];
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, d));
  ck_assert(got[0] == 7 && got[1] == 0 && got[2] == 0 && got[3] == 0);
  ctorch_tensor_free(d);
  ctorch_tensor_free(s);
  ctorch_tensor_free(v);
  ctorch_tensor_free(ci);
  ctorch_tensor_free(cg);
  ctorch_tensor_free(cb);
}
END_TEST

START_TEST(convert_indices_from_coo_to_csr_checks_values) {
  const int64_t bad[2] = {0, 1000000}, neg[2] = {-5, 0}, rows[4] = {0, 0, 1, 3}, n2[1] = {2}, n4[1] = {4};
  ctorch_tensor b = i64(bad, n2, 1), ng = i64(neg, n2, 1), r = i64(rows, n4, 1), out = NULL, o2 = NULL;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__convert_indices_from_coo_to_csr(&out, b, 3, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__convert_indices_from_coo_to_csr(&out, ng, 3, 0));
  const int64_t zero = 0, z1[1] = {1};
  o2 = i64(&zero, z1, 1);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch__convert_indices_from_coo_to_csr_out(b, 3, 0, o2));
  /* Rows 0, 0, 1, 3 of a 4-row matrix: row pointers 0, 2, 3, 3, 4 (torch's answer). */
  CT_OK(ctorch__convert_indices_from_coo_to_csr(&out, r, 4, 0));
  int64_t got[5];
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, out));
  ck_assert(got[0] == 0 && got[1] == 2 && got[2] == 3 && got[3] == 3 && got[4] == 4);
  CT_OK(ctorch__convert_indices_from_coo_to_csr_out(r, 4, 0, o2));
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, o2));
  ck_assert(got[0] == 0 && got[1] == 2 && got[2] == 3 && got[3] == 3 && got[4] == 4);
  ctorch_tensor_free(o2);
  ctorch_tensor_free(out);
  ctorch_tensor_free(r);
  ctorch_tensor_free(ng);
  ctorch_tensor_free(b);
}
END_TEST

START_TEST(bool_bytes_read_as_zero_or_one) {
  const uint8_t bytes[4] = {5, 0, 255, 1};
  const int64_t n[1] = {4};
  ctorch_tensor u = NULL, b = NULL, e = NULL;
  CT_OK(ctorch_tensor_from_data(&u, bytes, sizeof bytes, n, 1, CTORCH_UINT8));
  CT_OK(ctorch_view_dtype(&b, u, CTORCH_BOOL));
  uint8_t got[4] = {9, 9, 9, 9};
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, b));
  ck_assert_msg(got[0] == 1 && got[1] == 0 && got[2] == 1 && got[3] == 1, "copy_to gave %u %u %u %u", got[0], got[1],
                got[2], got[3]);
  /* item of the element holding 5 (a 1-element view of it). */
  int64_t idx = 0;
  CT_OK(ctorch_select_int(&e, b, 0, idx));
  double d = 0;
  int64_t i = 0;
  int flag = 0;
  CT_OK(ctorch_tensor_item_double(&d, e));
  CT_OK(ctorch_tensor_item_int64(&i, e));
  CT_OK(ctorch_tensor_item_bool(&flag, e));
  ck_assert_msg(d == 1.0 && i == 1 && flag == 1, "item of byte 5 as bool: %g %lld %d", d, (long long)i, flag);
  ctorch_tensor_free(e);
  ctorch_tensor_free(b);
  ctorch_tensor_free(u);
}
END_TEST

/* item 18: batch norm's out= forms on libtorch 2.x. With a transposed,
 * expanded or channels-last input, native_batch_norm.out,
 * _native_batch_norm_legit.out, _native_batch_norm_legit.no_stats_out and
 * _batch_norm_with_update.out return garbage statistics (and running stats)
 * in training mode and a permuted `out` for channels-last input (torch's own
 * calls do the same: seen in Python on 2.15.0; the functional forms and the
 * other out forms, _native_batch_norm_legit_no_training.out and
 * _batch_norm_no_update.out, are right). Each such input is refused; its
 * contiguous copy gives, through the out= form, the functional form's
 * results bit for bit (running stats included), and save_mean the means
 * computed here. */
#if CTORCH_TORCH_VERSION_MAJOR >= 2
enum { BN_NATIVE, BN_LEGIT, BN_NO_STATS, BN_WITH_UPDATE, BN_FORMS };
static const char *const bn_name[BN_FORMS] = {"native_batch_norm.out", "_native_batch_norm_legit.out",
                                              "_native_batch_norm_legit.no_stats_out", "_batch_norm_with_update.out"};

static ctorch_status bn_out(int f, ctorch_tensor x, ctorch_tensor rm, ctorch_tensor rv, ctorch_tensor *o) {
  switch (f) {
    case BN_NATIVE: return ctorch_native_batch_norm_out(x, NULL, NULL, rm, rv, 1, 0.1, 1e-5, o[0], o[1], o[2]);
    case BN_LEGIT: return ctorch__native_batch_norm_legit_out(x, NULL, NULL, rm, rv, 1, 0.1, 1e-5, o[0], o[1], o[2]);
    case BN_NO_STATS: return ctorch__native_batch_norm_legit_no_stats_out(x, NULL, NULL, 1, 0.1, 1e-5, o[0], o[1], o[2]);
    default: return ctorch__batch_norm_with_update_out(x, NULL, NULL, rm, rv, 0.1, 1e-5, o[0], o[1], o[2], o[3]);
  }
}

static ctorch_status bn_functional(int f, ctorch_tensor x, ctorch_tensor rm, ctorch_tensor rv, ctorch_tensor *r) {
  switch (f) {
    case BN_NATIVE: return ctorch_native_batch_norm(&r[0], &r[1], &r[2], x, NULL, NULL, rm, rv, 1, 0.1, 1e-5);
    case BN_LEGIT: return ctorch__native_batch_norm_legit(&r[0], &r[1], &r[2], x, NULL, NULL, rm, rv, 1, 0.1, 1e-5);
    case BN_NO_STATS: return ctorch__native_batch_norm_legit_no_stats(&r[0], &r[1], &r[2], x, NULL, NULL, 1, 0.1, 1e-5);
    default: return ctorch__batch_norm_with_update(&r[0], &r[1], &r[2], &r[3], x, NULL, NULL, rm, rv, 0.1, 1e-5);
  }
}

static void assert_equal_tensors(ctorch_tensor a, ctorch_tensor b, const char *what, int f, const char *input) {
  int eq = 0;
  CT_OK(ctorch_equal(&eq, a, b));
  ck_assert_msg(eq, "%s of %s (contiguous copy of a %s input) differs from the functional form's", what, bn_name[f],
                input);
}

/* Every form on input x (dims [N, C, ...]): refused as it is, right on its contiguous copy. */
static void check_batch_norm_out_forms(ctorch_tensor x, const char *input) {
  int64_t sizes[4], dim = 0, n = 1, rest = 1;
  const int64_t empty[1] = {0};
  ctorch_tensor xc = NULL;
  CT_OK(ctorch_tensor_dim(&dim, x));
  CT_OK(ctorch_tensor_sizes(sizes, 4, x));
  CT_OK(ctorch_contiguous(&xc, x, CTORCH_MEMORY_CONTIGUOUS));
  for (int64_t d = 0; d < dim; ++d) n *= sizes[d];
  for (int64_t d = 2; d < dim; ++d) rest *= sizes[d];
  const int64_t c = sizes[1], per = n / c, csz[1] = {c};
  float v[64], mean[16];
  ck_assert(n <= 64 && c <= 16);
  CT_OK(ctorch_tensor_copy_to(v, sizeof(float) * (size_t)n, xc));
  for (int64_t ch = 0; ch < c; ++ch) { /* exact: the values are halves, `per` a power of two */
    double sum = 0;
    for (int64_t i = 0; i < n; ++i)
      if ((i / rest) % c == ch) sum += v[i];
    mean[ch] = (float)(sum / (double)per);
  }
  for (int f = 0; f < BN_FORMS; ++f) {
    ctorch_tensor o[4], r[4] = {NULL, NULL, NULL, NULL}, rm[2], rv[2];
    float zeros[16] = {0}, ones[16];
    for (int k = 0; k < 16; ++k) ones[k] = 1;
    for (int k = 0; k < 2; ++k) rm[k] = f32(zeros, csz, 1), rv[k] = f32(ones, csz, 1);
    for (int k = 0; k < 3; ++k) o[k] = f32(zeros, empty, 1);
    CT_OK(ctorch_tensor_from_data(&o[3], zeros, 0, empty, 1, CTORCH_UINT8));
    ctorch_status st = bn_out(f, x, rm[0], rv[0], o);
    ck_assert_msg(st == CTORCH_INVALID_ARGUMENT && strstr(ctorch_last_error(), "'input'"),
                  "%s took a %s input: %s (%s)", bn_name[f], input, ctorch_status_name(st), ctorch_last_error());
    CT_OK(bn_out(f, xc, rm[0], rv[0], o));
    CT_OK(bn_functional(f, xc, rm[1], rv[1], r));
    for (int k = 0; k < 3; ++k) assert_equal_tensors(o[k], r[k], k == 0 ? "out" : k == 1 ? "save_mean" : "save_invstd",
                                                     f, input);
    if (f != BN_NO_STATS) {
      assert_equal_tensors(rm[0], rm[1], "running_mean", f, input);
      assert_equal_tensors(rv[0], rv[1], "running_var", f, input);
    }
    float got[16];
    CT_OK(ctorch_tensor_copy_to(got, sizeof(float) * (size_t)c, o[1]));
    for (int64_t ch = 0; ch < c; ++ch)
      ck_assert_msg(got[ch] == mean[ch], "%s, %s input: save_mean[%lld] %g, want %g", bn_name[f], input,
                    (long long)ch, got[ch], mean[ch]);
    for (int k = 0; k < 4; ++k) ctorch_tensor_free(o[k]), ctorch_tensor_free(r[k]);
    for (int k = 0; k < 2; ++k) ctorch_tensor_free(rm[k]), ctorch_tensor_free(rv[k]);
  }
  ctorch_tensor_free(xc);
}
#endif

START_TEST(batch_norm_out_forms_refuse_non_contiguous_input) {
#if CTORCH_TORCH_VERSION_MAJOR >= 2
  float v[24];
  for (int k = 0; k < 24; ++k) v[k] = (float)((k * 7) % 5) - 1.5f;
  const int64_t s34[2] = {3, 4}, perm[2] = {1, 0}, s13[2] = {1, 3}, s43[2] = {4, 3}, s2322[4] = {2, 3, 2, 2};
  ctorch_tensor base = f32(v, s34, 2), row = f32(v, s13, 2), cube = f32(v, s2322, 4), x = NULL;
  CT_OK(ctorch_permute(&x, base, perm, 2)); /* [4, 3], transposed */
  check_batch_norm_out_forms(x, "transposed");
  ctorch_tensor_free(x);
  CT_OK(ctorch_expand(&x, row, s43, 2, 0)); /* [4, 3], stride 0 in the batch */
  check_batch_norm_out_forms(x, "expanded");
  ctorch_tensor_free(x);
  CT_OK(ctorch_contiguous(&x, cube, CTORCH_MEMORY_CHANNELS_LAST));
  check_batch_norm_out_forms(x, "channels-last");
  ctorch_tensor_free(x);
  ctorch_tensor_free(cube);
  ctorch_tensor_free(row);
  ctorch_tensor_free(base);
#else
  /* 1.13 has no CPU kernel for these out forms (nothing to guard). */
#endif
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("soundness");
  TCase *tc = tcase_create("issue51");
  tcase_add_test(tc, sparse_coo_with_bad_indices_is_refused);
  tcase_add_test(tc, sparse_compressed_with_bad_indices_is_refused);
  tcase_add_test(tc, convert_indices_from_coo_to_csr_checks_values);
  tcase_add_test(tc, bool_bytes_read_as_zero_or_one);
  tcase_add_test(tc, batch_norm_out_forms_refuse_non_contiguous_input);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
