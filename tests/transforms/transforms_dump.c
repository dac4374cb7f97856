/* Applies a pipeline of shim/transforms to a batch for transforms_vs_torch.py:
 *   transforms_dump IN OUT SEED STEP...
 * IN (torch.save dict) holds "batch" [N, C, H, W] and, for normalize,
 * "mean" and "std". Steps: "normalize", "crop H W FILL NPAD PAD...",
 * "flip P", "rrc H W SCALE_MIN SCALE_MAX RATIO_MIN RATIO_MAX". One step is
 * applied as is; several as compose(step 1, compose(steps 2...)) (a nested
 * compose draws as the flat one). OUT gets "out" (a generator seeded with
 * SEED), "again" (a second generator with SEED: the same numbers) and
 * "default" (the default generator after ctorch_manual_seed(SEED), which
 * Python's torch.manual_seed(SEED) matches). Exit 1 on an unexpected status.
 *   transforms_dump --jobs FILE
 * runs one such argument list per line of FILE, in one process (dump_jobs.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctorch.h>

#include "../dump_jobs.h"
#include "../dump_ok.h"

static int run(int argc, char **argv) {
  ctorch_tensor_dict in = NULL, out = NULL;
  ctorch_tensor batch = NULL, r = NULL;
  ctorch_transform steps[16], t = NULL;
  ctorch_generator g = NULL;
  ctorch_device cpu = {CTORCH_DEVICE_CPU, -1};
  uint64_t seed;
  size_t n = 0, i;
  int a = 4;
  const char *names[3] = {"out", "again", "default"};
  if (argc < 5) {
    fprintf(stderr, "usage: transforms_dump IN OUT SEED STEP...\n");
    return 2;
  }
  seed = strtoull(argv[3], NULL, 10);
  OK(ctorch_load_dict(&in, argv[1]));
  OK(ctorch_tensor_dict_find(&batch, in, "batch"));
  while (a < argc && n < 16) {
    const char *s = argv[a++];
    if (!strcmp(s, "normalize")) {
      ctorch_tensor mean = NULL, std = NULL;
      OK(ctorch_tensor_dict_find(&mean, in, "mean"));
      OK(ctorch_tensor_dict_find(&std, in, "std"));
      OK(ctorch_transform_normalize(&steps[n++], mean, std));
      ctorch_tensor_free(mean);
      ctorch_tensor_free(std);
    } else if (!strcmp(s, "crop")) {
      int64_t h = atoll(argv[a]), w = atoll(argv[a + 1]), pad[4];
      double fill = atof(argv[a + 2]);
      size_t np = (size_t)atoi(argv[a + 3]), k;
      for (k = 0; k < np; ++k) pad[k] = atoll(argv[a + 4 + k]);
      a += 4 + (int)np;
      OK(ctorch_transform_random_crop(&steps[n++], h, w, pad, np, fill));
    } else if (!strcmp(s, "flip")) {
      OK(ctorch_transform_random_horizontal_flip(&steps[n++], atof(argv[a++])));
    } else if (!strcmp(s, "rrc")) {
      OK(ctorch_transform_random_resized_crop(&steps[n++], atoll(argv[a]), atoll(argv[a + 1]), atof(argv[a + 2]),
                                              atof(argv[a + 3]), atof(argv[a + 4]), atof(argv[a + 5])));
      a += 6;
    } else {
      fprintf(stderr, "unknown step %s\n", s);
      return 2;
    }
  }
  if (n == 1) {
    t = steps[0];
  } else {
    ctorch_transform inner = NULL, outer[2];
    OK(ctorch_transform_compose(&inner, steps + 1, n - 1));
    outer[0] = steps[0];
    outer[1] = inner;
    OK(ctorch_transform_compose(&t, outer, 2));
    ctorch_transform_free(inner); /* kept alive by t */
    for (i = 0; i < n; ++i) ctorch_transform_free(steps[i]);
  }
  OK(ctorch_tensor_dict_new(&out));
  for (i = 0; i < 3; ++i) {
    if (i < 2) {
      OK(ctorch_generator_new(&g, cpu, seed));
    } else {
      OK(ctorch_manual_seed(seed));
      g = NULL;
    }
    OK(ctorch_transform_apply(&r, t, batch, g));
    OK(ctorch_tensor_dict_set(out, names[i], r));
    ctorch_tensor_free(r);
    ctorch_generator_free(g);
  }
  OK(ctorch_tensor_dict_save(argv[2], out));
  ctorch_transform_free(t);
  ctorch_tensor_free(batch);
  ctorch_tensor_dict_free(in);
  ctorch_tensor_dict_free(out);
  return 0;
}

int main(int argc, char **argv) {
  int rc = dump_jobs(argc, argv, run);
  return rc >= 0 ? rc : run(argc, argv);
}
