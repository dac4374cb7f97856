/* Running one test body as N ranks: fork N children from the (already
 * forked) check test, bound them with a watchdog and collect exit codes.
 * Children report failures on stderr and through their exit status. */
#ifndef CTORCH_TEST_DIST_RANKS_H
#define CTORCH_TEST_DIST_RANKS_H

#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctorch.h"

/* Inside a rank: fail the rank (exit status 1) with a message. */
#define RK_OK(call)                                                                                       \
  do {                                                                                                   \
    ctorch_status r_st_ = (call);                                                                        \
    if (r_st_ != CTORCH_OK) {                                                                            \
      fprintf(stderr, "rank %d: %s:%d: %s -> %s: %s\n", r_rank, __FILE__, __LINE__, #call,              \
              ctorch_status_name(r_st_), ctorch_last_error());                                           \
      return 1;                                                                                          \
    }                                                                                                    \
  } while (0)
#define RK_FAILS(want, call)                                                                              \
  do {                                                                                                   \
    ctorch_status r_st_ = (call);                                                                        \
    if (r_st_ != (want)) {                                                                               \
      fprintf(stderr, "rank %d: %s:%d: %s -> %s, wanted %s: %s\n", r_rank, __FILE__, __LINE__, #call,   \
              ctorch_status_name(r_st_), ctorch_status_name(want), ctorch_last_error());                 \
      return 1;                                                                                          \
    }                                                                                                    \
  } while (0)
#define RK_CHECK(cond, ...)                                                                               \
  do {                                                                                                   \
    if (!(cond)) {                                                                                       \
      fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", r_rank, __FILE__, __LINE__, #cond);        \
      fprintf(stderr, __VA_ARGS__);                                                                      \
      fprintf(stderr, "\n");                                                                             \
      return 1;                                                                                          \
    }                                                                                                    \
  } while (0)

/* 1-d tensors from/to C arrays (NULL / nonzero on failure). */
static inline ctorch_tensor ct_vec(const void *data, int64_t n, ctorch_dtype dt) {
  ctorch_tensor t = NULL;
  size_t es = 0;
  if (ctorch_dtype_size(&es, dt) != CTORCH_OK) return NULL;
  if (ctorch_tensor_from_data(&t, data, (size_t)n * es, &n, 1, dt) != CTORCH_OK) return NULL;
  return t;
}
static inline ctorch_tensor ct_fvec(const float *v, int64_t n) { return ct_vec(v, n, CTORCH_FLOAT32); }
/* Reads a float32 tensor of n elements into out; nonzero if not exactly that. */
static inline int ct_read_f(float *out, int64_t n, ctorch_tensor t) {
  int64_t numel = -1;
  if (!t || ctorch_tensor_numel(&numel, t) != CTORCH_OK || numel != n) return 1;
  return ctorch_tensor_copy_to(out, (size_t)n * sizeof(float), t) != CTORCH_OK;
}
/* 1 if a[i] == b[i] exactly for all i (values in the tests are exact in float). */
static inline int ct_feq(const float *a, const float *b, int64_t n) {
  int64_t i;
  for (i = 0; i < n; ++i)
    if (a[i] != b[i]) return 0;
  return 1;
}

static inline const char *ct_fmt(char *buf, size_t cap, const float *v, int64_t n) {
  size_t used = 0;
  int64_t i;
  buf[0] = 0;
  for (i = 0; i < n && used + 16 < cap; ++i) used += (size_t)snprintf(buf + used, cap - used, "%s%g", i ? " " : "", v[i]);
  return buf;
}

/* Inside a rank: tensor t (float32) must hold exactly the listed values. */
#define RK_EXPECT_F(t, ...)                                                                         \
  do {                                                                                             \
    const float want_[] = {__VA_ARGS__};                                                           \
    const int64_t n_ = (int64_t)(sizeof want_ / sizeof want_[0]);                                  \
    float got_[64];                                                                                \
    char g_[512], w_[512];                                                                         \
    RK_CHECK(ct_read_f(got_, n_, (t)) == 0, "cannot read %s as %d floats", #t, (int)n_);            \
    RK_CHECK(ct_feq(got_, want_, n_), "%s = [%s], want [%s]", #t, ct_fmt(g_, sizeof g_, got_, n_), \
            ct_fmt(w_, sizeof w_, want_, n_));                                                     \
  } while (0)

typedef int (*ct_rank_fn)(int rank, int size, const char *dir, void *ctx);

static inline double ct_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A TCP port that was free a moment ago on 127.0.0.1 (bind to port 0). */
static inline int ct_free_port(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int port = -1, fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

/* Runs fn in `size` child processes sharing a fresh temporary directory.
 * status[i] receives rank i's wait status; children still running after
 * timeout_s seconds are killed (SIGKILL). Returns the number of ranks that
 * did not exit with status 0. */
static inline int ct_run_ranks(int size, ct_rank_fn fn, void *ctx, int timeout_s, int *status) {
  char dir[] = "/tmp/ctorch_dist_XXXXXX";
  pid_t pids[64];
  int i, bad = 0, left = size;
  double deadline = ct_now() + timeout_s;
  if (!mkdtemp(dir)) return size;
  fflush(NULL);
  for (i = 0; i < size; ++i) {
    pids[i] = fork();
    if (pids[i] == 0) {
      int rc = fn(i, size, dir, ctx);
      fflush(NULL);
      _exit(rc);
    }
    status[i] = -1;
  }
  while (left > 0) {
    for (i = 0; i < size; ++i) {
      int st;
      if (status[i] != -1) continue;
      if (waitpid(pids[i], &st, WNOHANG) == pids[i]) {
        status[i] = st;
        --left;
      }
    }
    if (left > 0 && ct_now() > deadline) {
      for (i = 0; i < size; ++i)
        if (status[i] == -1) {
          fprintf(stderr, "watchdog: rank %d still running after %d s, killing it\n", i, timeout_s);
          kill(pids[i], SIGKILL);
          waitpid(pids[i], &status[i], 0);
          --left;
        }
    }
    if (left > 0) usleep(10000);
  }
  for (i = 0; i < size; ++i)
    if (!(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0)) ++bad;
  {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  return bad;
}

/* A Gloo group over a FileStore in dir, bound to the loopback interface. */
static inline ctorch_status ct_file_group(ctorch_process_group *out, const char *dir, int rank, int size,
                                   int64_t timeout_ms) {
  char path[256];
  ctorch_store store = NULL;
  ctorch_status st;
  setenv("GLOO_SOCKET_IFNAME", "lo", 1);
  snprintf(path, sizeof path, "%s/store", dir);
  st = ctorch_store_file_new(&store, path, size, timeout_ms);
  if (st != CTORCH_OK) return st;
  st = ctorch_process_group_new_gloo(out, store, rank, size, timeout_ms);
  ctorch_store_free(store);
  return st;
}

#endif
