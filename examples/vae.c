/*
 * A variational autoencoder on Fashion-MNIST in C with ctorch's modules: the
 * classic PyTorch example (pytorch/examples, vae/main.py).
 *
 *   x [B, 784] in [0, 1] -> fc1 (400) relu -> fc21 -> mu, fc22 -> logvar (20 each)
 *   z = mu + eps * exp(0.5 * logvar), eps ~ N(0, 1) from the default generator (randn_like)
 *   z -> fc3 (400) relu -> fc4 (784) sigmoid
 *   loss = BCE(recon, x, sum) - 0.5 * sum(1 + logvar - mu^2 - exp(logvar)); Adam lr 1e-3.
 *
 * examples/vae.py is the same program in Python PyTorch: from the same seed
 * the same weights, batches (lenet5.c's data order), eps draws, losses and
 * trained weights, bit for bit on one thread. At the end it evaluates the
 * first --test-images test images with z = mu (deterministic: any program
 * recomputes it from the weights) and decodes 64 draws z ~ N(0, 1) from a
 * generator seeded with --seed into an 8x8 grid (28x28 tiles, a white line of
 * 1 pixel around each), rounded to uint8 as torchvision's save_image does;
 * the grid goes to a PNG file (--samples) and to TensorBoard (--logdir) with
 * the loss every 10 steps: tensorboard --logdir runs.
 *
 * Usage: vae [--steps K] [--batch B] [--seed S] [--threads T] [--data DIR] [--test-images N]
 *            [--samples PNG] [--logdir DIR] [--save PATH] [--load PATH]
 * The last line of output is machine-readable:
 *   initial_loss=<nats/image> final_loss=<nats/image> test_loss=<nats/image> images_per_s=<number>
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctorch.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ctorch_status st_ = (call);                                                                    \
    if (st_ != CTORCH_OK) {                                                                        \
      fprintf(stderr, "vae: %s:%d: %s failed with %s: %s\n", __FILE__, __LINE__, #call,            \
              ctorch_status_name(st_), ctorch_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#include "train_device.h" /* example_args.h's device options (unused here) */
#include "example_args.h"
#include "example_nn.h"
#include "png_write.h"

#define LATENT 20
#define GRID 8  /* GRID x GRID samples */
#define TILE 30 /* 28 pixels and the white line around them */

/* The VAE of vae.py: a module holding the five layers (the state-dict keys
 * fc1.weight, fc1.bias, ...), made in its __init__'s order: the order of
 * the random draws and of the keys. Its forward is encode/decode below. */
static ctorch_nn_module make_vae(void) {
  ctorch_nn_module v = NULL;
  CHECK(ctorch_nn_custom_new(&v, "VAE", NULL, NULL, NULL));
  nn_add(v, "fc1", nn_make("Linear", "784, 400"));
  nn_add(v, "fc21", nn_make("Linear", "400, 20"));
  nn_add(v, "fc22", nn_make("Linear", "400, 20"));
  nn_add(v, "fc3", nn_make("Linear", "20, 400"));
  nn_add(v, "fc4", nn_make("Linear", "400, 784"));
  return v;
}

/* The functions below run inside the caller's handle scope, which frees
 * every intermediate (so `&h, h` overwrites a handle without a leak). */

static void encode(ctorch_nn_module v, ctorch_tensor x, ctorch_tensor *mu, ctorch_tensor *logvar) {
  ctorch_tensor h = NULL;
  CHECK(ctorch_nn_module_forward_child(&h, v, "fc1", x));
  CHECK(ctorch_relu(&h, h));
  CHECK(ctorch_nn_module_forward_child(mu, v, "fc21", h));
  CHECK(ctorch_nn_module_forward_child(logvar, v, "fc22", h));
}

static ctorch_tensor decode(ctorch_nn_module v, ctorch_tensor z) {
  ctorch_tensor h = NULL;
  CHECK(ctorch_nn_module_forward_child(&h, v, "fc3", z));
  CHECK(ctorch_relu(&h, h));
  CHECK(ctorch_nn_module_forward_child(&h, v, "fc4", h));
  CHECK(ctorch_sigmoid(&h, h));
  return h;
}

/* z = mu + eps * std, std = exp(0.5 * logvar), eps = randn_like(std). */
static ctorch_tensor reparameterize(ctorch_tensor mu, ctorch_tensor logvar) {
  ctorch_tensor std = NULL, eps = NULL, z = NULL;
  CHECK(ctorch_mul_Scalar(&std, logvar, ctorch_scalar_float(0.5)));
  CHECK(ctorch_exp(&std, std));
  CHECK(ctorch_randn_like(&eps, std, NULL, NULL, NULL, NULL, NULL));
  CHECK(ctorch_mul_Tensor(&z, eps, std));
  CHECK(ctorch_add_Tensor(&z, mu, z, ctorch_scalar_int(1)));
  return z;
}

/* BCE(recon, x, reduction=sum) + KLD, KLD = -0.5 * sum(1 + logvar - mu^2 - exp(logvar)):
 * vae.py's loss_function, op for op. */
static ctorch_tensor vae_loss(ctorch_tensor recon, ctorch_tensor x, ctorch_tensor mu, ctorch_tensor logvar) {
  const ctorch_scalar one = ctorch_scalar_int(1);
  ctorch_tensor bce = NULL, kld = NULL, t = NULL;
  CHECK(ctorch_binary_cross_entropy(&bce, recon, x, NULL, 2 /* sum */));
  CHECK(ctorch_add_Scalar(&kld, logvar, one, one));
  CHECK(ctorch_pow_Tensor_Scalar(&t, mu, ctorch_scalar_int(2)));
  CHECK(ctorch_sub_Tensor(&kld, kld, t, one));
  CHECK(ctorch_exp(&t, logvar));
  CHECK(ctorch_sub_Tensor(&kld, kld, t, one));
  CHECK(ctorch_sum(&kld, kld, NULL));
  CHECK(ctorch_mul_Scalar(&kld, kld, ctorch_scalar_float(-0.5)));
  CHECK(ctorch_add_Tensor(&t, bce, kld, one));
  return t;
}

/* 64 samples decoded from z ~ N(0, 1) (a generator seeded with seed) as one
 * uint8 [240, 240] picture: white-framed tiles, x * 255 + 0.5 clamped and
 * truncated (torchvision's save_image rounding). */
static ctorch_tensor sample_grid(ctorch_nn_module v, uint64_t seed) {
  const int64_t zshape[2] = {GRID * GRID, LATENT}, tiles[3] = {GRID * GRID, 28, 28}, pad[4] = {1, 1, 1, 1},
                rows[4] = {GRID, GRID, TILE, TILE}, order[4] = {0, 2, 1, 3}, side[2] = {GRID * TILE, GRID * TILE};
  const ctorch_scalar lo = ctorch_scalar_int(0), hi = ctorch_scalar_int(255);
  ctorch_generator g = NULL;
  ctorch_tensor z = NULL, x = NULL;
  CHECK(ctorch_generator_new(&g, ctorch_device_cpu(), seed));
  CHECK(ctorch_randn_generator(&z, zshape, 2, g, NULL, NULL, NULL, NULL));
  ctorch_generator_free(g);
  CHECK(ctorch_reshape(&x, decode(v, z), tiles, 3));
  CHECK(ctorch_constant_pad_nd(&x, x, pad, 4, ctorch_scalar_float(1.0)));
  CHECK(ctorch_reshape(&x, x, rows, 4));
  CHECK(ctorch_permute(&x, x, order, 4));
  CHECK(ctorch_reshape(&x, x, side, 2));
  CHECK(ctorch_mul_Scalar(&x, x, ctorch_scalar_float(255.0)));
  CHECK(ctorch_add_Scalar(&x, x, ctorch_scalar_float(0.5), ctorch_scalar_int(1)));
  CHECK(ctorch_clamp(&x, x, &lo, &hi));
  CHECK(ctorch_tensor_to_dtype(&x, x, CTORCH_UINT8));
  return x;
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--steps K] [--batch B] [--seed S] [--threads T] [--data DIR] [--test-images N]\n"
          "          [--samples PNG] [--logdir DIR] [--save PATH] [--load PATH]\n"
          "  defaults: 4690 steps (10 epochs), batch 128, seed 1, libtorch's threads, Fashion-MNIST from\n"
          "  /usr/share/datasets/fashion-mnist, all 10,000 test images, samples to vae_samples.png,\n"
          "  TensorBoard to runs/vae ('' = none), weights not saved; --load starts from a state dict\n",
          prog);
}

int main(int argc, char **argv) {
  const char *data_dir = "/usr/share/datasets/fashion-mnist", *samples = "vae_samples.png", *logdir = "runs/vae",
             *save = "", *load = "";
  const int64_t flat[2] = {-1, 784};
  int steps = 4690, threads = 0, step;
  int64_t batch = 128, test_images = 0, test_shape[2] = {0, 0}, seen = 0;
  unsigned long long seed = 1, epoch = 0;
  ctorch_data_loader train = NULL;
  ctorch_tensor train_x = NULL, test_x = NULL;
  ctorch_summary_writer tb = NULL;
  ctorch_optimizer opt = NULL;
  ctorch_nn_module v = NULL;
  double first = 0, last = 0, test_loss = 0, t0, dt;

  {
    const example_arg args[] = {
        EXAMPLE_INT("--steps", &steps),        EXAMPLE_INT64("--batch", &batch),
        EXAMPLE_U64("--seed", &seed),          EXAMPLE_INT("--threads", &threads),
        EXAMPLE_STR("--data", &data_dir),      EXAMPLE_INT64("--test-images", &test_images),
        EXAMPLE_STR("--samples", &samples),    EXAMPLE_STR("--logdir", &logdir),
        EXAMPLE_STR("--save", &save),          EXAMPLE_STR("--load", &load),
    };
    int rc = example_parse_args(argc, argv, args, EXAMPLE_NARGS(args), usage);
    if (rc >= 0) return rc;
  }
  if (steps < 0 || batch < 1 || test_images < 0) {
    fprintf(stderr, "vae: --steps and --test-images must be >= 0, --batch >= 1\n");
    return 2;
  }
  if (threads > 0) CHECK(ctorch_set_num_threads(threads));
  CHECK(ctorch_get_num_threads(&threads));

  { /* images as float [N, 784] in [0, 1], as vae.py's x.float() / 255 */
    ctorch_handle_scope s = scope_enter();
    ctorch_tensor images = NULL, labels = NULL;
    int64_t dims[3] = {0, 0, 0};
    CHECK(ctorch_data_mnist_read_dir(&images, &labels, data_dir, 1));
    CHECK(ctorch_tensor_to_dtype(&train_x, images, CTORCH_FLOAT32));
    CHECK(ctorch_div_Scalar(&train_x, train_x, ctorch_scalar_float(255.0)));
    CHECK(ctorch_reshape(&train_x, train_x, flat, 2));
    CHECK(ctorch_data_mnist_read_dir(&images, &labels, data_dir, 0));
    CHECK(ctorch_tensor_sizes(dims, 3, images));
    if (test_images > 0 && test_images < dims[0]) CHECK(ctorch_narrow(&images, images, 0, 0, test_images));
    CHECK(ctorch_tensor_to_dtype(&test_x, images, CTORCH_FLOAT32));
    CHECK(ctorch_div_Scalar(&test_x, test_x, ctorch_scalar_float(255.0)));
    CHECK(ctorch_reshape(&test_x, test_x, flat, 2));
    scope_keep(train_x);
    scope_keep(test_x);
    scope_leave(s);
  }
  CHECK(ctorch_tensor_sizes(test_shape, 2, test_x));
  CHECK(ctorch_data_loader_new(&train, train_x, NULL, batch, 1, seed, 0)); /* keeps its own reference */
  ctorch_tensor_free(train_x);

  CHECK(ctorch_manual_seed(seed));
  v = make_vae();
  if (*load) nn_load(v, load);
  {
    ctorch_optim_options o;
    CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAM)); /* lr 1e-3, betas (0.9, 0.999) */
    CHECK(ctorch_optimizer_new_from_module(&opt, CTORCH_OPTIM_ADAM, v, &o));
  }
  if (*logdir) CHECK(ctorch_summary_writer_new(&tb, logdir, NULL));
  printf("VAE (784-400-%d) on Fashion-MNIST, %d steps, batch %lld, %d thread(s), seed %llu\n", LATENT, steps,
         (long long)batch, threads, seed);
  fflush(stdout);

  CHECK(ctorch_data_loader_start_epoch(train, epoch));
  t0 = now();
  for (step = 0; step < steps; ++step) {
    ctorch_handle_scope s = scope_enter(); /* frees the step's tensors */
    ctorch_tensor x = NULL, mu = NULL, logvar = NULL, loss = NULL;
    int64_t shape[2] = {0, 0};
    int has = 0;
    CHECK(ctorch_data_loader_next(&has, &x, NULL, train));
    if (!has) { /* a new epoch: the next permutation, as vae.py's */
      CHECK(ctorch_data_loader_start_epoch(train, ++epoch));
      CHECK(ctorch_data_loader_next(&has, &x, NULL, train));
    }
    CHECK(ctorch_optimizer_zero_grad(opt, 1));
    encode(v, x, &mu, &logvar);
    loss = vae_loss(decode(v, reparameterize(mu, logvar)), x, mu, logvar);
    CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    CHECK(ctorch_optimizer_step(opt));
    CHECK(ctorch_tensor_item_double(&last, loss));
    CHECK(ctorch_tensor_sizes(shape, 2, x)); /* the per-image loss, as the classic example prints it */
    last /= (double)shape[0];
    seen += shape[0];
    if (step == 0) first = last;
    if (step == 0 || (step + 1) % 50 == 0 || step + 1 == steps) {
      printf("step %d/%d loss %.6f\n", step + 1, steps, last);
      fflush(stdout);
    }
    if (tb && (step + 1) % 10 == 0) CHECK(ctorch_summary_writer_add_scalar(tb, "train/loss", last, step + 1, 0));
    scope_leave(s);
  }
  dt = now() - t0;

  { /* the test loss with z = mu, and the grid of samples */
    ctorch_handle_scope s = scope_enter();
    ctorch_autograd_scope inf = NULL;
    ctorch_tensor mu = NULL, logvar = NULL, grid = NULL;
    int64_t hw[2] = {0, 0};
    uint8_t *pixels;
    CHECK(ctorch_autograd_scope_enter(&inf, CTORCH_SCOPE_INFERENCE_MODE));
    encode(v, test_x, &mu, &logvar);
    CHECK(ctorch_tensor_item_double(&test_loss, vae_loss(decode(v, mu), test_x, mu, logvar)));
    test_loss /= (double)test_shape[0];
    printf("test loss %.6f (%lld images, z = mu)\n", test_loss, (long long)test_shape[0]);
    grid = sample_grid(v, seed);
    CHECK(ctorch_autograd_scope_leave(inf));
    CHECK(ctorch_tensor_sizes(hw, 2, grid));
    if (*samples) {
      pixels = (uint8_t *)malloc((size_t)(hw[0] * hw[1]));
      if (!pixels) {
        fprintf(stderr, "vae: out of memory\n");
        exit(1);
      }
      CHECK(ctorch_tensor_copy_to(pixels, (size_t)(hw[0] * hw[1]), grid));
      if (png_write(samples, pixels, (uint32_t)hw[1], (uint32_t)hw[0], 1) != 0) {
        perror(samples);
        exit(1);
      }
      free(pixels);
      printf("saved samples to %s\n", samples);
    }
    if (tb) {
      CHECK(ctorch_unsqueeze(&grid, grid, 0)); /* (1, H, W): one grey channel */
      CHECK(ctorch_summary_writer_add_image(tb, "samples", grid, steps, 0));
      CHECK(ctorch_summary_writer_add_scalar(tb, "test/loss", test_loss, steps, 0));
    }
    scope_leave(s);
  }
  if (*save) {
    nn_save(v, save);
    printf("saved weights to %s\n", save);
  }
  printf("initial_loss=%.9g final_loss=%.9g test_loss=%.9g images_per_s=%.1f\n", first, last, test_loss,
         steps ? (double)seen / dt : 0.0);

  ctorch_summary_writer_free(tb);
  ctorch_optimizer_free(opt);
  ctorch_nn_module_free(v);
  ctorch_data_loader_free(train);
  ctorch_tensor_free(test_x);
  return 0;
}
