/* What the TorchScript suites (test_jit.c, test_jit_load.c) share: the
 * models tests/python/make_jit_models.py scripts and traces at test time
 * (run once per suite before the tests fork, each suite into a directory of
 * its own so that ctest may run them side by side), the reference tensors
 * Python saved with them, and comparing float32 tensors. */
#ifndef CTORCH_JIT_TEST_UTIL_H
#define CTORCH_JIT_TEST_UTIL_H

#include <math.h>

#include "check_main.h"

static char g_dir[4096];
static int g_models_ok;
static char g_models_err[8400];

/* Runs the generator into ./SUBDIR; every test asserts it worked (no silent
 * skipping). */
static inline void make_models(const char *subdir) {
  g_models_ok = ct_make_with_python("tests/python/make_jit_models.py", subdir, g_dir, sizeof g_dir, g_models_err,
                                    sizeof g_models_err);
}

static inline const char *model_path(const char *name) {
  static char buf[4096 + 64];
  ck_assert_msg(g_models_ok, "TorchScript models were not generated: %s", g_models_err);
  snprintf(buf, sizeof buf, "%s/%s", g_dir, name);
  return buf;
}

static inline ctorch_tensor ref(const char *name) {
  ctorch_tensor_dict d = NULL;
  ctorch_tensor t = NULL;
  CT_OK(ctorch_load_dict(&d, model_path("refs.pt")));
  CT_OK(ctorch_tensor_dict_find(&t, d, name));
  ctorch_tensor_dict_free(d);
  return t;
}

/* Max |a - b| over two float32 tensors of equal shape (asserts the shapes match). */
static inline double max_diff(ctorch_tensor a, ctorch_tensor b) {
  int64_t na = 0, nb = 0, i, da = 0, db = 0, sa[8], sb[8];
  float *va, *vb;
  double m = 0;
  CT_OK(ctorch_tensor_dim(&da, a));
  CT_OK(ctorch_tensor_dim(&db, b));
  ck_assert_int_eq(da, db);
  CT_OK(ctorch_tensor_sizes(sa, 8, a));
  CT_OK(ctorch_tensor_sizes(sb, 8, b));
  for (i = 0; i < da; ++i) ck_assert_int_eq(sa[i], sb[i]);
  CT_OK(ctorch_tensor_numel(&na, a));
  CT_OK(ctorch_tensor_numel(&nb, b));
  ck_assert_int_eq(na, nb);
  va = malloc(sizeof(float) * (size_t)(na + 1));
  vb = malloc(sizeof(float) * (size_t)(nb + 1));
  CT_OK(ctorch_tensor_copy_to(va, sizeof(float) * (size_t)na, a));
  CT_OK(ctorch_tensor_copy_to(vb, sizeof(float) * (size_t)nb, b));
  for (i = 0; i < na; ++i)
    if (fabs((double)va[i] - (double)vb[i]) > m) m = fabs((double)va[i] - (double)vb[i]);
  free(va);
  free(vb);
  return m;
}

#endif
