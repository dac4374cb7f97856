/* The C side of the checkpoint interop tests (test_py_interop_files.py):
 * a separate process, so the Python that checks its files may be any
 * PyTorch version, not only the libtorch this ctorch was built against.
 *
 *   checkpoint_peer fixtures DIR
 *       writes DIR/c_dict.pt (every dtype, views sharing one storage, empty,
 *       0-dim), DIR/c_grad.pt (a tensor with requires_grad), DIR/c_scalar.pt
 *   checkpoint_peer resave IN OUT
 *       loads IN (a tensor or a dict of tensors) and saves it again to OUT
 *   checkpoint_peer train KIND OPTS PARAMS TARGETS STATE_IN N STATE_OUT PARAMS_OUT NEXT_OUT
 *       KIND sgd|adam|adamw; OPTS "lr=..,momentum=..,dampening=..,wd=..,
 *       nesterov=0|1,amsgrad=0|1,beta1=..,beta2=..,eps=..[,lr2=..]" (lr2:
 *       the first parameter in group 0, the others in group 1 with lr2).
 *       Loads the parameters (a dict), loads STATE_IN (optimizer state_dict
 *       in PyTorch's format; "-" = none), runs N steps of
 *       loss = sum_p sum(sin(p) * target_p) + 0.5 * sum(p * p), saves the
 *       state to STATE_OUT and the parameters to PARAMS_OUT, runs one more
 *       step and saves the parameters to NEXT_OUT.
 *   checkpoint_peer torch-version
 *       prints the version of the libtorch this ctorch was built against
 *   checkpoint_peer batch FILE
 *       runs the commands in FILE, one a line, arguments separated by tabs
 *       (one process for many commands: libtorch starts once)
 * Exit status 0 on success; 1 with a message on stderr otherwise. */
#include <ctorch.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 16

#include "../dump_ok.h"

static void path_in(char *buf, size_t n, const char *dir, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static ctorch_tensor floats(const float *v, const int64_t *shape, size_t ndim, size_t n) {
  ctorch_tensor t = NULL;
  OK(ctorch_tensor_from_data(&t, v, n * sizeof(float), shape, ndim, CTORCH_FLOAT32));
  return t;
}

/* The values test_py_interop_files.py expects: (arange(15) % 7) * 1.5 - 4, shape (3, 5). */
static ctorch_tensor pattern(void) {
  float v[15];
  int64_t shape[2] = {3, 5};
  for (int i = 0; i < 15; ++i) v[i] = (float)(i % 7) * 1.5f - 4.0f;
  return floats(v, shape, 2, 15);
}

static int fixtures(const char *dir) {
  static const struct {
    const char *name;
    ctorch_dtype dt;
  } dtypes[] = {{"float64", CTORCH_FLOAT64}, {"float16", CTORCH_FLOAT16}, {"bfloat16", CTORCH_BFLOAT16},
                {"int64", CTORCH_INT64},     {"int32", CTORCH_INT32},     {"int16", CTORCH_INT16},
                {"int8", CTORCH_INT8},       {"bool", CTORCH_BOOL}};
  const char *names[32];
  ctorch_tensor ts[32];
  size_t n = 0;
  char path[1024];
  ctorch_tensor pat = pattern(), absval = NULL, imag = NULL, base = NULL, t = NULL, row = NULL, nar = NULL, empty = NULL;
  names[n] = "float32";
  ts[n++] = pat;
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i) {
    OK(ctorch_to_dtype(&ts[n], pat, dtypes[i].dt, 0, 0, NULL));
    names[n++] = dtypes[i].name;
  }
  OK(ctorch_abs(&absval, pat));
  OK(ctorch_to_dtype(&ts[n], absval, CTORCH_UINT8, 0, 0, NULL));
  names[n++] = "uint8";
  OK(ctorch_mul_Scalar(&imag, pat, ctorch_scalar_float(-0.5)));
  OK(ctorch_complex(&ts[n], pat, imag));
  names[n++] = "complex64";
  {
    ctorch_tensor c64 = ts[n - 1];
    OK(ctorch_to_dtype(&ts[n], c64, CTORCH_COMPLEX128, 0, 0, NULL));
    names[n++] = "complex128";
  }
  /* Views of one storage: base (4, 5) = arange(20), its transpose, a row,
   * a narrowed transpose (non-contiguous, offset). */
  {
    float v[20];
    int64_t shape[2] = {4, 5};
    for (int i = 0; i < 20; ++i) v[i] = (float)i;
    base = floats(v, shape, 2, 20);
  }
  OK(ctorch_transpose_int(&t, base, 0, 1));
  OK(ctorch_select_int(&row, base, 0, 2));
  OK(ctorch_narrow(&nar, t, 0, 1, 3));
  names[n] = "base", ts[n++] = base;
  names[n] = "base_t", ts[n++] = t;
  names[n] = "base_row2", ts[n++] = row;
  names[n] = "base_t_narrow", ts[n++] = nar;
  {
    int64_t shape[2] = {0, 3};
    OK(ctorch_zeros(&empty, shape, 2, NULL, NULL, NULL, NULL));
    names[n] = "empty", ts[n++] = empty;
  }
  {
    float v = 2.5f;
    names[n] = "scalar", ts[n++] = floats(&v, NULL, 0, 1);
  }
  path_in(path, sizeof path, dir, "c_dict.pt");
  OK(ctorch_save_dict(path, names, ts, n));

  {
    ctorch_tensor g = pattern();
    OK(ctorch_requires_grad_(g, 1));
    path_in(path, sizeof path, dir, "c_grad.pt");
    OK(ctorch_save(path, g));
    ctorch_tensor_free(g);
  }
  {
    float v = -7.25f;
    ctorch_tensor s = floats(&v, NULL, 0, 1);
    path_in(path, sizeof path, dir, "c_scalar.pt");
    OK(ctorch_save(path, s));
    ctorch_tensor_free(s);
  }
  for (size_t i = 0; i < n; ++i) ctorch_tensor_free(ts[i]);
  ctorch_tensor_free(absval);
  ctorch_tensor_free(imag);
  return 0;
}

static int resave(const char *in, const char *out) {
  ctorch_tensor_dict d = NULL;
  ctorch_status st = ctorch_load_dict(&d, in);
  if (st == CTORCH_TYPE) { /* one tensor */
    ctorch_tensor t = NULL;
    OK(ctorch_load(&t, in));
    OK(ctorch_save(out, t));
    ctorch_tensor_free(t);
    return 0;
  }
  OK(st);
  size_t n = 0;
  OK(ctorch_tensor_dict_size(&n, d));
  const char **names = calloc(n + 1, sizeof *names);
  ctorch_tensor *ts = calloc(n + 1, sizeof *ts);
  for (size_t i = 0; i < n; ++i) {
    OK(ctorch_tensor_dict_key(&names[i], d, i));
    OK(ctorch_tensor_dict_get(&ts[i], d, i));
  }
  OK(ctorch_save_dict(out, names, ts, n));
  for (size_t i = 0; i < n; ++i) ctorch_tensor_free(ts[i]);
  free(names);
  free(ts);
  ctorch_tensor_dict_free(d);
  return 0;
}

static double opt_value(const char *opts, const char *key, double dflt) {
  size_t k = strlen(key);
  for (const char *p = opts; p && *p;) {
    if (!strncmp(p, key, k) && p[k] == '=') return strtod(p + k + 1, NULL);
    p = strchr(p, ',');
    if (p) ++p;
  }
  return dflt;
}

/* loss = sum_p sum(sin(p) * target_p) + 0.5 * sum(p * p) */
static void one_step(ctorch_optimizer opt, ctorch_tensor *ps, ctorch_tensor *targets, size_t n) {
  ctorch_tensor loss = NULL;
  OK(ctorch_optimizer_zero_grad(opt, 1));
  for (size_t i = 0; i < n; ++i) {
    ctorch_tensor s = NULL, a = NULL, sq = NULL, term = NULL, sum = NULL, next = NULL;
    OK(ctorch_sin(&s, ps[i]));
    OK(ctorch_mul_Tensor(&a, s, targets[i]));
    OK(ctorch_mul_Tensor(&sq, ps[i], ps[i]));
    OK(ctorch_add_Tensor(&term, a, sq, ctorch_scalar_float(0.5)));
    OK(ctorch_sum(&sum, term, NULL));
    if (loss) {
      OK(ctorch_add_Tensor(&next, loss, sum, ctorch_scalar_int(1)));
      ctorch_tensor_free(loss);
      ctorch_tensor_free(sum);
      loss = next;
    } else {
      loss = sum;
    }
    ctorch_tensor_free(s);
    ctorch_tensor_free(a);
    ctorch_tensor_free(sq);
    ctorch_tensor_free(term);
  }
  OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  OK(ctorch_optimizer_step(opt));
  ctorch_tensor_free(loss);
}

static void save_params(const char *path, const char **names, ctorch_tensor *ps, size_t n) {
  ctorch_tensor det[MAXP];
  for (size_t i = 0; i < n; ++i) OK(ctorch_detach(&det[i], ps[i]));
  OK(ctorch_save_dict(path, names, det, n));
  for (size_t i = 0; i < n; ++i) ctorch_tensor_free(det[i]);
}

static int train(char **a) {
  const char *kind_s = a[0], *opts = a[1], *params_path = a[2], *targets_path = a[3], *state_in = a[4];
  long steps = strtol(a[5], NULL, 10);
  const char *state_out = a[6], *params_out = a[7], *next_out = a[8];
  ctorch_optimizer_kind kind = !strcmp(kind_s, "sgd") ? CTORCH_OPTIM_SGD : !strcmp(kind_s, "adam") ? CTORCH_OPTIM_ADAM
                                                                                                    : CTORCH_OPTIM_ADAMW;
  ctorch_tensor_dict pd = NULL, td = NULL;
  ctorch_tensor ps[MAXP], targets[MAXP];
  const char *names[MAXP];
  size_t n = 0;
  OK(ctorch_load_dict(&pd, params_path));
  OK(ctorch_load_dict(&td, targets_path));
  OK(ctorch_tensor_dict_size(&n, pd));
  if (n < 1 || n > MAXP) {
    fprintf(stderr, "checkpoint_peer: %zu parameters\n", n);
    return 1;
  }
  for (size_t i = 0; i < n; ++i) {
    OK(ctorch_tensor_dict_key(&names[i], pd, i));
    OK(ctorch_tensor_dict_get(&ps[i], pd, i));
    OK(ctorch_tensor_dict_find(&targets[i], td, names[i]));
    OK(ctorch_requires_grad_(ps[i], 1));
  }
  ctorch_optim_options o;
  OK(ctorch_optim_options_default(&o, kind));
  o.lr = opt_value(opts, "lr", o.lr);
  o.momentum = opt_value(opts, "momentum", o.momentum);
  o.dampening = opt_value(opts, "dampening", o.dampening);
  o.weight_decay = opt_value(opts, "wd", o.weight_decay);
  o.nesterov = (int)opt_value(opts, "nesterov", o.nesterov);
  o.amsgrad = (int)opt_value(opts, "amsgrad", o.amsgrad);
  o.beta1 = opt_value(opts, "beta1", o.beta1);
  o.beta2 = opt_value(opts, "beta2", o.beta2);
  o.eps = opt_value(opts, "eps", o.eps);
  double lr2 = opt_value(opts, "lr2", -1);
  ctorch_optimizer opt = NULL;
  if (lr2 >= 0 && n > 1) {
    ctorch_optim_options o2 = o;
    o2.lr = lr2;
    OK(ctorch_optimizer_new(&opt, kind, ps, 1, &o));
    OK(ctorch_optimizer_add_param_group(opt, ps + 1, n - 1, &o2));
  } else {
    OK(ctorch_optimizer_new(&opt, kind, ps, n, &o));
  }
  if (strcmp(state_in, "-")) OK(ctorch_optimizer_load_state_dict(opt, state_in));
  for (long s = 0; s < steps; ++s) one_step(opt, ps, targets, n);
  OK(ctorch_optimizer_save_state_dict(opt, state_out));
  save_params(params_out, names, ps, n);
  one_step(opt, ps, targets, n);
  save_params(next_out, names, ps, n);
  ctorch_optimizer_free(opt);
  for (size_t i = 0; i < n; ++i) {
    ctorch_tensor_free(ps[i]);
    ctorch_tensor_free(targets[i]);
  }
  ctorch_tensor_dict_free(pd);
  ctorch_tensor_dict_free(td);
  return 0;
}

static int dispatch(int argc, char **argv);

static int batch(const char *path) {
  FILE *f = fopen(path, "r");
  char line[8192];
  if (!f) {
    fprintf(stderr, "checkpoint_peer: cannot open %s\n", path);
    return 1;
  }
  while (fgets(line, sizeof line, f)) {
    char *argv[16] = {"checkpoint_peer"};
    int argc = 1;
    line[strcspn(line, "\n")] = 0;
    for (char *tok = strtok(line, "\t"); tok && argc < 16; tok = strtok(NULL, "\t")) argv[argc++] = tok;
    if (argc > 1 && dispatch(argc, argv) != 0) {
      fclose(f);
      return 1;
    }
  }
  fclose(f);
  return 0;
}

static int dispatch(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "fixtures")) return fixtures(argv[2]);
  if (argc == 4 && !strcmp(argv[1], "resave")) return resave(argv[2], argv[3]);
  if (argc == 11 && !strcmp(argv[1], "train")) return train(argv + 2);
  if (argc == 3 && !strcmp(argv[1], "batch")) return batch(argv[2]);
  if (argc == 2 && !strcmp(argv[1], "torch-version")) {
    const char *v = NULL;
    OK(ctorch_torch_version(&v));
    puts(v);
    return 0;
  }
  fprintf(stderr, "usage: checkpoint_peer fixtures DIR | resave IN OUT | batch FILE | torch-version |\n"
                  "       train KIND OPTS PARAMS TARGETS STATE_IN N STATE_OUT PARAMS_OUT NEXT_OUT\n");
  return 2;
}

int main(int argc, char **argv) { return dispatch(argc, argv); }
