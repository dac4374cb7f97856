/* DLPack: zero-copy export/import, ownership, dtypes, layouts, malformed input. */
#include <dlpack/dlpack.h>
#include <pthread.h>

#include "check_main.h"

#include "dlpack_producer.h"

static void *free_tensor_thread(void *arg) {
  ctorch_tensor_free((ctorch_tensor)arg);
  return NULL;
}

static void *call_deleter_thread(void *arg) {
  DLManagedTensor *m = (DLManagedTensor *)arg;
  m->deleter(m);
  return NULL;
}

/* ---- export -------------------------------------------------------------- */

struct dtype_case {
  ctorch_dtype dtype;
  uint8_t code, bits;
};
static const struct dtype_case kCases[] = {
    {CTORCH_BOOL, CTORCH_DLPACK_BOOL_CODE, 8}, {CTORCH_UINT8, kDLUInt, 8},     {CTORCH_INT8, kDLInt, 8},
    {CTORCH_INT16, kDLInt, 16},                {CTORCH_INT32, kDLInt, 32},     {CTORCH_INT64, kDLInt, 64},
    {CTORCH_FLOAT16, kDLFloat, 16},            {CTORCH_BFLOAT16, kDLBfloat, 16}, {CTORCH_FLOAT32, kDLFloat, 32},
    {CTORCH_FLOAT64, kDLFloat, 64},            {CTORCH_COMPLEX32, kDLComplex, 32}, {CTORCH_COMPLEX64, kDLComplex, 64},
    {CTORCH_COMPLEX128, kDLComplex, 128},
};

START_TEST(every_dtype_round_trips_zero_copy) {
  size_t k;
  for (k = 0; k < sizeof kCases / sizeof kCases[0]; ++k) {
    unsigned char bytes[6 * 16], back[6 * 16];
    int64_t sizes[2] = {2, 3}, st[2];
    size_t item = 0, i;
    ctorch_tensor t = NULL, u = NULL;
    DLManagedTensor *m = NULL;
    void *p = NULL, *q = NULL;
    ctorch_dtype dt;
    CT_OK(ctorch_dtype_size(&item, kCases[k].dtype));
    for (i = 0; i < 6 * item; ++i) bytes[i] = (unsigned char)(kCases[k].dtype == CTORCH_BOOL ? (i % 2) : (i * 7 + 1));
    CT_OK(ctorch_tensor_from_data(&t, bytes, 6 * item, sizes, 2, kCases[k].dtype));
    CT_OK(ctorch_to_dlpack(&m, t));
    ck_assert_ptr_nonnull(m);
    ck_assert_msg(m->dl_tensor.dtype.code == kCases[k].code && m->dl_tensor.dtype.bits == kCases[k].bits &&
                      m->dl_tensor.dtype.lanes == 1,
                  "dtype %d exported as code %d bits %d", kCases[k].dtype, m->dl_tensor.dtype.code,
                  m->dl_tensor.dtype.bits);
    ck_assert_int_eq(m->dl_tensor.device.device_type, kDLCPU);
    ck_assert_int_eq(m->dl_tensor.ndim, 2);
    ck_assert_int_eq(m->dl_tensor.shape[0], 2);
    ck_assert_int_eq(m->dl_tensor.shape[1], 3);
    CT_OK(ctorch_tensor_strides(st, 2, t));
    ck_assert_int_eq(m->dl_tensor.strides[0], st[0]);
    ck_assert_int_eq(m->dl_tensor.strides[1], st[1]);
    CT_OK(ctorch_tensor_data_ptr(&p, t));
    ck_assert_ptr_eq(m->dl_tensor.data, p);
    ck_assert_uint_eq(m->dl_tensor.byte_offset, 0);

    CT_OK(ctorch_from_dlpack(&u, m)); /* u now owns m */
    CT_OK(ctorch_tensor_data_ptr(&q, u));
    ck_assert_ptr_eq(q, p);
    CT_OK(ctorch_tensor_dtype(&dt, u));
    ck_assert_int_eq(dt, kCases[k].dtype);
    CT_OK(ctorch_tensor_copy_to(back, sizeof back, u));
    ck_assert_mem_eq(back, bytes, 6 * item);
    ctorch_tensor_free(t); /* either order */
    ctorch_tensor_free(u);
  }
}
END_TEST

/* Element types newer than 1.13 exist exactly where the libtorch has them:
 * elsewhere a clear NOT_IMPLEMENTED naming the version, never "invalid". */
#define CT_AT_LEAST(maj, min) \
  (CTORCH_TORCH_VERSION_MAJOR > (maj) || (CTORCH_TORCH_VERSION_MAJOR == (maj) && CTORCH_TORCH_VERSION_MINOR >= (min)))
START_TEST(newer_dtypes_follow_the_libtorch_version) {
  static const struct {
    ctorch_dtype dtype;
    int have, dl_bits; /* dl_bits 0: no DLPack 0.6 code */
    size_t item;
  } cases[] = {
      {CTORCH_UINT16, CT_AT_LEAST(2, 3), 16, 2},         {CTORCH_UINT32, CT_AT_LEAST(2, 3), 32, 4},
      {CTORCH_UINT64, CT_AT_LEAST(2, 3), 64, 8},         {CTORCH_FLOAT8_E5M2, CT_AT_LEAST(2, 1), 0, 1},
      {CTORCH_FLOAT8_E4M3FN, CT_AT_LEAST(2, 1), 0, 1},   {CTORCH_FLOAT8_E5M2FNUZ, CT_AT_LEAST(2, 2), 0, 1},
      {CTORCH_FLOAT8_E4M3FNUZ, CT_AT_LEAST(2, 2), 0, 1}, {CTORCH_FLOAT8_E8M0FNU, CT_AT_LEAST(2, 7), 0, 1},
  };
  size_t k;
  for (k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    unsigned char bytes[6 * 8], back[6 * 8];
    int64_t sizes[2] = {2, 3};
    size_t item = 0, i;
    ctorch_tensor t = NULL, u = NULL;
    DLManagedTensor *m = NULL;
    ctorch_dtype dt;
    for (i = 0; i < sizeof bytes; ++i) bytes[i] = (unsigned char)(i * 5 + 3);
    if (!cases[k].have) {
      CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_dtype_size(&item, cases[k].dtype));
      CT_ERROR_HAS("needs libtorch >= ");
      CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_tensor_from_data(&t, bytes, sizeof bytes, sizes, 2, cases[k].dtype));
      ck_assert_ptr_null(t);
      continue;
    }
    CT_OK(ctorch_dtype_size(&item, cases[k].dtype));
    ck_assert_uint_eq(item, cases[k].item);
    CT_OK(ctorch_tensor_from_data(&t, bytes, 6 * item, sizes, 2, cases[k].dtype));
    CT_OK(ctorch_tensor_dtype(&dt, t));
    ck_assert_int_eq(dt, cases[k].dtype);
    CT_OK(ctorch_tensor_copy_to(back, 6 * item, t));
    ck_assert_mem_eq(back, bytes, 6 * item);
    if (cases[k].dl_bits) {
      CT_OK(ctorch_to_dlpack(&m, t));
      ck_assert_int_eq(m->dl_tensor.dtype.code, kDLUInt);
      ck_assert_int_eq(m->dl_tensor.dtype.bits, cases[k].dl_bits);
      CT_OK(ctorch_from_dlpack(&u, m));
      CT_OK(ctorch_tensor_dtype(&dt, u));
      ck_assert_int_eq(dt, cases[k].dtype);
      ctorch_tensor_free(u);
    } else {
      CT_FAILS(CTORCH_TYPE, ctorch_to_dlpack(&m, t));
      CT_ERROR_HAS("no DLPack equivalent");
    }
    ctorch_tensor_free(t);
  }
}
END_TEST

START_TEST(export_keeps_tensor_alive_and_shares_writes) {
  float v[6] = {1, 2, 3, 4, 5, 6}, back[6];
  int64_t sizes[2] = {2, 3};
  ctorch_tensor t = NULL;
  DLManagedTensor *m = NULL;
  pthread_t th;
  t = ct_floats(v, sizes, 2);
  CT_OK(ctorch_to_dlpack(&m, t));
  ((float *)m->dl_tensor.data)[4] = 50.0f; /* a write through DLPack is seen by ctorch */
  CT_OK(ctorch_tensor_copy_to(back, sizeof back, t));
  ck_assert_float_eq(back[4], 50.0f);
  ctorch_tensor_free(t); /* the DLPack struct keeps the data */
  ck_assert_float_eq(((float *)m->dl_tensor.data)[5], 6.0f);
  /* The deleter may run on another thread. */
  ck_assert_int_eq(pthread_create(&th, NULL, call_deleter_thread, m), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
}
END_TEST

START_TEST(export_non_contiguous_zero_dim_and_empty) {
  float buf[12];
  int64_t sizes[2] = {3, 2}, strides[2] = {1, 4}, one[3] = {1, 4, 1}, one_st[3] = {99, 3, 7}, zero[2] = {0, 5};
  ctorch_tensor t = NULL, u = NULL;
  DLManagedTensor *m = NULL;
  float back[6];
  int i;
  void *p = NULL;
  for (i = 0; i < 12; ++i) buf[i] = (float)i;

  /* A transposed-like view over the caller's memory. */
  CT_OK(ctorch_tensor_from_blob(&t, buf, sizes, strides, 2, CTORCH_FLOAT32, ctorch_device_cpu(), NULL, NULL));
  CT_OK(ctorch_to_dlpack(&m, t));
  ck_assert_ptr_eq(m->dl_tensor.data, buf);
  ck_assert_int_eq(m->dl_tensor.strides[0], 1);
  ck_assert_int_eq(m->dl_tensor.strides[1], 4);
  CT_OK(ctorch_from_dlpack(&u, m));
  CT_OK(ctorch_tensor_copy_to(back, sizeof back, u));
  /* row-major read of the view: element (r, c) = buf[r + 4c] */
  ck_assert_float_eq(back[0], 0);
  ck_assert_float_eq(back[1], 4);
  ck_assert_float_eq(back[2], 1);
  ck_assert_float_eq(back[5], 6);
  ctorch_tensor_free(u);
  ctorch_tensor_free(t);

  /* Size-1 dims with arbitrary strides. */
  CT_OK(ctorch_tensor_from_blob(&t, buf, one, one_st, 3, CTORCH_FLOAT32, ctorch_device_cpu(), NULL, NULL));
  CT_OK(ctorch_to_dlpack(&m, t));
  CT_OK(ctorch_from_dlpack(&u, m));
  CT_OK(ctorch_tensor_copy_to(back, 4 * sizeof(float), u));
  ck_assert_float_eq(back[3], 9);
  ctorch_tensor_free(u);
  ctorch_tensor_free(t);

  /* 0-dim */
  buf[0] = 42;
  CT_OK(ctorch_tensor_from_data(&t, buf, sizeof(float), NULL, 0, CTORCH_FLOAT32));
  CT_OK(ctorch_to_dlpack(&m, t));
  ck_assert_int_eq(m->dl_tensor.ndim, 0);
  CT_OK(ctorch_from_dlpack(&u, m));
  {
    int64_t dim = -1;
    double d = 0;
    CT_OK(ctorch_tensor_dim(&dim, u));
    ck_assert_int_eq(dim, 0);
    CT_OK(ctorch_tensor_item_double(&d, u));
    ck_assert_double_eq(d, 42.0);
  }
  ctorch_tensor_free(u);
  ctorch_tensor_free(t);

  /* No elements. */
  CT_OK(ctorch_tensor_from_data(&t, NULL, 0, zero, 2, CTORCH_FLOAT32));
  CT_OK(ctorch_to_dlpack(&m, t));
  ck_assert_int_eq(m->dl_tensor.shape[1], 5);
  CT_OK(ctorch_from_dlpack(&u, m));
  CT_OK(ctorch_tensor_data_ptr(&p, u));
  ck_assert_ptr_null(p);
  ctorch_tensor_free(u);
  ctorch_tensor_free(t);

  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_to_dlpack(&m, NULL));
  ck_assert_ptr_null(m);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_to_dlpack(NULL, t));
}
END_TEST

/* ---- import ------------------------------------------------------------- */

START_TEST(import_zero_copy_byte_offset_and_single_delete) {
  double data[8] = {0, 1, 2, 3, 4, 5, 6, 7}, back[3];
  int64_t shape[1] = {3}, strides[1] = {2};
  Producer p;
  ctorch_tensor t = NULL, t2 = NULL;
  void *ptr = NULL;
  pthread_t th;
  producer_init(&p, data, kDLFloat, 64, 1, shape, strides, 2 * sizeof(double));
  CT_OK(ctorch_from_dlpack(&t, &p.m));
  CT_OK(ctorch_tensor_data_ptr(&ptr, t));
  ck_assert_ptr_eq(ptr, &data[2]);
  CT_OK(ctorch_tensor_copy_to(back, sizeof back, t));
  ck_assert_double_eq(back[0], 2);
  ck_assert_double_eq(back[1], 4);
  ck_assert_double_eq(back[2], 6);
  data[4] = 40; /* producer-side write, seen by ctorch */
  CT_OK(ctorch_tensor_copy_to(back, sizeof back, t));
  ck_assert_double_eq(back[1], 40);

  CT_OK(ctorch_tensor_ref(&t2, t));
  ctorch_tensor_free(t);
  ck_assert_int_eq(p.deleted, 0);
  /* The last reference dies on another thread: the deleter runs there, once. */
  ck_assert_int_eq(pthread_create(&th, NULL, free_tensor_thread, t2), 0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_int_eq(p.deleted, 1);
  ck_assert(pthread_equal(p.deleter_thread, th));
}
END_TEST

START_TEST(import_contiguous_default_strides_and_bool) {
  unsigned char flags[6] = {1, 0, 1, 1, 0, 0};
  int64_t shape[2] = {2, 3}, st[2];
  Producer p;
  ctorch_tensor t = NULL;
  ctorch_dtype dt;
  unsigned char back[6];
  ctorch_tensor row = NULL;
  producer_init(&p, flags, CTORCH_DLPACK_BOOL_CODE, 8, 2, shape, NULL, 0);
  CT_OK(ctorch_from_dlpack(&t, &p.m));
  CT_OK(ctorch_tensor_dtype(&dt, t));
  ck_assert_int_eq(dt, CTORCH_BOOL);
  CT_OK(ctorch_tensor_strides(st, 2, t));
  ck_assert_int_eq(st[0], 3);
  ck_assert_int_eq(st[1], 1);
  /* Round trip back out: still bool, still the same memory. */
  {
    DLManagedTensor *m = NULL;
    CT_OK(ctorch_to_dlpack(&m, t));
    ck_assert_int_eq(m->dl_tensor.dtype.code, CTORCH_DLPACK_BOOL_CODE);
    ck_assert_ptr_eq(m->dl_tensor.data, flags);
    CT_OK(ctorch_from_dlpack(&row, m));
    CT_OK(ctorch_tensor_copy_to(back, sizeof back, row));
    ck_assert_mem_eq(back, flags, sizeof flags);
    ctorch_tensor_free(row);
  }
  ctorch_tensor_free(t);
  ck_assert_int_eq(p.deleted, 1);
}
END_TEST

START_TEST(malformed_input_is_rejected_and_not_owned) {
  float data[4] = {1, 2, 3, 4};
  int64_t shape[2] = {2, 2}, neg[2] = {2, -1}, neg_st[2] = {-2, 1};
  Producer p;
  ctorch_tensor t = (ctorch_tensor)0x1;

#define EXPECT_REJECT(status, needle)                 \
  do {                                                \
    t = (ctorch_tensor)0x1;                           \
    CT_FAILS(status, ctorch_from_dlpack(&t, &p.m));   \
    ck_assert_ptr_null(t);                            \
    CT_ERROR_HAS("ctorch_from_dlpack");               \
    CT_ERROR_HAS(needle);                             \
    ck_assert_int_eq(p.deleted, 0);                   \
  } while (0)

  producer_init(&p, NULL, kDLFloat, 32, 2, shape, NULL, 0);
  EXPECT_REJECT(CTORCH_INVALID_ARGUMENT, "data is NULL");
  producer_init(&p, data, kDLFloat, 32, -1, shape, NULL, 0);
  EXPECT_REJECT(CTORCH_INVALID_ARGUMENT, "ndim");
  producer_init(&p, data, kDLFloat, 32, 2, shape, NULL, 0);
  p.m.dl_tensor.shape = NULL;
  EXPECT_REJECT(CTORCH_INVALID_ARGUMENT, "shape is NULL");
  producer_init(&p, data, kDLFloat, 32, 2, neg, NULL, 0);
  EXPECT_REJECT(CTORCH_INVALID_ARGUMENT, "negative");
  producer_init(&p, data, kDLFloat, 32, 2, shape, neg_st, 0);
  EXPECT_REJECT(CTORCH_INVALID_ARGUMENT, "strides");
  producer_init(&p, data, 42, 32, 2, shape, NULL, 0);
  EXPECT_REJECT(CTORCH_TYPE, "code 42");
  producer_init(&p, data, kDLFloat, 24, 2, shape, NULL, 0);
  EXPECT_REJECT(CTORCH_TYPE, "bits 24");
  producer_init(&p, data, kDLOpaqueHandle, 64, 2, shape, NULL, 0);
  EXPECT_REJECT(CTORCH_TYPE, "dtype");
  producer_init(&p, data, kDLFloat, 32, 2, shape, NULL, 0);
  p.m.dl_tensor.dtype.lanes = 4;
  EXPECT_REJECT(CTORCH_TYPE, "lanes");
  producer_init(&p, data, kDLFloat, 32, 2, shape, NULL, 0);
  p.m.dl_tensor.device.device_type = kDLVulkan;
  EXPECT_REJECT(CTORCH_NOT_IMPLEMENTED, "device");
  producer_init(&p, data, kDLFloat, 32, 2, shape, NULL, 0);
  p.m.deleter = NULL;
  EXPECT_REJECT(CTORCH_INVALID_ARGUMENT, "deleter");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_from_dlpack(&t, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_from_dlpack(NULL, &p.m));

  /* After all those failures the caller still owns a valid struct. */
  producer_init(&p, data, kDLFloat, 32, 2, shape, NULL, 0);
  CT_OK(ctorch_from_dlpack(&t, &p.m));
  ctorch_tensor_free(t);
  ck_assert_int_eq(p.deleted, 1);

  /* NULL data is fine when there are no elements. */
  {
    int64_t empty[2] = {0, 3};
    producer_init(&p, NULL, kDLFloat, 32, 2, empty, NULL, 0);
    CT_OK(ctorch_from_dlpack(&t, &p.m));
    ctorch_tensor_free(t);
    ck_assert_int_eq(p.deleted, 1);
  }
#undef EXPECT_REJECT
}
END_TEST

START_TEST(versioned_matches_the_installed_headers) {
  float v[1] = {1};
  int64_t s[1] = {1};
  ctorch_tensor t = ct_floats(v, s, 1), u = (ctorch_tensor)0x1;
  struct DLManagedTensorVersioned *m = (struct DLManagedTensorVersioned *)0x1;
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
  CT_OK(ctorch_to_dlpack_versioned(&m, t));
  CT_OK(ctorch_from_dlpack_versioned(&u, m));
  ctorch_tensor_free(u);
#else
  /* DLPack 0.6 (Debian 12) has no versioned struct: a clear status. */
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_to_dlpack_versioned(&m, t));
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("DLManagedTensorVersioned");
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_from_dlpack_versioned(&u, NULL));
  ck_assert_ptr_null(u);
#endif
  ctorch_tensor_free(t);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("dlpack");
  TCase *tc = tcase_create("dlpack");
  tcase_add_test(tc, every_dtype_round_trips_zero_copy);
  tcase_add_test(tc, newer_dtypes_follow_the_libtorch_version);
  tcase_add_test(tc, export_keeps_tensor_alive_and_shares_writes);
  tcase_add_test(tc, export_non_contiguous_zero_dim_and_empty);
  tcase_add_test(tc, import_zero_copy_byte_offset_and_single_delete);
  tcase_add_test(tc, import_contiguous_default_strides_and_bool);
  tcase_add_test(tc, malformed_input_is_rejected_and_not_owned);
  tcase_add_test(tc, versioned_matches_the_installed_headers);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
