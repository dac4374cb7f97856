/* Prints, step by step, the learning rates (and momentum / beta1) that
 * ctorch's schedules set on a two-group optimizer, one line per step:
 *   SCENARIO STEP LR0 LR1 MOMENTUM0
 * schedules_vs_torch.py runs the same scenarios with the installed torch
 * and compares (tests/train/CMakeLists.txt). Exit 1 on any failing call.
 *
 * `schedules_dump save DIR` also saves each scheduler's state at step
 * steps/2 to DIR/c_SCENARIO.pt (ctorch_lr_scheduler_save_state_dict);
 * `schedules_dump resume DIR` makes each scenario afresh, loads the state
 * Python saved at that step (DIR/py_SCENARIO.pt) and the lrs it had
 * (DIR/py_SCENARIO.lrs), and prints the steps from there on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctorch.h>

#include "../dump_ok.h"

static ctorch_tensor p[2];
static int mode; /* 0 print, 1 save, 2 resume */
static const char *dir;
static const double metrics[16] = {1.0, 0.9, 0.91, 0.905, 0.9, 0.95, 0.85, 0.86, 0.87, 0.88, 0.84, 0.845, 0.85, 0.86, 0.87, 0.7};

/* SGD(lr 0.1, momentum 0.9) or Adam(lr 0.1), group 1 with lr 0.05 */
static ctorch_optimizer make_opt(ctorch_optimizer_kind kind) {
  ctorch_optimizer opt = NULL;
  ctorch_optim_options o;
  OK(ctorch_optim_options_default(&o, kind));
  o.lr = 0.1;
  if (kind == CTORCH_OPTIM_SGD) o.momentum = 0.9;
  OK(ctorch_optimizer_new(&opt, kind, &p[0], 1, &o));
  o.lr = 0.05;
  OK(ctorch_optimizer_add_param_group(opt, &p[1], 1, &o));
  return opt;
}

static void show(const char *name, int step, ctorch_optimizer opt) {
  double lr0, lr1;
  ctorch_optim_options o;
  OK(ctorch_optimizer_get_lr(&lr0, opt, 0));
  OK(ctorch_optimizer_get_lr(&lr1, opt, 1));
  OK(ctorch_optimizer_get_options(&o, opt, 0));
  printf("%s %d %.17g %.17g %.17g\n", name, step, lr0, lr1, o.momentum != 0 ? o.momentum : o.beta1);
}

/* Steps s `steps` times printing every step; saves or resumes at steps/2
 * (see the top). metric: ReduceLROnPlateau, stepped with metrics[i]. */
static void drive(const char *name, ctorch_optimizer opt, ctorch_lr_scheduler s, int steps, int metric) {
  int i = 0, k = steps / 2;
  char path[4096];
  if (mode == 2) {
    double lr[2];
    FILE *f;
    snprintf(path, sizeof path, "%s/py_%s.pt", dir, name);
    OK(ctorch_lr_scheduler_load_state_dict(s, path));
    snprintf(path, sizeof path, "%s/py_%s.lrs", dir, name);
    f = fopen(path, "r");
    if (!f || fscanf(f, "%lf %lf", &lr[0], &lr[1]) != 2) {
      fprintf(stderr, "cannot read %s\n", path);
      exit(1);
    }
    fclose(f);
    OK(ctorch_optimizer_set_lr(opt, 0, lr[0]));
    OK(ctorch_optimizer_set_lr(opt, 1, lr[1]));
    i = k;
  }
  for (; i <= steps; ++i) {
    show(name, i, opt);
    if (mode == 1 && i == k) {
      snprintf(path, sizeof path, "%s/c_%s.pt", dir, name);
      OK(ctorch_lr_scheduler_save_state_dict(s, path));
    }
    if (i < steps) OK(metric ? ctorch_lr_scheduler_step_metric(s, metrics[i]) : ctorch_lr_scheduler_step(s));
  }
}

static ctorch_status lambda_fn(void *user, int64_t epoch, size_t group, double *f) {
  (void)user;
  *f = (double)(group + 1) / (1.0 + (double)epoch);
  return CTORCH_OK;
}
static ctorch_status mult_fn(void *user, int64_t epoch, size_t group, double *f) {
  (void)user;
  (void)epoch;
  *f = group == 0 ? 0.95 : 0.9;
  return CTORCH_OK;
}

static void run(const char *name, ctorch_optimizer_kind kind, ctorch_lr_schedule k, ctorch_lr_schedule_options *o,
                int steps) {
  ctorch_optimizer opt = make_opt(kind);
  ctorch_lr_scheduler s = NULL;
  if (k == CTORCH_LR_MULTI_STEP) {
    static const int64_t ms[4] = {2, 5, 5, 9};
    OK(ctorch_lr_scheduler_multi_step(&s, opt, ms, 4, 0.3));
  } else if (k == CTORCH_LR_LAMBDA) {
    OK(ctorch_lr_scheduler_lambda(&s, opt, k, lambda_fn, NULL));
  } else if (k == CTORCH_LR_MULTIPLICATIVE) {
    OK(ctorch_lr_scheduler_lambda(&s, opt, k, mult_fn, NULL));
  } else {
    OK(ctorch_lr_scheduler_new(&s, opt, k, o));
  }
  drive(name, opt, s, steps, 0);
  ctorch_lr_scheduler_free(s);
  ctorch_optimizer_free(opt);
}

static ctorch_lr_schedule_options dflt(ctorch_lr_schedule k) {
  ctorch_lr_schedule_options o;
  OK(ctorch_lr_schedule_options_default(&o, k));
  return o;
}

/* Two schedules, sequenced (milestone > 0) or chained (milestone 0). */
static void pair(const char *name, ctorch_lr_schedule k0, ctorch_lr_schedule_options *o0, ctorch_lr_schedule k1,
                 ctorch_lr_schedule_options *o1, int64_t milestone, int steps) {
  ctorch_optimizer opt = make_opt(CTORCH_OPTIM_SGD);
  ctorch_lr_scheduler s[2] = {NULL, NULL}, top = NULL;
  OK(ctorch_lr_scheduler_new(&s[0], opt, k0, o0));
  OK(ctorch_lr_scheduler_new(&s[1], opt, k1, o1));
  if (milestone > 0) OK(ctorch_lr_scheduler_sequential(&top, opt, s, 2, &milestone, 1));
  else OK(ctorch_lr_scheduler_chained(&top, s, 2));
  ctorch_lr_scheduler_free(s[0]); /* the composite keeps them */
  ctorch_lr_scheduler_free(s[1]);
  drive(name, opt, top, steps, 0);
  ctorch_lr_scheduler_free(top);
  ctorch_optimizer_free(opt);
}

int main(int argc, char **argv) {
  const int64_t one = 1;
  ctorch_lr_schedule_options o, o2;
  if (argc == 3 && (strcmp(argv[1], "save") == 0 || strcmp(argv[1], "resume") == 0)) {
    mode = argv[1][0] == 's' ? 1 : 2;
    dir = argv[2];
  } else if (argc != 1) {
    fprintf(stderr, "usage: schedules_dump [save|resume DIR]\n");
    return 2;
  }
  OK(ctorch_ones(&p[0], &one, 1, NULL, NULL, NULL, NULL));
  OK(ctorch_ones(&p[1], &one, 1, NULL, NULL, NULL, NULL));
  OK(ctorch_tensor_set_requires_grad(p[0], 1));
  OK(ctorch_tensor_set_requires_grad(p[1], 1));

  o = dflt(CTORCH_LR_STEP), o.step_size = 3, o.gamma = 0.5;
  run("step", CTORCH_OPTIM_SGD, CTORCH_LR_STEP, &o, 20);
  run("multistep", CTORCH_OPTIM_SGD, CTORCH_LR_MULTI_STEP, NULL, 12);
  o = dflt(CTORCH_LR_CONSTANT), o.factor = 0.4, o.total_iters = 4;
  run("constant", CTORCH_OPTIM_SGD, CTORCH_LR_CONSTANT, &o, 8);
  run("constant_default", CTORCH_OPTIM_SGD, CTORCH_LR_CONSTANT, NULL, 8);
  o = dflt(CTORCH_LR_LINEAR), o.start_factor = 0.2, o.end_factor = 0.9, o.total_iters = 6;
  run("linear", CTORCH_OPTIM_SGD, CTORCH_LR_LINEAR, &o, 10);
  o = dflt(CTORCH_LR_EXPONENTIAL), o.gamma = 0.93;
  run("exponential", CTORCH_OPTIM_SGD, CTORCH_LR_EXPONENTIAL, &o, 15);
  o = dflt(CTORCH_LR_POLYNOMIAL), o.total_iters = 7, o.power = 2.0;
  run("polynomial", CTORCH_OPTIM_SGD, CTORCH_LR_POLYNOMIAL, &o, 10);
  o = dflt(CTORCH_LR_COSINE), o.t_max = 5, o.eta_min = 0.001;
  run("cosine", CTORCH_OPTIM_SGD, CTORCH_LR_COSINE, &o, 25);
  o = dflt(CTORCH_LR_COSINE_WARM_RESTARTS), o.t_0 = 3, o.t_mult = 2, o.eta_min = 0.0005;
  run("warm_restarts", CTORCH_OPTIM_SGD, CTORCH_LR_COSINE_WARM_RESTARTS, &o, 30);
  o = dflt(CTORCH_LR_CYCLIC), o.base_lr = 0.01, o.max_lr = 0.1, o.step_size_up = 4, o.step_size_down = 3,
  o.mode = CTORCH_CYCLIC_TRIANGULAR2;
  run("cyclic_triangular2", CTORCH_OPTIM_SGD, CTORCH_LR_CYCLIC, &o, 30);
  o = dflt(CTORCH_LR_CYCLIC), o.base_lr = 0.01, o.max_lr = 0.1, o.step_size_up = 5, o.mode = CTORCH_CYCLIC_EXP_RANGE,
  o.gamma = 0.97;
  run("cyclic_exp_range", CTORCH_OPTIM_SGD, CTORCH_LR_CYCLIC, &o, 30);
  o = dflt(CTORCH_LR_ONE_CYCLE), o.max_lr = 0.2, o.total_steps = 30, o.pct_start = 0.25;
  run("one_cycle", CTORCH_OPTIM_SGD, CTORCH_LR_ONE_CYCLE, &o, 29);
  o = dflt(CTORCH_LR_ONE_CYCLE), o.max_lr = 0.2, o.total_steps = 25, o.three_phase = 1, o.anneal_linear = 1;
  run("one_cycle_adam_three_phase", CTORCH_OPTIM_ADAM, CTORCH_LR_ONE_CYCLE, &o, 24);
  run("lambda", CTORCH_OPTIM_SGD, CTORCH_LR_LAMBDA, NULL, 8);
  run("multiplicative", CTORCH_OPTIM_SGD, CTORCH_LR_MULTIPLICATIVE, NULL, 8);
  {
    ctorch_optimizer opt = make_opt(CTORCH_OPTIM_SGD);
    ctorch_lr_scheduler s = NULL;
    o = dflt(CTORCH_LR_REDUCE_ON_PLATEAU), o.patience = 2, o.factor = 0.5, o.cooldown = 1, o.threshold = 0.01,
    o.min_lr = 0.004;
    OK(ctorch_lr_scheduler_new(&s, opt, CTORCH_LR_REDUCE_ON_PLATEAU, &o));
    drive("plateau", opt, s, 16, 1);
    ctorch_lr_scheduler_free(s);
    ctorch_optimizer_free(opt);
  }
  o = dflt(CTORCH_LR_CONSTANT), o.factor = 0.5, o.total_iters = 3;
  o2 = dflt(CTORCH_LR_EXPONENTIAL), o2.gamma = 0.9;
  pair("sequential", CTORCH_LR_CONSTANT, &o, CTORCH_LR_EXPONENTIAL, &o2, 4, 15);
  o = dflt(CTORCH_LR_LINEAR), o.start_factor = 0.1, o.end_factor = 1.0, o.total_iters = 5;
  o2 = dflt(CTORCH_LR_COSINE), o2.t_max = 10;
  pair("warmup_cosine", CTORCH_LR_LINEAR, &o, CTORCH_LR_COSINE, &o2, 5, 20);
  o = dflt(CTORCH_LR_CONSTANT), o.factor = 0.3, o.total_iters = 5;
  o2 = dflt(CTORCH_LR_EXPONENTIAL), o2.gamma = 0.95;
  pair("chained", CTORCH_LR_CONSTANT, &o, CTORCH_LR_EXPONENTIAL, &o2, 0, 15);
  ctorch_tensor_free(p[0]);
  ctorch_tensor_free(p[1]);
  return 0;
}
