/* Training throughput on a CUDA device through ctorch from C, eager or as a
 * captured CUDA graph; gpu_train_cpp.cpp and gpu_train.py are the same
 * programs through libtorch C++ and Python torch.
 *
 * Usage: gpu_train lenet|resnet|resnet-cl fp32|bf16|fp16 eager|graph adamw|sgd STEPS [WIDTH BATCH]
 *        gpu_train -      (those arguments, one case per line on stdin)
 *   lenet:  examples/lenet5_model.h, batch 256 (BATCH overrides)
 *   resnet: examples/resnet_model.h, width 128, batch 512 (WIDTH, BATCH override)
 *   resnet-cl: the same with channels-last weights and inputs
 *   bf16/fp16: autocast of the forward pass (fp16 with the loss scaler,
 *              eager only); adamw: AdamW lr 1e-3; sgd: SGD lr 0.01 momentum 0.9
 *   graph: the whole step (zero_grad, forward, backward, optimizer step)
 *          captured once after warm-up and replayed; SGD only (libtorch's
 *          AdamW computes its bias correction on the host: not capturable).
 * Fixed random inputs on the device (one of two batches copied into the
 * step's input each step). Prints the rate in images/s over the timed steps
 * (device synchronised before and after). Without a CUDA device prints
 * "skipped: no CUDA device" and exits 77. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctorch.h>

#include "bench.h"

#define CHECK(call)                                                     \
  do {                                                                  \
    if ((call) != CTORCH_OK) bench_die(#call, ctorch_last_error());     \
  } while (0)

#include "lenet5_model.h"
#include "resnet_model.h"
#include "train_device.h"

typedef struct {
  int is_resnet;
  ctorch_tensor lenet[NPARAMS];
  resnet net;
} model;

static ctorch_tensor model_forward(model *m, ctorch_tensor x) {
  return m->is_resnet ? resnet_forward(&m->net, x, 1) : forward(m->lenet, x);
}

/* zero_grad (in place: a captured graph must keep its gradient tensors),
 * forward under autocast, loss, backward, step. */
static void step(model *m, const train_target *t, ctorch_optimizer opt, ctorch_tensor x, ctorch_tensor y,
                 int cache) {
  ctorch_handle_scope s = scope_enter(); /* frees the step's tensors */
  ctorch_tensor loss = NULL;
  ctorch_autocast_scope amp = NULL;
  CHECK(ctorch_optimizer_zero_grad(opt, 0));
  if (t->amp) CHECK(ctorch_autocast_scope_enter(&amp, CTORCH_DEVICE_CUDA, (ctorch_dtype)t->amp, 1, cache));
  CHECK(ctorch_cross_entropy_loss(&loss, model_forward(m, x), y, NULL, 1, -100, 0.0));
  if (amp) CHECK(ctorch_autocast_scope_leave(amp));
  if (t->scaler) {
    ctorch_tensor scaled = NULL;
    CHECK(ctorch_grad_scaler_scale(&scaled, t->scaler, loss));
    CHECK(ctorch_tensor_backward(scaled, NULL, 0, 0, NULL, 0));
    CHECK(ctorch_grad_scaler_step(NULL, t->scaler, opt));
    CHECK(ctorch_grad_scaler_update(t->scaler, NULL));
  } else {
    CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    CHECK(ctorch_optimizer_step(opt));
  }
  scope_leave(s);
}

static int run_case(int argc, char **argv) {
  int n = 0, i, graph, adamw, channels_last;
  long steps;
  int64_t width = 128, batch;
  model m;
  train_target t = {{CTORCH_DEVICE_CUDA, 0}, 0, NULL};
  ctorch_optimizer opt = NULL;
  ctorch_optim_options o;
  ctorch_tensor xs[2], ys[2], x = NULL, y = NULL;
  const ctorch_dtype f32 = CTORCH_FLOAT32, i64 = CTORCH_INT64;
  double t0;
  if (argc != 6 && argc != 8) {
    fprintf(stderr, "usage: gpu_train lenet|resnet|resnet-cl fp32|bf16|fp16 eager|graph adamw|sgd STEPS [WIDTH BATCH]\n");
    return 2;
  }
  if (ctorch_cuda_device_count(&n) != CTORCH_OK || n == 0) {
    printf("skipped: no CUDA device\n");
    return 77;
  }
  memset(&m, 0, sizeof m);
  m.is_resnet = !strcmp(argv[1], "resnet") || !strcmp(argv[1], "resnet-cl");
  channels_last = !strcmp(argv[1], "resnet-cl");
  t.amp = parse_amp(argv[2]);
  graph = !strcmp(argv[3], "graph");
  adamw = !strcmp(argv[4], "adamw");
  steps = atol(argv[5]);
  batch = m.is_resnet ? 512 : 256;
  if (argc == 8) {
    width = atoll(argv[6]);
    batch = atoll(argv[7]);
  }
  if (t.amp < 0 || steps < 1 || (graph && (adamw || t.amp == CTORCH_FLOAT16))) {
    fprintf(stderr, "gpu_train: bad arguments (graph needs sgd and fp32/bf16)\n");
    return 2;
  }
  target_init(&t, "gpu_train");
  CHECK(ctorch_manual_seed(0));
  if (m.is_resnet) {
    ctorch_tensor *slots[64];
    make_resnet(&m.net, width);
    resnet_to_device(&m.net, t.device);
    if (channels_last) resnet_to_channels_last(&m.net);
    n = model_tensors(&m.net, slots, 0);
    {
      ctorch_tensor params[64];
      for (i = 0; i < n; ++i) params[i] = *slots[i];
      CHECK(ctorch_optim_options_default(&o, adamw ? CTORCH_OPTIM_ADAMW : CTORCH_OPTIM_SGD));
      if (!adamw) o.lr = 0.01, o.momentum = 0.9;
      CHECK(ctorch_optimizer_new(&opt, adamw ? CTORCH_OPTIM_ADAMW : CTORCH_OPTIM_SGD, params, (size_t)n, &o));
    }
  } else {
    make_model(m.lenet);
    params_to_target(&t, m.lenet, NPARAMS);
    CHECK(ctorch_optim_options_default(&o, adamw ? CTORCH_OPTIM_ADAMW : CTORCH_OPTIM_SGD));
    if (!adamw) o.lr = 0.01, o.momentum = 0.9;
    CHECK(ctorch_optimizer_new(&opt, adamw ? CTORCH_OPTIM_ADAMW : CTORCH_OPTIM_SGD, m.lenet, NPARAMS, &o));
  }
  {
    const int64_t xsz[4] = {batch, 1, 28, 28};
    for (i = 0; i < 2; ++i) {
      CHECK(ctorch_randn(&xs[i], xsz, 4, &f32, NULL, &t.device, NULL));
      if (channels_last) {
        ctorch_tensor cl = NULL;
        CHECK(ctorch_contiguous(&cl, xs[i], CTORCH_MEMORY_CHANNELS_LAST));
        ctorch_tensor_free(xs[i]);
        xs[i] = cl;
      }
      CHECK(ctorch_randint(&ys[i], 10, &batch, 1, &i64, NULL, &t.device, NULL));
    }
    CHECK(ctorch_tensor_clone(&x, xs[0]));
    CHECK(ctorch_tensor_clone(&y, ys[0]));
  }
  {
    /* warm-up on a side stream (lazy state: optimizer buffers, cuBLAS/cuDNN
     * handles and plans), as PyTorch's graph recipe does */
    ctorch_stream side = NULL, cur = NULL;
    ctorch_stream_scope sc = NULL;
    CHECK(ctorch_stream_new(&side, t.device, 0));
    CHECK(ctorch_stream_current(&cur, t.device));
    CHECK(ctorch_stream_wait_stream(side, cur));
    CHECK(ctorch_stream_scope_enter(&sc, side));
    for (i = 0; i < 5; ++i) step(&m, &t, opt, x, y, !graph);
    CHECK(ctorch_stream_scope_leave(sc));
    CHECK(ctorch_stream_wait_stream(cur, side));
    ctorch_stream_free(side);
    ctorch_stream_free(cur);
  }
  if (graph) {
    ctorch_cuda_graph g = NULL;
    CHECK(ctorch_cuda_graph_new(&g));
    CHECK(ctorch_cuda_graph_capture_begin(g, NULL));
    step(&m, &t, opt, x, y, 0); /* autocast's cast cache off inside a capture */
    CHECK(ctorch_cuda_graph_capture_end(g));
    CHECK(ctorch_cuda_synchronize(-1));
    t0 = bench_now();
    for (i = 0; i < steps; ++i) {
      CHECK(ctorch_copy_(x, xs[i % 2], 1));
      CHECK(ctorch_copy_(y, ys[i % 2], 1));
      CHECK(ctorch_cuda_graph_replay(g));
    }
    CHECK(ctorch_cuda_synchronize(-1));
    ctorch_cuda_graph_free(g);
  } else {
    CHECK(ctorch_cuda_synchronize(-1));
    t0 = bench_now();
    for (i = 0; i < steps; ++i) {
      CHECK(ctorch_copy_(x, xs[i % 2], 1));
      CHECK(ctorch_copy_(y, ys[i % 2], 1));
      step(&m, &t, opt, x, y, 1);
    }
    CHECK(ctorch_cuda_synchronize(-1));
  }
  printf("%.3f\n", (double)batch * (double)steps / (bench_now() - t0));
  ctorch_optimizer_free(opt);
  if (m.is_resnet) resnet_free(&m.net);
  else
    for (i = 0; i < NPARAMS; ++i) ctorch_tensor_free(m.lenet[i]);
  for (i = 0; i < 2; ++i) {
    ctorch_tensor_free(xs[i]);
    ctorch_tensor_free(ys[i]);
  }
  ctorch_tensor_free(x);
  ctorch_tensor_free(y);
  target_free(&t);
  return 0;
}

/* "gpu_train -": one case per line on stdin (the arguments above), run in
 * turn in this one process, a rate printed per case: bench/run_gpu pays one
 * process start and CUDA initialisation per program and repetition, not per
 * case. */
int main(int argc, char **argv) {
  char line[256];
  int rc = 0;
  if (!(argc == 2 && !strcmp(argv[1], "-"))) return run_case(argc, argv);
  while (fgets(line, sizeof line, stdin)) {
    char *av[9], *tok;
    int ac = 1;
    av[0] = argv[0];
    for (tok = strtok(line, " \t\n"); tok && ac < 9; tok = strtok(NULL, " \t\n")) av[ac++] = tok;
    if (ac == 1) continue;
    rc = run_case(ac, av);
    fflush(stdout);
    if (rc != 0) return rc;
  }
  return rc;
}
