/* The loader's transform stage, printed for transform_vs_torch.py:
 *   transform_dump MODE N BATCH SHUFFLE SEED DROP_LAST WORKERS EPOCHS
 * MODE:
 *   gray  uint8 data [N, 12, 10] (items taken as [1, 12, 10]), int64 targets,
 *         ctorch_data_loader_new; transform ConvertImageDtype(float32),
 *         RandomCrop(8, padding=2), RandomHorizontalFlip(0.5),
 *         Normalize([0.5], [0.25]); a callback target transform y -> y + 100
 *         that keeps the data (writes the lent handle back)
 *   rgb   uint8 data [N, 3, 12, 10] over ctorch_dataset_from_tensors,
 *         transform ConvertImageDtype(float32), RandomResizedCrop(8, 8),
 *         RandomHorizontalFlip(0.5), Normalize(3 means, 3 stds); no targets
 *   sizes a host dataset whose item i is uint8 [3, 9 + i % 4, 11 - i % 3]
 *         with target i; transform ConvertImageDtype(float32),
 *         CenterCrop(8, 8), RandomHorizontalFlip(0.5); a callback data
 *         transform x -> x * 2 (a new handle)
 * Pixel (i, c, h, w) of every mode is (i * 131 + c * 31 + h * 17 + w * 7) % 256.
 * Output: per batch "E K" then the data's shape, its float32 values as
 * hex (%a), and the targets (or "-").
 *   transform_dump bench DIR WORKERS
 *         one epoch of Fashion-MNIST's training images (batch 256, shuffled)
 *         through ConvertImageDtype(float32) + Normalize in the loader's
 *         workers, and the same with the conversion done by hand on the
 *         whole tensor first (the old way): "stage S s, by hand H s".       */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctorch.h"

#include "../dump_ok.h"

static uint8_t pixel(int64_t i, int64_t c, int64_t h, int64_t w) {
  return (uint8_t)((i * 131 + c * 31 + h * 17 + w * 7) % 256);
}

static ctorch_tensor image(int64_t i, int64_t c, int64_t hh, int64_t ww) {
  uint8_t *buf = malloc((size_t)(c * hh * ww));
  int64_t sizes[3] = {c, hh, ww}, k = 0, a, b, d;
  ctorch_tensor t = NULL;
  for (a = 0; a < c; ++a)
    for (b = 0; b < hh; ++b)
      for (d = 0; d < ww; ++d) buf[k++] = pixel(i, a, b, d);
  OK(ctorch_tensor_from_data(&t, buf, (size_t)k, sizes, 3, CTORCH_UINT8));
  free(buf);
  return t;
}

/* All N items stacked: [N, C, H, W], or [N, H, W] when c == 0. */
static ctorch_tensor stacked(int64_t n, int64_t c, int64_t hh, int64_t ww) {
  int64_t cc = c ? c : 1, per = cc * hh * ww, i, k;
  uint8_t *buf = malloc((size_t)(n * per));
  int64_t s4[4] = {n, cc, hh, ww}, s3[3] = {n, hh, ww};
  ctorch_tensor t = NULL;
  for (i = 0; i < n; ++i)
    for (k = 0; k < per; ++k) buf[i * per + k] = pixel(i, k / (hh * ww), (k / ww) % hh, k % ww);
  OK(ctorch_tensor_from_data(&t, buf, (size_t)(n * per), c ? s4 : s3, c ? 4 : 3, CTORCH_UINT8));
  free(buf);
  return t;
}

static int64_t g_len;
static ctorch_status sizes_len(void *ud, int64_t *out) {
  (void)ud;
  *out = g_len;
  return CTORCH_OK;
}
static ctorch_status sizes_get(void *ud, int64_t i, ctorch_tensor *data, ctorch_tensor *target) {
  (void)ud;
  *data = image(i, 3, 9 + i % 4, 11 - i % 3);
  return ctorch_tensor_from_data(target, &i, sizeof i, NULL, 0, CTORCH_INT64);
}

static ctorch_status target_plus_100(void *ud, int64_t index, ctorch_tensor data, ctorch_tensor target,
                                     ctorch_tensor *data_out, ctorch_tensor *target_out) {
  (void)ud;
  (void)index;
  *data_out = data; /* kept as it is */
  return ctorch_add_Scalar(target_out, target, ctorch_scalar_int(100), ctorch_scalar_int(1));
}

static ctorch_status data_times_2(void *ud, int64_t index, ctorch_tensor data, ctorch_tensor target,
                                  ctorch_tensor *data_out, ctorch_tensor *target_out) {
  (void)ud;
  (void)index;
  (void)target;
  (void)target_out; /* the target is kept */
  return ctorch_mul_Scalar(data_out, data, ctorch_scalar_float(2.0));
}

static ctorch_tensor vec(const double *v, int64_t n) {
  ctorch_tensor t = NULL;
  OK(ctorch_tensor_from_data(&t, v, (size_t)n * sizeof *v, &n, 1, CTORCH_FLOAT64));
  return t;
}

static ctorch_transform compose(ctorch_transform *ts, size_t n) {
  ctorch_transform t = NULL;
  size_t k;
  OK(ctorch_transform_compose(&t, ts, n));
  for (k = 0; k < n; ++k) ctorch_transform_free(ts[k]); /* the compose keeps them */
  return t;
}

static void print_batch(uint64_t e, int64_t k, ctorch_tensor x, ctorch_tensor y) {
  int64_t dim = 0, sizes[8], n = 0, i;
  float *p;
  OK(ctorch_tensor_dim(&dim, x));
  OK(ctorch_tensor_sizes(sizes, 8, x));
  OK(ctorch_tensor_numel(&n, x));
  printf("%" PRIu64 " %" PRId64 "\n", e, k);
  for (i = 0; i < dim; ++i) printf("%s%" PRId64, i ? " " : "", sizes[i]);
  printf("\n");
  p = malloc((size_t)n * sizeof *p);
  OK(ctorch_tensor_copy_to(p, (size_t)n * sizeof *p, x));
  for (i = 0; i < n; ++i) printf("%s%a", i ? " " : "", (double)p[i]);
  printf("\n");
  free(p);
  if (y) {
    int64_t m = 0, *q;
    OK(ctorch_tensor_numel(&m, y));
    q = malloc((size_t)m * sizeof *q);
    OK(ctorch_tensor_copy_to(q, (size_t)m * sizeof *q, y));
    for (i = 0; i < m; ++i) printf("%s%" PRId64, i ? " " : "", q[i]);
    free(q);
  } else {
    printf("-");
  }
  printf("\n");
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double epoch_time(ctorch_data_loader l) {
  double t0 = now();
  int has = 1;
  OK(ctorch_data_loader_start_epoch(l, 0));
  for (;;) {
    ctorch_tensor x = NULL, y = NULL;
    OK(ctorch_data_loader_next(&has, &x, &y, l));
    if (!has) break;
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
  }
  return now() - t0;
}

static int bench(const char *dir, int workers) {
  const double mean[1] = {0.2860}, std[1] = {0.3530};
  ctorch_tensor im = NULL, lb = NULL, m = vec(mean, 1), s = vec(std, 1), f = NULL, a = NULL;
  ctorch_transform ts[2], t;
  ctorch_data_loader l = NULL;
  double stage, by_hand, t0;
  int64_t shape[4] = {-1, 1, 28, 28};
  OK(ctorch_data_mnist_read_dir(&im, &lb, dir, 1));
  OK(ctorch_transform_convert_image_dtype(&ts[0], CTORCH_FLOAT32));
  OK(ctorch_transform_normalize(&ts[1], m, s));
  t = compose(ts, 2);
  OK(ctorch_data_loader_new(&l, im, lb, 256, 1, 1, 0));
  OK(ctorch_data_loader_set_transform(l, t));
  OK(ctorch_data_loader_set_workers(l, workers, 2));
  stage = epoch_time(l);
  ctorch_data_loader_free(l);
  t0 = now(); /* the old way: the whole set converted on this thread, then batches */
  OK(ctorch_tensor_to_dtype(&f, im, CTORCH_FLOAT32));
  OK(ctorch_div_Scalar(&a, f, ctorch_scalar_float(255.0)));
  ctorch_tensor_free(f);
  OK(ctorch_sub_Tensor(&f, a, m, ctorch_scalar_int(1)));
  ctorch_tensor_free(a);
  OK(ctorch_div_Tensor(&a, f, s));
  ctorch_tensor_free(f);
  OK(ctorch_reshape(&f, a, shape, 4));
  ctorch_tensor_free(a);
  OK(ctorch_data_loader_new(&l, f, lb, 256, 1, 1, 0));
  OK(ctorch_data_loader_set_workers(l, workers, 2));
  by_hand = now() - t0 + epoch_time(l);
  printf("workers %d: stage %.3f s, by hand %.3f s\n", workers, stage, by_hand);
  ctorch_data_loader_free(l);
  ctorch_transform_free(t);
  ctorch_tensor_free(f);
  ctorch_tensor_free(im);
  ctorch_tensor_free(lb);
  ctorch_tensor_free(m);
  ctorch_tensor_free(s);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode;
  int64_t n, batch, shuffle, drop, workers, epochs, k;
  uint64_t seed, e;
  ctorch_data_loader l = NULL;
  ctorch_transform t = NULL;
  if (argc == 4 && strcmp(argv[1], "bench") == 0) return bench(argv[2], atoi(argv[3]));
  if (argc != 9) {
    fprintf(stderr, "usage: transform_dump gray|rgb|sizes N BATCH SHUFFLE SEED DROP_LAST WORKERS EPOCHS\n");
    return 2;
  }
  mode = argv[1];
  n = atoll(argv[2]);
  batch = atoll(argv[3]);
  shuffle = atoll(argv[4]);
  seed = strtoull(argv[5], NULL, 10);
  drop = atoll(argv[6]);
  workers = atoll(argv[7]);
  epochs = atoll(argv[8]);
  if (strcmp(mode, "gray") == 0) {
    const double mean[1] = {0.5}, std[1] = {0.25};
    const int64_t pad[1] = {2};
    ctorch_transform ts[4];
    ctorch_tensor x = stacked(n, 0, 12, 10), y = NULL, m = vec(mean, 1), s = vec(std, 1);
    int64_t *labels = malloc((size_t)n * sizeof *labels);
    for (k = 0; k < n; ++k) labels[k] = k % 10;
    OK(ctorch_tensor_from_data(&y, labels, (size_t)n * sizeof *labels, &n, 1, CTORCH_INT64));
    free(labels);
    OK(ctorch_transform_convert_image_dtype(&ts[0], CTORCH_FLOAT32));
    OK(ctorch_transform_random_crop(&ts[1], 8, 8, pad, 1, 0.0));
    OK(ctorch_transform_random_horizontal_flip(&ts[2], 0.5));
    OK(ctorch_transform_normalize(&ts[3], m, s));
    t = compose(ts, 4);
    OK(ctorch_data_loader_new(&l, x, y, batch, (int)shuffle, seed, (int)drop));
    OK(ctorch_data_loader_set_transform_fn(l, target_plus_100, NULL, NULL));
    ctorch_tensor_free(x);
    ctorch_tensor_free(y);
    ctorch_tensor_free(m);
    ctorch_tensor_free(s);
  } else if (strcmp(mode, "rgb") == 0) {
    const double mean[3] = {0.485, 0.456, 0.406}, std[3] = {0.229, 0.224, 0.225};
    ctorch_transform ts[4];
    ctorch_tensor x = stacked(n, 3, 12, 10), m = vec(mean, 3), s = vec(std, 3);
    ctorch_dataset ds = NULL;
    OK(ctorch_transform_convert_image_dtype(&ts[0], CTORCH_FLOAT32));
    OK(ctorch_transform_random_resized_crop(&ts[1], 8, 8, 0.08, 1.0, 3.0 / 4.0, 4.0 / 3.0));
    OK(ctorch_transform_random_horizontal_flip(&ts[2], 0.5));
    OK(ctorch_transform_normalize(&ts[3], m, s));
    t = compose(ts, 4);
    OK(ctorch_dataset_from_tensors(&ds, x, NULL));
    OK(ctorch_data_loader_from_dataset(&l, ds, batch, (int)shuffle, seed, (int)drop));
    ctorch_dataset_free(ds);
    ctorch_tensor_free(x);
    ctorch_tensor_free(m);
    ctorch_tensor_free(s);
  } else if (strcmp(mode, "sizes") == 0) {
    ctorch_transform ts[3];
    ctorch_dataset ds = NULL;
    g_len = n;
    OK(ctorch_transform_convert_image_dtype(&ts[0], CTORCH_FLOAT32));
    OK(ctorch_transform_center_crop(&ts[1], 8, 8));
    OK(ctorch_transform_random_horizontal_flip(&ts[2], 0.5));
    t = compose(ts, 3);
    OK(ctorch_dataset_from_callbacks(&ds, sizes_len, sizes_get, NULL, NULL));
    OK(ctorch_data_loader_from_dataset(&l, ds, batch, (int)shuffle, seed, (int)drop));
    OK(ctorch_data_loader_set_transform_fn(l, data_times_2, NULL, NULL));
    ctorch_dataset_free(ds);
  } else {
    fprintf(stderr, "transform_dump: unknown mode %s\n", mode);
    return 2;
  }
  OK(ctorch_data_loader_set_transform(l, t));
  ctorch_transform_free(t); /* the loader keeps its own reference */
  OK(ctorch_data_loader_set_workers(l, (int)workers, 2));
  for (e = 0; e < (uint64_t)epochs; ++e) {
    int has = 1;
    OK(ctorch_data_loader_start_epoch(l, e));
    for (k = 0;; ++k) {
      ctorch_tensor x = NULL, y = NULL;
      OK(ctorch_data_loader_next(&has, &x, &y, l));
      if (!has) break;
      print_batch(e, k, x, y);
      ctorch_tensor_free(x);
      ctorch_tensor_free(y);
    }
  }
  ctorch_data_loader_free(l);
  return 0;
}
