/* What ctorch's data pipeline produces, printed for loader_vs_torch.py:
 *   loader_dump dist      stdin: "N RANK WORLD SHUFFLE SEED EPOCH DROP" per line
 *                         -> ctorch_data_distributed_indices, one line each
 *   loader_dump loader    stdin: "N BATCH SHUFFLE SEED EPOCH DROP_LAST WORKERS RANK WORLD DIST_DROP"
 *                         (WORLD 0: not distributed) -> a loader over a host
 *                         dataset whose item i is the scalar i: one line of
 *                         batches "i i i | i i | ..." per query
 *   loader_dump cifar PATH KIND OUT
 *                         -> "OK N" and OUT.img / OUT.lbl (raw bytes), or
 *                            "ERR STATUS message"                        */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

#include "../dump_ok.h"

static int64_t g_len;
static ctorch_status item_len(void *ud, int64_t *out) {
  (void)ud;
  *out = g_len;
  return CTORCH_OK;
}
static ctorch_status item_get(void *ud, int64_t i, ctorch_tensor *data, ctorch_tensor *target) {
  (void)ud;
  (void)target;
  return ctorch_tensor_from_data(data, &i, sizeof i, NULL, 0, CTORCH_INT64);
}

static void print_ints(ctorch_tensor t) {
  int64_t n = 0, k, *p;
  OK(ctorch_tensor_numel(&n, t));
  OK(ctorch_tensor_data_ptr((void **)&p, t));
  for (k = 0; k < n; ++k) printf("%s%" PRId64, k ? " " : "", p[k]);
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "dist") == 0) {
    int64_t n, r, w, sh, dr;
    uint64_t seed, ep;
    while (scanf("%" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNu64 " %" SCNu64 " %" SCNd64, &n, &r, &w, &sh,
                 &seed, &ep, &dr) == 7) {
      ctorch_tensor t = NULL;
      OK(ctorch_data_distributed_indices(&t, n, r, w, (int)sh, seed, ep, (int)dr));
      print_ints(t);
      printf("\n");
      ctorch_tensor_free(t);
    }
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], "loader") == 0) {
    int64_t n, b, sh, dl, wk, r, w, dd;
    uint64_t seed, ep;
    while (scanf("%" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNu64 " %" SCNu64 " %" SCNd64 " %" SCNd64 " %" SCNd64
                 " %" SCNd64 " %" SCNd64,
                 &n, &b, &sh, &seed, &ep, &dl, &wk, &r, &w, &dd) == 10) {
      ctorch_dataset ds = NULL;
      ctorch_data_loader l = NULL;
      int has = 1, first = 1;
      g_len = n;
      OK(ctorch_dataset_from_callbacks(&ds, item_len, item_get, NULL, NULL));
      OK(ctorch_data_loader_from_dataset(&l, ds, b, (int)sh, seed, (int)dl));
      ctorch_dataset_free(ds);
      if (w > 0) OK(ctorch_data_loader_set_distributed(l, r, w, (int)dd));
      OK(ctorch_data_loader_set_workers(l, (int)wk, 2));
      OK(ctorch_data_loader_start_epoch(l, ep));
      for (;;) {
        ctorch_tensor x = NULL, y = NULL;
        OK(ctorch_data_loader_next(&has, &x, &y, l));
        if (!has) break;
        if (!first) printf(" | ");
        first = 0;
        print_ints(x);
        ctorch_tensor_free(x);
      }
      printf("\n");
      ctorch_data_loader_free(l);
    }
    return 0;
  }
  if (argc == 5 && strcmp(argv[1], "cifar") == 0) {
    ctorch_tensor im = NULL, lb = NULL;
    int64_t n = 0;
    char path[4096];
    FILE *f;
    void *p;
    ctorch_status st = ctorch_data_cifar_read(&im, &lb, argv[2], (ctorch_data_cifar_kind)atoi(argv[3]));
    if (st != CTORCH_OK) {
      printf("ERR %s %s\n", ctorch_status_name(st), ctorch_last_error());
      return 0;
    }
    OK(ctorch_tensor_numel(&n, lb));
    snprintf(path, sizeof path, "%s.img", argv[4]);
    f = fopen(path, "wb");
    OK(ctorch_tensor_data_ptr(&p, im));
    fwrite(p, 1, (size_t)n * 3072, f);
    fclose(f);
    snprintf(path, sizeof path, "%s.lbl", argv[4]);
    f = fopen(path, "wb");
    OK(ctorch_tensor_data_ptr(&p, lb));
    fwrite(p, 8, (size_t)n, f);
    fclose(f);
    printf("OK %" PRId64 "\n", n);
    ctorch_tensor_free(im);
    ctorch_tensor_free(lb);
    return 0;
  }
  fprintf(stderr, "usage: loader_dump dist|loader < queries, or loader_dump cifar PATH KIND OUT\n");
  return 2;
}
