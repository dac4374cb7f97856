/*
 * The compile step of compare.py's way "ctorch AOTI frozen (C)"
 * (AOTInductor's options passed from C): a TorchScript file and the
 * model's inputs in, an AOTInductor package out, through ctorch's own C API,
 * ctorch_py_aoti_compile_options (the Python bridge: TorchScript ->
 * torch.export -> aoti_compile_and_package with the options as
 * inductor_configs). model_bench's aoti mode then runs the package.
 *
 *   aoti_package TS_FILE INPUTS PACKAGE OPTIONS
 *
 * INPUTS: a safetensors file with tensors in0, in1, ... (compare.py's); the
 * package is compiled for exactly their shapes (no dynamic batch: one
 * package per batch size, as compare.py's Python-compiled packages).
 * OPTIONS: ctorch_py_aoti_compile_options' KEY=VALUE list, e.g.
 * "freezing=1" or "freezing=1,max_autotune=1"; "" for none.
 * Prints `compile_s=<seconds>`. Exits 77 where the torch has no AOTInductor
 * (< 2.6), 1 on any other failure (the bridge's message on stderr).
 */
#include <string.h>

#include <ctorch.h>
#include <ctorch_python.h>

#include "bench.h"

#define CHECK(call)                                                 \
  do {                                                              \
    if ((call) != CTORCH_OK) bench_die(#call, ctorch_last_error()); \
  } while (0)

int main(int argc, char **argv) {
  ctorch_module m = NULL;
  ctorch_tensor_dict inputs = NULL;
  ctorch_tensor in[8];
  size_t n_in;
  ctorch_status st;
  double t0;
  if (argc != 5) {
    fprintf(stderr, "usage: aoti_package TS_FILE INPUTS PACKAGE OPTIONS\n");
    return 2;
  }
  if (ctorch_py_start(NULL, NULL) != CTORCH_OK) bench_die("ctorch_py_start", ctorch_py_last_error());
  CHECK(ctorch_module_load(&m, argv[1], NULL));
  CHECK(ctorch_module_eval(m));
  CHECK(ctorch_safetensors_load(&inputs, argv[2], NULL));
  for (n_in = 0; n_in < 8; ++n_in) {
    char name[8];
    snprintf(name, sizeof name, "in%zu", n_in);
    if (ctorch_tensor_dict_find(&in[n_in], inputs, name) != CTORCH_OK) break;
  }
  t0 = bench_now();
  st = ctorch_py_aoti_compile_options(m, in, n_in, argv[3], 0, 0, argv[4]);
  if (st == CTORCH_NOT_IMPLEMENTED) {
    printf("skipped: %s\n", ctorch_py_last_error());
    return 77;
  }
  if (st != CTORCH_OK) bench_die("ctorch_py_aoti_compile_options", ctorch_py_last_error());
  printf("compile_s=%.1f\n", bench_now() - t0);
  while (n_in) ctorch_tensor_free(in[--n_in]);
  ctorch_tensor_dict_free(inputs);
  ctorch_module_free(m);
  return 0;
}
