/*
 * ResNet-50 as a C user of ctorch can speed it up today: the
 * torchvision state dict's weights taken out of the dict, each eval-mode
 * BatchNorm folded into the convolution before it, the conv weights and the
 * input in channels-last, and the forward written with the generated ops.
 * Included by model_bench.c (modes resnet50-fold, resnet50-fold-nchw,
 * resnet50-cl: the last two separate the two changes; resnet50-fold-mkldnn:
 * folded, and weights and activations in oneDNN's blocked layout, weights
 * reordered once, as torch.utils.mkldnn.to_mkldnn's modules do).
 *
 * Folding is torch.nn.utils.fusion.fuse_conv_bn_weights's arithmetic, op for
 * op in float32, so the folded weights are those PyTorch would make:
 *   rs = rsqrt(var + eps);  w' = w * (gamma * rs).reshape(-1, 1, 1, 1)
 *   b' = ((0 - mean) * rs) * gamma + beta        (the convs have no bias)
 * What the fold saves: one pass over each conv's output (53 BatchNorms); a
 * convolution with a bias adds it in the same kernel. Channels-last lets
 * oneDNN run its convolutions without reordering activations on every call.
 */

enum { RF_CONVS = 53 }; /* stem + 16 blocks x 3 + 4 downsamples */

typedef struct {
  ctorch_tensor w, b;     /* b: the folded bias, NULL when not folded */
  ctorch_tensor bn[4];    /* weight, bias, running_mean, running_var when not folded */
  int64_t stride[2], pad[2]; /* both dimensions: mkldnn_convolution wants 2 values */
} rf_conv;

typedef struct {
  int fold, channels_last, mkldnn;
  ctorch_tensor_dict dump; /* not NULL: rf_load puts each (folded) conv's weight and bias here, NCHW */
  rf_conv conv[RF_CONVS]; /* forward order: stem; per block conv1..3, then downsample */
  ctorch_tensor fc_w, fc_b;
} rfold;

static const double rf_eps = 1e-5; /* BatchNorm2d's default, torchvision's resnet50 */

static ctorch_tensor rf_get(ctorch_tensor_dict sd, const char *prefix, const char *name) {
  char key[96];
  ctorch_tensor t = NULL;
  snprintf(key, sizeof key, "%s%s", prefix, name);
  if (ctorch_tensor_dict_find(&t, sd, key) != CTORCH_OK) {
    fprintf(stderr, "model_bench: %s is not in the state dict\n", key);
    exit(1);
  }
  return t;
}

/* *w_out, *b_out NEW: fuse_conv_bn_weights(w, None, mean, var, eps, gamma, beta). */
static ctorch_status rf_fold(ctorch_tensor *w_out, ctorch_tensor *b_out, ctorch_tensor w, const ctorch_tensor bn[4]) {
  const int64_t shape[4] = {-1, 1, 1, 1};
  ctorch_handle_scope s = NULL;
  ctorch_tensor rs = NULL, t = NULL, wf = NULL, bf = NULL;
  ctorch_status st = ctorch_handle_scope_enter(&s);
  if (!st) st = ctorch_add_Scalar(&rs, bn[3], ctorch_scalar_float(rf_eps), ctorch_scalar_int(1));
  if (!st) st = ctorch_rsqrt(&rs, rs);
  if (!st) st = ctorch_mul_Tensor(&t, bn[0], rs);
  if (!st) st = ctorch_reshape(&t, t, shape, 4);
  if (!st) st = ctorch_mul_Tensor(&wf, w, t);
  if (!st) st = ctorch_zeros_like(&bf, bn[2], NULL, NULL, NULL, NULL, NULL);
  if (!st) st = ctorch_sub_Tensor(&bf, bf, bn[2], ctorch_scalar_int(1));
  if (!st) st = ctorch_mul_Tensor(&bf, bf, rs);
  if (!st) st = ctorch_mul_Tensor(&bf, bf, bn[0]);
  if (!st) st = ctorch_add_Tensor(&bf, bf, bn[1], ctorch_scalar_int(1));
  if (!st) st = ctorch_handle_scope_keep(wf);
  if (!st) st = ctorch_handle_scope_keep(bf);
  ctorch_handle_scope_leave(s);
  if (!st) *w_out = wf, *b_out = bf;
  return st;
}

/* conv at path conv_key (".weight" appended) with the BatchNorm at bn_prefix. */
static void rf_load_conv(rf_conv *c, const rfold *r, ctorch_tensor_dict sd, const char *conv_key, const char *bn_prefix,
                         int64_t stride, int64_t pad) {
  static const char *const bn_names[4] = {"weight", "bias", "running_mean", "running_var"};
  ctorch_tensor w = rf_get(sd, conv_key, ".weight");
  int i;
  for (i = 0; i < 4; ++i) c->bn[i] = rf_get(sd, bn_prefix, bn_names[i]);
  c->stride[0] = c->stride[1] = stride, c->pad[0] = c->pad[1] = pad, c->b = NULL;
  if (r->fold) {
    CHECK(rf_fold(&c->w, &c->b, w, c->bn));
    ctorch_tensor_free(w);
    for (i = 0; i < 4; ++i) ctorch_tensor_free(c->bn[i]), c->bn[i] = NULL;
  } else {
    c->w = w;
  }
  if (r->dump) {
    char key[96];
    snprintf(key, sizeof key, "%s.weight", conv_key);
    CHECK(ctorch_tensor_dict_set(r->dump, key, c->w));
    snprintf(key, sizeof key, "%s.bias", conv_key);
    if (c->b) CHECK(ctorch_tensor_dict_set(r->dump, key, c->b));
  }
  if (r->channels_last) {
    ctorch_tensor cl = NULL;
    CHECK(ctorch_contiguous(&cl, c->w, CTORCH_MEMORY_CHANNELS_LAST));
    ctorch_tensor_free(c->w);
    c->w = cl;
  }
  if (r->mkldnn) { /* MkldnnConv2d's buffers: the weight reordered for oneDNN once, the bias as it is */
    const int64_t one[2] = {1, 1};
    ctorch_tensor m = NULL, re = NULL;
    CHECK(ctorch_to_mkldnn(&m, c->w, NULL));
#if CTORCH_TORCH_VERSION_MAJOR >= 2
    CHECK(ctorch_mkldnn_reorder_conv2d_weight(&re, m, c->pad, 2, c->stride, 2, one, 2, 1, NULL, 0));
#else
    CHECK(ctorch_mkldnn_reorder_conv2d_weight(&re, m, c->pad, 2, c->stride, 2, one, 2, 1));
#endif
    ctorch_tensor_free(m);
    ctorch_tensor_free(c->w);
    c->w = re;
  }
}

static void rf_load(rfold *r, ctorch_tensor_dict sd) {
  int n = 0, l, b;
  rf_load_conv(&r->conv[n++], r, sd, "conv1", "bn1.", 2, 3);
  for (l = 0; l < 4; ++l)
    for (b = 0; b < resnet50_blocks[l]; ++b) {
      char conv[48], bn[48], p[24];
      int j;
      snprintf(p, sizeof p, "layer%d.%d.", l + 1, b);
      for (j = 1; j <= 3; ++j) { /* torchvision v1.5: the stride on conv2 */
        snprintf(conv, sizeof conv, "%sconv%d", p, j);
        snprintf(bn, sizeof bn, "%sbn%d.", p, j);
        rf_load_conv(&r->conv[n++], r, sd, conv, bn, j == 2 && b == 0 && l > 0 ? 2 : 1, j == 2);
      }
      if (b == 0) {
        snprintf(conv, sizeof conv, "%sdownsample.0", p);
        snprintf(bn, sizeof bn, "%sdownsample.1.", p);
        rf_load_conv(&r->conv[n++], r, sd, conv, bn, l > 0 ? 2 : 1, 0);
      }
    }
  r->fc_w = rf_get(sd, "fc.", "weight");
  r->fc_b = rf_get(sd, "fc.", "bias");
}

static void rf_free(rfold *r) {
  int i, j;
  for (i = 0; i < RF_CONVS; ++i) {
    ctorch_tensor_free(r->conv[i].w);
    ctorch_tensor_free(r->conv[i].b);
    for (j = 0; j < 4; ++j) ctorch_tensor_free(r->conv[i].bn[j]);
  }
  ctorch_tensor_free(r->fc_w);
  ctorch_tensor_free(r->fc_b);
}

/* *y NEW (in the open scope): conv (+ bias when folded, + BatchNorm when not). */
static ctorch_status rf_conv_bn(ctorch_tensor *y, const rfold *r, const rf_conv *c, ctorch_tensor x) {
  const int64_t one[2] = {1, 1};
  ctorch_status st = r->mkldnn ? ctorch_mkldnn_convolution(y, x, c->w, c->b, c->pad, 2, c->stride, 2, one, 2, 1)
                               : ctorch_conv2d(y, x, c->w, c->b, c->stride, 2, c->pad, 2, one, 2, 1);
  if (!st && c->bn[0]) st = ctorch_batch_norm(y, *y, c->bn[0], c->bn[1], c->bn[2], c->bn[3], 0, 0.1, rf_eps, 1);
  return st;
}

/* *out NEW: torchvision ResNet._forward_impl on x (NCHW; converted here when channels-last). */
static ctorch_status rf_forward(ctorch_tensor *out, const rfold *r, ctorch_tensor x) {
  const int64_t k3 = 3, s2 = 2, p1 = 1, d1 = 1, pooled[2] = {1, 1};
  ctorch_handle_scope s = NULL;
  ctorch_tensor h = NULL, id = NULL;
  ctorch_status st = ctorch_handle_scope_enter(&s);
  int n = 0, l, b;
  if (!st && r->channels_last) st = ctorch_contiguous(&x, x, CTORCH_MEMORY_CHANNELS_LAST);
  if (!st && r->mkldnn) st = ctorch_to_mkldnn(&x, x, NULL);
  if (!st) st = rf_conv_bn(&x, r, &r->conv[n++], x);
  if (!st) st = ctorch_relu_(x);
  if (!st) st = ctorch_max_pool2d(&x, x, &k3, 1, &s2, 1, &p1, 1, &d1, 1, 0);
  for (l = 0; !st && l < 4; ++l)
    for (b = 0; !st && b < resnet50_blocks[l]; ++b) {
      id = x;
      st = rf_conv_bn(&h, r, &r->conv[n++], x);
      if (!st) st = ctorch_relu_(h);
      if (!st) st = rf_conv_bn(&h, r, &r->conv[n++], h);
      if (!st) st = ctorch_relu_(h);
      if (!st) st = rf_conv_bn(&h, r, &r->conv[n++], h);
      if (!st && b == 0) st = rf_conv_bn(&id, r, &r->conv[n++], x);
      if (!st) st = ctorch_add__Tensor(h, id, ctorch_scalar_int(1));
      if (!st) st = ctorch_relu_(h);
      x = h;
    }
  if (!st) st = ctorch_adaptive_avg_pool2d(&x, x, pooled, 2);
#if CTORCH_TORCH_VERSION_MAJOR >= 2
  if (!st && r->mkldnn) st = ctorch_to_dense(&x, x, NULL, NULL);
#else
  if (!st && r->mkldnn) st = ctorch_to_dense(&x, x, NULL);
#endif
  if (!st) st = ctorch_flatten_using_ints(&x, x, 1, -1);
  if (!st) st = ctorch_linear(&x, x, r->fc_w, r->fc_b);
  if (!st) st = ctorch_handle_scope_keep(*out = x);
  ctorch_handle_scope_leave(s);
  return st;
}
