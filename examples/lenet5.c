/*
 * LeNet-5 on Fashion-MNIST, trained from C through ctorch's public C API.
 *
 *   conv(6, k5) relu -> maxpool 2 -> conv(16, k5) relu -> maxpool 2 -> flatten 256
 *   -> dense 120 relu -> dense 84 relu -> dense 10
 *   AdamW(lr 1e-3, weight decay 0.01), cross-entropy, batch 256.
 *
 * The network is made of torch.nn's modules (ctorch_nn_new), each step runs
 * in a handle scope that frees what the step made. examples/lenet5.py is the
 * same program in Python PyTorch: same initialisation (ctorch_nn_new draws
 * torch.nn's defaults in torch.nn's order, so the same seed gives the same
 * weights bit for bit), same data order (ctorch_data_epoch_seed + randperm),
 * same hyper-parameters, the same output format and the same state-dict
 * keys: each program loads the other's weights (--load).
 *
 * Usage: lenet5 [--epochs N] [--data DIR] [--seed S] [--threads T] [--save PATH] [--load PATH]
 *               [--steps K] [--device cpu|cuda[:N]] [--amp none|bf16|fp16] [--logdir DIR]
 * The loss, accuracies and hyper-parameters go to TensorBoard event files in
 * --logdir (default runs/lenet5): look at them with
 *   pip install tensorboard && tensorboard --logdir runs
 * The last line of output is machine-readable:
 *   test_accuracy=<fraction> top5=<fraction> images_per_s=<number>
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctorch.h"

#define BATCH 256
#define EVAL_BATCH 1000

/* Every call is checked: on failure print what failed and why, and stop. */
#define CHECK(call)                                                                                \
  do {                                                                                             \
    ctorch_status st_ = (call);                                                                    \
    if (st_ != CTORCH_OK) {                                                                        \
      fprintf(stderr, "lenet5: %s:%d: %s failed with %s: %s\n", __FILE__, __LINE__, #call,         \
              ctorch_status_name(st_), ctorch_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#include "train_device.h"
#include "example_args.h"
#include "example_nn.h"
#include "fashion_mnist.h"
#include "lenet5_nn.h"


static void progress(int tty, int epoch, int epochs, int64_t batch, int64_t nbatches, double loss, double ips) {
  if (tty) {
    const int width = 30;
    int filled = (int)(width * batch / nbatches), i;
    printf("\repoch %d/%d [", epoch, epochs);
    for (i = 0; i < width; ++i) putchar(i < filled ? '=' : (i == filled ? '>' : ' '));
    printf("] %lld/%lld loss %.4f %.0f img/s", (long long)batch, (long long)nbatches, loss, ips);
    fflush(stdout);
  } else if (batch % 50 == 0 || batch == nbatches) {
    printf("epoch %d/%d batch %lld/%lld loss %.4f %.0f img/s\n", epoch, epochs, (long long)batch, (long long)nbatches,
           loss, ips);
    fflush(stdout);
  }
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--epochs N] [--data DIR] [--seed S] [--threads T] [--save PATH] [--load PATH]\n"
          "          [--steps K] [--device cpu|cuda[:N]] [--amp none|bf16|fp16] [--logdir DIR]\n"
          "  --epochs N    training epochs (default 1)\n"
          "  --data DIR    Fashion-MNIST IDX files (default /usr/share/datasets/fashion-mnist)\n"
          "  --seed S      seed of the initialisation and the data order (default 1)\n"
          "  --threads T   intra-op threads (default: libtorch's choice)\n"
          "  --save PATH   where to write the trained weights (default lenet5.pt; '' = do not save)\n"
          "  --load PATH   a state dict to start from (e.g. lenet5.py's), loaded strictly\n"
          "  --steps K     stop each epoch after K batches (quick checks, soak tests; default all)\n"
          "  --device D    cpu (default), cuda or cuda:N: where the model and the data live\n"
          "  --amp P       none (default), bf16 or fp16: autocast the forward pass (fp16 scales the loss)\n"
          "  --logdir DIR  TensorBoard event files (default runs/lenet5; '' = none): tensorboard --logdir DIR\n",
          prog);
}

int main(int argc, char **argv) {
  const char *data_dir = "/usr/share/datasets/fashion-mnist", *save = "lenet5.pt", *load = "", *logdir = "runs/lenet5";
  ctorch_summary_writer tb = NULL;
  int epochs = 1, threads = 0, steps = 0, tty = isatty(STDOUT_FILENO), epoch;
  unsigned long long seed = 1;
  ctorch_tensor train_x = NULL, train_labels = NULL, test_x = NULL, test_labels = NULL;
  ctorch_nn_module net = NULL;
  ctorch_data_loader train = NULL, test = NULL;
  ctorch_optimizer opt = NULL;
  int64_t n_train = 0, nbatches = 0;
  double acc = 0, top5 = 0, train_time = 0;
  int64_t images_seen = 0;
  train_target tgt = {{CTORCH_DEVICE_CPU, -1}, 0, NULL};

  {
    const example_arg args[] = {
        EXAMPLE_INT("--epochs", &epochs),
        EXAMPLE_STR("--data", &data_dir),
        EXAMPLE_U64("--seed", &seed),
        EXAMPLE_INT("--threads", &threads),
        EXAMPLE_STR("--save", &save),
        EXAMPLE_STR("--load", &load),
        EXAMPLE_INT("--steps", &steps),
        EXAMPLE_DEVICE("--device", &tgt.device, NULL),
        EXAMPLE_AMP("--amp", &tgt.amp),
        EXAMPLE_STR("--logdir", &logdir),
    };
    int rc = example_parse_args(argc, argv, args, EXAMPLE_NARGS(args), usage);
    if (rc >= 0) return rc;
  }
  if (epochs < 1) {
    fprintf(stderr, "lenet5: --epochs must be >= 1\n");
    return 2;
  }
  if (threads > 0) CHECK(ctorch_set_num_threads(threads));
  CHECK(ctorch_get_num_threads(&threads));
  target_init(&tgt, "lenet5");

  load_data(data_dir, &train_x, &train_labels, &test_x, &test_labels);
  CHECK(ctorch_tensor_numel(&n_train, train_labels));
  /* On a GPU the whole data set lives there (about 220 MB); batches are
   * gathered on the device. */
  to_target(&tgt, &train_x);
  to_target(&tgt, &train_labels);
  to_target(&tgt, &test_x);
  to_target(&tgt, &test_labels);

  CHECK(ctorch_data_loader_new(&train, train_x, train_labels, BATCH, 1, seed, 0));
  CHECK(ctorch_data_loader_new(&test, test_x, test_labels, EVAL_BATCH, 0, 0, 0));
  CHECK(ctorch_data_loader_num_batches(&nbatches, train));
  if (steps > 0 && steps < nbatches) nbatches = steps;
  ctorch_tensor_free(train_x); /* the loaders hold their own references */
  ctorch_tensor_free(test_x);
  ctorch_tensor_free(train_labels);
  ctorch_tensor_free(test_labels);

  CHECK(ctorch_manual_seed(seed));
  net = make_lenet5();
  if (*load) nn_load(net, load);
  /* Initialised on the CPU (the same draws as a CPU run), then moved, as
   * lenet5.py's model.to(device); the optimizer takes the moved parameters. */
  if (tgt.device.type != CTORCH_DEVICE_CPU) CHECK(ctorch_nn_module_to(net, &tgt.device, -1));
  {
    ctorch_optim_options o;
    CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAMW)); /* lr 1e-3, betas (0.9, 0.999), wd 0.01 */
    CHECK(ctorch_optimizer_new_from_module(&opt, CTORCH_OPTIM_ADAMW, net, &o));
  }

  if (*logdir) CHECK(ctorch_summary_writer_new(&tb, logdir, NULL));
  printf("LeNet-5 on Fashion-MNIST (%lld training images), %d epoch(s), batch %d, %d thread(s), seed %llu",
         (long long)n_train, epochs, BATCH, threads, seed);
  /* The CPU float32 header line stays exactly lenet5.py's. */
  if (tgt.device.type == CTORCH_DEVICE_CUDA) printf(" [cuda:%d, %s]", tgt.device.index, amp_name(tgt.amp));
  else if (tgt.amp) printf(" [cpu, %s]", amp_name(tgt.amp));
  printf("\n");
  fflush(stdout);

  for (epoch = 0; epoch < epochs; ++epoch) {
    double t0 = now(), loss_sum = 0, dt;
    int64_t correct = 0, seen = 0, batch = 0;
    CHECK(ctorch_data_loader_start_epoch(train, (uint64_t)epoch));
    for (; batch < nbatches; ++batch) {
      ctorch_handle_scope s = scope_enter(); /* frees the step's tensors */
      ctorch_tensor x = NULL, y = NULL, logits = NULL, loss = NULL;
      int has = 0;
      CHECK(ctorch_data_loader_next(&has, &x, &y, train));
      if (has) {
        ctorch_autocast_scope amp = amp_enter(&tgt);
        CHECK(ctorch_nn_module_forward(&logits, net, x));
        CHECK(ctorch_cross_entropy_loss(&loss, logits, y, NULL, 1 /* mean */, -100, 0.0));
        amp_leave(amp);
        backward_step(&tgt, opt, loss);
        tally_batch(logits, y, loss, &correct, &loss_sum, &seen);
      }
      scope_leave(s);
      if (!has) break;
      if (tb && (batch + 1) % 10 == 0) /* the running mean loss, every 10 steps */
        CHECK(ctorch_summary_writer_add_scalar(tb, "train/loss_running", loss_sum / (double)seen,
                                               epoch * nbatches + batch + 1, 0));
      progress(tty, epoch + 1, epochs, batch + 1, nbatches, loss_sum / (double)seen, (double)seen / (now() - t0));
    }
    dt = now() - t0;
    train_time += dt;
    images_seen += seen;
    if (tty) printf("\n");
    {
      int64_t c[3] = {0, 0, 0};
      ctorch_autocast_scope amp = amp_enter(&tgt);
      nn_count_on(net, test, c);
      amp_leave(amp);
      acc = (double)c[0] / (double)c[2];
      top5 = (double)c[1] / (double)c[2];
    }
    printf("epoch %d/%d loss=%.4f train_acc=%.4f test_acc=%.4f top5=%.4f images_per_s=%.1f time=%.1fs\n", epoch + 1,
           epochs, loss_sum / (double)seen, (double)correct / (double)seen, acc, top5, (double)seen / dt, dt);
    fflush(stdout);
    if (tb) {
      CHECK(ctorch_summary_writer_add_scalar(tb, "epoch/loss", loss_sum / (double)seen, epoch + 1, 0));
      CHECK(ctorch_summary_writer_add_scalar(tb, "epoch/train_accuracy", (double)correct / (double)seen, epoch + 1, 0));
      CHECK(ctorch_summary_writer_add_scalar(tb, "epoch/test_accuracy", acc, epoch + 1, 0));
      CHECK(ctorch_summary_writer_add_scalar(tb, "epoch/test_top5", top5, epoch + 1, 0));
      CHECK(ctorch_summary_writer_add_scalar(tb, "epoch/images_per_s", (double)seen / dt, epoch + 1, 0));
    }
  }

  if (save && *save) {
    const ctorch_device cpu = ctorch_device_cpu();
    CHECK(ctorch_nn_module_to(net, &cpu, -1)); /* training is over: a file any machine can read */
    nn_save(net, save);
    printf("saved weights to %s\n", save);
  }
  if (tb) {
    const char *names[4] = {"lr", "weight_decay", "batch_size", "epochs"};
    const char *metrics[2] = {"hparam/test_accuracy", "hparam/test_top5"};
    const double values[4] = {1e-3, 0.01, BATCH, epochs}, results[2] = {acc, top5};
    CHECK(ctorch_summary_writer_add_hparams(tb, names, values, NULL, 4, metrics, results, 2, NULL));
    ctorch_summary_writer_free(tb);
  }
  target_free(&tgt);

  ctorch_optimizer_free(opt);
  ctorch_data_loader_free(train);
  ctorch_data_loader_free(test);
  ctorch_nn_module_free(net);
  printf("test_accuracy=%.4f top5=%.4f images_per_s=%.1f\n", acc, top5, (double)images_seen / train_time);
  return 0;
}
