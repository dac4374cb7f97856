/* What tests/handles' two programs share: the assertion that a call was
 * refused for a bad handle, and a small tensor to pass. */
#ifndef CTORCH_TESTS_HANDLE_CHECKS_H
#define CTORCH_TESTS_HANDLE_CHECKS_H

#include <stdint.h>

#include "check_main.h"

/* The call fails with INVALID_ARGUMENT naming argument ARG and saying WHY. */
#define BAD(call, arg, why)                  \
  do {                                       \
    CT_FAILS(CTORCH_INVALID_ARGUMENT, call); \
    CT_ERROR_HAS("argument '" arg "'");      \
    CT_ERROR_HAS(why);                       \
  } while (0)

/* A float32 tensor of n ones. */
static inline ctorch_tensor vec(int64_t n) {
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  ctorch_tensor t = NULL;
  CT_OK(ctorch_ones(&t, &n, 1, &f32, NULL, NULL, NULL));
  return t;
}

#endif
