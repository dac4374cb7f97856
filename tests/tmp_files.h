/* A fresh temporary directory per test, and whole-file reads and writes, for
 * the check suites that write files (test_serialize.c, test_optim_state.c,
 * test_data.c). Include after check_main.h. Use as a checked fixture:
 *
 *   static void make_dir(void) { ct_tmp_dir_make("serialize"); }
 *   ...
 *   tcase_add_checked_fixture(tc, make_dir, ct_tmp_dir_remove);
 *
 * Failures are check assertions (the test fails, naming the file). */
#ifndef CTORCH_TMP_FILES_H
#define CTORCH_TMP_FILES_H

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"

/* The current test's directory: /tmp/ctorch_<tag>_XXXXXX, made fresh per test. */
static char ct_tmp_dir[256];

static inline void ct_tmp_dir_make(const char *tag) {
  snprintf(ct_tmp_dir, sizeof ct_tmp_dir, "/tmp/ctorch_%s_XXXXXX", tag);
  ck_assert_ptr_nonnull(mkdtemp(ct_tmp_dir));
}

/* Removes `path` and everything below it (links are removed, not followed). */
static inline int ct_remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return -1;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    struct dirent *e;
    char p[1024];
    if (!d) return -1;
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        ct_remove_tree(p);
      }
    closedir(d);
    return rmdir(path);
  }
  return unlink(path);
}

/* The fixture's teardown: the directory and all the test left in it. */
static inline void ct_tmp_dir_remove(void) {
  ck_assert_msg(ct_remove_tree(ct_tmp_dir) == 0, "cannot remove %s", ct_tmp_dir);
}

/* ct_tmp_dir/name, in one of four rotating buffers (so a call can take two or
 * three paths as arguments). */
static inline const char *ct_tmp_path(const char *name) {
  static char buf[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", ct_tmp_dir, name);
  return buf[k];
}

/* How many entries the directory holds (a test that a failed write left no
 * temporary file behind). */
static inline int ct_tmp_dir_count(void) {
  DIR *d = opendir(ct_tmp_dir);
  struct dirent *e;
  int n = 0;
  ck_assert_ptr_nonnull(d);
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
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

#endif
