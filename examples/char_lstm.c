/*
 * A character-level language model in C with ctorch's modules: read a real
 * text, learn to predict its next character, report the perplexity on text
 * held out, then write a few characters of its own.
 *
 *   Embedding(V, 32) -> LSTM(32, H, num_layers=2, batch_first=True) -> Linear(H, V), H = 128
 *   Adam(lr 3e-3), gradient norm clipped to 1.0, truncated backpropagation
 *   through time: the text cut into `batch` streams, windows of `seq`
 *   characters, the LSTM's state carried (detached) from one window to the
 *   next and reset when the streams start over.
 *
 * V is the number of distinct bytes in the text; the first 90% trains, the
 * rest measures. examples/char_lstm.py is the same program in Python
 * PyTorch: from the same seed it starts from the same weights (ctorch_nn_new
 * draws as torch.nn does), sees the same windows and prints the same numbers.
 *
 * Usage: char_lstm [--text PATH] [--steps K] [--batch B] [--seq T] [--hidden H]
 *                  [--seed S] [--threads N] [--sample N] [--save PATH]
 * The defaults take about a minute on 2 cores with Debian's libtorch (whose
 * BLAS is the reference one); PyPI's torch is several times faster.
 * The text defaults to /usr/share/common-licenses/GPL-3 (on every Debian
 * system); without it the program exits with status 77 (skipped). The last
 * line of output is machine-readable:
 *   initial_loss=<nats> final_loss=<nats> val_loss=<nats> val_ppl=<number> chars_per_s=<number>
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ctorch_status st_ = (call);                                                                    \
    if (st_ != CTORCH_OK) {                                                                        \
      fprintf(stderr, "char_lstm: %s:%d: %s failed with %s: %s\n", __FILE__, __LINE__, #call,      \
              ctorch_status_name(st_), ctorch_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#include "train_device.h" /* example_args.h's device options (unused here) */
#include "example_args.h"
#include "example_nn.h"

#define EMBED 32
#define EVAL_STREAMS 8

/* The text as byte codes 0..V-1 (the distinct bytes in sorted order, as
 * char_lstm.py's sorted(set(data))). */
typedef struct {
  unsigned char *bytes;
  int64_t *ids, n;
  unsigned char vocab[256];
  int v;
} corpus;

/* Reads path; 0, or -1 when it cannot be read. */
static int read_corpus(const char *path, corpus *c) {
  FILE *f = fopen(path, "rb");
  int present[256] = {0}, code[256], b;
  long size;
  int64_t i;
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  rewind(f);
  c->bytes = malloc(size > 0 ? (size_t)size : 1);
  c->ids = malloc((size > 0 ? (size_t)size : 1) * sizeof *c->ids);
  if (size <= 0 || !c->bytes || !c->ids || fread(c->bytes, 1, (size_t)size, f) != (size_t)size) {
    fclose(f);
    return -1;
  }
  fclose(f);
  c->n = size;
  for (i = 0; i < c->n; ++i) present[c->bytes[i]] = 1;
  for (c->v = 0, b = 0; b < 256; ++b)
    if (present[b]) {
      code[b] = c->v;
      c->vocab[c->v++] = (unsigned char)b;
    }
  for (i = 0; i < c->n; ++i) c->ids[i] = code[c->bytes[i]];
  return 0;
}

/* ids[start, start + len) as `streams` rows (the remainder dropped): row r
 * is the r-th consecutive piece, as char_lstm.py's batchify. NEW handle. */
static ctorch_tensor batchify(const corpus *c, int64_t start, int64_t len, int64_t streams) {
  const int64_t cols = len / streams, shape[2] = {streams, cols};
  ctorch_tensor t = NULL;
  CHECK(ctorch_tensor_from_data(&t, c->ids + start, (size_t)(streams * cols) * sizeof(int64_t), shape, 2,
                                CTORCH_INT64));
  return t;
}

/* CharLSTM.forward of char_lstm.py: (x [B, T] ids, h, c) -> (logits [B, T, V],
 * h, c); h and c NULL (None) start from zeros. Its intermediates live in the
 * callback's own scope; the outputs are kept out of it (ctorch takes them). */
static ctorch_status lm_forward(void *unused, ctorch_nn_module self, const ctorch_tensor *in, size_t n_in,
                                const char *kwargs, ctorch_tensor *out, size_t max_out, size_t *n_out) {
  ctorch_handle_scope s = NULL;
  ctorch_tensor lstm_in[3] = {NULL, in[1], in[2]}, lstm_out[3] = {NULL, NULL, NULL};
  size_t got = 0, k;
  ctorch_status st = ctorch_handle_scope_enter(&s);
  (void)unused, (void)n_in, (void)kwargs, (void)max_out; /* made with 3 inputs, read 3 outputs */
  if (!st) st = ctorch_nn_module_forward_child(&lstm_in[0], self, "embed", in[0]);
  if (!st) st = ctorch_nn_module_forward_child_n(self, "lstm", lstm_in, 3, NULL, lstm_out, 3, &got);
  if (!st) st = ctorch_nn_module_forward_child(&out[0], self, "head", lstm_out[0]);
  out[1] = lstm_out[1];
  out[2] = lstm_out[2];
  for (k = 0; !st && k < 3; ++k) st = ctorch_handle_scope_keep(out[k]);
  ctorch_handle_scope_leave(s);
  *n_out = st == CTORCH_OK ? 3 : 0;
  return st;
}

/* char_lstm.py's CharLSTM(v): its three layers, made in its __init__'s order
 * (the order of the random draws), so the state-dict keys are its own. */
static ctorch_nn_module make_model(int v, int64_t hidden) {
  ctorch_nn_module m = NULL;
  CHECK(ctorch_nn_custom_new(&m, "CharLSTM", lm_forward, NULL, NULL));
  nn_add(m, "embed", nn_makef("Embedding", "%d, %d", v, EMBED));
  nn_add(m, "lstm", nn_makef("LSTM", "%d, %lld, num_layers=2, batch_first=True", EMBED, (long long)hidden));
  nn_add(m, "head", nn_makef("Linear", "%lld, %d", (long long)hidden, v));
  return m;
}

/* Mean cross-entropy of predicting ids[:, start + 1 .. start + len] from
 * ids[:, start .. start + len - 1], carrying the state *h, *c (NULL: zeros),
 * which become the new state (NEW handles, detached, kept past the caller's
 * scope); the loss is in the caller's scope. */
static ctorch_tensor window_loss(ctorch_nn_module m, ctorch_tensor ids, int64_t start, int64_t len,
                                 ctorch_tensor *h, ctorch_tensor *c) {
  const int64_t flat[1] = {-1};
  ctorch_tensor in[3] = {NULL, *h, *c}, out[3], logits = NULL, y = NULL, loss = NULL;
  int64_t v = 0;
  size_t got = 0;
  CHECK(ctorch_narrow(&in[0], ids, 1, start, len));
  CHECK(ctorch_narrow(&y, ids, 1, start + 1, len));
  CHECK(ctorch_reshape(&y, y, flat, 1));
  CHECK(ctorch_nn_module_forward_n(m, in, 3, NULL, out, 3, &got));
  CHECK(ctorch_size_int(&v, out[0], 2));
  {
    const int64_t rows[2] = {-1, v};
    CHECK(ctorch_reshape(&logits, out[0], rows, 2));
  }
  CHECK(ctorch_cross_entropy_loss(&loss, logits, y, NULL, 1, -100, 0.0));
  ctorch_tensor_free(*h);
  ctorch_tensor_free(*c);
  CHECK(ctorch_tensor_detach(h, out[1])); /* truncated BPTT: no gradient into the previous window */
  CHECK(ctorch_tensor_detach(c, out[2]));
  scope_keep(*h);
  scope_keep(*c);
  return loss;
}

/* Mean loss over the held-out streams, one window of `seq` after another. */
static double evaluate(ctorch_nn_module m, ctorch_tensor ids, int64_t seq) {
  ctorch_autograd_scope inf = NULL;
  ctorch_tensor h = NULL, c = NULL;
  int64_t cols = 0, start, len, count = 0;
  double sum = 0;
  CHECK(ctorch_size_int(&cols, ids, 1));
  CHECK(ctorch_nn_module_train(m, 0));
  CHECK(ctorch_autograd_scope_enter(&inf, CTORCH_SCOPE_INFERENCE_MODE));
  for (start = 0; start + 1 < cols; start += seq) {
    ctorch_handle_scope s = scope_enter();
    double l = 0;
    len = cols - 1 - start < seq ? cols - 1 - start : seq;
    CHECK(ctorch_tensor_item_double(&l, window_loss(m, ids, start, len, &h, &c)));
    sum += l * (double)len; /* every window has the same number of streams */
    count += len;
    scope_leave(s);
  }
  ctorch_tensor_free(h);
  ctorch_tensor_free(c);
  CHECK(ctorch_autograd_scope_leave(inf));
  CHECK(ctorch_nn_module_train(m, 1));
  return sum / (double)count;
}

/* Feeds `prompt`, then draws n characters one at a time from the softmax of
 * the logits (torch.multinomial with a generator seeded with seed) and
 * prints them. */
static void sample(ctorch_nn_module m, const corpus *cp, const char *prompt, int n, uint64_t seed) {
  ctorch_autograd_scope inf = NULL;
  ctorch_generator g = NULL;
  ctorch_tensor h = NULL, c = NULL;
  int64_t code[256], ids[64], i, len = 0;
  int b;
  for (b = 0; b < 256; ++b) code[b] = -1;
  for (b = 0; b < cp->v; ++b) code[cp->vocab[b]] = b;
  for (i = 0; prompt[i] && len < 64; ++i) /* the prompt's characters that the text has */
    if (code[(unsigned char)prompt[i]] >= 0) ids[len++] = code[(unsigned char)prompt[i]];
  CHECK(ctorch_generator_new(&g, ctorch_device_cpu(), seed));
  CHECK(ctorch_autograd_scope_enter(&inf, CTORCH_SCOPE_INFERENCE_MODE));
  printf("sample: %s", prompt);
  for (i = 0; i < n; ++i) {
    ctorch_handle_scope s = scope_enter();
    ctorch_tensor x = NULL, in[3] = {NULL, h, c}, out[3], last = NULL, probs = NULL, next = NULL;
    const int64_t shape[2] = {1, i == 0 ? len : 1};
    int64_t id = 0, t = 0;
    size_t got = 0;
    CHECK(ctorch_tensor_from_data(&x, ids, (size_t)shape[1] * sizeof(int64_t), shape, 2, CTORCH_INT64));
    in[0] = x;
    CHECK(ctorch_nn_module_forward_n(m, in, 3, NULL, out, 3, &got));
    CHECK(ctorch_size_int(&t, out[0], 1));
    CHECK(ctorch_select_int(&last, out[0], 1, t - 1)); /* the logits after the last character: [1, V] */
    CHECK(ctorch_softmax_int(&probs, last, -1, NULL));
    CHECK(ctorch_multinomial(&next, probs, 1, 0, g));
    CHECK(ctorch_tensor_item_int64(&id, next));
    ctorch_tensor_free(h);
    ctorch_tensor_free(c);
    h = scope_keep(out[1]);
    c = scope_keep(out[2]);
    ids[0] = id; /* the next step's input */
    putchar(cp->vocab[id]);
    scope_leave(s);
  }
  printf("\n");
  ctorch_tensor_free(h);
  ctorch_tensor_free(c);
  CHECK(ctorch_autograd_scope_leave(inf));
  ctorch_generator_free(g);
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--text PATH] [--steps K] [--batch B] [--seq T] [--hidden H] [--seed S] [--threads N]\n"
          "          [--sample N] [--save PATH]\n"
          "  defaults: the GPL-3 text of /usr/share/common-licenses, 200 steps, 32 streams, windows of 32,\n"
          "  hidden size 128, seed 1, libtorch's threads, 200 sampled characters, not saved\n",
          prog);
}

int main(int argc, char **argv) {
  const char *text = "/usr/share/common-licenses/GPL-3", *save = "";
  int steps = 200, threads = 0, n_sample = 200, step;
  int64_t batch = 32, seq = 32, hidden = 128, n_train, cols, windows;
  unsigned long long seed = 1;
  corpus cp;
  ctorch_nn_module model = NULL;
  ctorch_tensor train = NULL, val = NULL, h = NULL, c = NULL;
  ctorch_optimizer opt = NULL;
  double first = 0, last = 0, val_loss, t0, dt;

  {
    const example_arg args[] = {
        EXAMPLE_STR("--text", &text),       EXAMPLE_INT("--steps", &steps),     EXAMPLE_INT64("--batch", &batch),
        EXAMPLE_INT64("--seq", &seq),       EXAMPLE_U64("--seed", &seed),       EXAMPLE_INT("--threads", &threads),
        EXAMPLE_INT("--sample", &n_sample), EXAMPLE_STR("--save", &save),   EXAMPLE_INT64("--hidden", &hidden),
    };
    int rc = example_parse_args(argc, argv, args, EXAMPLE_NARGS(args), usage);
    if (rc >= 0) return rc;
  }
  if (read_corpus(text, &cp) != 0) {
    fprintf(stderr, "char_lstm: cannot read %s: skipped\n", text);
    return 77;
  }
  n_train = cp.n * 9 / 10;
  if (steps < 1 || batch < 1 || seq < 1 || hidden < 1 || n_train / batch < seq + 1 || (cp.n - n_train) / EVAL_STREAMS < 2) {
    fprintf(stderr, "char_lstm: --steps, --batch, --seq and --hidden must be >= 1, and the text long enough for them\n");
    return 2;
  }
  if (threads > 0) CHECK(ctorch_set_num_threads(threads));
  CHECK(ctorch_get_num_threads(&threads));
  train = batchify(&cp, 0, n_train, batch);
  val = batchify(&cp, n_train, cp.n - n_train, EVAL_STREAMS);
  cols = n_train / batch;
  windows = (cols - 1) / seq; /* full windows per pass over the streams */

  CHECK(ctorch_manual_seed(seed));
  model = make_model(cp.v, hidden);
  {
    ctorch_optim_options o;
    CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAM));
    o.lr = 3e-3;
    CHECK(ctorch_optimizer_new_from_module(&opt, CTORCH_OPTIM_ADAM, model, &o));
  }
  printf("char-LSTM (hidden %lld) on %s (%lld characters, %d distinct), %d steps, batch %lld x %lld, %d thread(s), "
         "seed %llu\n",
         (long long)hidden, text, (long long)cp.n, cp.v, steps, (long long)batch, (long long)seq, threads, seed);
  fflush(stdout);

  t0 = now();
  for (step = 0; step < steps; ++step) {
    ctorch_handle_scope s = scope_enter(); /* frees the step's tensors */
    int64_t w = step % windows;
    ctorch_tensor loss;
    if (w == 0) { /* the streams start over: so does the state */
      ctorch_tensor_free(h);
      ctorch_tensor_free(c);
      h = c = NULL;
    }
    CHECK(ctorch_optimizer_zero_grad(opt, 1));
    loss = window_loss(model, train, w * seq, seq, &h, &c);
    CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    CHECK(ctorch_nn_module_clip_grad_norm_(NULL, model, 1.0, 2.0, 0));
    CHECK(ctorch_optimizer_step(opt));
    CHECK(ctorch_tensor_item_double(&last, loss));
    if (step == 0) first = last;
    if (step == 0 || (step + 1) % 50 == 0 || step + 1 == steps) {
      printf("step %d/%d loss %.6f ppl %.3f\n", step + 1, steps, last, exp(last));
      fflush(stdout);
    }
    scope_leave(s);
  }
  dt = now() - t0;
  ctorch_tensor_free(h);
  ctorch_tensor_free(c);

  val_loss = evaluate(model, val, seq);
  printf("held-out loss %.6f perplexity %.4f (uniform: %d)\n", val_loss, exp(val_loss), cp.v);
  sample(model, &cp, "The ", n_sample, seed);
  if (*save) {
    nn_save(model, save);
    printf("saved weights to %s\n", save);
  }
  printf("initial_loss=%.6f final_loss=%.6f val_loss=%.6f val_ppl=%.4f chars_per_s=%.1f\n", first, last, val_loss,
         exp(val_loss), (double)(steps * batch * seq) / dt);

  ctorch_optimizer_free(opt);
  ctorch_nn_module_free(model);
  ctorch_tensor_free(train);
  ctorch_tensor_free(val);
  free(cp.bytes);
  free(cp.ids);
  return 0;
}
