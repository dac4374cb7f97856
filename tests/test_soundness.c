/* Issue 51's repros from safe code, as C calls (the bindings reach the same
 * entry points): each crashed a process or returned silent wrong data.
 *  - sparse constructors with inconsistent indices, then the reads that
 *    trust them (to_dense, coalesce, add, printing): refused at construction
 *    (shim/ops/guards_sparse.h); consistent indices still build and read back
 *    the values (item 1);
 *  - _convert_indices_from_coo_to_csr (+ out=) with out-of-range values:
 *    refused; in-range values give the CSR row pointers (item 1);
 *  - a bool tensor viewed from uint8 bytes 5 and 255: copy_to and item give
 *    0/1, never the raw byte (item 3);
 *  - batch norm's out= forms with a non-contiguous input on libtorch 2.x:
 *    refused; with a contiguous one bit-identical to the functional form
 *    (item 18; shim/ops/guards_norm.h). */
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

/* item 18: the out= forms against the functional form, on the same input. */
static int torch_2x(void) {
  const char *v = NULL;
  CT_OK(ctorch_torch_version(&v));
  return v[0] >= '2' && v[1] == '.';
}

START_TEST(batch_norm_out_forms_refuse_non_contiguous_input) {
  float v[12];
  for (int k = 0; k < 12; ++k) v[k] = (float)((k * 7) % 5) - 1.5f;
  const int64_t shape[2] = {3, 4}, perm[2] = {1, 0}, empty[1] = {0};
  ctorch_tensor base = f32(v, shape, 2), xt = NULL, xc = NULL, r0 = NULL, r1 = NULL, r2 = NULL;
  ctorch_tensor o = f32(v, empty, 1), m = f32(v, empty, 1), s = f32(v, empty, 1);
  CT_OK(ctorch_permute(&xt, base, perm, 2)); /* [4, 3], not contiguous */
  CT_OK(ctorch_contiguous(&xc, xt, CTORCH_MEMORY_CONTIGUOUS));
  ctorch_status st = ctorch_native_batch_norm_out(xt, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, o, m, s);
  if (torch_2x()) {
    ck_assert_msg(st == CTORCH_INVALID_ARGUMENT, "native_batch_norm.out took a transposed input: %s",
                  ctorch_status_name(st));
    /* Contiguous: the out= form equals the functional form bit for bit. */
    CT_OK(ctorch_native_batch_norm_out(xc, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, o, m, s));
    CT_OK(ctorch_native_batch_norm(&r0, &r1, &r2, xc, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5));
    int eq = 0;
    CT_OK(ctorch_equal(&eq, o, r0));
    ck_assert(eq);
    CT_OK(ctorch_equal(&eq, m, r1));
    ck_assert(eq);
    CT_OK(ctorch_equal(&eq, s, r2));
    ck_assert(eq);
    float mean[3];
    CT_OK(ctorch_tensor_copy_to(mean, sizeof mean, m));
    for (int c = 0; c < 3; ++c) {
      float want = 0;
      for (int k = 0; k < 4; ++k) want += v[c * 4 + k];
      ck_assert_msg(mean[c] == want / 4, "save_mean[%d] %g, want %g", c, mean[c], want / 4);
    }
  }
  ctorch_tensor_free(r0);
  ctorch_tensor_free(r1);
  ctorch_tensor_free(r2);
  ctorch_tensor_free(s);
  ctorch_tensor_free(m);
  ctorch_tensor_free(o);
  ctorch_tensor_free(xc);
  ctorch_tensor_free(xt);
  ctorch_tensor_free(base);
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
