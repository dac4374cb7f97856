/* Every string ctorch writes into a TensorBoard record is valid UTF-8
 * (text/utf8.h): each class of bad string is refused with
 * INVALID_ARGUMENT naming the argument, in every argument that takes one, and
 * nothing is written; valid text of every length class (1-4 bytes, the
 * largest code point, the ones around the surrogates) is accepted. That
 * TensorBoard's reader reads back what was accepted is
 * tests/logging/tensorboard_vs_torch.py's part. */
#include "check_main.h"
#include "tmp_files.h"

/* The bad classes, each with what makes it bad. */
static const struct {
  const char *s, *why;
} kBad[] = {
    {"a\x80z", "a lone continuation byte"},
    {"a\xc3", "a sequence truncated at the end"},
    {"a\xe2\x82z", "a sequence truncated before a letter"},
    {"\xc0\x80", "an overlong NUL"},
    {"\xc1\xbf", "an overlong 2-byte form"},
    {"\xe0\x80\xaf", "an overlong 3-byte '/'"},
    {"\xf0\x82\x82\xac", "an overlong 4-byte euro sign"},
    {"\xed\xa0\x80", "an encoded high surrogate U+D800"},
    {"\xed\xbf\xbf", "an encoded low surrogate U+DFFF"},
    {"\xed\xa0\xbd\xed\xb8\x80", "a surrogate pair (CESU-8)"},
    {"\xf4\x90\x80\x80", "U+110000, past the last code point"},
    {"\xf8\x88\x80\x80\x80", "a 5-byte form"},
    {"\xfe\xff", "bytes that start nothing"},
};
static const char *kGood[] = {
    "plain/ascii",
    "\xc3\xa9t\xc3\xa9",              /* été */
    "\xe6\x97\xa5\xe6\x9c\xac",       /* 日本 */
    "\xed\x9f\xbf|\xee\x80\x80",      /* U+D7FF, U+E000: around the surrogates */
    "\xf0\x9f\x98\x80",               /* U+1F600 */
    "\xf4\x8f\xbf\xbf",               /* U+10FFFF */
    "\xef\xbf\xbf",                   /* U+FFFF (a noncharacter, valid UTF-8) */
};
#define N_BAD (sizeof kBad / sizeof kBad[0])
#define N_GOOD (sizeof kGood / sizeof kGood[0])

static off_t file_size(const char *path) {
  struct stat sb;
  ck_assert_int_eq(stat(path, &sb), 0);
  return sb.st_size;
}

#define REFUSED(call, arg, why)                                                                             \
  do {                                                                                                      \
    ctorch_status st_ = (call);                                                                             \
    ck_assert_msg(st_ == CTORCH_INVALID_ARGUMENT, "%s with %s -> %s: %s", #call, why, ctorch_status_name(st_), \
                  ctorch_last_error());                                                                     \
    CT_ERROR_HAS(arg);                                                                                      \
    CT_ERROR_HAS("UTF-8");                                                                                  \
  } while (0)

START_TEST(test_bad_strings_refused_everywhere) {
  const char *dir = ct_tmp_dir;
  ctorch_summary_writer w = NULL, bad = NULL;
  const char *path = NULL;
  ctorch_tensor t = NULL, img = NULL;
  const int64_t n3 = 3, s3[3] = {3, 2, 2};
  size_t i;
  off_t size0;
  CT_OK(ctorch_summary_writer_new(&w, dir, NULL));
  CT_OK(ctorch_summary_writer_path(&path, w));
  CT_OK(ctorch_ones(&t, &n3, 1, NULL, NULL, NULL, NULL));
  CT_OK(ctorch_zeros(&img, s3, 3, NULL, NULL, NULL, NULL));
  size0 = file_size(path);
  for (i = 0; i < N_BAD; ++i) {
    const char *s = kBad[i].s, *why = kBad[i].why;
    const char *names[2] = {"lr", s}, *texts[2] = {NULL, s}, *metrics[1] = {s};
    const char *ok_names[1] = {"opt"}, *bad_texts[1] = {s};
    const double values[2] = {0.1, 2}, mv[1] = {0.5};
    REFUSED(ctorch_summary_writer_add_scalar(w, s, 1.0, 0, 0), "tag", why);
    REFUSED(ctorch_summary_writer_add_histogram(w, s, t, 0, 0), "tag", why);
    REFUSED(ctorch_summary_writer_add_image(w, s, img, 0, 0), "tag", why);
    REFUSED(ctorch_summary_writer_add_text(w, s, "x", 0, 0), "tag", why);
    REFUSED(ctorch_summary_writer_add_text(w, "notes", s, 0, 0), "text", why);
    REFUSED(ctorch_summary_writer_add_hparams(w, names, values, NULL, 2, NULL, NULL, 0, "r"), "names[1]", why);
    REFUSED(ctorch_summary_writer_add_hparams(w, ok_names, NULL, bad_texts, 1, NULL, NULL, 0, "r"), "texts[0]", why);
    REFUSED(ctorch_summary_writer_add_hparams(w, names, values, texts, 1, metrics, mv, 1, "r"), "metric_names[0]", why);
    REFUSED(ctorch_summary_writer_add_hparams(w, names, values, NULL, 1, NULL, NULL, 0, s), "run_name", why);
    REFUSED(ctorch_summary_writer_new(&bad, dir, s), "filename_suffix", why);
    ck_assert_ptr_null(bad);
  }
  /* Nothing was written: not a byte in the file, no run directory, no second file. */
  ck_assert_int_eq(file_size(path), size0);
  ck_assert_int_eq(ct_tmp_dir_count(), 1);
  ctorch_summary_writer_free(w);
  ctorch_tensor_free(t);
  ctorch_tensor_free(img);
}
END_TEST

START_TEST(test_good_strings_accepted) {
  const char *dir = ct_tmp_dir;
  ctorch_summary_writer w = NULL;
  const char *path = NULL;
  size_t i;
  off_t size;
  CT_OK(ctorch_summary_writer_new(&w, dir, "\xc3\xa9"));
  CT_OK(ctorch_summary_writer_path(&path, w));
  for (i = 0; i < N_GOOD; ++i) {
    const char *s = kGood[i];
    const char *names[1] = {s}, *texts[1] = {s}, *metrics[1] = {s};
    const double mv[1] = {0.5};
    char run[32];
    size = file_size(path);
    CT_OK(ctorch_summary_writer_add_scalar(w, s, 1.0, (int64_t)i, 0));
    CT_OK(ctorch_summary_writer_add_text(w, s, s, (int64_t)i, 0));
    ck_assert_int_gt(file_size(path), size);
    snprintf(run, sizeof run, "run%zu", i);
    CT_OK(ctorch_summary_writer_add_hparams(w, names, NULL, texts, 1, metrics, mv, 1, run));
  }
  CT_OK(ctorch_summary_writer_add_hparams(w, (const char *[]){"x"}, (const double[]){1}, NULL, 1, NULL, NULL, 0,
                                          "\xe6\x97\xa5"));
  ctorch_summary_writer_free(w);
}
END_TEST

static void make_dir(void) { ct_tmp_dir_make("tb_utf8"); }

static Suite *make_suite(void) {
  Suite *s = suite_create("tensorboard_utf8");
  TCase *tc = tcase_create("utf8");
  tcase_add_checked_fixture(tc, make_dir, ct_tmp_dir_remove);
  tcase_add_test(tc, test_bad_strings_refused_everywhere);
  tcase_add_test(tc, test_good_strings_accepted);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
