/* Modules on a CUDA device: builds one built-in module on
 * cuda:0 with ctorch_nn_new (seed 0), runs forward + backward of
 * (out * out).sum() on seeded inputs (seed 1), writes the initial
 * parameters, the first outputs and the gradients to a safetensors file for
 * gpu_nn.py to compare with torch.nn, then times ITERS forward + backward
 * steps (between synchronisations) and prints milliseconds per step.
 *   gpu_nn KIND 'ARGS' 'SHAPE[;SHAPE...]' 'KWARGS' ITERS OUT.safetensors
 * SHAPE: sizes joined by 'x'; an input named '=0' reuses input 0 (self-
 * attention's query = key = value). Without CUDA: "skipped", exit 77. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ctorch.h"

#define CHECK(call)                                                                       \
  do {                                                                                    \
    if ((call) != CTORCH_OK) {                                                            \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ctorch_last_error()); \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

#define MAXT 512

static ctorch_tensor step(ctorch_nn_module m, ctorch_tensor *in, size_t n_in, const char *kw) {
  ctorch_tensor outs[4] = {0}, sq = NULL, loss = NULL;
  size_t n = 0, i;
  CHECK(ctorch_nn_module_forward_n(m, in, n_in, kw, outs, 4, &n));
  CHECK(ctorch_mul_Tensor(&sq, outs[0], outs[0]));
  CHECK(ctorch_sum(&loss, sq, NULL));
  CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  ctorch_tensor_free(sq);
  ctorch_tensor_free(loss);
  for (i = 1; i < n; ++i) ctorch_tensor_free(outs[i]);
  return outs[0];
}

int main(int argc, char **argv) {
  const ctorch_device cuda = {CTORCH_DEVICE_CUDA, 0};
  ctorch_nn_module m = NULL;
  ctorch_tensor in[4] = {0}, out0 = NULL;
  size_t n_in = 0, i, n_names = 0;
  int n_dev = 0;
  long iters;
  char shapes[256], *tok, *save = NULL;
  const char *names[MAXT];
  ctorch_tensor tensors[MAXT];
  char *owned[MAXT];
  double t0;
  if (argc != 7) {
    fprintf(stderr, "usage: gpu_nn KIND ARGS SHAPES KWARGS ITERS OUT\n");
    return 2;
  }
  if (ctorch_cuda_device_count(&n_dev) != CTORCH_OK || n_dev == 0) {
    printf("skipped: no CUDA device\n");
    return 77;
  }
  iters = atol(argv[5]);
  CHECK(ctorch_manual_seed(0));
  CHECK(ctorch_nn_new(&m, argv[1], argv[2]));
  {
    ctorch_tensor_dict sd = NULL;
    size_t k;
    CHECK(ctorch_nn_module_state_dict(&sd, m));
    CHECK(ctorch_tensor_dict_size(&k, sd));
    for (i = 0; i < k && n_names < MAXT; ++i) {
      const char *key;
      ctorch_tensor t = NULL, c = NULL;
      CHECK(ctorch_tensor_dict_key(&key, sd, i));
      CHECK(ctorch_tensor_dict_get(&t, sd, i));
      CHECK(ctorch_tensor_clone(&c, t)); /* the values before any step */
      owned[n_names] = malloc(strlen(key) + 8);
      sprintf(owned[n_names], "init.%s", key);
      names[n_names] = owned[n_names];
      tensors[n_names++] = c;
      ctorch_tensor_free(t);
    }
    ctorch_tensor_dict_free(sd);
  }
  CHECK(ctorch_manual_seed(1));
  snprintf(shapes, sizeof shapes, "%s", argv[3]);
  for (tok = strtok_r(shapes, ";", &save); tok && n_in < 4; tok = strtok_r(NULL, ";", &save)) {
    int64_t size[8];
    size_t nd = 0;
    char *p = tok;
    if (!strcmp(tok, "=0")) {
      CHECK(ctorch_tensor_ref(&in[n_in++], in[0]));
      continue;
    }
    while (*p && nd < 8) {
      size[nd++] = strtoll(p, &p, 10);
      if (*p == 'x') ++p;
    }
    CHECK(ctorch_randn(&in[n_in++], size, nd, NULL, NULL, &cuda, NULL));
  }
  out0 = step(m, in, n_in, argv[4]);
  names[n_names] = "out.0";
  tensors[n_names++] = out0;
  {
    ctorch_tensor_dict ps = NULL;
    size_t k;
    CHECK(ctorch_nn_module_named_parameters(&ps, m, 1));
    CHECK(ctorch_tensor_dict_size(&k, ps));
    for (i = 0; i < k && n_names < MAXT; ++i) {
      const char *key;
      ctorch_tensor p = NULL, g = NULL;
      CHECK(ctorch_tensor_dict_key(&key, ps, i));
      CHECK(ctorch_tensor_dict_get(&p, ps, i));
      CHECK(ctorch_tensor_grad(&g, p));
      ctorch_tensor_free(p);
      if (!g) continue;
      owned[n_names] = malloc(strlen(key) + 8);
      sprintf(owned[n_names], "grad.%s", key);
      names[n_names] = owned[n_names];
      tensors[n_names++] = g;
    }
    ctorch_tensor_dict_free(ps);
  }
  CHECK(ctorch_safetensors_save(argv[6], names, tensors, n_names, NULL, NULL, 0));
  for (i = 0; i < 5; ++i) {
    CHECK(ctorch_nn_module_zero_grad(m, 1));
    ctorch_tensor_free(step(m, in, n_in, argv[4]));
  }
  CHECK(ctorch_cuda_synchronize(-1));
  t0 = bench_now();
  for (i = 0; i < (size_t)iters; ++i) {
    CHECK(ctorch_nn_module_zero_grad(m, 1));
    ctorch_tensor_free(step(m, in, n_in, argv[4]));
  }
  CHECK(ctorch_cuda_synchronize(-1));
  printf("%.4f\n", (bench_now() - t0) * 1e3 / (double)iters);
  for (i = 0; i < n_names; ++i) ctorch_tensor_free(tensors[i]);
  for (i = 0; i < n_in; ++i) ctorch_tensor_free(in[i]);
  ctorch_nn_module_free(m);
  return 0;
}
