/* One rank of a data-parallel job through ctorch_ddp (c10d's Reducer), the
 * C twin of ddp_reducer.py's Python DDP worker: same model, data, seeds and
 * calls, so the two write the same record and can share one job.
 *
 *   ddp_peer MODE DIR       rendezvous from torchrun's environment
 *
 * MODE:
 *   mlp     Sequential(Linear(32,640), ReLU, Linear(640,640), ReLU, Linear(640,10)),
 *           ctorch_ddp_new with 20000-byte buckets (1.75 MB of gradients: over
 *           the first bucket's 1 MiB, so the rebuilt buckets are several)
 *   accum   the same, two micro-batches a step, the first under no_sync
 *   unused  the MLP plus a Linear(640,640) the forward never uses, through
 *           ctorch_ddp_new_params and CTORCH_DDP_FIND_UNUSED_PARAMETERS
 * DIR holds init.pt (the state dict) and data.pt ("x": [steps, W*B, 32],
 * "y": [steps, W*B, 10]); this rank trains on rows [rank*B, (rank+1)*B) of
 * each step with SGD (lr 0.05) on the mean squared error, and writes
 * DIR/<MODE>_c_rank<R>.pt: per step s, "s<s>.grad<i>" (each gradient after
 * backward) and "s<s>.bucket<b>" (each bucket's parameter indices), then
 * "final<i>" (the parameters at the end).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

static int g_rank = -1;

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ctorch_status st_ = (call);                                                                    \
    if (st_ != CTORCH_OK) {                                                                        \
      fprintf(stderr, "ddp_peer rank %d: %s:%d: %s -> %s: %s\n", g_rank, __FILE__, __LINE__, #call, \
              ctorch_status_name(st_), ctorch_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#include "example_nn.h"

static const nn_layer MLP[] = {
    {"0", "Linear", "32, 640"}, {"1", "ReLU", ""}, {"2", "Linear", "640, 640"}, {"3", "ReLU", ""},
    {"4", "Linear", "640, 10"},
};

static ctorch_tensor dict_at(ctorch_tensor_dict d, const char *key) {
  ctorch_tensor t = NULL;
  CHECK(ctorch_tensor_dict_find(&t, d, key));
  if (!t) {
    fprintf(stderr, "ddp_peer: no %s in the data\n", key);
    exit(1);
  }
  return t;
}

/* Rows [rank*b, (rank+1)*b) of step s of t ([steps, W*B, ...]). */
static ctorch_tensor shard(ctorch_tensor t, int64_t s, int rank, int64_t b) {
  ctorch_tensor step = NULL, rows = NULL;
  CHECK(ctorch_select_int(&step, t, 0, s));
  CHECK(ctorch_narrow(&rows, step, 0, rank * b, b));
  ctorch_tensor_free(step);
  return rows;
}

/* out[KEY] = t, KEY printed from fmt and its arguments. */
static void record(ctorch_tensor_dict out, ctorch_tensor t, const char *fmt, ...) {
  char key[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(key, sizeof key, fmt, ap);
  va_end(ap);
  CHECK(ctorch_tensor_dict_set(out, key, t));
}

/* Loads the entries "<prefix>NAME" of sd into m, strictly. */
static void load_part(ctorch_nn_module m, ctorch_tensor_dict sd, const char *prefix) {
  ctorch_tensor_dict part = NULL;
  size_t n = 0, i, len = strlen(prefix);
  CHECK(ctorch_tensor_dict_new(&part));
  CHECK(ctorch_tensor_dict_size(&n, sd));
  for (i = 0; i < n; ++i) {
    const char *k = NULL;
    ctorch_tensor t = NULL;
    CHECK(ctorch_tensor_dict_key(&k, sd, i));
    CHECK(ctorch_tensor_dict_get(&t, sd, i));
    if (!strncmp(k, prefix, len)) CHECK(ctorch_tensor_dict_set(part, k + len, t));
    ctorch_tensor_free(t);
  }
  CHECK(ctorch_nn_module_load_state_dict(NULL, m, part, 1));
  ctorch_tensor_dict_free(part);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: ddp_peer mlp|accum|unused DIR\n");
    return 2;
  }
  const char *mode = argv[1], *dir = argv[2];
  int accum = !strcmp(mode, "accum"), unused = !strcmp(mode, "unused");
  if (!accum && !unused && strcmp(mode, "mlp")) {
    fprintf(stderr, "ddp_peer: unknown mode %s\n", mode);
    return 2;
  }
  CHECK(ctorch_set_num_threads(1));
  ctorch_process_group pg = NULL;
  int world = 0;
  CHECK(ctorch_dist_init_from_env(&pg, NULL, "gloo", 120000));
  CHECK(ctorch_process_group_rank(&g_rank, pg));
  CHECK(ctorch_process_group_size(&world, pg));

  char path[4096];
  ctorch_tensor_dict init = NULL, data = NULL;
  snprintf(path, sizeof path, "%s/init.pt", dir);
  CHECK(ctorch_load_dict(&init, path));
  snprintf(path, sizeof path, "%s/data.pt", dir);
  CHECK(ctorch_load_dict(&data, path));

  /* The model: an MLP, and for `unused` a layer beside it that the forward
   * never calls, its parameters after the MLP's (as Python registers them). */
  ctorch_nn_module body = nn_sequential(MLP, sizeof MLP / sizeof MLP[0]), skip = NULL;
  load_part(body, init, "body.");
  size_t n_params = 0, i;
  ctorch_tensor *params = nn_params(body, &n_params);
  ctorch_ddp ddp = NULL;
  if (unused) {
    size_t n_skip = 0;
    skip = nn_make("Linear", "640, 640");
    load_part(skip, init, "skip.");
    ctorch_tensor *more = nn_params(skip, &n_skip);
    params = (ctorch_tensor *)realloc(params, (n_params + n_skip) * sizeof *params);
    for (i = 0; i < n_skip; ++i) params[n_params++] = more[i];
    free(more);
    CHECK(ctorch_ddp_new_params(&ddp, pg, params, n_params, NULL, 0, 20000, CTORCH_DDP_FIND_UNUSED_PARAMETERS));
  } else {
    CHECK(ctorch_ddp_new(&ddp, pg, body, 20000, 0));
  }
  ctorch_optim_options o;
  CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_SGD));
  o.lr = 0.05;
  ctorch_optimizer opt = NULL;
  CHECK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, params, n_params, &o));

  ctorch_tensor x_all = dict_at(data, "x"), y_all = dict_at(data, "y");
  int64_t shape[3];
  CHECK(ctorch_tensor_sizes(shape, 3, x_all));
  int64_t steps = shape[0], per_rank = shape[1] / world;
  ctorch_tensor_dict out = NULL;
  CHECK(ctorch_tensor_dict_new(&out));
  int64_t s;
  for (s = 0; s < steps; ++s) {
    ctorch_handle_scope sc = scope_enter();
    CHECK(ctorch_optimizer_zero_grad(opt, 1));
    /* accum: two micro-batches, the first without communication (no_sync). */
    int64_t parts = accum ? 2 : 1, part, rows = per_rank / parts;
    ctorch_tensor x = shard(x_all, s, g_rank, per_rank), y = shard(y_all, s, g_rank, per_rank);
    for (part = 0; part < parts; ++part) {
      ctorch_tensor xp = NULL, yp = NULL, pred = NULL, loss = NULL;
      CHECK(ctorch_narrow(&xp, x, 0, part * rows, rows));
      CHECK(ctorch_narrow(&yp, y, 0, part * rows, rows));
      CHECK(ctorch_ddp_set_require_sync(ddp, part == parts - 1));
      if (unused) {
        CHECK(ctorch_ddp_pre_forward(ddp));
        CHECK(ctorch_nn_module_forward(&pred, body, xp));
        CHECK(ctorch_ddp_post_forward(ddp, &pred, 1));
      } else {
        CHECK(ctorch_ddp_forward(&pred, ddp, xp));
      }
      CHECK(ctorch_mse_loss(&loss, pred, yp, 1));
      CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    }
    for (i = 0; i < n_params; ++i) {
      ctorch_tensor g = NULL;
      CHECK(ctorch_tensor_grad(&g, params[i]));
      if (g) record(out, g, "s%lld.grad%zu", (long long)s, i);
    }
    size_t nb = 0, b;
    CHECK(ctorch_ddp_bucket_count(&nb, ddp));
    for (b = 0; b < nb; ++b) {
      ctorch_tensor idx = NULL;
      CHECK(ctorch_ddp_bucket_indices(&idx, ddp, b));
      record(out, idx, "s%lld.bucket%zu", (long long)s, b);
    }
    CHECK(ctorch_optimizer_step(opt));
    scope_leave(sc);
  }
  for (i = 0; i < n_params; ++i) record(out, params[i], "final%zu", i);
  snprintf(path, sizeof path, "%s/%s_c_rank%d.pt", dir, mode, g_rank);
  CHECK(ctorch_tensor_dict_save(path, out));

  ctorch_tensor_dict_free(out);
  ctorch_tensor_free(x_all);
  ctorch_tensor_free(y_all);
  ctorch_optimizer_free(opt);
  ctorch_ddp_free(ddp);
  for (i = 0; i < n_params; ++i) ctorch_tensor_free(params[i]);
  free(params);
  ctorch_nn_module_free(skip);
  ctorch_nn_module_free(body);
  ctorch_tensor_dict_free(init);
  ctorch_tensor_dict_free(data);
  ctorch_process_group_free(pg);
  return 0;
}
