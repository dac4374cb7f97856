/*
 * Serving one model from N threads: a BERT-shaped
 * encoder (a stack of torch.nn.TransformerEncoderLayer, batch_first, no
 * dropout, eval) built once, shared by N worker threads that take requests
 * from one queue. include/ctorch.h's "Sharing one handle between threads"
 * promises that an nn module's forward may run from any number of threads
 * at once in eval mode; this program leans on exactly that.
 *
 *   main thread   builds (or loads) the model, computes the reference
 *                 output of every input on one thread, then for each N
 *                 pushes R requests into a bounded queue (capacity 2N)
 *   N workers     pop a request (an input index), forward it under
 *                 inference mode, compare the output byte for byte with the
 *                 reference, record the request's latency
 *
 * Every output must equal the single-threaded forward of the same input
 * bit for bit (each worker sets its intra-op thread count first: libtorch
 * 2.x gives a new thread the count lazily, and a kernel may split its sums
 * differently with another count). Any difference exits with status 1.
 *
 * Usage: serve [--threads 1,2,4] [--requests R] [--layers L] [--d-model D]
 *              [--heads H] [--ffn F] [--seq S] [--batch B] [--inputs K]
 *              [--intra T] [--seed S] [--load W.safetensors] [--dump PATH]
 *              [--start-at UNIX_MS] [--latencies PATH] [--corrupt-reference]
 *   --load     weights (a state dict with torch.nn.Sequential's keys,
 *              "0.self_attn.in_proj_weight", ...) instead of seeded ones,
 *              and the inputs "input.0".. when the file has them
 *   --dump     writes the state dict, the inputs ("input.K") and the
 *              reference outputs ("output.K") to a safetensors file, so
 *              another program can serve the same weights and inputs and
 *              compare (bench/probes/serve_bench.py)
 *   --start-at waits until that wall-clock time (ms since the epoch) after
 *              building the model, so N processes serve at the same moment
 *   --latencies appends every request's latency (ms, one a line) to PATH
 *   --corrupt-reference flips one bit of a reference: the run must then fail
 *              (a control for the comparison)
 * Per N, one machine-readable line:
 *   serve: threads=N intra=T requests=R seconds=S req_per_s=X p50_ms=A
 *          p99_ms=B cpu_ms=C mismatches=0
 * (cpu_ms: the workers' thread CPU time per request, which a busy machine
 * stretches far less than the wall clock.) Latency is service time (dequeue to checked output; the queue wait is
 * excluded: the producer keeps the queue full, a closed-loop load).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctorch.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ctorch_status st_ = (call);                                                                    \
    if (st_ != CTORCH_OK) {                                                                        \
      fprintf(stderr, "serve: %s:%d: %s failed with %s: %s\n", __FILE__, __LINE__, #call,          \
              ctorch_status_name(st_), ctorch_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#define MAX_INPUTS 64

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the request queue (bounded, many consumers) ------------------------ */

typedef struct {
  int id;    /* request number: its latency slot */
  int input; /* which input to forward */
} request;

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t not_empty, not_full;
  request *buf;
  int cap, head, count, closed;
} queue;

static void queue_init(queue *q, int cap) {
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->not_empty, NULL);
  pthread_cond_init(&q->not_full, NULL);
  q->buf = calloc((size_t)cap, sizeof *q->buf);
  q->cap = cap;
  q->head = q->count = q->closed = 0;
}

static void queue_destroy(queue *q) {
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->not_empty);
  pthread_cond_destroy(&q->not_full);
  free(q->buf);
}

static void queue_push(queue *q, request r) {
  pthread_mutex_lock(&q->mu);
  while (q->count == q->cap) pthread_cond_wait(&q->not_full, &q->mu);
  q->buf[(q->head + q->count) % q->cap] = r;
  q->count++;
  pthread_cond_signal(&q->not_empty);
  pthread_mutex_unlock(&q->mu);
}

/* 1 and a request, or 0 once the queue is closed and empty. */
static int queue_pop(queue *q, request *r) {
  int got = 0;
  pthread_mutex_lock(&q->mu);
  while (q->count == 0 && !q->closed) pthread_cond_wait(&q->not_empty, &q->mu);
  if (q->count > 0) {
    *r = q->buf[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    got = 1;
    pthread_cond_signal(&q->not_full);
  }
  pthread_mutex_unlock(&q->mu);
  return got;
}

static void queue_close(queue *q) {
  pthread_mutex_lock(&q->mu);
  q->closed = 1;
  pthread_cond_broadcast(&q->not_empty);
  pthread_mutex_unlock(&q->mu);
}

/* ---- the model and its references --------------------------------------- */

typedef struct {
  ctorch_nn_module model; /* shared by every worker */
  int n_inputs;
  ctorch_tensor inputs[MAX_INPUTS];
  unsigned char *want[MAX_INPUTS]; /* reference outputs, one thread */
  size_t out_bytes;
  int intra;
  queue q;
  double *latency; /* per request id, seconds */
  pthread_barrier_t start;
} server;

typedef struct {
  server *s;
  double cpu; /* this thread's CPU seconds in forwards: load-independent */
  int mismatches, failures;
  char msg[512];
} worker;

static void *work(void *arg) {
  worker *w = arg;
  server *s = w->s;
  ctorch_autograd_scope scope = NULL;
  unsigned char *got = malloc(s->out_bytes);
  request r;
  /* the intra-op count and grad mode are per thread: set them here */
  if (ctorch_set_num_threads(s->intra) != CTORCH_OK ||
      ctorch_autograd_scope_enter(&scope, CTORCH_SCOPE_INFERENCE_MODE) != CTORCH_OK) {
    snprintf(w->msg, sizeof w->msg, "worker setup: %s", ctorch_last_error());
    w->failures++;
  }
  pthread_barrier_wait(&s->start);
  while (queue_pop(&s->q, &r)) {
    ctorch_tensor out = NULL;
    double t0 = now_s(), c0 = thread_cpu_s();
    if (w->failures) continue; /* drain the queue so the producer finishes */
    if (ctorch_nn_module_forward(&out, s->model, s->inputs[r.input]) != CTORCH_OK ||
        ctorch_tensor_copy_to(got, s->out_bytes, out) != CTORCH_OK) {
      snprintf(w->msg, sizeof w->msg, "request %d: %s", r.id, ctorch_last_error());
      w->failures++;
    } else if (memcmp(got, s->want[r.input], s->out_bytes) != 0) {
      if (!w->mismatches)
        snprintf(w->msg, sizeof w->msg, "request %d (input %d): output differs from the single-threaded forward",
                 r.id, r.input);
      w->mismatches++;
    }
    ctorch_tensor_free(out);
    s->latency[r.id] = now_s() - t0;
    w->cpu += thread_cpu_s() - c0;
  }
  if (scope) ctorch_autograd_scope_leave(scope);
  free(got);
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static const char *latencies_path;

/* One serving run with n workers; returns the number of bad requests. */
static int serve_n(server *s, int n, int requests) {
  pthread_t *th = calloc((size_t)n, sizeof *th);
  worker *w = calloc((size_t)n, sizeof *w);
  int i, bad = 0;
  double t0, secs, cpu = 0;
  s->latency = calloc((size_t)requests, sizeof *s->latency);
  queue_init(&s->q, 2 * n);
  pthread_barrier_init(&s->start, NULL, (unsigned)n + 1);
  for (i = 0; i < n; ++i) {
    w[i].s = s;
    if (pthread_create(&th[i], NULL, work, &w[i]) != 0) {
      fprintf(stderr, "serve: pthread_create failed\n");
      exit(1);
    }
  }
  pthread_barrier_wait(&s->start);
  t0 = now_s();
  for (i = 0; i < requests; ++i) {
    request r = {i, i % s->n_inputs};
    queue_push(&s->q, r);
  }
  queue_close(&s->q);
  for (i = 0; i < n; ++i) pthread_join(th[i], NULL);
  secs = now_s() - t0;
  for (i = 0; i < n; ++i) {
    if (w[i].failures || w[i].mismatches) fprintf(stderr, "serve: worker %d: %s\n", i, w[i].msg);
    bad += w[i].failures + w[i].mismatches;
    cpu += w[i].cpu;
  }
  qsort(s->latency, (size_t)requests, sizeof *s->latency, cmp_double);
  if (latencies_path) {
    FILE *f = fopen(latencies_path, "a");
    if (!f) {
      fprintf(stderr, "serve: cannot write %s\n", latencies_path);
      exit(1);
    }
    for (i = 0; i < requests; ++i) fprintf(f, "%.4f\n", 1e3 * s->latency[i]);
    fclose(f);
  }
  printf("serve: threads=%d intra=%d requests=%d seconds=%.3f req_per_s=%.2f p50_ms=%.3f p99_ms=%.3f cpu_ms=%.3f mismatches=%d\n",
         n, s->intra, requests, secs, requests / secs, 1e3 * s->latency[(requests - 1) / 2],
         1e3 * s->latency[(int)((requests - 1) * 0.99)], 1e3 * cpu / requests, bad);
  fflush(stdout);
  pthread_barrier_destroy(&s->start);
  queue_destroy(&s->q);
  free(s->latency);
  free(th);
  free(w);
  return bad;
}

static void append(ctorch_nn_module seq, const char *kind, const char *args) {
  ctorch_nn_module m = NULL;
  CHECK(ctorch_nn_new(&m, kind, args));
  CHECK(ctorch_nn_module_append(seq, m));
  ctorch_nn_module_free(m);
}

/* state dict + inputs + reference outputs, one safetensors file */
static void dump(const char *path, server *s) {
  ctorch_tensor_dict sd = NULL;
  size_t n = 0, i, k = 0;
  const char **names;
  ctorch_tensor *ts;
  char (*extra)[32];
  int64_t shape[8];
  CHECK(ctorch_nn_module_state_dict(&sd, s->model));
  CHECK(ctorch_tensor_dict_size(&n, sd));
  names = calloc(n + 2 * (size_t)s->n_inputs, sizeof *names);
  ts = calloc(n + 2 * (size_t)s->n_inputs, sizeof *ts);
  extra = calloc(2 * (size_t)s->n_inputs, sizeof *extra);
  for (i = 0; i < n; ++i, ++k) {
    CHECK(ctorch_tensor_dict_key(&names[k], sd, i));
    CHECK(ctorch_tensor_dict_get(&ts[k], sd, i));
  }
  for (i = 0; i < (size_t)s->n_inputs; ++i) {
    int64_t ndim = 0;
    CHECK(ctorch_tensor_dim(&ndim, s->inputs[i]));
    CHECK(ctorch_tensor_sizes(shape, 8, s->inputs[i]));
    snprintf(extra[2 * i], sizeof extra[0], "input.%zu", i);
    names[k] = extra[2 * i];
    ts[k++] = s->inputs[i];
    /* outputs have the inputs' shape (the encoder keeps it) */
    snprintf(extra[2 * i + 1], sizeof extra[0], "output.%zu", i);
    names[k] = extra[2 * i + 1];
    CHECK(ctorch_tensor_from_data(&ts[k++], s->want[i], s->out_bytes, shape, (size_t)ndim, CTORCH_FLOAT32));
  }
  CHECK(ctorch_safetensors_save(path, names, ts, k, NULL, NULL, 0));
  for (i = 0; i < n; ++i) ctorch_tensor_free(ts[i]);
  for (i = 0; i < (size_t)s->n_inputs; ++i) ctorch_tensor_free(ts[n + 2 * i + 1]);
  ctorch_tensor_dict_free(sd);
  free(names);
  free(ts);
  free(extra);
}

static void usage(void) {
  fprintf(stderr, "usage: serve [--threads 1,2,4] [--requests R] [--layers L] [--d-model D] [--heads H] [--ffn F]\n"
                  "             [--seq S] [--batch B] [--inputs K] [--intra T] [--seed S] [--load W.safetensors]\n"
                  "             [--dump PATH] [--start-at UNIX_MS] [--latencies PATH] [--corrupt-reference]\n");
  exit(2);
}

int main(int argc, char **argv) {
  const char *threads = "1,2,4", *load = NULL, *dump_path = NULL;
  int requests = 200, layers = 2, d = 256, heads = 4, ffn = 1024, seq = 64, batch = 1, corrupt = 0, i, bad = 0;
  long long seed = 45, start_at = 0;
  int loaded_inputs = 0;
  server s;
  char args[128];
  memset(&s, 0, sizeof s);
  s.n_inputs = 8;
  s.intra = 1;
  for (i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--corrupt-reference")) {
      corrupt = 1;
      continue;
    }
    if (!v) usage();
    if (!strcmp(a, "--threads")) threads = v;
    else if (!strcmp(a, "--requests")) requests = atoi(v);
    else if (!strcmp(a, "--layers")) layers = atoi(v);
    else if (!strcmp(a, "--d-model")) d = atoi(v);
    else if (!strcmp(a, "--heads")) heads = atoi(v);
    else if (!strcmp(a, "--ffn")) ffn = atoi(v);
    else if (!strcmp(a, "--seq")) seq = atoi(v);
    else if (!strcmp(a, "--batch")) batch = atoi(v);
    else if (!strcmp(a, "--inputs")) s.n_inputs = atoi(v);
    else if (!strcmp(a, "--intra")) s.intra = atoi(v);
    else if (!strcmp(a, "--seed")) seed = atoll(v);
    else if (!strcmp(a, "--load")) load = v;
    else if (!strcmp(a, "--dump")) dump_path = v;
    else if (!strcmp(a, "--start-at")) start_at = atoll(v);
    else if (!strcmp(a, "--latencies")) latencies_path = v;
    else usage();
    ++i;
  }
  if (requests < 1 || layers < 1 || d < 1 || heads < 1 || ffn < 1 || seq < 1 || batch < 1 || s.intra < 1 ||
      s.n_inputs < 2 || s.n_inputs > MAX_INPUTS)
    usage();

  /* the model: torch.nn.Sequential(*[TransformerEncoderLayer(d, heads, ffn,
   * dropout=0.0, batch_first=True) for _ in range(layers)]).eval() */
  CHECK(ctorch_set_num_threads(s.intra));
  CHECK(ctorch_manual_seed((uint64_t)seed));
  CHECK(ctorch_nn_new(&s.model, "Sequential", ""));
  snprintf(args, sizeof args, "%d, %d, dim_feedforward=%d, dropout=0.0, batch_first=True", d, heads, ffn);
  for (i = 0; i < layers; ++i) append(s.model, "TransformerEncoderLayer", args);
  if (load) {
    /* the weights strictly; a --dump file's inputs are taken too */
    ctorch_tensor_dict file = NULL, sd = NULL;
    char *report = NULL;
    size_t n = 0, j;
    CHECK(ctorch_safetensors_load(&file, load, NULL));
    CHECK(ctorch_tensor_dict_new(&sd));
    CHECK(ctorch_tensor_dict_size(&n, file));
    for (j = 0; j < n; ++j) {
      const char *key = NULL;
      ctorch_tensor t = NULL;
      CHECK(ctorch_tensor_dict_key(&key, file, j));
      CHECK(ctorch_tensor_dict_get(&t, file, j));
      if (!strncmp(key, "input.", 6)) {
        int k = atoi(key + 6);
        if (k >= 0 && k < MAX_INPUTS && !s.inputs[k]) {
          s.inputs[k] = t;
          loaded_inputs++;
          continue;
        }
      } else if (strncmp(key, "output.", 7) != 0) {
        CHECK(ctorch_tensor_dict_set(sd, key, t));
      }
      ctorch_tensor_free(t);
    }
    CHECK(ctorch_nn_module_load_state_dict(&report, s.model, sd, 1));
    free(report);
    ctorch_tensor_dict_free(sd);
    ctorch_tensor_dict_free(file);
    if (loaded_inputs) {
      for (i = 0; i < loaded_inputs; ++i)
        if (!s.inputs[i]) {
          fprintf(stderr, "serve: %s: input.%d is missing\n", load, i);
          return 1;
        }
      s.n_inputs = loaded_inputs;
    }
  }
  CHECK(ctorch_nn_module_train(s.model, 0));

  /* distinct inputs and their single-threaded outputs (this thread has the
   * workers' intra-op count and grad mode) */
  {
    int64_t shape[3];
    ctorch_autograd_scope scope = NULL;
    shape[0] = batch;
    shape[1] = seq;
    shape[2] = d;
    s.out_bytes = (size_t)batch * (size_t)seq * (size_t)d * sizeof(float);
    CHECK(ctorch_autograd_scope_enter(&scope, CTORCH_SCOPE_INFERENCE_MODE));
    for (i = 0; i < s.n_inputs; ++i) {
      ctorch_tensor out = NULL;
      int64_t got[3] = {0, 0, 0}, dim = 0;
      if (!loaded_inputs) CHECK(ctorch_randn(&s.inputs[i], shape, 3, NULL, NULL, NULL, NULL));
      CHECK(ctorch_tensor_dim(&dim, s.inputs[i]));
      if (dim == 3) CHECK(ctorch_tensor_sizes(got, 3, s.inputs[i]));
      if (memcmp(got, shape, sizeof shape) != 0) {
        fprintf(stderr, "serve: input %d is not [%d, %d, %d]\n", i, batch, seq, d);
        return 1;
      }
      CHECK(ctorch_nn_module_forward(&out, s.model, s.inputs[i]));
      s.want[i] = malloc(s.out_bytes);
      CHECK(ctorch_tensor_copy_to(s.want[i], s.out_bytes, out));
      ctorch_tensor_free(out);
    }
    CHECK(ctorch_autograd_scope_leave(scope));
    for (i = 1; i < s.n_inputs; ++i)
      if (!memcmp(s.want[i], s.want[0], s.out_bytes)) {
        fprintf(stderr, "serve: inputs 0 and %d give the same output: a mix-up could not be seen\n", i);
        return 1;
      }
  }
  if (dump_path) dump(dump_path, &s);
  if (corrupt) s.want[0][0] ^= 1;
  {
    const char *tv = "?";
    CHECK(ctorch_torch_version(&tv));
    printf("serve: model layers=%d d_model=%d heads=%d ffn=%d input=[%d,%d,%d] libtorch=%s\n", layers, d, heads, ffn,
           batch, seq, d, tv);
  }
  fflush(stdout);
  if (start_at > 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long wait_ms = start_at - ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    if (wait_ms > 0) {
      ts.tv_sec = wait_ms / 1000;
      ts.tv_nsec = (wait_ms % 1000) * 1000000;
      nanosleep(&ts, NULL);
    }
  }
  {
    const char *p = threads;
    while (*p) {
      int n = atoi(p);
      if (n < 1) usage();
      bad += serve_n(&s, n, requests);
      p += strcspn(p, ",");
      if (*p == ',') ++p;
    }
  }
  for (i = 0; i < s.n_inputs; ++i) {
    ctorch_tensor_free(s.inputs[i]);
    free(s.want[i]);
  }
  ctorch_nn_module_free(s.model);
  if (bad) {
    fprintf(stderr, "serve: %d request(s) failed or differed from the single-threaded forward\n", bad);
    return 1;
  }
  return 0;
}
