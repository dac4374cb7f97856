/*
 * A small ResNet on Fashion-MNIST, trained from C through ctorch: the heavier
 * example, where a GPU and mixed precision pay (LeNet-5 is too small: its
 * step is bound by per-op overhead, not arithmetic).
 *
 *   stem conv3x3(1 -> W) BN ReLU
 *   block(W -> W) -> block(W -> 2W, stride 2) -> block(2W -> 4W, stride 2)
 *     block: conv3x3 BN ReLU conv3x3 BN, + shortcut (1x1 conv BN when the
 *     shape changes), ReLU
 *   global average pool -> linear(4W -> 10)
 *   SGD(lr 0.05, momentum 0.9, weight decay 5e-4), cross-entropy.
 *
 * The network is made of torch.nn's modules: the blocks are modules whose
 * forward is C (ctorch_nn_custom_new), as resnet.py's Block is a Python
 * class, so the state-dict keys are resnet.py's ("layer2.proj.0.weight").
 * examples/resnet.py is the same program in Python (same initialisation from
 * the same seed, same data order, same output), so the two can be compared
 * for accuracy and speed. (bench/gpu_train.c trains the functional twin in
 * resnet_model.h.)
 *
 * Usage: resnet [--epochs N] [--steps K] [--width W] [--batch B] [--seed S]
 *               [--threads T] [--data DIR] [--test-images N] [--save PATH]
 *               [--device cpu|cuda[:N]] [--amp none|bf16|fp16]
 * Defaults (width 128, batch 512) are for a GPU, where bf16 autocast gave
 * 1.82x in Python (docs/gpu.md); a quick CPU check:
 *   resnet --width 8 --batch 64 --steps 5 --test-images 500 --amp bf16
 * The last line of output is machine-readable:
 *   test_accuracy=<fraction> images_per_s=<number>
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ctorch_status st_ = (call);                                                                    \
    if (st_ != CTORCH_OK) {                                                                        \
      fprintf(stderr, "resnet: %s:%d: %s failed with %s: %s\n", __FILE__, __LINE__, #call,         \
              ctorch_status_name(st_), ctorch_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#include "train_device.h"
#include "example_args.h"
#include "example_nn.h"
#include "fashion_mnist.h"

/* resnet.py's Block.forward: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut),
 * the shortcut being proj(x) when the block has one (user_data nonzero), else
 * x. A forward callback reports failures by status (the module's caller gets
 * them with this module named); its intermediates live in its own scope. */
static ctorch_status block_forward(void *has_proj, ctorch_nn_module self, const ctorch_tensor *in, size_t n_in,
                                   const char *kwargs, ctorch_tensor *out, size_t max_out, size_t *n_out) {
  ctorch_handle_scope s = NULL;
  ctorch_tensor t = NULL, sc = in[0];
  ctorch_status st = ctorch_handle_scope_enter(&s);
  (void)n_in, (void)kwargs, (void)max_out; /* the signature ("input -> output") was checked */
  if (st != CTORCH_OK) return st;
  if (!st) st = ctorch_nn_module_forward_child(&t, self, "conv1", in[0]);
  if (!st) st = ctorch_nn_module_forward_child(&t, self, "bn1", t);
  if (!st) st = ctorch_relu(&t, t);
  if (!st) st = ctorch_nn_module_forward_child(&t, self, "conv2", t);
  if (!st) st = ctorch_nn_module_forward_child(&t, self, "bn2", t);
  if (!st && has_proj) st = ctorch_nn_module_forward_child(&sc, self, "proj", in[0]);
  if (!st) st = ctorch_add_Tensor(&t, t, sc, ctorch_scalar_int(1));
  if (!st) st = ctorch_relu(&out[0], t);
  if (!st) st = ctorch_handle_scope_keep(out[0]); /* ctorch takes it from the caller's scope */
  ctorch_handle_scope_leave(s);
  *n_out = st == CTORCH_OK;
  return st;
}

/* resnet.py's Block(cin, cout, stride): children made in its __init__'s order. */
static ctorch_nn_module make_block(int64_t cin, int64_t cout, int64_t stride) {
  ctorch_nn_module b = NULL;
  int has_proj = stride != 1 || cin != cout;
  CHECK(ctorch_nn_custom_new(&b, "Block", block_forward, (void *)(intptr_t)has_proj, NULL));
  nn_add(b, "conv1", nn_makef("Conv2d", "%lld, %lld, 3, %lld, 1, bias=False", (long long)cin, (long long)cout,
                              (long long)stride));
  nn_add(b, "bn1", nn_makef("BatchNorm2d", "%lld", (long long)cout));
  nn_add(b, "conv2", nn_makef("Conv2d", "%lld, %lld, 3, 1, 1, bias=False", (long long)cout, (long long)cout));
  nn_add(b, "bn2", nn_makef("BatchNorm2d", "%lld", (long long)cout));
  if (has_proj) {
    ctorch_nn_module proj = nn_make("Sequential", "");
    nn_add(proj, NULL, nn_makef("Conv2d", "%lld, %lld, 1, %lld, bias=False", (long long)cin, (long long)cout,
                                (long long)stride));
    nn_add(proj, NULL, nn_makef("BatchNorm2d", "%lld", (long long)cout));
    nn_add(b, "proj", proj);
  }
  return b;
}

/* resnet.py's ResNet(w): stem, bn, layer1-3, fc, with its forward's relu,
 * pool and flatten as parameterless layers in between (no state-dict keys). */
static ctorch_nn_module make_resnet(int64_t w) {
  ctorch_nn_module net = nn_make("Sequential", "");
  nn_add(net, "stem", nn_makef("Conv2d", "1, %lld, 3, 1, 1, bias=False", (long long)w));
  nn_add(net, "bn", nn_makef("BatchNorm2d", "%lld", (long long)w));
  nn_add(net, "relu", nn_make("ReLU", ""));
  nn_add(net, "layer1", make_block(w, w, 1));
  nn_add(net, "layer2", make_block(w, 2 * w, 2));
  nn_add(net, "layer3", make_block(2 * w, 4 * w, 2));
  nn_add(net, "pool", nn_make("AdaptiveAvgPool2d", "1"));
  nn_add(net, "flatten", nn_make("Flatten", ""));
  nn_add(net, "fc", nn_makef("Linear", "%lld, 10", (long long)(4 * w)));
  return net;
}

/* Test accuracy over the first `limit` images (inference mode, BN in eval mode). */
static double evaluate(ctorch_nn_module net, ctorch_tensor x, ctorch_tensor y, int64_t limit, int64_t batch,
                       const train_target *tgt) {
  ctorch_autograd_scope inf = NULL;
  ctorch_autocast_scope amp;
  int64_t n = 0, correct = 0, i;
  CHECK(ctorch_tensor_numel(&n, y));
  if (limit > 0 && limit < n) n = limit;
  CHECK(ctorch_nn_module_train(net, 0));
  CHECK(ctorch_autograd_scope_enter(&inf, CTORCH_SCOPE_INFERENCE_MODE));
  amp = amp_enter(tgt);
  for (i = 0; i < n; i += batch) {
    ctorch_handle_scope s = scope_enter(); /* the batch and its logits */
    ctorch_tensor xb = NULL, yb = NULL, logits = NULL;
    int64_t len = n - i < batch ? n - i : batch;
    CHECK(ctorch_narrow(&xb, x, 0, i, len));
    CHECK(ctorch_narrow(&yb, y, 0, i, len));
    CHECK(ctorch_nn_module_forward(&logits, net, xb));
    correct += count_correct(logits, yb);
    scope_leave(s);
  }
  amp_leave(amp);
  CHECK(ctorch_autograd_scope_leave(inf));
  CHECK(ctorch_nn_module_train(net, 1));
  return (double)correct / (double)n;
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--epochs N] [--steps K] [--width W] [--batch B] [--seed S] [--threads T]\n"
          "          [--data DIR] [--test-images N] [--save PATH] [--device cpu|cuda[:N]] [--amp none|bf16|fp16]\n"
          "  defaults: 1 epoch, all steps, width 128, batch 512, seed 1, all 10,000 test images, cpu, fp32;\n"
          "  --save PATH writes the trained state dict (resnet.py's keys; default: not saved)\n",
          prog);
}

int main(int argc, char **argv) {
  const char *data_dir = "/usr/share/datasets/fashion-mnist", *save = "";
  int epochs = 1, steps = 0, threads = 0, epoch;
  size_t np = 0;
  int64_t width = 128, batch = 512, test_images = 0, n_train = 0, nbatches = 0, images_seen = 0;
  unsigned long long seed = 1;
  train_target tgt = {{CTORCH_DEVICE_CPU, -1}, 0, NULL};
  ctorch_tensor train_x = NULL, train_y = NULL, test_x = NULL, test_y = NULL;
  ctorch_data_loader train = NULL;
  ctorch_optimizer opt = NULL;
  ctorch_nn_module net = NULL;
  double acc = 0, train_time = 0;

  {
    const example_arg args[] = {
        EXAMPLE_INT("--epochs", &epochs),
        EXAMPLE_INT("--steps", &steps),
        EXAMPLE_INT64("--width", &width),
        EXAMPLE_INT64("--batch", &batch),
        EXAMPLE_U64("--seed", &seed),
        EXAMPLE_INT("--threads", &threads),
        EXAMPLE_STR("--data", &data_dir),
        EXAMPLE_INT64("--test-images", &test_images),
        EXAMPLE_STR("--save", &save),
        EXAMPLE_DEVICE("--device", &tgt.device, NULL),
        EXAMPLE_AMP("--amp", &tgt.amp),
    };
    int rc = example_parse_args(argc, argv, args, EXAMPLE_NARGS(args), usage);
    if (rc >= 0) return rc;
  }
  if (epochs < 1 || width < 1 || batch < 1) {
    fprintf(stderr, "resnet: --epochs, --width and --batch must be >= 1\n");
    return 2;
  }
  if (threads > 0) CHECK(ctorch_set_num_threads(threads));
  CHECK(ctorch_get_num_threads(&threads));
  target_init(&tgt, "resnet");

  load_data(data_dir, &train_x, &train_y, &test_x, &test_y);
  CHECK(ctorch_tensor_numel(&n_train, train_y));
  to_target(&tgt, &train_x);
  to_target(&tgt, &train_y);
  to_target(&tgt, &test_x);
  to_target(&tgt, &test_y);
  CHECK(ctorch_data_loader_new(&train, train_x, train_y, batch, 1, seed, 0));
  CHECK(ctorch_data_loader_num_batches(&nbatches, train));
  if (steps > 0 && steps < nbatches) nbatches = steps;

  CHECK(ctorch_manual_seed(seed));
  net = make_resnet(width);
  {
    ctorch_tensor *p = nn_params(net, &np); /* the count, for the header line */
    nn_free_params(p, np);
  }
  if (tgt.device.type != CTORCH_DEVICE_CPU) CHECK(ctorch_nn_module_to(net, &tgt.device, -1));
  {
    ctorch_optim_options o;
    CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
    o.lr = 0.05;
    o.momentum = 0.9;
    o.weight_decay = 5e-4;
    CHECK(ctorch_optimizer_new_from_module(&opt, CTORCH_OPTIM_SGD, net, &o));
  }
  printf("ResNet (width %lld, %d parameter tensors) on Fashion-MNIST (%lld images), %d epoch(s), batch %lld, "
         "%d thread(s), seed %llu, %s, %s\n",
         (long long)width, (int)np, (long long)n_train, epochs, (long long)batch, threads, seed,
         tgt.device.type == CTORCH_DEVICE_CUDA ? "cuda" : "cpu", amp_name(tgt.amp));
  fflush(stdout);

  for (epoch = 0; epoch < epochs; ++epoch) {
    double t0, dt, loss_sum = 0;
    int64_t seen = 0, b = 0;
    int has = 1;
    CHECK(ctorch_data_loader_start_epoch(train, (uint64_t)epoch));
    if (tgt.device.type == CTORCH_DEVICE_CUDA) CHECK(ctorch_cuda_synchronize(-1));
    t0 = now();
    for (b = 0; b < nbatches; ++b) {
      ctorch_handle_scope s = scope_enter(); /* frees the step's tensors */
      ctorch_tensor x = NULL, y = NULL, logits = NULL, loss = NULL;
      ctorch_autocast_scope amp;
      int64_t rows = 0;
      CHECK(ctorch_data_loader_next(&has, &x, &y, train));
      if (!has) {
        scope_leave(s);
        break;
      }
      amp = amp_enter(&tgt);
      CHECK(ctorch_nn_module_forward(&logits, net, x));
      CHECK(ctorch_cross_entropy_loss(&loss, logits, y, NULL, 1, -100, 0.0));
      amp_leave(amp);
      backward_step(&tgt, opt, loss);
      CHECK(ctorch_tensor_numel(&rows, y));
      seen += rows;
      if ((b + 1) % 20 == 0 || b + 1 == nbatches) {
        double l = 0;
        CHECK(ctorch_tensor_item_double(&l, loss)); /* a sync: only now and then */
        loss_sum = l;
        printf("epoch %d/%d batch %lld/%lld loss %.4f %.0f img/s\n", epoch + 1, epochs, (long long)(b + 1),
               (long long)nbatches, loss_sum, (double)seen / (now() - t0));
        fflush(stdout);
      }
      scope_leave(s);
    }
    if (tgt.device.type == CTORCH_DEVICE_CUDA) CHECK(ctorch_cuda_synchronize(-1));
    dt = now() - t0;
    train_time += dt;
    images_seen += seen;
    acc = evaluate(net, test_x, test_y, test_images, batch, &tgt);
    printf("epoch %d/%d test_acc=%.4f images_per_s=%.1f time=%.1fs\n", epoch + 1, epochs, acc, (double)seen / dt, dt);
    fflush(stdout);
  }

  if (*save) {
    const ctorch_device cpu = ctorch_device_cpu();
    CHECK(ctorch_nn_module_to(net, &cpu, -1)); /* training is over: a file any machine can read */
    nn_save(net, save);
    printf("saved weights to %s\n", save);
  }
  ctorch_nn_module_free(net);
  ctorch_optimizer_free(opt);
  ctorch_data_loader_free(train);
  ctorch_tensor_free(train_x);
  ctorch_tensor_free(train_y);
  ctorch_tensor_free(test_x);
  ctorch_tensor_free(test_y);
  target_free(&tgt);
  printf("test_accuracy=%.4f images_per_s=%.1f\n", acc, (double)images_seen / train_time);
  return 0;
}
