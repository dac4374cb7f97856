/*
 * One rank of bench/ddp/run: training steps of a small BERT-like encoder
 * (token embedding, a TransformerEncoder, a vocabulary head: 7.4 M
 * parameters, 30 MB of gradients a step) on random tokens, data-parallel
 * over the ranks torchrun's environment names.
 *
 *   ddp_step WAY STEPS      WAY: ddp     ctorch_ddp (c10d's Reducer: all-reduces start during backward)
 *                                helper  ctorch_dist_average_gradients after backward
 *                                local   no communication (each rank alone: the compute floor)
 *
 * Every step: zero_grad, forward, cross-entropy, backward, (averaging), SGD.
 * Rank 0 prints one JSON line: {"way": WAY, "step_ms": [...]} with each
 * timed step's wall milliseconds (the first 3 steps are warm-up, untimed).
 * bench/ddp/ddp_step.py is the same job in Python (torch DDP).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

static int g_rank = -1;

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ctorch_status st_ = (call);                                                                    \
    if (st_ != CTORCH_OK) {                                                                        \
      fprintf(stderr, "ddp_step rank %d: %s:%d: %s -> %s: %s\n", g_rank, __FILE__, __LINE__, #call, \
              ctorch_status_name(st_), ctorch_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#include "example_nn.h"

/* The shape, shared with ddp_step.py. */
enum { VOCAB = 8192, DIM = 256, HEADS = 4, FF = 1024, LAYERS = 4, SEQ = 64, BATCH = 4, WARMUP = 3 };

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: ddp_step ddp|helper|local STEPS\n");
    return 2;
  }
  const char *way = argv[1];
  int steps = atoi(argv[2]), ddp_way = !strcmp(way, "ddp"), helper = !strcmp(way, "helper");
  if ((!ddp_way && !helper && strcmp(way, "local")) || steps < 1) {
    fprintf(stderr, "ddp_step: bad arguments\n");
    return 2;
  }
  CHECK(ctorch_set_num_threads(1));
  ctorch_process_group pg = NULL;
  CHECK(ctorch_dist_init_from_env(&pg, NULL, "gloo", 300000));
  CHECK(ctorch_process_group_rank(&g_rank, pg));
  CHECK(ctorch_manual_seed(1));

  ctorch_nn_module model = nn_make("Sequential", "");
  nn_add(model, "embed", nn_makef("Embedding", "%d, %d", VOCAB, DIM));
  nn_add(model, "encoder",
         nn_makef("TransformerEncoder",
                  "torch.nn.TransformerEncoderLayer(%d, %d, dim_feedforward=%d, dropout=0.0, batch_first=True), %d",
                  DIM, HEADS, FF, LAYERS));
  nn_add(model, "head", nn_makef("Linear", "%d, %d", DIM, VOCAB));
  size_t n_params = 0;
  ctorch_tensor *params = nn_params(model, &n_params);
  ctorch_ddp ddp = NULL;
  if (ddp_way)
    CHECK(ctorch_ddp_new(&ddp, pg, model, 0, 0));
  else
    CHECK(ctorch_dist_broadcast_parameters(pg, params, n_params, 0));
  ctorch_optim_options o;
  CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
  o.lr = 0.01;
  ctorch_optimizer opt = NULL;
  CHECK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, params, n_params, &o));

  const int64_t tok_shape[2] = {BATCH, SEQ}, flat[1] = {BATCH * SEQ}, logits_shape[2] = {BATCH * SEQ, VOCAB};
  const ctorch_dtype i64 = CTORCH_INT64;
  double *ms = (double *)calloc((size_t)steps, sizeof *ms);
  int s;
  for (s = 0; s < WARMUP + steps; ++s) {
    ctorch_handle_scope sc = scope_enter();
    ctorch_tensor tokens = NULL, target = NULL, y = NULL, logits = NULL, loss = NULL;
    CHECK(ctorch_randint(&tokens, VOCAB, tok_shape, 2, &i64, NULL, NULL, NULL));
    CHECK(ctorch_randint(&target, VOCAB, flat, 1, &i64, NULL, NULL, NULL));
    double t0 = now();
    CHECK(ctorch_optimizer_zero_grad(opt, 1));
    if (ddp_way)
      CHECK(ctorch_ddp_forward(&y, ddp, tokens));
    else
      CHECK(ctorch_nn_module_forward(&y, model, tokens));
    CHECK(ctorch_reshape(&logits, y, logits_shape, 2));
    CHECK(ctorch_cross_entropy_loss(&loss, logits, target, NULL, 1, -100, 0.0));
    CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    if (helper) CHECK(ctorch_dist_average_gradients(pg, params, n_params, 0));
    CHECK(ctorch_optimizer_step(opt));
    if (s >= WARMUP) ms[s - WARMUP] = (now() - t0) * 1e3;
    scope_leave(sc);
  }
  if (g_rank == 0) {
    printf("{\"way\": \"%s\", \"step_ms\": [", way);
    for (s = 0; s < steps; ++s) printf("%s%.2f", s ? ", " : "", ms[s]);
    printf("]}\n");
  }
  free(ms);
  ctorch_optimizer_free(opt);
  ctorch_ddp_free(ddp);
  for (size_t i = 0; i < n_params; ++i) ctorch_tensor_free(params[i]);
  free(params);
  ctorch_nn_module_free(model);
  CHECK(ctorch_dist_barrier(pg));
  ctorch_process_group_free(pg);
  return 0;
}
