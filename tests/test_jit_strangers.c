/* TorchScript files from strangers, round two: archives made by
 * Python at test time (tests/python/make_jit_strangers.py) that reach
 * libtorch's built-in C++ classes (torch.classes), loop forever while they
 * load, or come in the flatbuffer format. ctorch_module_load refuses them
 * with default flags, before any of their code runs; the flags that allow
 * each part load them.
 * ctest-requires: python */
#include <time.h>

#include "check_main.h"

static char g_dir[4096];
static int g_models_ok;
static char g_models_err[8400];

static void make_models(void) {
  g_models_ok = ct_make_with_python("tests/python/make_jit_strangers.py", "jit_strangers", g_dir, sizeof g_dir,
                                    g_models_err, sizeof g_models_err);
}

static const char *model_path(const char *name) {
  static char buf[4096 + 64];
  ck_assert_msg(g_models_ok, "TorchScript archives were not generated: %s", g_models_err);
  snprintf(buf, sizeof buf, "%s/%s", g_dir, name);
  return buf;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* forward(x) of a loaded module on a 2-element tensor: its first value. */
static float forward_first(ctorch_module m) {
  const float v[2] = {1, 2};
  const int64_t n = 2;
  ctorch_tensor x = ct_floats(v, &n, 1), y = NULL;
  float out[2] = {0, 0};
  CT_OK(ctorch_module_forward_tensors(&y, m, &x, 1));
  CT_OK(ctorch_tensor_copy_to(out, sizeof out, y));
  ctorch_tensor_free(x), ctorch_tensor_free(y);
  return out[0];
}

/* Every built-in class this libtorch registers that is off the allow-list
 * (classes.txt: the audit's list, those this torch has) has an archive whose
 * method takes a value of its type: each is refused, naming the class; with
 * CTORCH_MODULE_LOAD_ALLOW_CLASSES each loads. */
START_TEST(every_refused_builtin_class_is_refused) {
  char line[8400], name[256], path[8200], want[300];
  int n = 0;
  FILE *f = fopen(model_path("classes.txt"), "r");
  ck_assert_ptr_nonnull(f);
  while (fgets(line, sizeof line, f)) {
    ctorch_module m = (ctorch_module)0x1;
    ck_assert_int_eq(sscanf(line, "%255s %8199s", name, path), 2);
    CT_FAILS(CTORCH_VALUE, ctorch_module_load(&m, path, NULL));
    ck_assert_ptr_null(m);
    snprintf(want, sizeof want, "torch.classes.%s,", name);
    CT_ERROR_HAS(want);
    CT_ERROR_HAS("CTORCH_MODULE_LOAD_ALLOW_CLASSES");
    CT_FAILS(CTORCH_VALUE, ctorch_module_load_ex(&m, path, NULL, CTORCH_MODULE_LOAD_ALLOW_UNBOUNDED_LOOPS));
    CT_OK(ctorch_module_load_ex(&m, path, NULL, CTORCH_MODULE_LOAD_ALLOW_CLASSES));
    ck_assert_float_eq(forward_first(m), 2.0f);
    ctorch_module_free(m);
    printf("refused by default, loaded when allowed: torch.classes.%s\n", name);
    ++n;
  }
  fclose(f);
  /* 11 in libtorch 1.13.1's CPU build, 14 in 2.15.0's CUDA build. */
  ck_assert_msg(n >= 11, "only %d refused classes listed", n);
}
END_TEST

/* The example: _nnapi.Compilation().init dlopens a library. */
START_TEST(nnapi_and_profiling_refused_in_forward_and_setstate) {
  static const char *const files[] = {"nnapi_forward.pt", "nnapi_setstate.pt", "profile_forward.pt"};
  static const char *const classes[] = {"torch.classes._nnapi.Compilation", "torch.classes._nnapi.Compilation",
                                        "torch.classes.profiling._ScriptProfile"};
  static const char *const where[] = {"NnapiForward.forward", "NnapiSetstate.__setstate__", "ProfileForward.forward"};
  size_t i;
  for (i = 0; i < 3; ++i) {
    ctorch_module m = (ctorch_module)0x1;
    CT_FAILS(CTORCH_VALUE, ctorch_module_load(&m, model_path(files[i]), NULL));
    ck_assert_ptr_null(m);
    CT_ERROR_HAS(classes[i]);
    CT_ERROR_HAS(where[i]);
    CT_ERROR_HAS(", line ");
  }
  CT_FAILS(CTORCH_VALUE, ctorch_module_load(&(ctorch_module){NULL}, model_path("nnapi_forward.pt"), NULL));
  CT_ERROR_HAS("dlopen");
}
END_TEST

/* An allowed class (quantized.LinearPackedParamsBase, the packed weights of
 * a dynamically quantized Linear) loads by default and computes Python's
 * output exactly. */
START_TEST(quantized_packed_params_allowed) {
  ctorch_module m = NULL;
  ctorch_tensor_dict d = NULL;
  ctorch_tensor x = NULL, want = NULL, got = NULL;
  CT_OK(ctorch_module_load(&m, model_path("quantized.pt"), NULL));
  CT_OK(ctorch_load_dict(&d, model_path("quantized_ref.pt")));
  CT_OK(ctorch_tensor_dict_find(&x, d, "x"));
  CT_OK(ctorch_tensor_dict_find(&want, d, "y"));
  CT_OK(ctorch_module_forward_tensors(&got, m, &x, 1));
  ck_assert_double_eq(ct_max_abs_diff(got, want), 0.0);
  ctorch_tensor_free(x), ctorch_tensor_free(want), ctorch_tensor_free(got);
  ctorch_tensor_dict_free(d);
  ctorch_module_free(m);
}
END_TEST

/* A load never hangs: a __setstate__ looping forever (or over data, through
 * a method it calls) is refused statically, at once; constant loops in
 * __setstate__ and any loop in forward load. */
START_TEST(load_time_loops_refused_unless_constant) {
  ctorch_module m = (ctorch_module)0x1;
  double t0 = now();
  CT_FAILS(CTORCH_VALUE, ctorch_module_load(&m, model_path("setstate_loops.pt"), NULL));
  ck_assert_msg(now() - t0 < 30.0, "the refusal took %.1f s", now() - t0);
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("SetstateLoops.__setstate__");
  CT_ERROR_HAS("not a constant");
  CT_ERROR_HAS("while "); /* the line, as the archive's code/ spells it */
  CT_ERROR_HAS("CTORCH_MODULE_LOAD_ALLOW_UNBOUNDED_LOOPS");
  /* The other flag does not lift this rule. */
  CT_FAILS(CTORCH_VALUE, ctorch_module_load_ex(&m, model_path("setstate_loops.pt"), NULL, CTORCH_MODULE_LOAD_ALLOW_CLASSES));

  CT_FAILS(CTORCH_VALUE, ctorch_module_load(&m, model_path("setstate_helper_loops.pt"), NULL));
  CT_ERROR_HAS("SetstateHelperLoops.__setstate__");
  CT_ERROR_HAS("not a constant");
  CT_ERROR_HAS("for "); /* add_up's loop, inlined */
  /* Allowed, the loop over [1, 2, 3] runs: total 6. */
  CT_OK(ctorch_module_load_ex(&m, model_path("setstate_helper_loops.pt"), NULL, CTORCH_MODULE_LOAD_ALLOW_UNBOUNDED_LOOPS));
  ck_assert_float_eq(forward_first(m), 7.0f);
  ctorch_module_free(m);

  CT_OK(ctorch_module_load(&m, model_path("setstate_bounded.pt"), NULL));
  ck_assert_float_eq(forward_first(m), 17.0f); /* 1 + 1 * 2^4 */
  ctorch_module_free(m);
  CT_OK(ctorch_module_load(&m, model_path("forward_loops.pt"), NULL));
  ck_assert_float_eq(forward_first(m), 63.0f); /* [1,2] -> [3,5] -> ... -> [63, 95]: sum 158 */
  ctorch_module_free(m);
}
END_TEST

/* The flatbuffer format (mobile) is not a zip archive: refused, whatever the flags. */
START_TEST(flatbuffer_refused) {
  ctorch_module m = (ctorch_module)0x1;
  const char *fb = model_path("flatbuffer.ff");
  if (access(fb, F_OK) != 0) {
    size_t n = 0;
    char *why = ct_read_file(model_path("flatbuffer.txt"), &n);
    printf("no flatbuffer made: %s", why);
    free(why);
    return;
  }
  CT_FAILS(CTORCH_VALUE, ctorch_module_load(&m, fb, NULL));
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("flatbuffer");
  CT_FAILS(CTORCH_VALUE, ctorch_module_load_ex(&m, fb, NULL, CTORCH_MODULE_LOAD_ALLOW_IO));
  CT_ERROR_HAS("flatbuffer");
}
END_TEST

START_TEST(unknown_flags_refused) {
  ctorch_module m = (ctorch_module)0x1;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_module_load_ex(&m, model_path("setstate_bounded.pt"), NULL, 8u));
  ck_assert_ptr_null(m);
  CT_ERROR_HAS("flags");
}
END_TEST

/* The message of the thread's last error after "is not a loadable
 * TorchScript module: " (what follows the file's name or "the buffer"). */
static char *refusal(void) {
  const char *e = ctorch_last_error(), *k = strstr(e, "is not a loadable TorchScript module: ");
  ck_assert_msg(k != NULL, "not a load refusal: %s", e);
  return strdup(k);
}

/* The same archives from memory (ctorch_module_load_from_buffer and
 * _from_stream): refused with the same status and the same reason as from
 * the file, flag for flag; what the flags allow loads and computes alike. */
START_TEST(memory_loads_check_as_files_do) {
  static const struct {
    const char *file;
    uint32_t flags;
  } cases[] = {
      {"nnapi_forward.pt", 0},         {"nnapi_setstate.pt", 0},
      {"profile_forward.pt", 0},       {"setstate_loops.pt", 0},
      {"setstate_loops.pt", CTORCH_MODULE_LOAD_ALLOW_CLASSES},
      {"setstate_helper_loops.pt", 0}, {"flatbuffer.ff", CTORCH_MODULE_LOAD_ALLOW_IO},
  };
  size_t i, n = 0;
  ctorch_module m = NULL;
  char *b;
  for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    const char *path = model_path(cases[i].file);
    char *from_file, *from_memory;
    if (access(path, F_OK) != 0) continue; /* no flatbuffer writer in this torch (flatbuffer_refused says) */
    m = (ctorch_module)0x1;
    CT_FAILS(CTORCH_VALUE, ctorch_module_load_ex(&m, path, NULL, cases[i].flags));
    from_file = refusal();
    b = ct_read_file(path, &n);
    CT_FAILS(CTORCH_VALUE, ctorch_module_load_from_buffer(&m, b, n, NULL, cases[i].flags));
    ck_assert_ptr_null(m);
    CT_ERROR_HAS("the buffer is not a loadable");
    from_memory = refusal();
    ck_assert_msg(strcmp(from_file, from_memory) == 0, "%s: from the file: %s\nfrom memory: %s", cases[i].file,
                  from_file, from_memory);
    free(from_file), free(from_memory), free(b);
  }
  /* allowed: a constant loop in __setstate__, the allowed quantized class */
  b = ct_read_file(model_path("setstate_bounded.pt"), &n);
  CT_OK(ctorch_module_load_from_buffer(&m, b, n, NULL, 0));
  ck_assert_float_eq(forward_first(m), 17.0f);
  ctorch_module_free(m);
  free(b);
  b = ct_read_file(model_path("setstate_helper_loops.pt"), &n);
  CT_OK(ctorch_module_load_from_buffer(&m, b, n, NULL, CTORCH_MODULE_LOAD_ALLOW_UNBOUNDED_LOOPS));
  ck_assert_float_eq(forward_first(m), 7.0f);
  ctorch_module_free(m);
  free(b);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("jit_strangers");
  TCase *tc = tcase_create("jit_strangers");
  tcase_set_timeout(tc, 120);
  make_models();
  tcase_add_test(tc, every_refused_builtin_class_is_refused);
  tcase_add_test(tc, nnapi_and_profiling_refused_in_forward_and_setstate);
  tcase_add_test(tc, quantized_packed_params_allowed);
  tcase_add_test(tc, load_time_loops_refused_unless_constant);
  tcase_add_test(tc, flatbuffer_refused);
  tcase_add_test(tc, unknown_flags_refused);
  tcase_add_test(tc, memory_loads_check_as_files_do);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
