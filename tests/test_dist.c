/* torch.distributed through ctorch: stores, Gloo groups and every
 * collective, run as 2 and 4 real processes on 127.0.0.1. */
#define _GNU_SOURCE 1
#include <poll.h>

#include "check_main.h"
#include "dist/ranks.h"

#define T_MS 60000 /* group/store timeout for the healthy cases */
#define WATCHDOG_S 120

static void expect_all_ok(int size, ct_rank_fn fn, void *ctx) {
  int status[64], i;
  int bad = ct_run_ranks(size, fn, ctx, WATCHDOG_S, status);
  for (i = 0; i < size; ++i)
    ck_assert_msg(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0,
                  "rank %d of %d failed (wait status 0x%x; its message is on stderr)", i, size, status[i]);
  ck_assert_int_eq(bad, 0);
}

static float fsum_1_to(int n) { return (float)(n * (n + 1) / 2); }

/* ---- every collective, checked exactly ------------------------------------ */

static int rank_collectives(int rank, int size, const char *dir, void *ctx) {
  int r_rank = rank, i, got_rank = -1, got_size = -1;
  const char *backend = NULL;
  ctorch_process_group pg = NULL;
  ctorch_tensor t = NULL;
  float S = fsum_1_to(size), R = (float)(size * (size - 1) / 2), fact = 1;
  uint64_t seq0 = 0, seq1 = 0;
  (void)ctx;
  for (i = 2; i <= size; ++i) fact *= (float)i;

  RK_OK(ct_file_group(&pg, dir, rank, size, T_MS));
  RK_OK(ctorch_process_group_rank(&got_rank, pg));
  RK_OK(ctorch_process_group_size(&got_size, pg));
  RK_OK(ctorch_process_group_backend(&backend, pg));
  RK_CHECK(got_rank == rank && got_size == size, "rank/size %d/%d", got_rank, got_size);
  RK_CHECK(strcmp(backend, "gloo") == 0, "backend %s", backend);

  /* all_reduce, every op; libtorch's sequence number counts one collective each */
  {
    float v[3] = {(float)(rank + 1), (float)(2 * (rank + 1)), (float)-rank};
    RK_OK(ctorch_process_group_sequence_number(&seq0, pg));
    t = ct_fvec(v, 3);
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_SUM));
    RK_OK(ctorch_process_group_sequence_number(&seq1, pg));
    RK_CHECK(seq1 == seq0 + 1, "sequence number %llu -> %llu", (unsigned long long)seq0, (unsigned long long)seq1);
    RK_EXPECT_F(t, S, 2 * S, -R);
    ctorch_tensor_free(t);
  }
  {
    float v[1] = {(float)(rank + 1)};
    t = ct_fvec(v, 1);
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_AVG));
    RK_EXPECT_F(t, (float)(size + 1) / 2.0f);
    ctorch_tensor_free(t);
    t = ct_fvec(v, 1);
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_PRODUCT));
    RK_EXPECT_F(t, fact);
    ctorch_tensor_free(t);
  }
  {
    float v[2] = {(float)(rank + 1), (float)-rank};
    t = ct_fvec(v, 2);
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_MIN));
    RK_EXPECT_F(t, 1, (float)-(size - 1));
    ctorch_tensor_free(t);
    t = ct_fvec(v, 2);
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_MAX));
    RK_EXPECT_F(t, (float)size, 0);
    ctorch_tensor_free(t);
  }
  {
    /* int64 sum; AVG on an integer tensor is refused on every rank alike */
    int64_t v[2] = {rank, 1000000000000LL}, got[2];
    t = ct_vec(v, 2, CTORCH_INT64);
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_SUM));
    RK_OK(ctorch_tensor_copy_to(got, sizeof got, t));
    RK_CHECK(got[0] == (int64_t)R && got[1] == 1000000000000LL * size, "int64 sum %lld %lld", (long long)got[0],
            (long long)got[1]);
    RK_FAILS(CTORCH_TYPE, ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_AVG));
    RK_CHECK(strstr(ctorch_last_error(), "ctorch_dist_all_reduce") != NULL, "message: %s", ctorch_last_error());
    ctorch_tensor_free(t);
  }
  {
    /* a non-contiguous view (every other element of caller memory) */
    float mem[6] = {(float)rank, 100, (float)rank, 100, (float)rank, 100};
    int64_t sz = 3, stride = 2;
    RK_OK(ctorch_tensor_from_blob(&t, mem, &sz, &stride, 1, CTORCH_FLOAT32, ctorch_device_cpu(), NULL, NULL));
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_AVG));
    ctorch_tensor_free(t);
    for (i = 0; i < 6; ++i)
      RK_CHECK(mem[i] == (i % 2 ? 100.0f : R / (float)size), "strided all_reduce mem[%d] = %g", i, mem[i]);
  }

  /* broadcast from the last rank */
  {
    float v[2] = {(float)(rank * 10), (float)(rank * 10 + 1)};
    t = ct_fvec(v, 2);
    RK_OK(ctorch_dist_broadcast(pg, t, size - 1));
    RK_EXPECT_F(t, (float)((size - 1) * 10), (float)((size - 1) * 10 + 1));
    ctorch_tensor_free(t);
  }

  /* all_gather into caller tensors and as a new list */
  {
    float v[2] = {(float)rank, (float)(rank * rank)}, z[2] = {-1, -1};
    ctorch_tensor in = ct_fvec(v, 2), outs[8];
    ctorch_tensor_list list = NULL;
    size_t n = 0;
    for (i = 0; i < size; ++i) outs[i] = ct_fvec(z, 2);
    RK_OK(ctorch_dist_all_gather(pg, outs, (size_t)size, in));
    for (i = 0; i < size; ++i) RK_EXPECT_F(outs[i], (float)i, (float)(i * i));
    RK_OK(ctorch_dist_all_gather_list(&list, pg, in));
    RK_OK(ctorch_tensor_list_size(&n, list));
    RK_CHECK(n == (size_t)size, "list size %zu", n);
    for (i = 0; i < size; ++i) {
      ctorch_tensor e = NULL;
      RK_OK(ctorch_tensor_list_get(&e, list, (size_t)i));
      RK_EXPECT_F(e, (float)i, (float)(i * i));
      ctorch_tensor_free(e);
    }
    ctorch_tensor_list_free(list);
    for (i = 0; i < size; ++i) ctorch_tensor_free(outs[i]);
    ctorch_tensor_free(in);
  }

  /* gather to rank 1, scatter from rank 0 */
  {
    int root = 1 % size;
    float v[1] = {(float)(rank + 100)}, z[1] = {-1};
    ctorch_tensor in = ct_fvec(v, 1), outs[8];
    for (i = 0; i < size; ++i) outs[i] = ct_fvec(z, 1);
    if (rank == root) {
      RK_OK(ctorch_dist_gather(pg, outs, (size_t)size, in, root));
      for (i = 0; i < size; ++i) RK_EXPECT_F(outs[i], (float)(i + 100));
    } else {
      RK_OK(ctorch_dist_gather(pg, NULL, 0, in, root));
      RK_EXPECT_F(outs[0], -1); /* untouched */
    }
    for (i = 0; i < size; ++i) ctorch_tensor_free(outs[i]);
    ctorch_tensor_free(in);
  }
  {
    float z[2] = {-1, -1};
    ctorch_tensor out = ct_fvec(z, 2), ins[8];
    for (i = 0; i < size; ++i) {
      float v[2] = {(float)(i * 7), (float)-i};
      ins[i] = ct_fvec(v, 2);
    }
    if (rank == 0)
      RK_OK(ctorch_dist_scatter(pg, out, ins, (size_t)size, 0));
    else
      RK_OK(ctorch_dist_scatter(pg, out, NULL, 0, 0));
    RK_EXPECT_F(out, (float)(rank * 7), (float)-rank);
    for (i = 0; i < size; ++i) ctorch_tensor_free(ins[i]);
    ctorch_tensor_free(out);
  }

  /* reduce to the last rank: SUM and AVG */
  {
    float v[2] = {(float)(rank + 1), 1};
    t = ct_fvec(v, 2);
    RK_OK(ctorch_dist_reduce(pg, t, CTORCH_REDUCE_SUM, size - 1));
    if (rank == size - 1) RK_EXPECT_F(t, S, (float)size);
    ctorch_tensor_free(t);
    t = ct_fvec(v, 2);
    RK_OK(ctorch_dist_reduce(pg, t, CTORCH_REDUCE_AVG, size - 1));
    if (rank == size - 1) RK_EXPECT_F(t, (float)(size + 1) / 2.0f, 1);
    ctorch_tensor_free(t);
  }

  /* reduce_scatter: inputs[j] = 10*rank + j; rank r gets sum over ranks of (10*rank + r) */
  {
    float z[1] = {-1};
    ctorch_tensor out = ct_fvec(z, 1), ins[8];
    for (i = 0; i < size; ++i) {
      float v[1] = {(float)(10 * rank + i)};
      ins[i] = ct_fvec(v, 1);
    }
    RK_OK(ctorch_dist_reduce_scatter(pg, out, ins, (size_t)size, CTORCH_REDUCE_SUM));
    RK_EXPECT_F(out, 10 * R + (float)(size * rank));
    RK_OK(ctorch_dist_reduce_scatter(pg, out, ins, (size_t)size, CTORCH_REDUCE_MAX));
    RK_EXPECT_F(out, (float)(10 * (size - 1) + rank));
    for (i = 0; i < size; ++i) ctorch_tensor_free(ins[i]);
    ctorch_tensor_free(out);
  }

  RK_OK(ctorch_dist_barrier(pg));

  /* send/recv around the ring, two tags in opposite order */
  {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    float a[2] = {(float)rank, 5}, b[2] = {(float)rank, 6}, z[2] = {-1, -1};
    ctorch_tensor ta = ct_fvec(a, 2), tb = ct_fvec(b, 2), ra = ct_fvec(z, 2), rb = ct_fvec(z, 2);
    ctorch_work wa = NULL, wb = NULL;
    RK_OK(ctorch_dist_send_async(&wa, pg, ta, next, 5));
    RK_OK(ctorch_dist_send_async(&wb, pg, tb, next, 6));
    RK_OK(ctorch_dist_recv(pg, rb, prev, 6));
    RK_OK(ctorch_dist_recv(pg, ra, prev, 5));
    RK_OK(ctorch_work_wait(wa, 0));
    RK_OK(ctorch_work_wait(wb, 0));
    RK_EXPECT_F(ra, (float)prev, 5);
    RK_EXPECT_F(rb, (float)prev, 6);
    ctorch_work_free(wa);
    ctorch_work_free(wb);
    ctorch_tensor_free(ta);
    ctorch_tensor_free(tb);
    ctorch_tensor_free(ra);
    ctorch_tensor_free(rb);
  }

  /* async forms: several in flight (Gloo runs them on 2 worker threads, so
   * each has its own tensors), waited in reverse order */
  {
    float v[1] = {(float)(rank + 1)}, z[1] = {-1}, g[1] = {(float)(rank * 3)};
    ctorch_tensor a = ct_fvec(v, 1), b = ct_fvec(v, 1), c = ct_fvec(v, 1), ag_in = ct_fvec(v, 1);
    ctorch_tensor ga_in = ct_fvec(g, 1), red = ct_fvec(v, 1), rs_out = ct_fvec(z, 1), sc_out = ct_fvec(z, 1);
    ctorch_tensor outs[8], rs_in[8], ga_out[8];
    ctorch_work w[9];
    int done = 0;
    for (i = 0; i < size; ++i) {
      float u[1] = {(float)i};
      outs[i] = ct_fvec(z, 1);
      ga_out[i] = ct_fvec(z, 1);
      rs_in[i] = ct_fvec(u, 1);
    }
    RK_OK(ctorch_dist_all_reduce_async(&w[0], pg, a, CTORCH_REDUCE_SUM));
    RK_OK(ctorch_dist_all_reduce_async(&w[1], pg, b, CTORCH_REDUCE_AVG));
    RK_OK(ctorch_dist_broadcast_async(&w[2], pg, c, size - 1));
    RK_OK(ctorch_dist_all_gather_async(&w[3], pg, outs, (size_t)size, ag_in));
    RK_OK(ctorch_dist_reduce_scatter_async(&w[4], pg, rs_out, rs_in, (size_t)size, CTORCH_REDUCE_SUM));
    RK_OK(ctorch_dist_scatter_async(&w[5], pg, sc_out, rank == 0 ? rs_in : NULL, rank == 0 ? (size_t)size : 0, 0));
    RK_OK(ctorch_dist_gather_async(&w[6], pg, rank == 0 ? ga_out : NULL, rank == 0 ? (size_t)size : 0, ga_in, 0));
    RK_OK(ctorch_dist_reduce_async(&w[7], pg, red, CTORCH_REDUCE_MAX, 0));
    RK_OK(ctorch_dist_barrier_async(&w[8], pg));
    for (i = 8; i >= 0; --i) {
      RK_OK(ctorch_work_wait(w[i], 0));
      RK_OK(ctorch_work_is_completed(&done, w[i]));
      RK_CHECK(done == 1, "work %d not completed after wait", i);
      RK_OK(ctorch_work_wait(w[i], 0)); /* idempotent */
    }
    RK_EXPECT_F(a, S);
    RK_EXPECT_F(b, (float)(size + 1) / 2.0f);
    RK_EXPECT_F(c, (float)size);
    for (i = 0; i < size; ++i) RK_EXPECT_F(outs[i], (float)(i + 1));
    RK_EXPECT_F(rs_out, (float)(size * rank));
    RK_EXPECT_F(sc_out, (float)rank);
    if (rank == 0) {
      for (i = 0; i < size; ++i) RK_EXPECT_F(ga_out[i], (float)(3 * i));
      RK_EXPECT_F(red, (float)size);
    }
    for (i = 0; i <= 8; ++i) ctorch_work_free(w[i]);
    for (i = 0; i < size; ++i) {
      ctorch_tensor_free(outs[i]);
      ctorch_tensor_free(ga_out[i]);
      ctorch_tensor_free(rs_in[i]);
    }
    ctorch_tensor_free(a);
    ctorch_tensor_free(b);
    ctorch_tensor_free(c);
    ctorch_tensor_free(ag_in);
    ctorch_tensor_free(ga_in);
    ctorch_tensor_free(rs_out);
    ctorch_tensor_free(sc_out);
    ctorch_tensor_free(red);
  }

  RK_OK(ctorch_process_group_destroy(pg));
  {
    float v[1] = {1};
    t = ct_fvec(v, 1);
    RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_SUM));
    RK_CHECK(strstr(ctorch_last_error(), "destroyed") != NULL, "message: %s", ctorch_last_error());
    ctorch_tensor_free(t);
  }
  ctorch_process_group_free(pg);
  return 0;
}

START_TEST(collectives_2) { expect_all_ok(2, rank_collectives, NULL); }
END_TEST
START_TEST(collectives_4) { expect_all_ok(4, rank_collectives, NULL); }
END_TEST

/* ---- bucketed averaging and parameter broadcast --------------------------- */

/* The documented bucket rule, recomputed here: consecutive, same dtype, <= cap
 * bytes, a larger tensor alone. */
static int expected_buckets(const int64_t *numel, const ctorch_dtype *dt, int n, size_t cap) {
  int i, buckets = 0;
  size_t bytes = 0;
  for (i = 0; i < n; ++i) {
    size_t b = (size_t)numel[i] * (dt[i] == CTORCH_FLOAT64 ? 8 : 4);
    if (i == 0 || dt[i] != dt[i - 1] || bytes + b > cap) {
      ++buckets;
      bytes = 0;
    }
    bytes += b;
  }
  return buckets;
}

#define NT 6
static int rank_average(int rank, int size, const char *dir, void *ctx) {
  int r_rank = rank, i, k, c;
  static const int64_t numel[NT] = {3, 5, 2, 100, 4, 1};
  static const ctorch_dtype dt[NT] = {CTORCH_FLOAT32, CTORCH_FLOAT32, CTORCH_FLOAT64, CTORCH_FLOAT32,
                                      CTORCH_FLOAT32, CTORCH_FLOAT32};
  static const size_t caps[4] = {0, 40, 16, 1};
  ctorch_process_group pg = NULL;
  (void)ctx;
  RK_OK(ct_file_group(&pg, dir, rank, size, T_MS));
  for (c = 0; c < 4; ++c) {
    ctorch_tensor ts[NT];
    uint64_t s0 = 0, s1 = 0;
    int want = expected_buckets(numel, dt, NT, caps[c] ? caps[c] : (size_t)25 << 20);
    for (i = 0; i < NT; ++i) {
      double d[100];
      float f[100];
      for (k = 0; k < numel[i]; ++k) {
        d[k] = (double)((rank + 1) * (k + 1) * (i + 1));
        f[k] = (float)d[k];
      }
      ts[i] = dt[i] == CTORCH_FLOAT64 ? ct_vec(d, numel[i], dt[i]) : ct_vec(f, numel[i], dt[i]);
      RK_CHECK(ts[i] != NULL, "tensor %d", i);
    }
    RK_OK(ctorch_process_group_sequence_number(&s0, pg));
    RK_OK(ctorch_dist_average_tensors(pg, ts, NT, caps[c]));
    RK_OK(ctorch_process_group_sequence_number(&s1, pg));
    RK_CHECK(s1 - s0 == (uint64_t)want, "cap %zu: %llu collectives, expected %d buckets", caps[c],
            (unsigned long long)(s1 - s0), want);
    for (i = 0; i < NT; ++i) {
      double d[100];
      float f[100];
      if (dt[i] == CTORCH_FLOAT64)
        RK_OK(ctorch_tensor_copy_to(d, (size_t)numel[i] * 8, ts[i]));
      else
        RK_OK(ctorch_tensor_copy_to(f, (size_t)numel[i] * 4, ts[i]));
      for (k = 0; k < numel[i]; ++k) {
        double got = dt[i] == CTORCH_FLOAT64 ? d[k] : (double)f[k];
        double want_v = (double)((k + 1) * (i + 1)) * (size + 1) / 2.0;
        RK_CHECK(got == want_v, "cap %zu tensor %d[%d] = %g, want %g", caps[c], i, k, got, want_v);
      }
      ctorch_tensor_free(ts[i]);
    }
  }
  /* integer tensors cannot be averaged: refused before any communication */
  {
    int64_t v[1] = {rank};
    ctorch_tensor t = ct_vec(v, 1, CTORCH_INT64);
    RK_FAILS(CTORCH_TYPE, ctorch_dist_average_tensors(pg, &t, 1, 0));
    ctorch_tensor_free(t);
  }
  /* parameters: every rank ends with root's values */
  {
    ctorch_tensor ps[3];
    float a[4] = {(float)rank, 1, 2, 3}, b[2] = {(float)(rank * 2), 9};
    double d[1] = {rank + 0.5};
    double dg = 0;
    ps[0] = ct_fvec(a, 4);
    ps[1] = ct_vec(d, 1, CTORCH_FLOAT64);
    ps[2] = ct_fvec(b, 2);
    RK_OK(ctorch_dist_broadcast_parameters(pg, ps, 3, size - 1));
    RK_EXPECT_F(ps[0], (float)(size - 1), 1, 2, 3);
    RK_OK(ctorch_tensor_item_double(&dg, ps[1]));
    RK_CHECK(dg == size - 1 + 0.5, "double param %g", dg);
    RK_EXPECT_F(ps[2], (float)(2 * (size - 1)), 9);
    for (i = 0; i < 3; ++i) ctorch_tensor_free(ps[i]);
  }
  ctorch_process_group_free(pg);
  return 0;
}

START_TEST(average_2) { expect_all_ok(2, rank_average, NULL); }
END_TEST
START_TEST(average_4) { expect_all_ok(4, rank_average, NULL); }
END_TEST

/* ---- TCPStore rendezvous: rank 0 lets the OS pick the port ---------------- */

static int rank_tcp(int rank, int size, const char *dir, void *ctx) {
  int r_rank = rank, port = -1, got_port = -1;
  int *fds = (int *)ctx; /* a pipe: rank 0 writes the port once per other rank */
  ctorch_store store = NULL;
  ctorch_process_group pg = NULL;
  char buf[16];
  size_t len = 0;
  int64_t added = 0;
  (void)dir;
  unsetenv("GLOO_SOCKET_IFNAME"); /* the loopback TCPStore alone must keep Gloo on 127.0.0.1 */
  if (rank == 0) {
    int i;
    RK_OK(ctorch_store_tcp_new(&store, "127.0.0.1", 0, size, 1, T_MS));
    RK_OK(ctorch_store_port(&port, store));
    RK_CHECK(port > 0, "port %d", port);
    for (i = 1; i < size; ++i) RK_CHECK(write(fds[1], &port, sizeof port) == sizeof port, "write");
  } else {
    struct pollfd p = {fds[0], POLLIN, 0};
    RK_CHECK(poll(&p, 1, 30000) == 1, "no port from rank 0");
    RK_CHECK(read(fds[0], &port, sizeof port) == sizeof port, "read");
    RK_OK(ctorch_store_tcp_new(&store, "127.0.0.1", port, size, 0, T_MS));
  }
  RK_OK(ctorch_store_port(&got_port, store));
  RK_CHECK(got_port == port, "store port %d vs %d", got_port, port);
  /* the store itself */
  if (rank == 0) RK_OK(ctorch_store_set(store, "hello", "world", 5));
  RK_OK(ctorch_store_get(&len, buf, sizeof buf, store, "hello"));
  RK_CHECK(len == 5 && memcmp(buf, "world", 5) == 0, "get hello: %zu", len);
  RK_OK(ctorch_store_add(&added, store, "counter", rank + 1));
  {
    const char *k = "counter";
    RK_OK(ctorch_store_wait(store, &k, 1, 5000));
  }
  RK_OK(ctorch_process_group_new_gloo(&pg, store, rank, size, T_MS));
  ctorch_store_free(store); /* the group keeps its own reference */
  {
    float v[1] = {(float)(rank + 1)};
    ctorch_tensor t = ct_fvec(v, 1);
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_SUM));
    RK_EXPECT_F(t, fsum_1_to(size));
    ctorch_tensor_free(t);
  }
  RK_OK(ctorch_dist_barrier(pg));
  ctorch_process_group_free(pg);
  return 0;
}

static void run_tcp(int size) {
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  expect_all_ok(size, rank_tcp, fds);
  close(fds[0]);
  close(fds[1]);
}
START_TEST(tcp_store_2) { run_tcp(2); }
END_TEST
START_TEST(tcp_store_4) { run_tcp(4); }
END_TEST

/* ---- torchrun-style environment ------------------------------------------- */

static int rank_env(int rank, int size, const char *dir, void *ctx) {
  int r_rank = rank, local = -2, port = *(int *)ctx;
  char b[32];
  ctorch_process_group pg = NULL;
  (void)dir;
  unsetenv("GLOO_SOCKET_IFNAME");
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  snprintf(b, sizeof b, "%d", port);
  setenv("MASTER_PORT", b, 1);
  snprintf(b, sizeof b, "%d", rank);
  setenv("RANK", b, 1);
  setenv("LOCAL_RANK", b, 1);
  snprintf(b, sizeof b, "%d", size);
  setenv("WORLD_SIZE", b, 1);
  RK_OK(ctorch_dist_init_from_env(&pg, &local, "gloo", T_MS));
  RK_CHECK(local == rank, "local rank %d", local);
  {
    float v[2] = {(float)(rank + 1), 1};
    ctorch_tensor t = ct_fvec(v, 2);
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_SUM));
    RK_EXPECT_F(t, fsum_1_to(size), (float)size);
    ctorch_tensor_free(t);
  }
  ctorch_process_group_free(pg);
  return 0;
}

START_TEST(init_from_env_2) {
  int port = ct_free_port();
  ck_assert_int_gt(port, 0);
  expect_all_ok(2, rank_env, &port);
}
END_TEST

/* ---- failures are statuses, not hangs -------------------------------------- */

/* Rank 1 joins late: a short wait times out, a later wait succeeds. Then rank
 * 1 stays away for good: the group's own timeout ends rank 0's collective. */
static int rank_late(int rank, int size, const char *dir, void *ctx) {
  int r_rank = rank;
  ctorch_process_group pg = NULL;
  ctorch_store store = NULL;
  char path[256];
  float v[1] = {(float)(rank + 1)};
  ctorch_tensor t = ct_fvec(v, 1);
  const char *go = "go", *done = "done";
  (void)ctx;
  setenv("GLOO_SOCKET_IFNAME", "lo", 1);
  snprintf(path, sizeof path, "%s/store", dir);
  RK_OK(ctorch_store_file_new(&store, path, size, T_MS));
  RK_OK(ctorch_process_group_new_gloo(&pg, store, rank, size, 2000));
  if (rank == 0) {
    ctorch_work w = NULL;
    int completed = -1;
    double t0;
    RK_OK(ctorch_dist_all_reduce_async(&w, pg, t, CTORCH_REDUCE_AVG));
    t0 = ct_now();
    RK_FAILS(CTORCH_RUNTIME, ctorch_work_wait(w, 300));
    RK_CHECK(ct_now() - t0 < 1.5, "wait(300 ms) took %.2f s", ct_now() - t0);
    RK_CHECK(strstr(ctorch_last_error(), "timed out") != NULL, "message: %s", ctorch_last_error());
    RK_OK(ctorch_work_is_completed(&completed, w));
    RK_CHECK(completed == 0, "completed %d before the peer joined", completed);
    RK_OK(ctorch_store_set(store, "go", "1", 1));
    RK_OK(ctorch_work_wait(w, 10000));
    RK_EXPECT_F(t, 1.5f);
    ctorch_work_free(w);
    /* rank 1 never joins this one */
    t0 = ct_now();
    RK_FAILS(CTORCH_RUNTIME, ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_SUM));
    RK_CHECK(ct_now() - t0 < 10, "timed-out all_reduce took %.2f s (group timeout 2 s)", ct_now() - t0);
    RK_CHECK(strstr(ctorch_last_error(), "ctorch_dist_all_reduce") != NULL, "message: %s", ctorch_last_error());
    fprintf(stderr, "rank 0 (expected failure): %s\n", ctorch_last_error());
    RK_OK(ctorch_store_set(store, "done", "1", 1));
  } else {
    RK_OK(ctorch_store_wait(store, &go, 1, 20000));
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_AVG));
    RK_EXPECT_F(t, 1.5f);
    RK_OK(ctorch_store_wait(store, &done, 1, 30000));
  }
  ctorch_tensor_free(t);
  ctorch_process_group_free(pg);
  ctorch_store_free(store);
  return 0;
}

START_TEST(timeouts_2) { expect_all_ok(2, rank_late, NULL); }
END_TEST

/* The last rank dies (SIGKILL) after the group formed; the others' next
 * collective fails with a message well within the group's timeout. */
static int rank_dies(int rank, int size, const char *dir, void *ctx) {
  int r_rank = rank;
  ctorch_process_group pg = NULL;
  float v[1] = {1};
  ctorch_tensor t = ct_fvec(v, 1);
  double t0;
  (void)ctx;
  RK_OK(ct_file_group(&pg, dir, rank, size, 30000));
  RK_OK(ctorch_dist_barrier(pg));
  if (rank == size - 1) raise(SIGKILL);
  usleep(200000);
  t0 = ct_now();
  RK_FAILS(CTORCH_RUNTIME, ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_SUM));
  RK_CHECK(ct_now() - t0 < 30 + 5, "failure took %.2f s", ct_now() - t0);
  RK_CHECK(strstr(ctorch_last_error(), "ctorch_dist_all_reduce: all_reduce") != NULL, "message: %s",
          ctorch_last_error());
  fprintf(stderr, "rank %d (expected failure after %.2f s): %s\n", rank, ct_now() - t0, ctorch_last_error());
  ctorch_tensor_free(t);
  ctorch_process_group_free(pg);
  return 0;
}

static void run_dies(int size) {
  int status[8], i;
  ct_run_ranks(size, rank_dies, NULL, WATCHDOG_S, status);
  ck_assert_msg(WIFSIGNALED(status[size - 1]) && WTERMSIG(status[size - 1]) == SIGKILL, "last rank: 0x%x",
                status[size - 1]);
  for (i = 0; i < size - 1; ++i)
    ck_assert_msg(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0, "rank %d: 0x%x", i, status[i]);
}
START_TEST(peer_dies_2) { run_dies(2); }
END_TEST
START_TEST(peer_dies_4) { run_dies(4); }
END_TEST

/* A group whose other ranks never show up: creation fails within its timeout,
 * for a FileStore rendezvous and for a TCPStore client with no master. */
static int rank_alone(int rank, int size, const char *dir, void *ctx) {
  int r_rank = rank, port = *(int *)ctx;
  ctorch_process_group pg = NULL;
  ctorch_store store = NULL;
  double t0 = ct_now();
  (void)size;
  RK_FAILS(CTORCH_RUNTIME, ct_file_group(&pg, dir, 0, 2, 1500));
  RK_CHECK(ct_now() - t0 < 15, "file rendezvous failed only after %.2f s (timeout 1.5 s)", ct_now() - t0);
  RK_CHECK(pg == NULL, "out not cleared");
  fprintf(stderr, "expected failure after %.2f s: %s\n", ct_now() - t0, ctorch_last_error());
  t0 = ct_now();
  RK_FAILS(CTORCH_RUNTIME, ctorch_store_tcp_new(&store, "127.0.0.1", port, 2, 0, 1500));
  RK_CHECK(ct_now() - t0 < 15, "TCPStore connect failed only after %.2f s (timeout 1.5 s)", ct_now() - t0);
  fprintf(stderr, "expected failure after %.2f s: %s\n", ct_now() - t0, ctorch_last_error());
  return 0;
}

START_TEST(rendezvous_timeout) {
  int port = ct_free_port();
  ck_assert_int_gt(port, 0);
  expect_all_ok(1, rank_alone, &port);
}
END_TEST

/* ---- ranks of another libtorch version -------------------------------------- */

/* Rank 1 plays a rank of another version: it writes, on the group's
 * FileStore, what such a rank writes first (ctx: the key and its value).
 * Rank 0's group creation must fail at once with CTORCH_RUNTIME naming both
 * versions, not wait in Gloo's rendezvous. (tests/dist/mismatch.py does the
 * same with real ranks of the other generation where it finds them.) */
struct foreign {
  const char *key, *value, *want; /* want: the other version, as rank 0 must name it */
};

static int rank_foreign(int rank, int size, const char *dir, void *ctx) {
  const struct foreign *f = (const struct foreign *)ctx;
  int r_rank = rank;
  char path[256];
  ctorch_store store = NULL;
  ctorch_process_group pg = NULL;
  const char *done = "test_done";
  setenv("GLOO_SOCKET_IFNAME", "lo", 1);
  snprintf(path, sizeof path, "%s/store", dir);
  RK_OK(ctorch_store_file_new(&store, path, size, T_MS));
  if (rank == 1) {
    RK_OK(ctorch_store_set(store, f->key, f->value, strlen(f->value)));
    RK_OK(ctorch_store_wait(store, &done, 1, T_MS));
  } else {
    RK_FAILS(CTORCH_RUNTIME, ctorch_process_group_new_gloo(&pg, store, 0, size, T_MS));
    RK_CHECK(pg == NULL, "out not cleared");
    RK_CHECK(strstr(ctorch_last_error(), f->want) != NULL, "message does not name %s: %s", f->want,
             ctorch_last_error());
    RK_CHECK(strstr(ctorch_last_error(), CTORCH_TORCH_VERSION_STRING) != NULL, "message does not name %s: %s",
             CTORCH_TORCH_VERSION_STRING, ctorch_last_error());
    RK_CHECK(strstr(ctorch_last_error(), "timed out") == NULL, "refused by the timeout, not the check: %s",
             ctorch_last_error());
    fprintf(stderr, "rank 0 (expected failure): %s\n", ctorch_last_error());
    RK_OK(ctorch_store_set(store, done, "1", 1));
  }
  ctorch_store_free(store);
  return 0;
}

/* Another ctorch, built against another libtorch: its version key. */
START_TEST(version_key_mismatch_2) {
  struct foreign f = {"ctorch_libtorch_version/0/1", "0.9.9", "0.9.9"};
  expect_all_ok(2, rank_foreign, &f);
}
END_TEST

/* A torch.distributed rank of the other generation: its Gloo host-name key,
 * where that generation's init_process_group puts it (group 0, rank 1). */
START_TEST(gloo_layout_mismatch_2) {
#if CTORCH_TORCH_VERSION_MAJOR >= 2
  struct foreign f = {"0/0/rank_1", "localhost", "PyTorch 1.x"};
#else
  struct foreign f = {"0//cpu//0/1", "address", "PyTorch 2.x"};
#endif
  expect_all_ok(2, rank_foreign, &f);
}
END_TEST

/* ---- argument checking, one process ---------------------------------------- */

static int rank_args(int rank, int size, const char *dir, void *ctx) {
  int r_rank = rank, avail = -1, port = 0;
  ctorch_process_group pg = NULL;
  ctorch_store store = NULL, pre = NULL;
  ctorch_work w = (ctorch_work)1;
  float v[1] = {1};
  ctorch_tensor t = ct_fvec(v, 1), outs[2];
  char path[256], buf[8];
  size_t len = 0;
  int64_t x = 0;
  const char *missing = "missing";
  (void)ctx;
  setenv("GLOO_SOCKET_IFNAME", "lo", 1);
  RK_OK(ctorch_dist_nccl_available(&avail));
  {
    int gpus = 0; /* NCCL needs a CUDA device (and a libtorch with NCCL) */
    RK_OK(ctorch_cuda_device_count(&gpus));
    RK_CHECK(avail == 0 || gpus > 0, "nccl available %d without a CUDA device", avail);
  }
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_nccl_available(NULL));

  /* stores */
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_store_tcp_new(&store, NULL, 1234, 1, 1, 1000));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_store_tcp_new(&store, "127.0.0.1", 0, 1, 0, 1000));
  RK_CHECK(strstr(ctorch_last_error(), "argument 'port'") != NULL, "%s", ctorch_last_error());
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_store_tcp_new(&store, "127.0.0.1", 70000, 1, 1, 1000));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_store_file_new(&store, "", 1, 1000));
  snprintf(path, sizeof path, "%s/store", dir);
  RK_OK(ctorch_store_file_new(&store, path, size, 20000));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_store_port(&port, store));
  RK_OK(ctorch_store_prefix_new(&pre, store, "p"));
  RK_OK(ctorch_store_set(pre, "k", "abc", 3));
  RK_OK(ctorch_store_get(&len, buf, 2, store, "p/k")); /* the prefix as Python's PrefixStore */
  RK_CHECK(len == 3 && memcmp(buf, "ab", 2) == 0, "prefixed get %zu", len);
  RK_OK(ctorch_store_add(&x, store, "n", 5));
  RK_OK(ctorch_store_add(&x, store, "n", -2));
  RK_CHECK(x == 3, "add %lld", (long long)x);
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_store_set(store, NULL, "a", 1));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_store_set(NULL, "a", "a", 1));
  RK_FAILS(CTORCH_RUNTIME, ctorch_store_wait(store, &missing, 1, 200));
  ctorch_store_free(pre);

  /* groups */
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_process_group_new_gloo(&pg, NULL, 0, 1, 1000));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_process_group_new_gloo(&pg, store, 1, 1, 1000));
  RK_CHECK(strstr(ctorch_last_error(), "argument 'rank'") != NULL, "%s", ctorch_last_error());
  RK_CHECK(pg == NULL, "out not cleared");
  RK_OK(ctorch_process_group_new_gloo(&pg, store, 0, 1, 20000));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_all_reduce(NULL, t, CTORCH_REDUCE_SUM));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_all_reduce(pg, NULL, CTORCH_REDUCE_SUM));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_all_reduce(pg, t, (ctorch_reduce_op)0));
  RK_CHECK(strstr(ctorch_last_error(), "argument 'op'") != NULL, "%s", ctorch_last_error());
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_all_reduce_async(&w, pg, t, (ctorch_reduce_op)9));
  RK_CHECK(w == NULL, "work not cleared on failure");
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_broadcast(pg, t, 1));
  RK_CHECK(strstr(ctorch_last_error(), "argument 'root'") != NULL, "%s", ctorch_last_error());
  outs[0] = t;
  outs[1] = t;
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_all_gather(pg, outs, 2, t));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_all_gather(pg, NULL, 1, t));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_send(pg, t, 0, 0));
  RK_CHECK(strstr(ctorch_last_error(), "own rank") != NULL, "%s", ctorch_last_error());
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_recv(pg, t, 1, 0));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_work_wait(NULL, 0));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_average_gradients(pg, NULL, 1, 0));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_broadcast_parameters(pg, &t, 1, 3));
  /* a one-rank group still runs real collectives */
  RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_AVG));
  RK_EXPECT_F(t, 1);
  outs[0] = t;
  RK_OK(ctorch_dist_all_gather(pg, outs, 1, t));
  ctorch_process_group_free(pg);
  ctorch_store_free(store);

  /* environment */
  unsetenv("MASTER_ADDR");
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_init_from_env(&pg, NULL, "gloo", 1000));
  RK_CHECK(strstr(ctorch_last_error(), "MASTER_ADDR") != NULL, "%s", ctorch_last_error());
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "notaport", 1);
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_init_from_env(&pg, NULL, NULL, 1000));
  RK_CHECK(strstr(ctorch_last_error(), "MASTER_PORT") != NULL, "%s", ctorch_last_error());
  /* nccl: refused where unavailable; else it fails on the bad port like gloo */
  RK_FAILS(avail ? CTORCH_INVALID_ARGUMENT : CTORCH_NOT_IMPLEMENTED, ctorch_dist_init_from_env(&pg, NULL, "nccl", 1000));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_dist_init_from_env(&pg, NULL, "mpi", 1000));

  ctorch_process_group_free(NULL);
  ctorch_store_free(NULL);
  ctorch_work_free(NULL);
  ctorch_tensor_free(t);
  return 0;
}

START_TEST(arguments) { expect_all_ok(1, rank_args, NULL); }
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("dist");
  TCase *tc = tcase_create("dist");
  tcase_set_timeout(tc, 200);
  tcase_add_test(tc, arguments);
  tcase_add_test(tc, collectives_2);
  tcase_add_test(tc, collectives_4);
  tcase_add_test(tc, average_2);
  tcase_add_test(tc, average_4);
  tcase_add_test(tc, tcp_store_2);
  tcase_add_test(tc, tcp_store_4);
  tcase_add_test(tc, init_from_env_2);
  tcase_add_test(tc, timeouts_2);
  tcase_add_test(tc, peer_dies_2);
  tcase_add_test(tc, peer_dies_4);
  tcase_add_test(tc, rendezvous_timeout);
  tcase_add_test(tc, version_key_mismatch_2);
  tcase_add_test(tc, gloo_layout_mismatch_2);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
