/* Shared scaffolding for the check-based suites: each test file defines
 * `static Suite *make_suite(void)` and ends with CTORCH_CHECK_MAIN(). */
#ifndef CTORCH_CHECK_MAIN_H
#define CTORCH_CHECK_MAIN_H

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Asserts two tensor handles are distinct values for the same tensor
 * (ctorch_tensor_is_same): every new handle is a handle of its own. */
#define CT_ASSERT_SAME(a, b)                                                         \
  do {                                                                               \
    int ct_same_ = -1;                                                               \
    CT_OK(ctorch_tensor_is_same(&ct_same_, (a), (b)));                               \
    ck_assert_msg(ct_same_ == 1, "%s and %s are not the same tensor", #a, #b);      \
    ck_assert_ptr_ne((a), (b));                                                      \
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

/* The Fashion-MNIST directory the build was configured with. */
static inline const char *ct_fashion_mnist_dir(void) {
  const char *d = getenv("CTORCH_FASHION_MNIST_DIR");
  return d && *d ? d : "/usr/share/datasets/fashion-mnist";
}

/* The number of CUDA devices, asked in a forked child (-1 if the child
 * failed). The parent must never touch CUDA itself: check forks a child per
 * test (CK_FORK), and a child forked after its parent initialised the CUDA
 * driver (ctorch_cuda_device_count does, through cudaGetDeviceCount) gets
 * cudaErrorInitializationError ("CUDA error: initialization error") from
 * every CUDA call. */
static inline int ct_cuda_device_count_in_child(void) {
  int status = 0;
  pid_t pid;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int n = 0;
    if (ctorch_cuda_device_count(&n) != CTORCH_OK || n < 0) n = 0;
    _exit(n > 100 ? 100 : n); /* _exit: no atexit handlers, no leak report */
  }
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The whole file, malloc'ed (the caller frees it), NUL-terminated; *n = its size. */
static inline char *ct_read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  char *b;
  long sz;
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  b = malloc((size_t)sz + 1);
  ck_assert_ptr_nonnull(b);
  ck_assert_uint_eq(fread(b, 1, (size_t)sz, f), (size_t)sz);
  b[sz] = 0;
  fclose(f);
  *n = (size_t)sz;
  return b;
}

static inline void ct_write_file(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot create %s", path);
  ck_assert_uint_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}

/* max |t| over every element, with ctorch's own operators. */
static inline double ct_max_abs(ctorch_tensor t) {
  ctorch_tensor a = NULL, m = NULL;
  double v = -1;
  CT_OK(ctorch_abs(&a, t));
  CT_OK(ctorch_max(&m, a));
  CT_OK(ctorch_tensor_item_double(&v, m));
  ctorch_tensor_free(a);
  ctorch_tensor_free(m);
  return v;
}

/* max |a - b| over every element (a and b broadcast), computed with ctorch's
 * own operators, so any dtype and device works. */
static inline double ct_max_abs_diff(ctorch_tensor a, ctorch_tensor b) {
  ctorch_tensor d = NULL, e = NULL, m = NULL;
  double v = -1;
  CT_OK(ctorch_sub_Tensor(&d, a, b, ctorch_scalar_int(1)));
  CT_OK(ctorch_abs(&e, d));
  CT_OK(ctorch_max(&m, e));
  CT_OK(ctorch_tensor_item_double(&v, m));
  ctorch_tensor_free(d);
  ctorch_tensor_free(e);
  ctorch_tensor_free(m);
  return v;
}

/* Makes a test's input files with Python, once, before check forks the
 * tests: runs `$CTORCH_TORCH_PYTHON $CTORCH_SOURCE_DIR/<script> <cwd>/<subdir>`
 * and puts that directory in dir. 1 if the script succeeded; else 0, with
 * why in err (each test then fails saying so: no silent skipping). */
static inline int ct_make_with_python(const char *script, const char *subdir, char *dir, size_t dir_cap, char *err,
                                      size_t err_cap) {
  const char *src = getenv("CTORCH_SOURCE_DIR"), *py = getenv("CTORCH_TORCH_PYTHON");
  char cmd[12288];
  int rc;
  if (!src || !*src || !py || !*py) {
    snprintf(err, err_cap, "CTORCH_SOURCE_DIR and CTORCH_TORCH_PYTHON must be set (run under ctest)");
    return 0;
  }
  if (!getcwd(dir, dir_cap) || strlen(dir) + strlen(subdir) + 2 > dir_cap) {
    snprintf(err, err_cap, "getcwd failed");
    return 0;
  }
  strcat(dir, "/");
  strcat(dir, subdir);
  snprintf(cmd, sizeof cmd, "'%s' '%s/%s' '%s'", py, src, script, dir);
  rc = system(cmd);
  if (rc != 0) {
    snprintf(err, err_cap, "'%.4000s' exited with %d", cmd, rc);
    return 0;
  }
  return 1;
}

/* What a suite, or the tcases tagged with a requirement's name, needs to run.
 * tests/CMakeLists.txt runs each tag as its own ctest test with
 * CTORCH_TEST_REQUIRES set; when a requirement is missing the binary prints
 * "skipped: <why>" and exits 77, which ctest counts as skipped (never passed).
 *   python         CTORCH_TORCH_PYTHON: a Python whose torch matches the build
 *   fashion_mnist  the Fashion-MNIST IDX files (package dataset-fashion-mnist)
 *   cuda           a CUDA device usable by this libtorch
 *   py_safetensors CTORCH_TORCH_PYTHON imports PyPI's safetensors package
 *   py_MODULE      CTORCH_TORCH_PYTHON imports MODULE (py_onnxruntime, ...)
 *   other_torch    CTORCH_TEST_OTHER_TORCH_DIR: the site directory of another torch
 *   aoti_compile   CTORCH_TORCH_PYTHON's torch packages AOTInductor models (>= 2.6)
 *   no_aoti_compile  ... and the opposite (1.13: the NOT_IMPLEMENTED check) */
static inline int ct_requirement_missing(const char *need, char *why, size_t cap) {
  if (strcmp(need, "python") == 0) {
    const char *py = getenv("CTORCH_TORCH_PYTHON");
    if (py && *py) return 0;
    snprintf(why, cap, "no Python whose torch matches this libtorch (CTORCH_TORCH_PYTHON is empty)");
    return 1;
  }
  if (strcmp(need, "py_safetensors") == 0) {
    const char *py = getenv("CTORCH_TORCH_PYTHON");
    char cmd[4300];
    if (!py || !*py) {
      snprintf(why, cap, "no Python whose torch matches this libtorch (CTORCH_TORCH_PYTHON is empty)");
      return 1;
    }
    snprintf(cmd, sizeof cmd, "'%.4000s' -c 'import safetensors.torch' >/dev/null 2>&1", py);
    if (system(cmd) == 0) return 0;
    snprintf(why, cap, "%.4000s cannot import safetensors.torch (PyPI's safetensors: scripts/deps, scripts/torch-env)", py);
    return 1;
  }
  if (strcmp(need, "other_torch") == 0) {
    const char *o = getenv("CTORCH_TEST_OTHER_TORCH_DIR");
    if (o && *o) return 0;
    snprintf(why, cap, "no second Python with a different torch on this machine (Debian's python3-torch or a "
             "scripts/torch-env venv, found when CMake configures)");
    return 1;
  }
  if (strcmp(need, "no_aoti_compile") == 0) {
    if (ct_requirement_missing("aoti_compile", why, cap)) return 0;
    snprintf(why, cap, "this torch packages AOTInductor models (the aoti test runs instead)");
    return 1;
  }
  if (strncmp(need, "py_", 3) == 0 || strcmp(need, "aoti_compile") == 0) {
    const char *py = getenv("CTORCH_TORCH_PYTHON");
    char cmd[4400];
    int aoti = strcmp(need, "aoti_compile") == 0;
    if (!py || !*py) {
      snprintf(why, cap, "no Python whose torch matches this libtorch (CTORCH_TORCH_PYTHON is empty)");
      return 1;
    }
    if (aoti)
      snprintf(cmd, sizeof cmd, "'%.4000s' -c 'import torch._inductor, torch._export.converter; "
               "torch._inductor.aoti_compile_and_package' >/dev/null 2>&1", py);
    else
      snprintf(cmd, sizeof cmd, "'%.4000s' -c 'import %.60s' >/dev/null 2>&1", py, need + 3);
    if (system(cmd) == 0) return 0;
    if (aoti)
      snprintf(why, cap, "the torch of %.4000s has no torch.export + AOTInductor packaging (torch >= 2.6 has)", py);
    else
      snprintf(why, cap, "%.4000s cannot import %.60s (scripts/deps, scripts/torch-env install it)", py, need + 3);
    return 1;
  }
  if (strcmp(need, "fashion_mnist") == 0) {
    char f[4096];
    FILE *fp;
    snprintf(f, sizeof f, "%s/train-images-idx3-ubyte.gz", ct_fashion_mnist_dir());
    fp = fopen(f, "rb");
    if (fp) { fclose(fp); return 0; }
    snprintf(why, cap, "no Fashion-MNIST data at %s (package dataset-fashion-mnist)", ct_fashion_mnist_dir());
    return 1;
  }
  if (strcmp(need, "cuda") == 0) {
    if (ct_cuda_device_count_in_child() > 0) return 0;
    snprintf(why, cap, "no CUDA device");
    return 1;
  }
  snprintf(why, cap, "unknown requirement '%s'", need);
  return 1;
}

/* 77 (skipped) when a requirement in CTORCH_TEST_REQUIRES (space-separated) is missing. */
static inline int ct_check_requirements(void) {
  const char *req = getenv("CTORCH_TEST_REQUIRES");
  char word[64], why[4300];
  while (req && *req) {
    size_t n = strcspn(req, " ");
    if (n > 0 && n < sizeof word) {
      memcpy(word, req, n);
      word[n] = 0;
      if (ct_requirement_missing(word, why, sizeof why)) {
        printf("skipped: %s\n", why);
        return 77;
      }
    }
    req += n;
    while (*req == ' ') ++req;
  }
  return 0;
}

/* check runs every test in a forked child (CK_FORK) that ends with exit(),
 * and exit() runs the static destructors of every library loaded: libtorch's
 * unregister each of its thousands of operators, copying on write the pages
 * the child shares with its parent. Measured (libtorch 2.15.0,
 * test_optim's 21 tests): 4.48 s a run, 0.45 s without the forks; the
 * destructors were most of a child's 0.2 s. So a child (never the parent,
 * whose exit still runs every destructor, ctorch's own included) ends with
 * _exit() once check's exit() calls this: stdio flushed first, the status
 * check's parent reads unchanged. Under ASan the child first makes the leak
 * check LeakSanitizer would make at its exit (a leak still fails the test,
 * exit code 23); under TSan it keeps the whole exit, where TSan's exit code
 * reports the races it saw. */
#if defined(__SANITIZE_THREAD__)
#define CT_FULL_EXIT 1
#elif defined(__SANITIZE_ADDRESS__)
#define CT_LEAK_CHECK 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CT_FULL_EXIT 1
#elif __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define CT_LEAK_CHECK 1
#endif
#endif
#ifdef CT_LEAK_CHECK
#include <sanitizer/lsan_interface.h>
#endif
#if !defined(__USE_MISC) && !defined(__cplusplus)
extern int on_exit(void (*fn)(int status, void *arg), void *arg); /* glibc's, declared only with _DEFAULT_SOURCE */
#endif
#ifndef CT_FULL_EXIT
static pid_t ct_parent_pid;
static void ct_child_exit_now(int status, void *unused) {
  (void)unused;
  if (getpid() == ct_parent_pid) return;
#ifdef CT_LEAK_CHECK
  __lsan_do_leak_check();
#endif
  fflush(NULL);
  _exit(status);
}
#endif

/* Call once in main, before srunner_run_all. */
static inline void ct_fast_child_exit(void) {
#ifndef CT_FULL_EXIT
  ct_parent_pid = getpid();
  on_exit(ct_child_exit_now, NULL);
#endif
}

/* A test's own precondition, beside CTORCH_TEST_REQUIRES's: NULL to run,
 * or why not, which main prints as "skipped: <why>" before exiting 77. */
static inline const char *ct_no_precondition(void) { return NULL; }

/* main for a test file that defines make_suite(); _UNLESS(f) first asks f
 * whether the suite can run here. */
#define CTORCH_CHECK_MAIN() CTORCH_CHECK_MAIN_UNLESS(ct_no_precondition)
#define CTORCH_CHECK_MAIN_UNLESS(precondition)                      \
  int main(void) {                                                  \
    SRunner *sr;                                                    \
    int failed;                                                     \
    const char *why_not;                                            \
    if (ct_check_requirements()) return 77;                         \
    if ((why_not = precondition()) != NULL) {                       \
      printf("skipped: %s\n", why_not);                             \
      return 77;                                                    \
    }                                                               \
    ct_fast_child_exit();                                           \
    sr = srunner_create(make_suite());                              \
    srunner_run_all(sr, CK_NORMAL);                                 \
    failed = srunner_ntests_failed(sr);                             \
    srunner_free(sr);                                               \
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;               \
  }

#endif
