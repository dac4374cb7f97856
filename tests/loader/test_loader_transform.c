/* The loader's transform stage (ctorch_data_loader_set_transform and
 * _set_transform_fn): float conversion, per-item work on the worker threads,
 * references and user data, and every failure (bad handles, failing
 * callbacks in workers, wrong dtypes, items that do not collate). The
 * comparison with torch's DataLoader is transform_vs_torch.py. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>

#include "../check_main.h"

enum { N = 10, H = 4, W = 3 };

/* uint8 images [N, H, W]: pixel k of image i is (i * 29 + k * 11) % 256; labels i. */
static void make_data(ctorch_tensor *x, ctorch_tensor *y) {
  uint8_t px[N * H * W];
  int64_t lb[N], sx[3] = {N, H, W}, sy[1] = {N};
  int i, k;
  for (i = 0; i < N; ++i) {
    lb[i] = i;
    for (k = 0; k < H * W; ++k) px[i * H * W + k] = (uint8_t)((i * 29 + k * 11) % 256);
  }
  CT_OK(ctorch_tensor_from_data(x, px, sizeof px, sx, 3, CTORCH_UINT8));
  CT_OK(ctorch_tensor_from_data(y, lb, sizeof lb, sy, 1, CTORCH_INT64));
}

static ctorch_data_loader make_loader(int64_t batch, int shuffle) {
  ctorch_tensor x = NULL, y = NULL;
  ctorch_data_loader l = NULL;
  make_data(&x, &y);
  CT_OK(ctorch_data_loader_new(&l, x, y, batch, shuffle, 5, 0));
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  return l;
}

static ctorch_transform to_float(void) {
  ctorch_transform t = NULL;
  CT_OK(ctorch_transform_convert_image_dtype(&t, CTORCH_FLOAT32));
  return t;
}

/* What the callbacks saw. */
static pthread_t g_main;
static int g_calls, g_off_main, g_freed, g_fail_at = -1;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static ctorch_status count_calls(void *ud, int64_t index, ctorch_tensor data, ctorch_tensor target,
                                 ctorch_tensor *data_out, ctorch_tensor *target_out) {
  (void)ud;
  (void)target;
  (void)target_out;
  pthread_mutex_lock(&g_mu);
  ++g_calls;
  if (!pthread_equal(pthread_self(), g_main)) ++g_off_main;
  pthread_mutex_unlock(&g_mu);
  if (index == g_fail_at) return CTORCH_VALUE;
  *data_out = data;
  return CTORCH_OK;
}

static void count_free(void *ud) {
  ck_assert_ptr_eq(ud, &g_freed);
  ++g_freed;
}

/* Every batch of one epoch is float32 [b, 1, H, W] equal to the uint8 pixels / 255. */
static void check_float_epoch(ctorch_data_loader l, int64_t batch) {
  int has = 1, seen = 0;
  CT_OK(ctorch_data_loader_start_epoch(l, 0));
  for (;;) {
    ctorch_tensor x = NULL, y = NULL;
    int64_t sizes[4], dim = 0, b, k, *lb;
    ctorch_dtype dt;
    float *p;
    CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
    if (!has) break;
    CT_OK(ctorch_tensor_dtype(&dt, x));
    ck_assert_int_eq(dt, CTORCH_FLOAT32);
    CT_OK(ctorch_tensor_dim(&dim, x));
    ck_assert_int_eq(dim, 4);
    CT_OK(ctorch_tensor_sizes(sizes, 4, x));
    ck_assert_int_eq(sizes[1], 1);
    ck_assert_int_eq(sizes[2], H);
    ck_assert_int_eq(sizes[3], W);
    ck_assert_int_le(sizes[0], batch);
    CT_OK(ctorch_tensor_data_ptr((void **)&p, x));
    CT_OK(ctorch_tensor_data_ptr((void **)&lb, y));
    for (b = 0; b < sizes[0]; ++b)
      for (k = 0; k < H * W; ++k)
        ck_assert_float_eq(p[b * H * W + k], (float)((lb[b] * 29 + k * 11) % 256) / 255.0f);
    seen += (int)sizes[0];
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
  }
  ck_assert_int_eq(seen, N);
}

START_TEST(float_conversion_per_item) {
  ctorch_data_loader l = make_loader(3, 1);
  ctorch_transform t = to_float();
  int w;
  CT_OK(ctorch_data_loader_set_transform(l, t));
  ctorch_transform_free(t); /* the loader keeps its own reference */
  for (w = 0; w <= 3; w += 3) {
    CT_OK(ctorch_data_loader_set_workers(l, w, 2));
    check_float_epoch(l, 3);
  }
  /* NULL removes it: the plain uint8 batches [b, H, W] again. */
  CT_OK(ctorch_data_loader_set_transform(l, NULL));
  {
    int has = 0;
    int64_t dim = 0;
    ctorch_dtype dt;
    ctorch_tensor x = NULL, y = NULL;
    CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
    ck_assert_int_eq(has, 1);
    CT_OK(ctorch_tensor_dtype(&dt, x));
    ck_assert_int_eq(dt, CTORCH_UINT8);
    CT_OK(ctorch_tensor_dim(&dim, x));
    ck_assert_int_eq(dim, 3);
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
  }
  ctorch_data_loader_free(l);
}
END_TEST

START_TEST(callback_runs_on_workers) {
  ctorch_data_loader l = make_loader(4, 0);
  g_main = pthread_self();
  g_calls = g_off_main = g_freed = 0;
  g_fail_at = -1;
  {
    ctorch_transform t = to_float();
    CT_OK(ctorch_data_loader_set_transform(l, t));
    ctorch_transform_free(t);
  }
  CT_OK(ctorch_data_loader_set_transform_fn(l, count_calls, &g_freed, count_free));
  CT_OK(ctorch_data_loader_set_workers(l, 2, 1));
  check_float_epoch(l, 4);
  ck_assert_int_eq(g_calls, N);      /* once per item */
  ck_assert_int_eq(g_off_main, N);   /* none on the caller's thread */
  ck_assert_int_eq(g_freed, 0);
  /* Replacing the callback frees the old user data once; 0 workers: the caller's thread. */
  CT_OK(ctorch_data_loader_set_transform_fn(l, count_calls, &g_freed, count_free));
  ck_assert_int_eq(g_freed, 1);
  CT_OK(ctorch_data_loader_set_workers(l, 0, 2));
  g_calls = g_off_main = 0;
  check_float_epoch(l, 4);
  ck_assert_int_eq(g_calls, N);
  ck_assert_int_eq(g_off_main, 0);
  /* Removing it frees the user data given with NULL at once, and the old one. */
  CT_OK(ctorch_data_loader_set_transform_fn(l, NULL, &g_freed, count_free));
  ck_assert_int_eq(g_freed, 3);
  CT_OK(ctorch_data_loader_set_transform_fn(l, count_calls, &g_freed, count_free));
  ctorch_data_loader_free(l);
  ck_assert_int_eq(g_freed, 4);
}
END_TEST

START_TEST(failing_callback_in_worker) {
  int w;
  for (w = 0; w <= 2; w += 2) {
    ctorch_data_loader l = make_loader(2, 0); /* batches {0,1} {2,3} {4,5} ... */
    int has = 0, batches = 0;
    ctorch_tensor x = NULL, y = NULL;
    g_main = pthread_self();
    g_fail_at = 5;
    CT_OK(ctorch_data_loader_set_transform_fn(l, count_calls, NULL, NULL));
    CT_OK(ctorch_data_loader_set_workers(l, w, 2));
    CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
    CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
    CT_FAILS(CTORCH_VALUE, ctorch_data_loader_next(&has, &x, &y, l));
    CT_ERROR_HAS("ctorch_data_loader_next");
    CT_ERROR_HAS("dataset item 5");
    CT_ERROR_HAS("transform_fn returned CTORCH_VALUE");
    ck_assert_int_eq(has, 0);
    ck_assert_ptr_null(x);
    /* The epoch goes on with the next batch, and ends. */
    for (;;) {
      CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
      if (!has) break;
      ++batches;
      ctorch_tensor_free(x);
      ctorch_tensor_free(y);
    }
    ck_assert_int_eq(batches, 2);
    ctorch_data_loader_free(l);
  }
  g_fail_at = -1;
}
END_TEST

/* A callback whose ctorch call fails: its message follows. */
static ctorch_status bad_op(void *ud, int64_t index, ctorch_tensor data, ctorch_tensor target,
                            ctorch_tensor *data_out, ctorch_tensor *target_out) {
  (void)ud;
  (void)index;
  (void)data;
  (void)target_out;
  return ctorch_mm(data_out, target, target); /* a 0-dim target: mm refuses */
}

static ctorch_status writes_nothing(void *ud, int64_t index, ctorch_tensor data, ctorch_tensor target,
                                    ctorch_tensor *data_out, ctorch_tensor *target_out) {
  (void)ud;
  (void)index;
  (void)data;
  (void)target;
  (void)data_out;
  (void)target_out;
  return CTORCH_OK;
}

/* Item 3 comes out a different shape: collate refuses it. */
static ctorch_status odd_item(void *ud, int64_t index, ctorch_tensor data, ctorch_tensor target,
                              ctorch_tensor *data_out, ctorch_tensor *target_out) {
  (void)ud;
  (void)target;
  (void)target_out;
  if (index != 3) {
    *data_out = data;
    return CTORCH_OK;
  }
  return ctorch_tensor_ref(data_out, target);
}

/* A target where the dataset has none. */
static ctorch_status adds_target(void *ud, int64_t index, ctorch_tensor data, ctorch_tensor target,
                                 ctorch_tensor *data_out, ctorch_tensor *target_out) {
  (void)ud;
  (void)index;
  (void)target;
  *data_out = data;
  return ctorch_tensor_ref(target_out, data);
}

static void expect_next_fails(ctorch_data_loader l, ctorch_status want, const char *a, const char *b) {
  int has = 1;
  ctorch_tensor x = NULL, y = NULL;
  CT_FAILS(want, ctorch_data_loader_next(&has, &x, &y, l));
  CT_ERROR_HAS("ctorch_data_loader_next");
  CT_ERROR_HAS(a);
  CT_ERROR_HAS(b);
  ck_assert_int_eq(has, 0);
}

START_TEST(callback_errors) {
  ctorch_data_loader l = make_loader(4, 0);
  CT_OK(ctorch_data_loader_set_workers(l, 2, 2));
  CT_OK(ctorch_data_loader_set_transform_fn(l, bad_op, NULL, NULL));
  expect_next_fails(l, CTORCH_RUNTIME, "dataset item 0: the loader's transform_fn returned", "mm");
  CT_OK(ctorch_data_loader_set_transform_fn(l, writes_nothing, NULL, NULL));
  expect_next_fails(l, CTORCH_VALUE, "dataset item 0", "wrote no data");
  CT_OK(ctorch_data_loader_set_transform_fn(l, odd_item, NULL, NULL));
  expect_next_fails(l, CTORCH_TYPE, "dataset item 3", "the first of its batch");
  ctorch_data_loader_free(l);
  {
    ctorch_tensor x = NULL, y = NULL;
    ctorch_dataset ds = NULL;
    make_data(&x, &y);
    CT_OK(ctorch_dataset_from_tensors(&ds, x, NULL));
    CT_OK(ctorch_data_loader_from_dataset(&l, ds, 4, 0, 0, 0));
    CT_OK(ctorch_data_loader_set_transform_fn(l, adds_target, NULL, NULL));
    expect_next_fails(l, CTORCH_VALUE, "wrote a target", "the dataset has none");
    ctorch_data_loader_free(l);
    ctorch_dataset_free(ds);
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
  }
}
END_TEST

START_TEST(wrong_dtype_and_rank) {
  ctorch_data_loader l = make_loader(4, 1);
  ctorch_transform norm = NULL, t = NULL;
  const double m[1] = {0.5}, s[1] = {0.5};
  int64_t one = 1;
  ctorch_tensor mt = NULL, st = NULL;
  CT_OK(ctorch_tensor_from_data(&mt, m, sizeof m, &one, 1, CTORCH_FLOAT64));
  CT_OK(ctorch_tensor_from_data(&st, s, sizeof s, &one, 1, CTORCH_FLOAT64));
  CT_OK(ctorch_transform_normalize(&norm, mt, st));
  /* normalize on the uint8 items (no conversion first): TYPE, in a worker too. */
  CT_OK(ctorch_data_loader_set_transform(l, norm));
  CT_OK(ctorch_data_loader_set_workers(l, 2, 2));
  expect_next_fails(l, CTORCH_TYPE, "dataset item", "normalize needs a floating point batch");
  /* With the conversion first it works. */
  {
    ctorch_transform parts[2] = {to_float(), norm};
    int has = 0;
    ctorch_tensor x = NULL, y = NULL;
    CT_OK(ctorch_transform_compose(&t, parts, 2));
    ctorch_transform_free(parts[0]);
    CT_OK(ctorch_data_loader_set_transform(l, t));
    CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
    ck_assert_int_eq(has, 1);
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
  }
  ctorch_data_loader_free(l);
  /* Items of rank 1 are no images. */
  {
    ctorch_tensor x = NULL;
    float v[6] = {0};
    int64_t sz[2] = {6, 1};
    x = ct_floats(v, sz, 1);
    CT_OK(ctorch_data_loader_new(&l, x, NULL, 2, 0, 0, 0));
    CT_OK(ctorch_data_loader_set_transform(l, t));
    expect_next_fails(l, CTORCH_VALUE, "dataset item 0", "needs an image [C, H, W] or [H, W], got 0 dimensions");
    ctorch_data_loader_free(l);
    ctorch_tensor_free(x);
  }
  ctorch_transform_free(t);
  ctorch_transform_free(norm);
  ctorch_tensor_free(mt);
  ctorch_tensor_free(st);
}
END_TEST

START_TEST(bad_handles) {
  ctorch_data_loader l = make_loader(4, 0);
  ctorch_transform t = to_float(), freed = to_float();
  int freed_ud = 0;
  ctorch_transform_free(freed);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_transform(NULL, t));
  CT_ERROR_HAS("ctorch_data_loader_set_transform");
  CT_ERROR_HAS("loader");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_transform(l, freed));
  CT_ERROR_HAS("'t'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_transform(l, (ctorch_transform)(void *)l));
  CT_ERROR_HAS("'t'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_transform((ctorch_data_loader)(void *)t, t));
  CT_ERROR_HAS("loader");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_transform_fn(NULL, count_calls, NULL, NULL));
  CT_ERROR_HAS("ctorch_data_loader_set_transform_fn");
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_data_loader_set_transform_fn((ctorch_data_loader)(void *)t, count_calls, NULL, NULL));
  /* A bad loader: the user data stays the caller's (not freed). */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_transform_fn(NULL, count_calls, &freed_ud, NULL));
  ck_assert_int_eq(freed_ud, 0);
  /* The loader is unchanged by the failures: uint8 batches. */
  {
    int has = 0;
    ctorch_dtype dt;
    ctorch_tensor x = NULL, y = NULL;
    CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
    CT_OK(ctorch_tensor_dtype(&dt, x));
    ck_assert_int_eq(dt, CTORCH_UINT8);
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
  }
  ctorch_transform_free(t);
  ctorch_data_loader_free(l);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("loader_transform");
  TCase *tc = tcase_create("transform");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, float_conversion_per_item);
  tcase_add_test(tc, callback_runs_on_workers);
  tcase_add_test(tc, failing_callback_in_worker);
  tcase_add_test(tc, callback_errors);
  tcase_add_test(tc, wrong_dtype_and_rank);
  tcase_add_test(tc, bad_handles);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
