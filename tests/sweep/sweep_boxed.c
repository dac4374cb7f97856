/* Sweep runtime: the by-name call (scripts/sweep --boxed). The generated
 * sw_boxed_K functions ask the same runtime for the same arguments as the
 * typed calls, turn each into a ctorch_value here, and call the operator
 * through ctorch_op_call, so every recipe's bad input reaches the boxed path
 * and the guards, enum ranges and unsafe refusals it applies by name
 * (shim/dispatch/). A C value the typed function would refuse before
 * anything runs (a NULL list of length 3, a freed handle) is refused here
 * the same way: its conversion's status is the call's. */
#include <stdlib.h>
#include <string.h>

#include "sweep_internal.h"

int sw_boxed;

#define OPT(kind, ctype, make)                                                     \
  ctorch_status swb_O##kind(ctorch_value *out, const ctype *v) {                   \
    return v ? make(out, *v) : ctorch_value_none(out);                             \
  }

ctorch_status swb_T(ctorch_value *out, ctorch_tensor t) { return ctorch_value_tensor(out, t); }
ctorch_status swb_OT(ctorch_value *out, ctorch_tensor t) { return t ? ctorch_value_tensor(out, t) : ctorch_value_none(out); }
ctorch_status swb_I(ctorch_value *out, int64_t v) { return ctorch_value_int(out, v); }
ctorch_status swb_F(ctorch_value *out, double v) { return ctorch_value_double(out, v); }
ctorch_status swb_B(ctorch_value *out, int v) { return ctorch_value_bool(out, v); }
ctorch_status swb_S(ctorch_value *out, ctorch_scalar v) { return ctorch_value_scalar(out, v); }
ctorch_status swb_DT(ctorch_value *out, ctorch_dtype v) { return ctorch_value_int(out, (int64_t)v); }
ctorch_status swb_LAY(ctorch_value *out, ctorch_layout v) { return ctorch_value_int(out, (int64_t)v); }
ctorch_status swb_MF(ctorch_value *out, ctorch_memory_format v) { return ctorch_value_int(out, (int64_t)v); }
ctorch_status swb_DEV(ctorch_value *out, ctorch_device v) { return ctorch_value_device(out, v); }
OPT(I, int64_t, swb_I)
OPT(F, double, swb_F)
OPT(B, int, swb_B)
OPT(S, ctorch_scalar, swb_S)
OPT(DT, ctorch_dtype, swb_DT)
OPT(LAY, ctorch_layout, swb_LAY)
OPT(MF, ctorch_memory_format, swb_MF)
OPT(DEV, ctorch_device, swb_DEV)

ctorch_status swb_STR(ctorch_value *out, const char *s) { return s ? ctorch_value_string(out, s) : ctorch_value_none(out); }
ctorch_status swb_OSTR(ctorch_value *out, const char *s) { return swb_STR(out, s); }
ctorch_status swb_DN(ctorch_value *out, const char *s) { return swb_STR(out, s); }
ctorch_status swb_GEN(ctorch_value *out, ctorch_generator g) {
  return g ? ctorch_value_generator(out, g) : ctorch_value_none(out);
}

/* A list of n items made by item(i); a NULL pointer with n > 0 is refused
 * as the typed functions refuse it. */
typedef ctorch_status (*item_fn)(ctorch_value *out, const void *p, size_t i);

static ctorch_status list_of(ctorch_value *out, const void *p, size_t n, item_fn item) {
  ctorch_value items[256] = {NULL};
  ctorch_status st = CTORCH_OK;
  size_t i;
  *out = NULL;
  if (!p && n > 0) return CTORCH_INVALID_ARGUMENT;
  if (n > 256) return CTORCH_INVALID_ARGUMENT; /* the sweep's lists are short */
  for (i = 0; i < n && st == CTORCH_OK; ++i) st = item(&items[i], p, i);
  if (st == CTORCH_OK) st = n ? ctorch_value_list(out, items, n) : ctorch_value_list(out, NULL, 0);
  swb_free(items, (int)n); /* the list holds its own references */
  return st;
}

static ctorch_status item_T(ctorch_value *o, const void *p, size_t i) { return swb_T(o, ((const ctorch_tensor *)p)[i]); }
static ctorch_status item_OT(ctorch_value *o, const void *p, size_t i) { return swb_OT(o, ((const ctorch_tensor *)p)[i]); }
static ctorch_status item_F(ctorch_value *o, const void *p, size_t i) { return swb_F(o, ((const double *)p)[i]); }
static ctorch_status item_B(ctorch_value *o, const void *p, size_t i) { return swb_B(o, ((const int *)p)[i]); }
static ctorch_status item_S(ctorch_value *o, const void *p, size_t i) { return swb_S(o, ((const ctorch_scalar *)p)[i]); }
static ctorch_status item_DN(ctorch_value *o, const void *p, size_t i) { return swb_DN(o, ((const char *const *)p)[i]); }

ctorch_status swb_TL(ctorch_value *out, const ctorch_tensor *p, size_t n) { return list_of(out, p, n, item_T); }
ctorch_status swb_OTL(ctorch_value *out, const ctorch_tensor *p, size_t n) { return list_of(out, p, n, item_OT); }
ctorch_status swb_IL(ctorch_value *out, const int64_t *p, size_t n) {
  if (!p && n > 0) return CTORCH_INVALID_ARGUMENT;
  return ctorch_value_int_list(out, p, n);
}
ctorch_status swb_FL(ctorch_value *out, const double *p, size_t n) { return list_of(out, p, n, item_F); }
ctorch_status swb_BL(ctorch_value *out, const int *p, size_t n) { return list_of(out, p, n, item_B); }
ctorch_status swb_SL(ctorch_value *out, const ctorch_scalar *p, size_t n) { return list_of(out, p, n, item_S); }
ctorch_status swb_DNL(ctorch_value *out, const char *const *p, size_t n) { return list_of(out, p, n, item_DN); }
/* T[]?: a NULL pointer is None (the header's rule for optional lists). */
ctorch_status swb_OIL(ctorch_value *out, const int64_t *p, size_t n) { return p ? swb_IL(out, p, n) : ctorch_value_none(out); }
ctorch_status swb_OFL(ctorch_value *out, const double *p, size_t n) { return p ? swb_FL(out, p, n) : ctorch_value_none(out); }
ctorch_status swb_OSL(ctorch_value *out, const ctorch_scalar *p, size_t n) {
  return p ? swb_SL(out, p, n) : ctorch_value_none(out);
}
ctorch_status swb_ODNL(ctorch_value *out, const char *const *p, size_t n) {
  return p ? swb_DNL(out, p, n) : ctorch_value_none(out);
}

void swb_free(ctorch_value *v, int n) {
  for (int i = 0; i < n; ++i) ctorch_value_free(v[i]);
}

/* Every tensor of a result (a tensor, or tuples and lists of them), checked
 * as the typed results are (sweep_check.c). */
static void check_result(ctorch_value r, int depth) {
  ctorch_value_kind k;
  if (depth > 4 || ctorch_value_kind_of(&k, r) != CTORCH_OK) return;
  if (k == CTORCH_VALUE_TENSOR) {
    ctorch_tensor t = NULL;
    if (ctorch_value_to_tensor(&t, r) == CTORCH_OK) sw_out_tensor(CTORCH_OK, t, 0);
  } else if (k == CTORCH_VALUE_TUPLE || k == CTORCH_VALUE_LIST) {
    size_t n = 0;
    if (ctorch_value_size(&n, r) != CTORCH_OK) return;
    for (size_t i = 0; i < n && i < 64; ++i) {
      ctorch_value e = NULL;
      if (ctorch_value_get(&e, r, i) != CTORCH_OK) continue;
      check_result(e, depth + 1);
      ctorch_value_free(e);
    }
  }
}

ctorch_status swb_call(const char *name, const char *overload, ctorch_value *v, int n, int n_pos,
                       const char *const *kw) {
  ctorch_op op = NULL;
  ctorch_value out = NULL;
  ctorch_status st;
  if (ctorch_op_find(&op, name, overload) != CTORCH_OK) {
    const sw_op *cur = sw_current_op();
    if (cur && (cur->flags & SW_BOXED_ONLY)) return CTORCH_NOT_IMPLEMENTED; /* not in this libtorch (1.13) */
    sw_violation("%s.%s: not found by name: %.200s", name, overload, ctorch_last_error());
    return CTORCH_UNKNOWN;
  }
  sw_before_call();
  st = ctorch_op_call(&out, op, v, (size_t)n_pos, kw, v + n_pos, (size_t)(n - n_pos));
  sw_after_call(st);
  if (st != CTORCH_OK && out) sw_violation("value output not NULL after a failure");
  if (st == CTORCH_OK) {
    if (!out) sw_violation("value output NULL after success");
    else check_result(out, 0);
  }
  ctorch_value_free(out);
  ctorch_op_free(op);
  return st;
}
