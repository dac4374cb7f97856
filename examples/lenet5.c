/*
 * LeNet-5 on Fashion-MNIST, trained from C through ctorch's public C API.
 *
 *   conv(6, k5) relu -> maxpool 2 -> conv(16, k5) relu -> maxpool 2 -> flatten 256
 *   -> dense 120 relu -> dense 84 relu -> dense 10
 *   AdamW(lr 1e-3, weight decay 0.01), cross-entropy, batch 256.
 *
 * examples/lenet5.py is the same program in Python PyTorch: same
 * initialisation (PyTorch's layer defaults, drawn in the same order from the
 * same seed), same data order (ctorch_data_epoch_seed + randperm), same
 * hyper-parameters and the same output format.
 *
 * Usage: lenet5 [--epochs N] [--data DIR] [--seed S] [--threads T] [--save PATH] [--steps K]
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

/* Handles made during one step, freed together at its end. */
typedef struct {
  ctorch_tensor t[32];
  int n;
} scratch;

static ctorch_tensor keep(scratch *s, ctorch_tensor t) {
  if (s->n == (int)(sizeof s->t / sizeof s->t[0])) {
    fprintf(stderr, "lenet5: scratch overflow\n");
    exit(1);
  }
  s->t[s->n++] = t;
  return t;
}

static void release(scratch *s) {
  while (s->n) ctorch_tensor_free(s->t[--s->n]);
}

enum { CONV1_W, CONV1_B, CONV2_W, CONV2_B, FC1_W, FC1_B, FC2_W, FC2_B, FC3_W, FC3_B, NPARAMS };

/* The names of lenet5.py's state_dict, so Python can load what we save. */
static const char *const PARAM_NAMES[NPARAMS] = {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                                 "fc1.weight",   "fc1.bias",   "fc2.weight",   "fc2.bias",
                                                 "fc3.weight",   "fc3.bias"};

/* A weight and its bias initialised as nn.Conv2d / nn.Linear do:
 * kaiming_uniform_(a=sqrt(5)), then bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)). */
static void make_layer(ctorch_tensor *w, ctorch_tensor *b, const int64_t *wsize, size_t wdim) {
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

static void make_model(ctorch_tensor *p) {
  static const int64_t c1[4] = {6, 1, 5, 5}, c2[4] = {16, 6, 5, 5};
  static const int64_t f1[2] = {120, 256}, f2[2] = {84, 120}, f3[2] = {10, 84};
  make_layer(&p[CONV1_W], &p[CONV1_B], c1, 4);
  make_layer(&p[CONV2_W], &p[CONV2_B], c2, 4);
  make_layer(&p[FC1_W], &p[FC1_B], f1, 2);
  make_layer(&p[FC2_W], &p[FC2_B], f2, 2);
  make_layer(&p[FC3_W], &p[FC3_B], f3, 2);
}

/* logits [B, 10] for x [B, 1, 28, 28]; intermediates go to s. */
static ctorch_tensor forward(scratch *s, ctorch_tensor *p, ctorch_tensor x) {
  static const int64_t one[2] = {1, 1}, zero[2] = {0, 0}, two[2] = {2, 2};
  ctorch_tensor t = NULL;
  CHECK(ctorch_conv2d(&t, x, p[CONV1_W], p[CONV1_B], one, 2, zero, 2, one, 2, 1));
  CHECK(ctorch_relu(&t, keep(s, t)));
  CHECK(ctorch_max_pool2d(&t, keep(s, t), two, 2, two, 2, zero, 2, one, 2, 0));
  CHECK(ctorch_conv2d(&t, keep(s, t), p[CONV2_W], p[CONV2_B], one, 2, zero, 2, one, 2, 1));
  CHECK(ctorch_relu(&t, keep(s, t)));
  CHECK(ctorch_max_pool2d(&t, keep(s, t), two, 2, two, 2, zero, 2, one, 2, 0));
  CHECK(ctorch_flatten_using_ints(&t, keep(s, t), 1, -1));
  CHECK(ctorch_linear(&t, keep(s, t), p[FC1_W], p[FC1_B]));
  CHECK(ctorch_relu(&t, keep(s, t)));
  CHECK(ctorch_linear(&t, keep(s, t), p[FC2_W], p[FC2_B]));
  CHECK(ctorch_relu(&t, keep(s, t)));
  CHECK(ctorch_linear(&t, keep(s, t), p[FC3_W], p[FC3_B]));
  return keep(s, t);
}

/* Number of rows whose argmax equals the label. */
static int64_t count_correct(scratch *s, ctorch_tensor logits, ctorch_tensor y) {
  ctorch_tensor t = NULL;
  int64_t one_dim = 1, n = 0;
  CHECK(ctorch_argmax(&t, logits, &one_dim, 0));
  CHECK(ctorch_eq_Tensor(&t, keep(s, t), y));
  CHECK(ctorch_sum(&t, keep(s, t), NULL));
  CHECK(ctorch_tensor_item_int64(&n, keep(s, t)));
  return n;
}

/* Number of rows whose label is among the 5 largest logits. */
static int64_t count_top5(scratch *s, ctorch_tensor logits, ctorch_tensor y) {
  ctorch_tensor vals = NULL, idx = NULL, yu = NULL, t = NULL;
  int64_t n = 0;
  CHECK(ctorch_topk(&vals, &idx, logits, 5, 1, 1, 1));
  keep(s, vals);
  keep(s, idx);
  CHECK(ctorch_unsqueeze(&yu, y, 1));
  CHECK(ctorch_eq_Tensor(&t, idx, keep(s, yu)));
  CHECK(ctorch_sum(&t, keep(s, t), NULL));
  CHECK(ctorch_tensor_item_int64(&n, keep(s, t)));
  return n;
}

/* uint8 [N, 28, 28] -> float [N, 1, 28, 28], /255, then (x - mean) / std
 * with the training set's mean and (unbiased) std, exactly as lenet5.py. */
static ctorch_tensor preprocess(ctorch_tensor images, ctorch_tensor mean, ctorch_tensor std) {
  scratch s = {{0}, 0};
  ctorch_tensor t = NULL;
  int64_t sizes[3], shape[4];
  CHECK(ctorch_tensor_sizes(sizes, 3, images));
  shape[0] = sizes[0];
  shape[1] = 1;
  shape[2] = sizes[1];
  shape[3] = sizes[2];
  CHECK(ctorch_tensor_to_dtype(&t, images, CTORCH_FLOAT32));
  CHECK(ctorch_div_Scalar(&t, keep(&s, t), ctorch_scalar_float(255.0)));
  CHECK(ctorch_sub_Tensor(&t, keep(&s, t), mean, ctorch_scalar_int(1)));
  CHECK(ctorch_div_Tensor(&t, keep(&s, t), std));
  CHECK(ctorch_reshape(&t, keep(&s, t), shape, 4));
  release(&s);
  return t;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

/* Accuracy and top-5 on a whole set, under inference mode. */
static void evaluate(ctorch_tensor *p, ctorch_data_loader test, double *acc, double *top5) {
  ctorch_autograd_scope scope = NULL;
  int64_t correct = 0, in5 = 0, n = 0;
  int has = 1;
  CHECK(ctorch_autograd_scope_enter(&scope, CTORCH_SCOPE_INFERENCE_MODE));
  CHECK(ctorch_data_loader_start_epoch(test, 0));
  for (;;) {
    scratch s = {{0}, 0};
    ctorch_tensor x = NULL, y = NULL, logits;
    int64_t b = 0;
    CHECK(ctorch_data_loader_next(&has, &x, &y, test));
    if (!has) break;
    keep(&s, x);
    keep(&s, y);
    logits = forward(&s, p, x);
    correct += count_correct(&s, logits, y);
    in5 += count_top5(&s, logits, y);
    CHECK(ctorch_tensor_numel(&b, y));
    n += b;
    release(&s);
  }
  CHECK(ctorch_autograd_scope_leave(scope));
  *acc = (double)correct / (double)n;
  *top5 = (double)in5 / (double)n;
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--epochs N] [--data DIR] [--seed S] [--threads T] [--save PATH] [--steps K]\n"
          "  --epochs N    training epochs (default 1)\n"
          "  --data DIR    Fashion-MNIST IDX files (default /usr/share/datasets/fashion-mnist)\n"
          "  --seed S      seed of the initialisation and the data order (default 1)\n"
          "  --threads T   intra-op threads (default: libtorch's choice)\n"
          "  --save PATH   where to write the trained weights (default lenet5.pt; '' = do not save)\n"
          "  --steps K     stop each epoch after K batches (quick checks, soak tests; default all)\n",
          prog);
}

int main(int argc, char **argv) {
  const char *data_dir = "/usr/share/datasets/fashion-mnist", *save = "lenet5.pt";
  int epochs = 1, threads = 0, steps = 0, tty = isatty(STDOUT_FILENO), i, epoch;
  unsigned long long seed = 1;
  ctorch_tensor train_images = NULL, train_labels = NULL, test_images = NULL, test_labels = NULL;
  ctorch_tensor xf = NULL, mean = NULL, std = NULL, train_x, test_x;
  ctorch_tensor params[NPARAMS];
  ctorch_data_loader train = NULL, test = NULL;
  ctorch_optimizer opt = NULL;
  int64_t n_train = 0, nbatches = 0;
  double acc = 0, top5 = 0, train_time = 0;
  int64_t images_seen = 0;

  for (i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(argv[0]);
      return 0;
    }
    if (!v) {
      usage(argv[0]);
      return 2;
    }
    if (!strcmp(a, "--epochs")) epochs = atoi(v);
    else if (!strcmp(a, "--data")) data_dir = v;
    else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--threads")) threads = atoi(v);
    else if (!strcmp(a, "--save")) save = v;
    else if (!strcmp(a, "--steps")) steps = atoi(v);
    else {
      usage(argv[0]);
      return 2;
    }
    ++i;
  }
  if (epochs < 1) {
    fprintf(stderr, "lenet5: --epochs must be >= 1\n");
    return 2;
  }
  if (threads > 0) CHECK(ctorch_set_num_threads(threads));
  CHECK(ctorch_get_num_threads(&threads));

  /* data: standardised with the training set's statistics */
  CHECK(ctorch_data_mnist_read_dir(&train_images, &train_labels, data_dir, 1));
  CHECK(ctorch_data_mnist_read_dir(&test_images, &test_labels, data_dir, 0));
  {
    ctorch_tensor f = NULL;
    CHECK(ctorch_tensor_to_dtype(&f, train_images, CTORCH_FLOAT32));
    CHECK(ctorch_div_Scalar(&xf, f, ctorch_scalar_float(255.0)));
    ctorch_tensor_free(f);
  }
  CHECK(ctorch_mean(&mean, xf, NULL));
  CHECK(ctorch_std(&std, xf, 1));
  ctorch_tensor_free(xf);
  train_x = preprocess(train_images, mean, std);
  test_x = preprocess(test_images, mean, std);
  ctorch_tensor_free(train_images);
  ctorch_tensor_free(test_images);
  CHECK(ctorch_tensor_numel(&n_train, train_labels));

  CHECK(ctorch_data_loader_new(&train, train_x, train_labels, BATCH, 1, seed, 0));
  CHECK(ctorch_data_loader_new(&test, test_x, test_labels, EVAL_BATCH, 0, 0, 0));
  CHECK(ctorch_data_loader_num_batches(&nbatches, train));
  if (steps > 0 && steps < nbatches) nbatches = steps;
  ctorch_tensor_free(train_x); /* the loaders hold their own references */
  ctorch_tensor_free(test_x);
  ctorch_tensor_free(train_labels);
  ctorch_tensor_free(test_labels);

  CHECK(ctorch_manual_seed(seed));
  make_model(params);
  {
    ctorch_optim_options o;
    CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAMW)); /* lr 1e-3, betas (0.9, 0.999), wd 0.01 */
    CHECK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_ADAMW, params, NPARAMS, &o));
  }

  printf("LeNet-5 on Fashion-MNIST (%lld training images), %d epoch(s), batch %d, %d thread(s), seed %llu\n",
         (long long)n_train, epochs, BATCH, threads, seed);
  fflush(stdout);

  for (epoch = 0; epoch < epochs; ++epoch) {
    double t0 = now(), loss_sum = 0, dt;
    int64_t correct = 0, seen = 0, batch = 0;
    int has = 1;
    CHECK(ctorch_data_loader_start_epoch(train, (uint64_t)epoch));
    for (;;) {
      scratch s = {{0}, 0};
      ctorch_tensor x = NULL, y = NULL, logits, loss = NULL;
      int64_t b = 0;
      double l = 0;
      if (batch == nbatches) break;
      CHECK(ctorch_data_loader_next(&has, &x, &y, train));
      if (!has) break;
      keep(&s, x);
      keep(&s, y);
      logits = forward(&s, params, x);
      CHECK(ctorch_cross_entropy_loss(&loss, logits, y, NULL, 1 /* mean */, -100, 0.0));
      keep(&s, loss);
      CHECK(ctorch_optimizer_zero_grad(opt, 1));
      CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
      CHECK(ctorch_optimizer_step(opt));
      CHECK(ctorch_tensor_numel(&b, y));
      CHECK(ctorch_tensor_item_double(&l, loss));
      {
        /* metrics need no graph */
        ctorch_autograd_scope ng = NULL;
        CHECK(ctorch_autograd_scope_enter(&ng, CTORCH_SCOPE_NO_GRAD));
        correct += count_correct(&s, logits, y);
        CHECK(ctorch_autograd_scope_leave(ng));
      }
      loss_sum += l * (double)b;
      seen += b;
      ++batch;
      release(&s);
      progress(tty, epoch + 1, epochs, batch, nbatches, loss_sum / (double)seen, (double)seen / (now() - t0));
    }
    dt = now() - t0;
    train_time += dt;
    images_seen += seen;
    if (tty) printf("\n");
    evaluate(params, test, &acc, &top5);
    printf("epoch %d/%d loss=%.4f train_acc=%.4f test_acc=%.4f top5=%.4f images_per_s=%.1f time=%.1fs\n", epoch + 1,
           epochs, loss_sum / (double)seen, (double)correct / (double)seen, acc, top5, (double)seen / dt, dt);
    fflush(stdout);
  }

  if (save && *save) {
    CHECK(ctorch_save_dict(save, PARAM_NAMES, params, NPARAMS));
    printf("saved weights to %s\n", save);
  }

  ctorch_optimizer_free(opt);
  ctorch_data_loader_free(train);
  ctorch_data_loader_free(test);
  for (i = 0; i < NPARAMS; ++i) ctorch_tensor_free(params[i]);
  ctorch_tensor_free(mean);
  ctorch_tensor_free(std);
  printf("test_accuracy=%.4f top5=%.4f images_per_s=%.1f\n", acc, top5, (double)images_seen / train_time);
  return 0;
}
