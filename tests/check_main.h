/* Shared scaffolding for the check-based suites: each test file defines
 * `static Suite *make_suite(void)` and ends with CTORCH_CHECK_MAIN(). */
#ifndef CTORCH_CHECK_MAIN_H
#define CTORCH_CHECK_MAIN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

/* Asserts a call returned CTORCH_OK, printing the library's message if not. */
#define CT_OK(call)                                                                 \
  do {                                                                              \
    ctorch_status ct_st_ = (call);                                                  \
    ck_assert_msg(ct_st_ == CTORCH_OK, "%s -> %s: %s", #call, ctorch_status_name(ct_st_), \
                  ctorch_last_error());                                             \
  } while (0)

/* Asserts a call failed with `want` status. */
#define CT_FAILS(want, call)                                                         \
  do {                                                                               \
    ctorch_status ct_st_ = (call);                                                   \
    ck_assert_msg(ct_st_ == (want), "%s -> %s (wanted %s): %s", #call, ctorch_status_name(ct_st_), \
                  ctorch_status_name(want), ctorch_last_error());                    \
  } while (0)

/* Asserts the last error mentions `needle`. */
#define CT_ERROR_HAS(needle) \
  ck_assert_msg(strstr(ctorch_last_error(), (needle)) != NULL, "last error '%s' lacks '%s'", ctorch_last_error(), (needle))

/* A float32 tensor from a literal array (test helper). */
static inline ctorch_tensor ct_floats(const float *v, const int64_t *sizes, size_t ndim) {
  size_t n = 1, i;
  ctorch_tensor t = NULL;
  for (i = 0; i < ndim; ++i) n *= (size_t)sizes[i];
  ck_assert_int_eq(ctorch_tensor_from_data(&t, v, n * sizeof(float), sizes, ndim, CTORCH_FLOAT32), CTORCH_OK);
  return t;
}

#define CTORCH_CHECK_MAIN()                                         \
  int main(void) {                                                  \
    SRunner *sr = srunner_create(make_suite());                     \
    int failed;                                                     \
    srunner_run_all(sr, CK_NORMAL);                                 \
    failed = srunner_ntests_failed(sr);                             \
    srunner_free(sr);                                               \
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;               \
  }

#endif
