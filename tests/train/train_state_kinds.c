/* One small training run per learning-rate schedule kind, for
 * train_state_kinds_vs_torch.py: a Linear(3, 2) fitted by MSE on fixed
 * data, SGD with momentum in two parameter groups (weight lr 0.1, bias lr
 * 0.05), the schedule stepped after every optimizer step (ReduceLROnPlateau
 * with a fixed metric sequence), STEPS steps.
 *
 *   train_state_kinds DIR PREFIX [FROM]
 *
 * For every kind: without FROM, saves the training state
 * (ctorch_train_state_save) before the first step (DIR/PREFIX-KIND-0.pt),
 * after step STOP (DIR/PREFIX-KIND-5.pt) and at the end
 * (DIR/PREFIX-KIND-final.pt). With FROM: loads DIR/FROM-KIND-5.pt (a
 * training state, ctorch's or Python's) into a fresh model, optimizer and
 * scheduler, continues to the end, saves DIR/PREFIX-KIND-final.pt.
 * Exit 0, or 1 on a failing call (one process for every kind: each start
 * of libtorch costs a second). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctorch.h>

#include "../dump_ok.h"

enum { STEPS = 12, STOP = 5, ROWS = 8 };
static const double metrics[STEPS] = {1.0, 0.9, 0.91, 0.905, 0.9, 0.95, 0.85, 0.86, 0.87, 0.88, 0.84, 0.845};

static ctorch_status lambda_fn(void *user, int64_t epoch, size_t group, double *f) {
  (void)user;
  *f = (double)(group + 1) / (1.0 + (double)epoch);
  return CTORCH_OK;
}
static ctorch_status mult_fn(void *user, int64_t epoch, size_t group, double *f) {
  (void)user, (void)epoch;
  *f = group == 0 ? 0.95 : 0.9;
  return CTORCH_OK;
}

static ctorch_lr_schedule_options dflt(ctorch_lr_schedule k) {
  ctorch_lr_schedule_options o;
  OK(ctorch_lr_schedule_options_default(&o, k));
  return o;
}

/* Two schedules, sequenced (milestone > 0) or chained (0). */
static ctorch_lr_scheduler pair(ctorch_optimizer opt, ctorch_lr_schedule k0, ctorch_lr_schedule_options o0,
                                ctorch_lr_schedule k1, ctorch_lr_schedule_options o1, int64_t milestone) {
  ctorch_lr_scheduler s[2] = {NULL, NULL}, top = NULL;
  OK(ctorch_lr_scheduler_new(&s[0], opt, k0, &o0));
  OK(ctorch_lr_scheduler_new(&s[1], opt, k1, &o1));
  if (milestone > 0) OK(ctorch_lr_scheduler_sequential(&top, opt, s, 2, &milestone, 1));
  else OK(ctorch_lr_scheduler_chained(&top, s, 2));
  ctorch_lr_scheduler_free(s[0]); /* the composite keeps them */
  ctorch_lr_scheduler_free(s[1]);
  return top;
}

/* The kinds, with the arguments train_state_kinds_vs_torch.py gives Python's. */
static ctorch_lr_scheduler make(const char *kind, ctorch_optimizer opt, int *metric) {
  ctorch_lr_scheduler s = NULL;
  ctorch_lr_schedule_options o, o2;
  *metric = 0;
  if (!strcmp(kind, "StepLR")) {
    o = dflt(CTORCH_LR_STEP), o.step_size = 3, o.gamma = 0.5;
    OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_STEP, &o));
  } else if (!strcmp(kind, "MultiStepLR")) {
    static const int64_t ms[4] = {2, 5, 5, 9};
    OK(ctorch_lr_scheduler_multi_step(&s, opt, ms, 4, 0.3));
  } else if (!strcmp(kind, "ConstantLR")) {
    o = dflt(CTORCH_LR_CONSTANT), o.factor = 0.4, o.total_iters = 7;
    OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_CONSTANT, &o));
  } else if (!strcmp(kind, "LinearLR")) {
    o = dflt(CTORCH_LR_LINEAR), o.start_factor = 0.2, o.end_factor = 0.9, o.total_iters = 8;
    OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_LINEAR, &o));
  } else if (!strcmp(kind, "ExponentialLR")) {
    o = dflt(CTORCH_LR_EXPONENTIAL), o.gamma = 0.93;
    OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_EXPONENTIAL, &o));
  } else if (!strcmp(kind, "PolynomialLR")) {
    o = dflt(CTORCH_LR_POLYNOMIAL), o.total_iters = 9, o.power = 2.0;
    OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_POLYNOMIAL, &o));
  } else if (!strcmp(kind, "CosineAnnealingLR")) {
    o = dflt(CTORCH_LR_COSINE), o.t_max = 5, o.eta_min = 0.001;
    OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_COSINE, &o));
  } else if (!strcmp(kind, "CosineAnnealingWarmRestarts")) {
    o = dflt(CTORCH_LR_COSINE_WARM_RESTARTS), o.t_0 = 3, o.t_mult = 2, o.eta_min = 0.0005;
    OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_COSINE_WARM_RESTARTS, &o));
  } else if (!strcmp(kind, "CyclicLR")) {
    o = dflt(CTORCH_LR_CYCLIC), o.base_lr = 0.01, o.max_lr = 0.1, o.step_size_up = 4, o.step_size_down = 3,
    o.mode = CTORCH_CYCLIC_TRIANGULAR2;
    OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_CYCLIC, &o));
  } else if (!strcmp(kind, "OneCycleLR")) {
    o = dflt(CTORCH_LR_ONE_CYCLE), o.max_lr = 0.2, o.total_steps = STEPS, o.pct_start = 0.25;
    OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_ONE_CYCLE, &o));
  } else if (!strcmp(kind, "LambdaLR")) {
    OK(ctorch_lr_scheduler_lambda(&s, opt, CTORCH_LR_LAMBDA, lambda_fn, NULL));
  } else if (!strcmp(kind, "MultiplicativeLR")) {
    OK(ctorch_lr_scheduler_lambda(&s, opt, CTORCH_LR_MULTIPLICATIVE, mult_fn, NULL));
  } else if (!strcmp(kind, "ReduceLROnPlateau")) {
    o = dflt(CTORCH_LR_REDUCE_ON_PLATEAU), o.patience = 1, o.factor = 0.5, o.cooldown = 1, o.threshold = 0.01,
    o.min_lr = 0.004;
    OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_REDUCE_ON_PLATEAU, &o));
    *metric = 1;
  } else if (!strcmp(kind, "SequentialLR")) {
    o = dflt(CTORCH_LR_LINEAR), o.start_factor = 0.1, o.end_factor = 1.0, o.total_iters = 4;
    o2 = dflt(CTORCH_LR_COSINE), o2.t_max = 10;
    s = pair(opt, CTORCH_LR_LINEAR, o, CTORCH_LR_COSINE, o2, 4);
  } else if (!strcmp(kind, "ChainedScheduler")) {
    o = dflt(CTORCH_LR_CONSTANT), o.factor = 0.3, o.total_iters = 5;
    o2 = dflt(CTORCH_LR_EXPONENTIAL), o2.gamma = 0.95;
    s = pair(opt, CTORCH_LR_CONSTANT, o, CTORCH_LR_EXPONENTIAL, o2, 0);
  } else {
    fprintf(stderr, "unknown kind %s\n", kind);
    exit(2);
  }
  return s;
}

static const char *const kinds[] = {"StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
                                    "PolynomialLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR",
                                    "OneCycleLR", "LambdaLR", "MultiplicativeLR", "ReduceLROnPlateau",
                                    "SequentialLR", "ChainedScheduler"};

static void one(const char *kind, const char *dir, const char *prefix, const char *from) {
  float xd[ROWS * 3], yd[ROWS * 2];
  const int64_t xs[2] = {ROWS, 3}, ys[2] = {ROWS, 2};
  ctorch_tensor x = NULL, y = NULL, p[2];
  ctorch_tensor_list list = NULL;
  ctorch_nn_module net = NULL;
  ctorch_optimizer opt = NULL;
  ctorch_optim_options oo;
  ctorch_lr_scheduler sched;
  int64_t step = 0, epoch = 0;
  double metric = NAN;
  char path[4096];
  int i, j, by_metric;
  /* Data exact in float, the same formula as the Python side's. */
  for (i = 0; i < ROWS; ++i) {
    for (j = 0; j < 3; ++j) xd[i * 3 + j] = (float)((i * 7 + j * 3) % 11 - 5) / 4.0f;
    for (j = 0; j < 2; ++j) yd[i * 2 + j] = (float)((i * 5 + j) % 7 - 3) / 2.0f;
  }
  OK(ctorch_set_num_threads(1));
  OK(ctorch_tensor_from_data(&x, xd, sizeof xd, xs, 2, CTORCH_FLOAT32));
  OK(ctorch_tensor_from_data(&y, yd, sizeof yd, ys, 2, CTORCH_FLOAT32));
  OK(ctorch_manual_seed(7));
  OK(ctorch_nn_new(&net, "Linear", "3, 2"));
  OK(ctorch_nn_module_parameters(&list, net));
  OK(ctorch_tensor_list_get(&p[0], list, 0));
  OK(ctorch_tensor_list_get(&p[1], list, 1));
  ctorch_tensor_list_free(list);
  OK(ctorch_optim_options_default(&oo, CTORCH_OPTIM_SGD));
  oo.lr = 0.1, oo.momentum = 0.9;
  OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, &p[0], 1, &oo));
  oo.lr = 0.05;
  OK(ctorch_optimizer_add_param_group(opt, &p[1], 1, &oo));
  sched = make(kind, opt, &by_metric);
  if (from) {
    snprintf(path, sizeof path, "%s/%s-%s-%d.pt", dir, from, kind, STOP);
    OK(ctorch_train_state_load(&epoch, &step, &metric, path, net, opt, sched, NULL));
  } else {
    snprintf(path, sizeof path, "%s/%s-%s-0.pt", dir, prefix, kind);
    OK(ctorch_train_state_save(path, net, opt, sched, NULL, 0, 0, NAN));
  }
  while (step < STEPS) {
    ctorch_tensor out = NULL, loss = NULL;
    OK(ctorch_optimizer_zero_grad(opt, 1));
    OK(ctorch_nn_module_forward(&out, net, x));
    OK(ctorch_mse_loss(&loss, out, y, CTORCH_REDUCTION_MEAN));
    OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    OK(ctorch_optimizer_step(opt));
    OK(by_metric ? ctorch_lr_scheduler_step_metric(sched, metrics[step]) : ctorch_lr_scheduler_step(sched));
    OK(ctorch_tensor_item_double(&metric, loss));
    ctorch_tensor_free(out), ctorch_tensor_free(loss);
    step += 1;
    if (step == STOP) {
      snprintf(path, sizeof path, "%s/%s-%s-%d.pt", dir, prefix, kind, STOP);
      OK(ctorch_train_state_save(path, net, opt, sched, NULL, epoch, step, metric));
    }
  }
  snprintf(path, sizeof path, "%s/%s-%s-final.pt", dir, prefix, kind);
  OK(ctorch_train_state_save(path, net, opt, sched, NULL, epoch, step, metric));
  ctorch_lr_scheduler_free(sched);
  ctorch_optimizer_free(opt);
  ctorch_tensor_free(p[0]), ctorch_tensor_free(p[1]);
  ctorch_nn_module_free(net);
  ctorch_tensor_free(x), ctorch_tensor_free(y);
}

int main(int argc, char **argv) {
  size_t k;
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: train_state_kinds DIR PREFIX [FROM]\n");
    return 2;
  }
  for (k = 0; k < sizeof kinds / sizeof *kinds; ++k) one(kinds[k], argv[1], argv[2], argc == 4 ? argv[3] : NULL);
  return 0;
}
