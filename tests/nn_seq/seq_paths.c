/*
 * The C side of tests/nn_seq/seq_paths.py: what the generic harness cannot
 * reach in the sequence modules. Its inputs are distinct tensors and
 * require grad, so it never takes the paths Python picks by identity
 * (query is key is value: one packed in-projection; key is value: two)
 * nor the eval fast paths (no grad: at::_native_multi_head_attention,
 * at::_transformer_encoder_layer_fwd, TransformerEncoder's nested tensors),
 * whose numbers differ from the slow path's.
 *
 *   seq_paths CASES DIR   for each line "id|Kind|args|slots|kwargs|grad"
 *     of CASES: seed 1234, ctorch_nn_new(Kind, args), eval mode, inputs
 *     from DIR/<id>.in.safetensors ("in.0", ...), passed as `slots` says
 *     ("0,0,0,-,1": inputs 0, 0 (the same handle, as Python passes one
 *     tensor three times), 0, None, 1), forward with kwargs ("-" none)
 *     under no_grad when grad is 0; writes DIR/<id>.out.safetensors
 *     ("out.0", ...) or, on failure, DIR/<id>.err with the message.
 * Exit 0 when every case was written, 2 on a usage or file error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

#define MAX_IO 8

static int write_err(const char *dir, const char *id, const char *stage) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.err", dir, id);
  FILE *f = fopen(path, "w");
  if (!f) return 2;
  fprintf(f, "%s: %s\n", stage, ctorch_last_error());
  fclose(f);
  return 0;
}

static int run_case(const char *dir, char *fields[6]) {
  const char *id = fields[0];
  int grad = atoi(fields[5]);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.in.safetensors", dir, id);
  ctorch_tensor_dict in = NULL;
  if (ctorch_safetensors_load(&in, path, NULL) != CTORCH_OK) return write_err(dir, id, "load inputs");
  ctorch_tensor inputs[MAX_IO] = {0}, outputs[MAX_IO] = {0};
  size_t n_in = 0, n_out = 0;
  int rc = 0;
  ctorch_nn_module m = NULL;
  ctorch_autograd_scope scope = NULL;
  for (char *tok = strtok(fields[3], ","); tok && n_in < MAX_IO; tok = strtok(NULL, ","), n_in++) {
    if (strcmp(tok, "-") == 0) continue;
    char name[32];
    snprintf(name, sizeof name, "in.%s", tok);
    /* The same index twice finds the same tensor (one TensorImpl), which
     * the modules see as Python's `query is key`; each find is a new
     * reference, freed once below. */
    if (ctorch_tensor_dict_find(&inputs[n_in], in, name) != CTORCH_OK) {
      rc = write_err(dir, id, "find input");
      goto done;
    }
  }
  if (ctorch_manual_seed(1234) != CTORCH_OK || ctorch_nn_new(&m, fields[1], fields[2]) != CTORCH_OK ||
      ctorch_nn_module_train(m, 0) != CTORCH_OK) {
    rc = write_err(dir, id, "construct");
    goto done;
  }
  if (!grad && ctorch_autograd_scope_enter(&scope, CTORCH_SCOPE_NO_GRAD) != CTORCH_OK) {
    rc = write_err(dir, id, "no_grad");
    goto done;
  }
  if (ctorch_nn_module_forward_n(m, inputs, n_in, strcmp(fields[4], "-") ? fields[4] : NULL, outputs, MAX_IO,
                                 &n_out) != CTORCH_OK) {
    rc = write_err(dir, id, "forward");
    goto done;
  }
  {
    const char *names[MAX_IO];
    char bufs[MAX_IO][16];
    ctorch_tensor ts[MAX_IO];
    size_t n = 0;
    for (size_t k = 0; k < n_out; k++) {
      if (!outputs[k]) continue;
      snprintf(bufs[n], sizeof bufs[n], "out.%zu", k);
      names[n] = bufs[n];
      ts[n++] = outputs[k];
    }
    snprintf(path, sizeof path, "%s/%s.out.safetensors", dir, id);
    if (ctorch_safetensors_save(path, names, ts, n, NULL, NULL, 0) != CTORCH_OK) rc = write_err(dir, id, "save");
  }
done:
  if (scope) ctorch_autograd_scope_leave(scope);
  for (size_t k = 0; k < MAX_IO; k++) {
    ctorch_tensor_free(inputs[k]);
    ctorch_tensor_free(outputs[k]);
  }
  ctorch_nn_module_free(m);
  ctorch_tensor_dict_free(in);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: seq_paths CASES DIR\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "r");
  if (!f) return 2;
  char line[4096];
  int rc = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (!line[0]) continue;
    char *fields[6];
    char *p = line;
    int k = 0;
    for (; k < 6 && p; k++) {
      fields[k] = p;
      p = strchr(p, '|');
      if (p) *p++ = 0;
    }
    if (k != 6) {
      fprintf(stderr, "bad case line\n");
      rc = 2;
      break;
    }
    if (run_case(argv[2], fields)) rc = 2;
  }
  fclose(f);
  return rc;
}
