/* ctorch_dist_average_gradients on real autograd gradients, 2 and 4
 * processes on 127.0.0.1: after backward every rank holds the average; and
 * ctorch_ddp's refusals and its average during backward. */
#define _GNU_SOURCE 1

#include "check_main.h"
#include "dist/ranks.h"

static void expect_all_ok(int size, ct_rank_fn fn, void *ctx) {
  int status[64], i;
  int bad = ct_run_ranks(size, fn, ctx, 120, status);
  for (i = 0; i < size; ++i)
    ck_assert_msg(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0,
                  "rank %d of %d failed (wait status 0x%x; its message is on stderr)", i, size, status[i]);
  ck_assert_int_eq(bad, 0);
}

static int rank_grads(int rank, int size, const char *dir, void *ctx) {
  int r_rank = rank;
  ctorch_process_group pg = NULL;
  ctorch_tensor p[3], loss = NULL, t = NULL, g = NULL;
  float a[3] = {1, 2, 3}, b[4] = {1, 1, 1, 1}, c[1] = {5};
  float half = (float)(size + 1) / 2.0f; /* average of rank + 1 */
  uint64_t s0 = 0, s1 = 0;
  int64_t bsz[2] = {2, 2};
  (void)ctx;
  RK_OK(ct_file_group(&pg, dir, rank, size, 60000));
  p[0] = ct_fvec(a, 3);
  RK_OK(ctorch_tensor_from_data(&p[1], b, sizeof b, bsz, 2, CTORCH_FLOAT32));
  p[2] = ct_fvec(c, 1);
  RK_OK(ctorch_tensor_set_requires_grad(p[0], 1));
  RK_OK(ctorch_tensor_set_requires_grad(p[1], 1));
  RK_OK(ctorch_tensor_set_requires_grad(p[2], 1));

  /* loss = sum(p0 * (rank+1)) + sum(p1 * p1 * (rank+1)): d/dp0 = rank+1, d/dp1 = 2 (rank+1) p1; p2 unused */
  RK_OK(ctorch_mul_Scalar(&t, p[0], ctorch_scalar_int(rank + 1)));
  RK_OK(ctorch_sum(&loss, t, NULL));
  ctorch_tensor_free(t);
  RK_OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  ctorch_tensor_free(loss);
  {
    ctorch_tensor sq = NULL;
    RK_OK(ctorch_mul_Tensor(&sq, p[1], p[1]));
    RK_OK(ctorch_mul_Scalar(&t, sq, ctorch_scalar_int(rank + 1)));
    RK_OK(ctorch_sum(&loss, t, NULL));
    ctorch_tensor_free(sq);
    ctorch_tensor_free(t);
    RK_OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    ctorch_tensor_free(loss);
  }
  RK_OK(ctorch_tensor_grad(&g, p[0]));
  RK_EXPECT_F(g, (float)(rank + 1), (float)(rank + 1), (float)(rank + 1));
  ctorch_tensor_free(g);
  RK_OK(ctorch_tensor_grad(&g, p[2]));
  RK_CHECK(g == NULL, "p2 has a gradient before averaging");

  RK_OK(ctorch_process_group_sequence_number(&s0, pg));
  RK_OK(ctorch_dist_average_gradients(pg, p, 3, 0));
  RK_OK(ctorch_process_group_sequence_number(&s1, pg));
  RK_CHECK(s1 - s0 == 1, "%llu collectives for one bucket", (unsigned long long)(s1 - s0));

  RK_OK(ctorch_tensor_grad(&g, p[0]));
  RK_EXPECT_F(g, half, half, half);
  ctorch_tensor_free(g);
  RK_OK(ctorch_tensor_grad(&g, p[1]));
  RK_EXPECT_F(g, 2 * half, 2 * half, 2 * half, 2 * half);
  ctorch_tensor_free(g);
  RK_OK(ctorch_tensor_grad(&g, p[2]));
  RK_CHECK(g != NULL, "p2 got no zero gradient");
  RK_EXPECT_F(g, 0);
  ctorch_tensor_free(g);

  /* 8-byte buckets: p0 (12 bytes) and p1 (16) are each alone, p2 (4) alone after p1: 3 collectives */
  RK_OK(ctorch_process_group_sequence_number(&s0, pg));
  RK_OK(ctorch_dist_average_gradients(pg, p, 3, 8));
  RK_OK(ctorch_process_group_sequence_number(&s1, pg));
  RK_CHECK(s1 - s0 == 3, "%llu collectives for 3 buckets", (unsigned long long)(s1 - s0));
  RK_OK(ctorch_tensor_grad(&g, p[0]));
  RK_EXPECT_F(g, half, half, half); /* the average of equal values is unchanged */
  ctorch_tensor_free(g);

  /* the parameters themselves were not touched, and broadcast overwrites them without autograd */
  RK_EXPECT_F(p[0], 1, 2, 3);
  {
    float v[3] = {(float)rank, (float)rank, (float)rank};
    ctorch_tensor q = ct_fvec(v, 3);
    int req = 0;
    RK_OK(ctorch_tensor_set_requires_grad(q, 1));
    RK_OK(ctorch_dist_broadcast_parameters(pg, &q, 1, size - 1));
    RK_EXPECT_F(q, (float)(size - 1), (float)(size - 1), (float)(size - 1));
    RK_OK(ctorch_tensor_requires_grad(&req, q));
    RK_CHECK(req == 1, "broadcast dropped requires_grad");
    ctorch_tensor_free(q);
  }
  ctorch_tensor_free(p[0]);
  ctorch_tensor_free(p[1]);
  ctorch_tensor_free(p[2]);
  ctorch_process_group_free(pg);
  return 0;
}

/* ctorch_ddp's refusals: each names the argument, and those that depend
 * only on local input come before any collective, so no rank waits. */
static int rank_ddp_errors(int rank, int size, const char *dir, void *ctx) {
  int r_rank = rank;
  ctorch_process_group pg = NULL;
  ctorch_ddp ddp = NULL;
  ctorch_tensor p[1], frozen = NULL, y = NULL, x = NULL, loss = NULL, idx = NULL;
  float a[3] = {1, 2, 3};
  size_t nb = 0;
  (void)ctx;
  RK_OK(ct_file_group(&pg, dir, rank, size, 60000));
  p[0] = ct_fvec(a, 3);
  frozen = ct_fvec(a, 3);
  RK_OK(ctorch_tensor_set_requires_grad(p[0], 1));

  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_ddp_new_params(&ddp, pg, p, 1, NULL, 0, 0, 8u));
  RK_CHECK(strstr(ctorch_last_error(), "flags") != NULL, "%s", ctorch_last_error());
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_ddp_new(&ddp, pg, NULL, 0, 0));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_ddp_new_params(&ddp, pg, &frozen, 1, NULL, 0, 0, 0));
  RK_CHECK(strstr(ctorch_last_error(), "requires grad") != NULL, "%s", ctorch_last_error());
  RK_CHECK(ddp == NULL, "out set on failure");
  /* A working wrapper over p[0] alone: wrong use of it is refused. */
  RK_OK(ctorch_ddp_new_params(&ddp, pg, p, 1, NULL, 0, 0, 0));
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_ddp_forward(&y, ddp, p[0]));
  RK_CHECK(strstr(ctorch_last_error(), "ctorch_ddp_pre_forward") != NULL, "%s", ctorch_last_error());
  RK_OK(ctorch_ddp_bucket_count(&nb, ddp));
  RK_CHECK(nb == 1, "%zu buckets", nb);
  RK_OK(ctorch_ddp_bucket_indices(&idx, ddp, 0));
  ctorch_tensor_free(idx);
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_ddp_bucket_indices(&idx, ddp, 1));
  ctorch_ddp_free(ddp);
  RK_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_ddp_set_require_sync(ddp, 0));
  ctorch_ddp_free(ddp); /* a second free is recorded, nothing more */

  /* The wrapper's gradients: the average of the ranks' (rank + 1), during backward. */
  RK_OK(ctorch_ddp_new_params(&ddp, pg, p, 1, NULL, 0, 0, 0));
  RK_OK(ctorch_ddp_pre_forward(ddp));
  RK_OK(ctorch_mul_Scalar(&x, p[0], ctorch_scalar_int(rank + 1)));
  RK_OK(ctorch_ddp_post_forward(ddp, &x, 1));
  RK_OK(ctorch_sum(&loss, x, NULL));
  RK_OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  {
    ctorch_tensor g = NULL;
    float got[3], want = (float)(size + 1) / 2.0f;
    RK_OK(ctorch_tensor_grad(&g, p[0]));
    RK_CHECK(ct_read_f(got, 3, g) == 0 && got[0] == want && got[2] == want, "grad %g, want %g", got[0], want);
    ctorch_tensor_free(g);
  }
  ctorch_ddp_free(ddp);
  ctorch_tensor_free(loss);
  ctorch_tensor_free(x);
  ctorch_tensor_free(frozen);
  ctorch_tensor_free(p[0]);
  ctorch_process_group_free(pg);
  return 0;
}

/* Parameters shaped differently on rank 1: as in Python's DDP (the same
 * check, c10d's verify_params_across_processes), rank 1 refuses at once
 * naming the parameter, and rank 0, which holds the shapes the others are
 * compared with, fails when the group's timeout (3 s here) ends its
 * broadcast of the parameters: bounded, not a hang. */
static int rank_ddp_mismatch(int rank, int size, const char *dir, void *ctx) {
  int r_rank = rank;
  ctorch_process_group pg = NULL;
  ctorch_ddp ddp = NULL;
  float a[4] = {1, 2, 3, 4};
  ctorch_tensor p = ct_fvec(a, rank == 0 ? 4 : 3);
  double t0 = ct_now();
  (void)ctx, (void)size;
  RK_OK(ct_file_group(&pg, dir, rank, size, 3000));
  RK_OK(ctorch_tensor_set_requires_grad(p, 1));
  RK_FAILS(CTORCH_RUNTIME, ctorch_ddp_new_params(&ddp, pg, &p, 1, NULL, 0, 0, 0));
  if (rank == 1)
    RK_CHECK(strstr(ctorch_last_error(), "not to match") != NULL, "%s", ctorch_last_error());
  RK_CHECK(ct_now() - t0 < 30, "took %.1f s", ct_now() - t0);
  ctorch_tensor_free(p);
  ctorch_process_group_free(pg);
  return 0;
}

START_TEST(ddp_mismatch_2) { expect_all_ok(2, rank_ddp_mismatch, NULL); }
END_TEST

START_TEST(ddp_errors_2) { expect_all_ok(2, rank_ddp_errors, NULL); }
END_TEST

START_TEST(average_gradients_2) { expect_all_ok(2, rank_grads, NULL); }
END_TEST
START_TEST(average_gradients_4) { expect_all_ok(4, rank_grads, NULL); }
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("dist_grad");
  TCase *tc = tcase_create("dist_grad");
  tcase_set_timeout(tc, 200);
  tcase_add_test(tc, average_gradients_2);
  tcase_add_test(tc, average_gradients_4);
  tcase_add_test(tc, ddp_errors_2);
  tcase_add_test(tc, ddp_mismatch_2);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
