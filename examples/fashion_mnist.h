/*
 * Fashion-MNIST for the examples (lenet5.c, resnet.c, transformer.c,
 * ddp_lenet5.c, and through lenet5_model.h the benchmarks): the data set
 * standardised as lenet5.py does it, and the counts behind accuracy and
 * top-5 accuracy (nn_count_on: of a module over a whole loader). Header-only; the includer defines CHECK(call) first.
 */
#ifndef CTORCH_FASHION_MNIST_H
#define CTORCH_FASHION_MNIST_H

#include <stdint.h>

#include "ctorch.h"
#include "example_nn.h" /* scope_enter/leave/keep */

/* Number of rows whose argmax equals the label. */
static inline int64_t count_correct(ctorch_tensor logits, ctorch_tensor y) {
  ctorch_handle_scope s = scope_enter();
  ctorch_tensor t = NULL;
  int64_t one_dim = 1, n = 0;
  CHECK(ctorch_argmax(&t, logits, &one_dim, 0));
  CHECK(ctorch_eq_Tensor(&t, t, y));
  CHECK(ctorch_sum(&t, t, NULL));
  CHECK(ctorch_tensor_item_int64(&n, t));
  scope_leave(s);
  return n;
}

/* Number of rows whose label is among the 5 largest logits. */
static inline int64_t count_top5(ctorch_tensor logits, ctorch_tensor y) {
  ctorch_handle_scope s = scope_enter();
  ctorch_tensor vals = NULL, idx = NULL, yu = NULL, t = NULL;
  int64_t n = 0;
  CHECK(ctorch_topk(&vals, &idx, logits, 5, 1, 1, 1));
  CHECK(ctorch_unsqueeze(&yu, y, 1));
  CHECK(ctorch_eq_Tensor(&t, idx, yu));
  CHECK(ctorch_sum(&t, t, NULL));
  CHECK(ctorch_tensor_item_int64(&n, t));
  scope_leave(s);
  return n;
}

/* uint8 [N, 28, 28] -> float [N, 1, 28, 28], /255, then (x - mean) / std
 * with the training set's mean and (unbiased) std, exactly as lenet5.py. */
static inline ctorch_tensor preprocess(ctorch_tensor images, ctorch_tensor mean, ctorch_tensor std) {
  ctorch_handle_scope s = scope_enter();
  ctorch_tensor t = NULL;
  int64_t sizes[3], shape[4];
  CHECK(ctorch_tensor_sizes(sizes, 3, images));
  shape[0] = sizes[0];
  shape[1] = 1;
  shape[2] = sizes[1];
  shape[3] = sizes[2];
  CHECK(ctorch_tensor_to_dtype(&t, images, CTORCH_FLOAT32));
  CHECK(ctorch_div_Scalar(&t, t, ctorch_scalar_float(255.0)));
  CHECK(ctorch_sub_Tensor(&t, t, mean, ctorch_scalar_int(1)));
  CHECK(ctorch_div_Tensor(&t, t, std));
  CHECK(ctorch_reshape(&t, t, shape, 4));
  scope_keep(t);
  scope_leave(s);
  return t;
}

/* Fashion-MNIST from dir (new handles): images as float [N, 1, 28, 28],
 * standardised with the training set's statistics as lenet5.py does, and
 * int64 labels. */
static inline void load_data(const char *dir, ctorch_tensor *train_x, ctorch_tensor *train_y, ctorch_tensor *test_x,
                             ctorch_tensor *test_y) {
  ctorch_handle_scope s = scope_enter();
  ctorch_tensor train_images = NULL, test_images = NULL, f = NULL, xf = NULL, mean = NULL, std = NULL;
  CHECK(ctorch_data_mnist_read_dir(&train_images, train_y, dir, 1));
  CHECK(ctorch_data_mnist_read_dir(&test_images, test_y, dir, 0));
  /* f and xf (188 MB each) go at once rather than with the scope */
  CHECK(ctorch_tensor_to_dtype(&f, train_images, CTORCH_FLOAT32));
  CHECK(ctorch_div_Scalar(&xf, f, ctorch_scalar_float(255.0)));
  ctorch_tensor_free(f);
  CHECK(ctorch_mean(&mean, xf, NULL));
  CHECK(ctorch_std(&std, xf, 1));
  ctorch_tensor_free(xf);
  *train_x = scope_keep(preprocess(train_images, mean, std));
  *test_x = scope_keep(preprocess(test_images, mean, std));
  scope_keep(*train_y);
  scope_keep(*test_y);
  scope_leave(s);
}

/* count_correct for training metrics, without recording a graph. */
static inline int64_t count_correct_no_grad(ctorch_tensor logits, ctorch_tensor y) {
  ctorch_autograd_scope ng = NULL;
  int64_t n;
  CHECK(ctorch_autograd_scope_enter(&ng, CTORCH_SCOPE_NO_GRAD));
  n = count_correct(logits, y);
  CHECK(ctorch_autograd_scope_leave(ng));
  return n;
}

/* After the step: adds the batch to the epoch's training tallies (rows
 * predicted right, loss x rows, rows). Reads the loss: a sync on a GPU. */
static inline void tally_batch(ctorch_tensor logits, ctorch_tensor y, ctorch_tensor loss, int64_t *correct,
                               double *loss_sum, int64_t *seen) {
  int64_t rows = 0;
  double l = 0;
  CHECK(ctorch_tensor_numel(&rows, y));
  CHECK(ctorch_tensor_item_double(&l, loss));
  *correct += count_correct_no_grad(logits, y);
  *loss_sum += l * (double)rows;
  *seen += rows;
}

/* Over every batch of loader, net's logits under inference mode (in eval
 * mode if the caller set it): c[0] += rows predicted right, c[1] += rows
 * whose label is in the top 5, c[2] += rows. */
static inline void nn_count_on(ctorch_nn_module net, ctorch_data_loader loader, int64_t c[3]) {
  ctorch_autograd_scope inf = NULL;
  int has = 1;
  CHECK(ctorch_autograd_scope_enter(&inf, CTORCH_SCOPE_INFERENCE_MODE));
  CHECK(ctorch_data_loader_start_epoch(loader, 0));
  while (has) {
    ctorch_handle_scope s = scope_enter(); /* the batch and its logits */
    ctorch_tensor x = NULL, y = NULL, logits = NULL;
    int64_t b = 0;
    CHECK(ctorch_data_loader_next(&has, &x, &y, loader));
    if (has) {
      CHECK(ctorch_nn_module_forward(&logits, net, x));
      c[0] += count_correct(logits, y);
      c[1] += count_top5(logits, y);
      CHECK(ctorch_tensor_numel(&b, y));
      c[2] += b;
    }
    scope_leave(s);
  }
  CHECK(ctorch_autograd_scope_leave(inf));
}

#endif
