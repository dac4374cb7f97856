/* Loader throughput: Fashion-MNIST training images through
 * a host-defined dataset whose get_item normalises one image like
 * torchvision's ToTensor + Normalize (uint8 [28, 28] -> float [1, 28, 28],
 * /255, -mean, /std), batches of 64 stacked by a ctorch loader with
 * WORKERS worker threads, shuffled. bench/loader_throughput.py runs this
 * and the same pipeline in torch.utils.data.DataLoader.
 *
 *   loader_throughput DATA_DIR WORKERS BATCHES REPS
 * prints one JSON line: {"img_s": [rep rates], "batches": B, "workers": W}. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ctorch.h"

#define OK(call)                                                                         \
  do {                                                                                   \
    ctorch_status st_ = (call);                                                          \
    if (st_ != CTORCH_OK) {                                                              \
      fprintf(stderr, "%s: %s: %s\n", #call, ctorch_status_name(st_), ctorch_last_error()); \
      exit(2);                                                                           \
    }                                                                                    \
  } while (0)

typedef struct {
  ctorch_tensor images, labels;
} Fashion;

static ctorch_status fm_len(void *ud, int64_t *out) { return ctorch_tensor_numel(out, ((Fashion *)ud)->labels); }

/* x = images[i].unsqueeze(0).float().div(255).sub(0.2860).div(0.3530); y = labels[i] */
static ctorch_status fm_get(void *ud, int64_t i, ctorch_tensor *data, ctorch_tensor *target) {
  Fashion *f = ud;
  ctorch_tensor a = NULL, b = NULL, c = NULL, d = NULL, e = NULL;
  ctorch_status st;
  if ((st = ctorch_select_int(&a, f->images, 0, i)) != CTORCH_OK) goto out;
  if ((st = ctorch_unsqueeze(&b, a, 0)) != CTORCH_OK) goto out;
  if ((st = ctorch_to_dtype(&c, b, CTORCH_FLOAT32, 0, 0, NULL)) != CTORCH_OK) goto out;
  if ((st = ctorch_div_Scalar(&d, c, ctorch_scalar_float(255.0))) != CTORCH_OK) goto out;
  if ((st = ctorch_sub_Scalar(&e, d, ctorch_scalar_float(0.2860), ctorch_scalar_int(1))) != CTORCH_OK) goto out;
  if ((st = ctorch_div_Scalar(data, e, ctorch_scalar_float(0.3530))) != CTORCH_OK) goto out;
  st = ctorch_select_int(target, f->labels, 0, i);
out:
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(c);
  ctorch_tensor_free(d);
  ctorch_tensor_free(e);
  return st;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  Fashion f;
  ctorch_dataset ds = NULL;
  ctorch_data_loader l = NULL;
  int workers, batches, reps, r;
  if (argc != 5) {
    fprintf(stderr, "usage: loader_throughput DATA_DIR WORKERS BATCHES REPS\n");
    return 2;
  }
  workers = atoi(argv[2]);
  batches = atoi(argv[3]);
  reps = atoi(argv[4]);
  OK(ctorch_data_mnist_read_dir(&f.images, &f.labels, argv[1], 1));
  OK(ctorch_dataset_from_callbacks(&ds, fm_len, fm_get, &f, NULL));
  OK(ctorch_data_loader_from_dataset(&l, ds, 64, 1, 0, 1));
  OK(ctorch_data_loader_set_workers(l, workers, 2));
  printf("{\"workers\": %d, \"batches\": %d, \"img_s\": [", workers, batches);
  for (r = 0; r <= reps; ++r) { /* rep 0 warms up, not reported */
    int b, has = 1;
    int64_t images = 0;
    double t0;
    OK(ctorch_data_loader_start_epoch(l, (uint64_t)r));
    t0 = now();
    for (b = 0; b < batches; ++b) {
      ctorch_tensor x = NULL, y = NULL;
      int64_t sizes[4];
      OK(ctorch_data_loader_next(&has, &x, &y, l));
      if (!has) break;
      OK(ctorch_tensor_sizes(sizes, 4, x));
      images += sizes[0];
      ctorch_tensor_free(x);
      ctorch_tensor_free(y);
    }
    if (r > 0) printf("%s%.1f", r > 1 ? ", " : "", (double)images / (now() - t0));
  }
  printf("]}\n");
  ctorch_data_loader_free(l);
  ctorch_dataset_free(ds);
  ctorch_tensor_free(f.images);
  ctorch_tensor_free(f.labels);
  return 0;
}
