/* OK(call), the check of the test programs that print results for a Python
 * script to compare (the *_dump.c programs under tests/ and the like): a failing ctorch call
 * prints where it was, what, its status and the library's message, and
 * exits with status 1. */
#ifndef CTORCH_TESTS_DUMP_OK_H
#define CTORCH_TESTS_DUMP_OK_H

#include <stdio.h>
#include <stdlib.h>

#include "ctorch.h"

#define OK(call)                                                                                   \
  do {                                                                                             \
    ctorch_status ok_st_ = (call);                                                                 \
    if (ok_st_ != CTORCH_OK) {                                                                     \
      fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call, ctorch_status_name(ok_st_), \
              ctorch_last_error());                                                                \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#endif
