/* Shared between the sweep runtime's files (not used by sweep_ops.c). */
#ifndef CTORCH_SWEEP_INTERNAL_H
#define CTORCH_SWEEP_INTERNAL_H

#include "sweep.h"

/* ---- tensor specifications (sweep_tensors.c) -------------------------- */
enum sw_layout_kind {
  SWL_CONTIG, SWL_NONCONTIG, SWL_EXPANDED, SWL_META, SWL_SPARSE, SWL_QUANT, SWL_ZERO,
  SWL_CONJ, SWL_NEG, SWL_GRAD
};
enum sw_values { SWV_NORMAL, SWV_NAN, SWV_BADIDX, SWV_INDEX };

#define SW_MAXDIM 8
typedef struct sw_shape {
  int ndim;
  int64_t sizes[SW_MAXDIM];
} sw_shape;

typedef struct sw_tspec {
  int shape;   /* index into sw_shapes */
  int dtype;   /* ctorch_dtype; 0 = by the argument's hint */
  int layout;  /* enum sw_layout_kind */
  int values;  /* enum sw_values */
} sw_tspec;

/* --device cuda (sweep_runner.c sets it in the children only): every strided
 * tensor input is made on the CPU as without it and then put on cuda:0
 * (views re-created there over a moved base buffer); meta, sparse,
 * quantized and zero tensors stay as they are. The default of a device
 * argument becomes cuda:0 and a generator is cuda:0's. */
extern int sw_cuda;

extern const sw_shape sw_shapes[];
extern const int sw_n_shapes;

/* Makes a tensor (registered to be freed at the recipe's end); NULL and a
 * note if it could not be built (the recipe then passes NULL: still a
 * valid call to check). */
ctorch_tensor sw_make_tensor(const sw_tspec *s, uint64_t seed, char *note, size_t note_cap);
/* Registers a handle the recipe owns. */
void sw_own_tensor(ctorch_tensor t);
void sw_own_generator(ctorch_generator g);
/* Frees every handle and list buffer of the recipe. */
void sw_free_owned(void);
/* Guarded copy of n bytes (freed at the recipe's end). */
void *sw_guarded_copy(const void *src, size_t n);
/* Guarded C string (its NUL is the last byte before the guard page). */
const char *sw_guarded_str(const char *s);

/* ---- the current recipe (sweep_inputs.c) ------------------------------ */
const sw_op *sw_current_op(void);
/* Handles made for argument i (tensors, or a list's elements). */
int sw_arg_tensors(int i, ctorch_tensor *out, int cap);

/* Helpers of the argument makers, by argument position. */
int sw_pick(int i); /* variant of argument i in this recipe, or -1 for its base value */
void sw_note(int i, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *sw_dflt(int i);
int sw_dflt_none(int i);
int sw_name_is(int i, const char *s);
int sw_name_has(int i, const char *s);
int sw_base_absent(int i); /* an optional without a value in this recipe's base */
int sw_theme_opts(void);
int sw_parse_int(const char *s, int64_t *out);
int sw_parse_list(const char *s, double *out, int cap);
int sw_value_variants(int kind); /* sweep_values.c */

/* ---- output checks (sweep_check.c) ------------------------------------ */
void sw_check_reset(void);
void sw_violation(const char *fmt, ...);
void sw_inspect(ctorch_tensor t, const char *what);

uint64_t sw_mix(uint64_t x);
uint64_t sw_hash_str(const char *s);
/* Sends the recipe's argument text to the parent (sweep_runner.c). */
void sw_report_arguments(void);

#endif
