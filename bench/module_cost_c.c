/* The ctorch halves of bench/module_cost.cpp: the same LeNet-5 training step
 * written functionally (examples/lenet5_model.h: one ctorch_* call per op)
 * and with the module layer (examples/lenet5_nn.h: a Sequential of
 * torch.nn modules and one ctorch_nn_module_forward), so the cost the module
 * layer adds is measured on the program users write. */
#include <stdlib.h>

#include <ctorch.h>

#include "bench.h"

#define CHECK(call)                                                 \
  do {                                                              \
    if ((call) != CTORCH_OK) bench_die(#call, ctorch_last_error()); \
  } while (0)

#include "lenet5_model.h"
#include "lenet5_nn.h"
#include "module_cost.h"

struct mc_side {
  ctorch_tensor p[NPARAMS]; /* functional */
  ctorch_nn_module net;      /* module (NULL for the functional side) */
  ctorch_optimizer opt;
  ctorch_tensor x, y;
};

/* The model (seed 0, then the batch: train_cpp.cpp's order), AdamW lr 1e-3. */
static mc_side *side_new(int modules) {
  const int64_t xs[4] = {256, 1, 28, 28}, ys[1] = {256};
  const ctorch_dtype f32 = CTORCH_FLOAT32, i64 = CTORCH_INT64;
  ctorch_optim_options o;
  mc_side *s = calloc(1, sizeof *s);
  size_t np = NPARAMS;
  ctorch_tensor *mp = NULL;
  if (!s) bench_die("calloc", "out of memory");
  CHECK(ctorch_manual_seed(0));
  if (modules) s->net = make_lenet5();
  else make_model(s->p);
  CHECK(ctorch_randn(&s->x, xs, 4, &f32, NULL, NULL, NULL));
  CHECK(ctorch_randint(&s->y, 10, ys, 1, &i64, NULL, NULL, NULL));
  CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAMW));
  o.lr = 1e-3;
  if (modules) mp = nn_params(s->net, &np);
  CHECK(ctorch_optimizer_new(&s->opt, CTORCH_OPTIM_ADAMW, modules ? mp : s->p, np, &o));
  if (mp) nn_free_params(mp, np);
  return s;
}

mc_side *mc_functional_new(void) { return side_new(0); }
mc_side *mc_module_new(void) { return side_new(1); }

double mc_steps(mc_side *s, long n) {
  double t0 = bench_now();
  for (long i = 0; i < n; ++i) {
    ctorch_handle_scope sc = scope_enter(); /* frees the step's handles */
    ctorch_tensor out = NULL, loss = NULL;
    CHECK(ctorch_optimizer_zero_grad(s->opt, 0)); /* zeroed, as train_cpp.cpp */
    if (s->net) CHECK(ctorch_nn_module_forward(&out, s->net, s->x));
    else out = forward(s->p, s->x);
    CHECK(ctorch_cross_entropy_loss(&loss, out, s->y, NULL, 1, -100, 0.0));
    CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    CHECK(ctorch_optimizer_step(s->opt));
    scope_leave(sc);
  }
  return (bench_now() - t0) / (double)n;
}

void mc_free(mc_side *s) {
  if (!s) return;
  ctorch_optimizer_free(s->opt);
  ctorch_nn_module_free(s->net);
  if (!s->net)
    for (size_t k = 0; k < NPARAMS; ++k) ctorch_tensor_free(s->p[k]);
  ctorch_tensor_free(s->x);
  ctorch_tensor_free(s->y);
  free(s);
}
