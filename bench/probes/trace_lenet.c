/* LeNet-5 (examples/lenet5_model.h) from C, op by op (one ctorch call per
 * op) against the same network traced once into a TorchScript module whose
 * forward replays the recorded graph in one call (ctorch_tracer_*).
 *
 * Usage: trace_lenet BATCH ITERS [THREADS]
 * Prints, in microseconds per iteration (median over 7 rounds, the two ways
 * interleaved round by round so that machine noise hits both alike; wall
 * clock, and the calling thread's CPU time, steadier on a shared machine):
 *   forward_ops forward_traced     inference-mode forward
 *   train_ops   train_traced       zero_grad, forward, cross-entropy,
 *                                  backward, AdamW step
 * and the calls into ctorch per forward each way. */
#include <string.h>

#include <ctorch.h>

#include "bench.h"

#define CHECK(call)                                                 \
  do {                                                              \
    if ((call) != CTORCH_OK) bench_die(#call, ctorch_last_error()); \
  } while (0)

#include "lenet5_model.h"

enum { ROUNDS = 7 };

static ctorch_tensor forward_ops(ctorch_tensor *p, ctorch_tensor x) { return forward(p, x); }

static ctorch_tensor forward_traced(ctorch_module m, ctorch_tensor x) {
  ctorch_tensor out = NULL;
  CHECK(ctorch_module_forward_tensors(&out, m, &x, 1));
  return out;
}

static void infer(int traced, ctorch_module m, ctorch_tensor *p, ctorch_tensor x, long iters) {
  ctorch_autograd_scope sc = NULL;
  long i;
  CHECK(ctorch_autograd_scope_enter(&sc, CTORCH_SCOPE_INFERENCE_MODE));
  for (i = 0; i < iters; ++i) ctorch_tensor_free(traced ? forward_traced(m, x) : forward_ops(p, x));
  CHECK(ctorch_autograd_scope_leave(sc));
}

static void train(int traced, ctorch_module m, ctorch_tensor *p, ctorch_optimizer opt, ctorch_tensor x,
                  ctorch_tensor y, long iters) {
  long i;
  for (i = 0; i < iters; ++i) {
    ctorch_tensor out, loss = NULL;
    CHECK(ctorch_optimizer_zero_grad(opt, 0));
    out = traced ? forward_traced(m, x) : forward_ops(p, x);
    CHECK(ctorch_cross_entropy_loss(&loss, out, y, NULL, 1, -100, 0.0));
    CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    CHECK(ctorch_optimizer_step(opt));
    ctorch_tensor_free(out);
    ctorch_tensor_free(loss);
  }
}

/* CPU time of the calling thread: with one intra-op thread every op runs on
 * it, and on a machine shared with other jobs this is far steadier than the
 * wall clock (which is printed too). */
static double thread_cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Median microseconds per iteration of each way over ROUNDS interleaved rounds. */
static void measure(const char *name, int is_train, ctorch_module m, ctorch_tensor *p, ctorch_optimizer opt,
                    ctorch_tensor x, ctorch_tensor y, long iters) {
  double t[2][ROUNDS], c[2][ROUNDS], t0, c0;
  long per = iters / ROUNDS > 0 ? iters / ROUNDS : 1;
  int r, way;
  for (way = 0; way < 2; ++way) { /* warm-up: the executor profiles, then optimises */
    if (is_train) train(way, m, p, opt, x, y, 10);
    else infer(way, m, p, x, 10);
  }
  for (r = 0; r < ROUNDS; ++r) {
    for (way = 0; way < 2; ++way) {
      t0 = bench_now();
      c0 = thread_cpu_now();
      if (is_train) train(way, m, p, opt, x, y, per);
      else infer(way, m, p, x, per);
      c[way][r] = (thread_cpu_now() - c0) * 1e6 / (double)per;
      t[way][r] = (bench_now() - t0) * 1e6 / (double)per;
    }
  }
  printf("%s_ops wall %.1f cpu %.1f\n", name, bench_median(t[0], ROUNDS), bench_median(c[0], ROUNDS));
  printf("%s_traced wall %.1f cpu %.1f\n", name, bench_median(t[1], ROUNDS), bench_median(c[1], ROUNDS));
}

int main(int argc, char **argv) {
  const ctorch_dtype f32 = CTORCH_FLOAT32, i64 = CTORCH_INT64;
  ctorch_tensor p[NPARAMS], x = NULL, y = NULL, logits;
  int64_t xs[4] = {0, 1, 28, 28}, ys[1];
  ctorch_tracer tr = NULL;
  ctorch_module m = NULL;
  ctorch_optimizer opt = NULL;
  ctorch_optim_options o;
  long iters;
  double t0, trace_ms;
  int i;
  if (argc < 3 || atol(argv[1]) < 1 || atol(argv[2]) < 1) {
    fprintf(stderr, "usage: trace_lenet BATCH ITERS [THREADS]\n");
    return 2;
  }
  xs[0] = ys[0] = atol(argv[1]);
  iters = atol(argv[2]);
  CHECK(ctorch_set_num_threads(argc > 3 ? atoi(argv[3]) : 1));
  CHECK(ctorch_manual_seed(0));
  make_model(p);
  CHECK(ctorch_randn(&x, xs, 4, &f32, NULL, NULL, NULL));
  CHECK(ctorch_randint(&y, 10, ys, 1, &i64, NULL, NULL, NULL));

  t0 = bench_now();
  CHECK(ctorch_tracer_new(&tr, "LeNet5"));
  for (i = 0; i < NPARAMS; ++i) CHECK(ctorch_tracer_add_parameter(tr, PARAM_NAMES[i], p[i]));
  CHECK(ctorch_tracer_begin(tr, &x, 1));
  logits = forward(p, x);
  CHECK(ctorch_tracer_finish(&m, tr, &logits, 1));
  trace_ms = (bench_now() - t0) * 1e3;
  ctorch_tensor_free(logits);
  ctorch_tracer_free(tr);

  CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAMW));
  o.lr = 1e-3;
  CHECK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_ADAMW, p, NPARAMS, &o));
  printf("batch %ld iters %ld trace_ms %.2f op_calls_per_forward 12 (traced: 1)\n", (long)xs[0], iters,
         trace_ms);
  measure("forward", 0, m, p, opt, x, y, iters);
  measure("train", 1, m, p, opt, x, y, iters);

  ctorch_optimizer_free(opt);
  ctorch_module_free(m);
  for (i = 0; i < NPARAMS; ++i) ctorch_tensor_free(p[i]);
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  return 0;
}
