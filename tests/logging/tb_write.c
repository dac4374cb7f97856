/* Writes the TensorBoard records tensorboard_vs_torch.py compares with
 * torch.utils.tensorboard's (same data: seeded tensors, fixed steps and wall
 * times), after checking the writer's failures:
 *   tb_write DIR          the records, then prints the event file's path
 *   tb_write --kill DIR N N scalars, then SIGKILL itself (no close, no flush)
 *   tb_write --strings DIR every record kind with non-ASCII UTF-8 strings
 * Exit 1 on an unexpected status. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctorch.h>

#include "../dump_ok.h"
#define FAILS(call, status, needle)                                                                   \
  do {                                                                                                \
    ctorch_status st_ = (call);                                                                       \
    if (st_ != (status) || !strstr(ctorch_last_error(), (needle))) {                                  \
      fprintf(stderr, "%s:%d: %s gave %s (%s)\n", __FILE__, __LINE__, #call, ctorch_status_name(st_), \
              ctorch_last_error());                                                                   \
      exit(1);                                                                                        \
    }                                                                                                 \
  } while (0)

static void failures(const char *dir, ctorch_summary_writer w) {
  ctorch_summary_writer bad = NULL;
  ctorch_tensor t = NULL, img = NULL;
  const int64_t two[3] = {2, 4, 4};
  const float nanv[3] = {1, NAN, 2};
  char file[4096];
  FILE *f;
  FAILS(ctorch_summary_writer_new(NULL, dir, NULL), CTORCH_INVALID_ARGUMENT, "out");
  FAILS(ctorch_summary_writer_new(&bad, NULL, NULL), CTORCH_INVALID_ARGUMENT, "log_dir");
  FAILS(ctorch_summary_writer_new(&bad, dir, "a/b"), CTORCH_INVALID_ARGUMENT, "filename_suffix");
  snprintf(file, sizeof file, "%s/plainfile", dir);
  f = fopen(file, "w");
  if (!f) exit(1);
  fclose(f);
  FAILS(ctorch_summary_writer_new(&bad, file, NULL), CTORCH_IO, "plainfile");
  if (bad) exit(1);
  FAILS(ctorch_summary_writer_add_scalar(NULL, "x", 1, 0, 0), CTORCH_INVALID_ARGUMENT, "writer");
  FAILS(ctorch_summary_writer_add_scalar(w, NULL, 1, 0, 0), CTORCH_INVALID_ARGUMENT, "tag");
  FAILS(ctorch_summary_writer_add_scalar(w, "", 1, 0, 0), CTORCH_INVALID_ARGUMENT, "tag");
  FAILS(ctorch_summary_writer_add_histogram(w, "h", NULL, 0, 0), CTORCH_INVALID_ARGUMENT, "values");
  OK(ctorch_tensor_from_data(&t, nanv, sizeof nanv, (const int64_t[]){3}, 1, CTORCH_FLOAT32));
  FAILS(ctorch_summary_writer_add_histogram(w, "h", t, 0, 0), CTORCH_INVALID_ARGUMENT, "flat index 1");
  OK(ctorch_zeros(&img, two, 3, NULL, NULL, NULL, NULL));
  FAILS(ctorch_summary_writer_add_image(w, "i", img, 0, 0), CTORCH_INVALID_ARGUMENT, "1, 3 or 4 channels");
  FAILS(ctorch_summary_writer_add_image(w, "i", t, 0, 0), CTORCH_INVALID_ARGUMENT, "3-d");
  FAILS(ctorch_summary_writer_add_text(w, "t", NULL, 0, 0), CTORCH_INVALID_ARGUMENT, "text");
  {
    const char *names[2] = {"lr", NULL}, *bad_run = "a/b";
    const double values[2] = {0.1, 2};
    FAILS(ctorch_summary_writer_add_hparams(NULL, names, values, NULL, 1, NULL, NULL, 0, "r"), CTORCH_INVALID_ARGUMENT,
          "writer");
    FAILS(ctorch_summary_writer_add_hparams(w, NULL, values, NULL, 1, NULL, NULL, 0, "r"), CTORCH_INVALID_ARGUMENT,
          "names");
    FAILS(ctorch_summary_writer_add_hparams(w, names, values, NULL, 0, NULL, NULL, 0, "r"), CTORCH_INVALID_ARGUMENT, "n");
    FAILS(ctorch_summary_writer_add_hparams(w, names, NULL, NULL, 1, NULL, NULL, 0, "r"), CTORCH_INVALID_ARGUMENT,
          "values");
    FAILS(ctorch_summary_writer_add_hparams(w, names, values, NULL, 2, NULL, NULL, 0, "r"), CTORCH_INVALID_ARGUMENT,
          "entry 1");
    FAILS(ctorch_summary_writer_add_hparams(w, names, values, NULL, 1, NULL, values, 1, "r"), CTORCH_INVALID_ARGUMENT,
          "metric_names");
    FAILS(ctorch_summary_writer_add_hparams(w, names, values, NULL, 1, NULL, NULL, 0, bad_run), CTORCH_INVALID_ARGUMENT,
          "run_name");
  }
  ctorch_summary_writer_free(NULL);
  ctorch_tensor_free(t);
  ctorch_tensor_free(img);
}

/* tb_write --strings DIR: every record kind with non-ASCII strings of every
 * UTF-8 length (tags, text, hyper-parameter names and values, metric names,
 * run name, file-name suffix), after the same strings made invalid were
 * refused; tensorboard_vs_torch.py reads each back. */
static const char *const kUtf8[4] = {"a/\xc3\xa9t\xc3\xa9", "b/\xe6\x97\xa5\xe6\x9c\xac", "c/\xf0\x9f\x98\x80",
                                      "d/\xf4\x8f\xbf\xbf\xed\x9f\xbf\xee\x80\x80"};
static int strings_mode(const char *dir) {
  ctorch_summary_writer w = NULL;
  ctorch_tensor h = NULL, img = NULL;
  const char *path = NULL;
  const int64_t n = 5, chw[3] = {3, 2, 2};
  const char *names[2] = {kUtf8[0], kUtf8[1]}, *texts[2] = {NULL, kUtf8[2]}, *metrics[1] = {kUtf8[3]};
  const double values[2] = {0.5, 0}, mv[1] = {0.75};
  const char *surrogate = "x/\xed\xa0\x80";
  int i;
  OK(ctorch_summary_writer_new(&w, dir, ".\xc3\xa9"));
  OK(ctorch_ones(&h, &n, 1, NULL, NULL, NULL, NULL));
  OK(ctorch_zeros(&img, chw, 3, NULL, NULL, NULL, NULL));
  for (i = 0; i < 4; ++i) {
    char tag[64];
    FAILS(ctorch_summary_writer_add_scalar(w, surrogate, 1, i, 0), CTORCH_INVALID_ARGUMENT, "UTF-8");
    snprintf(tag, sizeof tag, "scalar/%s", kUtf8[i]);
    OK(ctorch_summary_writer_add_scalar(w, tag, i, i, 100.0 + i));
    snprintf(tag, sizeof tag, "hist/%s", kUtf8[i]);
    OK(ctorch_summary_writer_add_histogram(w, tag, h, i, 200.0 + i));
    snprintf(tag, sizeof tag, "img/%s", kUtf8[i]);
    OK(ctorch_summary_writer_add_image(w, tag, img, i, 300.0 + i));
    snprintf(tag, sizeof tag, "text/%s", kUtf8[i]);
    FAILS(ctorch_summary_writer_add_text(w, tag, surrogate, i, 0), CTORCH_INVALID_ARGUMENT, "UTF-8");
    OK(ctorch_summary_writer_add_text(w, tag, kUtf8[(i + 1) % 4], i, 400.0 + i));
  }
  texts[0] = NULL;
  names[1] = surrogate;
  FAILS(ctorch_summary_writer_add_hparams(w, names, values, texts, 2, metrics, mv, 1, "run_\xe6\x97\xa5"),
        CTORCH_INVALID_ARGUMENT, "names[1]");
  names[1] = kUtf8[1];
  OK(ctorch_summary_writer_add_hparams(w, names, values, texts, 2, metrics, mv, 1, "run_\xe6\x97\xa5"));
  OK(ctorch_summary_writer_path(&path, w));
  printf("%s\n", path);
  ctorch_summary_writer_free(w);
  ctorch_tensor_free(h);
  ctorch_tensor_free(img);
  return 0;
}

int main(int argc, char **argv) {
  ctorch_summary_writer w = NULL;
  const char *path = NULL;
  int i;
  if (argc == 3 && !strcmp(argv[1], "--strings")) return strings_mode(argv[2]);
  if (argc == 4 && !strcmp(argv[1], "--kill")) {
    int n = atoi(argv[3]);
    OK(ctorch_summary_writer_new(&w, argv[2], NULL));
    for (i = 0; i < n; ++i) OK(ctorch_summary_writer_add_scalar(w, "loss", 1.0 / (i + 1), i, 1000.0 + i));
    OK(ctorch_summary_writer_path(&path, w));
    printf("%s\n", path);
    fflush(stdout);
    raise(SIGKILL);
    return 1;
  }
  if (argc != 2) return 2;
  OK(ctorch_summary_writer_new(&w, argv[1], ".ctorch"));
  failures(argv[1], w);
  for (i = 0; i < 10; ++i) OK(ctorch_summary_writer_add_scalar(w, "train/loss", 1.0 / (i + 1), i, 1000.0 + i));
  OK(ctorch_summary_writer_add_scalar(w, "big", 3e38, 0, 1000.0));
  OK(ctorch_manual_seed(7));
  for (i = 0; i < 3; ++i) {
    ctorch_tensor h = NULL, s = NULL;
    const int64_t n = 1000;
    OK(ctorch_randn(&h, &n, 1, NULL, NULL, NULL, NULL));
    OK(ctorch_mul_Scalar(&s, h, ctorch_scalar_float(i + 1)));
    OK(ctorch_summary_writer_add_histogram(w, "weights", s, i, 2000.0 + i));
    ctorch_tensor_free(h);
    ctorch_tensor_free(s);
  }
  {
    ctorch_tensor c = NULL;
    const double one[1] = {0};
    OK(ctorch_tensor_from_data(&c, one, sizeof one, (const int64_t[]){1}, 1, CTORCH_FLOAT64));
    OK(ctorch_summary_writer_add_histogram(w, "zero", c, 0, 2100.0));
    ctorch_tensor_free(c);
  }
  {
    ctorch_tensor rgb = NULL, grey = NULL, rgba = NULL;
    const int64_t s3[3] = {3, 8, 10}, s1[3] = {1, 6, 7}, s4[3] = {4, 5, 5};
    const ctorch_dtype u8 = CTORCH_UINT8;
    OK(ctorch_manual_seed(5));
    OK(ctorch_rand(&rgb, s3, 3, NULL, NULL, NULL, NULL));
    OK(ctorch_randint(&grey, 256, s1, 3, &u8, NULL, NULL, NULL));
    OK(ctorch_rand(&rgba, s4, 3, NULL, NULL, NULL, NULL));
    OK(ctorch_summary_writer_add_image(w, "img/rgb", rgb, 1, 3000.0));
    OK(ctorch_summary_writer_add_image(w, "img/grey", grey, 2, 3001.0));
    OK(ctorch_summary_writer_add_image(w, "img/rgba", rgba, 3, 3002.0));
    ctorch_tensor_free(rgb);
    ctorch_tensor_free(grey);
    ctorch_tensor_free(rgba);
  }
  OK(ctorch_summary_writer_add_text(w, "notes", "hello **world**: \xc3\xa9t\xc3\xa9", 4, 4000.0));
  {
    /* add_hparams({"lr": 0.01, "optimizer": "adam", "batch": 64},
     *             {"hparam/accuracy": 0.9, "hparam/loss": 0.25}, run_name="run1") */
    const char *names[3] = {"lr", "optimizer", "batch"}, *texts[3] = {NULL, "adam", NULL};
    const char *metrics[2] = {"hparam/accuracy", "hparam/loss"};
    const double values[3] = {0.01, 0, 64}, mv[2] = {0.9, 0.25};
    OK(ctorch_summary_writer_add_hparams(w, names, values, texts, 3, metrics, mv, 2, "run1"));
  }
  OK(ctorch_summary_writer_flush(w));
  OK(ctorch_summary_writer_path(&path, w));
  printf("%s\n", path);
  ctorch_summary_writer_free(w);
  return 0;
}
