/* Checkpoints: round trips, atomic writes, missing/truncated/corrupt files,
 * the format written (what torch.load(weights_only=True) accepts), files of
 * earlier ctorch versions. (Crossing to and from Python: tests/python/
 * test_py_checkpoint.py and test_py_interop_files.py.) */
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "tmp_files.h"

static void make_dir(void) { ct_tmp_dir_make("serialize"); }

/* Asserts two tensors have the same dtype, shape and bytes. */
static void assert_same(ctorch_tensor a, ctorch_tensor b) {
  ctorch_dtype da, db;
  int64_t na = 0, nb = 0, dima = 0, dimb = 0, sa[8], sb[8], i;
  size_t item = 0;
  unsigned char *ba, *bb;
  CT_OK(ctorch_tensor_dtype(&da, a));
  CT_OK(ctorch_tensor_dtype(&db, b));
  ck_assert_int_eq(da, db);
  CT_OK(ctorch_tensor_dim(&dima, a));
  CT_OK(ctorch_tensor_dim(&dimb, b));
  ck_assert_int_eq(dima, dimb);
  CT_OK(ctorch_tensor_sizes(sa, 8, a));
  CT_OK(ctorch_tensor_sizes(sb, 8, b));
  for (i = 0; i < dima; ++i) ck_assert_int_eq(sa[i], sb[i]);
  CT_OK(ctorch_tensor_numel(&na, a));
  CT_OK(ctorch_tensor_numel(&nb, b));
  CT_OK(ctorch_dtype_size(&item, da));
  ba = malloc((size_t)na * item + 1);
  bb = malloc((size_t)nb * item + 1);
  CT_OK(ctorch_tensor_copy_to(ba, (size_t)na * item, a));
  CT_OK(ctorch_tensor_copy_to(bb, (size_t)nb * item, b));
  ck_assert_mem_eq(ba, bb, (size_t)na * item);
  free(ba);
  free(bb);
}

/* Asserts the file `name` still holds exactly the n bytes of `before` and is
 * the directory's only entry (no temporary file left behind); frees `before`. */
static void assert_file_kept(const char *name, char *before, size_t n) {
  size_t na = 0;
  char *after = ct_read_file(ct_tmp_path(name), &na);
  ck_assert_uint_eq(na, n);
  ck_assert_mem_eq(after, before, n);
  ck_assert_int_eq(ct_tmp_dir_count(), 1);
  free(before);
  free(after);
}

START_TEST(tensor_round_trips) {
  static const ctorch_dtype dts[] = {CTORCH_BOOL,    CTORCH_UINT8,   CTORCH_INT8,      CTORCH_INT16,
                                     CTORCH_INT32,   CTORCH_INT64,   CTORCH_FLOAT16,   CTORCH_BFLOAT16,
                                     CTORCH_FLOAT32, CTORCH_FLOAT64, CTORCH_COMPLEX64, CTORCH_COMPLEX128};
  unsigned char bytes[12 * 16];
  int64_t sizes[2] = {3, 4};
  size_t k, i, item;
  for (k = 0; k < sizeof dts / sizeof dts[0]; ++k) {
    ctorch_tensor t = NULL, u = NULL;
    CT_OK(ctorch_dtype_size(&item, dts[k]));
    for (i = 0; i < 12 * item; ++i) bytes[i] = (unsigned char)(dts[k] == CTORCH_BOOL ? i % 3 == 0 : (i * 13 + k) & 0x3f);
    CT_OK(ctorch_tensor_from_data(&t, bytes, 12 * item, sizes, 2, dts[k]));
    CT_OK(ctorch_save(ct_tmp_path("t.pt"), t));
    CT_OK(ctorch_load(&u, ct_tmp_path("t.pt")));
    assert_same(t, u);
    ctorch_tensor_free(t);
    ctorch_tensor_free(u);
  }
}
END_TEST

START_TEST(views_zero_dim_and_empty_round_trip) {
  float buf[12];
  int64_t sizes[2] = {3, 2}, strides[2] = {1, 4}, zero[2] = {0, 7};
  ctorch_tensor t = NULL, u = NULL;
  int contig = -1;
  double d = 0;
  int i;
  for (i = 0; i < 12; ++i) buf[i] = (float)i * 1.5f;
  CT_OK(ctorch_tensor_from_blob(&t, buf, sizes, strides, 2, CTORCH_FLOAT32, ctorch_device_cpu(), NULL, NULL));
  CT_OK(ctorch_save(ct_tmp_path("v.pt"), t));
  CT_OK(ctorch_load(&u, ct_tmp_path("v.pt")));
  assert_same(t, u);
  CT_OK(ctorch_tensor_is_contiguous(&contig, u));
  ck_assert_int_eq(contig, 0); /* strides are kept, as torch.save does */
  ctorch_tensor_free(t);
  ctorch_tensor_free(u);

  buf[0] = -3.25f;
  CT_OK(ctorch_tensor_from_data(&t, buf, sizeof(float), NULL, 0, CTORCH_FLOAT32));
  CT_OK(ctorch_save(ct_tmp_path("s.pt"), t));
  CT_OK(ctorch_load(&u, ct_tmp_path("s.pt")));
  CT_OK(ctorch_tensor_item_double(&d, u));
  ck_assert_double_eq(d, -3.25);
  assert_same(t, u);
  ctorch_tensor_free(t);
  ctorch_tensor_free(u);

  CT_OK(ctorch_tensor_from_data(&t, NULL, 0, zero, 2, CTORCH_INT64));
  CT_OK(ctorch_save(ct_tmp_path("e.pt"), t));
  CT_OK(ctorch_load(&u, ct_tmp_path("e.pt")));
  assert_same(t, u);
  ctorch_tensor_free(t);
  ctorch_tensor_free(u);
}
END_TEST

START_TEST(dict_round_trip_and_lookup) {
  float w[6] = {1, 2, 3, 4, 5, 6}, b[2] = {-1, 1};
  int64_t ws[2] = {2, 3}, bs[1] = {2};
  const char *names[3] = {"layer.weight", "layer.bias", "z_last"};
  ctorch_tensor ts[3], got = NULL;
  ctorch_tensor_dict d = NULL;
  const char *key = NULL;
  size_t n = 0, i;
  ts[0] = ct_floats(w, ws, 2);
  ts[1] = ct_floats(b, bs, 1);
  ts[2] = ct_floats(b, bs, 1);
  CT_OK(ctorch_save_dict(ct_tmp_path("sd.pt"), names, ts, 3));
  CT_OK(ctorch_load_dict(&d, ct_tmp_path("sd.pt")));
  CT_OK(ctorch_tensor_dict_size(&n, d));
  ck_assert_uint_eq(n, 3);
  for (i = 0; i < 3; ++i) { /* order kept */
    CT_OK(ctorch_tensor_dict_key(&key, d, i));
    ck_assert_str_eq(key, names[i]);
    CT_OK(ctorch_tensor_dict_get(&got, d, i));
    assert_same(got, ts[i]);
    ctorch_tensor_free(got);
  }
  CT_OK(ctorch_tensor_dict_find(&got, d, "layer.bias"));
  assert_same(got, ts[1]);
  ctorch_tensor_free(got);
  got = (ctorch_tensor)0x1;
  CT_FAILS(CTORCH_INDEX, ctorch_tensor_dict_find(&got, d, "layer.nothing"));
  ck_assert_ptr_null(got);
  CT_ERROR_HAS("layer.nothing");
  CT_FAILS(CTORCH_INDEX, ctorch_tensor_dict_get(&got, d, 3));
  CT_FAILS(CTORCH_INDEX, ctorch_tensor_dict_key(&key, d, 3));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dict_find(&got, d, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dict_size(&n, NULL));

  /* Asking for the wrong shape of file is TYPE. */
  CT_FAILS(CTORCH_TYPE, ctorch_load(&got, ct_tmp_path("sd.pt")));
  CT_ERROR_HAS("ctorch_load_dict");
  CT_OK(ctorch_save(ct_tmp_path("one.pt"), ts[0]));
  ctorch_tensor_dict_free(d);
  d = (ctorch_tensor_dict)0x1;
  CT_FAILS(CTORCH_TYPE, ctorch_load_dict(&d, ct_tmp_path("one.pt")));
  ck_assert_ptr_null(d);

  /* Empty dict. */
  CT_OK(ctorch_save_dict(ct_tmp_path("empty.pt"), NULL, NULL, 0));
  CT_OK(ctorch_load_dict(&d, ct_tmp_path("empty.pt")));
  CT_OK(ctorch_tensor_dict_size(&n, d));
  ck_assert_uint_eq(n, 0);
  ctorch_tensor_dict_free(d);
  ctorch_tensor_dict_free(NULL);

  for (i = 0; i < 3; ++i) ctorch_tensor_free(ts[i]);
}
END_TEST

START_TEST(bad_save_arguments_keep_the_old_file) {
  float w[2] = {1, 2};
  int64_t s[1] = {2};
  const char *names[2] = {"a", "b"}, *dup[2] = {"a", "a"}, *nulls[2] = {"a", NULL};
  ctorch_tensor ts[2], with_null[2];
  char *before;
  size_t nb;
  ts[0] = ct_floats(w, s, 1);
  ts[1] = ct_floats(w, s, 1);
  with_null[0] = ts[0];
  with_null[1] = NULL;
  CT_OK(ctorch_save_dict(ct_tmp_path("keep.pt"), names, ts, 2));
  before = ct_read_file(ct_tmp_path("keep.pt"), &nb);

  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_save_dict(ct_tmp_path("keep.pt"), names, with_null, 2));
  CT_ERROR_HAS("'tensors'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_save_dict(ct_tmp_path("keep.pt"), dup, ts, 2));
  CT_ERROR_HAS("twice");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_save_dict(ct_tmp_path("keep.pt"), nulls, ts, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_save_dict(ct_tmp_path("keep.pt"), NULL, ts, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_save(ct_tmp_path("keep.pt"), NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_save(NULL, ts[0]));
  CT_ERROR_HAS("'path'");

  assert_file_kept("keep.pt", before, nb);
  ctorch_tensor_free(ts[0]);
  ctorch_tensor_free(ts[1]);
}
END_TEST

START_TEST(failed_write_leaves_old_file_and_no_temp) {
  /* A file size limit makes write() fail half-way (EFBIG), as a full disk
   * would. check runs each test in its own process, so the limit and the
   * ignored SIGXFSZ stay here. */
  static float big[1 << 16];
  float small[2] = {7, 8};
  int64_t sb[1] = {1 << 16}, ss[1] = {2};
  ctorch_tensor tb = ct_floats(big, sb, 1), ts = ct_floats(small, ss, 1), u = NULL;
  struct rlimit rl;
  char *before;
  size_t nb;
  CT_OK(ctorch_save(ct_tmp_path("ckpt.pt"), ts));
  before = ct_read_file(ct_tmp_path("ckpt.pt"), &nb);
  ck_assert_int_lt(nb, 16384);

  signal(SIGXFSZ, SIG_IGN);
  rl.rlim_cur = rl.rlim_max = 16384;
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
  CT_FAILS(CTORCH_IO, ctorch_save(ct_tmp_path("ckpt.pt"), tb));
  CT_ERROR_HAS("ctorch_save");
  CT_ERROR_HAS("ckpt.pt");

  assert_file_kept("ckpt.pt", before, nb); /* and the temporary file was removed */
  CT_OK(ctorch_load(&u, ct_tmp_path("ckpt.pt")));
  assert_same(u, ts);
  ctorch_tensor_free(u);
  ctorch_tensor_free(tb);
  ctorch_tensor_free(ts);
}
END_TEST

START_TEST(unwritable_destinations_are_io) {
  float w[2] = {1, 2};
  int64_t s[1] = {2};
  ctorch_tensor t = ct_floats(w, s, 1);
  CT_FAILS(CTORCH_IO, ctorch_save("/nonexistent_dir_ctorch/x.pt", t));
  CT_ERROR_HAS("nonexistent_dir_ctorch");
  ck_assert_int_eq(mkdir(ct_tmp_path("adir"), 0755), 0);
  CT_FAILS(CTORCH_IO, ctorch_save(ct_tmp_path("adir"), t)); /* rename onto a directory */
  ck_assert_int_eq(ct_tmp_dir_count(), 1);
  rmdir(ct_tmp_path("adir"));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_save("", t));
  ctorch_tensor_free(t);
}
END_TEST

/* The pickle names only what torch.load(weights_only=True) allows (PyTorch
 * 2.6+'s default): no torch.jit._pickle helpers as libtorch's pickler
 * writes. Records are stored uncompressed, so the names are in the bytes. */
static int has_bytes(const char *hay, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; ++i)
    if (!memcmp(hay + i, needle, k)) return 1;
  return 0;
}

START_TEST(written_files_use_only_weights_only_globals) {
  float w[6] = {1, 2, 3, 4, 5, 6};
  int64_t ws[2] = {2, 3};
  const char *names[2] = {"w", "b"};
  ctorch_tensor ts[2];
  char *bytes;
  size_t n;
  ts[0] = ct_floats(w, ws, 2);
  CT_OK(ctorch_to_dtype(&ts[1], ts[0], CTORCH_INT64, 0, 0, NULL));
  CT_OK(ctorch_save_dict(ct_tmp_path("sd.pt"), names, ts, 2));
  bytes = ct_read_file(ct_tmp_path("sd.pt"), &n);
  ck_assert(has_bytes(bytes, n, "archive/data.pkl"));
  ck_assert(has_bytes(bytes, n, "archive/byteorder"));
  ck_assert(has_bytes(bytes, n, "ccollections\nOrderedDict\n"));
  ck_assert(has_bytes(bytes, n, "ctorch._utils\n_rebuild_tensor_v2\n"));
  ck_assert(has_bytes(bytes, n, "ctorch\nFloatStorage\n"));
  ck_assert(has_bytes(bytes, n, "ctorch\nLongStorage\n"));
  ck_assert(!has_bytes(bytes, n, "torch.jit"));
  ck_assert(!has_bytes(bytes, n, "restore_type_tag"));
  ck_assert(!has_bytes(bytes, n, "build_intlist"));
  free(bytes);
  ctorch_tensor_free(ts[0]);
  ctorch_tensor_free(ts[1]);
}
END_TEST

/* Views of one storage are written once (one data record, as torch.save
 * does) and share one storage again when loaded. */
START_TEST(shared_storage_is_written_once_and_shared_again) {
  float v[20];
  int64_t s[2] = {4, 5};
  const char *names[3] = {"base", "row2", "cols"};
  ctorch_tensor ts[3], got[3];
  ctorch_tensor_dict d = NULL;
  char *bytes;
  size_t n;
  void *p0 = NULL, *p1 = NULL, *p2 = NULL;
  int64_t st[2];
  for (int i = 0; i < 20; ++i) v[i] = (float)i;
  ts[0] = ct_floats(v, s, 2);
  CT_OK(ctorch_select_int(&ts[1], ts[0], 0, 2));
  {
    ctorch_tensor t = NULL;
    CT_OK(ctorch_transpose_int(&t, ts[0], 0, 1));
    CT_OK(ctorch_narrow(&ts[2], t, 0, 1, 3));
    ctorch_tensor_free(t);
  }
  CT_OK(ctorch_save_dict(ct_tmp_path("views.pt"), names, ts, 3));
  bytes = ct_read_file(ct_tmp_path("views.pt"), &n);
  ck_assert(has_bytes(bytes, n, "archive/data/0"));
  ck_assert(!has_bytes(bytes, n, "archive/data/1"));
  free(bytes);
  CT_OK(ctorch_load_dict(&d, ct_tmp_path("views.pt")));
  for (int i = 0; i < 3; ++i) {
    CT_OK(ctorch_tensor_dict_get(&got[i], d, (size_t)i));
    assert_same(got[i], ts[i]);
  }
  CT_OK(ctorch_tensor_data_ptr(&p0, got[0]));
  CT_OK(ctorch_tensor_data_ptr(&p1, got[1]));
  CT_OK(ctorch_tensor_data_ptr(&p2, got[2]));
  ck_assert_ptr_eq(p1, (char *)p0 + 10 * sizeof(float));
  ck_assert_ptr_eq(p2, (char *)p0 + 1 * sizeof(float));
  CT_OK(ctorch_tensor_strides(st, 2, got[2]));
  ck_assert_int_eq(st[0], 1);
  ck_assert_int_eq(st[1], 5);
  for (int i = 0; i < 3; ++i) {
    ctorch_tensor_free(ts[i]);
    ctorch_tensor_free(got[i]);
  }
  ctorch_tensor_dict_free(d);
}
END_TEST

START_TEST(refusals_keep_the_old_file) {
  float v[4] = {1, 2, 3, 4};
  int64_t s[1] = {4};
  const char *names[2] = {"f", "i"}, *bad_name[1] = {"caf\xe9"};
  ctorch_tensor ts[2];
  char *before;
  size_t nb;
  ts[0] = ct_floats(v, s, 1);
  CT_OK(ctorch_save(ct_tmp_path("keep.pt"), ts[0]));
  before = ct_read_file(ct_tmp_path("keep.pt"), &nb);
  /* One memory seen as two dtypes: torch.save cannot store it either. */
  CT_OK(ctorch_view_dtype(&ts[1], ts[0], CTORCH_INT32));
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_save_dict(ct_tmp_path("keep.pt"), names, ts, 2));
  CT_ERROR_HAS("same memory");
  /* Python's keys are str: bytes that are not UTF-8 cannot be one. */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_save_dict(ct_tmp_path("keep.pt"), bad_name, ts, 1));
  CT_ERROR_HAS("UTF-8");
  assert_file_kept("keep.pt", before, nb);
  ctorch_tensor_free(ts[0]);
  ctorch_tensor_free(ts[1]);
}
END_TEST

START_TEST(requires_grad_and_complex32_round_trip) {
  float v[6] = {1, -2, 3, -4, 5, -6};
  int64_t s[1] = {6};
  ctorch_tensor t = ct_floats(v, s, 1), c = NULL, c32 = NULL, u = NULL;
  int rg = 0;
  CT_OK(ctorch_tensor_set_requires_grad(t, 1));
  CT_OK(ctorch_save(ct_tmp_path("g.pt"), t));
  CT_OK(ctorch_load(&u, ct_tmp_path("g.pt")));
  CT_OK(ctorch_tensor_requires_grad(&rg, u));
  ck_assert_int_eq(rg, 1);
  assert_same(t, u);
  ctorch_tensor_free(u);
  /* complex32 has no storage class: written as PyTorch 2.x does
   * (_rebuild_tensor_v3 over an UntypedStorage, dtype torch.complex32). */
  {
    ctorch_tensor plain = NULL;
    char *bytes;
    size_t n;
    CT_OK(ctorch_detach(&plain, t));
    CT_OK(ctorch_complex(&c, plain, plain));
    CT_OK(ctorch_to_dtype(&c32, c, CTORCH_COMPLEX32, 0, 0, NULL));
    CT_OK(ctorch_save(ct_tmp_path("c32.pt"), c32));
    bytes = ct_read_file(ct_tmp_path("c32.pt"), &n);
    ck_assert(has_bytes(bytes, n, "_rebuild_tensor_v3"));
    ck_assert(has_bytes(bytes, n, "ctorch\ncomplex32\n"));
    free(bytes);
    CT_OK(ctorch_load(&u, ct_tmp_path("c32.pt")));
    assert_same(c32, u);
    ctorch_tensor_free(plain);
  }
  ctorch_tensor_free(u);
  ctorch_tensor_free(c);
  ctorch_tensor_free(c32);
  ctorch_tensor_free(t);
}
END_TEST

/* Files written by ctorch 0.1 (libtorch's torch::pickle_save: dicts tagged
 * with torch.jit._pickle.restore_type_tag) still load. */
START_TEST(files_of_ctorch_0_1_still_load) {
  const char *src = getenv("CTORCH_SOURCE_DIR");
  char path[1024];
  ctorch_tensor_dict d = NULL;
  ctorch_tensor w = NULL, wt = NULL, b = NULL, t = NULL;
  float wv[6];
  int64_t bv[3];
  double tv[4];
  void *pw = NULL, *pwt = NULL;
  size_t n = 0;
  ck_assert_msg(src != NULL, "CTORCH_SOURCE_DIR is not set (ctest sets it)");
  snprintf(path, sizeof path, "%s/tests/data/checkpoints/ctorch-0.1-dict.pt", src);
  CT_OK(ctorch_load_dict(&d, path));
  CT_OK(ctorch_tensor_dict_size(&n, d));
  ck_assert_uint_eq(n, 3);
  CT_OK(ctorch_tensor_dict_find(&w, d, "w"));
  CT_OK(ctorch_tensor_dict_find(&b, d, "b"));
  CT_OK(ctorch_tensor_dict_find(&wt, d, "w_t"));
  CT_OK(ctorch_tensor_copy_to(wv, sizeof wv, w));
  CT_OK(ctorch_tensor_copy_to(bv, sizeof bv, b));
  for (int i = 0; i < 6; ++i) ck_assert_float_eq(wv[i], (float)i);
  for (int i = 0; i < 3; ++i) ck_assert_int_eq(bv[i], i - 1);
  CT_OK(ctorch_tensor_data_ptr(&pw, w));
  CT_OK(ctorch_tensor_data_ptr(&pwt, wt));
  ck_assert_ptr_eq(pw, pwt);
  snprintf(path, sizeof path, "%s/tests/data/checkpoints/ctorch-0.1-tensor.pt", src);
  CT_OK(ctorch_load(&t, path));
  CT_OK(ctorch_tensor_copy_to(tv, sizeof tv, t));
  for (int i = 0; i < 4; ++i) ck_assert_double_eq(tv[i], i * 0.5);
  ctorch_tensor_free(w);
  ctorch_tensor_free(wt);
  ctorch_tensor_free(b);
  ctorch_tensor_free(t);
  ctorch_tensor_dict_free(d);
}
END_TEST

START_TEST(missing_garbage_truncated_and_flipped_files) {
  float w[64];
  int64_t s[2] = {8, 8};
  const char *names[2] = {"w", "v"};
  ctorch_tensor ts[2], u = NULL;
  ctorch_tensor_dict d = NULL;
  char *good;
  size_t n, cut, pos;
  int i, ok = 0, value = 0;
  for (i = 0; i < 64; ++i) w[i] = (float)i;
  ts[0] = ct_floats(w, s, 2);
  ts[1] = ct_floats(w, s, 2);

  CT_FAILS(CTORCH_IO, ctorch_load(&u, ct_tmp_path("missing.pt")));
  CT_ERROR_HAS("missing.pt");
  CT_FAILS(CTORCH_IO, ctorch_load_dict(&d, ct_tmp_path("missing.pt")));
  CT_FAILS(CTORCH_IO, ctorch_load(&u, ct_tmp_dir)); /* a directory */
  ct_write_file(ct_tmp_path("garbage.pt"), "PK\003\004 not really a zip file, just garbage bytes", 46);
  CT_FAILS(CTORCH_VALUE, ctorch_load(&u, ct_tmp_path("garbage.pt")));
  CT_ERROR_HAS("garbage.pt");
  ct_write_file(ct_tmp_path("empty.pt"), "", 0);
  CT_FAILS(CTORCH_VALUE, ctorch_load(&u, ct_tmp_path("empty.pt")));

  CT_OK(ctorch_save_dict(ct_tmp_path("good.pt"), names, ts, 2));
  good = ct_read_file(ct_tmp_path("good.pt"), &n);
  /* Every truncation is refused cleanly. */
  for (cut = 0; cut < n; cut += (cut < 64 ? 1 : 7)) {
    ct_write_file(ct_tmp_path("cut.pt"), good, cut);
    d = (ctorch_tensor_dict)0x1;
    CT_FAILS(CTORCH_VALUE, ctorch_load_dict(&d, ct_tmp_path("cut.pt")));
    ck_assert_ptr_null(d);
  }
  /* Corrupted bytes anywhere: never a crash; either rejected as VALUE or
   * (bytes the zip reader ignores, e.g. timestamps) loaded intact. */
  for (pos = 0; pos < n; pos += 3) {
    good[pos] ^= 0x5a;
    ct_write_file(ct_tmp_path("flip.pt"), good, n);
    good[pos] ^= 0x5a;
    d = NULL;
    {
      ctorch_status st = ctorch_load_dict(&d, ct_tmp_path("flip.pt"));
      ck_assert_msg(st == CTORCH_OK || st == CTORCH_VALUE || st == CTORCH_TYPE, "flip at %zu gave %s: %s", pos,
                    ctorch_status_name(st), ctorch_last_error());
      if (st == CTORCH_OK) {
        ok++;
        ctorch_tensor_dict_free(d);
      } else {
        value++;
      }
    }
  }
  ck_assert_int_gt(value, 0);
  free(good);
  ctorch_tensor_free(ts[0]);
  ctorch_tensor_free(ts[1]);
  (void)ok;
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("serialize");
  TCase *tc = tcase_create("serialize");
  tcase_add_checked_fixture(tc, make_dir, ct_tmp_dir_remove);
  tcase_add_test(tc, tensor_round_trips);
  tcase_add_test(tc, views_zero_dim_and_empty_round_trip);
  tcase_add_test(tc, dict_round_trip_and_lookup);
  tcase_add_test(tc, bad_save_arguments_keep_the_old_file);
  tcase_add_test(tc, failed_write_leaves_old_file_and_no_temp);
  tcase_add_test(tc, unwritable_destinations_are_io);
  tcase_add_test(tc, missing_garbage_truncated_and_flipped_files);
  tcase_add_test(tc, written_files_use_only_weights_only_globals);
  tcase_add_test(tc, shared_storage_is_written_once_and_shared_again);
  tcase_add_test(tc, refusals_keep_the_old_file);
  tcase_add_test(tc, requires_grad_and_complex32_round_trip);
  tcase_add_test(tc, files_of_ctorch_0_1_still_load);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
