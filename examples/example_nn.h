/*
 * What the module-based examples (lenet5.c, ddp_lenet5.c, resnet.c,
 * char_lstm.c, transformer.c) share: handle scopes, a clock, and the few steps around
 * ctorch's module layer that every training program repeats (building a
 * container from a table, the parameters as an array for the distributed
 * calls, saving and loading a state dict). Header-only; the
 * includer defines CHECK(call) (how a failed call is reported) first.
 */
#ifndef CTORCH_EXAMPLE_NN_H
#define CTORCH_EXAMPLE_NN_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ctorch.h"

#ifndef CHECK
#error "define CHECK(call) before including example_nn.h"
#endif

/* A handle scope: every tensor handle made on this thread until scope_leave
 * is freed by it, except those passed to scope_keep (docs/training.md). */
static inline ctorch_handle_scope scope_enter(void) {
  ctorch_handle_scope s = NULL;
  CHECK(ctorch_handle_scope_enter(&s));
  return s;
}
static inline void scope_leave(ctorch_handle_scope s) { CHECK(ctorch_handle_scope_leave(s)); }
/* t, kept past the innermost scope (the caller's, or out of all scopes). */
static inline ctorch_tensor scope_keep(ctorch_tensor t) {
  CHECK(ctorch_handle_scope_keep(t));
  return t;
}

static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One row of a model table: a child's name, its torch.nn class and the
 * constructor's arguments as Python writes them. */
typedef struct {
  const char *name, *kind, *args;
} nn_layer;

/* NEW module of `kind` made from `args` (ctorch_nn_new), checked. Random
 * initialisation happens here, so modules must be made in the order the
 * Python twin's __init__ makes them. */
static inline ctorch_nn_module nn_make(const char *kind, const char *args) {
  ctorch_nn_module m = NULL;
  CHECK(ctorch_nn_new(&m, kind, args));
  return m;
}

/* nn_make with the arguments formatted as printf does ("%d, %d, 3"):
 * ctorch_nn_newv (no fixed buffer: over-long text is refused, not cut). */
static inline ctorch_nn_module nn_makef(const char *kind, const char *fmt, ...) {
  ctorch_nn_module m = NULL;
  va_list ap;
  va_start(ap, fmt);
  CHECK(ctorch_nn_newv(&m, kind, fmt, ap));
  va_end(ap);
  return m;
}

/* Registers `child` in `parent` under `name` (NULL: appended to a Sequential
 * or ModuleList as "0", "1", ...) and drops the caller's handle: the parent
 * keeps its own reference. */
static inline void nn_add(ctorch_nn_module parent, const char *name, ctorch_nn_module child) {
  if (name) CHECK(ctorch_nn_module_register_module(parent, name, child));
  else CHECK(ctorch_nn_module_append(parent, child));
  ctorch_nn_module_free(child);
}

/* NEW Sequential of the n layers of `table`, made (and so initialised) in
 * table order. Named children give Python's nn.Sequential(OrderedDict(...))
 * and its state-dict keys ("conv1.weight"); layers without parameters (ReLU,
 * pools) add no keys, so the keys can equal those of a Python class whose
 * forward calls F.relu between its named layers. */
static inline ctorch_nn_module nn_sequential(const nn_layer *table, size_t n) {
  ctorch_nn_module seq = nn_make("Sequential", "");
  size_t i;
  for (i = 0; i < n; ++i) nn_add(seq, table[i].name, nn_make(table[i].kind, table[i].args));
  return seq;
}

/* The module's parameters (Python's model.parameters() order) as a malloc'd
 * array of NEW handles, *n of them, for the calls that take an array
 * (ctorch_dist_broadcast_parameters); optimizers and gradient clipping take
 * the module itself (ctorch_optimizer_new_from_module,
 * ctorch_nn_module_clip_grad_norm_). Free with nn_free_params. */
static inline ctorch_tensor *nn_params(ctorch_nn_module m, size_t *n) {
  ctorch_tensor_list list = NULL;
  ctorch_tensor *p;
  size_t i;
  CHECK(ctorch_nn_module_parameters(&list, m));
  CHECK(ctorch_tensor_list_size(n, list));
  p = (ctorch_tensor *)calloc(*n ? *n : 1, sizeof *p);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  for (i = 0; i < *n; ++i) CHECK(ctorch_tensor_list_get(&p[i], list, i));
  ctorch_tensor_list_free(list);
  return p;
}
static inline void nn_free_params(ctorch_tensor *p, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) ctorch_tensor_free(p[i]);
  free(p);
}

/* torch.save(model.state_dict(), path): Python's keys, so the twin loads the
 * file with load_state_dict(strict=True). The module should be on the CPU,
 * for a file any machine can read. */
static inline void nn_save(ctorch_nn_module m, const char *path) {
  ctorch_tensor_dict sd = NULL;
  CHECK(ctorch_nn_module_state_dict(&sd, m));
  CHECK(ctorch_tensor_dict_save(path, sd));
  ctorch_tensor_dict_free(sd);
}

/* model.load_state_dict(torch.load(path)), strict: every key must be there
 * with its shape (the error lists each one that is not). */
static inline void nn_load(ctorch_nn_module m, const char *path) {
  ctorch_tensor_dict sd = NULL;
  CHECK(ctorch_load_dict(&sd, path));
  CHECK(ctorch_nn_module_load_state_dict(NULL, m, sd, 1));
  ctorch_tensor_dict_free(sd);
}

#endif
