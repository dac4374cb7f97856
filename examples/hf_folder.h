/*
 * What bert.c and generate.c share to run a Hugging Face `transformers`
 * model saved with save_pretrained (a folder holding config.json and
 * model.safetensors):
 *
 *   hf_config_read      DIR/config.json's text, for hf_number and hf_is
 *   hf_config_fail      "PROG: DIR/config.json: why", exit 1
 *   hf_load_weights     DIR/model.safetensors into a module tree that carries
 *                       the model's transformers names, strictly
 *   box, split_heads    two pieces both module trees and forwards use
 *
 * Every message starts with the program's name and names the file, and
 * where a key is at fault the key (a strict load lists each missing and
 * unexpected one). Header-only; the includer defines CHECK(call) first.
 */
#ifndef CTORCH_HF_FOLDER_H
#define CTORCH_HF_FOLDER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

#ifndef CHECK
#error "define CHECK(call) before including hf_folder.h"
#endif

/* A folder's config.json, read whole. */
typedef struct {
  const char *prog; /* first in every message ("bert") */
  char path[4096];  /* DIR/config.json, named in every message */
  char *text;       /* its text; NULL after hf_config_free */
} hf_config;

/* Reads DIR/config.json (at most 1 MiB: a config, not weights) or exits 1. */
static inline void hf_config_read(hf_config *c, const char *prog, const char *dir) {
  long n;
  FILE *f;
  c->prog = prog, c->text = NULL;
  snprintf(c->path, sizeof c->path, "%s/config.json", dir);
  if (!(f = fopen(c->path, "rb")) || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || n > (1 << 20) ||
      fseek(f, 0, SEEK_SET) || !(c->text = (char *)calloc((size_t)n + 1, 1)) ||
      fread(c->text, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "%s: cannot read %s (a save_pretrained folder's config.json, at most 1 MiB)\n", prog, c->path);
    exit(1);
  }
  fclose(f);
}

static inline void hf_config_free(hf_config *c) {
  free(c->text);
  c->text = NULL;
}

/* "PROG: DIR/config.json: why" on stderr, exit 1: a config the program
 * does not compute (refused, not run wrong). */
static inline void hf_config_fail(const hf_config *c, const char *why) {
  fprintf(stderr, "%s: %s: %s\n", c->prog, c->path, why);
  exit(1);
}

/* Where the value of key `name` starts (after the ':' and any whitespace),
 * or NULL. A key is a quoted name followed by ':'; config.json is flat for
 * every key these programs read (a tiny reader, not a JSON parser). */
static inline const char *hf_value(const hf_config *c, const char *name) {
  char quoted[64];
  const char *p = c->text;
  snprintf(quoted, sizeof quoted, "\"%s\"", name);
  while ((p = strstr(p, quoted)) != NULL) {
    p += strlen(quoted);
    p += strspn(p, " \t\r\n");
    if (*p == ':') return p + 1 + strspn(p + 1, " \t\r\n");
  }
  return NULL;
}

/* The number at key `name`, or dflt when it is absent or not a number
 * (null: transformers' "use the default" too). */
static inline double hf_number(const hf_config *c, const char *name, double dflt) {
  const char *v = hf_value(c, name);
  char *end;
  double x = v ? strtod(v, &end) : dflt;
  return v && end != v ? x : dflt;
}

/* Whether key `name` is absent (the config class's default then) or its
 * value starts with the JSON text `want`: "true", or a string with its
 * quotes ("\"gelu\"", so that "gelu_new" is not "gelu"). */
static inline int hf_is(const hf_config *c, const char *name, const char *want) {
  const char *v = hf_value(c, name);
  return !v || !strncmp(v, want, strlen(want));
}

/* DIR/model.safetensors loaded into m with load_state_dict(strict=True):
 * every key of m must be in the file with its shape and no other, as the
 * transformers class loads it. Exits 1 naming the file, and the keys that
 * do not fit, when it cannot. */
static inline void hf_load_weights(ctorch_nn_module m, const char *prog, const char *dir) {
  char path[4096];
  ctorch_tensor_dict weights = NULL;
  ctorch_status st;
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  st = ctorch_safetensors_load(&weights, path, NULL);
  if (!st) st = ctorch_nn_module_load_state_dict(NULL, m, weights, 1);
  if (st) {
    fprintf(stderr, "%s: cannot load %s: %s: %s\n", prog, path, ctorch_status_name(st), ctorch_last_error());
    exit(1);
  }
  ctorch_tensor_dict_free(weights);
}

/* A module that only holds children (BertLayer, GPT2Block, ...): its type
 * name and its children's names give the state dict transformers' keys.
 * (bench/compare/model_bench.c, which includes bert.c, uses it too.) */
static inline ctorch_nn_module box(const char *type) {
  ctorch_nn_module m = NULL;
  CHECK(ctorch_nn_custom_new(&m, type, NULL, NULL, NULL));
  return m;
}

/* [B, L, H] -> [B, heads, L, H / heads] (shape4): transformers' view +
 * transpose(1, 2) of the query, key and value before attention. */
static inline ctorch_status split_heads(ctorch_tensor *out, ctorch_tensor x, const int64_t *shape4) {
  static const int64_t perm[4] = {0, 2, 1, 3};
  ctorch_status st = ctorch_view(out, x, shape4, 4);
  return st ? st : ctorch_permute(out, *out, perm, 4);
}

#endif
