/* Sweep runtime: the makers of non-tensor arguments (floats, bools,
 * scalars, enums, strings, dimension names, generators) and their variants.
 * Base values come from the schema default, else the argument's name; see
 * sweep_inputs.c for how recipes pick base values and variants. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep_internal.h"

static const double float_vars[] = {0, 1, -1, 0.5, NAN, INFINITY, -INFINITY, 1e300, -1e300, 4.9e-324, 9.3e18};
#define N_FVARS ((int)(sizeof float_vars / sizeof float_vars[0]))
enum { FL_LEN0, FL_LEN1, FL_LEN3, FL_NAN, FL_INF, FL_NEG, N_FLVARS };
static const int bool_vars[] = {0, 1, -1};
enum { BL_LEN0, BL_SHORT, BL_LONG, BL_ONES, BL_ZEROS, N_BLVARS };
#define N_SVARS 12
enum { SL_LEN0, SL_LEN1, SL_LEN3, SL_BADKIND, SL_NAN, N_SLVARS };
static const int dtype_vars[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 0, 19, -1};
#define N_DTVARS ((int)(sizeof dtype_vars / sizeof dtype_vars[0]))
static const int layout_vars[] = {0, 1, 2, 3, 4, 5, 6, 7, -1};
static const int mf_vars[] = {0, 1, 2, 3, 4, -1};
static const ctorch_device device_vars[] = {{0, -1}, {0, 3}, {2, -1}, {1, 0}, {1, 7}, {3, 0}, {42, 0}, {0, -7}};
#define N_DEVVARS 8
static const char *const str_vars[] = {"", "garbage", NULL /* 9000 chars */, "sum", "mean", "none", "max",
                                       "reflect", "circular", "floor", "tanh", "L", "U", "ortho", "fro", "nuc",
                                       "same", "valid", "ij->ji", "...", "i,i->"};
#define N_STRVARS ((int)(sizeof str_vars / sizeof str_vars[0]))
static const char *const dimname_vars[] = {"", "N", "C", "not a name", "*", "..."};
#define N_DNVARS 6
enum { DNL_LEN0, DNL_ONE, DNL_DUP, DNL_FIVE, DNL_EMPTY, N_DNLVARS };

/* ---- defaults ---------------------------------------------------------------- */

int sw_parse_int(const char *s, int64_t *out) {
  char *end;
  if (!s) return 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end) return 0;
  *out = v;
  return 1;
}

/* Parses "[1, 2]" or "1" (a broadcast int[N] default); returns the count. */
int sw_parse_list(const char *s, double *out, int cap) {
  if (!s) return -1;
  int n = 0;
  if (*s != '[') {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end) return -1;
    out[0] = v;
    return 1;
  }
  ++s;
  while (*s && *s != ']' && n < cap) {
    char *end;
    while (*s == ' ' || *s == ',') ++s;
    if (*s == ']') break;
    out[n] = strtod(s, &end);
    if (end == s) {
      /* True/False */
      if (!strncmp(s, "True", 4)) out[n] = 1, end = (char *)s + 4;
      else if (!strncmp(s, "False", 5)) out[n] = 0, end = (char *)s + 5;
      else return -1;
    }
    ++n;
    s = end;
  }
  return n;
}

/* ---- floats and bools --------------------------------------------------------- */

static double base_float(int i) {
  double d[1];
  if (sw_parse_list(sw_dflt(i), d, 1) == 1 && sw_dflt(i)[0] != '[') return d[0];
  if (sw_name_is(i, "eps")) return 1e-5;
  if (sw_name_is(i, "momentum") || sw_name_has(i, "scale") || sw_name_is(i, "lr")) return 0.1;
  if (sw_name_is(i, "p")) return 0.5;
  if (sw_name_is(i, "alpha") || sw_name_is(i, "beta")) return 1;
  return 0.5;
}

double sw_float(int i) {
  int v = sw_pick(i);
  double x = v >= 0 ? float_vars[v] : base_float(i);
  sw_note(i, "%g", x);
  return x;
}

const double *sw_opt_float(int i) {
  int v = sw_pick(i);
  if (v == 0 || (v < 0 && sw_base_absent(i))) {
    sw_note(i, "NULL");
    return NULL;
  }
  double x = v > 0 ? float_vars[v - 1] : base_float(i);
  sw_note(i, "%g", x);
  return sw_guarded_copy(&x, sizeof x);
}

void sw_float_list(int i, const double **p, size_t *n) {
  const sw_arg *a = &sw_current_op()->args[i];
  int v = sw_pick(i);
  if (a->kind == SW_OFL) {
    if (v == 0 || (v < 0 && sw_base_absent(i))) {
      sw_note(i, "NULL");
      *p = NULL;
      *n = 0;
      return;
    }
    if (v > 0) v -= 1;
  }
  double x[4] = {0.5, 0.5, 0.5, 0.5};
  size_t len = 2;
  int k = sw_parse_list(sw_dflt(i), x, 4);
  if (k >= 0 && sw_dflt(i)[0] == '[') len = (size_t)k;
  switch (v) {
    case FL_LEN0: len = 0; break;
    case FL_LEN1: len = 1; break;
    case FL_LEN3: len = 3; break;
    case FL_NAN: len = 2; x[0] = NAN; break;
    case FL_INF: len = 2; x[0] = INFINITY, x[1] = -INFINITY; break;
    case FL_NEG: len = 2; x[0] = x[1] = -1; break;
    default: break;
  }
  sw_note(i, "float list of %zu (%g ...)", len, x[0]);
  *p = sw_guarded_copy(x, len * sizeof x[0]);
  *n = len;
}

static int base_bool(int i) {
  if (sw_dflt(i) && !strcmp(sw_dflt(i), "True")) return 1;
  return 0;
}

int sw_bool(int i) {
  int v = sw_pick(i);
  int x = v >= 0 ? bool_vars[v] : base_bool(i);
  sw_note(i, "%d", x);
  return x;
}

const int *sw_opt_bool(int i) {
  int v = sw_pick(i);
  if (v == 0 || (v < 0 && sw_base_absent(i))) {
    sw_note(i, "NULL");
    return NULL;
  }
  int x = v > 0 ? bool_vars[v - 1] : base_bool(i);
  sw_note(i, "%d", x);
  return sw_guarded_copy(&x, sizeof x);
}

void sw_bool_list(int i, const int **p, size_t *n) {
  const sw_arg *a = &sw_current_op()->args[i];
  int v = sw_pick(i);
  size_t want = a->fixed ? (size_t)a->fixed : 3, len = want;
  int x[16];
  double d[16];
  int k = sw_parse_list(sw_dflt(i), d, 16);
  for (size_t j = 0; j < 16; ++j) x[j] = k > 0 && (int)j < k ? d[j] != 0 : 1;
  switch (v) {
    case BL_LEN0: len = 0; break;
    case BL_SHORT: len = want - 1; break;
    case BL_LONG: len = want + 1; break;
    case BL_ONES: for (size_t j = 0; j < len; ++j) x[j] = 1; break;
    case BL_ZEROS: for (size_t j = 0; j < len; ++j) x[j] = 0; break;
    default: break;
  }
  sw_note(i, "bool list of %zu", len);
  *p = sw_guarded_copy(x, len * sizeof x[0]);
  *n = len;
}

/* ---- scalars ---------------------------------------------------------------- */

static ctorch_scalar scalar_var(int v) {
  ctorch_scalar s = ctorch_scalar_int(0);
  switch (v) {
    case 0: break;
    case 1: s = ctorch_scalar_int(-1); break;
    case 2: s = ctorch_scalar_int((int64_t)1 << 62); break;
    case 3: s = ctorch_scalar_int(INT64_MIN); break;
    case 4: s = ctorch_scalar_float(NAN); break;
    case 5: s = ctorch_scalar_float(INFINITY); break;
    case 6: s = ctorch_scalar_float(-0.5); break;
    case 7: s = ctorch_scalar_bool(1); break;
    case 8: s = ctorch_scalar_complex(1, 1); break;
    case 9: s.kind = 7; break;
    case 10: s.kind = -1; break;
    case 11: s = ctorch_scalar_float(1e300); break;
  }
  return s;
}

static ctorch_scalar base_scalar(int i) {
  int64_t v;
  double d[1];
  if (sw_parse_int(sw_dflt(i), &v)) return ctorch_scalar_int(v);
  if (sw_parse_list(sw_dflt(i), d, 1) == 1 && sw_dflt(i)[0] != '[') return ctorch_scalar_float(d[0]);
  if (sw_name_is(i, "other") || sw_name_is(i, "value") || sw_name_is(i, "exponent") || sw_name_is(i, "p")) return ctorch_scalar_int(2);
  if (sw_name_is(i, "min")) return ctorch_scalar_int(-1);
  return ctorch_scalar_int(1);
}

static void note_scalar(int i, ctorch_scalar s) {
  sw_note(i, "scalar{kind %d, i %lld, f %g, imag %g}", s.kind, (long long)s.i, s.f, s.imag);
}

ctorch_scalar sw_scalar(int i) {
  int v = sw_pick(i);
  ctorch_scalar s = v >= 0 ? scalar_var(v) : base_scalar(i);
  note_scalar(i, s);
  return s;
}

const ctorch_scalar *sw_opt_scalar(int i) {
  int v = sw_pick(i);
  if (v == 0 || (v < 0 && sw_base_absent(i))) {
    sw_note(i, "NULL");
    return NULL;
  }
  ctorch_scalar s = v > 0 ? scalar_var(v - 1) : base_scalar(i);
  note_scalar(i, s);
  return sw_guarded_copy(&s, sizeof s);
}

void sw_scalar_list(int i, const ctorch_scalar **p, size_t *n) {
  const sw_arg *a = &sw_current_op()->args[i];
  int v = sw_pick(i);
  if (a->kind == SW_OSL) {
    if (v == 0 || (v < 0 && sw_base_absent(i))) {
      sw_note(i, "NULL");
      *p = NULL;
      *n = 0;
      return;
    }
    if (v > 0) v -= 1;
  }
  ctorch_scalar x[3] = {ctorch_scalar_int(1), ctorch_scalar_float(0.5), ctorch_scalar_int(2)};
  size_t len = 2;
  switch (v) {
    case SL_LEN0: len = 0; break;
    case SL_LEN1: len = 1; break;
    case SL_LEN3: len = 3; break;
    case SL_BADKIND: x[1].kind = 9; break;
    case SL_NAN: x[0] = ctorch_scalar_float(NAN); break;
    default: break;
  }
  sw_note(i, "scalar list of %zu", len);
  *p = sw_guarded_copy(x, len * sizeof x[0]);
  *n = len;
}

/* ---- enums ------------------------------------------------------------------ */

/* Optional enum: -1 = None, else the value (base or variant). */
static int enum_value(int i, const int *vars, int nv, int base, int optional) {
  int v = sw_pick(i);
  if (optional) {
    if (v == 0 || (v < 0 && sw_base_absent(i))) return -1000;
    if (v > 0) v -= 1;
  }
  (void)nv;
  return v >= 0 ? vars[v] : base;
}

ctorch_dtype sw_dtype(int i) {
  int x = enum_value(i, dtype_vars, N_DTVARS, CTORCH_FLOAT32, 0);
  sw_note(i, "dtype %d", x);
  return (ctorch_dtype)x;
}

const ctorch_dtype *sw_opt_dtype(int i) {
  int x = enum_value(i, dtype_vars, N_DTVARS, CTORCH_FLOAT32, 1);
  if (x == -1000) {
    sw_note(i, "NULL");
    return NULL;
  }
  sw_note(i, "dtype %d", x);
  ctorch_dtype d = (ctorch_dtype)x;
  return sw_guarded_copy(&d, sizeof d);
}

ctorch_layout sw_layout(int i) {
  int x = enum_value(i, layout_vars, 9, CTORCH_LAYOUT_STRIDED, 0);
  sw_note(i, "layout %d", x);
  return (ctorch_layout)x;
}

const ctorch_layout *sw_opt_layout(int i) {
  int x = enum_value(i, layout_vars, 9, CTORCH_LAYOUT_STRIDED, 1);
  if (x == -1000) {
    sw_note(i, "NULL");
    return NULL;
  }
  sw_note(i, "layout %d", x);
  ctorch_layout l = (ctorch_layout)x;
  return sw_guarded_copy(&l, sizeof l);
}

ctorch_memory_format sw_memory_format(int i) {
  int x = enum_value(i, mf_vars, 6, CTORCH_MEMORY_CONTIGUOUS, 0);
  sw_note(i, "memory_format %d", x);
  return (ctorch_memory_format)x;
}

const ctorch_memory_format *sw_opt_memory_format(int i) {
  int x = enum_value(i, mf_vars, 6, CTORCH_MEMORY_CONTIGUOUS, 1);
  if (x == -1000) {
    sw_note(i, "NULL");
    return NULL;
  }
  sw_note(i, "memory_format %d", x);
  ctorch_memory_format m = (ctorch_memory_format)x;
  return sw_guarded_copy(&m, sizeof m);
}

static ctorch_device device_of(int i, int optional, int *absent) {
  int v = sw_pick(i);
  *absent = 0;
  if (optional) {
    if (v == 0 || (v < 0 && sw_base_absent(i))) {
      *absent = 1;
      return ctorch_device_cpu();
    }
    if (v > 0) v -= 1;
  }
  if (v >= 0) return device_vars[v];
  if (sw_cuda) { /* --device cuda: the base value is cuda:0 */
    ctorch_device cuda = {CTORCH_DEVICE_CUDA, 0};
    return cuda;
  }
  return ctorch_device_cpu();
}

ctorch_device sw_device(int i) {
  int absent;
  ctorch_device d = device_of(i, 0, &absent);
  sw_note(i, "device{%d, %d}", d.type, d.index);
  return d;
}

const ctorch_device *sw_opt_device(int i) {
  int absent;
  ctorch_device d = device_of(i, 1, &absent);
  if (absent) {
    sw_note(i, "NULL");
    return NULL;
  }
  sw_note(i, "device{%d, %d}", d.type, d.index);
  return sw_guarded_copy(&d, sizeof d);
}

/* ---- strings, names, generators -------------------------------------------- */

static const char *base_str(int i) {
  static char buf[64];
  const char *d = sw_dflt(i);
  if (d && (d[0] == '"' || d[0] == '\'')) {
    size_t n = strlen(d);
    if (n >= 2 && n - 2 < sizeof buf) {
      memcpy(buf, d + 1, n - 2);
      buf[n - 2] = 0;
      return buf;
    }
  }
  if (sw_current_op()->args[i].kind == SW_DN) return "N";
  if (sw_name_is(i, "reduce")) return "sum";
  if (sw_name_is(i, "reduction")) return "mean";
  if (sw_name_is(i, "padding")) return "same";
  if (sw_name_is(i, "rounding_mode")) return "floor";
  if (sw_name_is(i, "approximate")) return "tanh";
  if (sw_name_is(i, "interpolation")) return "linear";
  if (sw_name_is(i, "indexing")) return "ij";
  if (sw_name_is(i, "equation")) return "ij->ji";
  if (sw_name_is(i, "UPLO") || sw_name_is(i, "uplo")) return "L";
  if (sw_name_is(i, "side")) return "left";
  if (sw_name_is(i, "driver")) return "gelsd";
  if (sw_name_is(i, "norm")) return "ortho";
  if (sw_name_is(i, "ord")) return "fro";
  if (sw_name_has(i, "mode")) return "reflect";
  return "";
}

const char *sw_str(int i) {
  const sw_arg *a = &sw_current_op()->args[i];
  int v = sw_pick(i);
  const char *s;
  if (a->kind == SW_OSTR) {
    if (v == 0 || (v < 0 && sw_base_absent(i))) {
      sw_note(i, "NULL");
      return NULL;
    }
    if (v > 0) v -= 1;
  }
  if (v < 0) {
    s = base_str(i);
  } else if (a->kind == SW_DN) {
    s = dimname_vars[v];
  } else if (!str_vars[v]) {
    char *big = sw_guarded(9001);
    memset(big, 'a', 9000);
    big[9000] = 0;
    sw_note(i, "\"a\" x 9000");
    return big;
  } else {
    s = str_vars[v];
  }
  sw_note(i, "\"%s\"", s);
  return sw_guarded_str(s);
}

void sw_dimname_list(int i, const char *const **p, size_t *n) {
  const sw_arg *a = &sw_current_op()->args[i];
  int v = sw_pick(i);
  if (a->kind == SW_ODNL) {
    if (v == 0 || (v < 0 && sw_base_absent(i))) {
      sw_note(i, "NULL");
      *p = NULL;
      *n = 0;
      return;
    }
    if (v > 0) v -= 1;
  }
  const char *x[5] = {"N", "C", "H", "W", "X"};
  size_t len = a->fixed ? (size_t)a->fixed : 1;
  switch (v) {
    case DNL_LEN0: len = 0; break;
    case DNL_ONE: len = 1; break;
    case DNL_DUP: len = 2; x[1] = "N"; break;
    case DNL_FIVE: len = 5; break;
    case DNL_EMPTY: len = 1; x[0] = ""; break;
    default: break;
  }
  const char **g = sw_guarded(len * sizeof *g);
  for (size_t j = 0; j < len; ++j) g[j] = sw_guarded_str(x[j]);
  sw_note(i, "%zu names", len);
  *p = g;
  *n = len;
}

ctorch_generator sw_generator(int i) {
  int v = sw_pick(i);
  if (v == 0 || (v < 0 && !sw_theme_opts())) {
    sw_note(i, "NULL");
    return NULL;
  }
  ctorch_generator g = NULL;
  ctorch_device d = ctorch_device_cpu();
  if (sw_cuda) d.type = CTORCH_DEVICE_CUDA, d.index = 0; /* --device cuda: cuda:0's */
  if (ctorch_generator_new(&g, d, 42) != CTORCH_OK) {
    sw_note(i, "<generator_new failed>");
    return NULL;
  }
  sw_own_generator(g);
  sw_note(i, sw_cuda ? "cuda generator" : "cpu generator");
  return g;
}

int sw_value_variants(int kind) {
  switch (kind) {
    case SW_F: return N_FVARS;
    case SW_OF: return N_FVARS + 1;
    case SW_FL: return N_FLVARS;
    case SW_OFL: return N_FLVARS + 1;
    case SW_B: return 3;
    case SW_OB: return 4;
    case SW_BL: return N_BLVARS;
    case SW_S: return N_SVARS;
    case SW_OS: return N_SVARS + 1;
    case SW_SL: return N_SLVARS;
    case SW_OSL: return N_SLVARS + 1;
    case SW_DT: return N_DTVARS;
    case SW_ODT: return N_DTVARS + 1;
    case SW_LAY: return 9;
    case SW_OLAY: return 10;
    case SW_DEV: return N_DEVVARS;
    case SW_ODEV: return N_DEVVARS + 1;
    case SW_MF: return 6;
    case SW_OMF: return 7;
    case SW_STR: return N_STRVARS;
    case SW_OSTR: return N_STRVARS + 1;
    case SW_DN: return N_DNVARS;
    case SW_DNL: return N_DNLVARS;
    case SW_ODNL: return N_DNLVARS + 1;
    case SW_GEN: return 2;
  }
  return 0;
}
