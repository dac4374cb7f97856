/*
 * Classifies one image file with a torchvision ResNet-18, in C through
 * ctorch: what Python writes as torchvision.io.read_image + the eval
 * transforms + torchvision.models.resnet18.
 *
 *   read_image(RGB) -> Resize(256) (shorter side, bilinear) -> CenterCrop(224)
 *   -> ConvertImageDtype(float) -> Normalize(ImageNet mean, std)
 *   -> resnet18 in eval mode -> softmax -> top 5
 *
 * The network is made of torch.nn's modules with torchvision's names
 * (conv1, bn1, layer1.0.conv1, layer2.0.downsample.0, fc, ...), BasicBlock
 * being a module whose forward is C (ctorch_nn_custom_new), so a state dict
 * Python saved with torch.save(model.state_dict()) loads strictly.
 * examples/classify_image.py is the twin (torchvision itself): this file has
 * 212 lines (164 after this comment, blank lines left out) against the
 * twin's 58 (38 after its docstring).
 *
 * Measured by tests/examples/classify_vs_python.py (one 300x401 image, one
 * thread): the 1,000 logits, the probabilities and the top 5 bit-identical
 * to torchvision's for a PNG and a JPEG (quality 90), with Debian's torch
 * 1.13.1 / torchvision 0.14.1 (Resize without antialias, its default; the
 * same libjpeg as ctorch) and with PyPI's torch 2.15.0 / torchvision 0.29.2
 * (antialias, its default; its own bundled libjpeg, which decoded this JPEG
 * to the same pixels). Without the channels-last copy below, one pixel of
 * the resized image differed by 1 and the logits by 1.2e-5 (1.13.1).
 *
 * Usage: classify_image --image PATH --weights PATH [--antialias 0|1]
 *                       [--threads T] [--logits PATH]
 * --antialias 1 (the default) is torchvision >= 0.17's Resize; 0 is 0.14's.
 * Output: a header line, then one line per class of the top 5, best first:
 *   rank=R class=C prob=P logit=L
 * (P and L as %.9g: the float32 exactly); --logits PATH writes all 1,000
 * logits, one %.9g per line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctorch.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ctorch_status st_ = (call);                                                                    \
    if (st_ != CTORCH_OK) {                                                                        \
      fprintf(stderr, "classify_image: %s:%d: %s failed with %s: %s\n", __FILE__, __LINE__, #call, \
              ctorch_status_name(st_), ctorch_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#include "train_device.h" /* example_args.h's device options (unused here) */
#include "example_args.h"
#include "example_nn.h"

#define CLASSES 1000

/* out = the child `name` of self applied to x (a NEW handle). */
static ctorch_status call_child(ctorch_tensor *out, ctorch_nn_module self, const char *name, ctorch_tensor x) {
  ctorch_nn_module child = NULL;
  ctorch_status st = ctorch_nn_module_get(&child, self, name);
  if (st == CTORCH_OK) st = ctorch_nn_module_forward(out, child, x);
  ctorch_nn_module_free(child);
  return st;
}

/* torchvision's BasicBlock.forward: relu(bn2(conv2(relu(bn1(conv1(x))))) + identity),
 * identity being downsample(x) when the block has one (user_data nonzero). */
static ctorch_status basic_block(void *has_down, ctorch_nn_module self, const ctorch_tensor *in, size_t n_in,
                                 const char *kwargs, ctorch_tensor *out, size_t max_out, size_t *n_out) {
  ctorch_handle_scope s = NULL;
  ctorch_tensor t = NULL, identity = in[0];
  ctorch_status st = ctorch_handle_scope_enter(&s);
  (void)n_in, (void)kwargs, (void)max_out; /* the signature ("input -> output") was checked */
  if (st != CTORCH_OK) return st;
  if (!st) st = call_child(&t, self, "conv1", in[0]);
  if (!st) st = call_child(&t, self, "bn1", t);
  if (!st) st = ctorch_relu(&t, t);
  if (!st) st = call_child(&t, self, "conv2", t);
  if (!st) st = call_child(&t, self, "bn2", t);
  if (!st && has_down) st = call_child(&identity, self, "downsample", in[0]);
  if (!st) st = ctorch_add_Tensor(&t, t, identity, ctorch_scalar_int(1));
  if (!st) st = ctorch_relu(&out[0], t);
  if (!st) st = ctorch_handle_scope_keep(out[0]); /* ctorch takes it from the caller's scope */
  ctorch_handle_scope_leave(s);
  *n_out = st == CTORCH_OK;
  return st;
}

/* torchvision's _make_layer(BasicBlock, cout, 2, stride): two blocks, the
 * first with downsample (conv1x1 + BN) when the shape changes. */
static ctorch_nn_module make_layer(long long cin, long long cout, long long stride) {
  ctorch_nn_module layer = nn_make("Sequential", ""), b;
  int i;
  for (i = 0; i < 2; ++i, cin = cout, stride = 1) {
    intptr_t down = stride != 1 || cin != cout;
    CHECK(ctorch_nn_custom_new(&b, "BasicBlock", basic_block, (void *)down, NULL));
    nn_add(b, "conv1", nn_makef("Conv2d", "%lld, %lld, 3, %lld, 1, bias=False", cin, cout, stride));
    nn_add(b, "bn1", nn_makef("BatchNorm2d", "%lld", cout));
    nn_add(b, "conv2", nn_makef("Conv2d", "%lld, %lld, 3, 1, 1, bias=False", cout, cout));
    nn_add(b, "bn2", nn_makef("BatchNorm2d", "%lld", cout));
    if (down) {
      ctorch_nn_module d = nn_make("Sequential", "");
      nn_add(d, NULL, nn_makef("Conv2d", "%lld, %lld, 1, %lld, bias=False", cin, cout, stride));
      nn_add(d, NULL, nn_makef("BatchNorm2d", "%lld", cout));
      nn_add(b, "downsample", d);
    }
    nn_add(layer, NULL, b);
  }
  return layer;
}

/* torchvision.models.resnet18: its forward's flatten is a layer here (no keys). */
static ctorch_nn_module make_resnet18(void) {
  static const nn_layer stem[] = {{"conv1", "Conv2d", "3, 64, 7, 2, 3, bias=False"},
                                  {"bn1", "BatchNorm2d", "64"},
                                  {"relu", "ReLU", ""},
                                  {"maxpool", "MaxPool2d", "3, 2, 1"}};
  ctorch_nn_module net = nn_sequential(stem, 4);
  nn_add(net, "layer1", make_layer(64, 64, 1));
  nn_add(net, "layer2", make_layer(64, 128, 2));
  nn_add(net, "layer3", make_layer(128, 256, 2));
  nn_add(net, "layer4", make_layer(256, 512, 2));
  nn_add(net, "avgpool", nn_make("AdaptiveAvgPool2d", "(1, 1)"));
  nn_add(net, "flatten", nn_make("Flatten", ""));
  nn_add(net, "fc", nn_makef("Linear", "512, %d", CLASSES));
  return net;
}

/* The eval pipeline: Resize(256), CenterCrop(224), ConvertImageDtype(float),
 * Normalize(ImageNet's mean and std). */
static ctorch_transform eval_transform(int antialias) {
  static const double mean[3] = {0.485, 0.456, 0.406}, std[3] = {0.229, 0.224, 0.225};
  const int64_t resize = 256, three = 3;
  ctorch_tensor m = NULL, s = NULL;
  ctorch_transform t[4], all = NULL;
  int i;
  CHECK(ctorch_tensor_from_data(&m, mean, sizeof mean, &three, 1, CTORCH_FLOAT64));
  CHECK(ctorch_tensor_from_data(&s, std, sizeof std, &three, 1, CTORCH_FLOAT64));
  CHECK(ctorch_transform_resize(&t[0], &resize, 1, CTORCH_INTERPOLATION_BILINEAR, 0, antialias));
  CHECK(ctorch_transform_center_crop(&t[1], 224, 224));
  CHECK(ctorch_transform_convert_image_dtype(&t[2], CTORCH_FLOAT32));
  CHECK(ctorch_transform_normalize(&t[3], m, s));
  CHECK(ctorch_transform_compose(&all, t, 4));
  for (i = 0; i < 4; ++i) ctorch_transform_free(t[i]);
  return all;
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s --image PATH --weights PATH [--antialias 0|1] [--threads T] [--logits PATH]\n"
          "  --weights: torchvision resnet18's state dict (torch.save); --antialias: Resize's (default 1);\n"
          "  --logits PATH writes the 1,000 logits, one per line\n",
          prog);
}

int main(int argc, char **argv) {
  const char *image = NULL, *weights = NULL, *logits_path = NULL;
  int antialias = 1, threads = 0, i;
  int64_t top[5], shape[3] = {0, 0, 0};
  float logits[CLASSES], probs[CLASSES];
  ctorch_tensor img = NULL, batch = NULL, x = NULL, out = NULL, p = NULL, vals = NULL, idx = NULL;
  ctorch_autograd_scope inf = NULL;
  ctorch_transform tf;
  ctorch_nn_module net;
  {
    const example_arg args[] = {EXAMPLE_STR("--image", &image), EXAMPLE_STR("--weights", &weights),
                                EXAMPLE_INT("--antialias", &antialias), EXAMPLE_INT("--threads", &threads),
                                EXAMPLE_STR("--logits", &logits_path)};
    int rc = example_parse_args(argc, argv, args, EXAMPLE_NARGS(args), usage);
    if (rc >= 0) return rc;
    if (!image || !weights) return usage(argv[0]), 2;
  }
  if (threads > 0) CHECK(ctorch_set_num_threads(threads));

  CHECK(ctorch_image_read(&img, image, CTORCH_IMAGE_READ_RGB));
  CHECK(ctorch_tensor_sizes(shape, 3, img));
  /* A batch [N, C, H, W] for the transforms, its pixels stored as read_image
   * keeps them (channels last: torchvision's [C, H, W] is a view of the
   * decoder's [H, W, C]): the resize kernel for that layout rounds otherwise. */
  CHECK(ctorch_unsqueeze(&x, img, 0));
  CHECK(ctorch_contiguous(&batch, x, CTORCH_MEMORY_CHANNELS_LAST));
  ctorch_tensor_free(x);
  tf = eval_transform(antialias);
  CHECK(ctorch_transform_apply(&x, tf, batch, NULL));
  net = make_resnet18();
  nn_load(net, weights);
  CHECK(ctorch_nn_module_train(net, 0));

  CHECK(ctorch_autograd_scope_enter(&inf, CTORCH_SCOPE_INFERENCE_MODE));
  CHECK(ctorch_nn_module_forward(&out, net, x));
  CHECK(ctorch_softmax_int(&p, out, 1, NULL));
  CHECK(ctorch_topk(&vals, &idx, p, 5, 1, 1, 1));
  CHECK(ctorch_autograd_scope_leave(inf));
  CHECK(ctorch_tensor_copy_to(logits, sizeof logits, out));
  CHECK(ctorch_tensor_copy_to(probs, sizeof probs, p));
  CHECK(ctorch_tensor_copy_to(top, sizeof top, idx));

  printf("resnet18 on %s (%lldx%lld), antialias %d\n", image, (long long)shape[1], (long long)shape[2], antialias);
  for (i = 0; i < 5; ++i)
    printf("rank=%d class=%lld prob=%.9g logit=%.9g\n", i + 1, (long long)top[i], probs[top[i]], logits[top[i]]);
  if (logits_path) {
    FILE *f = fopen(logits_path, "w");
    if (!f) return perror(logits_path), 1;
    for (i = 0; i < CLASSES; ++i) fprintf(f, "%.9g\n", logits[i]);
    if (fclose(f) != 0) return perror(logits_path), 1;
  }
  ctorch_tensor_free(img), ctorch_tensor_free(batch), ctorch_tensor_free(x), ctorch_tensor_free(out);
  ctorch_tensor_free(p), ctorch_tensor_free(vals), ctorch_tensor_free(idx);
  ctorch_transform_free(tf);
  ctorch_nn_module_free(net);
  return 0;
}
