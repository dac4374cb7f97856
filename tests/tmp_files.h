/* A fresh temporary directory per test, for the check suites that write
 * files (test_serialize.c, test_optim_state.c,
 * test_data.c); whole-file reads and writes are check_main.h's ct_read_file and
 * ct_write_file. Use as a checked fixture:
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
    char p[4096];
    if (!d) return -1;
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
        if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) < (int)sizeof p) ct_remove_tree(p);
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

#endif
