/* Sweep runtime: recipes and the argument makers sweep_ops.c calls.
 *
 * A recipe is a number. Recipes 0..NTHEMES-1 are themes: every argument
 * takes its base value under that theme (all tensors [2,3] float, all
 * scalar tensors, all complex, all empty, all non-contiguous, ...); base
 * values come from the schema default, else from the argument's name
 * ("dim" -> 0, "index" -> int64 indices, "eps" -> 1e-5, ...). The next
 * recipes change one argument at a time to each variant of its kind (wrong
 * rank, dtype, layout, negative/huge ints, wrong list lengths, NaN, bad
 * enums, NULL inside lists, ...). Recipes past those are random
 * combinations seeded by (function name, recipe): the long run's. The same
 * number always gives the same inputs, so every failure is reproducible. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep_internal.h"

uint64_t sw_mix(uint64_t x) { /* splitmix64 */
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t sw_hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
  return h;
}

/* ---- themes --------------------------------------------------------------- */

typedef struct theme {
  const char *name;
  sw_tspec t;    /* dtype 0: by the argument's hint */
  int opts;      /* optionals present */
  int64_t claim; /* nonzero: every integer (and each element of an int list) takes this value */
} theme;

static const theme themes[] = {
    {"base", {0, 0, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"optionals", {0, 0, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"scalar", {1, 0, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"1d", {2, 0, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"3d", {3, 0, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"4d", {4, 0, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"4d-opt", {14, 0, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"5d", {5, 0, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"empty", {6, 0, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"zero-size", {7, 0, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"zero-size-3d", {8, 0, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"noncontig", {0, 0, SWL_NONCONTIG, SWV_NORMAL}, 0, 0},
    {"expanded", {0, 0, SWL_EXPANDED, SWV_NORMAL}, 1, 0},
    {"square", {9, 0, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"batch-square", {10, 0, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"7d", {11, 0, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"large", {12, 0, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"f64", {0, CTORCH_FLOAT64, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"f16", {0, CTORCH_FLOAT16, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"bf16", {0, CTORCH_BFLOAT16, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"c32", {0, CTORCH_COMPLEX32, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"c64", {0, CTORCH_COMPLEX64, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"c128", {0, CTORCH_COMPLEX128, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"i64", {0, CTORCH_INT64, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"i32", {0, CTORCH_INT32, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"i16", {0, CTORCH_INT16, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"i8", {0, CTORCH_INT8, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"u8", {0, CTORCH_UINT8, SWL_CONTIG, SWV_NORMAL}, 0, 0},
    {"bool", {0, CTORCH_BOOL, SWL_CONTIG, SWV_NORMAL}, 1, 0},
    {"nan-inf", {0, 0, SWL_CONTIG, SWV_NAN}, 0, 0},
    {"bad-indices", {0, 0, SWL_CONTIG, SWV_BADIDX}, 1, 0},
    {"meta", {0, 0, SWL_META, SWV_NORMAL}, 0, 0},
    {"meta-4d", {4, 0, SWL_META, SWV_NORMAL}, 1, 0},
    {"requires-grad", {0, 0, SWL_GRAD, SWV_NORMAL}, 1, 0},
    {"quantized", {0, 0, SWL_QUANT, SWV_NORMAL}, 0, 0},
    {"quantized-4d", {4, 0, SWL_QUANT, SWV_NORMAL}, 1, 0},
    {"sparse", {0, 0, SWL_SPARSE, SWV_NORMAL}, 0, 0},
    {"zero-tensor", {0, 0, SWL_ZERO, SWV_NORMAL}, 1, 0},
    {"conj", {0, 0, SWL_CONJ, SWV_NORMAL}, 0, 0},
    {"neg-view", {0, 0, SWL_NEG, SWV_NORMAL}, 1, 0},
    /* Integers that claim more than the tensors hold (the Sobol
     * kernels wrote past int64 [2,3] tensors given n = dimension =
     * num_generated = 7): every size, count, dimension and index equal to
     * the tensors' largest extent (3), or past their element count (7). */
    {"claims-extent", {0, 0, SWL_CONTIG, SWV_NORMAL}, 1, 3},
    {"claims-beyond", {0, 0, SWL_CONTIG, SWV_NORMAL}, 1, 7},
    {"i64-claims-extent", {0, CTORCH_INT64, SWL_CONTIG, SWV_NORMAL}, 1, 3},
    {"i64-claims-beyond", {0, CTORCH_INT64, SWL_CONTIG, SWV_NORMAL}, 1, 7},
};
#define NTHEMES ((int)(sizeof themes / sizeof themes[0]))

/* ---- variants of one argument, by kind ------------------------------------ */

/* Tensor variants: fields of -1 keep the theme's/hint's value. */
static const sw_tspec tensor_vars[] = {
    {1, -1, -1, -1},  {2, -1, -1, -1},  {3, -1, -1, -1},  {4, -1, -1, -1},  {6, -1, -1, -1},
    {7, -1, -1, -1},  {9, -1, -1, -1},  {11, -1, -1, -1}, {12, -1, -1, -1},
    {-1, CTORCH_FLOAT64, -1, -1}, {-1, CTORCH_INT64, -1, -1}, {-1, CTORCH_BOOL, -1, -1},
    {-1, CTORCH_COMPLEX64, -1, -1}, {-1, CTORCH_FLOAT16, -1, -1}, {-1, CTORCH_UINT8, -1, -1},
    {-1, -1, SWL_NONCONTIG, -1}, {-1, -1, SWL_EXPANDED, -1}, {-1, -1, SWL_META, -1},
    {-1, -1, SWL_SPARSE, -1}, {-1, -1, SWL_ZERO, -1}, {-1, -1, SWL_QUANT, -1}, {-1, -1, SWL_GRAD, -1},
    {-1, -1, SWL_CONJ, -1},
    {-1, -1, -1, SWV_NAN}, {-1, CTORCH_INT64, -1, SWV_BADIDX},
};
#define N_TVARS ((int)(sizeof tensor_vars / sizeof tensor_vars[0]))
enum { TL_LEN0, TL_LEN1, TL_LEN3, TL_WITH_NULL, TL_ONLY_NULL, TL_MIXED_SHAPES, TL_MIXED_DTYPES, TL_EMPTY,
       TL_MIXED_DEVICES, N_TLVARS };
enum { OTL_LEN0, OTL_NULL, OTL_IDX_NULL, OTL_NULL_IDX, OTL_MASK, OTL_BADIDX, OTL_THREE, OTL_FLOAT, OTL_IDX2D,
       N_OTLVARS };

static const int64_t int_vars[] = {0, 1, -1, 2, 3, -2, 5, 100, -100, (int64_t)1 << 31, -((int64_t)1 << 31) - 1,
                                   (int64_t)1 << 62, INT64_MAX, INT64_MIN};
#define N_IVARS ((int)(sizeof int_vars / sizeof int_vars[0]))
enum { IL_LEN0, IL_LEN1, IL_LONGER, IL_LEN8, IL_NEG, IL_ZERO, IL_HUGE, IL_MIN, IL_2P31, IL_100, IL_NULL_LEN,
       N_ILVARS };
/* Variants of an argument's kind; optional kinds add None as variant 0. */
static int n_variants(const sw_arg *a) {
  switch (a->kind) {
    case SW_T: return N_TVARS;
    case SW_OT: return N_TVARS + 1;
    case SW_TL: return N_TLVARS;
    case SW_OTL: return N_OTLVARS;
    case SW_I: return N_IVARS;
    case SW_OI: return N_IVARS + 1;
    case SW_IL: return N_ILVARS;
    case SW_OIL: return N_ILVARS + 1;
  }
  return sw_value_variants(a->kind);
}

int sw_n_themes(void) { return NTHEMES; }

int sw_fixed_recipes(const sw_op *op) {
  int n = NTHEMES;
  for (int i = 0; i < op->n_args; ++i) n += n_variants(&op->args[i]);
  return n;
}

/* ---- the current recipe --------------------------------------------------- */

static const sw_op *cur;
static const theme *th;
static uint64_t seed;
static int mut_arg = -1, mut_var, random_mode, describing;
static char text[8192];
static size_t text_len;

#define MAX_ARGS 64
#define MAX_ARG_TENSORS 8
static ctorch_tensor arg_tensors[MAX_ARGS][MAX_ARG_TENSORS];
static int n_arg_tensors[MAX_ARGS];

const sw_op *sw_current_op(void) { return cur; }
int sw_theme_opts(void) { return th->opts; }

int sw_arg_tensors(int i, ctorch_tensor *out, int cap) {
  int n = 0;
  if (i < 0 || i >= MAX_ARGS) return 0;
  for (; n < n_arg_tensors[i] && n < cap; ++n) out[n] = arg_tensors[i][n];
  return n;
}

void sw_note(int i, const char *fmt, ...) {
  if (!describing || text_len >= sizeof text - 1) return;
  va_list ap;
  int n = snprintf(text + text_len, sizeof text - text_len, "%s%s=", text_len ? "; " : "", cur->args[i].name);
  if (n > 0) text_len += (size_t)n;
  if (text_len >= sizeof text - 1) return;
  va_start(ap, fmt);
  n = vsnprintf(text + text_len, sizeof text - text_len, fmt, ap);
  va_end(ap);
  if (n > 0) text_len += (size_t)n;
  if (text_len >= sizeof text) text_len = sizeof text - 1;
}

const char *sw_recipe_text(void) { return text; }

const char *sw_recipe_theme(const sw_op *op, long r) {
  static char buf[160];
  if (r < NTHEMES) return themes[r].name;
  long j = r - NTHEMES;
  for (int i = 0; i < op->n_args; ++i) {
    int nv = n_variants(&op->args[i]);
    if (j < nv) {
      snprintf(buf, sizeof buf, "%s variant %ld", op->args[i].name, j);
      return buf;
    }
    j -= nv;
  }
  return "random";
}

void sw_recipe_begin(const sw_op *op, int op_index, long r, int describe) {
  (void)op_index;
  cur = op;
  describing = describe;
  text[0] = 0;
  text_len = 0;
  memset(n_arg_tensors, 0, sizeof n_arg_tensors);
  sw_check_reset();
  seed = sw_mix(sw_hash_str(op->c_name) ^ sw_mix((uint64_t)r));
  mut_arg = -1;
  random_mode = 0;
  if (r < NTHEMES) {
    th = &themes[r];
    return;
  }
  long j = r - NTHEMES;
  for (int i = 0; i < op->n_args; ++i) {
    int nv = n_variants(&op->args[i]);
    if (j < nv) {
      mut_arg = i;
      mut_var = (int)j;
      th = &themes[j % 2];
      return;
    }
    j -= nv;
  }
  random_mode = 1;
  th = &themes[seed % NTHEMES];
}

void sw_recipe_end(void) { sw_free_owned(); }

/* Variant of argument i in this recipe, or -1 for its base value. */
int sw_pick(int i) {
  if (i == mut_arg) return mut_var;
  if (!random_mode) return -1;
  uint64_t h = sw_mix(seed ^ (0x100 + (uint64_t)i));
  if (h & 1) return -1;
  return (int)((h >> 8) % (uint64_t)n_variants(&cur->args[i]));
}

static uint64_t arg_seed(int i) { return sw_mix(seed + 7919u * (uint64_t)(i + 1)); }

/* ---- names and defaults ---------------------------------------------------- */

int sw_name_has(int i, const char *s) { return strstr(cur->args[i].name, s) != NULL; }
int sw_name_is(int i, const char *s) { return strcmp(cur->args[i].name, s) == 0; }
const char *sw_dflt(int i) { return cur->args[i].dflt; }
int sw_dflt_none(int i) { return sw_dflt(i) && strcmp(sw_dflt(i), "None") == 0; }
/* Optional argument with no value in this recipe's base. */
int sw_base_absent(int i) { return !th->opts && (!sw_dflt(i) || sw_dflt_none(i)); }

static int index_hint(int i) {
  return sw_name_has(i, "ind") || sw_name_has(i, "offset") || sw_name_has(i, "length") || sw_name_is(i, "target") ||
         sw_name_has(i, "label") || sw_name_is(i, "repeats") || sw_name_is(i, "batch_sizes") || sw_name_has(i, "counts") ||
         sw_name_is(i, "segment_ids");
}
static int mask_hint(int i) { return sw_name_has(i, "mask"); }

/* ---- tensors ---------------------------------------------------------------- */

static sw_tspec base_spec(int i) {
  sw_tspec s = th->t;
  if (index_hint(i)) {
    s.dtype = CTORCH_INT64;
    if (s.values == SWV_NORMAL) s.values = SWV_INDEX;
    if (s.layout == SWL_QUANT || s.layout == SWL_CONJ || s.layout == SWL_GRAD) s.layout = SWL_CONTIG;
  } else if (mask_hint(i)) {
    s.dtype = CTORCH_BOOL;
    if (s.layout == SWL_QUANT || s.layout == SWL_CONJ || s.layout == SWL_GRAD) s.layout = SWL_CONTIG;
  }
  if (s.layout == SWL_QUANT && s.dtype && s.dtype < CTORCH_QINT8) s.dtype = 0;
  if (s.layout == SWL_GRAD && s.dtype && s.dtype != CTORCH_FLOAT32 && s.dtype != CTORCH_FLOAT64) s.dtype = 0;
  return s;
}

static ctorch_tensor make(int i, sw_tspec s, uint64_t sd) {
  char buf[160];
  ctorch_tensor t = sw_make_tensor(&s, sd, buf, sizeof buf);
  if (t && i < MAX_ARGS && n_arg_tensors[i] < MAX_ARG_TENSORS) arg_tensors[i][n_arg_tensors[i]++] = t;
  sw_note(i, "%s", buf);
  return t;
}

static sw_tspec apply(sw_tspec s, const sw_tspec *v) {
  if (v->shape >= 0) s.shape = v->shape;
  if (v->dtype >= 0) s.dtype = v->dtype;
  if (v->layout >= 0) s.layout = v->layout;
  if (v->values >= 0) s.values = v->values;
  if (v->layout >= 0 && v->dtype < 0) s.dtype = 0; /* a layout's own default dtype */
  return s;
}

ctorch_tensor sw_tensor(int i) {
  int v = sw_pick(i);
  const sw_arg *a = &cur->args[i];
  if (a->kind == SW_OT) {
    if (v == 0 || (v < 0 && sw_base_absent(i))) {
      sw_note(i, "NULL");
      return NULL;
    }
    if (v > 0) v -= 1;
  }
  sw_tspec s = base_spec(i);
  if (v >= 0) s = apply(s, &tensor_vars[v]);
  return make(i, s, arg_seed(i));
}

void sw_tensor_list(int i, const ctorch_tensor **p, size_t *n) {
  int v = sw_pick(i);
  const sw_arg *a = &cur->args[i];
  ctorch_tensor t[4] = {NULL, NULL, NULL, NULL};
  size_t len = 2;
  sw_tspec s = base_spec(i);
  uint64_t sd = arg_seed(i);
  if (a->kind == SW_OTL) {
    sw_tspec idx = {2, CTORCH_INT64, SWL_CONTIG, SWV_INDEX};
    if (th->t.values == SWV_BADIDX) idx.values = SWV_BADIDX;
    len = 1;
    switch (v) {
      case OTL_LEN0: len = 0; break;
      case OTL_NULL: sw_note(i, "NULL"); break;
      case OTL_IDX_NULL: t[0] = make(i, idx, sd); sw_note(i, "NULL"); len = 2; break;
      case OTL_NULL_IDX: sw_note(i, "NULL"); t[1] = make(i, idx, sd); len = 2; break;
      case OTL_MASK: t[0] = make(i, (sw_tspec){th->t.shape, CTORCH_BOOL, SWL_CONTIG, SWV_NORMAL}, sd); break;
      case OTL_BADIDX: idx.values = SWV_BADIDX; t[0] = make(i, idx, sd); break;
      case OTL_THREE: for (len = 0; len < 3; ++len) t[len] = make(i, idx, sd + len); break;
      case OTL_FLOAT: t[0] = make(i, (sw_tspec){2, CTORCH_FLOAT32, SWL_CONTIG, SWV_NORMAL}, sd); break;
      case OTL_IDX2D: idx.shape = 0; t[0] = make(i, idx, sd); break;
      default: t[0] = make(i, idx, sd); break;
    }
  } else {
    switch (v) {
      case TL_LEN0: len = 0; break;
      case TL_LEN1: len = 1; t[0] = make(i, s, sd); break;
      case TL_LEN3: len = 3; for (int k = 0; k < 3; ++k) t[k] = make(i, s, sd + k); break;
      case TL_WITH_NULL: t[0] = make(i, s, sd); sw_note(i, "NULL"); break;
      case TL_ONLY_NULL: len = 1; sw_note(i, "NULL"); break;
      case TL_MIXED_SHAPES:
        len = 3;
        t[0] = make(i, s, sd);
        s.shape = 2; t[1] = make(i, s, sd + 1);
        s.shape = 1; t[2] = make(i, s, sd + 2);
        break;
      case TL_MIXED_DTYPES:
        len = 3;
        t[0] = make(i, s, sd);
        s.dtype = CTORCH_INT64; t[1] = make(i, s, sd + 1);
        s.dtype = CTORCH_BOOL; t[2] = make(i, s, sd + 2);
        break;
      case TL_EMPTY: s.shape = 6; t[0] = make(i, s, sd); t[1] = make(i, s, sd + 1); break;
      case TL_MIXED_DEVICES:
        t[0] = make(i, s, sd);
        s.layout = SWL_META; t[1] = make(i, s, sd + 1);
        break;
      default: t[0] = make(i, s, sd); t[1] = make(i, s, sd + 1); break;
    }
  }
  sw_note(i, "(list of %zu)", len);
  *p = sw_guarded_copy(t, len * sizeof t[0]);
  *n = len;
}

/* ---- integers ---------------------------------------------------------------- */

static int64_t base_int(int i) {
  int64_t v;
  if (th->claim) return th->claim;
  if (sw_parse_int(sw_dflt(i), &v)) return v;
  if (sw_name_has(i, "dim") || sw_name_has(i, "axis") || sw_name_has(i, "zero_point") || sw_name_is(i, "start") ||
      sw_name_is(i, "seed") || sw_name_is(i, "index") || sw_name_is(i, "offset") || sw_name_is(i, "diagonal"))
    return 0;
  if (sw_name_is(i, "padding_idx") || sw_name_is(i, "ignore_index")) return -1;
  if (sw_name_has(i, "size") || sw_name_has(i, "num") || sw_name_is(i, "steps") || sw_name_is(i, "n") || sw_name_is(i, "k") ||
      sw_name_is(i, "end") || sw_name_has(i, "length") || sw_name_has(i, "channels") || sw_name_has(i, "features") ||
      sw_name_has(i, "classes") || sw_name_is(i, "high"))
    return 2;
  if (sw_name_is(i, "bins") || sw_name_is(i, "minlength")) return 4;
  return 1;
}

int64_t sw_int(int i) {
  int v = sw_pick(i);
  int64_t x = v >= 0 ? int_vars[v] : base_int(i);
  sw_note(i, "%lld", (long long)x);
  return x;
}

const int64_t *sw_opt_int(int i) {
  int v = sw_pick(i);
  if (v == 0 || (v < 0 && sw_base_absent(i))) {
    sw_note(i, "NULL");
    return NULL;
  }
  int64_t x = v > 0 ? int_vars[v - 1] : base_int(i);
  sw_note(i, "%lld", (long long)x);
  return sw_guarded_copy(&x, sizeof x);
}

static size_t base_int_list(int i, int64_t *x) {
  const sw_arg *a = &cur->args[i];
  size_t n = a->fixed ? (size_t)a->fixed : 1;
  double d[16];
  int k = sw_parse_list(sw_dflt(i), d, 16);
  if (k >= 0) {
    if (k == 1 && a->fixed > 1) {
      for (size_t j = 0; j < n; ++j) x[j] = (int64_t)d[0];
      return n;
    }
    for (int j = 0; j < k; ++j) x[j] = (int64_t)d[j];
    return (size_t)k;
  }
  int64_t fillv = 1;
  if (sw_name_has(i, "dim") || sw_name_has(i, "axis")) {
    fillv = 0;
  } else if (sw_name_has(i, "size") || sw_name_has(i, "shape")) {
    if (!a->fixed) {
      x[0] = 2, x[1] = 3;
      return 2;
    }
    fillv = 2;
  } else if (sw_name_has(i, "pad")) {
    fillv = 0;
    if (!a->fixed) n = 2;
  } else if (sw_name_has(i, "perm")) {
    x[0] = 1, x[1] = 0;
    return 2;
  } else if (sw_name_is(i, "repeats") || sw_name_has(i, "split") || sw_name_is(i, "indices") || sw_name_has(i, "sections")) {
    n = a->fixed ? n : 2;
  } else if (sw_name_is(i, "normalized_shape")) {
    x[0] = 3;
    return 1;
  }
  for (size_t j = 0; j < n; ++j) x[j] = fillv;
  return n;
}

void sw_int_list(int i, const int64_t **p, size_t *n) {
  const sw_arg *a = &cur->args[i];
  int v = sw_pick(i);
  if (a->kind == SW_OIL) {
    if (v == 0 || (v < 0 && sw_base_absent(i))) {
      sw_note(i, "NULL");
      *p = NULL;
      *n = 0;
      return;
    }
    if (v > 0) v -= 1;
  }
  int64_t x[16];
  size_t len = base_int_list(i, x), want = a->fixed ? (size_t)a->fixed : (len ? len : 2);
  if (th->claim && v < 0)
    for (size_t j = 0; j < len; ++j) x[j] = th->claim;
  int64_t fillv = 0;
  switch (v) {
    case IL_LEN0: len = 0; break;
    case IL_LEN1: len = 1; x[0] = 1; break;
    case IL_LONGER: len = want + 1; for (size_t j = 0; j < len; ++j) x[j] = 1; break;
    case IL_LEN8: len = 8; for (size_t j = 0; j < len; ++j) x[j] = 1; break;
    case IL_NEG: fillv = -1; goto fill;
    case IL_ZERO: fillv = 0; goto fill;
    case IL_HUGE: fillv = (int64_t)1 << 62; goto fill;
    case IL_MIN: fillv = INT64_MIN; goto fill;
    case IL_2P31: fillv = (int64_t)1 << 31; goto fill;
    case IL_100: fillv = 100; goto fill;
    case IL_NULL_LEN:
      sw_note(i, "NULL with length 2");
      *p = NULL;
      *n = 2;
      return;
    fill:
      len = want;
      for (size_t j = 0; j < len; ++j) x[j] = fillv;
      break;
    default: break;
  }
  if (describing) {
    char buf[256];
    int m = snprintf(buf, sizeof buf, "[");
    for (size_t j = 0; j < len && m < 200; ++j) m += snprintf(buf + m, sizeof buf - (size_t)m, j ? ",%lld" : "%lld", (long long)x[j]);
    snprintf(buf + m, sizeof buf - (size_t)m, "]");
    sw_note(i, "%s", buf);
  }
  *p = sw_guarded_copy(x, len * sizeof x[0]);
  *n = len;
}

