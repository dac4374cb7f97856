/* Sweep runtime: guarded memory and the input tensors.
 *
 * Every list and every tensor's data the sweep hands to ctorch ends exactly
 * where a PROT_NONE page begins, so a kernel that reads or writes even one
 * element past the end faults at once (libtorch is not instrumented: ASan
 * alone would not see it). Tensors are built over that memory with
 * ctorch_tensor_from_blob, which releases the slot when the last reference
 * goes. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sweep_internal.h"

/* ---- guarded memory ----------------------------------------------------- */

typedef struct slot {
  char *base;     /* mapping: npages data pages, then one guard page */
  size_t npages;
  struct slot *next;
} slot;

static size_t page_size;
static slot *free_small;  /* one data page each, reused */

static slot *slot_new(size_t nbytes) {
  if (!page_size) page_size = (size_t)sysconf(_SC_PAGESIZE);
  size_t np = nbytes ? (nbytes + page_size - 1) / page_size : 1;
  if (np == 1 && free_small) {
    slot *s = free_small;
    free_small = s->next;
    return s;
  }
  slot *s = malloc(sizeof *s);
  if (!s) abort();
  s->npages = np;
  s->base = mmap(NULL, (np + 1) * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (s->base == MAP_FAILED) {
    perror("sweep: mmap");
    abort();
  }
  if (mprotect(s->base + np * page_size, page_size, PROT_NONE) != 0) {
    perror("sweep: mprotect");
    abort();
  }
  return s;
}

static void slot_free(slot *s) {
  if (s->npages == 1) {
    s->next = free_small;
    free_small = s;
    return;
  }
  munmap(s->base, (s->npages + 1) * page_size);
  free(s);
}

static char *slot_place(slot *s, size_t nbytes) { return s->base + s->npages * page_size - nbytes; }

/* Buffers (lists, strings) live until the recipe ends. */
static slot *recipe_slots;

void *sw_guarded(size_t nbytes) {
  slot *s = slot_new(nbytes);
  s->next = recipe_slots;
  recipe_slots = s;
  return slot_place(s, nbytes);
}

void *sw_guarded_copy(const void *src, size_t n) {
  void *p = sw_guarded(n);
  if (n) memcpy(p, src, n);
  return p;
}

const char *sw_guarded_str(const char *s) {
  size_t n = strlen(s) + 1;
  return sw_guarded_copy(s, n);
}

/* ---- handles owned by the recipe --------------------------------------- */

#define SW_MAX_OWNED 512
static ctorch_tensor owned[SW_MAX_OWNED];
static int n_owned;
static ctorch_generator owned_gens[16];
static int n_gens;

void sw_own_tensor(ctorch_tensor t) {
  if (!t) return;
  if (n_owned == SW_MAX_OWNED) {
    fprintf(stderr, "sweep: too many handles in one recipe\n");
    abort();
  }
  owned[n_owned++] = t;
}

void sw_own_generator(ctorch_generator g) {
  if (g && n_gens < 16) owned_gens[n_gens++] = g;
}

void sw_free_owned(void) {
  while (n_owned) ctorch_tensor_free(owned[--n_owned]);
  while (n_gens) ctorch_generator_free(owned_gens[--n_gens]);
  while (recipe_slots) {
    slot *s = recipe_slots;
    recipe_slots = s->next;
    slot_free(s);
  }
}

/* ---- tensors ------------------------------------------------------------- */

const sw_shape sw_shapes[] = {
    {2, {2, 3}},          /* 0 */
    {0, {0}},             /* 1 scalar */
    {1, {3}},             /* 2 */
    {3, {2, 3, 4}},       /* 3 */
    {4, {1, 2, 3, 4}},    /* 4 */
    {5, {1, 2, 2, 2, 2}}, /* 5 */
    {1, {0}},             /* 6 empty */
    {2, {2, 0}},          /* 7 zero-size */
    {3, {0, 3, 4}},       /* 8 */
    {2, {3, 3}},          /* 9 square */
    {3, {2, 3, 3}},       /* 10 batch of squares */
    {7, {1, 1, 1, 1, 1, 1, 1}}, /* 11 */
    {2, {33, 70}},        /* 12 past vectorisation and grain sizes */
    {1, {1}},             /* 13 */
    {4, {2, 3, 4, 5}},    /* 14 */
};
const int sw_n_shapes = (int)(sizeof sw_shapes / sizeof sw_shapes[0]);

static void tensor_release(void *ctx) { slot_free(ctx); }

static size_t dtype_size(int dt) {
  size_t n = 0;
  if (ctorch_dtype_size(&n, (ctorch_dtype)dt) != CTORCH_OK) return 0;
  return n;
}

static const double normal_vals[] = {-2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3};
static const double nan_vals[] = {NAN, INFINITY, -INFINITY, 0, 3e38, -1, -0.0, 1e-40};
static const int64_t int_vals[] = {-2, -1, 0, 1, 2, 3};
static const int64_t bad_ints[] = {1000, -1000, 7, -7, INT32_MAX, INT64_MIN};

/* IEEE half from a double in {0, +-0.5 .. 3, NaN, inf}; anything else rounds
 * through float bits well enough for a sweep. */
static uint16_t to_half(double v) {
  if (isnan(v)) return 0x7E00;
  if (isinf(v)) return v > 0 ? 0x7C00 : 0xFC00;
  float f = (float)v;
  uint32_t b;
  memcpy(&b, &f, 4);
  uint16_t sign = (uint16_t)((b >> 16) & 0x8000);
  int exp = (int)((b >> 23) & 0xFF) - 127 + 15;
  if ((b & 0x7FFFFFFF) == 0 || exp <= 0) return sign;
  if (exp >= 31) return sign | 0x7C00;
  return sign | (uint16_t)(exp << 10) | (uint16_t)((b >> 13) & 0x3FF);
}

static uint16_t to_bf16(double v) {
  float f = (float)v;
  uint32_t b;
  memcpy(&b, &f, 4);
  return (uint16_t)(b >> 16);
}

static void fill(char *p, int64_t n, int dt, int values, uint64_t seed) {
  for (int64_t k = 0; k < n; ++k) {
    uint64_t r = sw_mix(seed + (uint64_t)k);
    double f = values == SWV_NAN ? nan_vals[r % 8] : normal_vals[r % 10];
    int64_t i = values == SWV_BADIDX ? bad_ints[r % 6]
                : values == SWV_INDEX ? (int64_t)(r % 2)
                : values == SWV_NAN ? (int64_t[]){INT64_MAX, INT64_MIN, 0, -1}[r % 4]
                : int_vals[r % 6];
    double im = normal_vals[(r >> 8) % 10];
    switch (dt) {
      case CTORCH_BOOL: p[k] = (char)(r & 1); break;
      case CTORCH_UINT8: ((uint8_t *)p)[k] = (uint8_t)i; break;
      case CTORCH_INT8: ((int8_t *)p)[k] = (int8_t)i; break;
      case CTORCH_INT16: ((int16_t *)p)[k] = (int16_t)i; break;
      case CTORCH_INT32: ((int32_t *)p)[k] = (int32_t)i; break;
      case CTORCH_INT64: ((int64_t *)p)[k] = i; break;
      case CTORCH_FLOAT16: ((uint16_t *)p)[k] = to_half(f); break;
      case CTORCH_BFLOAT16: ((uint16_t *)p)[k] = to_bf16(f); break;
      case CTORCH_FLOAT32: ((float *)p)[k] = (float)f; break;
      case CTORCH_FLOAT64: ((double *)p)[k] = f; break;
      case CTORCH_COMPLEX32:
        ((uint16_t *)p)[2 * k] = to_half(f);
        ((uint16_t *)p)[2 * k + 1] = to_half(im);
        break;
      case CTORCH_COMPLEX64:
        ((float *)p)[2 * k] = (float)f;
        ((float *)p)[2 * k + 1] = (float)im;
        break;
      case CTORCH_COMPLEX128:
        ((double *)p)[2 * k] = f;
        ((double *)p)[2 * k + 1] = im;
        break;
      default: break;
    }
  }
}

static ctorch_tensor failed(char *note, size_t cap, const char *what) {
  snprintf(note, cap, "<%s failed: %.80s>", what, ctorch_last_error());
  return NULL;
}

int sw_cuda;

static ctorch_tensor derived(ctorch_status st, ctorch_tensor t, char *note, size_t cap, const char *what);

/* The CPU tensor t (contiguous, or a view over the guarded buffer of
 * `extent` elements with these strides) on cuda:0, the same layout: a
 * contiguous one is copied; for a view the whole buffer is, and the view is
 * re-made over the copy with ctorch_as_strided, so non-contiguous and
 * expanded (stride 0) inputs stay what they are. */
static ctorch_tensor to_cuda(ctorch_tensor t, const sw_shape *sh, const int64_t *strides, int64_t extent,
                             int contiguous, char *note, size_t cap) {
  ctorch_device cuda = {CTORCH_DEVICE_CUDA, 0};
  ctorch_tensor flat = NULL, moved = NULL, view = NULL;
  ctorch_status st;
  /* Each status is taken before its handle is read: as arguments of one
   * call, their order of evaluation would be unspecified. */
  if (contiguous) {
    st = ctorch_tensor_to_device(&moved, t, cuda);
    return derived(st, moved, note, cap, "to cuda");
  }
  const int64_t one = 1, zero = 0;
  st = ctorch_as_strided(&flat, t, &extent, 1, &one, 1, &zero);
  if (!derived(st, flat, note, cap, "flat base")) return NULL;
  st = ctorch_tensor_to_device(&moved, flat, cuda);
  if (!derived(st, moved, note, cap, "base to cuda")) return NULL;
  st = ctorch_as_strided(&view, moved, sh->sizes, (size_t)sh->ndim, strides, (size_t)sh->ndim, &zero);
  return derived(st, view, note, cap, "cuda view");
}

/* A plain strided CPU tensor over guarded memory; on cuda:0 with
 * --device cuda when on_device is set. */
static ctorch_tensor blob(const sw_shape *sh, int dt, int layout, int values, uint64_t seed, char *note,
                          size_t cap, int on_device) {
  int64_t strides[SW_MAXDIM];
  int64_t numel = 1, extent = 1;
  int nd = sh->ndim;
  for (int d = 0; d < nd; ++d) numel *= sh->sizes[d];
  if (layout == SWL_NONCONTIG && nd >= 2) {
    /* column-major: a transposed view */
    int64_t s = 1;
    for (int d = 0; d < nd; ++d) {
      strides[d] = s;
      s *= sh->sizes[d] ? sh->sizes[d] : 1;
    }
  } else {
    int64_t s = layout == SWL_NONCONTIG ? 2 : 1; /* 1-D: every other element */
    for (int d = nd - 1; d >= 0; --d) {
      strides[d] = s;
      s *= sh->sizes[d] ? sh->sizes[d] : 1;
    }
    if (layout == SWL_EXPANDED) {
      /* the first dimension longer than 1 repeats the rest (stride 0) */
      for (int d = 0; d < nd; ++d)
        if (sh->sizes[d] > 1) {
          strides[d] = 0;
          break;
        }
    }
  }
  if (numel) {
    for (int d = 0; d < nd; ++d) extent += (sh->sizes[d] - 1) * strides[d];
  } else {
    extent = 0;
  }
  size_t es = dtype_size(dt);
  size_t nbytes = (size_t)extent * es;
  slot *s = slot_new(nbytes);
  char *p = slot_place(s, nbytes);
  fill(p, extent, dt, values, seed);
  ctorch_tensor t = NULL;
  ctorch_device cpu = ctorch_device_cpu();
  if (ctorch_tensor_from_blob(&t, p, sh->sizes, strides, (size_t)nd, (ctorch_dtype)dt, cpu, tensor_release, s) !=
      CTORCH_OK) {
    slot_free(s);
    return failed(note, cap, "from_blob");
  }
  sw_own_tensor(t);
  if (sw_cuda && on_device) return to_cuda(t, sh, strides, extent, layout == SWL_CONTIG, note, cap);
  return t;
}

static ctorch_tensor derived(ctorch_status st, ctorch_tensor t, char *note, size_t cap, const char *what) {
  if (st != CTORCH_OK) return failed(note, cap, what);
  sw_own_tensor(t);
  return t;
}

static const char *dtype_name(int dt) {
  static const char *names[] = {"?", "bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32",
                                "f64", "c32", "c64", "c128", "qi8", "qu8", "qi32", "qu4x2", "qu2x4",
                                "u16", "u32", "u64", "f8e5m2", "f8e4m3fn", "f8e5m2fnuz", "f8e4m3fnuz", "f8e8m0"};
  return dt >= 0 && dt < (int)(sizeof names / sizeof *names) ? names[dt] : "?";
}

static const char *layout_name[] = {"", "noncontig", "expanded", "meta", "sparse", "quant", "zero",
                                    "conj", "neg", "grad"};
static const char *values_name[] = {"", "nan", "badidx", "idx"};

ctorch_tensor sw_make_tensor(const sw_tspec *s, uint64_t seed, char *note, size_t cap) {
  const sw_shape *sh = &sw_shapes[s->shape];
  int dt = s->dtype ? s->dtype
           : s->layout == SWL_CONJ ? CTORCH_COMPLEX64
           : s->layout == SWL_QUANT ? CTORCH_QINT8 : CTORCH_FLOAT32;
  int n = snprintf(note, cap, "%s[", dtype_name(dt));
  for (int d = 0; d < sh->ndim && n < (int)cap; ++d)
    n += snprintf(note + n, cap - (size_t)n, d ? ",%lld" : "%lld", (long long)sh->sizes[d]);
  int on_cuda = sw_cuda && s->layout != SWL_META && s->layout != SWL_SPARSE && s->layout != SWL_QUANT &&
                s->layout != SWL_ZERO;
  if (n < (int)cap)
    snprintf(note + n, cap - (size_t)n, "]%s%s%s%s%s", layout_name[s->layout][0] ? " " : "", layout_name[s->layout],
             values_name[s->values][0] ? " " : "", values_name[s->values], on_cuda ? " cuda" : "");
  ctorch_tensor base, t = NULL;
  ctorch_status st; /* taken before t is read: as arguments of one call their order is unspecified */
  switch (s->layout) {
    case SWL_CONTIG:
    case SWL_NONCONTIG:
    case SWL_EXPANDED:
      return blob(sh, dt, s->layout, s->values, seed, note, cap, 1);
    case SWL_GRAD:
      t = blob(sh, dt, SWL_CONTIG, s->values, seed, note, cap, 1);
      if (t && ctorch_tensor_set_requires_grad(t, 1) != CTORCH_OK) strncat(note, " (no grad)", cap - strlen(note) - 1);
      return t;
    case SWL_META: {
      base = blob(sh, dt, SWL_CONTIG, s->values, seed, note, cap, 0);
      if (!base) return NULL;
      ctorch_device meta = {CTORCH_DEVICE_META, -1};
      st = ctorch_tensor_to_device(&t, base, meta);
      return derived(st, t, note, cap, "to meta");
    }
    case SWL_SPARSE:
      base = blob(sh, dt, SWL_CONTIG, s->values, seed, note, cap, 0);
      if (!base) return NULL;
      st = ctorch_to_sparse_sparse_dim(&t, base, sh->ndim);
      return derived(st, t, note, cap, "to_sparse");
    case SWL_QUANT:
      base = blob(sh, CTORCH_FLOAT32, SWL_CONTIG, s->values, seed, note, cap, 0);
      if (!base) return NULL;
      st = ctorch_quantize_per_tensor(&t, base, 0.1, 0, (ctorch_dtype)dt);
      return derived(st, t, note, cap, "quantize");
    case SWL_ZERO: {
      ctorch_dtype d = (ctorch_dtype)dt;
      st = ctorch__efficientzerotensor(&t, sh->sizes, (size_t)sh->ndim, &d, NULL, NULL, NULL);
      return derived(st, t, note, cap, "zerotensor");
    }
    case SWL_CONJ:
      base = blob(sh, dt, SWL_CONTIG, s->values, seed, note, cap, 1);
      if (!base) return NULL;
      st = ctorch_conj(&t, base);
      return derived(st, t, note, cap, "conj");
    case SWL_NEG:
      base = blob(sh, dt, SWL_CONTIG, s->values, seed, note, cap, 1);
      if (!base) return NULL;
      st = ctorch__neg_view(&t, base);
      return derived(st, t, note, cap, "neg_view");
  }
  return NULL;
}
