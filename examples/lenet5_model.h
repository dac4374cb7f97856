/*
 * LeNet-5 written functionally (its ten tensors by hand, forward as ATen
 * calls): the network examples/lenet5.c and ddp_lenet5.c build from modules
 * (lenet5_nn.h), kept for bench/train_ctorch.c (the module-vs-functional
 * cost), the other benchmarks, tests/models/test_trace.c and resnet_model.h. Header-only; the
 * includer defines CHECK(call) (how a failed call is reported) before
 * including it. The data set and the accuracy counts are fashion_mnist.h's.
 *
 * Handles: a training step or an evaluation batch runs inside a handle scope
 * (scope_enter/scope_leave), which frees every tensor handle made in it; the
 * helpers return their tensors into the caller's scope, and those that
 * return numbers open their own.
 */
#ifndef CTORCH_LENET5_MODEL_H
#define CTORCH_LENET5_MODEL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ctorch.h"

#ifndef CHECK
#error "define CHECK(call) before including lenet5_model.h"
#endif

#include "train_device.h" /* train_target, amp_enter/amp_leave */
#include "fashion_mnist.h" /* scopes, now(), the data and the accuracy counts */

enum { CONV1_W, CONV1_B, CONV2_W, CONV2_B, FC1_W, FC1_B, FC2_W, FC2_B, FC3_W, FC3_B, NPARAMS };

/* The names of lenet5.py's state_dict, so Python can load what we save. */
static const char *const PARAM_NAMES[NPARAMS] = {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                                 "fc1.weight",   "fc1.bias",   "fc2.weight",   "fc2.bias",
                                                 "fc3.weight",   "fc3.bias"};

/* A weight and its bias initialised as nn.Conv2d / nn.Linear do:
 * kaiming_uniform_(a=sqrt(5)), then bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)). */
static inline void make_layer(ctorch_tensor *w, ctorch_tensor *b, const int64_t *wsize, size_t wdim) {
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  int64_t fan_in = 0, fan_out = 0;
  double bound;
  CHECK(ctorch_zeros(w, wsize, wdim, &f32, NULL, NULL, NULL));
  CHECK(ctorch_zeros(b, wsize, 1, &f32, NULL, NULL, NULL));
  CHECK(ctorch_init_kaiming_uniform_(*w, sqrt(5.0), CTORCH_FAN_IN, CTORCH_NONLINEARITY_LEAKY_RELU));
  CHECK(ctorch_init_calculate_fan_in_and_fan_out(&fan_in, &fan_out, *w));
  bound = fan_in > 0 ? 1.0 / sqrt((double)fan_in) : 0.0;
  CHECK(ctorch_init_uniform_(*b, -bound, bound));
  CHECK(ctorch_tensor_set_requires_grad(*w, 1));
  CHECK(ctorch_tensor_set_requires_grad(*b, 1));
}

static inline void make_model(ctorch_tensor *p) {
  static const int64_t c1[4] = {6, 1, 5, 5}, c2[4] = {16, 6, 5, 5};
  static const int64_t f1[2] = {120, 256}, f2[2] = {84, 120}, f3[2] = {10, 84};
  make_layer(&p[CONV1_W], &p[CONV1_B], c1, 4);
  make_layer(&p[CONV2_W], &p[CONV2_B], c2, 4);
  make_layer(&p[FC1_W], &p[FC1_B], f1, 2);
  make_layer(&p[FC2_W], &p[FC2_B], f2, 2);
  make_layer(&p[FC3_W], &p[FC3_B], f3, 2);
}

/* Our handle on an intermediate goes as soon as the next one exists (the
 * scope forgets it): the graph keeps whatever backward needs, and dropping the
 * rest at once lets the allocator reuse that memory within the step, as C++
 * temporaries do. Leaving every activation to the step's scope instead made
 * each step grow and trim the heap (about 10 brk calls and 15% of the time in
 * page faults). */
static inline ctorch_tensor then(ctorch_tensor prev, ctorch_tensor next) {
  ctorch_tensor_free(prev);
  return next;
}

/* logits [B, 10] for x [B, 1, 28, 28]. */
static inline ctorch_tensor forward(ctorch_tensor *p, ctorch_tensor x) {
  static const int64_t one[2] = {1, 1}, zero[2] = {0, 0}, two[2] = {2, 2};
  ctorch_tensor t = NULL, u = NULL;
  CHECK(ctorch_conv2d(&t, x, p[CONV1_W], p[CONV1_B], one, 2, zero, 2, one, 2, 1));
  CHECK(ctorch_relu(&u, t));
  t = then(t, u);
  CHECK(ctorch_max_pool2d(&u, t, two, 2, two, 2, zero, 2, one, 2, 0));
  t = then(t, u);
  CHECK(ctorch_conv2d(&u, t, p[CONV2_W], p[CONV2_B], one, 2, zero, 2, one, 2, 1));
  t = then(t, u);
  CHECK(ctorch_relu(&u, t));
  t = then(t, u);
  CHECK(ctorch_max_pool2d(&u, t, two, 2, two, 2, zero, 2, one, 2, 0));
  t = then(t, u);
  CHECK(ctorch_flatten_using_ints(&u, t, 1, -1));
  t = then(t, u);
  CHECK(ctorch_linear(&u, t, p[FC1_W], p[FC1_B]));
  t = then(t, u);
  CHECK(ctorch_relu(&u, t));
  t = then(t, u);
  CHECK(ctorch_linear(&u, t, p[FC2_W], p[FC2_B]));
  t = then(t, u);
  CHECK(ctorch_relu(&u, t));
  t = then(t, u);
  CHECK(ctorch_linear(&u, t, p[FC3_W], p[FC3_B]));
  return then(t, u);
}

/* Logits and mean cross-entropy of one batch. */
static inline ctorch_tensor batch_loss(ctorch_tensor *p, ctorch_tensor x, ctorch_tensor y, ctorch_tensor *logits) {
  ctorch_tensor loss = NULL;
  *logits = forward(p, x);
  CHECK(ctorch_cross_entropy_loss(&loss, *logits, y, NULL, 1 /* mean */, -100, 0.0));
  return loss;
}

/* A training step's forward pass (lenet5.c, ddp_lenet5.c): the loader's next
 * batch, its logits and mean cross-entropy under the target's autocast, in
 * the caller's scope. 0 when the loader has no batch left in this epoch. */
static inline int next_batch_loss(ctorch_tensor *p, ctorch_data_loader loader, const train_target *t, ctorch_tensor *y,
                                  ctorch_tensor *logits, ctorch_tensor *loss) {
  ctorch_tensor x = NULL;
  ctorch_autocast_scope amp;
  int has = 0;
  CHECK(ctorch_data_loader_next(&has, &x, y, loader));
  if (!has) return 0;
  amp = amp_enter(t);
  *loss = batch_loss(p, x, *y, logits);
  amp_leave(amp);
  return 1;
}

/* Over every batch of loader, under inference mode: c[0] += rows predicted
 * right, c[1] += rows whose label is in the top 5, c[2] += rows. */
static inline void count_on(ctorch_tensor *p, ctorch_data_loader loader, int64_t c[3]) {
  ctorch_autograd_scope scope = NULL;
  int has = 1;
  CHECK(ctorch_autograd_scope_enter(&scope, CTORCH_SCOPE_INFERENCE_MODE));
  CHECK(ctorch_data_loader_start_epoch(loader, 0));
  while (has) {
    ctorch_handle_scope s = scope_enter(); /* the batch and its logits */
    ctorch_tensor x = NULL, y = NULL, logits;
    int64_t b = 0;
    CHECK(ctorch_data_loader_next(&has, &x, &y, loader));
    if (has) {
      logits = forward(p, x);
      c[0] += count_correct(logits, y);
      c[1] += count_top5(logits, y);
      CHECK(ctorch_tensor_numel(&b, y));
      c[2] += b;
    }
    scope_leave(s);
  }
  CHECK(ctorch_autograd_scope_leave(scope));
}

#endif
