/* Shared by the bridge's check suites: check_main.h's CT_OK/CT_FAILS for
 * bridge calls, whose messages are in ctorch_py_last_error(). */
#ifndef CTORCH_TESTS_PY_CHECK_H
#define CTORCH_TESTS_PY_CHECK_H

#include "../check_main.h"
#include "ctorch_python.h"

#define PY_OK(call)                                                                               \
  do {                                                                                            \
    ctorch_status st_ = (call);                                                                   \
    ck_assert_msg(st_ == CTORCH_OK, "%s -> %s: %s", #call, ctorch_status_name(st_), ctorch_py_last_error()); \
  } while (0)
#define PY_FAILS(want, call)                                                                      \
  do {                                                                                            \
    ctorch_status st_ = (call);                                                                   \
    ck_assert_msg(st_ == (want), "%s -> %s (wanted %s): %s", #call, ctorch_status_name(st_),       \
                  ctorch_status_name(want), ctorch_py_last_error());                              \
  } while (0)
#define PY_ERROR_HAS(needle) \
  ck_assert_msg(strstr(ctorch_py_last_error(), (needle)) != NULL, "error '%s' lacks '%s'", ctorch_py_last_error(), (needle))

#endif
