/*
 * The small ResNet of examples/resnet.c (and examples/resnet.py), shared with
 * bench/gpu_train.c so the example and the benchmark train the same network.
 * Header-only; the includer defines CHECK(call) and includes
 * lenet5_model.h (then(), make_layer()) first.
 */
#ifndef CTORCH_RESNET_MODEL_H
#define CTORCH_RESNET_MODEL_H

#include <math.h>

#include "ctorch.h"

#ifndef CTORCH_LENET5_MODEL_H
#error "include lenet5_model.h before resnet_model.h"
#endif

typedef struct {
  ctorch_tensor weight, bias, running_mean, running_var;
} batchnorm;

typedef struct {
  ctorch_tensor conv1, conv2, proj; /* proj NULL: identity shortcut */
  batchnorm bn1, bn2, proj_bn;
  int64_t stride;
} block;

typedef struct {
  ctorch_tensor stem;
  batchnorm stem_bn;
  block blocks[3];
  ctorch_tensor fc_w, fc_b;
} resnet;

/* nn.Conv2d(cin, cout, k, bias=False)'s weight: kaiming_uniform_(a=sqrt(5)). */
static inline ctorch_tensor conv_weight(int64_t cout, int64_t cin, int64_t k) {
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  const int64_t size[4] = {cout, cin, k, k};
  ctorch_tensor w = NULL;
  CHECK(ctorch_zeros(&w, size, 4, &f32, NULL, NULL, NULL));
  CHECK(ctorch_init_kaiming_uniform_(w, sqrt(5.0), CTORCH_FAN_IN, CTORCH_NONLINEARITY_LEAKY_RELU));
  CHECK(ctorch_tensor_set_requires_grad(w, 1));
  return w;
}

/* nn.BatchNorm2d(c): weight 1, bias 0 (parameters), running mean 0 and var 1 (buffers). */
static inline batchnorm make_bn(int64_t c) {
  const ctorch_dtype f32 = CTORCH_FLOAT32;
  batchnorm b;
  CHECK(ctorch_ones(&b.weight, &c, 1, &f32, NULL, NULL, NULL));
  CHECK(ctorch_zeros(&b.bias, &c, 1, &f32, NULL, NULL, NULL));
  CHECK(ctorch_zeros(&b.running_mean, &c, 1, &f32, NULL, NULL, NULL));
  CHECK(ctorch_ones(&b.running_var, &c, 1, &f32, NULL, NULL, NULL));
  CHECK(ctorch_tensor_set_requires_grad(b.weight, 1));
  CHECK(ctorch_tensor_set_requires_grad(b.bias, 1));
  return b;
}

/* In the order resnet.py's modules draw their initial values. */
static inline block make_block(int64_t cin, int64_t cout, int64_t stride) {
  block b;
  b.stride = stride;
  b.conv1 = conv_weight(cout, cin, 3);
  b.bn1 = make_bn(cout);
  b.conv2 = conv_weight(cout, cout, 3);
  b.bn2 = make_bn(cout);
  b.proj = NULL;
  if (stride != 1 || cin != cout) {
    b.proj = conv_weight(cout, cin, 1);
    b.proj_bn = make_bn(cout);
  }
  return b;
}

static inline void make_resnet(resnet *m, int64_t w) {
  const int64_t fc[2] = {10, 4 * w};
  m->stem = conv_weight(w, 1, 3);
  m->stem_bn = make_bn(w);
  m->blocks[0] = make_block(w, w, 1);
  m->blocks[1] = make_block(w, 2 * w, 2);
  m->blocks[2] = make_block(2 * w, 4 * w, 2);
  make_layer(&m->fc_w, &m->fc_b, fc, 2);
}

/* Every tensor of the model (parameters, then BN buffers when with_buffers),
 * in a fixed order; returns the count. Handles are the model's (borrowed). */
static inline int model_tensors(resnet *m, ctorch_tensor **out, int with_buffers) {
  int n = 0, i;
#define ADD(t) out[n++] = &(t)
#define ADD_BN(b)                          \
  do {                                     \
    ADD((b).weight);                       \
    ADD((b).bias);                         \
    if (with_buffers) {                    \
      ADD((b).running_mean);               \
      ADD((b).running_var);                \
    }                                      \
  } while (0)
  ADD(m->stem);
  ADD_BN(m->stem_bn);
  for (i = 0; i < 3; ++i) {
    block *b = &m->blocks[i];
    ADD(b->conv1);
    ADD_BN(b->bn1);
    ADD(b->conv2);
    ADD_BN(b->bn2);
    if (b->proj) {
      ADD(b->proj);
      ADD_BN(b->proj_bn);
    }
  }
  ADD(m->fc_w);
  ADD(m->fc_b);
#undef ADD
#undef ADD_BN
  return n;
}

static inline ctorch_tensor resnet_conv(ctorch_tensor x, ctorch_tensor w, int64_t stride, int64_t pad) {
  const int64_t s[2] = {stride, stride}, p[2] = {pad, pad}, d[2] = {1, 1};
  ctorch_tensor y = NULL;
  CHECK(ctorch_conv2d(&y, x, w, NULL, s, 2, p, 2, d, 2, 1));
  return y;
}

static inline ctorch_tensor resnet_bn(ctorch_tensor x, batchnorm *b, int training) {
  ctorch_tensor y = NULL;
  CHECK(ctorch_batch_norm(&y, x, b->weight, b->bias, b->running_mean, b->running_var, training, 0.1, 1e-5, 1));
  return y;
}

static inline ctorch_tensor resnet_relu(ctorch_tensor x) {
  ctorch_tensor y = NULL;
  CHECK(ctorch_relu(&y, x));
  return y;
}

/* relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)); x is borrowed. */
static inline ctorch_tensor block_forward(block *b, ctorch_tensor x, int training) {
  ctorch_tensor t = resnet_conv(x, b->conv1, b->stride, 1), sc, out = NULL;
  t = then(t, resnet_bn(t, &b->bn1, training));
  t = then(t, resnet_relu(t));
  t = then(t, resnet_conv(t, b->conv2, 1, 1));
  t = then(t, resnet_bn(t, &b->bn2, training));
  if (b->proj) {
    sc = resnet_conv(x, b->proj, b->stride, 0);
    sc = then(sc, resnet_bn(sc, &b->proj_bn, training));
  } else {
    CHECK(ctorch_tensor_ref(&sc, x));
  }
  CHECK(ctorch_add_Tensor(&out, t, sc, ctorch_scalar_int(1)));
  ctorch_tensor_free(t);
  ctorch_tensor_free(sc);
  return then(out, resnet_relu(out));
}

/* logits [B, 10] (new handle) for x [B, 1, 28, 28]. */
static inline ctorch_tensor resnet_forward(resnet *m, ctorch_tensor x, int training) {
  const int64_t one[2] = {1, 1};
  ctorch_tensor t = resnet_conv(x, m->stem, 1, 1), u = NULL;
  int i;
  t = then(t, resnet_bn(t, &m->stem_bn, training));
  t = then(t, resnet_relu(t));
  for (i = 0; i < 3; ++i) t = then(t, block_forward(&m->blocks[i], t, training));
  CHECK(ctorch_adaptive_avg_pool2d(&u, t, one, 2));
  t = then(t, u);
  CHECK(ctorch_flatten_using_ints(&u, t, 1, -1));
  t = then(t, u);
  CHECK(ctorch_linear(&u, t, m->fc_w, m->fc_b));
  return then(t, u);
}

/* Moves every parameter (as a leaf that requires grad, like Module.to) and
 * buffer of m to device d. */
static inline void resnet_to_device(resnet *m, ctorch_device d) {
  ctorch_tensor *slots[64];
  int n = model_tensors(m, slots, 1), i;
  if (d.type == CTORCH_DEVICE_CPU) return;
  for (i = 0; i < n; ++i) {
    ctorch_tensor moved = NULL, leaf = NULL;
    int rg = 0;
    CHECK(ctorch_tensor_requires_grad(&rg, *slots[i]));
    CHECK(ctorch_tensor_to_device(&moved, *slots[i], d));
    if (rg) {
      CHECK(ctorch_tensor_detach(&leaf, moved));
      CHECK(ctorch_tensor_set_requires_grad(leaf, 1));
      ctorch_tensor_free(moved);
      moved = leaf;
    }
    ctorch_tensor_free(*slots[i]);
    *slots[i] = moved;
  }
}

/* Converts every 4-d parameter (the convolutions' weights) to channels-last
 * (NHWC) storage, each staying a leaf that requires grad, like
 * model.to(memory_format=torch.channels_last): cuDNN's half-precision
 * convolutions then run without transposing NCHW data in and out. */
static inline void resnet_to_channels_last(resnet *m) {
  ctorch_tensor *slots[64];
  int n = model_tensors(m, slots, 0), i;
  for (i = 0; i < n; ++i) {
    ctorch_tensor cl = NULL, leaf = NULL;
    int64_t dim = 0;
    CHECK(ctorch_tensor_dim(&dim, *slots[i]));
    if (dim != 4) continue;
    CHECK(ctorch_contiguous(&cl, *slots[i], CTORCH_MEMORY_CHANNELS_LAST));
    CHECK(ctorch_tensor_detach(&leaf, cl));
    CHECK(ctorch_tensor_set_requires_grad(leaf, 1));
    ctorch_tensor_free(cl);
    ctorch_tensor_free(*slots[i]);
    *slots[i] = leaf;
  }
}

/* Frees every tensor of m. */
static inline void resnet_free(resnet *m) {
  ctorch_tensor *slots[64];
  int n = model_tensors(m, slots, 1), i;
  for (i = 0; i < n; ++i) ctorch_tensor_free(*slots[i]);
}

#endif
