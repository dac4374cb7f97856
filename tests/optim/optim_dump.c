/* One optimizer scenario for optim_vs_torch.py, which runs the same
 * scenario with torch.optim and compares.
 *   optim_dump KIND F64 STEPS GROUP0 GROUP1 [SCHED]
 * KIND: sgd adam adamw rmsprop adagrad nadam radam adamax adadelta lbfgs.
 * F64: 1 for float64 parameters. GROUP0/GROUP1: options as key=value,...
 * (fields of ctorch_optim_options_v2; "-" for the defaults); GROUP1 "-" puts
 * every parameter in group 0, else p0, p1 are group 0 and p2, p3 group 1.
 * SCHED: "onecycle" steps a OneCycleLR (max_lr 0.01, total STEPS + 1,
 * cycle_momentum) after every step.
 * Parameters p_i (randn), centres c_i (randn), weights w_i (rand + 0.5),
 * seeded as the Python side does; the closure (zero_grad(set_to_none),
 * loss = sum_i ((p_i - c_i)^2 * w_i).sum() + (p_i^4).sum() * 0.05,
 * backward) is given to ctorch_optimizer_step_closure each step. Prints
 * exactly (C99 hex floats), after each step:
 *   STEP k LOSS             the loss the step returned
 *   P i v0 v1 ...           every element of parameter i (as float64)
 * Environment: OPTIM_DUMP_IMPL=forloop|foreach|fused sets the optimizer's
 * implementation (ctorch_optimizer_set_implementation) after its groups are
 * made; a refusal prints "REFUSED <status> <message>" and exits 3.
 * OPTIM_DUMP_STATE=PATH writes ctorch_optimizer_save_state_dict to PATH
 * after the last step.
 * Exit 1 on a failure.
 *   optim_dump --serve
 * runs scenarios read from standard input, one per line:
 *   IMPL STATE KIND F64 STEPS GROUP0 GROUP1 [SCHED]
 * (IMPL and STATE as the two variables above, "-" for unset), each printed as
 * above and followed by "END 0" (or "END 3" after a refusal). Every scenario
 * seeds and builds its parameters afresh, so it prints what a process of its
 * own prints; one process for all of them saves a libtorch load per
 * scenario (~0.35 s of CPU each, most of the two optimizer tests' time).
 * A failing call still exits 1: the script starts a new one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctorch.h>

#include "../dump_ok.h"

#define NP 4
static const int64_t shapes[NP][2] = {{3, 4}, {5, 0}, {2, 3}, {4, 0}};
static const size_t ndims[NP] = {2, 1, 2, 1};

typedef struct {
  ctorch_optimizer opt;
  ctorch_tensor p[NP], c[NP], w[NP];
} model;

static ctorch_status closure(void *user_data, double *loss_out) {
  model *m = (model *)user_data;
  ctorch_tensor loss = NULL;
  int i;
  OK(ctorch_optimizer_zero_grad(m->opt, 1));
  for (i = 0; i < NP; ++i) {
    ctorch_tensor d = NULL, sq = NULL, wsq = NULL, s1 = NULL, p4 = NULL, s2 = NULL, s2s = NULL, l = NULL;
    OK(ctorch_sub_Tensor(&d, m->p[i], m->c[i], ctorch_scalar_int(1)));
    OK(ctorch_pow_Tensor_Scalar(&sq, d, ctorch_scalar_int(2)));
    OK(ctorch_mul_Tensor(&wsq, sq, m->w[i]));
    OK(ctorch_sum(&s1, wsq, NULL));
    OK(ctorch_pow_Tensor_Scalar(&p4, m->p[i], ctorch_scalar_int(4)));
    OK(ctorch_sum(&s2, p4, NULL));
    OK(ctorch_mul_Scalar(&s2s, s2, ctorch_scalar_float(0.05)));
    OK(ctorch_add_Tensor(&l, s1, s2s, ctorch_scalar_int(1)));
    if (!loss) {
      loss = l;
    } else {
      ctorch_tensor sum = NULL;
      OK(ctorch_add_Tensor(&sum, loss, l, ctorch_scalar_int(1)));
      ctorch_tensor_free(loss);
      ctorch_tensor_free(l);
      loss = sum;
    }
    ctorch_tensor_free(d), ctorch_tensor_free(sq), ctorch_tensor_free(wsq), ctorch_tensor_free(s1);
    ctorch_tensor_free(p4), ctorch_tensor_free(s2), ctorch_tensor_free(s2s);
  }
  OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  OK(ctorch_tensor_item_double(loss_out, loss));
  if (getenv("OPTIM_DUMP_TRACE")) fprintf(stderr, "CALL %a\n", *loss_out);
  ctorch_tensor_free(loss);
  return CTORCH_OK;
}

static int kind_of(const char *s) {
  static const char *names[] = {"sgd", "adam", "adamw", "rmsprop", "adagrad", "nadam", "radam", "adamax", "adadelta", "lbfgs"};
  int i;
  for (i = 0; i < 10; ++i)
    if (!strcmp(s, names[i])) return i;
  fprintf(stderr, "unknown kind %s\n", s);
  exit(1);
}

/* key=value,... onto *o (after ctorch_optim_options_default). */
static void parse_options(ctorch_optim_options_v2 *o, const char *spec) {
  char buf[512], *tok, *save = NULL;
  if (!strcmp(spec, "-")) return;
  snprintf(buf, sizeof buf, "%s", spec);
  for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    double v;
    if (!eq) exit(1);
    *eq = 0;
    v = strtod(eq + 1, NULL);
#define D(f) else if (!strcmp(tok, #f)) o->f = v;
#define I(f) else if (!strcmp(tok, #f)) o->f = (int)v;
#define L(f) else if (!strcmp(tok, #f)) o->f = (int64_t)v;
    if (0) {
    }
    D(lr) D(weight_decay) D(momentum) D(dampening) D(beta1) D(beta2) D(eps) D(alpha) D(lr_decay)
    D(initial_accumulator_value) D(momentum_decay) D(rho) D(tolerance_grad) D(tolerance_change)
    I(nesterov) I(amsgrad) I(centered) I(decoupled_weight_decay) I(line_search)
    L(max_iter) L(max_eval) L(history_size)
    else {
      fprintf(stderr, "unknown option %s\n", tok);
      exit(1);
    }
  }
}

/* One scenario: argv as the usage line's (argv[0] unused); impl and state
 * as OPTIM_DUMP_IMPL / OPTIM_DUMP_STATE (NULL: unset). 0, or 3 after a
 * refusal. */
static int scenario(int argc, char **argv, const char *impl_name, const char *state) {
  model m;
  ctorch_optim_options_v2 o0, o1;
  ctorch_lr_scheduler sched = NULL;
  ctorch_optimizer_kind kind;
  ctorch_dtype dt;
  int i, k, steps, two;
  kind = (ctorch_optimizer_kind)kind_of(argv[1]);
  dt = atoi(argv[2]) ? CTORCH_FLOAT64 : CTORCH_FLOAT32;
  steps = atoi(argv[3]);
  two = strcmp(argv[5], "-") != 0;
  OK(ctorch_manual_seed(7));
  for (i = 0; i < NP; ++i) {
    ctorch_tensor r = NULL;
    OK(ctorch_randn(&m.p[i], shapes[i], ndims[i], &dt, NULL, NULL, NULL));
    OK(ctorch_tensor_set_requires_grad(m.p[i], 1));
    OK(ctorch_randn(&m.c[i], shapes[i], ndims[i], &dt, NULL, NULL, NULL));
    OK(ctorch_rand(&r, shapes[i], ndims[i], &dt, NULL, NULL, NULL));
    OK(ctorch_add_Scalar(&m.w[i], r, ctorch_scalar_float(0.5), ctorch_scalar_int(1)));
    ctorch_tensor_free(r);
  }
  OK(ctorch_optim_options_default_v2(&o0, kind));
  o1 = o0;
  parse_options(&o0, argv[4]);
  parse_options(&o1, argv[5]);
  OK(ctorch_optimizer_new_v2(&m.opt, kind, m.p, two ? 2 : NP, &o0));
  if (two) OK(ctorch_optimizer_add_param_group_v2(m.opt, m.p + 2, 2, &o1));
  if (impl_name) {
    const char *v = impl_name;
    ctorch_optim_impl impl = !strcmp(v, "foreach") ? CTORCH_OPTIM_IMPL_FOREACH
                             : !strcmp(v, "fused") ? CTORCH_OPTIM_IMPL_FUSED
                                                   : CTORCH_OPTIM_IMPL_FOR_LOOP;
    ctorch_status st = ctorch_optimizer_set_implementation(m.opt, impl);
    if (st != CTORCH_OK) {
      printf("REFUSED %s %s\n", ctorch_status_name(st), ctorch_last_error());
      ctorch_optimizer_free(m.opt);
      for (i = 0; i < NP; ++i) ctorch_tensor_free(m.p[i]), ctorch_tensor_free(m.c[i]), ctorch_tensor_free(m.w[i]);
      return 3;
    }
  }
  if (argc > 6 && !strcmp(argv[6], "onecycle")) {
    ctorch_lr_schedule_options so;
    OK(ctorch_lr_schedule_options_default(&so, CTORCH_LR_ONE_CYCLE));
    so.max_lr = 0.01;
    so.total_steps = steps + 1;
    OK(ctorch_lr_scheduler_new(&sched, m.opt, CTORCH_LR_ONE_CYCLE, &so));
  }
  for (k = 1; k <= steps; ++k) {
    double loss = 0;
    OK(ctorch_optimizer_step_closure(&loss, m.opt, closure, &m));
    if (sched) OK(ctorch_lr_scheduler_step(sched));
    printf("STEP %d %a\n", k, loss);
    for (i = 0; i < NP; ++i) {
      ctorch_tensor c = NULL;
      const ctorch_dtype f64 = CTORCH_FLOAT64;
      int64_t n = 0, j;
      double *v;
      OK(ctorch_to_dtype(&c, m.p[i], f64, 0, 1, NULL));
      OK(ctorch_tensor_numel(&n, c));
      OK(ctorch_tensor_data_ptr((void **)&v, c));
      printf("P %d", i);
      for (j = 0; j < n; ++j) printf(" %a", v[j]);
      printf("\n");
      ctorch_tensor_free(c);
    }
  }
  if (state) OK(ctorch_optimizer_save_state_dict(m.opt, state));
  ctorch_lr_scheduler_free(sched);
  ctorch_optimizer_free(m.opt);
  for (i = 0; i < NP; ++i) ctorch_tensor_free(m.p[i]), ctorch_tensor_free(m.c[i]), ctorch_tensor_free(m.w[i]);
  return 0;
}

static const char *unset_dash(const char *s) { return strcmp(s, "-") ? s : NULL; }

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--serve")) {
    char line[2048];
    while (fgets(line, sizeof line, stdin)) {
      char *f[10], *save = NULL, *tok;
      int n = 0, rc;
      for (tok = strtok_r(line, " \t\n", &save); tok && n < 10; tok = strtok_r(NULL, " \t\n", &save)) f[n++] = tok;
      if (n == 0) continue;
      if (n < 7) {
        fprintf(stderr, "optim_dump --serve: want IMPL STATE KIND F64 STEPS GROUP0 GROUP1 [SCHED], got %d fields\n", n);
        return 1;
      }
      /* f[1] stands in for argv[0]: argv[1..] are then KIND F64 ... */
      rc = scenario(n - 1, f + 1, unset_dash(f[0]), unset_dash(f[1]));
      printf("END %d\n", rc);
      fflush(stdout);
    }
    return 0;
  }
  if (argc < 6) {
    fprintf(stderr, "usage: optim_dump KIND F64 STEPS GROUP0 GROUP1 [SCHED]\n       optim_dump --serve\n");
    return 1;
  }
  return scenario(argc, argv, getenv("OPTIM_DUMP_IMPL"), getenv("OPTIM_DUMP_STATE"));
}
