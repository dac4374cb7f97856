/* Sweep runtime: what is checked around each call.
 *
 * The contract (include/ctorch.h): the status is one of the enum's values;
 * a failure names the function first in the last error and leaves every
 * out-handle NULL. Every tensor a successful call returns (or mutates) is
 * then used the way a binding would: its metadata is read, it is exported
 * through DLPack and every element is read through the exported strides
 * (in this instrumented program, so a tensor that claims more memory than
 * it owns is an ASan report here; a CUDA one is first copied to the CPU),
 * and small ones are printed. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

#include "sweep_internal.h"

static char violation[512];

void sw_check_reset(void) { violation[0] = 0; }

const char *sw_contract_violation(void) { return violation[0] ? violation : NULL; }

void sw_violation(const char *fmt, ...) {
  if (violation[0]) return; /* the first one explains the rest */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(violation, sizeof violation, fmt, ap);
  va_end(ap);
}

void sw_before_call(void) { sw_report_arguments(); }

void sw_after_call(ctorch_status st) {
  const sw_op *op = sw_current_op();
  /* CTORCH_BUSY is a status, but no operator takes an exclusive handle: from one it is a
   * broken contract, like a number past the last status. */
  if ((unsigned)st > (unsigned)CTORCH_UNKNOWN) {
    sw_violation(st == CTORCH_BUSY ? "status %d (CTORCH_BUSY) from an operator, which takes no exclusive handle"
                                   : "status %d is not a ctorch_status", (int)st);
    return;
  }
  if (st != CTORCH_OK) {
    const char *m = ctorch_last_error();
    const char *fn = sw_boxed ? "ctorch_op_call" : op->c_name; /* --boxed: the by-name entry point */
    size_t n = strlen(fn);
    if (strncmp(m, fn, n) != 0 || m[n] != ':')
      sw_violation("failure message does not start with '%s:': %.200s", fn, m);
  }
}

static volatile uint64_t sink;

/* Reads every element of a strided CPU tensor through DLPack. */
static void read_through_dlpack(ctorch_tensor t, const char *what) {
  struct DLManagedTensor *m = NULL;
  if (ctorch_to_dlpack(&m, t) != CTORCH_OK) return; /* refused: fine */
  if (!m) {
    sw_violation("%s: to_dlpack succeeded with a NULL result", what);
    return;
  }
  const DLTensor *d = &m->dl_tensor;
  int64_t numel = 1;
  for (int k = 0; k < d->ndim; ++k) {
    if (d->shape[k] < 0) sw_violation("%s: DLPack shape[%d] is %lld", what, k, (long long)d->shape[k]);
    numel *= d->shape[k];
  }
  size_t es = (size_t)d->dtype.bits / 8;
  if (numel > 0 && !d->data) {
    sw_violation("%s: to_dlpack exported NULL data for %lld elements", what, (long long)numel);
  } else if (numel > 0 && numel <= (1 << 20) && d->ndim <= 16) {
    int64_t idx[16] = {0};
    const unsigned char *base = (const unsigned char *)d->data + d->byte_offset;
    uint64_t acc = 0;
    for (int64_t e = 0; e < numel; ++e) {
      int64_t off = 0;
      for (int k = 0; k < d->ndim; ++k) off += idx[k] * (d->strides ? d->strides[k] : 0);
      if (!d->strides) off = e;
      const unsigned char *p = base + off * (int64_t)es;
      for (size_t b = 0; b < es; ++b) acc += p[b];
      for (int k = d->ndim - 1; k >= 0; --k) {
        if (++idx[k] < d->shape[k]) break;
        idx[k] = 0;
      }
    }
    sink += acc;
  }
  m->deleter(m);
}

void sw_inspect(ctorch_tensor t, const char *what) {
  int64_t dim = 0, numel = 0, sizes[64];
  ctorch_layout layout;
  ctorch_device dev;
  if (ctorch_tensor_dim(&dim, t) != CTORCH_OK) {
    sw_violation("%s: ctorch_tensor_dim failed: %.200s", what, ctorch_last_error());
    return;
  }
  if (dim < 0 || dim > 64) {
    sw_violation("%s: dim %lld", what, (long long)dim);
    return;
  }
  if (ctorch_tensor_sizes(sizes, 64, t) == CTORCH_OK)
    for (int64_t k = 0; k < dim; ++k)
      if (sizes[k] < 0) sw_violation("%s: size[%lld] is %lld", what, (long long)k, (long long)sizes[k]);
  if (ctorch_tensor_numel(&numel, t) != CTORCH_OK || ctorch_tensor_layout(&layout, t) != CTORCH_OK ||
      ctorch_tensor_device(&dev, t) != CTORCH_OK)
    return;
  if (layout == CTORCH_LAYOUT_STRIDED && dev.type == CTORCH_DEVICE_CPU) read_through_dlpack(t, what);
  if (layout == CTORCH_LAYOUT_STRIDED && dev.type == CTORCH_DEVICE_CUDA) {
    /* --device cuda: a copy on the CPU is read the same way. A copy that
     * fails leaves no violation here: a CUDA error it hit is sticky, and the
     * driver (sweep_main.c) sees it when it synchronises after the call. */
    ctorch_tensor c = NULL;
    if (ctorch_tensor_to_device(&c, t, ctorch_device_cpu()) == CTORCH_OK) {
      read_through_dlpack(c, what);
      ctorch_tensor_free(c);
    }
  }
  if (numel <= 64) {
    char *s = NULL;
    if (ctorch_tensor_to_string(&s, t) == CTORCH_OK) ctorch_string_free(s);
  }
}

/* --nulls FILE (sweep_main.c puts it in CTORCH_SWEEP_NULLS for the
 * children): one line per result that came back NULL (an undefined tensor)
 * with CTORCH_OK, "c_name<TAB>result index<TAB>element index or -1", appended
 * with one write (atomic for lines this short), so every child can add to
 * it. bindings-gen/tests/check_nulls.py compares it with api.json's
 * null_result flags. */
static void note_null(int ret, long element) {
  const char *path = getenv("CTORCH_SWEEP_NULLS");
  if (!path || !*path) return;
  const sw_op *op = sw_current_op();
  char line[256];
  int n = snprintf(line, sizeof line, "%s\t%d\t%ld\n", op ? op->c_name : "?", ret, element);
  if (n <= 0 || n >= (int)sizeof line) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  setvbuf(f, NULL, _IONBF, 0); /* one write(2) per line */
  fputs(line, f);
  fclose(f);
}

void sw_out_tensor(ctorch_status st, ctorch_tensor t, int ret) {
  if (st != CTORCH_OK) {
    if (t) sw_violation("tensor output not NULL after a failure");
    return;
  }
  if (!t) {
    note_null(ret, -1);
    return;
  }
  sw_own_tensor(t);
  sw_inspect(t, "result");
}

void sw_out_list(ctorch_status st, ctorch_tensor_list l, int ret) {
  if (st != CTORCH_OK) {
    if (l) sw_violation("list output not NULL after a failure");
    return;
  }
  if (!l) {
    sw_violation("list output NULL after success");
    return;
  }
  size_t n = 0;
  if (ctorch_tensor_list_size(&n, l) == CTORCH_OK) {
    for (size_t k = 0; k < n && k < 64; ++k) {
      ctorch_tensor t = NULL;
      if (ctorch_tensor_list_get(&t, l, k) != CTORCH_OK) continue;
      if (!t) {
        note_null(ret, (long)k);
        continue;
      }
      sw_own_tensor(t);
      sw_inspect(t, "list element");
    }
  }
  ctorch_tensor_list_free(l);
}

void sw_out_mutated(ctorch_status st, int i) {
  if (st != CTORCH_OK) return;
  ctorch_tensor t[8];
  int n = sw_arg_tensors(i, t, 8);
  for (int k = 0; k < n; ++k) sw_inspect(t[k], "mutated argument");
}
