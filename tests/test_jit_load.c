/* TorchScript, loading: files that are no module, archives crafted the ways
 * libtorch trusts unchecked, archives whose code touches files (refused
 * unless allowed), and modules through memory and streams, to and from
 * Python's bytes. The models: tests/python/make_jit_models.py, run once
 * before the tests fork; running them: test_jit.c.
 * ctest-requires: python */
#include <unistd.h>

#include "jit_test_util.h"

START_TEST(bad_model_files) {
  ctorch_module m = (ctorch_module)0x1;
  char path[4200], trunc[4200];
  char *buf;
  size_t sz = 0;
  ctorch_device bad = {99, 0};

  CT_FAILS(CTORCH_IO, ctorch_module_load(&m, "/nonexistent/model.pt", NULL));
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("ctorch_module_load");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_load(&m, NULL, NULL));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_load(&m, model_path("scripted.pt"), &bad));
  CT_ERROR_HAS("map_location");

  snprintf(path, sizeof path, "%s/garbage.pt", g_dir);
  ct_write_file(path, "this is not a model at all", 26);
  CT_FAILS(CTORCH_VALUE, ctorch_module_load(&m, path, NULL));

  /* A torch.save checkpoint is a zip too, but not a module. */
  CT_FAILS(CTORCH_VALUE, ctorch_module_load(&m, model_path("refs.pt"), NULL));

  buf = ct_read_file(model_path("scripted.pt"), &sz);
  snprintf(trunc, sizeof trunc, "%s/truncated.pt", g_dir);
  ct_write_file(trunc, buf, sz / 2);
  CT_FAILS(CTORCH_VALUE, ctorch_module_load(&m, trunc, NULL));
  ck_assert_ptr_null(m);
  free(buf);
}
END_TEST

/* The crafted archives (tests/python/make_jit_models.py): each file, the
 * record the refusal names and what it says is wrong. From a file and from
 * memory alike. */
static const struct {
  const char *file, *where, *says;
} crafted[] = {
    {"untyped_constant.pt", "code/__torch__.py", "class constant 'k' of 'Typed' has no type annotation"},
    {"untyped_field.pt", "code/__torch__.py", "NamedTuple 'Pair' has a field with no type annotation"},
    {"valueless_member.pt", "code/__torch__.py", "Enum 'Color' has a member with no value"},
    {"stack_underflow.pt", "pickle 'constants.pkl'", "takes 3 values from a stack of 1"},
    {"storage_overclaim.pt", "pickle 'data.pkl'", "storage '0' claims 64 elements; its record holds 12 bytes"},
    {"unknown_member.pt", "pickle 'data.pkl'", "a value that is no member of Enum '__torch__.Color'"},
    {"corrupt_deflate.pt", "code/__torch__.py'", "invalid deflate data"},
};

/* A class constant, a NamedTuple, an Enum and a parameter load and run;
 * copies crafted the ways libtorch 1.13 trusts unchecked are refused with
 * the record and what is wrong, and the handle stays NULL. Unguarded, plain
 * libtorch segfaults on untyped_field, valueless_member and stack_underflow,
 * and reads past its buffers on the others; on corrupt_deflate (1.13 and
 * 2.x alike) its zip reader hands the importer stale heap bytes as code. */
START_TEST(crafted_archives_refused_before_libtorch_reads_them) {
  ctorch_module m = NULL;
  ctorch_tensor x = ref("x"), want = NULL, got = NULL;
  ctorch_value arg = NULL, out = NULL, e = NULL;
  size_t n = 0, i;
  int64_t code = 0;

  CT_OK(ctorch_module_load(&m, model_path("typed.pt"), NULL));
  CT_OK(ctorch_value_tensor(&arg, x));
  CT_OK(ctorch_module_run_method(&out, m, "forward", &arg, 1));
  CT_OK(ctorch_value_size(&n, out));
  ck_assert_uint_eq(n, 2);
  CT_OK(ctorch_value_get(&e, out, 0));
  CT_OK(ctorch_value_to_tensor(&got, e));
  ctorch_value_free(e);
  CT_OK(ctorch_mul_Scalar(&want, x, ctorch_scalar_int(3)));
  ck_assert(max_diff(got, want) == 0.0);
  CT_OK(ctorch_value_get(&e, out, 1));
  CT_OK(ctorch_value_to_int(&code, e));
  ck_assert_int_eq(code, 2);
  ctorch_value_free(e);
  ctorch_value_free(out);
  ctorch_value_free(arg);
  ctorch_tensor_free(got);
  ctorch_tensor_free(want);
  ctorch_tensor_free(x);
  ctorch_module_free(m);

  for (i = 0; i < sizeof crafted / sizeof crafted[0]; ++i) {
    m = (ctorch_module)0x1;
    CT_FAILS(CTORCH_VALUE, ctorch_module_load(&m, model_path(crafted[i].file), NULL));
    ck_assert_ptr_null(m);
    CT_ERROR_HAS(crafted[i].file);
    CT_ERROR_HAS(crafted[i].where);
    CT_ERROR_HAS(crafted[i].says);
  }
}
END_TEST

static int file_exists(const char *p) { return access(p, F_OK) == 0; }

/* A TorchScript archive whose code reads or writes files is
 * refused by default, before any of its code runs (__setstate__ runs during
 * the load), naming the operator, the function and the line; with
 * CTORCH_MODULE_LOAD_ALLOW_IO the same archives load and do what their code
 * says, which shows the refusal is what kept the file unwritten. */
START_TEST(code_touching_files_refused_unless_allowed) {
  char target[4200], src[4200], dst[4200];
  unsigned char got[8] = {0};
  ctorch_module m = (ctorch_module)0x1;
  ctorch_value args[2] = {NULL, NULL}, out = NULL;
  ctorch_tensor t = NULL, x = ref("x");
  int64_t numel = 0;

  snprintf(target, sizeof target, "%s/written_by_setstate", g_dir);
  unlink(target);
  CT_FAILS(CTORCH_VALUE, ctorch_module_load(&m, model_path("setstate_writes.pt"), NULL));
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("aten::save");
  CT_ERROR_HAS("__torch__.SetstateWrites.__setstate__");
  CT_ERROR_HAS("code/__torch__.py, line");
  CT_ERROR_HAS("torch.save(w, path)");
  CT_ERROR_HAS("CTORCH_MODULE_LOAD_ALLOW_IO");
  ck_assert_msg(!file_exists(target), "the refused load wrote %s", target);
  m = (ctorch_module)0x1;
  CT_FAILS(CTORCH_VALUE, ctorch_module_load_ex(&m, model_path("setstate_writes.pt"), NULL, 0));
  ck_assert_ptr_null(m);
  ck_assert(!file_exists(target));
  CT_OK(ctorch_module_load_ex(&m, model_path("setstate_writes.pt"), NULL, CTORCH_MODULE_LOAD_ALLOW_IO));
  ck_assert_msg(file_exists(target), "an allowed load runs __setstate__, which writes %s", target);
  ctorch_module_free(m);

  /* forward reads a file the caller names. */
  m = (ctorch_module)0x1;
  CT_FAILS(CTORCH_VALUE, ctorch_module_load(&m, model_path("forward_from_file.pt"), NULL));
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("aten::from_file");
  CT_ERROR_HAS("__torch__.FromFile.forward");
  CT_OK(ctorch_module_load_ex(&m, model_path("forward_from_file.pt"), NULL, CTORCH_MODULE_LOAD_ALLOW_IO));
  snprintf(src, sizeof src, "%s/secret.bin", g_dir);
  ct_write_file(src, "hello", 5);
  CT_OK(ctorch_value_string(&args[0], src));
  CT_OK(ctorch_value_int(&args[1], 5));
  CT_OK(ctorch_module_forward(&out, m, args, 2));
  CT_OK(ctorch_value_to_tensor(&t, out));
  CT_OK(ctorch_tensor_numel(&numel, t));
  ck_assert_int_eq(numel, 5);
  CT_OK(ctorch_tensor_copy_to(got, 5, t));
  ck_assert(memcmp(got, "hello", 5) == 0);
  ctorch_tensor_free(t);
  ctorch_value_free(out);
  ctorch_value_free(args[0]);
  ctorch_value_free(args[1]);
  ctorch_module_free(m);

  /* A free function the module calls writes: named as the function. */
  m = (ctorch_module)0x1;
  CT_FAILS(CTORCH_VALUE, ctorch_module_load(&m, model_path("helper_save.pt"), NULL));
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("aten::save");
  CT_ERROR_HAS("__torch__.leak");
  CT_OK(ctorch_module_load_ex(&m, model_path("helper_save.pt"), NULL, CTORCH_MODULE_LOAD_ALLOW_IO));
  snprintf(dst, sizeof dst, "%s/written_by_forward", g_dir);
  unlink(dst);
  CT_OK(ctorch_value_tensor(&args[0], x));
  CT_OK(ctorch_value_string(&args[1], dst));
  CT_OK(ctorch_module_forward(&out, m, args, 2));
  ck_assert(file_exists(dst));
  ctorch_value_free(out);
  ctorch_value_free(args[0]);
  ctorch_value_free(args[1]);
  ctorch_module_free(m);

  /* Printing is not refused; unknown flags are. */
  CT_OK(ctorch_module_load(&m, model_path("prints.pt"), NULL));
  ctorch_module_free(m);
  m = (ctorch_module)0x1;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_load_ex(&m, model_path("scripted.pt"), NULL, 8u));
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("flags");
  ctorch_tensor_free(x);
}
END_TEST

/* ---- modules through memory and streams ---------------------------------- */

/* A growable sink for the write callback; fail_at: the call number that
 * returns CTORCH_IO (0: never). */
typedef struct {
  char *p;
  size_t n, cap;
  int calls, fail_at;
} byte_sink;

static ctorch_status sink_write(void *u, const void *data, size_t len) {
  byte_sink *s = (byte_sink *)u;
  if (++s->calls == s->fail_at) return CTORCH_IO;
  if (s->n + len > s->cap) {
    s->cap = (s->n + len) * 2;
    s->p = realloc(s->p, s->cap);
    ck_assert_ptr_nonnull(s->p);
  }
  memcpy(s->p + s->n, data, len);
  s->n += len;
  return CTORCH_OK;
}

/* A read callback over bytes, at most chunk at a time; fail: return CTORCH_IO. */
typedef struct {
  const char *p;
  size_t n, off, chunk;
  int fail;
} byte_source;

static ctorch_status source_read(void *u, void *buf, size_t cap, size_t *n_read) {
  byte_source *s = (byte_source *)u;
  size_t k = s->n - s->off;
  if (s->fail) return CTORCH_IO;
  if (k > cap) k = cap;
  if (k > s->chunk) k = s->chunk;
  memcpy(buf, s->p + s->off, k);
  s->off += k;
  *n_read = k;
  return CTORCH_OK;
}

/* forward(ref(xname)) of m equals ref(wantname) (to 1e-5, as above). */
static void forward_matches(ctorch_module m, const char *xname, const char *wantname) {
  ctorch_tensor x = ref(xname), want = ref(wantname), got = NULL;
  CT_OK(ctorch_module_forward_tensors(&got, m, &x, 1));
  ck_assert_msg(max_diff(got, want) < 1e-5, "forward differs from Python's by %g", max_diff(got, want));
  ctorch_tensor_free(got), ctorch_tensor_free(x), ctorch_tensor_free(want);
}

/* What torch.jit.save(m, io.BytesIO()) wrote loads from a buffer and from a
 * stream; what ctorch saves to a buffer is the file form's bytes, the
 * stream form's, and loads in Python with torch.jit.load(io.BytesIO(..))
 * (tests/python/check_jit_bytes.py: forward and an exported method equal
 * Python's own). */
START_TEST(module_bytes_round_trip_with_python) {
  ctorch_module m = NULL, m2 = NULL;
  ctorch_device cpu = ctorch_device_cpu();
  size_t n = 0, len = 0, len2 = 0, fn = 0;
  char *py = ct_read_file(model_path("scripted_bytesio.bin"), &n), *buf, *file_bytes, path[4200], cmd[13000];
  char small[100];
  byte_sink sink = {NULL, 0, 0, 0, 0};
  byte_source src;
  const char *pyexe = getenv("CTORCH_TORCH_PYTHON"), *srcdir = getenv("CTORCH_SOURCE_DIR");

  CT_OK(ctorch_module_load_from_buffer(&m, py, n, NULL, 0));
  forward_matches(m, "x", "forward");
  free(py);
  py = ct_read_file(model_path("traced_bytesio.bin"), &n);
  src = (byte_source){py, n, 0, 1000, 0};
  CT_OK(ctorch_module_load_from_stream(&m2, source_read, &src, &cpu, 0));
  ck_assert_uint_eq(src.off, n);
  forward_matches(m2, "xt", "traced");
  ctorch_module_free(m2);
  m2 = NULL;
  free(py);

  /* ctorch's bytes: the length first, then the same bytes each time. */
  CT_OK(ctorch_module_save_to_buffer(&len, NULL, 0, m));
  ck_assert_uint_gt(len, 1000);
  buf = malloc(len);
  CT_OK(ctorch_module_save_to_buffer(&len2, buf, len, m));
  ck_assert_uint_eq(len2, len);
  CT_OK(ctorch_module_save_to_buffer(&len2, small, sizeof small, m));
  ck_assert_uint_eq(len2, len);
  ck_assert(memcmp(small, buf, sizeof small) == 0);
  CT_OK(ctorch_module_save_to_stream(sink_write, &sink, m));
  ck_assert_uint_eq(sink.n, len);
  ck_assert(memcmp(sink.p, buf, len) == 0);
  snprintf(path, sizeof path, "%s/saved_by_c.pt", g_dir);
  CT_OK(ctorch_module_save(m, path));
  file_bytes = ct_read_file(path, &fn);
  ck_assert_uint_eq(fn, len);
  ck_assert(memcmp(file_bytes, buf, len) == 0);
  free(file_bytes);

  /* ... which load back here and in Python. */
  CT_OK(ctorch_module_load_from_buffer(&m2, buf, len, NULL, 0));
  forward_matches(m2, "x", "forward");
  ctorch_module_free(m2);
  snprintf(path, sizeof path, "%s/saved_by_c_buffer.bin", g_dir);
  ct_write_file(path, buf, len);
  ck_assert_msg(pyexe && srcdir, "CTORCH_TORCH_PYTHON and CTORCH_SOURCE_DIR must be set (run under ctest)");
  snprintf(cmd, sizeof cmd, "'%s' '%s/tests/python/check_jit_bytes.py' '%s' '%s/refs.pt'", pyexe, srcdir, path, g_dir);
  ck_assert_msg(system(cmd) == 0, "torch.jit.load(io.BytesIO(ctorch's bytes)) failed or differs: %s", cmd);

  free(sink.p);
  free(buf);
  ctorch_module_free(m);
}
END_TEST

/* Bytes from strangers: every check of the file loader, in memory (the
 * crafted archives, code that touches files, the load limit), and bytes
 * that are no archive at all refused with a status. */
START_TEST(module_bytes_hostile_refused) {
  ctorch_module m = (ctorch_module)0x1;
  ctorch_device bad = {99, 0};
  size_t n = 0, k = 0, i, len = 0;
  char *b = ct_read_file(model_path("scripted.pt"), &n), *c, target[4200];
  char garbage[4096], flat[64];
  uint64_t prev = 0;
  byte_source src;
  byte_sink sink = {NULL, 0, 0, 0, 1};
  ctorch_module good = NULL;

  /* truncated, garbage, a checkpoint, empty */
  CT_FAILS(CTORCH_VALUE, ctorch_module_load_from_buffer(&m, b, n / 2, NULL, 0));
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("ctorch_module_load_from_buffer: the buffer is not a loadable TorchScript module");
  CT_FAILS(CTORCH_VALUE, ctorch_module_load_from_buffer(&m, b, n - 1, NULL, 0));
  for (i = 0; i < sizeof garbage; ++i) garbage[i] = (char)(i * 131 + 7);
  memcpy(garbage, "PK\003\004", 4); /* a zip's first magic, then garbage */
  CT_FAILS(CTORCH_VALUE, ctorch_module_load_from_buffer(&m, garbage, sizeof garbage, NULL, 0));
  c = ct_read_file(model_path("refs.pt"), &k);
  CT_FAILS(CTORCH_VALUE, ctorch_module_load_from_buffer(&m, c, k, NULL, 0));
  free(c);
  CT_FAILS(CTORCH_VALUE, ctorch_module_load_from_buffer(&m, NULL, 0, NULL, 0));
  /* the flatbuffer format, whatever the flags */
  memset(flat, 0, sizeof flat);
  memcpy(flat + 4, "PTMF", 4);
  CT_FAILS(CTORCH_VALUE, ctorch_module_load_from_buffer(&m, flat, sizeof flat, NULL, CTORCH_MODULE_LOAD_ALLOW_IO));
  CT_ERROR_HAS("flatbuffer");
  /* arguments */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_load_from_buffer(&m, NULL, 5, NULL, 0));
  CT_ERROR_HAS("argument 'data'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_load_from_buffer(NULL, b, n, NULL, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_load_from_buffer(&m, b, n, &bad, 0));
  CT_ERROR_HAS("map_location");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_load_from_buffer(&m, b, n, NULL, 8u));
  CT_ERROR_HAS("flags");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_load_from_stream(&m, NULL, NULL, NULL, 0));
  CT_ERROR_HAS("argument 'read'");
  ck_assert_ptr_null(m);

  /* the crafted archives: refused in memory as from a file */
  for (i = 0; i < sizeof crafted / sizeof crafted[0]; ++i) {
    c = ct_read_file(model_path(crafted[i].file), &k);
    m = (ctorch_module)0x1;
    CT_FAILS(CTORCH_VALUE, ctorch_module_load_from_buffer(&m, c, k, NULL, 0));
    ck_assert_ptr_null(m);
    CT_ERROR_HAS(crafted[i].where);
    CT_ERROR_HAS(crafted[i].says);
    free(c);
  }

  /* code that writes files: refused before __setstate__ runs, unless allowed */
  snprintf(target, sizeof target, "%s/written_by_setstate", g_dir);
  unlink(target);
  c = ct_read_file(model_path("setstate_writes.pt"), &k);
  CT_FAILS(CTORCH_VALUE, ctorch_module_load_from_buffer(&m, c, k, NULL, 0));
  CT_ERROR_HAS("aten::save");
  CT_ERROR_HAS("__torch__.SetstateWrites.__setstate__");
  ck_assert_msg(access(target, F_OK) != 0, "the refused load wrote %s", target);
  src = (byte_source){c, k, 0, 333, 0};
  CT_FAILS(CTORCH_VALUE, ctorch_module_load_from_stream(&m, source_read, &src, NULL, 0));
  CT_ERROR_HAS("the stream is not a loadable TorchScript module");
  CT_ERROR_HAS("aten::save");
  ck_assert(access(target, F_OK) != 0);
  CT_OK(ctorch_module_load_from_buffer(&m, c, k, NULL, CTORCH_MODULE_LOAD_ALLOW_IO));
  ck_assert_msg(access(target, F_OK) == 0, "an allowed load runs __setstate__, which writes %s", target);
  ctorch_module_free(m);
  m = NULL;
  free(c);

  /* the load limit: the archive's records, and a stream's length */
  CT_OK(ctorch_set_load_limit(&prev, 1000));
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_module_load_from_buffer(&m, b, n, NULL, 0));
  src = (byte_source){b, n, 0, 4096, 0};
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_module_load_from_stream(&m, source_read, &src, NULL, 0));
  CT_ERROR_HAS("ctorch_set_load_limit");
  CT_OK(ctorch_set_load_limit(NULL, prev));
  ck_assert_ptr_null(m);

  /* failing callbacks: IO */
  src = (byte_source){b, n, 0, 4096, 1};
  CT_FAILS(CTORCH_IO, ctorch_module_load_from_stream(&m, source_read, &src, NULL, 0));
  CT_ERROR_HAS("read callback");
  CT_OK(ctorch_module_load_from_buffer(&good, b, n, NULL, 0));
  CT_FAILS(CTORCH_IO, ctorch_module_save_to_stream(sink_write, &sink, good));
  CT_ERROR_HAS("write callback");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_save_to_stream(NULL, NULL, good));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_save_to_buffer(&len, NULL, 0, NULL));
  CT_ERROR_HAS("argument 'm'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_save_to_buffer(&len, NULL, 10, good));
  CT_ERROR_HAS("argument 'buf'");
  free(sink.p);
  ctorch_module_free(good);
  free(b);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("jit_load");
  TCase *tc = tcase_create("jit_load");
  make_models("jit_models_load");
  tcase_add_test(tc, bad_model_files);
  tcase_add_test(tc, crafted_archives_refused_before_libtorch_reads_them);
  tcase_add_test(tc, code_touching_files_refused_unless_allowed);
  tcase_add_test(tc, module_bytes_round_trip_with_python);
  tcase_add_test(tc, module_bytes_hostile_refused);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
