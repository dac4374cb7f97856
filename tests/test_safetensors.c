/* safetensors (shim/safetensors/): ctorch's own round trip, the mapping
 * shared or copied, one crafted file per refusal rule, argument checks, and
 * (tcases tagged "py_safetensors": PyPI's safetensors package through
 * tests/safetensors_ref.py) files written by Python read here bit for bit,
 * files written here read by Python and byte-identical to save_file's. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <sys/stat.h>

#include "check_main.h"
#include "tmp_files.h"

static void tmp_path(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", ct_tmp_dir, name);
}

/* Each test's files: a fresh directory, removed after it (tmp_files.h). */
static void make_dir(void) { ct_tmp_dir_make("safetensors"); }

/* A file: 8-byte little-endian length, the header, the data. */
static void write_st(const char *path, const char *hdr, const void *data, size_t ndata) {
  size_t n = strlen(hdr), i;
  unsigned char len[8];
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  for (i = 0; i < 8; ++i) len[i] = (unsigned char)((uint64_t)n >> (8 * i));
  fwrite(len, 1, 8, f);
  fwrite(hdr, 1, n, f);
  if (ndata) fwrite(data, 1, ndata, f);
  fclose(f);
}

/* Does [p, p + n) lie in a mapping of `file` (from /proc/self/maps)? */
static int in_mapping_of(const void *p, const char *file) {
  FILE *m = fopen("/proc/self/maps", "r");
  char line[8192];
  int found = 0;
  uintptr_t a = (uintptr_t)p;
  while (m && fgets(line, sizeof line, m)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi && strstr(line, file)) found = 1;
  }
  if (m) fclose(m);
  return found;
}

static ctorch_tensor dict_find(ctorch_tensor_dict d, const char *name) {
  ctorch_tensor t = NULL;
  CT_OK(ctorch_tensor_dict_find(&t, d, name));
  return t;
}

START_TEST(roundtrip_in_c) {
  char path[4200];
  const float v[6] = {1, 2, 3, 4, 5, 6};
  const int64_t s23[2] = {2, 3}, s0[2] = {0, 4};
  ctorch_tensor a = ct_floats(v, s23, 2), b = NULL, c = NULL, e = NULL, got = NULL;
  const char *names[4] = {"w", "half", "scalar", "empty"};
  const char *keys[2] = {"format", "n\xc3\xa9"}, *vals[2] = {"pt", "line\n\"q\""};
  ctorch_tensor ts[4];
  ctorch_tensor_dict d = NULL;
  const char *mv = NULL;
  size_t n = 0;
  double s = 3.5;
  tmp_path(path, sizeof path, "c.safetensors");
  CT_OK(ctorch_to_dtype(&b, a, CTORCH_FLOAT16, 0, 0, NULL));
  CT_OK(ctorch_tensor_from_data(&c, &s, sizeof s, NULL, 0, CTORCH_FLOAT64));
  CT_OK(ctorch_zeros(&e, s0, 2, NULL, NULL, NULL, NULL));
  ts[0] = a, ts[1] = b, ts[2] = c, ts[3] = e;
  CT_OK(ctorch_safetensors_save(path, names, ts, 4, keys, vals, 2));
  CT_OK(ctorch_safetensors_load(&d, path, NULL));
  CT_OK(ctorch_tensor_dict_size(&n, d));
  ck_assert_uint_eq(n, 4);
  got = dict_find(d, "w");
  ck_assert(ct_max_abs_diff(got, a) == 0);
  { /* shares the mapping; an in-place write changes the process's copy only */
    void *p = NULL;
    ctorch_tensor_dict d2 = NULL;
    ctorch_tensor again = NULL;
    CT_OK(ctorch_tensor_data_ptr(&p, got));
    ck_assert_msg(in_mapping_of(p, "c.safetensors"), "tensor 'w' does not share the file's mapping");
    CT_OK(ctorch_add__Scalar(got, ctorch_scalar_float(1), ctorch_scalar_int(1)));
    CT_OK(ctorch_safetensors_load(&d2, path, NULL));
    again = dict_find(d2, "w");
    ck_assert(ct_max_abs_diff(again, a) == 0);
    ctorch_tensor_free(again);
    ctorch_tensor_dict_free(d2);
  }
  ctorch_tensor_free(got);
  got = dict_find(d, "half");
  ck_assert(ct_max_abs_diff(got, b) == 0);
  ctorch_tensor_free(got);
  got = dict_find(d, "scalar");
  { int64_t dim = -1; double x = 0;
    CT_OK(ctorch_tensor_dim(&dim, got));
    ck_assert_int_eq(dim, 0);
    CT_OK(ctorch_tensor_item_double(&x, got));
    ck_assert(x == 3.5); }
  ctorch_tensor_free(got);
  got = dict_find(d, "empty");
  { int64_t numel = -1; CT_OK(ctorch_tensor_numel(&numel, got)); ck_assert_int_eq(numel, 0); }
  ctorch_tensor_free(got);
  CT_OK(ctorch_tensor_dict_metadata_size(&n, d));
  ck_assert_uint_eq(n, 2);
  CT_OK(ctorch_tensor_dict_metadata_find(&mv, d, "n\xc3\xa9"));
  ck_assert_str_eq(mv, "line\n\"q\"");
  CT_FAILS(CTORCH_INDEX, ctorch_tensor_dict_metadata_find(&mv, d, "nope"));
  ck_assert_ptr_null(mv);
  CT_FAILS(CTORCH_INDEX, ctorch_tensor_dict_metadata_key(&mv, d, 2));
  ctorch_tensor_dict_free(d);
  ctorch_tensor_free(a), ctorch_tensor_free(b), ctorch_tensor_free(c), ctorch_tensor_free(e);
}
END_TEST

START_TEST(unaligned_is_copied) {
  /* A U8 tensor of 1 byte, then an F32 at data offset 1: not 4-aligned. The
   * header is 106 bytes, so b starts at byte 115 of the file. */
  char path[4200];
  unsigned char data[9] = {7, 0, 0, 128, 63, 0, 0, 0, 64}; /* 7, then 1.0f, 2.0f */
  const char *hdr = "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1,9]}}";
  ctorch_tensor_dict d = NULL;
  ctorch_tensor b = NULL, a = NULL;
  float out[2];
  void *p = NULL;
  tmp_path(path, sizeof path, "unaligned.safetensors");
  write_st(path, hdr, data, sizeof data);
  CT_OK(ctorch_safetensors_load(&d, path, NULL));
  b = dict_find(d, "b");
  a = dict_find(d, "a");
  CT_OK(ctorch_tensor_copy_to(out, sizeof out, b));
  ck_assert(out[0] == 1.0f && out[1] == 2.0f);
  CT_OK(ctorch_tensor_data_ptr(&p, b));
  ck_assert_msg(!in_mapping_of(p, "unaligned.safetensors"), "an unaligned F32 tensor must be a copy");
  CT_OK(ctorch_tensor_data_ptr(&p, a));
  ck_assert_msg(in_mapping_of(p, "unaligned.safetensors"), "a U8 tensor is always aligned: shared");
  ctorch_tensor_free(a), ctorch_tensor_free(b);
  ctorch_tensor_dict_free(d);
}
END_TEST

/* Writes hdr (+ ndata zero bytes) and expects `want` with every needle in the message. */
static void refused(const char *name, const char *hdr, size_t ndata, ctorch_status want, const char *needle) {
  char path[4200];
  static unsigned char zeros[256];
  ctorch_tensor_dict d = NULL;
  tmp_path(path, sizeof path, name);
  write_st(path, hdr, zeros, ndata);
  if (want == CTORCH_OK) {
    CT_OK(ctorch_safetensors_load(&d, path, NULL));
    ctorch_tensor_dict_free(d);
    return;
  }
  CT_FAILS(want, ctorch_safetensors_load(&d, path, NULL));
  ck_assert_ptr_null(d);
  CT_ERROR_HAS("ctorch_safetensors_load");
  CT_ERROR_HAS(name);
  if (needle) CT_ERROR_HAS(needle);
}

#define T(n) "\"" n "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":"

START_TEST(crafted_files_refused) {
  char path[4200], deep[600];
  int i;
  refused("ok.safetensors", "{" T("w") "[0,8]}}", 8, CTORCH_OK, NULL);
  refused("gap.safetensors", "{" T("a") "[0,8]}," T("b") "[12,20]}}", 20, CTORCH_VALUE, "tensor 'b'");
  refused("overlap.safetensors", "{" T("a") "[0,8]}," T("b") "[4,12]}}", 12, CTORCH_VALUE, "tensor 'b'");
  refused("past_end.safetensors", "{" T("w") "[0,8]}}", 4, CTORCH_VALUE, "cover 8 bytes");
  refused("trailing.safetensors", "{" T("w") "[0,8]}}", 12, CTORCH_VALUE, "exactly");
  refused("not_first.safetensors", "{" T("w") "[4,12]}}", 12, CTORCH_VALUE, "tensor 'w'");
  refused("size.safetensors", "{" T("w") "[0,12]}}", 12, CTORCH_VALUE, "take 8");
  refused("backwards.safetensors", "{" T("w") "[8,0]}}", 8, CTORCH_VALUE, "tensor 'w'");
  refused("dup.safetensors", "{" T("w") "[0,8]}," T("w") "[8,16]}}", 16, CTORCH_VALUE, "duplicate key \"w\"");
  refused("dtype.safetensors", "{\"w\":{\"dtype\":\"F31\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, CTORCH_VALUE,
          "unknown dtype \"F31\"");
  refused("neg.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, CTORCH_VALUE,
          "tensor 'w'");
  refused("frac.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8, CTORCH_VALUE,
          "tensor 'w'");
  refused("overflow.safetensors",
          "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8, CTORCH_VALUE,
          "more than 2^63");
  refused("bytes_overflow.safetensors",
          "{\"w\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]}}", 8, CTORCH_VALUE,
          "overflows");
  refused("offs.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, CTORCH_VALUE,
          "tensor 'w'");
  refused("missing.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, CTORCH_VALUE, "tensor 'w'");
  refused("utf8.safetensors", "{\"w\xc3\x28\":{}}", 0, CTORCH_VALUE, "UTF-8");
  refused("overlong.safetensors", "{\"\xc0\xaf\":{}}", 0, CTORCH_VALUE, "UTF-8");
  refused("surrogate.safetensors", "{\"\\ud800\":{}}", 0, CTORCH_VALUE, "surrogate");
  refused("trailing_json.safetensors", "{} {}", 0, CTORCH_VALUE, "trailing");
  refused("array.safetensors", "[]", 0, CTORCH_VALUE, "not a JSON object");
  refused("meta.safetensors", "{\"__metadata__\":{\"k\":1}}", 0, CTORCH_VALUE, "'k'");
  refused("empty_ok.safetensors", "{\"__metadata__\":null}  ", 0, CTORCH_OK, NULL);
  for (i = 0; i < 130; ++i) deep[i] = '[';
  for (i = 0; i < 130; ++i) deep[130 + i] = ']';
  deep[260] = 0;
  { char hdr[700]; snprintf(hdr, sizeof hdr, "{\"w\":%s}", deep);
    refused("deep.safetensors", hdr, 0, CTORCH_VALUE, "nested more than 128"); }
#if CTORCH_TORCH_VERSION_MAJOR < 2 || (CTORCH_TORCH_VERSION_MAJOR == 2 && CTORCH_TORCH_VERSION_MINOR < 3)
  refused("u16.safetensors", "{\"w\":{\"dtype\":\"U16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
          CTORCH_NOT_IMPLEMENTED, "needs libtorch >= 2.3");
  refused("fp8.safetensors", "{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2,
          CTORCH_NOT_IMPLEMENTED, "F8_E4M3");
#endif
  refused("f4.safetensors", "{\"w\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}", 1,
          CTORCH_NOT_IMPLEMENTED, "F4");

  { /* the header length itself */
    unsigned char buf[16] = {0};
    ctorch_tensor_dict d = NULL;
    tmp_path(path, sizeof path, "short.safetensors");
    ct_write_file(path, buf, 5);
    CT_FAILS(CTORCH_VALUE, ctorch_safetensors_load(&d, path, NULL));
    CT_ERROR_HAS("short.safetensors");
    buf[0] = 0x40; /* 64 > 16 - 8 */
    tmp_path(path, sizeof path, "hdr_past.safetensors");
    ct_write_file(path, buf, 16);
    CT_FAILS(CTORCH_VALUE, ctorch_safetensors_load(&d, path, NULL));
    CT_ERROR_HAS("runs past the end");
    buf[0] = 0x01, buf[1] = 0xe1, buf[2] = 0xf5, buf[3] = 0x05; /* 100,000,001 */
    tmp_path(path, sizeof path, "hdr_big.safetensors");
    ct_write_file(path, buf, 16);
    CT_FAILS(CTORCH_VALUE, ctorch_safetensors_load(&d, path, NULL));
    CT_ERROR_HAS("100000000");
  }
}
END_TEST

START_TEST(not_regular_files_and_limits) {
  char path[4200];
  ctorch_tensor_dict d = NULL;
  uint64_t prev = 0;
  tmp_path(path, sizeof path, "fifo");
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  CT_FAILS(CTORCH_IO, ctorch_safetensors_load(&d, path, NULL)); /* refused, not blocked */
  CT_ERROR_HAS("FIFO");
  CT_FAILS(CTORCH_IO, ctorch_safetensors_load(&d, ct_tmp_dir, NULL));
  CT_FAILS(CTORCH_IO, ctorch_safetensors_load(&d, "/nonexistent/x.safetensors", NULL));
  tmp_path(path, sizeof path, "big.safetensors");
  { static unsigned char zeros[4096];
    write_st(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1024],\"data_offsets\":[0,4096]}}", zeros, sizeof zeros); }
  CT_OK(ctorch_set_load_limit(&prev, 1000));
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_safetensors_load(&d, path, NULL));
  CT_OK(ctorch_set_load_limit(NULL, 0));
  CT_OK(ctorch_safetensors_load(&d, path, NULL));
  ctorch_tensor_dict_free(d);
  { ctorch_device meta = {CTORCH_DEVICE_META, -1};
    ctorch_tensor w = NULL;
    ctorch_device_type dt;
    ctorch_device got;
    CT_OK(ctorch_safetensors_load(&d, path, &meta));
    w = dict_find(d, "w");
    CT_OK(ctorch_tensor_device(&got, w));
    dt = (ctorch_device_type)got.type;
    ck_assert_int_eq(dt, CTORCH_DEVICE_META);
    ctorch_tensor_free(w);
    ctorch_tensor_dict_free(d); }
}
END_TEST

START_TEST(arguments_checked) {
  char path[4200];
  const float v[2] = {1, 2};
  const int64_t s2[1] = {2};
  ctorch_tensor a = ct_floats(v, s2, 1), z = NULL;
  ctorch_tensor ts[2] = {a, a};
  const char *two[2] = {"a", "a"}, *meta_name[1] = {"__metadata__"}, *bad_utf8[1] = {"\xff"}, *null_name[1] = {NULL};
  ctorch_tensor null_t[1] = {NULL};
  ctorch_tensor_dict d = NULL;
  tmp_path(path, sizeof path, "args.safetensors");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_load(NULL, path, NULL));
  CT_ERROR_HAS("'out'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_load(&d, NULL, NULL));
  CT_ERROR_HAS("'path'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_load(&d, "", NULL));
  { ctorch_device bad = {99, 0};
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_load(&d, path, &bad));
    CT_ERROR_HAS("'device'"); }
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_load_sharded(&d, NULL, NULL));
  CT_ERROR_HAS("'index_path'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_save(NULL, two, ts, 1, NULL, NULL, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_save(path, NULL, ts, 1, NULL, NULL, 0));
  CT_ERROR_HAS("'names'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_save(path, two, ts, 2, NULL, NULL, 0));
  CT_ERROR_HAS("appears twice");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_save(path, meta_name, ts, 1, NULL, NULL, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_save(path, bad_utf8, ts, 1, NULL, NULL, 0));
  CT_ERROR_HAS("UTF-8");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_save(path, null_name, ts, 1, NULL, NULL, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_save(path, two, null_t, 1, NULL, NULL, 0));
  CT_ERROR_HAS("'tensors'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_save(path, two, ts, 1, NULL, two, 1));
  CT_ERROR_HAS("'meta_keys'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_save(path, two, ts, 1, two, two, 2));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_safetensors_save(path, two, ts, 1, two, null_name, 1));
  CT_OK(ctorch_to_dtype(&z, a, CTORCH_COMPLEX128, 0, 0, NULL));
  CT_FAILS(CTORCH_TYPE, ctorch_safetensors_save(path, two, &z, 1, NULL, NULL, 0));
  CT_ERROR_HAS("no safetensors dtype");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dict_metadata_size(NULL, d));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_tensor_dict_metadata_size((size_t *)&d, NULL));
  CT_ERROR_HAS("'d'");
  ctorch_tensor_free(z);
  ctorch_tensor_free(a);
}
END_TEST

START_TEST(sharded_refusals) {
  char path[4200], shard[4200];
  const float v[2] = {1, 2};
  const int64_t s2[1] = {2};
  ctorch_tensor a = ct_floats(v, s2, 1), t = NULL;
  const char *name[1] = {"a"};
  ctorch_tensor_dict d = NULL;
  const char *mv = NULL;
  tmp_path(shard, sizeof shard, "s1.safetensors");
  CT_OK(ctorch_safetensors_save(shard, name, &a, 1, NULL, NULL, 0));
  tmp_path(path, sizeof path, "ok.index.json");
  { const char *j = "{\"metadata\": {\"total_size\": 8}, \"weight_map\": {\"a\": \"s1.safetensors\"}}";
    ct_write_file(path, j, strlen(j)); }
  CT_OK(ctorch_safetensors_load_sharded(&d, path, NULL));
  t = dict_find(d, "a");
  ck_assert(ct_max_abs_diff(t, a) == 0);
  CT_OK(ctorch_tensor_dict_metadata_find(&mv, d, "total_size"));
  ck_assert_str_eq(mv, "8");
  ctorch_tensor_free(t);
  ctorch_tensor_dict_free(d);
  d = NULL;
  tmp_path(path, sizeof path, "lacks.index.json");
  { const char *j = "{\"weight_map\": {\"a\": \"s1.safetensors\", \"b\": \"s1.safetensors\"}}";
    ct_write_file(path, j, strlen(j)); }
  CT_FAILS(CTORCH_VALUE, ctorch_safetensors_load_sharded(&d, path, NULL));
  CT_ERROR_HAS("tensor 'b'");
  CT_ERROR_HAS("s1.safetensors");
  tmp_path(path, sizeof path, "escape.index.json");
  { const char *j = "{\"weight_map\": {\"a\": \"../s1.safetensors\"}}";
    ct_write_file(path, j, strlen(j)); }
  CT_FAILS(CTORCH_VALUE, ctorch_safetensors_load_sharded(&d, path, NULL));
  CT_ERROR_HAS("relative path");
  tmp_path(path, sizeof path, "nomap.index.json");
  ct_write_file(path, "{}", 2);
  CT_FAILS(CTORCH_VALUE, ctorch_safetensors_load_sharded(&d, path, NULL));
  CT_ERROR_HAS("weight_map");
  tmp_path(path, sizeof path, "missing_shard.index.json");
  { const char *j = "{\"weight_map\": {\"a\": \"nope.safetensors\"}}";
    ct_write_file(path, j, strlen(j)); }
  CT_FAILS(CTORCH_IO, ctorch_safetensors_load_sharded(&d, path, NULL));
  ck_assert_ptr_null(d);
  ctorch_tensor_free(a);
}
END_TEST

/* ---- with PyPI's safetensors (tag py_safetensors) ---------------------- */

static char g_py_dir[4096], g_py_err[8192];
static int g_py_ok;

static void make_py_files(void) {
  g_py_ok = ct_make_with_python("tests/safetensors_ref.py", "safetensors_py", g_py_dir, sizeof g_py_dir, g_py_err,
                                sizeof g_py_err);
}

/* Compares every tensor of d with Python's raw bytes (manifest.txt). */
static void check_against_manifest(ctorch_tensor_dict d, size_t *count) {
  char path[4500], name[256], dtype[32];
  FILE *m;
  size_t nbytes;
  int ndim;
  snprintf(path, sizeof path, "%s/manifest.txt", g_py_dir);
  m = fopen(path, "r");
  ck_assert_ptr_nonnull(m);
  *count = 0;
  while (fscanf(m, "%255s %31s %zu %d", name, dtype, &nbytes, &ndim) == 4) {
    int64_t want[8], sizes[8] = {0}, dim = -1;
    char bin[4500];
    size_t n = 0;
    char *expect, *got;
    int i;
    ctorch_tensor t = dict_find(d, name);
    for (i = 0; i < ndim; ++i) ck_assert_int_eq(fscanf(m, "%" SCNd64, &want[i]), 1);
    CT_OK(ctorch_tensor_dim(&dim, t));
    ck_assert_int_eq(dim, ndim);
    CT_OK(ctorch_tensor_sizes(sizes, (size_t)ndim, t));
    for (i = 0; i < ndim; ++i) ck_assert_int_eq(sizes[i], want[i]);
    snprintf(bin, sizeof bin, "%s/%s.bin", g_py_dir, name);
    expect = ct_read_file(bin, &n);
    ck_assert_uint_eq(n, nbytes);
    got = malloc(nbytes + 1);
    CT_OK(ctorch_tensor_copy_to(got, nbytes, t));
    ck_assert_msg(memcmp(got, expect, nbytes) == 0, "tensor '%s' (%s) differs from Python's bytes", name, dtype);
    free(got), free(expect);
    ctorch_tensor_free(t);
    ++*count;
  }
  fclose(m);
}

START_TEST(python_writes_c_reads) {
  char path[4500];
  ctorch_tensor_dict d = NULL;
  size_t n = 0, count = 0;
  const char *mv = NULL;
  ck_assert_msg(g_py_ok, "%s", g_py_err);
  snprintf(path, sizeof path, "%s/all.safetensors", g_py_dir);
  CT_OK(ctorch_safetensors_load(&d, path, NULL));
  check_against_manifest(d, &count);
  CT_OK(ctorch_tensor_dict_size(&n, d));
  ck_assert_uint_eq(n, count);
  ck_assert_uint_ge(count, 14);
  CT_OK(ctorch_tensor_dict_metadata_find(&mv, d, "note"));
  ck_assert_str_eq(mv, "h\xc3\xa9llo \"quoted\"\n\ttab \x01");
  ctorch_tensor_dict_free(d);
  snprintf(path, sizeof path, "%s/sharded/model.safetensors.index.json", g_py_dir);
  CT_OK(ctorch_safetensors_load_sharded(&d, path, NULL));
  check_against_manifest(d, &count);
  CT_OK(ctorch_tensor_dict_size(&n, d));
  ck_assert_uint_eq(n, count);
  ctorch_tensor_dict_free(d);
}
END_TEST

START_TEST(c_writes_python_reads) {
  char path[4500], out[4500], cmd[13000];
  ctorch_tensor_dict d = NULL;
  size_t n = 0, i;
  const char **names;
  ctorch_tensor *ts;
  const char *k1[1] = {"format"}, *v1[1] = {"pt"};
  const char *k3[3] = {"z", "format", "note"}, *v3[3] = {"", "pt", "h\xc3\xa9llo \"quoted\"\n\ttab \x01"};
  int rc;
  ck_assert_msg(g_py_ok, "%s", g_py_err);
  snprintf(path, sizeof path, "%s/all.safetensors", g_py_dir);
  CT_OK(ctorch_safetensors_load(&d, path, NULL));
  CT_OK(ctorch_tensor_dict_size(&n, d));
  names = calloc(n, sizeof *names);
  ts = calloc(n, sizeof *ts);
  for (i = 0; i < n; ++i) {
    CT_OK(ctorch_tensor_dict_key(&names[i], d, i));
    CT_OK(ctorch_tensor_dict_get(&ts[i], d, i));
  }
  snprintf(out, sizeof out, "%s/c_one.safetensors", g_py_dir);
  CT_OK(ctorch_safetensors_save(out, names, ts, n, k1, v1, 1));
  snprintf(out, sizeof out, "%s/c_meta.safetensors", g_py_dir);
  CT_OK(ctorch_safetensors_save(out, names, ts, n, k3, v3, 3));
  for (i = 0; i < n; ++i) ctorch_tensor_free(ts[i]);
  free(ts), free(names);
  ctorch_tensor_dict_free(d);
  snprintf(cmd, sizeof cmd, "'%s' '%s/tests/safetensors_ref.py' check '%s'", getenv("CTORCH_TORCH_PYTHON"),
           getenv("CTORCH_SOURCE_DIR"), g_py_dir);
  rc = system(cmd);
  ck_assert_msg(rc == 0, "%s exited with %d", cmd, rc);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("safetensors");
  TCase *tc = tcase_create("core");
  TCase *py = tcase_create("python");
  tcase_add_checked_fixture(tc, make_dir, ct_tmp_dir_remove);
  tcase_add_test(tc, roundtrip_in_c);
  tcase_add_test(tc, unaligned_is_copied);
  tcase_add_test(tc, crafted_files_refused);
  tcase_add_test(tc, not_regular_files_and_limits);
  tcase_add_test(tc, arguments_checked);
  tcase_add_test(tc, sharded_refusals);
  suite_add_tcase(s, tc);
  tcase_set_tags(py, "py_safetensors");
  tcase_add_unchecked_fixture(py, make_py_files, NULL);
  tcase_add_test(py, python_writes_c_reads);
  tcase_add_test(py, c_writes_python_reads);
  suite_add_tcase(s, py);
  return s;
}

CTORCH_CHECK_MAIN()
