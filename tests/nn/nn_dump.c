/*
 * The C side of the module equality harness (tests/nn/nn_vs_torch.py holds
 * the format of the case files and drives both sides).
 *
 *   nn_dump run  CASES OUTDIR   every case of CASES, as the procedure says:
 *       seed 1234, ctorch_nn_new, train/eval, seed 4321, the inputs,
 *       forward, loss = sum of (o * o).sum() over floating outputs,
 *       backward; writes OUTDIR/<id>.c.safetensors with the tensors
 *       init.<key> (state dict after construction), in.<i>, out.<i>,
 *       grad.<param>, igrad.<i>, post.<key> (state dict after forward) and
 *       the metadata state_keys, param_names (one per line), outputs (one
 *       letter per output: T tensor, N None), repr, error (stage: message,
 *       "" when all went well).
 *   nn_dump load CASES OUTDIR   for each case with OUTDIR/<id>.py_sd.safetensors
 *       (Python's state dict): seed 1234, a fresh module, train/eval, that
 *       dict loaded with strict=1, seed 4321, the inputs, forward; writes
 *       OUTDIR/<id>.c_load.safetensors (out.<i>, post.<key>, metadata
 *       outputs and error).
 * Exit status 0 when every case was written (a case's own failure is in
 * its file, for Python to judge), 2 on a usage or file error.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

#define MAX_IO 16

/* ---- a list of named tensors to write, and the metadata -------------- */

typedef struct {
  char **names;
  ctorch_tensor *tensors;
  size_t n, cap;
} named_list;

static void nl_add(named_list *l, const char *prefix, const char *name, ctorch_tensor t) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 32;
    l->names = realloc(l->names, l->cap * sizeof *l->names);
    l->tensors = realloc(l->tensors, l->cap * sizeof *l->tensors);
    if (!l->names || !l->tensors) abort();
  }
  size_t len = strlen(prefix) + strlen(name) + 1;
  l->names[l->n] = malloc(len);
  if (!l->names[l->n]) abort();
  snprintf(l->names[l->n], len, "%s%s", prefix, name);
  l->tensors[l->n++] = t; /* owned by the list */
}

static void nl_free(named_list *l) {
  for (size_t i = 0; i < l->n; ++i) {
    free(l->names[i]);
    ctorch_tensor_free(l->tensors[i]);
  }
  free(l->names);
  free(l->tensors);
  memset(l, 0, sizeof *l);
}

/* A growing string (metadata values). */
typedef struct {
  char *s;
  size_t n, cap;
} str;

static void str_add(str *b, const char *t) {
  size_t k = strlen(t);
  if (b->n + k + 1 > b->cap) {
    b->cap = (b->n + k + 1) * 2;
    b->s = realloc(b->s, b->cap);
    if (!b->s) abort();
  }
  memcpy(b->s + b->n, t, k + 1);
  b->n += k;
}
static const char *str_get(str *b) { return b->s ? b->s : ""; }

/* ---- one case ---------------------------------------------------------- */

typedef struct {
  char *fields[7]; /* id, kind, args, inputs, kwargs, mode, tol */
} case_line;

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) ++s;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
  return s;
}

/* Splits "a | b | ..." in place; 1 when there are exactly 7 fields. */
static int parse_case(char *line, case_line *c) {
  int k = 0;
  char *p = line;
  while (k < 7) {
    char *sep = strstr(p, " | ");
    c->fields[k++] = p;
    if (!sep) break;
    *sep = 0;
    p = sep + 3;
  }
  if (k != 7) return 0;
  for (int i = 0; i < 7; ++i) c->fields[i] = trim(c->fields[i]);
  return 1;
}

static int is_floating(ctorch_tensor t) {
  ctorch_dtype d;
  if (ctorch_tensor_dtype(&d, t) != CTORCH_OK) return 0;
  return d == CTORCH_FLOAT16 || d == CTORCH_BFLOAT16 || d == CTORCH_FLOAT32 || d == CTORCH_FLOAT64;
}

/* Builds the inputs of a case from its spec (after seed 4321), in order:
 * f32:2x3 randn float32 requiring grad, f64:... float64, i64:4x5<10
 * randint(0, 10), b:4x5 randn(...) > 0, lit:0,2,5 an int64 vector of these
 * values (no draw), none. Returns the count, or -1 with *err set. */
static int make_inputs(const char *spec, ctorch_tensor *in, char *err, size_t errlen) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", spec);
  int n = 0;
  for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
    tok = trim(tok);
    if (n == MAX_IO) {
      snprintf(err, errlen, "too many inputs");
      return -1;
    }
    if (strcmp(tok, "none") == 0) {
      in[n++] = NULL;
      continue;
    }
    if (strncmp(tok, "lit:", 4) == 0) {
      int64_t v[64];
      int64_t len = 0;
      for (char *d = tok + 4; *d && len < 64;) {
        v[len++] = strtoll(d, &d, 10);
        if (*d == ',') ++d;
      }
      if (ctorch_tensor_from_data(&in[n], v, (size_t)len * sizeof *v, &len, 1, CTORCH_INT64) != CTORCH_OK) {
        snprintf(err, errlen, "input %d: %s", n, ctorch_last_error());
        return -1;
      }
      ++n;
      continue;
    }
    char *colon = strchr(tok, ':');
    if (!colon) {
      snprintf(err, errlen, "bad input spec '%s'", tok);
      return -1;
    }
    *colon = 0;
    const char *type = tok;
    char *dims = colon + 1;
    int64_t high = 0;
    char *lt = strchr(dims, '<');
    if (lt) {
      *lt = 0;
      high = strtoll(lt + 1, NULL, 10);
    }
    int64_t size[8];
    size_t nd = 0;
    for (char *d = dims; *d && nd < 8;) {
      size[nd++] = strtoll(d, &d, 10);
      if (*d == 'x') ++d;
    }
    ctorch_tensor t = NULL;
    ctorch_status st;
    if (strcmp(type, "f32") == 0 || strcmp(type, "f64") == 0) {
      ctorch_dtype dt = type[1] == '3' ? CTORCH_FLOAT32 : CTORCH_FLOAT64;
      st = ctorch_randn(&t, size, nd, &dt, NULL, NULL, NULL);
      if (st == CTORCH_OK) st = ctorch_tensor_set_requires_grad(t, 1);
    } else if (strcmp(type, "i64") == 0) {
      ctorch_dtype i64 = CTORCH_INT64; /* libtorch C++ randint defaults to float, Python to int64 */
      st = ctorch_randint_low(&t, 0, high, size, nd, &i64, NULL, NULL, NULL);
    } else if (strcmp(type, "b") == 0) {
      ctorch_tensor r = NULL;
      st = ctorch_randn(&r, size, nd, NULL, NULL, NULL, NULL);
      if (st == CTORCH_OK) st = ctorch_gt_Scalar(&t, r, ctorch_scalar_float(0.0));
      ctorch_tensor_free(r);
    } else {
      snprintf(err, errlen, "unknown input type '%s'", type);
      return -1;
    }
    if (st != CTORCH_OK) {
      snprintf(err, errlen, "input %d: %s", n, ctorch_last_error());
      return -1;
    }
    in[n++] = t;
  }
  return n;
}

/* state_dict entries, copied (the module's own change after forward), under prefix. */
static int add_state(named_list *l, ctorch_nn_module m, const char *prefix, str *keys) {
  ctorch_tensor_dict sd = NULL;
  if (ctorch_nn_module_state_dict(&sd, m) != CTORCH_OK) return 0;
  size_t n = 0;
  ctorch_tensor_dict_size(&n, sd);
  for (size_t i = 0; i < n; ++i) {
    const char *k = NULL;
    ctorch_tensor t = NULL, c = NULL;
    ctorch_tensor_dict_key(&k, sd, i);
    ctorch_tensor_dict_get(&t, sd, i);
    if (ctorch_clone(&c, t, NULL) != CTORCH_OK) {
      ctorch_tensor_free(t);
      ctorch_tensor_dict_free(sd);
      return 0;
    }
    ctorch_tensor_free(t);
    nl_add(l, prefix, k, c);
    if (keys) {
      str_add(keys, k);
      str_add(keys, "\n");
    }
  }
  ctorch_tensor_dict_free(sd);
  return 1;
}

/* A gradient as a dense tensor (Embedding(sparse=True) gives a sparse one;
 * safetensors holds dense tensors only): zeros + grad is dense. */
static ctorch_tensor dense(ctorch_tensor g) {
  ctorch_layout lay = CTORCH_LAYOUT_STRIDED;
  ctorch_tensor_layout(&lay, g);
  if (lay == CTORCH_LAYOUT_STRIDED) return g;
  ctorch_tensor z = NULL, d = NULL;
  ctorch_layout strided = CTORCH_LAYOUT_STRIDED;
  if (ctorch_zeros_like(&z, g, NULL, &strided, NULL, NULL, NULL) == CTORCH_OK)
    ctorch_add_Tensor(&d, z, g, ctorch_scalar_int(1));
  ctorch_tensor_free(z);
  ctorch_tensor_free(g);
  return d;
}

typedef struct {
  named_list out;
  str state_keys, param_names, outputs, repr, error;
} result;

static void set_error(result *r, const char *stage, const char *msg) {
  if (r->error.n) return; /* the first failure is the one to report */
  str_add(&r->error, stage);
  str_add(&r->error, ": ");
  str_add(&r->error, msg);
}

/* Runs one case. load_path: a state dict to load before forward (the
 * "load" pass), or NULL (the "run" pass, which records everything). */
static void run_case(const case_line *c, const char *load_path, result *r) {
  const char *id = c->fields[0], *kind = c->fields[1];
  const char *args = strcmp(c->fields[2], "-") == 0 ? "" : c->fields[2];
  const char *kwargs = strcmp(c->fields[4], "-") == 0 ? "" : c->fields[4];
  int train = strcmp(c->fields[5], "train") == 0;
  int full = load_path == NULL;
  ctorch_nn_module m = NULL;
  ctorch_tensor in[MAX_IO] = {0}, call_in[MAX_IO] = {0}, outs[MAX_IO] = {0};
  size_t n_out = 0;
  int n_in = 0;
  char err[512] = "";
  (void)id;

  ctorch_manual_seed(1234);
  if (ctorch_nn_new(&m, kind, args) != CTORCH_OK) {
    set_error(r, "new", ctorch_last_error());
    return;
  }
  if (ctorch_nn_module_train(m, train) != CTORCH_OK) set_error(r, "train", ctorch_last_error());
  if (full) {
    char *text = NULL;
    if (ctorch_nn_module_repr(&text, m) == CTORCH_OK) {
      str_add(&r->repr, text);
      ctorch_string_free(text);
    } else {
      set_error(r, "repr", ctorch_last_error());
    }
    if (!add_state(&r->out, m, "init.", &r->state_keys)) set_error(r, "state_dict", ctorch_last_error());
    ctorch_tensor_dict np = NULL;
    if (ctorch_nn_module_named_parameters(&np, m, 1) == CTORCH_OK) {
      size_t n = 0;
      ctorch_tensor_dict_size(&n, np);
      for (size_t i = 0; i < n; ++i) {
        const char *k = NULL;
        ctorch_tensor_dict_key(&k, np, i);
        str_add(&r->param_names, k);
        str_add(&r->param_names, "\n");
      }
      ctorch_tensor_dict_free(np);
    } else {
      set_error(r, "named_parameters", ctorch_last_error());
    }
  } else {
    ctorch_tensor_dict sd = NULL;
    char *report = NULL;
    if (ctorch_safetensors_load(&sd, load_path, NULL) != CTORCH_OK) {
      set_error(r, "load file", ctorch_last_error());
    } else if (ctorch_nn_module_load_state_dict(&report, m, sd, 1) != CTORCH_OK) {
      set_error(r, "load_state_dict", ctorch_last_error());
    }
    ctorch_string_free(report);
    ctorch_tensor_dict_free(sd);
  }
  if (r->error.n) goto done;

  ctorch_manual_seed(4321);
  n_in = make_inputs(c->fields[3], in, err, sizeof err);
  if (n_in < 0) {
    set_error(r, "inputs", err);
    n_in = 0;
    goto done;
  }
  /* An in-place module would write into a leaf that requires grad, which
   * autograd refuses (in Python too): both sides pass a copy of each
   * floating input, and the input grads are the leaves'. */
  int inplace = strstr(args, "inplace=True") != NULL;
  for (int i = 0; i < n_in; ++i) {
    call_in[i] = NULL;
    if (in[i] && inplace && is_floating(in[i])) {
      if (ctorch_clone(&call_in[i], in[i], NULL) != CTORCH_OK) set_error(r, "clone", ctorch_last_error());
    } else if (in[i]) {
      call_in[i] = in[i];
    }
  }
  if (full)
    for (int i = 0; i < n_in; ++i) {
      char k[16];
      snprintf(k, sizeof k, "%d", i);
      ctorch_tensor d = NULL;
      if (in[i] && ctorch_tensor_detach(&d, in[i]) == CTORCH_OK) nl_add(&r->out, "in.", k, d);
    }
  if (r->error.n) goto done;
  if (ctorch_nn_module_forward_n(m, call_in, (size_t)n_in, kwargs, outs, MAX_IO, &n_out) != CTORCH_OK) {
    set_error(r, "forward", ctorch_last_error());
    n_out = 0;
    goto done;
  }
  for (size_t i = 0; i < n_out; ++i) {
    str_add(&r->outputs, outs[i] ? "T" : "N");
    if (!outs[i]) continue;
    char k[16];
    snprintf(k, sizeof k, "%zu", i);
    ctorch_tensor d = NULL;
    if (ctorch_tensor_detach(&d, outs[i]) == CTORCH_OK) {
      ctorch_tensor c2 = NULL;
      ctorch_clone(&c2, d, NULL); /* an output may alias an input written in place */
      ctorch_tensor_free(d);
      nl_add(&r->out, "out.", k, c2);
    }
  }
  if (full) {
    /* loss = sum over floating outputs of (o * o).sum(), in output order. */
    ctorch_tensor loss = NULL;
    for (size_t i = 0; i < n_out; ++i) {
      if (!outs[i] || !is_floating(outs[i])) continue;
      ctorch_tensor sq = NULL, s = NULL, acc = NULL;
      ctorch_mul_Tensor(&sq, outs[i], outs[i]);
      ctorch_sum(&s, sq, NULL);
      ctorch_tensor_free(sq);
      if (!loss) {
        loss = s;
      } else {
        ctorch_add_Tensor(&acc, loss, s, ctorch_scalar_int(1));
        ctorch_tensor_free(loss);
        ctorch_tensor_free(s);
        loss = acc;
      }
    }
    int rg = 0;
    if (loss) ctorch_tensor_requires_grad(&rg, loss);
    if (loss && rg && ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0) != CTORCH_OK)
      set_error(r, "backward", ctorch_last_error());
    ctorch_tensor_free(loss);
    ctorch_tensor_dict np = NULL;
    if (ctorch_nn_module_named_parameters(&np, m, 1) == CTORCH_OK) {
      size_t n = 0;
      ctorch_tensor_dict_size(&n, np);
      for (size_t i = 0; i < n; ++i) {
        const char *k = NULL;
        ctorch_tensor p = NULL, g = NULL;
        ctorch_tensor_dict_key(&k, np, i);
        ctorch_tensor_dict_get(&p, np, i);
        if (ctorch_tensor_grad(&g, p) == CTORCH_OK && g) nl_add(&r->out, "grad.", k, dense(g));
        ctorch_tensor_free(p);
      }
      ctorch_tensor_dict_free(np);
    }
    for (int i = 0; i < n_in; ++i) {
      ctorch_tensor g = NULL;
      char k[16];
      snprintf(k, sizeof k, "%d", i);
      if (in[i] && is_floating(in[i]) && ctorch_tensor_grad(&g, in[i]) == CTORCH_OK && g) nl_add(&r->out, "igrad.", k, g);
    }
  }
  if (!add_state(&r->out, m, "post.", NULL)) set_error(r, "state_dict", ctorch_last_error());

done:
  for (size_t i = 0; i < n_out; ++i) ctorch_tensor_free(outs[i]);
  for (int i = 0; i < n_in; ++i) {
    if (call_in[i] != in[i]) ctorch_tensor_free(call_in[i]);
    ctorch_tensor_free(in[i]);
  }
  ctorch_nn_module_free(m);
}

static int write_result(const char *path, result *r, int full) {
  const char *keys[5] = {"outputs", "error", "state_keys", "param_names", "repr"};
  const char *vals[5] = {str_get(&r->outputs), str_get(&r->error), str_get(&r->state_keys),
                         str_get(&r->param_names), str_get(&r->repr)};
  if (ctorch_safetensors_save(path, (const char *const *)r->out.names, r->out.tensors, r->out.n, keys, vals,
                              full ? 5 : 2) != CTORCH_OK) {
    fprintf(stderr, "nn_dump: %s: %s\n", path, ctorch_last_error());
    return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 4 || (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "load") != 0)) {
    fprintf(stderr, "usage: nn_dump run|load CASES OUTDIR\n");
    return 2;
  }
  int full = strcmp(argv[1], "run") == 0;
  FILE *f = fopen(argv[2], "r");
  if (!f) {
    perror(argv[2]);
    return 2;
  }
  char line[4096];
  int rc = 0;
  while (fgets(line, sizeof line, f)) {
    char *l = trim(line);
    if (!*l || *l == '#') continue;
    case_line c;
    if (!parse_case(l, &c)) {
      fprintf(stderr, "nn_dump: %s: not 7 fields: %s\n", argv[2], l);
      rc = 2;
      continue;
    }
    char in_path[1024], out_path[1024];
    snprintf(in_path, sizeof in_path, "%s/%s.py_sd.safetensors", argv[3], c.fields[0]);
    snprintf(out_path, sizeof out_path, "%s/%s.%s.safetensors", argv[3], c.fields[0], full ? "c" : "c_load");
    if (!full) {
      FILE *probe = fopen(in_path, "rb");
      if (!probe) continue;
      fclose(probe);
    }
    result r;
    memset(&r, 0, sizeof r);
    run_case(&c, full ? NULL : in_path, &r);
    if (!write_result(out_path, &r, full)) rc = 2;
    nl_free(&r.out);
    free(r.state_keys.s);
    free(r.param_names.s);
    free(r.outputs.s);
    free(r.repr.s);
    free(r.error.s);
  }
  fclose(f);
  return rc;
}
