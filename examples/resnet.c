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
 * examples/resnet.py is the same program in Python (same initialisation from
 * the same seed, same data order, same output), so the two can be compared
 * for accuracy and speed (bench/run_gpu).
 *
 * Usage: resnet [--epochs N] [--steps K] [--width W] [--batch B] [--seed S]
 *               [--threads T] [--data DIR] [--test-images N]
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

#include "lenet5_model.h" /* load_data, scope_enter/leave, now(), make_layer */
#include "resnet_model.h"
#include "train_device.h"
#include "example_args.h"

/* Test accuracy over the first `limit` images (inference mode, BN in eval mode). */
static double evaluate(resnet *m, ctorch_tensor x, ctorch_tensor y, int64_t limit, int64_t batch,
                       const train_target *tgt) {
  ctorch_autograd_scope inf = NULL;
  ctorch_autocast_scope amp;
  int64_t n = 0, correct = 0, i;
  CHECK(ctorch_tensor_numel(&n, y));
  if (limit > 0 && limit < n) n = limit;
  CHECK(ctorch_autograd_scope_enter(&inf, CTORCH_SCOPE_INFERENCE_MODE));
  amp = amp_enter(tgt);
  for (i = 0; i < n; i += batch) {
    ctorch_handle_scope s = scope_enter(); /* the batch and its logits */
    ctorch_tensor xb = NULL, yb = NULL;
    int64_t len = n - i < batch ? n - i : batch;
    CHECK(ctorch_narrow(&xb, x, 0, i, len));
    CHECK(ctorch_narrow(&yb, y, 0, i, len));
    correct += count_correct(resnet_forward(m, xb, 0), yb);
    scope_leave(s);
  }
  amp_leave(amp);
  CHECK(ctorch_autograd_scope_leave(inf));
  return (double)correct / (double)n;
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--epochs N] [--steps K] [--width W] [--batch B] [--seed S] [--threads T]\n"
          "          [--data DIR] [--test-images N] [--device cpu|cuda[:N]] [--amp none|bf16|fp16]\n"
          "  defaults: 1 epoch, all steps, width 128, batch 512, seed 1, all 10,000 test images, cpu, fp32\n",
          prog);
}

int main(int argc, char **argv) {
  const char *data_dir = "/usr/share/datasets/fashion-mnist";
  int epochs = 1, steps = 0, threads = 0, i, epoch, np;
  int64_t width = 128, batch = 512, test_images = 0, n_train = 0, nbatches = 0, images_seen = 0;
  unsigned long long seed = 1;
  train_target tgt = {{CTORCH_DEVICE_CPU, -1}, 0, NULL};
  ctorch_tensor train_x = NULL, train_y = NULL, test_x = NULL, test_y = NULL;
  ctorch_tensor *slots[64], params[64];
  ctorch_data_loader train = NULL;
  ctorch_optimizer opt = NULL;
  resnet m;
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
  make_resnet(&m, width);
  resnet_to_device(&m, tgt.device);
  np = model_tensors(&m, slots, 0);
  for (i = 0; i < np; ++i) params[i] = *slots[i];
  {
    ctorch_optim_options o;
    CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
    o.lr = 0.05;
    o.momentum = 0.9;
    o.weight_decay = 5e-4;
    CHECK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, params, (size_t)np, &o));
  }
  printf("ResNet (width %lld, %d parameter tensors) on Fashion-MNIST (%lld images), %d epoch(s), batch %lld, "
         "%d thread(s), seed %llu, %s, %s\n",
         (long long)width, np, (long long)n_train, epochs, (long long)batch, threads, seed,
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
      ctorch_tensor x = NULL, y = NULL, loss = NULL;
      ctorch_autocast_scope amp;
      int64_t rows = 0;
      CHECK(ctorch_data_loader_next(&has, &x, &y, train));
      if (!has) {
        scope_leave(s);
        break;
      }
      amp = amp_enter(&tgt);
      CHECK(ctorch_cross_entropy_loss(&loss, resnet_forward(&m, x, 1), y, NULL, 1, -100, 0.0));
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
    acc = evaluate(&m, test_x, test_y, test_images, batch, &tgt);
    printf("epoch %d/%d test_acc=%.4f images_per_s=%.1f time=%.1fs\n", epoch + 1, epochs, acc, (double)seen / dt, dt);
    fflush(stdout);
  }

  resnet_free(&m);
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
