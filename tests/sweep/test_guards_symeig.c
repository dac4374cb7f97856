/* Regression: _symeig_helper on a non-square input returned
 * CTORCH_OK while LAPACK wrote past the buffer (libtorch 1.13; valgrind: 3
 * invalid writes in ssytd2_/sorgtr_, then "malloc(): unaligned tcache chunk
 * detected" in a later, unrelated call). The operator is gone from PyTorch
 * 2.x: looked up at run time, and this test reports itself skipped (exit 77)
 * where it does not exist. */
#include <dlfcn.h>

#include "../check_main.h"

typedef ctorch_status (*symeig_fn)(ctorch_tensor *, ctorch_tensor *, ctorch_tensor, int, int);
static symeig_fn symeig_helper;

START_TEST(symeig_helper_refuses_non_square_input) {
  float v[9] = {2, 1, 0, 1, 2, 0, 0, 0, 3};
  const int64_t rect[2] = {2, 3}, sq[2] = {3, 3};
  ctorch_tensor a = ct_floats(v, rect, 2), b = ct_floats(v, sq, 2), e = NULL, q = NULL;
  float ev[3];
  CT_FAILS(CTORCH_INVALID_ARGUMENT, symeig_helper(&e, &q, a, 1, 1));
  CT_ERROR_HAS("ctorch__symeig_helper: argument 'self'");
  ck_assert_ptr_null(e);
  ck_assert_ptr_null(q);
  /* valid: eigenvalues of [[2,1,0],[1,2,0],[0,0,3]] are 1, 3, 3 (ascending) */
  CT_OK(symeig_helper(&e, &q, b, 1, 1));
  CT_OK(ctorch_tensor_copy_to(ev, sizeof ev, e));
  ck_assert_float_eq_tol(ev[0], 1.0f, 1e-5f);
  ck_assert_float_eq_tol(ev[1], 3.0f, 1e-5f);
  ck_assert_float_eq_tol(ev[2], 3.0f, 1e-5f);
  ctorch_tensor_free(e);
  ctorch_tensor_free(q);
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("guards_symeig");
  TCase *tc = tcase_create("issue15");
  tcase_add_test(tc, symeig_helper_refuses_non_square_input);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr;
  int failed;
  symeig_helper = (symeig_fn)dlsym(RTLD_DEFAULT, "ctorch__symeig_helper");
  if (!symeig_helper) {
    const char *v = "?";
    ctorch_torch_version(&v);
    printf("skipped: libtorch %s has no _symeig_helper (removed in PyTorch 2.x)\n", v);
    return 77;
  }
  ct_fast_child_exit();
  sr = srunner_create(make_suite());
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
