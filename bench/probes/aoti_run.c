/* An AOTInductor package from C: load time and run time.
 *
 * Usage: aoti_run PACKAGE LOADS RUNS
 * PACKAGE: made by tests/models/make_aoti_package.py (two inputs, [2, 4] and
 * [3], float32). Prints the load time (ms: median, min, max over LOADS
 * loads, each followed by a free) and the run time (us per call, median of 7
 * rounds of RUNS/7 calls). Needs libtorch >= 2.6 (exits 2 with the reason
 * otherwise). */
#include <ctorch.h>

#include "bench.h"

#define CHECK(call)                                                 \
  do {                                                              \
    if ((call) != CTORCH_OK) bench_die(#call, ctorch_last_error()); \
  } while (0)

int main(int argc, char **argv) {
  const int64_t xs[2] = {2, 4}, bs[1] = {3};
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  ctorch_tensor in[2] = {NULL, NULL};
  ctorch_aoti_package p = NULL;
  double *load_ms, run_us[7], t0;
  long loads, runs, i, r;
  int avail = 0;
  if (argc != 4 || atol(argv[2]) < 1 || atol(argv[3]) < 7) {
    fprintf(stderr, "usage: aoti_run PACKAGE LOADS RUNS (RUNS >= 7)\n");
    return 2;
  }
  CHECK(ctorch_aoti_available(&avail));
  if (!avail) {
    const char *v = "?";
    ctorch_torch_version(&v);
    fprintf(stderr, "aoti_run: libtorch %s has no AOTInductor package loader\n", v);
    return 2;
  }
  loads = atol(argv[2]);
  runs = atol(argv[3]);
  CHECK(ctorch_set_num_threads(1));
  load_ms = malloc(sizeof *load_ms * (size_t)loads);
  for (i = 0; i < loads; ++i) {
    t0 = bench_now();
    CHECK(ctorch_aoti_package_load(&p, argv[1], NULL));
    load_ms[i] = (bench_now() - t0) * 1e3;
    if (i + 1 < loads) ctorch_aoti_package_free(p);
  }
  CHECK(ctorch_randn(&in[0], xs, 2, &f32, NULL, NULL, NULL));
  CHECK(ctorch_randn(&in[1], bs, 1, &f32, NULL, NULL, NULL));
  for (i = 0; i < 100; ++i) { /* warm-up */
    ctorch_tensor_list out = NULL;
    CHECK(ctorch_aoti_package_run(&out, p, in, 2));
    ctorch_tensor_list_free(out);
  }
  for (r = 0; r < 7; ++r) {
    t0 = bench_now();
    for (i = 0; i < runs / 7; ++i) {
      ctorch_tensor_list out = NULL;
      CHECK(ctorch_aoti_package_run(&out, p, in, 2));
      ctorch_tensor_list_free(out);
    }
    run_us[r] = (bench_now() - t0) * 1e6 / (double)(runs / 7);
  }
  {
    double mn = load_ms[0], mx = load_ms[0];
    for (i = 1; i < loads; ++i) {
      if (load_ms[i] < mn) mn = load_ms[i];
      if (load_ms[i] > mx) mx = load_ms[i];
    }
    printf("load_ms median %.2f min %.2f max %.2f (%ld loads)\n", bench_median(load_ms, (size_t)loads), mn, mx, loads);
  }
  printf("run_us median %.2f\n", bench_median(run_us, 7));
  ctorch_aoti_package_free(p);
  ctorch_tensor_free(in[0]);
  ctorch_tensor_free(in[1]);
  free(load_ms);
  return 0;
}
