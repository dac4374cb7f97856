/* IDX reading (plain, gzip, corrupt, truncated) and the batch iterator. */
#define _GNU_SOURCE
#include <stdint.h>
#include <unistd.h>

#include "check_main.h"
#include "tmp_files.h"

static void setup(void) { ct_tmp_dir_make("data"); }

/* An IDX header: type code, dims (big-endian). Returns its length. */
static size_t idx_header(unsigned char *h, unsigned char type, const uint32_t *dims, unsigned nd) {
  unsigned i;
  h[0] = h[1] = 0;
  h[2] = type;
  h[3] = (unsigned char)nd;
  for (i = 0; i < nd; ++i) {
    h[4 + 4 * i] = (unsigned char)(dims[i] >> 24);
    h[5 + 4 * i] = (unsigned char)(dims[i] >> 16);
    h[6 + 4 * i] = (unsigned char)(dims[i] >> 8);
    h[7 + 4 * i] = (unsigned char)dims[i];
  }
  return 4 + 4 * nd;
}

/* Writes a ubyte IDX of the given dims whose element i is (i * 7 + 3) % 256. */
static size_t write_ubyte_idx(const char *path, const uint32_t *dims, unsigned nd, size_t keep_data) {
  unsigned char buf[4096];
  size_t h = idx_header(buf, 0x08, dims, nd), n = 1, i;
  for (i = 0; i < nd; ++i) n *= dims[i];
  ck_assert(h + n <= sizeof buf);
  for (i = 0; i < n; ++i) buf[h + i] = (unsigned char)((i * 7 + 3) % 256);
  ct_write_file(path, buf, h + (keep_data < n ? keep_data : n));
  return n;
}

static void gzip_file(const char *src, const char *dst) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "gzip -c '%s' > '%s'", src, dst);
  ck_assert_int_eq(system(cmd), 0);
}

static void check_ubyte_contents(ctorch_tensor t, const int64_t *want_sizes, size_t nd) {
  int64_t sizes[8], n = 0, i;
  int64_t dim = 0;
  ctorch_dtype dt;
  unsigned char *p = NULL;
  CT_OK(ctorch_tensor_dim(&dim, t));
  ck_assert_int_eq(dim, (int64_t)nd);
  CT_OK(ctorch_tensor_sizes(sizes, 8, t));
  for (i = 0; i < (int64_t)nd; ++i) ck_assert_int_eq(sizes[i], want_sizes[i]);
  CT_OK(ctorch_tensor_dtype(&dt, t));
  ck_assert_int_eq(dt, CTORCH_UINT8);
  CT_OK(ctorch_tensor_numel(&n, t));
  CT_OK(ctorch_tensor_data_ptr((void **)&p, t));
  for (i = 0; i < n; ++i) ck_assert_int_eq(p[i], (i * 7 + 3) % 256);
}

START_TEST(plain_and_gzip_ubyte) {
  static const uint32_t dims[3] = {4, 3, 5};
  static const int64_t want[3] = {4, 3, 5};
  ctorch_tensor a = NULL, b = NULL, c = NULL;
  write_ubyte_idx(ct_tmp_path("x.idx"), dims, 3, (size_t)-1);
  gzip_file(ct_tmp_path("x.idx"), ct_tmp_path("x.idx.gz"));
  /* the format is told by content: a gzip file without .gz also works */
  gzip_file(ct_tmp_path("x.idx"), ct_tmp_path("gz-named-plain"));
  CT_OK(ctorch_data_idx_read(&a, ct_tmp_path("x.idx")));
  check_ubyte_contents(a, want, 3);
  CT_OK(ctorch_data_idx_read(&b, ct_tmp_path("x.idx.gz")));
  check_ubyte_contents(b, want, 3);
  CT_OK(ctorch_data_idx_read(&c, ct_tmp_path("gz-named-plain")));
  check_ubyte_contents(c, want, 3);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(c);
}
END_TEST

START_TEST(big_endian_types) {
  static const uint32_t dims[1] = {3};
  unsigned char buf[64];
  size_t h = idx_header(buf, 0x0C, dims, 1);
  const int32_t vals[3] = {1, -2, 0x01020304};
  int32_t got[3];
  float fg[2];
  double dg;
  ctorch_tensor t = NULL;
  ctorch_dtype dt;
  int i;
  for (i = 0; i < 3; ++i) {
    uint32_t u = (uint32_t)vals[i];
    buf[h + 4 * i] = (unsigned char)(u >> 24);
    buf[h + 4 * i + 1] = (unsigned char)(u >> 16);
    buf[h + 4 * i + 2] = (unsigned char)(u >> 8);
    buf[h + 4 * i + 3] = (unsigned char)u;
  }
  ct_write_file(ct_tmp_path("i32.idx"), buf, h + 12);
  CT_OK(ctorch_data_idx_read(&t, ct_tmp_path("i32.idx")));
  CT_OK(ctorch_tensor_dtype(&dt, t));
  ck_assert_int_eq(dt, CTORCH_INT32);
  CT_OK(ctorch_tensor_copy_to(got, sizeof got, t));
  for (i = 0; i < 3; ++i) ck_assert_int_eq(got[i], vals[i]);
  ctorch_tensor_free(t);
  {
    /* float32 1.5 = 0x3FC00000, -2.0 = 0xC0000000 */
    static const uint32_t d2[1] = {2};
    static const unsigned char fl[8] = {0x3F, 0xC0, 0, 0, 0xC0, 0, 0, 0};
    h = idx_header(buf, 0x0D, d2, 1);
    memcpy(buf + h, fl, 8);
    ct_write_file(ct_tmp_path("f32.idx"), buf, h + 8);
    CT_OK(ctorch_data_idx_read(&t, ct_tmp_path("f32.idx")));
    CT_OK(ctorch_tensor_copy_to(fg, sizeof fg, t));
    ck_assert(fg[0] == 1.5f && fg[1] == -2.0f);
    ctorch_tensor_free(t);
  }
  {
    /* float64 0.1 = 0x3FB999999999999A */
    static const uint32_t d1[1] = {1};
    static const unsigned char db[8] = {0x3F, 0xB9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9A};
    h = idx_header(buf, 0x0E, d1, 1);
    memcpy(buf + h, db, 8);
    ct_write_file(ct_tmp_path("f64.idx"), buf, h + 8);
    CT_OK(ctorch_data_idx_read(&t, ct_tmp_path("f64.idx")));
    CT_OK(ctorch_tensor_copy_to(&dg, sizeof dg, t));
    ck_assert(dg == 0.1);
    ctorch_tensor_free(t);
  }
}
END_TEST

/* Every bad file gives a status and a message naming the file; never a crash. */
START_TEST(corrupt_and_truncated_files) {
  static const uint32_t dims[2] = {10, 20};
  static const uint32_t huge[4] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
  unsigned char buf[4096];
  ctorch_tensor t = (ctorch_tensor)1;
  FILE *f;
  long gz_len;
  size_t h;

  CT_FAILS(CTORCH_IO, ctorch_data_idx_read(&t, ct_tmp_path("missing.idx")));
  ck_assert_ptr_null(t);
  CT_ERROR_HAS("missing.idx");
  CT_ERROR_HAS("ctorch_data_idx_read");
  CT_FAILS(CTORCH_IO, ctorch_data_idx_read(&t, ct_tmp_dir)); /* a directory */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_idx_read(&t, NULL));

  ct_write_file(ct_tmp_path("empty.idx"), "", 0);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("empty.idx")));
  CT_ERROR_HAS("empty.idx");

  /* data cut short */
  write_ubyte_idx(ct_tmp_path("short.idx"), dims, 2, 150);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("short.idx")));
  CT_ERROR_HAS("truncated");

  /* header cut inside the dimension sizes */
  h = idx_header(buf, 0x08, dims, 2);
  ct_write_file(ct_tmp_path("head.idx"), buf, h - 3);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("head.idx")));

  /* bad magic, unknown type code, zero dims */
  h = idx_header(buf, 0x08, dims, 2);
  buf[0] = 0x42;
  ct_write_file(ct_tmp_path("magic.idx"), buf, h + 200);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("magic.idx")));
  CT_ERROR_HAS("magic");
  h = idx_header(buf, 0x07, dims, 2);
  ct_write_file(ct_tmp_path("type.idx"), buf, h + 200);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("type.idx")));
  CT_ERROR_HAS("0x07");
  h = idx_header(buf, 0x08, dims, 0);
  ct_write_file(ct_tmp_path("nodim.idx"), buf, h);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("nodim.idx")));

  /* absurd sizes in a tiny file must not try to allocate them */
  h = idx_header(buf, 0x08, huge, 4);
  ct_write_file(ct_tmp_path("huge.idx"), buf, h + 16);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("huge.idx")));
  h = idx_header(buf, 0x08, huge, 1);
  ct_write_file(ct_tmp_path("huge1.idx"), buf, h + 16);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("huge1.idx")));
  gzip_file(ct_tmp_path("huge1.idx"), ct_tmp_path("huge1.idx.gz"));
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("huge1.idx.gz")));

  /* trailing garbage */
  write_ubyte_idx(ct_tmp_path("ok.idx"), dims, 2, (size_t)-1);
  f = fopen(ct_tmp_path("ok.idx"), "ab");
  fputs("junk", f);
  fclose(f);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("ok.idx")));

  /* a truncated gzip stream, and gzip magic followed by garbage */
  write_ubyte_idx(ct_tmp_path("full.idx"), dims, 2, (size_t)-1);
  gzip_file(ct_tmp_path("full.idx"), ct_tmp_path("full.idx.gz"));
  f = fopen(ct_tmp_path("full.idx.gz"), "rb");
  gz_len = (long)fread(buf, 1, sizeof buf, f);
  fclose(f);
  ck_assert(gz_len > 40);
  ct_write_file(ct_tmp_path("cut.idx.gz"), buf, (size_t)gz_len / 2);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("cut.idx.gz")));
  CT_ERROR_HAS("cut.idx.gz");
  ct_write_file(ct_tmp_path("cut2.idx.gz"), buf, (size_t)gz_len - 4); /* only the size trailer missing */
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("cut2.idx.gz")));
  memset(buf + 10, 0xA5, (size_t)gz_len - 10);
  ct_write_file(ct_tmp_path("garbage.idx.gz"), buf, (size_t)gz_len);
  CT_FAILS(CTORCH_VALUE, ctorch_data_idx_read(&t, ct_tmp_path("garbage.idx.gz")));
  ck_assert_ptr_null(t);
}
END_TEST

START_TEST(mnist_pair_checks) {
  static const uint32_t im[3] = {5, 2, 2}, lb[1] = {5}, lb4[1] = {4};
  ctorch_tensor x = NULL, y = NULL;
  ctorch_dtype dt;
  int64_t v[5];
  int i;
  write_ubyte_idx(ct_tmp_path("im"), im, 3, (size_t)-1);
  write_ubyte_idx(ct_tmp_path("lb"), lb, 1, (size_t)-1);
  write_ubyte_idx(ct_tmp_path("lb4"), lb4, 1, (size_t)-1);
  CT_OK(ctorch_data_mnist_read(&x, &y, ct_tmp_path("im"), ct_tmp_path("lb")));
  CT_OK(ctorch_tensor_dtype(&dt, y));
  ck_assert_int_eq(dt, CTORCH_INT64);
  CT_OK(ctorch_tensor_copy_to(v, sizeof v, y));
  for (i = 0; i < 5; ++i) ck_assert_int_eq(v[i], (i * 7 + 3) % 256);
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  CT_FAILS(CTORCH_VALUE, ctorch_data_mnist_read(&x, &y, ct_tmp_path("im"), ct_tmp_path("lb4")));
  ck_assert_ptr_null(x);
  ck_assert_ptr_null(y);
  CT_FAILS(CTORCH_VALUE, ctorch_data_mnist_read(&x, &y, ct_tmp_path("lb"), ct_tmp_path("lb")));
  CT_FAILS(CTORCH_IO, ctorch_data_mnist_read_dir(&x, &y, ct_tmp_dir, 1));
  CT_ERROR_HAS("train-images-idx3-ubyte");
}
END_TEST

START_TEST(real_fashion_mnist) {
  ctorch_tensor x = NULL, y = NULL;
  int64_t sizes[3], n = 0, i, counts[10] = {0};
  int64_t *lab = NULL;
  unsigned char *px = NULL;
  double mean = 0;
  CT_OK(ctorch_data_mnist_read_dir(&x, &y, ct_fashion_mnist_dir(), 1));
  CT_OK(ctorch_tensor_sizes(sizes, 3, x));
  ck_assert(sizes[0] == 60000 && sizes[1] == 28 && sizes[2] == 28);
  CT_OK(ctorch_tensor_numel(&n, y));
  ck_assert_int_eq(n, 60000);
  CT_OK(ctorch_tensor_data_ptr((void **)&lab, y));
  for (i = 0; i < n; ++i) {
    ck_assert(lab[i] >= 0 && lab[i] < 10);
    counts[lab[i]]++;
  }
  /* Fashion-MNIST's training set is balanced: 6,000 images per class */
  for (i = 0; i < 10; ++i) ck_assert_int_eq(counts[i], 6000);
  CT_OK(ctorch_tensor_data_ptr((void **)&px, x));
  for (i = 0; i < 60000 * 784; ++i) mean += px[i];
  mean /= 60000.0 * 784 * 255;
  /* the well-known training-set mean of Fashion-MNIST is 0.2860 */
  ck_assert_msg(mean > 0.285 && mean < 0.287, "mean %f", mean);
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/", ct_fashion_mnist_dir()); /* a trailing slash is accepted */
    CT_OK(ctorch_data_mnist_read_dir(&x, &y, dir, 0));
  }
  CT_OK(ctorch_tensor_sizes(sizes, 3, x));
  ck_assert_int_eq(sizes[0], 10000);
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
}
END_TEST

/* data[i] = [i, 100 + i] (int64), targets[i] = 1000 + i */
static void make_dataset(int64_t n, ctorch_tensor *data, ctorch_tensor *targets) {
  int64_t *d = malloc((size_t)n * 2 * sizeof(int64_t)), *t = malloc((size_t)n * sizeof(int64_t)), i;
  int64_t ds[2] = {n, 2};
  for (i = 0; i < n; ++i) {
    d[2 * i] = i;
    d[2 * i + 1] = 100 + i;
    t[i] = 1000 + i;
  }
  CT_OK(ctorch_tensor_from_data(data, d, (size_t)n * 2 * sizeof(int64_t), ds, 2, CTORCH_INT64));
  CT_OK(ctorch_tensor_from_data(targets, t, (size_t)n * sizeof(int64_t), &n, 1, CTORCH_INT64));
  free(d);
  free(t);
}

/* Runs one epoch and records the order of example ids; returns the batch count. */
static int64_t run_epoch(ctorch_data_loader l, int64_t *order, int64_t *last_batch) {
  int has = 1;
  int64_t batches = 0, k = 0;
  for (;;) {
    ctorch_tensor x = NULL, y = NULL;
    int64_t sz[2], i;
    int64_t *px, *py;
    CT_OK(ctorch_data_loader_next(&has, &x, &y, l));
    if (!has) {
      ck_assert_ptr_null(x);
      ck_assert_ptr_null(y);
      break;
    }
    CT_OK(ctorch_tensor_sizes(sz, 2, x));
    ck_assert_int_eq(sz[1], 2);
    {
      ctorch_tensor xc = NULL;
      CT_OK(ctorch_tensor_contiguous(&xc, x));
      CT_OK(ctorch_tensor_data_ptr((void **)&px, xc));
      CT_OK(ctorch_tensor_data_ptr((void **)&py, y));
      for (i = 0; i < sz[0]; ++i) {
        /* rows and targets stay paired */
        ck_assert_int_eq(px[2 * i + 1], 100 + px[2 * i]);
        ck_assert_int_eq(py[i], 1000 + px[2 * i]);
        order[k++] = px[2 * i];
      }
      ctorch_tensor_free(xc);
    }
    *last_batch = sz[0];
    ++batches;
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
  }
  return batches;
}

START_TEST(loader_orders) {
  enum { N = 103 };
  ctorch_tensor data = NULL, targets = NULL;
  ctorch_data_loader l = NULL;
  int64_t order[N], o0[N], o1[N], last = 0, nb = 0, i, seen[N];
  int same01 = 1;
  make_dataset(N, &data, &targets);

  /* sequential, keeping the last partial batch */
  CT_OK(ctorch_data_loader_new(&l, data, targets, 10, 0, 0, 0));
  ctorch_tensor_free(data); /* the loader holds its own references */
  ctorch_tensor_free(targets);
  CT_OK(ctorch_data_loader_num_batches(&nb, l));
  ck_assert_int_eq(nb, 11);
  ck_assert_int_eq(run_epoch(l, order, &last), 11);
  ck_assert_int_eq(last, 3);
  for (i = 0; i < N; ++i) ck_assert_int_eq(order[i], i);
  ctorch_data_loader_free(l);

  make_dataset(N, &data, &targets);
  /* shuffled with drop_last: 10 full batches, each epoch a permutation */
  CT_OK(ctorch_data_loader_new(&l, data, targets, 10, 1, 42, 1));
  CT_OK(ctorch_data_loader_num_batches(&nb, l));
  ck_assert_int_eq(nb, 10);
  ck_assert_int_eq(run_epoch(l, o0, &last), 10);
  ck_assert_int_eq(last, 10);
  /* exhausted until the next epoch starts */
  ck_assert_int_eq(run_epoch(l, order, &last), 0);
  CT_OK(ctorch_data_loader_start_epoch(l, 1));
  ck_assert_int_eq(run_epoch(l, o1, &last), 10);
  for (i = 0; i < 100; ++i)
    if (o0[i] != o1[i]) same01 = 0;
  ck_assert_msg(!same01, "epochs 0 and 1 gave the same order");
  /* full epoch without drop_last: every example exactly once */
  ctorch_data_loader_free(l);
  CT_OK(ctorch_data_loader_new(&l, data, targets, 10, 1, 42, 0));
  ck_assert_int_eq(run_epoch(l, order, &last), 11);
  memset(seen, 0, sizeof seen);
  for (i = 0; i < N; ++i) seen[order[i]]++;
  for (i = 0; i < N; ++i) ck_assert_int_eq(seen[i], 1);
  /* same seed and epoch, same order */
  for (i = 0; i < 100; ++i) ck_assert_int_eq(order[i], o0[i]);
  CT_OK(ctorch_data_loader_start_epoch(l, 1));
  ck_assert_int_eq(run_epoch(l, order, &last), 11);
  for (i = 0; i < 100; ++i) ck_assert_int_eq(order[i], o1[i]);
  ctorch_data_loader_free(l);
  ctorch_data_loader_free(NULL);
  ctorch_tensor_free(data);
  ctorch_tensor_free(targets);
}
END_TEST

START_TEST(loader_without_targets_and_errors) {
  ctorch_tensor data = NULL, targets = NULL, x = NULL, other = NULL;
  ctorch_data_loader l = NULL;
  int has = 0;
  int64_t n5 = 5, v[5] = {1, 2, 3, 4, 5};
  uint64_t s = 0;
  make_dataset(7, &data, &targets);
  CT_OK(ctorch_data_loader_new(&l, data, NULL, 4, 0, 0, 0));
  CT_OK(ctorch_data_loader_next(&has, &x, NULL, l));
  ck_assert_int_eq(has, 1);
  ctorch_tensor_free(x);
  ctorch_data_loader_free(l);
  CT_OK(ctorch_tensor_from_data(&other, v, sizeof v, &n5, 1, CTORCH_INT64));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_new(&l, data, other, 4, 0, 0, 0));
  CT_ERROR_HAS("targets");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_new(&l, data, targets, 0, 0, 0, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_new(&l, NULL, targets, 4, 0, 0, 0));
  CT_OK(ctorch_data_loader_new(&l, data, targets, 4, 0, 0, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_next(&has, &x, NULL, l));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_data_loader_next(&has, &x, NULL, NULL));
  ctorch_data_loader_free(l);
  CT_OK(ctorch_data_epoch_seed(&s, 3, 2));
  ck_assert(s == 3u * 1000003u + 2u);
  ctorch_tensor_free(data);
  ctorch_tensor_free(targets);
  ctorch_tensor_free(other);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("data");
  TCase *tc = tcase_create("data");
  tcase_add_checked_fixture(tc, setup, ct_tmp_dir_remove);
  tcase_add_test(tc, plain_and_gzip_ubyte);
  tcase_add_test(tc, big_endian_types);
  tcase_add_test(tc, corrupt_and_truncated_files);
  tcase_add_test(tc, mnist_pair_checks);
  tcase_add_test(tc, loader_orders);
  tcase_add_test(tc, loader_without_targets_and_errors);
  suite_add_tcase(s, tc);
  /* The real data set: its own ctest test (test_data_fashion_mnist), skipped without the data. */
  tc = tcase_create("fashion_mnist");
  tcase_set_tags(tc, "fashion_mnist");
  tcase_add_test(tc, real_fashion_mnist);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
