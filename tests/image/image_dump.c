/* Runs shim/image and the eval transforms for image_vs_torchvision.py:
 *   image_dump decode OUT MODE FILE...
 *     reads each FILE with ctorch_image_read(MODE: 1..5); OUT (a tensor
 *     dict) gets "<k>" for the k-th file that decoded; stdout gets one line
 *     per file, "<k> OK" or "<k> <STATUS> <message>".
 *   image_dump transform IN OUT STEP...
 *     applies the steps (composed) to IN's "batch" [N, C, H, W] and writes
 *     "out" to OUT. Steps: "resize NSIZE SIZE... INTERP MAX_SIZE ANTIALIAS"
 *     (INTERP 1 bilinear, 2 bicubic), "center H W", "convert DTYPE" (a
 *     ctorch_dtype number), "normalize" (IN's "mean" and "std").
 *   image_dump --jobs FILE
 *     runs one such argument list per line of FILE, in one process
 *     (dump_jobs.h).
 * Exit 1 on an unexpected failure (the transform steps must succeed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctorch.h>

#include "../dump_jobs.h"
#include "../dump_ok.h"

static int decode(int argc, char **argv) {
  ctorch_tensor_dict out = NULL;
  int mode = atoi(argv[3]), k;
  OK(ctorch_tensor_dict_new(&out));
  for (k = 4; k < argc; ++k) {
    ctorch_tensor t = NULL;
    char name[32];
    ctorch_status st = ctorch_image_read(&t, argv[k], (ctorch_image_read_mode)mode);
    snprintf(name, sizeof name, "%d", k - 4);
    if (st == CTORCH_OK) {
      printf("%s OK\n", name);
      OK(ctorch_tensor_dict_set(out, name, t));
      ctorch_tensor_free(t);
    } else {
      const char *e = ctorch_last_error();
      printf("%s %s %s\n", name, ctorch_status_name(st), e);
      if (t) {
        fprintf(stderr, "a failure left a tensor\n");
        return 1;
      }
    }
  }
  OK(ctorch_tensor_dict_save(argv[2], out));
  ctorch_tensor_dict_free(out);
  return 0;
}

static int transform(int argc, char **argv) {
  ctorch_tensor_dict in = NULL, out = NULL;
  ctorch_tensor batch = NULL, r = NULL;
  ctorch_transform steps[16], t = NULL;
  size_t n = 0, i;
  int a = 4;
  OK(ctorch_load_dict(&in, argv[2]));
  OK(ctorch_tensor_dict_find(&batch, in, "batch"));
  while (a < argc && n < 16) {
    const char *s = argv[a++];
    if (!strcmp(s, "resize")) {
      int64_t size[2] = {0, 0};
      size_t ns = (size_t)atoi(argv[a++]), k;
      for (k = 0; k < ns && k < 2; ++k) size[k] = atoll(argv[a++]);
      OK(ctorch_transform_resize(&steps[n++], size, ns, (ctorch_interpolation)atoi(argv[a]), atoll(argv[a + 1]),
                                 atoi(argv[a + 2])));
      a += 3;
    } else if (!strcmp(s, "center")) {
      OK(ctorch_transform_center_crop(&steps[n++], atoll(argv[a]), atoll(argv[a + 1])));
      a += 2;
    } else if (!strcmp(s, "convert")) {
      OK(ctorch_transform_convert_image_dtype(&steps[n++], (ctorch_dtype)atoi(argv[a++])));
    } else if (!strcmp(s, "normalize")) {
      ctorch_tensor mean = NULL, std = NULL;
      OK(ctorch_tensor_dict_find(&mean, in, "mean"));
      OK(ctorch_tensor_dict_find(&std, in, "std"));
      OK(ctorch_transform_normalize(&steps[n++], mean, std));
      ctorch_tensor_free(mean);
      ctorch_tensor_free(std);
    } else {
      fprintf(stderr, "unknown step %s\n", s);
      return 2;
    }
  }
  OK(ctorch_transform_compose(&t, steps, n));
  for (i = 0; i < n; ++i) ctorch_transform_free(steps[i]);
  OK(ctorch_transform_apply(&r, t, batch, NULL));
  OK(ctorch_tensor_dict_new(&out));
  OK(ctorch_tensor_dict_set(out, "out", r));
  OK(ctorch_tensor_dict_save(argv[3], out));
  ctorch_tensor_free(r);
  ctorch_tensor_free(batch);
  ctorch_transform_free(t);
  ctorch_tensor_dict_free(in);
  ctorch_tensor_dict_free(out);
  return 0;
}

static int run(int argc, char **argv) {
  if (argc >= 4 && !strcmp(argv[1], "decode")) return decode(argc, argv);
  if (argc >= 4 && !strcmp(argv[1], "transform")) return transform(argc, argv);
  fprintf(stderr, "usage: image_dump decode OUT MODE FILE... | image_dump transform IN OUT STEP... | "
                  "image_dump --jobs FILE\n");
  return 2;
}

int main(int argc, char **argv) {
  int rc = dump_jobs(argc, argv, run);
  return rc >= 0 ? rc : run(argc, argv);
}
