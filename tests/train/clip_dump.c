/* Gradient clipping scenarios for clip_vs_torch.py: each builds parameters
 * and gradients from a seed (randn, in the same order as the Python side),
 * clips them with ctorch_clip_grad_norm_ / ctorch_clip_grad_value_ and
 * prints, exactly (C99 hex floats):
 *   SCENARIO NAME STATUS TOTAL_NORM
 *   G i v0 v1 ...          every element of parameter i's gradient after
 * STATUS is ok or the status name. Parameter 3 never gets a gradient
 * (clipping must skip it). Exit 1 on an unexpected failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctorch.h>

#include "../dump_ok.h"

#define NP 5
static const int64_t shapes[NP][3] = {{3, 4, 0}, {5, 0, 0}, {2, 3, 4}, {2, 2, 0}, {7, 0, 0}};
static const size_t ndims[NP] = {2, 1, 3, 2, 1};

typedef struct {
  const char *name;
  int by_value, f64, nparams, poison, error_if_nonfinite;
  double max_norm, norm_type, scale;
} scenario;

static void print_grads(ctorch_tensor *p, int np) {
  int i;
  for (i = 0; i < np; ++i) {
    ctorch_tensor g = NULL, c = NULL;
    int64_t n = 0, k;
    double *v;
    OK(ctorch_tensor_grad(&g, p[i]));
    if (!g) continue;
    {
      const ctorch_dtype f64 = CTORCH_FLOAT64;
      OK(ctorch_to_dtype(&c, g, f64, 0, 1, NULL));
    }
    OK(ctorch_tensor_numel(&n, c));
    OK(ctorch_tensor_data_ptr((void **)&v, c));
    printf("G %d", i);
    for (k = 0; k < n; ++k) printf(" %a", v[k]);
    printf("\n");
    ctorch_tensor_free(c);
    ctorch_tensor_free(g);
  }
}

static void run(const scenario *s, uint64_t seed) {
  ctorch_tensor p[NP];
  const ctorch_dtype dt = s->f64 ? CTORCH_FLOAT64 : CTORCH_FLOAT32;
  double total = -1;
  ctorch_status st;
  int i;
  OK(ctorch_manual_seed(seed));
  for (i = 0; i < s->nparams; ++i) {
    ctorch_tensor g = NULL, scaled = NULL;
    OK(ctorch_randn(&p[i], shapes[i], ndims[i], &dt, NULL, NULL, NULL));
    OK(ctorch_tensor_set_requires_grad(p[i], 1));
    if (i == 3) continue; /* no gradient */
    OK(ctorch_randn(&g, shapes[i], ndims[i], &dt, NULL, NULL, NULL));
    OK(ctorch_mul_Scalar(&scaled, g, ctorch_scalar_float(s->scale)));
    if (s->poison && i == 1) OK(ctorch_fill__Scalar(scaled, ctorch_scalar_float(INFINITY)));
    OK(ctorch_tensor_set_grad(p[i], scaled));
    ctorch_tensor_free(g);
    ctorch_tensor_free(scaled);
  }
  if (s->by_value) st = ctorch_clip_grad_value_(p, (size_t)s->nparams, s->max_norm);
  else st = ctorch_clip_grad_norm_(&total, p, (size_t)s->nparams, s->max_norm, s->norm_type, s->error_if_nonfinite);
  printf("SCENARIO %s %s %a\n", s->name, st == CTORCH_OK ? "ok" : ctorch_status_name(st), total);
  print_grads(p, s->nparams);
  for (i = 0; i < s->nparams; ++i) ctorch_tensor_free(p[i]);
}

int main(void) {
  static const scenario all[] = {
      {"l2_clips", 0, 0, NP, 0, 0, 1.0, 2.0, 1.0},
      {"l2_no_clip", 0, 0, NP, 0, 0, 100.0, 2.0, 1.0},
      {"l1", 0, 0, NP, 0, 0, 2.0, 1.0, 1.0},
      {"inf", 0, 0, NP, 0, 0, 0.5, INFINITY, 1.0},
      {"inf_one_grad", 0, 0, 1, 0, 0, 0.5, INFINITY, 1.0},
      {"minus_inf", 0, 0, NP, 0, 0, 0.05, -INFINITY, 1.0},
      {"p_half", 0, 0, NP, 0, 0, 3.0, 0.5, 1.0},
      {"p3_f64", 0, 1, NP, 0, 0, 1.0, 3.0, 10.0},
      {"large_scale", 0, 0, NP, 0, 0, 1.0, 2.0, 1e18},
      {"nonfinite_scaled", 0, 0, NP, 1, 0, 1.0, 2.0, 1.0},
      {"nonfinite_error", 0, 0, NP, 1, 1, 1.0, 2.0, 1.0},
      {"value", 1, 0, NP, 0, 0, 0.5, 0, 1.0},
      {"value_f64", 1, 1, NP, 0, 0, 0.1, 0, 3.0},
  };
  size_t i;
  ctorch_tensor none = NULL;
  double total = 1;
  /* failures: NULL list with a length, NaN options, a NULL entry */
  if (ctorch_clip_grad_norm_(&total, NULL, 2, 1.0, 2.0, 0) != CTORCH_INVALID_ARGUMENT || total != 0) return 1;
  if (ctorch_clip_grad_norm_(NULL, &none, 1, 1.0, 2.0, 0) != CTORCH_INVALID_ARGUMENT) return 1;
  if (!strstr(ctorch_last_error(), "ctorch_clip_grad_norm_") || !strstr(ctorch_last_error(), "params")) return 1;
  if (ctorch_clip_grad_norm_(NULL, NULL, 0, NAN, 2.0, 0) != CTORCH_INVALID_ARGUMENT) return 1;
  if (ctorch_clip_grad_norm_(NULL, NULL, 0, 1.0, NAN, 0) != CTORCH_INVALID_ARGUMENT) return 1;
  if (ctorch_clip_grad_value_(NULL, 0, NAN) != CTORCH_INVALID_ARGUMENT) return 1;
  if (ctorch_clip_grad_norm_(&total, NULL, 0, 1.0, 2.0, 0) != CTORCH_OK || total != 0) return 1;
  for (i = 0; i < sizeof all / sizeof all[0]; ++i) run(&all[i], 100 + i);
  return 0;
}
