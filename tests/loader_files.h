/* Crafting loader inputs in C for the loader suites: a growable byte
 * buffer, pickle opcodes, CRC-32, stored zip archives, a child process with
 * a time bound, and the process's memory figures. Test scaffolding only. */
#ifndef CTORCH_TESTS_LOADER_FILES_H
#define CTORCH_TESTS_LOADER_FILES_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  unsigned char *p;
  size_t n, cap;
} lf_buf;

static void lf_put(lf_buf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->n + n) c *= 2;
    b->p = (unsigned char *)realloc(b->p, c);
    if (!b->p) abort();
    b->cap = c;
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}
static void lf_byte(lf_buf *b, unsigned v) {
  unsigned char c = (unsigned char)v;
  lf_put(b, &c, 1);
}
static void lf_le(lf_buf *b, uint64_t v, int n) {
  int k;
  for (k = 0; k < n; ++k) lf_byte(b, (unsigned)((v >> (8 * k)) & 0xFF));
}
static void lf_str(lf_buf *b, const char *s) { lf_put(b, s, strlen(s)); }
static void lf_free(lf_buf *b) {
  free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

/* Pickle opcodes. */
static void pk_unicode(lf_buf *b, const char *s) {
  lf_byte(b, 'X');
  lf_le(b, strlen(s), 4);
  lf_str(b, s);
}
static void pk_int(lf_buf *b, int64_t v) {
  if (v >= 0 && v < 256) {
    lf_byte(b, 'K');
    lf_byte(b, (unsigned)v);
  } else {
    lf_byte(b, 'J');
    lf_le(b, (uint64_t)v, 4);
  }
}
/* A float32 tensor over storage key `key` (numel elements) with the given
 * sizes/strides (ndim <= 3); leaves the tensor on the pickle stack. */
static void pk_tensor(lf_buf *b, const char *key, int64_t numel, const int64_t *sizes, const int64_t *strides, int ndim) {
  int k;
  lf_str(b, "ctorch._utils\n_rebuild_tensor_v2\n"); /* GLOBAL ('c') torch._utils._rebuild_tensor_v2 */
  lf_byte(b, '(');
  lf_byte(b, '(');
  pk_unicode(b, "storage");
  lf_str(b, "ctorch\nFloatStorage\n");
  pk_unicode(b, key);
  pk_unicode(b, "cpu");
  lf_byte(b, 0x8a); /* LONG1, 8 bytes */
  lf_byte(b, 8);
  lf_le(b, (uint64_t)numel, 8);
  lf_byte(b, 't');
  lf_byte(b, 'Q');
  pk_int(b, 0);
  lf_byte(b, '(');
  for (k = 0; k < ndim; ++k) {
    lf_byte(b, 0x8a);
    lf_byte(b, 8);
    lf_le(b, (uint64_t)sizes[k], 8);
  }
  lf_byte(b, 't');
  lf_byte(b, '(');
  for (k = 0; k < ndim; ++k) {
    lf_byte(b, 0x8a);
    lf_byte(b, 8);
    lf_le(b, (uint64_t)strides[k], 8);
  }
  lf_byte(b, 't');
  lf_byte(b, 0x89);
  lf_byte(b, 't');
  lf_byte(b, 'R');
}

static uint32_t lf_crc32(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  size_t i;
  int k;
  for (i = 0; i < n; ++i) {
    c ^= p[i];
    for (k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

/* A zip of n records, data[i] stored as is: method[i] 0 (stored) or 8
 * (deflated, with crc[i] and usize[i] of the inflated data); method NULL:
 * all stored, CRCs computed. Returns 0 on success. */
static int lf_write_zip_raw(const char *path, const char *const *names, const unsigned char *const *data,
                            const size_t *sizes, const int *method, const uint32_t *crcs, const size_t *usizes,
                            size_t n) {
  lf_buf out = {0}, cd = {0};
  size_t i;
  FILE *f;
  int rc;
  for (i = 0; i < n; ++i) {
    int m = method ? method[i] : 0;
    uint32_t crc = m ? crcs[i] : lf_crc32(data[i], sizes[i]);
    size_t us = m ? usizes[i] : sizes[i];
    uint64_t off = out.n;
    size_t nl = strlen(names[i]);
    lf_le(&out, 0x04034b50, 4); lf_le(&out, 20, 2); lf_le(&out, 0, 2); lf_le(&out, (uint64_t)m, 2); lf_le(&out, 0, 4);
    lf_le(&out, crc, 4); lf_le(&out, sizes[i], 4); lf_le(&out, us, 4); lf_le(&out, nl, 2); lf_le(&out, 0, 2);
    lf_put(&out, names[i], nl);
    lf_put(&out, data[i], sizes[i]);
    lf_le(&cd, 0x02014b50, 4); lf_le(&cd, 20, 2); lf_le(&cd, 20, 2); lf_le(&cd, 0, 2); lf_le(&cd, (uint64_t)m, 2);
    lf_le(&cd, 0, 4); lf_le(&cd, crc, 4); lf_le(&cd, sizes[i], 4); lf_le(&cd, us, 4); lf_le(&cd, nl, 2);
    lf_le(&cd, 0, 2); lf_le(&cd, 0, 2); lf_le(&cd, 0, 2); lf_le(&cd, 0, 2); lf_le(&cd, 0, 4); lf_le(&cd, off, 4);
    lf_put(&cd, names[i], nl);
  }
  {
    uint64_t cd_off = out.n;
    lf_put(&out, cd.p, cd.n);
    lf_le(&out, 0x06054b50, 4); lf_le(&out, 0, 2); lf_le(&out, 0, 2); lf_le(&out, n, 2); lf_le(&out, n, 2);
    lf_le(&out, cd.n, 4); lf_le(&out, cd_off, 4); lf_le(&out, 0, 2);
  }
  f = fopen(path, "wb");
  rc = f && fwrite(out.p, 1, out.n, f) == out.n ? 0 : -1;
  if (f && fclose(f) != 0) rc = -1;
  lf_free(&out);
  lf_free(&cd);
  return rc;
}

static int lf_write_zip(const char *path, const char *const *names, const unsigned char *const *data,
                        const size_t *sizes, size_t n) {
  return lf_write_zip_raw(path, names, data, sizes, NULL, NULL, NULL, n);
}

/* A torch.save checkpoint: data.pkl = pkl, plus one storage record "0" of
 * nbytes zero bytes (when nbytes > 0). */
static int lf_write_checkpoint(const char *path, const lf_buf *pkl, size_t nbytes) {
  const char *names[4] = {"archive/data.pkl", "archive/byteorder", "archive/version", "archive/data/0"};
  unsigned char *zeros = (unsigned char *)calloc(1, nbytes ? nbytes : 1);
  const unsigned char *data[4] = {pkl->p, (const unsigned char *)"little", (const unsigned char *)"3\n", zeros};
  size_t sizes[4] = {pkl->n, 6, 2, nbytes};
  int rc = lf_write_zip(path, names, data, sizes, nbytes ? 4 : 3);
  free(zeros);
  return rc;
}

/* Runs fn(arg) in a child killed after `seconds`; returns its exit code
 * (the ctorch_status it returned), or -signal if it died (a hang: -SIGALRM). */
static int lf_in_child(int (*fn)(void *), void *arg, unsigned seconds) {
  pid_t pid;
  int st = 0;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid < 0) return -1000;
  if (pid == 0) {
    alarm(seconds);
    _exit(fn(arg) & 0xFF);
  }
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1000;
  if (WIFSIGNALED(st)) return -WTERMSIG(st);
  return WEXITSTATUS(st);
}

/* A line of /proc/self/status in KiB ("VmRSS:", "VmHWM:", "VmSize:"), -1 if absent. */
static long lf_status_kib(const char *key) {
  char line[256];
  long v = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, strlen(key)) == 0) {
      v = strtol(line + strlen(key), NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

/* Resets VmHWM to the current RSS (Linux >= 4.0); 0 on success. */
static int lf_reset_hwm(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  int rc;
  if (!f) return -1;
  rc = fputs("5", f) >= 0 ? 0 : -1;
  if (fclose(f) != 0) rc = -1;
  return rc;
}

#endif
