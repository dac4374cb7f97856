/*
 * A small Transformer encoder classifier in C with ctorch's modules:
 * Fashion-MNIST images read as sequences of 28 rows (28 pixels each).
 *
 *   rows [B, 28, 28] -> Linear(28, 64) + a learned position embedding [1, 28, 64]
 *   -> TransformerEncoderLayer(64, 4 heads, feed-forward 128, dropout 0.1) x 2
 *   -> mean over the rows -> Linear(64, 10)
 *   AdamW(lr 1e-3, weight decay 0.01), cross-entropy, batch 64.
 *
 * The two encoder layers are made one after the other in a ModuleList (each
 * with its own initial draws, as Python's list of layers; nn.TransformerEncoder
 * would deep-copy one layer instead). examples/transformer.py is the same
 * program in Python PyTorch: the same weights from the same seed, the same
 * batches (the data order of lenet5.c), the same dropout masks (drawn from
 * the default generator in the same order), the same output.
 *
 * Usage: transformer [--steps K] [--batch B] [--seed S] [--threads T] [--data DIR]
 *                    [--test-images N] [--save PATH]
 * The last line of output is machine-readable:
 *   initial_loss=<nats> final_loss=<nats> test_accuracy=<fraction> images_per_s=<number>
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctorch.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ctorch_status st_ = (call);                                                                    \
    if (st_ != CTORCH_OK) {                                                                        \
      fprintf(stderr, "transformer: %s:%d: %s failed with %s: %s\n", __FILE__, __LINE__, #call,    \
              ctorch_status_name(st_), ctorch_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#include "train_device.h" /* example_args.h's device options (unused here) */
#include "example_args.h"
#include "example_nn.h"
#include "fashion_mnist.h"

#define D_MODEL 64
#define LAYERS 2
#define EVAL_BATCH 500

/* RowTransformer.forward of transformer.py: x [B, 1, 28, 28] -> logits [B, 10].
 * Its intermediates live in the callback's scope; the logits are kept out of
 * it (ctorch takes them). */
static ctorch_status row_forward(void *unused, ctorch_nn_module self, const ctorch_tensor *in, size_t n_in,
                                 const char *kwargs, ctorch_tensor *out, size_t max_out, size_t *n_out) {
  const int64_t rows_dim = 1;
  ctorch_handle_scope s = NULL;
  ctorch_tensor x = NULL, pos = NULL;
  char name[32];
  int i;
  ctorch_status st = ctorch_handle_scope_enter(&s);
  (void)unused, (void)n_in, (void)kwargs, (void)max_out; /* one input, one output */
  if (!st) st = ctorch_nn_module_tensor(&pos, self, "pos");
  if (!st) st = ctorch_flatten_using_ints(&x, in[0], 1, 2); /* [B, 28 rows, 28 pixels] */
  if (!st) st = ctorch_nn_module_forward_child(&x, self, "embed", x);
  if (!st) st = ctorch_add_Tensor(&x, x, pos, ctorch_scalar_int(1));
  for (i = 0; !st && i < LAYERS; ++i) {
    snprintf(name, sizeof name, "layers.%d", i);
    st = ctorch_nn_module_forward_child(&x, self, name, x);
  }
  if (!st) st = ctorch_mean_dim(&x, x, &rows_dim, 1, 0, NULL);
  if (!st) st = ctorch_nn_module_forward_child(&out[0], self, "head", x);
  if (!st) st = ctorch_handle_scope_keep(out[0]);
  ctorch_handle_scope_leave(s);
  *n_out = st == CTORCH_OK;
  return st;
}

/* transformer.py's RowTransformer(): the position embedding (randn * 0.02),
 * then embed, the layers and head, in its __init__'s order: the order of the
 * random draws, and (parameters before children) of the state-dict keys. */
static ctorch_nn_module make_model(void) {
  const int64_t pos_shape[3] = {1, 28, D_MODEL};
  ctorch_nn_module m = NULL, layers = nn_make("ModuleList", "");
  ctorch_tensor pos = NULL;
  ctorch_handle_scope s;
  int i;
  CHECK(ctorch_nn_custom_new(&m, "RowTransformer", row_forward, NULL, NULL));
  s = scope_enter(); /* frees the draw and the product: the module keeps its own reference */
  CHECK(ctorch_randn(&pos, pos_shape, 3, NULL, NULL, NULL, NULL));
  CHECK(ctorch_mul_Scalar(&pos, pos, ctorch_scalar_float(0.02)));
  CHECK(ctorch_nn_module_register_parameter(m, "pos", pos));
  scope_leave(s);
  nn_add(m, "embed", nn_makef("Linear", "28, %d", D_MODEL));
  for (i = 0; i < LAYERS; ++i)
    nn_add(layers, NULL, nn_makef("TransformerEncoderLayer", "%d, 4, dim_feedforward=128, batch_first=True", D_MODEL));
  nn_add(m, "layers", layers);
  nn_add(m, "head", nn_makef("Linear", "%d, 10", D_MODEL));
  return m;
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--steps K] [--batch B] [--seed S] [--threads T] [--data DIR] [--test-images N] [--save PATH]\n"
          "  defaults: 300 steps, batch 64, seed 1, libtorch's threads, Fashion-MNIST from\n"
          "  /usr/share/datasets/fashion-mnist, all 10,000 test images, not saved\n",
          prog);
}

int main(int argc, char **argv) {
  const char *data_dir = "/usr/share/datasets/fashion-mnist", *save = "";
  int steps = 300, threads = 0, step;
  int64_t batch = 64, test_images = 0, n_test = 0, c[3] = {0, 0, 0};
  unsigned long long seed = 1, epoch = 0;
  ctorch_tensor train_x = NULL, train_y = NULL, test_x = NULL, test_y = NULL;
  ctorch_data_loader train = NULL, test = NULL;
  ctorch_nn_module model = NULL;
  ctorch_optimizer opt = NULL;
  double first = 0, last = 0, t0, dt;

  {
    const example_arg args[] = {
        EXAMPLE_INT("--steps", &steps),    EXAMPLE_INT64("--batch", &batch),
        EXAMPLE_U64("--seed", &seed),      EXAMPLE_INT("--threads", &threads),
        EXAMPLE_STR("--data", &data_dir),  EXAMPLE_INT64("--test-images", &test_images),
        EXAMPLE_STR("--save", &save),
    };
    int rc = example_parse_args(argc, argv, args, EXAMPLE_NARGS(args), usage);
    if (rc >= 0) return rc;
  }
  if (steps < 1 || batch < 1) {
    fprintf(stderr, "transformer: --steps and --batch must be >= 1\n");
    return 2;
  }
  if (threads > 0) CHECK(ctorch_set_num_threads(threads));
  CHECK(ctorch_get_num_threads(&threads));

  load_data(data_dir, &train_x, &train_y, &test_x, &test_y);
  CHECK(ctorch_tensor_numel(&n_test, test_y));
  if (test_images > 0 && test_images < n_test) { /* the first N test images */
    ctorch_tensor x = NULL, y = NULL;
    CHECK(ctorch_narrow(&x, test_x, 0, 0, test_images));
    CHECK(ctorch_narrow(&y, test_y, 0, 0, test_images));
    ctorch_tensor_free(test_x);
    ctorch_tensor_free(test_y);
    test_x = x;
    test_y = y;
  }
  CHECK(ctorch_data_loader_new(&train, train_x, train_y, batch, 1, seed, 0));
  CHECK(ctorch_data_loader_new(&test, test_x, test_y, EVAL_BATCH, 0, 0, 0));

  CHECK(ctorch_manual_seed(seed));
  model = make_model();
  {
    ctorch_optim_options o;
    CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAMW)); /* lr 1e-3, betas (0.9, 0.999), wd 0.01 */
    CHECK(ctorch_optimizer_new_from_module(&opt, CTORCH_OPTIM_ADAMW, model, &o));
  }
  printf("Transformer encoder (%d layers, d_model %d) on Fashion-MNIST rows, %d steps, batch %lld, %d thread(s), "
         "seed %llu\n",
         LAYERS, D_MODEL, steps, (long long)batch, threads, seed);
  fflush(stdout);

  CHECK(ctorch_data_loader_start_epoch(train, epoch));
  t0 = now();
  for (step = 0; step < steps; ++step) {
    ctorch_handle_scope s = scope_enter(); /* frees the step's tensors */
    ctorch_tensor x = NULL, y = NULL, logits = NULL, loss = NULL;
    int has = 0;
    CHECK(ctorch_data_loader_next(&has, &x, &y, train));
    if (!has) { /* a new epoch: the next permutation, as transformer.py's */
      CHECK(ctorch_data_loader_start_epoch(train, ++epoch));
      CHECK(ctorch_data_loader_next(&has, &x, &y, train));
    }
    CHECK(ctorch_optimizer_zero_grad(opt, 1));
    CHECK(ctorch_nn_module_forward(&logits, model, x));
    CHECK(ctorch_cross_entropy_loss(&loss, logits, y, NULL, 1, -100, 0.0));
    CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    CHECK(ctorch_optimizer_step(opt));
    CHECK(ctorch_tensor_item_double(&last, loss));
    if (step == 0) first = last;
    if (step == 0 || (step + 1) % 50 == 0 || step + 1 == steps) {
      printf("step %d/%d loss %.6f\n", step + 1, steps, last);
      fflush(stdout);
    }
    scope_leave(s);
  }
  dt = now() - t0;

  CHECK(ctorch_nn_module_train(model, 0)); /* dropout off */
  nn_count_on(model, test, c);
  printf("test accuracy %.4f (%lld images), top-5 %.4f\n", (double)c[0] / (double)c[2], (long long)c[2],
         (double)c[1] / (double)c[2]);
  if (*save) {
    nn_save(model, save);
    printf("saved weights to %s\n", save);
  }
  printf("initial_loss=%.6f final_loss=%.6f test_accuracy=%.4f images_per_s=%.1f\n", first, last,
         (double)c[0] / (double)c[2], (double)steps * (double)batch / dt);

  ctorch_optimizer_free(opt);
  ctorch_nn_module_free(model);
  ctorch_data_loader_free(train);
  ctorch_data_loader_free(test);
  ctorch_tensor_free(train_x);
  ctorch_tensor_free(train_y);
  ctorch_tensor_free(test_x);
  ctorch_tensor_free(test_y);
  return 0;
}
