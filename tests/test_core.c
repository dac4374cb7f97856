/* The hand-written core: success and failure paths of every function. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"

static const int64_t k23[2] = {2, 3};
static const float k6[6] = {1, 2, 3, 4, 5, 6};

START_TEST(versions) {
  const char *v = NULL, *tv = NULL;
  char want[32];
  CT_OK(ctorch_version(&v));
  /* The library's version is the header's (one version, CMakeLists.txt's project()). */
  snprintf(want, sizeof want, "%d.%d.%d", CTORCH_VERSION_MAJOR, CTORCH_VERSION_MINOR, CTORCH_VERSION_PATCH);
  ck_assert_str_eq(v, want);
  CT_OK(ctorch_torch_version(&tv));
  ck_assert_msg(tv[0] >= '1' && tv[0] <= '9' && strchr(tv, '.'), "odd torch version %s", tv);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_version(NULL));
  CT_ERROR_HAS("ctorch_version");
  CT_ERROR_HAS("'out'");
}
END_TEST

START_TEST(status_names) {
  ck_assert_str_eq(ctorch_status_name(CTORCH_OK), "CTORCH_OK");
  ck_assert_str_eq(ctorch_status_name(CTORCH_LINALG), "CTORCH_LINALG");
  ck_assert_str_eq(ctorch_status_name((ctorch_status)99), "CTORCH_?");
}
END_TEST

START_TEST(from_data_and_metadata) {
  ctorch_tensor t = ct_floats(k6, k23, 2);
  int64_t dim = 0, numel = 0, sizes[4] = {0}, strides[4] = {0};
  ctorch_dtype dt;
  ctorch_device dev = {99, 99};
  ctorch_layout lay = (ctorch_layout)99;
  int contig = -1, rg = -1;
  void *p = NULL;
  float back[6] = {0};

  CT_OK(ctorch_tensor_dim(&dim, t));
  ck_assert_int_eq(dim, 2);
  CT_OK(ctorch_tensor_numel(&numel, t));
  ck_assert_int_eq(numel, 6);
  CT_OK(ctorch_tensor_sizes(sizes, 4, t));
  ck_assert_int_eq(sizes[0], 2);
  ck_assert_int_eq(sizes[1], 3);
  CT_OK(ctorch_tensor_strides(strides, 2, t));
  ck_assert_int_eq(strides[0], 3);
  ck_assert_int_eq(strides[1], 1);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_sizes(sizes, 1, t));
  CT_ERROR_HAS("cap");
  CT_OK(ctorch_tensor_dtype(&dt, t));
  ck_assert_int_eq(dt, CTORCH_FLOAT32);
  CT_OK(ctorch_tensor_device(&dev, t));
  ck_assert_int_eq(dev.type, CTORCH_DEVICE_CPU);
  CT_OK(ctorch_tensor_layout(&lay, t));
  ck_assert_int_eq(lay, CTORCH_LAYOUT_STRIDED);
  CT_OK(ctorch_tensor_is_contiguous(&contig, t));
  ck_assert_int_eq(contig, 1);
  CT_OK(ctorch_tensor_requires_grad(&rg, t));
  ck_assert_int_eq(rg, 0);
  CT_OK(ctorch_tensor_data_ptr(&p, t));
  ck_assert_float_eq(((float *)p)[5], 6.0f);
  CT_OK(ctorch_tensor_copy_to(back, sizeof back, t));
  ck_assert_mem_eq(back, k6, sizeof k6);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_copy_to(back, sizeof back - 1, t));
  CT_ERROR_HAS("dst_bytes");
  ctorch_tensor_free(t);
}
END_TEST

START_TEST(from_data_rejects_bad_input) {
  ctorch_tensor t = (ctorch_tensor)0x1;
  int64_t neg[2] = {2, -3};
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_from_data(&t, k6, sizeof k6 - 4, k23, 2, CTORCH_FLOAT32));
  ck_assert_ptr_null(t);
  CT_ERROR_HAS("ctorch_tensor_from_data");
  CT_ERROR_HAS("nbytes");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_from_data(&t, k6, sizeof k6, k23, 2, (ctorch_dtype)0));
  CT_ERROR_HAS("dtype");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_from_data(&t, k6, sizeof k6, k23, 2, (ctorch_dtype)1234));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_from_data(&t, k6, sizeof k6, NULL, 2, CTORCH_FLOAT32));
  CT_ERROR_HAS("sizes");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_from_data(&t, NULL, sizeof k6, k23, 2, CTORCH_FLOAT32));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_from_data(&t, k6, sizeof k6, neg, 2, CTORCH_FLOAT32));
  CT_ERROR_HAS("negative");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_from_data(NULL, k6, sizeof k6, k23, 2, CTORCH_FLOAT32));
}
END_TEST

START_TEST(zero_dim_and_items) {
  double d = 2.5, dv = 0;
  int64_t iv = 0, dim = -1;
  int bv = -1;
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_from_data(&t, &d, sizeof d, NULL, 0, CTORCH_FLOAT64));
  CT_OK(ctorch_tensor_dim(&dim, t));
  ck_assert_int_eq(dim, 0);
  CT_OK(ctorch_tensor_item_double(&dv, t));
  ck_assert_double_eq(dv, 2.5);
  CT_OK(ctorch_tensor_item_int64(&iv, t));
  ck_assert_int_eq(iv, 2);
  CT_OK(ctorch_tensor_item_bool(&bv, t));
  ck_assert_int_eq(bv, 1);
  ctorch_tensor_free(t);
  t = ct_floats(k6, k23, 2);
  CT_FAILS(CTORCH_RUNTIME, ctorch_tensor_item_double(&dv, t));
  CT_ERROR_HAS("ctorch_tensor_item_double");
  ctorch_tensor_free(t);
}
END_TEST

static int released;
static void on_release(void *ctx) { released += *(int *)ctx; }

START_TEST(from_blob_zero_copy) {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  int64_t strides[2] = {1, 2}; /* column-major view */
  int one = 1;
  ctorch_tensor t = NULL, c = NULL;
  void *p = NULL;
  float back[6];
  int contig = 1;
  released = 0;
  CT_OK(ctorch_tensor_from_blob(&t, buf, k23, NULL, 2, CTORCH_FLOAT32, ctorch_device_cpu(), on_release, &one));
  CT_OK(ctorch_tensor_data_ptr(&p, t));
  ck_assert_ptr_eq(p, buf);
  buf[0] = 42; /* visible through the tensor */
  CT_OK(ctorch_tensor_copy_to(back, sizeof back, t));
  ck_assert_float_eq(back[0], 42.0f);
  ck_assert_int_eq(released, 0);
  ctorch_tensor_free(t);
  ck_assert_int_eq(released, 1);

  CT_OK(ctorch_tensor_from_blob(&t, buf, k23, strides, 2, CTORCH_FLOAT32, ctorch_device_cpu(), on_release, &one));
  CT_OK(ctorch_tensor_is_contiguous(&contig, t));
  ck_assert_int_eq(contig, 0);
  CT_OK(ctorch_tensor_contiguous(&c, t));
  CT_OK(ctorch_tensor_copy_to(back, sizeof back, c));
  ck_assert_float_eq(back[1], 3.0f); /* element (0,1) = buf[2] */
  ctorch_tensor_free(t); /* c is an independent copy: the blob goes now */
  ck_assert_int_eq(released, 2);
  ctorch_tensor_free(c);
  ck_assert_int_eq(released, 2);

  /* bad strides (libtorch itself would abort the process on these): a
   * status, the callback not run, the caller keeps the memory */
  {
    int64_t neg_strides[2] = {-1, 2};
    int64_t huge_strides[2] = {INT64_MAX / 2, 1};
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_from_blob(&t, buf, k23, neg_strides, 2, CTORCH_FLOAT32,
                                                              ctorch_device_cpu(), on_release, &one));
    CT_ERROR_HAS("negative");
    ck_assert_ptr_null(t);
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_from_blob(&t, buf, k23, huge_strides, 2, CTORCH_FLOAT32,
                                                              ctorch_device_cpu(), on_release, &one));
    ck_assert_int_eq(released, 2);
  }
  /* failure: callback not run, caller keeps the memory */
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_tensor_from_blob(&t, buf, k23, NULL, 2, (ctorch_dtype)77, ctorch_device_cpu(), on_release, &one));
  ck_assert_int_eq(released, 2);
  {
    ctorch_device bad = {42, 0};
    CT_FAILS(CTORCH_INVALID_ARGUMENT,
             ctorch_tensor_from_blob(&t, buf, k23, NULL, 2, CTORCH_FLOAT32, bad, on_release, &one));
    CT_ERROR_HAS("ctorch_device_type");
  }
}
END_TEST

START_TEST(conversions) {
  ctorch_tensor t = ct_floats(k6, k23, 2), d = NULL, same = NULL, cl = NULL, r = NULL;
  ctorch_dtype dt;
  void *p1 = NULL, *p2 = NULL;
  int64_t back[6];
  CT_OK(ctorch_tensor_to_dtype(&d, t, CTORCH_INT64));
  CT_OK(ctorch_tensor_dtype(&dt, d));
  ck_assert_int_eq(dt, CTORCH_INT64);
  CT_OK(ctorch_tensor_copy_to(back, sizeof back, d));
  ck_assert_int_eq(back[5], 6);
  ctorch_tensor_free(d);
  d = NULL;
  CT_OK(ctorch_tensor_to_device(&same, t, ctorch_device_cpu()));
  CT_ASSERT_SAME(same, t); /* no-op conversion returns a new reference to t */
  CT_OK(ctorch_tensor_clone(&cl, t));
  CT_OK(ctorch_tensor_data_ptr(&p1, t));
  CT_OK(ctorch_tensor_data_ptr(&p2, cl));
  ck_assert_ptr_ne(p1, p2);
  CT_OK(ctorch_tensor_ref(&r, t));
  CT_ASSERT_SAME(r, t);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_to_dtype(&d, t, (ctorch_dtype)-5));
  ck_assert_ptr_null(d);
  {
    ctorch_device bad = {CTORCH_DEVICE_CPU, -7};
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_to_device(&d, t, bad));
  }
  ctorch_tensor_free(r);
  ctorch_tensor_free(same);
  ctorch_tensor_free(cl);
  ctorch_tensor_free(t);
}
END_TEST

START_TEST(to_string) {
  ctorch_tensor t = ct_floats(k6, k23, 2);
  char *s = NULL;
  CT_OK(ctorch_tensor_to_string(&s, t));
  ck_assert_ptr_nonnull(strstr(s, "6"));
  ck_assert_ptr_nonnull(strstr(s, "Float"));
  ctorch_string_free(s);
  ctorch_tensor_free(t);
}
END_TEST

START_TEST(null_handles_everywhere) {
  int64_t i64;
  int iv;
  double dv;
  void *p;
  ctorch_dtype dt;
  ctorch_device dev;
  ctorch_layout lay;
  ctorch_tensor out = NULL;
  char *s = NULL;
  float buf[1];
  size_t n;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dim(&i64, NULL));
  CT_ERROR_HAS("ctorch_tensor_dim: argument 't'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_numel(&i64, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_sizes(&i64, 1, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_strides(&i64, 1, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dtype(&dt, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_device(&dev, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_layout(&lay, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_is_contiguous(&iv, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_data_ptr(&p, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_requires_grad(&iv, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_item_double(&dv, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_item_int64(&i64, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_item_bool(&iv, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_to_dtype(&out, NULL, CTORCH_FLOAT32));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_to_device(&out, NULL, ctorch_device_cpu()));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_clone(&out, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_contiguous(&out, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_ref(&out, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_to_string(&s, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_copy_to(buf, sizeof buf, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_list_size(&n, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_list_get(&out, NULL, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_generator_set_seed(NULL, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dtype_size(&n, (ctorch_dtype)0));
  /* NULL out-pointers too */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dim(NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_get_num_threads(NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_cuda_is_available(NULL));
  /* frees are NULL-safe */
  ctorch_tensor_free(NULL);
  ctorch_tensor_list_free(NULL);
  ctorch_generator_free(NULL);
  ctorch_string_free(NULL);
}
END_TEST

START_TEST(threads_and_seed) {
  int n = 0, avail = -1, count = -1;
  size_t sz = 0;
  ctorch_generator g = NULL;
  CT_OK(ctorch_set_num_threads(1));
  CT_OK(ctorch_get_num_threads(&n));
  ck_assert_int_eq(n, 1);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_set_num_threads(0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_set_num_interop_threads(-1));
  CT_OK(ctorch_get_num_interop_threads(&n));
  ck_assert_int_ge(n, 1);
  CT_OK(ctorch_manual_seed(123));
  CT_OK(ctorch_cuda_is_available(&avail));
  ck_assert(avail == 0 || avail == 1);
  CT_OK(ctorch_cuda_device_count(&count));
  ck_assert(avail ? count > 0 : count == 0);
  CT_OK(ctorch_dtype_size(&sz, CTORCH_FLOAT64));
  ck_assert_int_eq(sz, 8);
  CT_OK(ctorch_dtype_size(&sz, CTORCH_BOOL));
  ck_assert_int_eq(sz, 1);
  CT_OK(ctorch_generator_new(&g, ctorch_device_cpu(), 7));
  CT_OK(ctorch_generator_set_seed(g, 8));
  ctorch_generator_free(g);
  {
    ctorch_device meta = {CTORCH_DEVICE_META, -1};
    CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_generator_new(&g, meta, 1));
  }
}
END_TEST

/* Errors are per thread: a failure on one thread is invisible on another. */
static void *fail_in_thread(void *arg) {
  int64_t d;
  (void)arg;
  if (ctorch_tensor_dim(&d, NULL) != CTORCH_INVALID_ARGUMENT) return (void *)1;
  if (!strstr(ctorch_last_error(), "ctorch_tensor_dim")) return (void *)2;
  return NULL;
}

START_TEST(errors_are_thread_local) {
  pthread_t th;
  void *res = (void *)99;
  size_t sz;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dtype_size(&sz, (ctorch_dtype)55));
  ck_assert_int_eq(pthread_create(&th, NULL, fail_in_thread, NULL), 0);
  ck_assert_int_eq(pthread_join(th, &res), 0);
  ck_assert_ptr_null(res);
  CT_ERROR_HAS("ctorch_dtype_size"); /* not the other thread's message */
  ck_assert_ptr_null(strstr(ctorch_last_error(), "ctorch_tensor_dim"));
}
END_TEST

/* libtorch's C++ backtrace is built only when asked (compat.h,
 * CTORCH_COMPAT_EAGER_ERROR_BACKTRACE; 1.13 symbolised one per failing call,
 * 14 ms each): the text must still be there, in c10's format, for an error
 * raised on this thread and for one raised on an intra-op worker (index_select
 * over 200,000 indices checks them inside at::parallel_for), and a ctorch-level
 * error's backtrace is its message. */
static void check_backtrace(const char *what) {
  const char *bt = ctorch_last_error_backtrace();
  char *copy = strdup(bt);
  ck_assert_msg(strncmp(bt, ctorch_last_error(), strlen(ctorch_last_error())) == 0, "%s: %s", what, bt);
  ck_assert_msg(strstr(bt, "Exception raised from ") != NULL, "%s: %s", what, bt);
  ck_assert_msg(strstr(bt, "\nframe #0: ") && strstr(bt, "\nframe #1: "), "%s: %s", what, bt);
  ck_assert_msg(strstr(bt, "(ctorch: C++ frames #") == NULL && strstr(bt, "no longer kept") == NULL, "%s: %s", what, bt);
  ck_assert_ptr_null(strstr(ctorch_last_error(), "frame #"));
  ck_assert_str_eq(ctorch_last_error_backtrace(), copy); /* built once, kept */
  free(copy);
}

START_TEST(libtorch_backtrace_on_demand) {
  int64_t s2 = 2, s3 = 3, ws[2] = {4, 64}, n = 200000;
  const ctorch_dtype i64 = CTORCH_INT64;
  ctorch_tensor a = NULL, b = NULL, c = NULL, w = NULL, idx = NULL;
  int64_t *p = NULL;
  int threads = 0;
  size_t sz;
  CT_OK(ctorch_zeros(&a, &s2, 1, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_zeros(&b, &s3, 1, NULL, NULL, NULL, NULL));
  CT_FAILS(CTORCH_RUNTIME, ctorch_add_Tensor(&c, a, b, ctorch_scalar_int(1)));
  check_backtrace("add");
  CT_OK(ctorch_get_num_threads(&threads));
  CT_OK(ctorch_set_num_threads(2));
  CT_OK(ctorch_zeros(&w, ws, 2, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_zeros(&idx, &n, 1, &i64, NULL, NULL, NULL));
  CT_OK(ctorch_tensor_data_ptr((void **)&p, idx));
  p[n - 5] = 7;
  CT_FAILS(CTORCH_INDEX, ctorch_index_select(&c, w, 0, idx));
  check_backtrace("index_select");
  CT_OK(ctorch_set_num_threads(threads));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dtype_size(&sz, (ctorch_dtype)55));
  ck_assert_str_eq(ctorch_last_error_backtrace(), ctorch_last_error());
  ctorch_tensor_free(a), ctorch_tensor_free(b), ctorch_tensor_free(w), ctorch_tensor_free(idx);
}
END_TEST

static void *fresh_thread(void *arg) {
  (void)arg;
  return ctorch_last_error()[0] == 0 && ctorch_last_error_backtrace()[0] == 0 ? NULL : arg;
}

START_TEST(fresh_thread_has_empty_error) {
  pthread_t th;
  void *res = (void *)99;
  ck_assert_int_eq(pthread_create(&th, NULL, fresh_thread, (void *)k6), 0);
  ck_assert_int_eq(pthread_join(th, &res), 0);
  ck_assert_ptr_null(res);
}
END_TEST

START_TEST(huge_allocation_is_oom) {
  /* A 2^50-element view over a small buffer (never read), converted to
   * float64: the 8 PiB allocation fails first, as a plain c10::Error that
   * must surface as OUT_OF_MEMORY, and the process goes on. */
  static float cell;
  int64_t sizes[1] = {(int64_t)1 << 50};
  int64_t strides[1] = {0};
  ctorch_tensor t = NULL, d = (ctorch_tensor)0x1;
  CT_OK(ctorch_tensor_from_blob(&t, &cell, sizes, strides, 1, CTORCH_FLOAT32, ctorch_device_cpu(), NULL, NULL));
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_tensor_to_dtype(&d, t, CTORCH_FLOAT64));
  ck_assert_ptr_null(d);
  CT_ERROR_HAS("ctorch_tensor_to_dtype");
  ctorch_tensor_free(t);
  /* NULL data with a nonzero size is refused before anything is allocated. */
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_tensor_from_blob(&t, NULL, sizes, NULL, 1, CTORCH_FLOAT32, ctorch_device_cpu(), NULL, NULL));
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("core");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, versions);
  tcase_add_test(tc, status_names);
  tcase_add_test(tc, libtorch_backtrace_on_demand);
  tcase_add_test(tc, from_data_and_metadata);
  tcase_add_test(tc, from_data_rejects_bad_input);
  tcase_add_test(tc, zero_dim_and_items);
  tcase_add_test(tc, from_blob_zero_copy);
  tcase_add_test(tc, conversions);
  tcase_add_test(tc, to_string);
  tcase_add_test(tc, null_handles_everywhere);
  tcase_add_test(tc, threads_and_seed);
  tcase_add_test(tc, errors_are_thread_local);
  tcase_add_test(tc, fresh_thread_has_empty_error);
  tcase_add_test(tc, huge_allocation_is_oom);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
