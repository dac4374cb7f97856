/* The data pipeline: CIFAR binary files, datasets (tensors,
 * files, host callbacks), the distributed order, loaders with worker
 * threads, pin_memory; every new function's success and failure. The
 * comparisons with Python's torch are in loader_vs_torch.py. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "../check_main.h"
#include "../tmp_files.h"

static void setup(void) { ct_tmp_dir_make("loader"); }

/* ---- CIFAR files ---------------------------------------------------- */

/* Record r's label bytes and pixel bytes: pixel j of record r is (r * 31 + j * 7) % 256. */
static unsigned char pixel(int r, int j) { return (unsigned char)((r * 31 + j * 7) % 256); }

/* Writes n records (nlab label bytes each: labels[r * nlab + k]) plus `extra` more bytes. */
static void write_cifar(const char *path, int n, int nlab, const unsigned char *labels, size_t extra) {
  size_t rec = (size_t)nlab + 3072, size = rec * (size_t)n + extra, i;
  unsigned char *b = calloc(size ? size : 1, 1);
  int r, j, k;
  ck_assert_ptr_nonnull(b);
  for (r = 0; r < n; ++r) {
    for (k = 0; k < nlab; ++k) b[rec * r + k] = labels[r * nlab + k];
    for (j = 0; j < 3072; ++j) b[rec * r + nlab + j] = pixel(r, j);
  }
  for (i = 0; i < extra; ++i) b[rec * n + i] = 1;
  ct_write_file(path, b, size);
  free(b);
}

static void check_cifar(ctorch_tensor im, ctorch_tensor lb, int n, const int64_t *want_labels) {
  int64_t sizes[4], dim = 0, i;
  ctorch_dtype dt;
  unsigned char *p;
  int64_t *l;
  CT_OK(ctorch_tensor_dim(&dim, im));
  ck_assert_int_eq(dim, 4);
  CT_OK(ctorch_tensor_sizes(sizes, 4, im));
  ck_assert_int_eq(sizes[0], n);
  ck_assert_int_eq(sizes[1], 3);
  ck_assert_int_eq(sizes[2], 32);
  ck_assert_int_eq(sizes[3], 32);
  CT_OK(ctorch_tensor_dtype(&dt, im));
  ck_assert_int_eq(dt, CTORCH_UINT8);
  CT_OK(ctorch_tensor_dtype(&dt, lb));
  ck_assert_int_eq(dt, CTORCH_INT64);
  CT_OK(ctorch_tensor_data_ptr((void **)&p, im));
  CT_OK(ctorch_tensor_data_ptr((void **)&l, lb));
  for (i = 0; i < n; ++i) {
    int j;
    ck_assert_int_eq(l[i], want_labels[i]);
    for (j = 0; j < 3072; ++j) ck_assert_int_eq(p[i * 3072 + j], pixel((int)i, j));
  }
}

START_TEST(cifar10_read) {
  static const unsigned char labels[4] = {3, 0, 9, 5};
  static const int64_t want[4] = {3, 0, 9, 5};
  ctorch_tensor im = NULL, lb = NULL;
  write_cifar(ct_tmp_path("c10.bin"), 4, 1, labels, 0);
  CT_OK(ctorch_data_cifar_read(&im, &lb, ct_tmp_path("c10.bin"), CTORCH_DATA_CIFAR10));
  check_cifar(im, lb, 4, want);
  ctorch_tensor_free(im);
  ctorch_tensor_free(lb);
}
END_TEST

START_TEST(cifar100_fine_and_coarse) {
  static const unsigned char labels[6] = {19, 99, 0, 0, 7, 42}; /* (coarse, fine) per record */
  static const int64_t fine[3] = {99, 0, 42}, coarse[3] = {19, 0, 7};
  ctorch_tensor im = NULL, lb = NULL;
  write_cifar(ct_tmp_path("c100.bin"), 3, 2, labels, 0);
  CT_OK(ctorch_data_cifar_read(&im, &lb, ct_tmp_path("c100.bin"), CTORCH_DATA_CIFAR100_FINE));
  check_cifar(im, lb, 3, fine);
  ctorch_tensor_free(im);
  ctorch_tensor_free(lb);
  CT_OK(ctorch_data_cifar_read(&im, &lb, ct_tmp_path("c100.bin"), CTORCH_DATA_CIFAR100_COARSE));
  check_cifar(im, lb, 3, coarse);
  ctorch_tensor_free(im);
  ctorch_tensor_free(lb);
  /* The same bytes read as CIFAR-10: 3 * 3074 is no multiple of 3073. */
  CT_FAILS(CTORCH_VALUE, ctorch_data_cifar_read(&im, &lb, ct_tmp_path("c100.bin"), CTORCH_DATA_CIFAR10));
  ck_assert_ptr_null(im);
  ck_assert_ptr_null(lb);
}
END_TEST

START_TEST(cifar_bad_files) {
  static const unsigned char labels[5] = {1, 2, 10, 4, 5}, ok[5] = {1, 2, 3, 4, 5};
  static const unsigned char labels100[4] = {20, 5, 1, 100};
  ctorch_tensor im = (ctorch_tensor)1, lb = (ctorch_tensor)1;
  /* truncated: 3 whole records and 100 bytes of a 4th */
  write_cifar(ct_tmp_path("trunc.bin"), 3, 1, ok, 100);
  CT_FAILS(CTORCH_VALUE, ctorch_data_cifar_read(&im, &lb, ct_tmp_path("trunc.bin"), CTORCH_DATA_CIFAR10));
  ck_assert_ptr_null(im);
  ck_assert_ptr_null(lb);
  CT_ERROR_HAS("ctorch_data_cifar_read");
  CT_ERROR_HAS("trunc.bin");
  CT_ERROR_HAS("record 3 is truncated: 100 of 3073 bytes");
  /* a label out of range in record 2 */
  write_cifar(ct_tmp_path("label.bin"), 5, 1, labels, 0);
  CT_FAILS(CTORCH_VALUE, ctorch_data_cifar_read(&im, &lb, ct_tmp_path("label.bin"), CTORCH_DATA_CIFAR10));
  CT_ERROR_HAS("label.bin");
  CT_ERROR_HAS("record 2 has label 10, outside 0..9");
  /* CIFAR-100: coarse 20 in record 0, fine 100 in record 1 */
  write_cifar(ct_tmp_path("l100.bin"), 2, 2, labels100, 0);
  CT_FAILS(CTORCH_VALUE, ctorch_data_cifar_read(&im, &lb, ct_tmp_path("l100.bin"), CTORCH_DATA_CIFAR100_FINE));
  CT_ERROR_HAS("record 0 has coarse label 20, outside 0..19");
  write_cifar(ct_tmp_path("l100b.bin"), 1, 2, labels100 + 2, 0);
  CT_FAILS(CTORCH_VALUE, ctorch_data_cifar_read(&im, &lb, ct_tmp_path("l100b.bin"), CTORCH_DATA_CIFAR100_COARSE));
  CT_ERROR_HAS("record 0 has fine label 100, outside 0..99");
  /* empty, missing, a directory */
  ct_write_file(ct_tmp_path("empty.bin"), "", 0);
  CT_FAILS(CTORCH_VALUE, ctorch_data_cifar_read(&im, &lb, ct_tmp_path("empty.bin"), CTORCH_DATA_CIFAR10));
  CT_ERROR_HAS("empty");
  CT_FAILS(CTORCH_IO, ctorch_data_cifar_read(&im, &lb, ct_tmp_path("missing.bin"), CTORCH_DATA_CIFAR10));
  CT_ERROR_HAS("missing.bin");
  CT_FAILS(CTORCH_IO, ctorch_data_cifar_read(&im, &lb, ct_tmp_dir, CTORCH_DATA_CIFAR10));
  /* arguments */
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_data_cifar_read(&im, &lb, ct_tmp_path("trunc.bin"), (ctorch_data_cifar_kind)3));
  CT_ERROR_HAS("'kind'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_cifar_read(&im, &lb, NULL, CTORCH_DATA_CIFAR10));
  CT_ERROR_HAS("'path'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_cifar_read(NULL, &lb, "x", CTORCH_DATA_CIFAR10));
  CT_ERROR_HAS("'images'");
}
END_TEST

/* ---- the distributed order ------------------------------------------ */

static int64_t *indices(ctorch_tensor t, int64_t *n) {
  int64_t *p;
  CT_OK(ctorch_tensor_numel(n, t));
  CT_OK(ctorch_tensor_data_ptr((void **)&p, t));
  return p;
}

START_TEST(distributed_indices_cover) {
  /* 10 items over 4 ranks: 3 each (2 padded) without drop_last, 2 with. */
  int seen[10] = {0};
  int64_t r, k, n = 0;
  int drop;
  for (drop = 0; drop < 2; ++drop) {
    memset(seen, 0, sizeof seen);
    for (r = 0; r < 4; ++r) {
      ctorch_tensor t = NULL;
      int64_t *p;
      CT_OK(ctorch_data_distributed_indices(&t, 10, r, 4, 1, 7, 3, drop));
      p = indices(t, &n);
      ck_assert_int_eq(n, drop ? 2 : 3);
      for (k = 0; k < n; ++k) {
        ck_assert(p[k] >= 0 && p[k] < 10);
        seen[p[k]]++;
      }
      ctorch_tensor_free(t);
    }
    for (k = 0, n = 0; k < 10; ++k) n += seen[k] > 0;
    ck_assert_int_eq(n, drop ? 8 : 10);
  }
  {
    ctorch_tensor t = NULL;
    int64_t *p;
    CT_OK(ctorch_data_distributed_indices(&t, 5, 1, 2, 0, 0, 0, 0)); /* no shuffle: 1, 3, 0(padded) */
    p = indices(t, &n);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(p[0], 1);
    ck_assert_int_eq(p[1], 3);
    ck_assert_int_eq(p[2], 0);
    ctorch_tensor_free(t);
    CT_OK(ctorch_data_distributed_indices(&t, 0, 0, 3, 1, 0, 0, 0));
    indices(t, &n);
    ck_assert_int_eq(n, 0);
    ctorch_tensor_free(t);
  }
}
END_TEST

START_TEST(distributed_indices_bad) {
  ctorch_tensor t = (ctorch_tensor)1;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_distributed_indices(&t, 10, 0, 0, 1, 0, 0, 0));
  ck_assert_ptr_null(t);
  CT_ERROR_HAS("ctorch_data_distributed_indices");
  CT_ERROR_HAS("'world_size'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_distributed_indices(&t, 10, 4, 4, 1, 0, 0, 0));
  CT_ERROR_HAS("'rank'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_distributed_indices(&t, 10, -1, 4, 1, 0, 0, 0));
  CT_ERROR_HAS("'rank'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_distributed_indices(&t, -1, 0, 1, 1, 0, 0, 0));
  CT_ERROR_HAS("'dataset_len'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_distributed_indices(NULL, 1, 0, 1, 1, 0, 0, 0));
}
END_TEST

/* ---- host-defined datasets ------------------------------------------ */

/* Item i: data float32 [2] = {i, -i}, target int64 scalar i. Misbehaves on
 * one index as `mode` says. */
enum { GOOD, FAIL_AT, SHAPE_AT, DTYPE_AT, NODATA_AT, NOTARGET_AT };
typedef struct {
  int64_t len;
  int mode;
  int64_t bad;
  int sleep_us;
  int len_fails;
  int freed;
  pthread_mutex_t mu;
  int calls;
  int threads_seen; /* distinct from the creator's thread */
  pthread_t creator;
} Items;

static ctorch_status items_len(void *ud, int64_t *out) {
  Items *it = ud;
  if (it->len_fails) return CTORCH_IO;
  *out = it->len;
  return CTORCH_OK;
}

static ctorch_status items_get(void *ud, int64_t i, ctorch_tensor *data, ctorch_tensor *target) {
  Items *it = ud;
  float v[3] = {(float)i, (float)-i, 0};
  int64_t two = it->mode == SHAPE_AT && i == it->bad ? 3 : 2;
  ctorch_status st;
  pthread_mutex_lock(&it->mu);
  it->calls++;
  if (!pthread_equal(pthread_self(), it->creator)) it->threads_seen = 1;
  pthread_mutex_unlock(&it->mu);
  if (it->sleep_us) usleep((useconds_t)it->sleep_us);
  if (it->mode == FAIL_AT && i == it->bad) {
    /* a failing ctorch call inside the callback: its message is passed on */
    ctorch_tensor x = NULL;
    return ctorch_tensor_from_data(&x, v, 1, &two, 1, CTORCH_FLOAT32);
  }
  if (it->mode == NODATA_AT && i == it->bad) return CTORCH_OK;
  if (it->mode == DTYPE_AT && i == it->bad) {
    double d[2] = {(double)i, (double)-i};
    st = ctorch_tensor_from_data(data, d, sizeof d, &two, 1, CTORCH_FLOAT64);
  } else {
    st = ctorch_tensor_from_data(data, v, (size_t)two * sizeof(float), &two, 1, CTORCH_FLOAT32);
  }
  if (st != CTORCH_OK) return st;
  if (it->mode == NOTARGET_AT && i == it->bad) return CTORCH_OK;
  return ctorch_tensor_from_data(target, &i, sizeof i, NULL, 0, CTORCH_INT64);
}

static void items_free(void *ud) { ((Items *)ud)->freed++; }

static Items *items_new(int64_t len, int mode, int64_t bad) {
  Items *it = calloc(1, sizeof *it);
  ck_assert_ptr_nonnull(it);
  it->len = len;
  it->mode = mode;
  it->bad = bad;
  pthread_mutex_init(&it->mu, NULL);
  it->creator = pthread_self();
  return it;
}

static ctorch_dataset items_dataset(Items *it) {
  ctorch_dataset ds = NULL;
  CT_OK(ctorch_dataset_from_callbacks(&ds, items_len, items_get, it, items_free));
  return ds;
}

/* Reads one epoch: the item index of each example (data[k][0]) into order[],
 * checking data[k][1] == -index and target == index; returns the count. */
static int64_t read_epoch(ctorch_data_loader l, int64_t *order, int64_t cap, int64_t *batches) {
  int has = 1;
  int64_t n = 0;
  *batches = 0;
  for (;;) {
    ctorch_tensor x = NULL, y = NULL;
    int64_t m = 0, k, sizes[2];
    float *xp;
    int64_t *yp;
    CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
    if (!has) {
      ck_assert_ptr_null(x);
      ck_assert_ptr_null(y);
      break;
    }
    ++*batches;
    CT_OK(ctorch_tensor_sizes(sizes, 2, x));
    m = sizes[0];
    ck_assert_int_eq(sizes[1], 2);
    CT_OK(ctorch_tensor_data_ptr((void **)&xp, x));
    CT_OK(ctorch_tensor_data_ptr((void **)&yp, y));
    for (k = 0; k < m; ++k) {
      ck_assert(n < cap);
      order[n] = (int64_t)xp[2 * k];
      ck_assert_float_eq(xp[2 * k + 1], -xp[2 * k]);
      ck_assert_int_eq(yp[k], order[n]);
      ++n;
    }
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
  }
  return n;
}

START_TEST(callbacks_workers_same_order) {
  /* The same batches with 0, 1, 2 and 3 workers, prefetch 1 and 4, over 3
   * epochs; the order is the plain loader's over the same indices. */
  Items *it = items_new(23, GOOD, -1);
  ctorch_dataset ds = items_dataset(it);
  int64_t ref[3][64], got[64], nb, nref, n;
  int e, w, pf;
  ctorch_data_loader l = NULL;
  CT_OK(ctorch_dataset_len(&n, ds));
  ck_assert_int_eq(n, 23);
  CT_OK(ctorch_data_loader_from_dataset(&l, ds, 5, 1, 42, 0));
  ctorch_dataset_free(ds); /* the loader keeps it */
  ck_assert_int_eq(it->freed, 0);
  for (e = 0; e < 3; ++e) {
    CT_OK(ctorch_data_loader_start_epoch(l, (uint64_t)e));
    nref = read_epoch(l, ref[e], 64, &nb);
    ck_assert_int_eq(nref, 23);
    ck_assert_int_eq(nb, 5);
  }
  ck_assert_int_eq(it->threads_seen, 0);
  /* the plain loader over an index tensor visits the same order */
  {
    int64_t idx[23], i, b;
    ctorch_tensor t = NULL;
    ctorch_data_loader pl = NULL;
    int has;
    for (i = 0; i < 23; ++i) idx[i] = i;
    CT_OK(ctorch_tensor_from_data(&t, idx, sizeof idx, &n, 1, CTORCH_INT64));
    CT_OK(ctorch_data_loader_new(&pl, t, NULL, 5, 1, 42, 0));
    CT_OK(ctorch_data_loader_start_epoch(pl, 2));
    for (i = 0, b = 0;; ++b) {
      ctorch_tensor x = NULL;
      int64_t *p, m, k;
      CT_OK(ctorch_data_loader_next(&has, &x, NULL, pl));
      if (!has) break;
      CT_OK(ctorch_tensor_numel(&m, x));
      CT_OK(ctorch_tensor_data_ptr((void **)&p, x));
      for (k = 0; k < m; ++k) ck_assert_int_eq(p[k], ref[2][i++]);
      ctorch_tensor_free(x);
    }
    ck_assert_int_eq(i, 23);
    ctorch_data_loader_free(pl);
    ctorch_tensor_free(t);
  }
  for (w = 1; w <= 3; ++w)
    for (pf = 1; pf <= 4; pf += 3) {
      CT_OK(ctorch_data_loader_set_workers(l, w, pf));
      for (e = 0; e < 3; ++e) {
        CT_OK(ctorch_data_loader_start_epoch(l, (uint64_t)e));
        n = read_epoch(l, got, 64, &nb);
        ck_assert_int_eq(n, 23);
        ck_assert_int_eq(nb, 5);
        ck_assert_mem_eq(got, ref[e], sizeof(int64_t) * 23);
      }
    }
  ck_assert_int_eq(it->threads_seen, 1);
  /* drop_last through a new loader: 4 batches of 5 */
  ctorch_data_loader_free(l);
  ck_assert_int_eq(it->freed, 1);
  free(it);
}
END_TEST

START_TEST(callbacks_drop_last_and_sequential) {
  Items *it = items_new(11, GOOD, -1);
  ctorch_dataset ds = items_dataset(it);
  ctorch_data_loader l = NULL;
  int64_t got[16], nb, n, i;
  CT_OK(ctorch_data_loader_from_dataset(&l, ds, 4, 0, 0, 1));
  CT_OK(ctorch_data_loader_num_batches(&nb, l));
  ck_assert_int_eq(nb, 2);
  CT_OK(ctorch_data_loader_size(&n, l));
  ck_assert_int_eq(n, 11);
  CT_OK(ctorch_data_loader_set_workers(l, 2, 2));
  n = read_epoch(l, got, 16, &nb);
  ck_assert_int_eq(n, 8);
  ck_assert_int_eq(nb, 2);
  for (i = 0; i < 8; ++i) ck_assert_int_eq(got[i], i);
  /* the length is read again at each epoch start */
  it->len = 13;
  CT_OK(ctorch_data_loader_start_epoch(l, 1));
  CT_OK(ctorch_data_loader_num_batches(&nb, l));
  ck_assert_int_eq(nb, 3);
  ctorch_data_loader_free(l);
  ck_assert_int_eq(it->freed, 0);
  ctorch_dataset_free(ds);
  ck_assert_int_eq(it->freed, 1);
  free(it);
}
END_TEST

/* The status of the batch holding item `bad` (batch 2 of size 3, shuffle
 * off), with `workers` workers; the batches before and after come through. */
static void bad_item(int mode, int workers, ctorch_status want, const char *needle) {
  Items *it = items_new(12, mode, 7);
  ctorch_dataset ds = items_dataset(it);
  ctorch_data_loader l = NULL;
  int b, has;
  CT_OK(ctorch_data_loader_from_dataset(&l, ds, 3, 0, 0, 0));
  ctorch_dataset_free(ds);
  CT_OK(ctorch_data_loader_set_workers(l, workers, 2));
  for (b = 0; b < 4; ++b) {
    ctorch_tensor x = (ctorch_tensor)1, y = (ctorch_tensor)1;
    ctorch_status st = ctorch_data_loader_next(&has, &x, &y, l);
    if (b == 2) {
      ck_assert_msg(st == want, "batch 2: %s (wanted %s): %s", ctorch_status_name(st), ctorch_status_name(want),
                    ctorch_last_error());
      ck_assert_ptr_null(x);
      ck_assert_ptr_null(y);
      CT_ERROR_HAS("ctorch_data_loader_next");
      CT_ERROR_HAS("dataset item 7");
      CT_ERROR_HAS(needle);
    } else {
      ck_assert_msg(st == CTORCH_OK, "batch %d: %s", b, ctorch_last_error());
      ck_assert_int_eq(has, 1);
      ctorch_tensor_free(x);
      ctorch_tensor_free(y);
    }
  }
  CT_OK(ctorch_data_loader_next(&has, &(ctorch_tensor){NULL}, &(ctorch_tensor){NULL}, l));
  ck_assert_int_eq(has, 0);
  ctorch_data_loader_free(l);
  ck_assert_int_eq(it->freed, 1);
  free(it);
}

START_TEST(callback_errors_name_the_item) {
  int w;
  for (w = 0; w <= 2; w += 2) {
    bad_item(FAIL_AT, w, CTORCH_INVALID_ARGUMENT, "get_item returned CTORCH_INVALID_ARGUMENT: ctorch_tensor_from_data");
    bad_item(SHAPE_AT, w, CTORCH_VALUE, "data has shape [3]");
    bad_item(DTYPE_AT, w, CTORCH_TYPE, "data has dtype Double");
    bad_item(NODATA_AT, w, CTORCH_VALUE, "wrote no data");
    bad_item(NOTARGET_AT, w, CTORCH_VALUE, "has no target");
  }
}
END_TEST

START_TEST(free_mid_epoch_joins_workers) {
  /* Slow items, 3 workers, prefetch 4: freeing after one batch returns once
   * the items being made are done (well under the epoch's 64 * 20 ms). */
  Items *it = items_new(64, GOOD, -1);
  ctorch_dataset ds = items_dataset(it);
  ctorch_data_loader l = NULL;
  ctorch_tensor x = NULL, y = NULL;
  int has;
  struct timespec t0, t1;
  it->sleep_us = 20000;
  CT_OK(ctorch_data_loader_from_dataset(&l, ds, 2, 1, 1, 0));
  ctorch_dataset_free(ds);
  CT_OK(ctorch_data_loader_set_workers(l, 3, 4));
  CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
  ck_assert_int_eq(has, 1);
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ctorch_data_loader_free(l);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ck_assert_int_eq(it->freed, 1);
  ck_assert_msg((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9 < 0.5, "free took too long");
  ck_assert_int_lt(it->calls, 64);
  free(it);
  /* and with a failed batch waiting, never read */
  it = items_new(12, FAIL_AT, 0);
  ds = items_dataset(it);
  CT_OK(ctorch_data_loader_from_dataset(&l, ds, 3, 0, 0, 0));
  ctorch_dataset_free(ds);
  CT_OK(ctorch_data_loader_set_workers(l, 2, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_next(&has, &x, &y, l));
  CT_ERROR_HAS("dataset item 0");
  usleep(20000);
  ctorch_data_loader_free(l);
  ck_assert_int_eq(it->freed, 1);
  free(it);
}
END_TEST

START_TEST(len_callback_failure) {
  Items *it = items_new(5, GOOD, -1);
  ctorch_dataset ds = items_dataset(it);
  ctorch_data_loader l = (ctorch_data_loader)1;
  int64_t n = 0;
  it->len_fails = 1;
  CT_FAILS(CTORCH_IO, ctorch_dataset_len(&n, ds));
  CT_ERROR_HAS("len callback returned CTORCH_IO");
  CT_FAILS(CTORCH_IO, ctorch_data_loader_from_dataset(&l, ds, 2, 0, 0, 0));
  ck_assert_ptr_null(l);
  CT_ERROR_HAS("ctorch_data_loader_from_dataset");
  it->len_fails = 0;
  it->len = -3;
  CT_FAILS(CTORCH_VALUE, ctorch_dataset_len(&n, ds));
  CT_ERROR_HAS("negative length -3");
  ctorch_dataset_free(ds);
  ck_assert_int_eq(it->freed, 1);
  free(it);
}
END_TEST

START_TEST(dataset_argument_errors) {
  ctorch_dataset ds = (ctorch_dataset)1;
  ctorch_data_loader l = (ctorch_data_loader)1;
  ctorch_tensor d = NULL, t = NULL;
  const char *paths[2] = {"a", NULL};
  int64_t sz[2] = {4, 2}, s1 = 3, n;
  float v[8] = {0};
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dataset_from_callbacks(&ds, NULL, items_get, NULL, NULL));
  ck_assert_ptr_null(ds);
  CT_ERROR_HAS("'len'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dataset_from_callbacks(&ds, items_len, NULL, NULL, NULL));
  CT_ERROR_HAS("'get_item'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dataset_from_tensors(&ds, NULL, NULL));
  CT_ERROR_HAS("'data'");
  CT_OK(ctorch_tensor_from_data(&d, v, sizeof v, sz, 2, CTORCH_FLOAT32));
  CT_OK(ctorch_tensor_from_data(&t, v, 3 * sizeof(float), &s1, 1, CTORCH_FLOAT32));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dataset_from_tensors(&ds, d, t));
  CT_ERROR_HAS("'targets'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dataset_cifar(&ds, paths, 0, CTORCH_DATA_CIFAR10));
  CT_ERROR_HAS("'n_paths'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dataset_cifar(&ds, paths, 2, CTORCH_DATA_CIFAR10));
  CT_ERROR_HAS("entry 1 is NULL");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dataset_cifar(&ds, NULL, 1, CTORCH_DATA_CIFAR10));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dataset_cifar(&ds, paths, 1, (ctorch_data_cifar_kind)-1));
  CT_ERROR_HAS("'kind'");
  CT_FAILS(CTORCH_IO, ctorch_dataset_cifar(&ds, paths, 1, CTORCH_DATA_CIFAR10));
  CT_FAILS(CTORCH_IO, ctorch_dataset_mnist_dir(&ds, ct_tmp_dir, 1));
  CT_ERROR_HAS("train-images-idx3-ubyte");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dataset_mnist_dir(&ds, NULL, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dataset_len(&n, NULL));
  CT_ERROR_HAS("'ds'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_from_dataset(&l, NULL, 2, 0, 0, 0));
  ck_assert_ptr_null(l);
  CT_OK(ctorch_dataset_from_tensors(&ds, d, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_from_dataset(&l, ds, 0, 0, 0, 0));
  CT_ERROR_HAS("'batch_size'");
  CT_OK(ctorch_data_loader_from_dataset(&l, ds, 3, 0, 0, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_workers(l, -1, 2));
  CT_ERROR_HAS("'num_workers'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_workers(l, 65, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_workers(l, 2, 0));
  CT_ERROR_HAS("'prefetch_factor'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_workers(NULL, 2, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_distributed(l, 2, 2, 0));
  CT_ERROR_HAS("'rank'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_distributed(l, 0, 0, 0));
  CT_ERROR_HAS("'world_size'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_distributed(NULL, 0, 1, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_set_pin_memory(NULL, 0));
  CT_OK(ctorch_data_loader_set_pin_memory(l, 0));
  ctorch_data_loader_free(l);
  ctorch_dataset_free(ds);
  ctorch_tensor_free(d);
  ctorch_tensor_free(t);
}
END_TEST

START_TEST(tensor_and_cifar_datasets) {
  /* two CIFAR-10 files concatenated; a distributed loader over them with 2 workers */
  static const unsigned char la[3] = {1, 2, 3}, lb[2] = {4, 5};
  const char *paths[2];
  ctorch_dataset ds = NULL;
  ctorch_data_loader l = NULL;
  ctorch_tensor x = NULL, y = NULL, want = NULL;
  int has;
  int64_t n, *yp, *wp, sizes[4], k;
  write_cifar(ct_tmp_path("a.bin"), 3, 1, la, 0);
  write_cifar(ct_tmp_path("b.bin"), 2, 1, lb, 0);
  paths[0] = ct_tmp_path("a.bin");
  paths[1] = ct_tmp_path("b.bin");
  CT_OK(ctorch_dataset_cifar(&ds, paths, 2, CTORCH_DATA_CIFAR10));
  CT_OK(ctorch_dataset_len(&n, ds));
  ck_assert_int_eq(n, 5);
  CT_OK(ctorch_data_loader_from_dataset(&l, ds, 8, 1, 9, 0));
  CT_OK(ctorch_data_loader_set_distributed(l, 1, 2, 0));
  CT_OK(ctorch_data_loader_set_workers(l, 2, 2));
  CT_OK(ctorch_data_loader_start_epoch(l, 4));
  CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
  ck_assert_int_eq(has, 1);
  CT_OK(ctorch_tensor_sizes(sizes, 4, x));
  ck_assert_int_eq(sizes[0], 3);
  ck_assert_int_eq(sizes[1], 3);
  CT_OK(ctorch_data_distributed_indices(&want, 5, 1, 2, 1, 9, 4, 0));
  wp = indices(want, &n);
  ck_assert_int_eq(n, 3);
  CT_OK(ctorch_tensor_data_ptr((void **)&yp, y));
  for (k = 0; k < 3; ++k) ck_assert_int_eq(yp[k], wp[k] + 1); /* label of item i is i + 1 */
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  ctorch_tensor_free(want);
  CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
  ck_assert_int_eq(has, 0);
  /* targets NULL while the dataset has targets */
  CT_OK(ctorch_data_loader_start_epoch(l, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_next(&has, &x, NULL, l));
  CT_ERROR_HAS("'targets'");
  ctorch_data_loader_free(l);
  ctorch_dataset_free(ds);
}
END_TEST

START_TEST(pin_memory_without_cuda) {
  ctorch_dataset ds = NULL;
  ctorch_data_loader l = NULL;
  ctorch_tensor d = NULL;
  int64_t s = 4;
  float v[4] = {0};
  if (ct_cuda_device_count_in_child() > 0) return; /* loader_pin_memory_cuda covers it */
  CT_OK(ctorch_tensor_from_data(&d, v, sizeof v, &s, 1, CTORCH_FLOAT32));
  CT_OK(ctorch_dataset_from_tensors(&ds, d, NULL));
  CT_OK(ctorch_data_loader_from_dataset(&l, ds, 2, 0, 0, 0));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_data_loader_set_pin_memory(l, 1));
  CT_ERROR_HAS("ctorch_data_loader_set_pin_memory");
  CT_ERROR_HAS("needs CUDA");
  ctorch_data_loader_free(l);
  ctorch_dataset_free(ds);
  ctorch_tensor_free(d);
}
END_TEST

START_TEST(pin_memory_cuda) {
  ctorch_dataset ds = NULL;
  ctorch_data_loader l = NULL;
  ctorch_tensor d = NULL, x = NULL;
  int64_t s = 4;
  float v[4] = {0};
  int has, pinned = 0;
  CT_OK(ctorch_tensor_from_data(&d, v, sizeof v, &s, 1, CTORCH_FLOAT32));
  CT_OK(ctorch_dataset_from_tensors(&ds, d, NULL));
  CT_OK(ctorch_data_loader_from_dataset(&l, ds, 2, 1, 0, 0));
  CT_OK(ctorch_data_loader_set_pin_memory(l, 1));
  CT_OK(ctorch_data_loader_set_workers(l, 2, 2));
  CT_OK(ctorch_data_loader_next(&has, &x, NULL, l));
  ck_assert_int_eq(has, 1);
  CT_OK(ctorch_is_pinned(&pinned, x, NULL));
  ck_assert_int_eq(pinned, 1);
  ctorch_tensor_free(x);
  ctorch_data_loader_free(l);
  ctorch_dataset_free(ds);
  ctorch_tensor_free(d);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("loader_pipeline");
  TCase *tc = tcase_create("files");
  tcase_add_checked_fixture(tc, setup, ct_tmp_dir_remove);
  tcase_add_test(tc, cifar10_read);
  tcase_add_test(tc, cifar100_fine_and_coarse);
  tcase_add_test(tc, cifar_bad_files);
  tcase_add_test(tc, tensor_and_cifar_datasets);
  tcase_add_test(tc, dataset_argument_errors);
  suite_add_tcase(s, tc);
  tc = tcase_create("order");
  tcase_add_test(tc, distributed_indices_cover);
  tcase_add_test(tc, distributed_indices_bad);
  suite_add_tcase(s, tc);
  tc = tcase_create("callbacks");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, callbacks_workers_same_order);
  tcase_add_test(tc, callbacks_drop_last_and_sequential);
  tcase_add_test(tc, callback_errors_name_the_item);
  tcase_add_test(tc, free_mid_epoch_joins_workers);
  tcase_add_test(tc, len_callback_failure);
  tcase_add_test(tc, pin_memory_without_cuda);
  suite_add_tcase(s, tc);
  tc = tcase_create("cuda");
  tcase_set_tags(tc, "cuda");
  tcase_add_test(tc, pin_memory_cuda);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
