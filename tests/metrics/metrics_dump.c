/* Computes every metric of shim/metrics on the cases metrics_vs_sklearn.py
 * wrote, for it to compare with sklearn.metrics:
 *   metrics_dump IN OUT
 * IN (torch.save dict) holds, for cases i = 0, 1, ...: "i.pred" (INT64 [N]
 * labels or floating [N, C] scores), "i.target" (INT64 [N]) and "i.meta"
 * (INT64 [2]: num_classes, k for top-k or 0). OUT gets "i.acc", "i.topk"
 * (when k > 0), "i.cm", "i.prf" (FLOAT64 [3 zero_division: 0, 1, NaN]
 * [3 averages: micro, macro, weighted][precision, recall, f1]) and, per
 * zero_division z, "i.pc.z.p", "i.pc.z.r", "i.pc.z.f", and "i.support".
 * Exit 1 on an unexpected status. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctorch.h>

#include "../dump_ok.h"

static ctorch_tensor doubles(const double *v, int64_t n) {
  ctorch_tensor t = NULL;
  OK(ctorch_tensor_from_data(&t, v, (size_t)n * sizeof(double), &n, 1, CTORCH_FLOAT64));
  return t;
}

static void put(ctorch_tensor_dict d, const char *name, ctorch_tensor t) {
  OK(ctorch_tensor_dict_set(d, name, t));
  ctorch_tensor_free(t);
}

int main(int argc, char **argv) {
  ctorch_tensor_dict in = NULL, out = NULL;
  const double zds[3] = {0.0, 1.0, NAN};
  const ctorch_metric_average avgs[3] = {CTORCH_METRIC_MICRO, CTORCH_METRIC_MACRO, CTORCH_METRIC_WEIGHTED};
  int i, z, a;
  if (argc != 3) {
    fprintf(stderr, "usage: metrics_dump IN OUT\n");
    return 2;
  }
  OK(ctorch_load_dict(&in, argv[1]));
  OK(ctorch_tensor_dict_new(&out));
  for (i = 0;; ++i) {
    char name[64];
    ctorch_tensor pred = NULL, target = NULL, meta = NULL, t = NULL;
    int64_t m[2], pdim = 0;
    double v, prf[27];
    snprintf(name, sizeof name, "%d.pred", i);
    if (ctorch_tensor_dict_find(&pred, in, name) != CTORCH_OK) break;
    snprintf(name, sizeof name, "%d.target", i);
    OK(ctorch_tensor_dict_find(&target, in, name));
    snprintf(name, sizeof name, "%d.meta", i);
    OK(ctorch_tensor_dict_find(&meta, in, name));
    OK(ctorch_tensor_copy_to(m, sizeof m, meta));
    OK(ctorch_tensor_dim(&pdim, pred));

    OK(ctorch_metric_accuracy(&v, pred, target));
    snprintf(name, sizeof name, "%d.acc", i);
    put(out, name, doubles(&v, 1));
    if (m[1] > 0) {
      OK(ctorch_metric_top_k_accuracy(&v, pred, target, m[1]));
      snprintf(name, sizeof name, "%d.topk", i);
      put(out, name, doubles(&v, 1));
    }
    OK(ctorch_metric_confusion_matrix(&t, pred, target, m[0]));
    snprintf(name, sizeof name, "%d.cm", i);
    put(out, name, t);
    for (z = 0; z < 3; ++z) {
      ctorch_tensor p = NULL, r = NULL, f = NULL, s = NULL;
      for (a = 0; a < 3; ++a)
        OK(ctorch_metric_precision_recall_f1(&prf[z * 9 + a * 3], &prf[z * 9 + a * 3 + 1], &prf[z * 9 + a * 3 + 2],
                                             pred, target, m[0], avgs[a], zds[z]));
      OK(ctorch_metric_precision_recall_f1_per_class(&p, &r, &f, z == 0 ? &s : NULL, pred, target, m[0], zds[z]));
      snprintf(name, sizeof name, "%d.pc.%d.p", i, z);
      put(out, name, p);
      snprintf(name, sizeof name, "%d.pc.%d.r", i, z);
      put(out, name, r);
      snprintf(name, sizeof name, "%d.pc.%d.f", i, z);
      put(out, name, f);
      if (s) {
        snprintf(name, sizeof name, "%d.support", i);
        put(out, name, s);
      }
    }
    snprintf(name, sizeof name, "%d.prf", i);
    put(out, name, doubles(prf, 27));
    ctorch_tensor_free(pred);
    ctorch_tensor_free(target);
    ctorch_tensor_free(meta);
  }
  if (i == 0) {
    fprintf(stderr, "metrics_dump: no cases in %s\n", argv[1]);
    return 1;
  }
  OK(ctorch_tensor_dict_save(argv[2], out));
  ctorch_tensor_dict_free(in);
  ctorch_tensor_dict_free(out);
  printf("%d cases\n", i);
  return 0;
}
