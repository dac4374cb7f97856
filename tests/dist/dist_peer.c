/* One rank of a mixed C/Python group (tests/dist/interop.py) or of an
 * all-C group started by scripts/ddp. Issues the same collectives, in the
 * same order, as interop.py's Python worker and checks every result.
 *
 *   dist_peer env                              rendezvous from MASTER_ADDR/PORT, RANK, WORLD_SIZE
 *   dist_peer store HOST PORT RANK SIZE MASTER  explicit TCPStore + ctorch_process_group_new_gloo
 *   dist_peer file PATH RANK SIZE [PREFIX]      FileStore (under PREFIX) + ctorch_process_group_new_gloo
 *   dist_peer version                          prints the libtorch version ctorch was built against
 *   dist_peer fill PATH full|room              a FileStore at PATH (a small file system) outlives the
 *                                              file system filling up: freeing it must not abort; with
 *                                              room left in the file's last block it still records its exit
 * The group timeout is CTORCH_DIST_TIMEOUT_MS (default 60000). A failing
 * call prints "rank R: file:line: call -> STATUS: message" on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ranks.h"

static int sequence(ctorch_process_group pg, int rank, int size) {
  int r_rank = rank, i;
  float S = (float)(size * (size + 1) / 2);
  ctorch_tensor t;

  { /* all_reduce SUM */
    float v[2] = {(float)(rank + 1), 10};
    t = ct_fvec(v, 2);
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_SUM));
    RK_EXPECT_F(t, S, (float)(10 * size));
    ctorch_tensor_free(t);
  }
  { /* all_reduce MAX on int64 */
    int64_t v[1] = {rank}, got = -1;
    t = ct_vec(v, 1, CTORCH_INT64);
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_MAX));
    RK_OK(ctorch_tensor_copy_to(&got, sizeof got, t));
    RK_CHECK(got == size - 1, "int64 max %lld", (long long)got);
    ctorch_tensor_free(t);
  }
  { /* AVG: ctorch sends a SUM, Python peers do all_reduce(SUM) then divide */
    float v[1] = {(float)(rank + 1)};
    t = ct_fvec(v, 1);
    RK_OK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_AVG));
    RK_EXPECT_F(t, S / (float)size);
    ctorch_tensor_free(t);
  }
  { /* broadcast from 0 (float32) and from the last rank (float64) */
    float v[2] = {rank == 0 ? 42.0f : -1.0f, (float)(7 * rank)};
    double d = rank + 0.25;
    t = ct_fvec(v, 2);
    RK_OK(ctorch_dist_broadcast(pg, t, 0));
    RK_EXPECT_F(t, 42, 0);
    ctorch_tensor_free(t);
    t = ct_vec(&d, 1, CTORCH_FLOAT64);
    RK_OK(ctorch_dist_broadcast(pg, t, size - 1));
    RK_OK(ctorch_tensor_item_double(&d, t));
    RK_CHECK(d == size - 1 + 0.25, "float64 broadcast %g", d);
    ctorch_tensor_free(t);
  }
  { /* all_gather */
    float v[1] = {(float)(2 * rank)}, z[1] = {-1};
    ctorch_tensor in = ct_fvec(v, 1), outs[16];
    for (i = 0; i < size; ++i) outs[i] = ct_fvec(z, 1);
    RK_OK(ctorch_dist_all_gather(pg, outs, (size_t)size, in));
    for (i = 0; i < size; ++i) RK_EXPECT_F(outs[i], (float)(2 * i));
    for (i = 0; i < size; ++i) ctorch_tensor_free(outs[i]);
    ctorch_tensor_free(in);
  }
  { /* gather to 0, scatter from 0 */
    float v[1] = {(float)(rank + 5)}, z[1] = {-1};
    ctorch_tensor in = ct_fvec(v, 1), outs[16], out = ct_fvec(z, 1);
    for (i = 0; i < size; ++i) outs[i] = ct_fvec(z, 1);
    RK_OK(ctorch_dist_gather(pg, rank == 0 ? outs : NULL, rank == 0 ? (size_t)size : 0, in, 0));
    if (rank == 0)
      for (i = 0; i < size; ++i) RK_EXPECT_F(outs[i], (float)(i + 5));
    for (i = 0; i < size; ++i) {
      float u[1] = {(float)(100 + i)};
      ctorch_tensor_free(outs[i]);
      outs[i] = ct_fvec(u, 1);
    }
    RK_OK(ctorch_dist_scatter(pg, out, rank == 0 ? outs : NULL, rank == 0 ? (size_t)size : 0, 0));
    RK_EXPECT_F(out, (float)(100 + rank));
    for (i = 0; i < size; ++i) ctorch_tensor_free(outs[i]);
    ctorch_tensor_free(in);
    ctorch_tensor_free(out);
  }
  { /* point to point: 0 -> 1 (tag 3), then 1 -> 0 (tag 4) */
    float a[2] = {123, (float)rank}, z[2] = {-1, -1};
    t = ct_fvec(rank == 0 ? a : z, 2);
    if (rank == 0) {
      RK_OK(ctorch_dist_send(pg, t, 1, 3));
      RK_OK(ctorch_dist_recv(pg, t, 1, 4));
      RK_EXPECT_F(t, 456, 1);
    } else if (rank == 1) {
      float b[2] = {456, 1};
      ctorch_tensor u = ct_fvec(b, 2);
      RK_OK(ctorch_dist_recv(pg, t, 0, 3));
      RK_EXPECT_F(t, 123, 0);
      RK_OK(ctorch_dist_send(pg, u, 0, 4));
      ctorch_tensor_free(u);
    }
    ctorch_tensor_free(t);
  }
  RK_OK(ctorch_dist_barrier(pg));
  return 0;
}

/* The group timeout: CTORCH_DIST_TIMEOUT_MS, else 60 s. */
static int64_t timeout_ms(void) {
  const char *v = getenv("CTORCH_DIST_TIMEOUT_MS");
  return v && *v ? atoll(v) : 60000;
}

/* Fills the file system under `path` up (a file beside it, until ENOSPC). */
static int fill_up(const char *path) {
  static char block[4096];
  char name[4096];
  FILE *f;
  snprintf(name, sizeof name, "%s.fill", path);
  if (!(f = fopen(name, "wb"))) return 1;
  while (fwrite(block, 1, sizeof block, f) == sizeof block) {
  }
  fclose(f);
  return 0;
}

static long long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* c10d's ~FileStore appends this rank's exit to the file and throws from a
 * noexcept destructor when the write fails: a full disk aborted the process
 * (seen in CI). ctorch must leave the store (and its file) instead.
 * "full": the file is made to end on a 4 KiB boundary, so that the append
 * needs a new block; "room": half-way into one, so that the append fits
 * and must happen. Then the file system is filled up. The last reference
 * drops in ctorch_process_group_free here, the store and a prefix store on
 * it freed first. */
static int fill(const char *path, int room) {
  static char pad[8192];
  int r_rank = 0;
  long long before, after, record, want;
  ctorch_store file = NULL, prefix = NULL;
  ctorch_process_group pg = NULL;
  FILE *f;
  RK_OK(ctorch_store_file_new(&file, path, 2, timeout_ms()));  /* 2: the file is not this rank's to remove */
  RK_OK(ctorch_store_prefix_new(&prefix, file, "default_pg"));
  RK_OK(ctorch_process_group_new_gloo(&pg, prefix, 0, 1, timeout_ms()));
  before = file_size(path);
  RK_OK(ctorch_store_set(file, "k", "v", 1));
  after = file_size(path);
  record = after - before - 1; /* a record's bytes besides its value (same key length below) */
  want = ((room ? 2048 : 0) - after % 4096 - record) % 4096;
  if (want < 0) want += 4096;
  RK_OK(ctorch_store_set(file, "p", pad, (size_t)want));
  after = file_size(path);
  RK_CHECK(after % 4096 == (room ? 2048 : 0), "the store's file is %lld bytes", after);
  RK_CHECK(fill_up(path) == 0, "cannot write beside %s", path);
  ctorch_store_free(file);
  ctorch_store_free(prefix);
  ctorch_process_group_free(pg);
  RK_CHECK((f = fopen(path, "rb")) != NULL, "the store's file %s is gone", path);
  fclose(f);
  if (room) {
    RK_CHECK(file_size(path) > after, "the exit was not recorded (%lld bytes, %lld before)", file_size(path), after);
    printf("the FileStore recorded its exit on a full file system (room in its last block)\n");
  } else {
    RK_CHECK(file_size(path) == after, "the file changed (%lld bytes, %lld before)", file_size(path), after);
    printf("the FileStore outlived a full file system; its file is left\n");
  }
  return 0;
}

int main(int argc, char **argv) {
  int r_rank = -1, rank = -1, size = -1, rc;
  ctorch_process_group pg = NULL;
  if (argc == 2 && strcmp(argv[1], "version") == 0) {
    const char *v = NULL;
    RK_OK(ctorch_torch_version(&v));
    printf("%s\n", v);
    return 0;
  } else if (argc == 4 && strcmp(argv[1], "fill") == 0) {
    return fill(argv[2], strcmp(argv[3], "room") == 0);
  } else if (argc >= 2 && strcmp(argv[1], "env") == 0) {
    RK_OK(ctorch_dist_init_from_env(&pg, NULL, "gloo", timeout_ms()));
  } else if (argc == 7 && strcmp(argv[1], "store") == 0) {
    ctorch_store store = NULL;
    r_rank = atoi(argv[4]);
    RK_OK(ctorch_store_tcp_new(&store, argv[2], atoi(argv[3]), atoi(argv[5]), atoi(argv[6]), timeout_ms()));
    RK_OK(ctorch_process_group_new_gloo(&pg, store, atoi(argv[4]), atoi(argv[5]), timeout_ms()));
    ctorch_store_free(store);
  } else if ((argc == 5 || argc == 6) && strcmp(argv[1], "file") == 0) {
    ctorch_store file = NULL, store = NULL;
    r_rank = atoi(argv[3]);
    RK_OK(ctorch_store_file_new(&file, argv[2], atoi(argv[4]), timeout_ms()));
    if (argc == 6) /* Python's init_method="file://" prefixes "default_pg" */
      RK_OK(ctorch_store_prefix_new(&store, file, argv[5]));
    RK_OK(ctorch_process_group_new_gloo(&pg, store ? store : file, atoi(argv[3]), atoi(argv[4]), timeout_ms()));
    ctorch_store_free(store);
    ctorch_store_free(file);
  } else {
    fprintf(stderr, "usage: %s env | store HOST PORT RANK SIZE IS_MASTER | file PATH RANK SIZE [PREFIX] | fill PATH full|room | version\n", argv[0]);
    return 2;
  }
  RK_OK(ctorch_process_group_rank(&rank, pg));
  RK_OK(ctorch_process_group_size(&size, pg));
  r_rank = rank;
  rc = sequence(pg, rank, size);
  ctorch_process_group_free(pg);
  if (rc == 0) printf("C rank %d of %d: all collectives matched\n", rank, size);
  return rc;
}
