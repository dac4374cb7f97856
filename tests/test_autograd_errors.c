/* Custom autograd functions' failures: a callback failing
 * without a message gets a fixed, short one (it reused and prefixed the
 * previous failure's, growing 77 bytes a call), the failure log is bounded
 * in bytes, mark_non_differentiable takes outputs only, and
 * ctorch_autograd_function_apply checks its arguments before writing. */
#include <stdint.h>

#include "check_main.h"

static ctorch_status silent_failure(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *in, size_t n_in,
                                    ctorch_tensor *out, size_t n_out) {
  (void)ctx, (void)ud, (void)in, (void)n_in, (void)out, (void)n_out;
  return CTORCH_VALUE; /* no ctorch_autograd_ctx_set_error */
}

static ctorch_status no_backward(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *g, size_t n_g,
                                 ctorch_tensor *gin, size_t n_in) {
  (void)ctx, (void)ud, (void)g, (void)n_g, (void)gin, (void)n_in;
  return CTORCH_NOT_IMPLEMENTED;
}

static ctorch_tensor make_leaf(void) {
  const float v[3] = {1, 2, 3};
  const int64_t sz[1] = {3};
  ctorch_tensor x = ct_floats(v, sz, 1);
  CT_OK(ctorch_tensor_set_requires_grad(x, 1));
  return x;
}

START_TEST(silent_callback_failures_keep_short_messages) {
  ctorch_tensor x = make_leaf(), y = NULL, t = NULL;
  size_t first = 0, len = 0, longest = 0;
  uint64_t id;
  long i;
  char buf[64];
  ctorch_status st;
  /* an unrelated failure first: its message must not be taken for the callback's */
  CT_FAILS(CTORCH_IO, ctorch_load(&t, "/nonexistent/ctorch/unrelated.pt"));
  for (i = 0; i < 100000; ++i) {
    CT_FAILS(CTORCH_VALUE, ctorch_autograd_function_apply(&y, 1, silent_failure, no_backward, NULL, NULL, &x, 1));
    len = strlen(ctorch_last_error());
    if (i == 0) {
      first = len;
      CT_ERROR_HAS("forward callback");
      CT_ERROR_HAS("set no message");
      ck_assert_msg(strstr(ctorch_last_error(), "unrelated.pt") == NULL, "took the previous failure's message: %s",
                    ctorch_last_error());
    }
    if (len > longest) longest = len;
  }
  printf("100000 silent callback failures: message %zu bytes first, %zu at most: %s\n", first, longest,
         ctorch_last_error());
  ck_assert_uint_eq(longest, first);
  ck_assert_uint_lt(longest, 300);
  /* the log's copy is as short */
  id = ctorch_last_error_id();
  CT_OK(ctorch_error_message(&st, &len, buf, sizeof buf, id));
  ck_assert_uint_eq(len, first);
  ctorch_tensor_free(x);
}
END_TEST

/* A failure whose message is huge (a 100 KB path) is kept whole as the
 * thread's last error, but the log keeps its first 4 KiB only. */
START_TEST(failure_log_is_bounded_in_bytes) {
  size_t n = 100000, len = 0;
  char *path = malloc(n + 1);
  ctorch_tensor t = NULL;
  ctorch_status st;
  uint64_t id;
  ck_assert_ptr_nonnull(path);
  memset(path, 'a', n);
  memcpy(path, "/nonexistent/", 13);
  path[n] = 0;
  CT_FAILS(CTORCH_IO, ctorch_load(&t, path));
  ck_assert_uint_gt(strlen(ctorch_last_error()), n);
  id = ctorch_last_error_id();
  CT_OK(ctorch_error_message(&st, &len, NULL, 0, id));
  ck_assert_int_eq(st, CTORCH_IO);
  printf("a %zu-byte message is logged as %zu bytes\n", strlen(ctorch_last_error()), len);
  ck_assert_uint_le(len, 4096);
  free(path);
}
END_TEST

/* Marks inputs[0] (not an output) as non-differentiable, then returns x * 2. */
static ctorch_status mark_input(ctorch_autograd_ctx ctx, void *ud, const ctorch_tensor *in, size_t n_in,
                                ctorch_tensor *out, size_t n_out) {
  ctorch_status st;
  (void)n_in, (void)n_out;
  st = ctorch_mul_Scalar(&out[0], in[0], ctorch_scalar_float(2.0));
  if (st != CTORCH_OK) return st;
  return ctorch_autograd_ctx_mark_non_differentiable(ctx, *(int *)ud ? out : in, 1);
}

START_TEST(mark_non_differentiable_takes_outputs_only) {
  ctorch_tensor x = make_leaf(), y = (ctorch_tensor)1;
  int mark_output = 0, rg = -1;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_function_apply(&y, 1, mark_input, no_backward, &mark_output, NULL, &x, 1));
  CT_ERROR_HAS("not one of its outputs");
  ck_assert_ptr_null(y);
  mark_output = 1;
  CT_OK(ctorch_autograd_function_apply(&y, 1, mark_input, no_backward, &mark_output, NULL, &x, 1));
  CT_OK(ctorch_tensor_requires_grad(&rg, y));
  ck_assert_int_eq(rg, 0);
  ctorch_tensor_free(y);
  ctorch_tensor_free(x);
}
END_TEST

START_TEST(function_apply_checks_before_writing_outputs) {
  ctorch_tensor x = make_leaf();
  ctorch_tensor outs[4] = {(ctorch_tensor)1, (ctorch_tensor)2, (ctorch_tensor)3, (ctorch_tensor)4};
  const ctorch_tensor bad_inputs[1] = {NULL};
  size_t i;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_function_apply(outs, 4, NULL, no_backward, NULL, NULL, &x, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_function_apply(outs, 4, silent_failure, NULL, NULL, NULL, &x, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_autograd_function_apply(outs, 4, silent_failure, no_backward, NULL, NULL, NULL, 1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT,
           ctorch_autograd_function_apply(outs, 4, silent_failure, no_backward, NULL, NULL, bad_inputs, 1));
  for (i = 0; i < 4; ++i) ck_assert_ptr_eq(outs[i], (ctorch_tensor)(uintptr_t)(i + 1));
  /* a call that gets as far as forward NULLs them on failure, as documented */
  CT_FAILS(CTORCH_VALUE, ctorch_autograd_function_apply(outs, 4, silent_failure, no_backward, NULL, NULL, &x, 1));
  for (i = 0; i < 4; ++i) ck_assert_ptr_null(outs[i]);
  ctorch_tensor_free(x);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("autograd_errors");
  TCase *tc = tcase_create("autograd_errors");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, silent_callback_failures_keep_short_messages);
  tcase_add_test(tc, failure_log_is_bounded_in_bytes);
  tcase_add_test(tc, mark_non_differentiable_takes_outputs_only);
  tcase_add_test(tc, function_apply_checks_before_writing_outputs);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
