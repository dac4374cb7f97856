/* Helpers shared by the module layer's suites (test_nn.c, test_nn_custom.c, test_nn_optimize.c,
 * test_infer_precision.c). */
#ifndef CTORCH_NN_TEST_UTIL_H
#define CTORCH_NN_TEST_UTIL_H

#include <string.h>

#include "check_main.h"

static inline ctorch_nn_module nn(const char *kind, const char *args) {
  ctorch_nn_module m = NULL;
  CT_OK(ctorch_nn_new(&m, kind, args));
  ck_assert_ptr_nonnull(m);
  return m;
}

/* A new module of `kind` appended to the Sequential s. */
static inline void seq_add(ctorch_nn_module s, const char *kind, const char *args) {
  ctorch_nn_module c = nn(kind, args);
  CT_OK(ctorch_nn_module_append(s, c));
  ctorch_nn_module_free(c);
}

/* max |t| */
static inline double max_abs(ctorch_tensor t) {
  ctorch_tensor a = NULL, m = NULL;
  double v = 0;
  CT_OK(ctorch_abs(&a, t));
  CT_OK(ctorch_max(&m, a));
  CT_OK(ctorch_tensor_item_double(&v, m));
  ctorch_tensor_free(a), ctorch_tensor_free(m);
  return v;
}

/* An optimiser's report holds `line`. */
/* The share of rows whose argmax over the last dimension agrees in a and b. */
static inline double top1_agreement(ctorch_tensor a, ctorch_tensor b) {
  int64_t dim = -1, n = 0;
  ctorch_tensor ia = NULL, ib = NULL, eq = NULL, sum = NULL;
  double same = 0;
  CT_OK(ctorch_argmax(&ia, a, &dim, 0));
  CT_OK(ctorch_argmax(&ib, b, &dim, 0));
  CT_OK(ctorch_eq_Tensor(&eq, ia, ib));
  CT_OK(ctorch_sum(&sum, eq, NULL));
  CT_OK(ctorch_tensor_item_double(&same, sum));
  CT_OK(ctorch_tensor_numel(&n, ia));
  ctorch_tensor_free(ia), ctorch_tensor_free(ib), ctorch_tensor_free(eq), ctorch_tensor_free(sum);
  return same / (double)n;
}

static inline void expect_has(const char *report, const char *line) {
  ck_assert_msg(strstr(report, line) != NULL, "report lacks '%s':\n%s", line, report);
}

static inline ctorch_tensor randn2(int64_t a, int64_t b) {
  int64_t sz[2] = {a, b};
  ctorch_tensor t = NULL;
  CT_OK(ctorch_randn(&t, sz, 2, NULL, NULL, NULL, NULL));
  return t;
}

static inline void expect_repr(ctorch_nn_module m, const char *want) {
  char *s = NULL;
  CT_OK(ctorch_nn_module_repr(&s, m));
  ck_assert_msg(strcmp(s, want) == 0, "repr:\n%s\nwanted:\n%s", s, want);
  ctorch_string_free(s);
}

/* The dict's keys joined by ',' into buf. */
static inline const char *keys_of(ctorch_tensor_dict d, char *buf, size_t cap) {
  size_t n = 0, i;
  buf[0] = 0;
  CT_OK(ctorch_tensor_dict_size(&n, d));
  for (i = 0; i < n; ++i) {
    const char *k = NULL;
    CT_OK(ctorch_tensor_dict_key(&k, d, i));
    if (i) strncat(buf, ",", cap - strlen(buf) - 1);
    strncat(buf, k, cap - strlen(buf) - 1);
  }
  return buf;
}

/* Whether a and b hold equal values. */
static inline int same_values(ctorch_tensor a, ctorch_tensor b) {
  int eq = 0;
  CT_OK(ctorch_equal(&eq, a, b));
  return eq;
}

/* Sequential(Linear(4, 8), ReLU(), Linear(8, 1)). */
static inline ctorch_nn_module mlp(void) {
  ctorch_nn_module s = nn("Sequential", ""), c;
  c = nn("Linear", "4, 8");
  CT_OK(ctorch_nn_module_append(s, c));
  ctorch_nn_module_free(c);
  c = nn("ReLU", "");
  CT_OK(ctorch_nn_module_append(s, c));
  ctorch_nn_module_free(c);
  c = nn("Linear", "8, 1");
  CT_OK(ctorch_nn_module_append(s, c));
  ctorch_nn_module_free(c);
  return s;
}

#endif
