/* AOTInductor packages (ctorch_aoti_*). One binary, two ctest tests:
 *   test_aoti         (CTORCH_AOTI_MODE=packages) a package compiled at test
 *                     time by tests/models/make_aoti_package.py: outputs equal
 *                     the eager model's, metadata, wrong inputs, bad handles,
 *                     and the replay corpus (aoti_corpus/ plus truncated and
 *                     bit-flipped copies of the package): every bad file is a
 *                     status and leaves no temporary directory behind.
 *                     Skipped (77) where libtorch has no loader (1.13).
 *   aoti_unavailable  (CTORCH_AOTI_MODE=unavailable) every call answers
 *                     NOT_IMPLEMENTED; skipped (77) where there is a loader. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"

static char g_dir[4096];
static int g_ok;
static char g_err[13000];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *in_dir(const char *name) {
  static char buf[4096 + 128];
  ck_assert_msg(g_ok, "the package was not made: %s", g_err);
  snprintf(buf, sizeof buf, "%s/%s", g_dir, name);
  return buf;
}

static ctorch_tensor raw_floats(const char *name, const int64_t *shape, size_t ndim) {
  float v[64];
  size_t n = 1, i;
  FILE *f;
  for (i = 0; i < ndim; ++i) n *= (size_t)shape[i];
  ck_assert(n <= 64);
  f = fopen(in_dir(name), "rb");
  ck_assert_msg(f != NULL, "cannot read %s", name);
  ck_assert_uint_eq(fread(v, sizeof(float), n, f), n);
  fclose(f);
  return ct_floats(v, shape, ndim);
}

static const int64_t XS[2] = {2, 4}, BS[1] = {3}, Y0S[2] = {2, 3}, Y1S[2] = {2, 8};

static ctorch_aoti_package load(void) {
  ctorch_aoti_package p = NULL;
  CT_OK(ctorch_aoti_package_load(&p, in_dir("mlp.pt2"), NULL));
  return p;
}

/* max |aoti - eager| over both outputs */
static double run_vs_eager(ctorch_aoti_package p) {
  ctorch_tensor in[2], y0 = raw_floats("y0.bin", Y0S, 2), y1 = raw_floats("y1.bin", Y1S, 2), o0 = NULL, o1 = NULL;
  ctorch_tensor_list out = NULL;
  size_t n = 0;
  double d0, d1;
  in[0] = raw_floats("x.bin", XS, 2);
  in[1] = raw_floats("b.bin", BS, 1);
  CT_OK(ctorch_aoti_package_run(&out, p, in, 2));
  CT_OK(ctorch_tensor_list_size(&n, out));
  ck_assert_uint_eq(n, 2);
  CT_OK(ctorch_tensor_list_get(&o0, out, 0));
  CT_OK(ctorch_tensor_list_get(&o1, out, 1));
  d0 = ct_max_abs_diff(o0, y0);
  d1 = ct_max_abs_diff(o1, y1);
  ctorch_tensor_list_free(out);
  ctorch_tensor_free(o0), ctorch_tensor_free(o1), ctorch_tensor_free(y0), ctorch_tensor_free(y1);
  ctorch_tensor_free(in[0]), ctorch_tensor_free(in[1]);
  return d0 > d1 ? d0 : d1;
}

START_TEST(runs_like_eager) {
  double t0 = now_s(), t_load, diff;
  ctorch_aoti_package p = load();
  int avail = 0;
  t_load = now_s() - t0;
  CT_OK(ctorch_aoti_available(&avail));
  ck_assert_int_eq(avail, 1);
  diff = run_vs_eager(p);
  printf("aoti: max |aoti - eager| = %.3g, load %.1f ms\n", diff, t_load * 1e3);
  ck_assert_msg(diff <= 1e-5, "AOTI and eager differ by %g", diff);
  /* again (a second run reuses the model's buffers) */
  ck_assert_double_le(run_vs_eager(p), 1e-5);
  ctorch_aoti_package_free(p);
}
END_TEST

START_TEST(metadata_and_spec) {
  ctorch_aoti_package p = load();
  const char *k = NULL, *v = NULL, *prev = "", *in_spec = NULL, *out_spec = NULL;
  size_t n = 0, i;
  CT_OK(ctorch_aoti_package_metadata_size(&n, p));
  ck_assert_uint_ge(n, 2);
  for (i = 0; i < n; ++i) { /* key order */
    CT_OK(ctorch_aoti_package_metadata_entry(&k, &v, p, i));
    ck_assert_int_lt(strcmp(prev, k), 0);
    prev = k;
  }
  CT_OK(ctorch_aoti_package_metadata_find(&v, p, "AOTI_DEVICE_KEY"));
  ck_assert_str_eq(v, "cpu");
  CT_OK(ctorch_aoti_package_metadata_find(&v, p, "ctorch_test")); /* the user's aot_inductor.metadata */
  ck_assert_str_eq(v, "two_in_two_out");
  CT_FAILS(CTORCH_INDEX, ctorch_aoti_package_metadata_find(&v, p, "no such key"));
  ck_assert_ptr_null(v);
  CT_FAILS(CTORCH_INDEX, ctorch_aoti_package_metadata_entry(&k, &v, p, n));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_aoti_package_metadata_find(&v, p, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_aoti_package_metadata_entry(NULL, &v, p, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_aoti_package_metadata_size(NULL, p));
  CT_OK(ctorch_aoti_package_call_spec(&in_spec, &out_spec, p));
  ck_assert_ptr_nonnull(strstr(in_spec, "builtins.tuple"));
  ck_assert_ptr_nonnull(strstr(out_spec, "builtins.tuple"));
  ctorch_aoti_package_free(p);
}
END_TEST

START_TEST(wrong_inputs_are_statuses) {
  ctorch_aoti_package p = load();
  const int64_t x3[2] = {3, 4}, one[1] = {1};
  const ctorch_dtype f64 = CTORCH_FLOAT64;
  ctorch_tensor x = raw_floats("x.bin", XS, 2), b = raw_floats("b.bin", BS, 1), big = NULL, xd = NULL, nul = NULL,
                in[3];
  ctorch_tensor_list out = (ctorch_tensor_list)1;
  CT_OK(ctorch_zeros(&big, x3, 2, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_tensor_to_dtype(&xd, x, CTORCH_FLOAT64));
  in[0] = x, in[1] = b, in[2] = b;
  CT_FAILS(CTORCH_RUNTIME, ctorch_aoti_package_run(&out, p, in, 1)); /* too few */
  ck_assert_ptr_null(out);
  CT_FAILS(CTORCH_RUNTIME, ctorch_aoti_package_run(&out, p, in, 3)); /* too many */
  in[0] = big;
  CT_FAILS(CTORCH_RUNTIME, ctorch_aoti_package_run(&out, p, in, 2)); /* shape */
  CT_ERROR_HAS("did not run");
  in[0] = xd;
  CT_FAILS(CTORCH_RUNTIME, ctorch_aoti_package_run(&out, p, in, 2)); /* dtype */
  in[0] = x, in[1] = nul;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_aoti_package_run(&out, p, in, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_aoti_package_run(&out, p, NULL, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_aoti_package_run(NULL, p, in, 2));
  /* the model still runs afterwards */
  ck_assert_double_le(run_vs_eager(p), 1e-5);
  (void)one, (void)f64;
  ctorch_tensor_free(x), ctorch_tensor_free(b), ctorch_tensor_free(big), ctorch_tensor_free(xd);
  ctorch_aoti_package_free(p);
}
END_TEST

START_TEST(bad_handles_and_paths) {
  ctorch_aoti_package p = (ctorch_aoti_package)1;
  ctorch_tensor_list out = NULL;
  size_t n;
  const char *v;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_aoti_package_load(NULL, in_dir("mlp.pt2"), NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_aoti_package_load(&p, NULL, NULL));
  ck_assert_ptr_null(p);
  CT_FAILS(CTORCH_IO, ctorch_aoti_package_load(&p, "/nonexistent/model.pt2", NULL));
  CT_FAILS(CTORCH_IO, ctorch_aoti_package_load(&p, g_dir, NULL)); /* a directory */
  CT_FAILS(CTORCH_VALUE, ctorch_aoti_package_load(&p, in_dir("mlp.pt2"), "nope"));
  CT_ERROR_HAS("models in the archive: model");
  CT_FAILS(CTORCH_VALUE, ctorch_aoti_package_load(&p, in_dir("mlp.pt2"), "../model"));
  CT_FAILS(CTORCH_VALUE, ctorch_aoti_package_load(&p, in_dir("x.bin"), NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_aoti_package_run(&out, NULL, NULL, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_aoti_package_metadata_size(&n, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_aoti_package_metadata_find(&v, NULL, "k"));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_aoti_package_call_spec(&v, &v, NULL));
  ctorch_aoti_package_free(NULL);
}
END_TEST

/* ---- replay corpus ------------------------------------------------------------- */

static int count_loader_dirs(void) {
  const char *tmp = getenv("TMPDIR");
  DIR *d = opendir(tmp && *tmp ? tmp : "/tmp");
  struct dirent *e;
  int n = 0;
  ck_assert_ptr_nonnull(d);
  while ((e = readdir(d)) != NULL)
    if (strncmp(e->d_name, "aotinductor_", 12) == 0) ++n;
  closedir(d);
  return n;
}

static int file_exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}

/* Loads path; it must fail with a status (never crash, never load). */
static void refused(const char *path, const char *model, const char *what) {
  ctorch_aoti_package p = NULL;
  ctorch_status st = ctorch_aoti_package_load(&p, path, model);
  ck_assert_msg(st == CTORCH_VALUE || st == CTORCH_IO || st == CTORCH_NOT_IMPLEMENTED, "%s (%s): status %s%s%s", path,
                what, ctorch_status_name(st), st ? ": " : "", st ? ctorch_last_error() : "");
  ck_assert_ptr_null(p);
}

START_TEST(corpus_is_refused) {
  const char *src = getenv("CTORCH_SOURCE_DIR");
  char dirpath[4096], path[8192];
  DIR *d;
  struct dirent *e;
  int before = count_loader_dirs(), files = 0;
  ck_assert_ptr_nonnull(src);
  unlink("/tmp/ctorch-aoti-slip");
  unlink("/tmp/ctorch-aoti-ran");
  snprintf(dirpath, sizeof dirpath, "%s/tests/models/aoti_corpus", src);
  d = opendir(dirpath);
  ck_assert_ptr_nonnull(d);
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dirpath, e->d_name);
    refused(path, NULL, e->d_name);
    ++files;
  }
  closedir(d);
  ck_assert_int_ge(files, 30);
  ck_assert_msg(!file_exists("/tmp/ctorch-aoti-slip"), "an entry was written outside the extraction directory");
  ck_assert_msg(!file_exists("/tmp/ctorch-aoti-ran"), "a command from a package ran");
  ck_assert_int_eq(count_loader_dirs(), before);
}
END_TEST

/* Truncated and bit-flipped copies of the real package. */
START_TEST(damaged_package_is_refused) {
  size_t nread = 0;
  unsigned char *data = (unsigned char *)ct_read_file(in_dir("mlp.pt2"), &nread);
  long size = (long)nread;
  size_t i;
  char path[4200];
  int before = count_loader_dirs();
  ctorch_aoti_package p = NULL;
  snprintf(path, sizeof path, "%s", in_dir("damaged.pt2"));
  {
    const long cuts[] = {0, 1, 4, 21, 22, 30, 1000, size / 3, size / 2, size - 4096, size - 200, size - 23, size - 22,
                         size - 1};
    for (i = 0; i < sizeof cuts / sizeof cuts[0]; ++i) {
      char what[64];
      snprintf(what, sizeof what, "cut at %ld of %ld bytes", cuts[i], size);
      ct_write_file(path, data, (size_t)cuts[i]);
      refused(path, NULL, what);
    }
  }
  /* a flipped byte in each tenth of the file: the CRC check (or the zip
   * structure) catches every one, wherever libtorch's loader would not */
  for (i = 0; i < 10; ++i) {
    size_t at = (size_t)size / 10 * i + 97;
    char what[64];
    snprintf(what, sizeof what, "byte %zu of %ld flipped", at, size);
    data[at] ^= 0x5a;
    ct_write_file(path, data, (size_t)size);
    refused(path, NULL, what);
    data[at] ^= 0x5a;
  }
  /* the undamaged bytes load */
  ct_write_file(path, data, (size_t)size);
  CT_OK(ctorch_aoti_package_load(&p, path, NULL));
  ctorch_aoti_package_free(p);
  unlink(path);
  free(data);
  ck_assert_int_eq(count_loader_dirs(), before);
}
END_TEST

typedef struct {
  ctorch_aoti_package p;
  double diff[20];
} runner_arg;

static void *run_many(void *arg) {
  runner_arg *r = arg;
  int i;
  for (i = 0; i < 20; ++i) r->diff[i] = run_vs_eager(r->p);
  return NULL;
}

START_TEST(concurrent_runs) {
  runner_arg a, b;
  pthread_t ta, tb;
  int i;
  a.p = b.p = load();
  ck_assert_int_eq(pthread_create(&ta, NULL, run_many, &a), 0);
  ck_assert_int_eq(pthread_create(&tb, NULL, run_many, &b), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  for (i = 0; i < 20; ++i) ck_assert(a.diff[i] <= 1e-5 && b.diff[i] <= 1e-5);
  ctorch_aoti_package_free(a.p);
}
END_TEST

/* ---- 1.13: not implemented ----------------------------------------------------- */

START_TEST(every_call_not_implemented) {
  ctorch_aoti_package p = (ctorch_aoti_package)1;
  ctorch_tensor_list out = (ctorch_tensor_list)1;
  const char *k = "x", *v = "x";
  size_t n = 7;
  int avail = -1;
  CT_OK(ctorch_aoti_available(&avail));
  ck_assert_int_eq(avail, 0);
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_aoti_package_load(&p, "/tmp/any.pt2", NULL));
  CT_ERROR_HAS("need libtorch 2.6 or newer");
  ck_assert_ptr_null(p);
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_aoti_package_load(NULL, NULL, NULL));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_aoti_package_run(&out, NULL, NULL, 0));
  ck_assert_ptr_null(out);
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_aoti_package_metadata_size(&n, NULL));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_aoti_package_metadata_entry(&k, &v, NULL, 0));
  ck_assert_ptr_null(k);
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_aoti_package_metadata_find(&v, NULL, "k"));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_aoti_package_call_spec(&k, &v, NULL));
  ctorch_aoti_package_free(NULL);
}
END_TEST

/* Each test's time (CK_VERBOSE then names it): where a slow run spends it. */
static double g_test_t0;
static void test_started(void) { g_test_t0 = now_s(); }
static void test_ended(void) {
  printf("aoti: test took %.1f s\n", now_s() - g_test_t0);
  fflush(stdout);
}

static void make_package(void) {
  double t0 = now_s();
  g_ok = ct_make_with_python("tests/models/make_aoti_package.py", "aoti_package", g_dir, sizeof g_dir, g_err,
                             sizeof g_err);
  if (!g_ok) return;
  printf("aoti: package made in %.1f s\n", now_s() - t0);
  fflush(stdout);
}

int main(void) {
  const char *mode = getenv("CTORCH_AOTI_MODE");
  const char *version = "?";
  int avail = 0, failed, unavailable_mode = mode && strcmp(mode, "unavailable") == 0;
  Suite *s;
  TCase *tc;
  SRunner *sr;
  if (ctorch_aoti_available(&avail) != CTORCH_OK) { /* outside a test: no ck_assert here */
    fprintf(stderr, "ctorch_aoti_available: %s\n", ctorch_last_error());
    return EXIT_FAILURE;
  }
  ctorch_torch_version(&version);
  /* Skips are decided before the suite exists (nothing allocated to leak
   * under LeakSanitizer on the way out). */
  if (unavailable_mode && avail) {
    printf("skipped: libtorch %s has an AOTInductor package loader (test_aoti covers it)\n", version);
    return 77;
  }
  if (!unavailable_mode && !avail) {
    printf("skipped: libtorch %s has no AOTInductor package loader (it needs 2.6 or newer)\n", version);
    return 77;
  }
  if (!unavailable_mode && ct_check_requirements()) return 77;
  s = suite_create("aoti");
  tc = tcase_create("aoti");
  tcase_set_timeout(tc, 600);
  tcase_add_checked_fixture(tc, test_started, test_ended);
  if (unavailable_mode) {
    tcase_add_test(tc, every_call_not_implemented);
  } else {
    make_package(); /* once, before check forks the tests */
    /* The loader's temporary directories go to a directory of this test's
     * own, so that counting them sees no other process's (Python's compile
     * above kept the usual one, and with it inductor's warm cache). */
    if (getenv("CTORCH_AOTI_TMPDIR")) {
      mkdir(getenv("CTORCH_AOTI_TMPDIR"), 0700);
      setenv("TMPDIR", getenv("CTORCH_AOTI_TMPDIR"), 1);
    }
    tcase_add_test(tc, runs_like_eager);
    tcase_add_test(tc, metadata_and_spec);
    tcase_add_test(tc, wrong_inputs_are_statuses);
    tcase_add_test(tc, bad_handles_and_paths);
    tcase_add_test(tc, corpus_is_refused);
    tcase_add_test(tc, damaged_package_is_refused);
    tcase_add_test(tc, concurrent_runs);
  }
  suite_add_tcase(s, tc);
  ct_fast_child_exit();
  sr = srunner_create(s);
  srunner_run_all(sr, CK_VERBOSE); /* a line per test as it ends */
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
