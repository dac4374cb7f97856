/* Thread stress: many threads at once, each on its own tensors, creating,
 * computing (checked numerically), failing on purpose (and checking that
 * ctorch_last_error() still holds ITS failure after other threads failed
 * differently), running autograd, saving/loading to their own files, and all
 * reading one shared tensor concurrently (read-only sharing is allowed).
 * It starts with a load storm: before any other checkpoint is read in the
 * process, all threads wait at a barrier and then load checkpoints at the
 * same moment, for several rounds. Whatever the loaders build on first use
 * or share between loads (a lazily built table, a cache) is then built by
 * one thread while the others read it, every run: ThreadSanitizer sees it
 * whenever it is unsynchronised, instead of in one run of two.
 * Exit status 0 only if every check passed. Run by ctest (plain build) and
 * by scripts/threads under ThreadSanitizer.
 * Usage: thread_stress [--threads N] [--iters K] [--storm-rounds R]
 *        thread_stress --race | --race-lazy   (deliberate races: controls) */
#include <ctorch.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ctorch_tensor g_shared; /* read by every thread, written by none */
static int g_iters = 200;
static int g_storm_rounds = 8;
/* One barrier per round: ThreadSanitizer models a barrier as one
 * synchronisation object released by every thread that arrives at it, so
 * reusing one barrier would let a slow thread leaving round r acquire what a
 * fast one did in round r before arriving for round r + 1, and hide a race
 * of round r. */
static pthread_barrier_t *g_storm_barriers;
static char g_storm_dict[256]; /* one dict of every common dtype, loaded by all threads */

typedef struct {
  int id;
  int failures;
  char msg[512];
} worker;

#define FAIL(w, ...)                                                   \
  do {                                                                 \
    if (!(w)->failures++) snprintf((w)->msg, sizeof (w)->msg, __VA_ARGS__); \
    goto done;                                                         \
  } while (0)
#define OK(w, call)                                                                              \
  do {                                                                                           \
    ctorch_status st_ = (call);                                                                  \
    if (st_ != CTORCH_OK) FAIL(w, "line %d: %s -> %s: %s", __LINE__, #call, ctorch_status_name(st_), ctorch_last_error()); \
  } while (0)

static void storm(worker *w);

static double sum_of(worker *w, ctorch_tensor t, int *ok) {
  ctorch_tensor s = NULL;
  double v = 0;
  *ok = 0;
  if (ctorch_sum(&s, t, NULL) != CTORCH_OK || ctorch_tensor_item_double(&v, s) != CTORCH_OK) {
    snprintf(w->msg, sizeof w->msg, "sum failed: %s", ctorch_last_error());
  } else {
    *ok = 1;
  }
  ctorch_tensor_free(s);
  return v;
}

static void *run(void *arg) {
  worker *w = (worker *)arg;
  const int id = w->id;
  char path[256], marker[64];
  snprintf(path, sizeof path, "%s/ctorch-threads-%d-%d.pt", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
           (int)getpid(), id);
  /* The failing mm below names this thread's shapes in its message. */
  snprintf(marker, sizeof marker, "%dx3", id + 2);
  storm(w);
  for (int it = 0; it < g_iters && !w->failures; ++it) {
    ctorch_tensor a = NULL, b = NULL, c = NULL, d = NULL, bad1 = NULL, bad2 = NULL, r = NULL, l = NULL, y = NULL;
    ctorch_tensor s = NULL;
    float data[12];
    int64_t shape[2] = {3, 4};
    int ok;
    for (int k = 0; k < 12; ++k) data[k] = (float)(id * 100 + k + it % 7);
    OK(w, ctorch_tensor_from_data(&a, data, sizeof data, shape, 2, CTORCH_FLOAT32));
    OK(w, ctorch_mul_Tensor(&b, a, a));
    OK(w, ctorch_add_Tensor(&c, b, a, ctorch_scalar_float(2.0)));
    {
      double want = 0, got;
      for (int k = 0; k < 12; ++k) want += (double)data[k] * data[k] + 2.0 * data[k];
      got = sum_of(w, c, &ok);
      if (!ok) FAIL(w, "%s", w->msg);
      if (got < want * (1 - 1e-5) || got > want * (1 + 1e-5)) FAIL(w, "thread %d: sum %g, want %g", id, got, want);
    }
    /* Shared read-only tensor [4, 5] used concurrently by all threads. */
    OK(w, ctorch_matmul(&d, a, g_shared));

    /* A failure whose message is this thread's own. */
    {
      int64_t s1[2] = {id + 2, 3}, s2[2] = {id + 4, 2};
      ctorch_status st;
      OK(w, ctorch_zeros(&bad1, s1, 2, NULL, NULL, NULL, NULL));
      OK(w, ctorch_zeros(&bad2, s2, 2, NULL, NULL, NULL, NULL));
      st = ctorch_mm(&r, bad1, bad2);
      if (st == CTORCH_OK || r) FAIL(w, "thread %d: mismatched mm succeeded", id);
      if (!strstr(ctorch_last_error(), marker) || strncmp(ctorch_last_error(), "ctorch_mm", 9) != 0)
        FAIL(w, "thread %d: last error is not mine right after failing: '%s'", id, ctorch_last_error());
      /* Successful calls in between do not clear it; other threads' failures do not touch it. */
      OK(w, ctorch_relu(&r, a));
      ctorch_tensor_free(r);
      r = NULL;
      sched_yield();
      if (!strstr(ctorch_last_error(), marker))
        FAIL(w, "thread %d: last error changed under me: '%s'", id, ctorch_last_error());
      /* A NULL-handle failure: INVALID_ARGUMENT naming the argument. */
      st = ctorch_relu(&r, NULL);
      if (st != CTORCH_INVALID_ARGUMENT || !strstr(ctorch_last_error(), "self"))
        FAIL(w, "thread %d: NULL handle gave %s '%s'", id, ctorch_status_name(st), ctorch_last_error());
    }

    /* Autograd on this thread's own leaf. */
    {
      double g = 0;
      OK(w, ctorch_tensor_clone(&l, a));
      OK(w, ctorch_requires_grad_(l, 1));
      OK(w, ctorch_mul_Tensor(&y, l, l));
      OK(w, ctorch_sum(&s, y, NULL));
      OK(w, ctorch__backward(s, NULL, 0, NULL, NULL, 0));
#ifdef CTORCH_HARDEN_HAVE_TRAINING
      {
        ctorch_tensor grad = NULL;
        int okk;
        OK(w, ctorch_tensor_grad(&grad, l));
        g = sum_of(w, grad, &okk);
        ctorch_tensor_free(grad);
        if (!okk) FAIL(w, "%s", w->msg);
        {
          double want = 0;
          for (int k = 0; k < 12; ++k) want += 2.0 * data[k];
          if (g < want * (1 - 1e-5) || g > want * (1 + 1e-5)) FAIL(w, "thread %d: grad sum %g, want %g", id, g, want);
        }
      }
#else
      (void)g;
#endif
    }

    /* Each thread its own checkpoint file. */
    if (it % 20 == 0) {
      ctorch_tensor back = NULL;
      double s1, s2;
      int ok1, ok2;
      OK(w, ctorch_save(path, c));
      OK(w, ctorch_load(&back, path));
      s1 = sum_of(w, c, &ok1);
      s2 = sum_of(w, back, &ok2);
      ctorch_tensor_free(back);
      if (!ok1 || !ok2 || s1 != s2) FAIL(w, "thread %d: checkpoint round trip differs", id);
    }
  done:
    ctorch_tensor_free(a);
    ctorch_tensor_free(b);
    ctorch_tensor_free(c);
    ctorch_tensor_free(d);
    ctorch_tensor_free(bad1);
    ctorch_tensor_free(bad2);
    ctorch_tensor_free(r);
    ctorch_tensor_free(l);
    ctorch_tensor_free(y);
    ctorch_tensor_free(s);
    if (w->failures) break;
  }
  unlink(path);
  return NULL;
}

static void storm_path(char *buf, size_t n, const char *what, int id) {
  snprintf(buf, n, "%s/ctorch-storm-%d-%s-%d.pt", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid(),
           what, id);
}

/* Writes the storm's files (saving reads nothing: the readers' first use is
 * still ahead). */
static int storm_prepare(int nthreads) {
  static const ctorch_dtype dts[] = {CTORCH_FLOAT32, CTORCH_FLOAT64, CTORCH_FLOAT16, CTORCH_BFLOAT16, CTORCH_INT64,
                                     CTORCH_INT32,   CTORCH_INT16,   CTORCH_INT8,    CTORCH_UINT8,    CTORCH_BOOL,
                                     CTORCH_COMPLEX64, CTORCH_COMPLEX128};
  const size_t n = sizeof dts / sizeof dts[0];
  const char *names[sizeof dts / sizeof dts[0]] = {"f32", "f64", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "b", "c64", "c128"};
  ctorch_tensor ts[sizeof dts / sizeof dts[0]] = {0};
  int64_t shape[2] = {3, 4};
  float data[12];
  ctorch_tensor base = NULL;
  int rc = 0;
  for (int k = 0; k < 12; ++k) data[k] = (float)k;
  if (ctorch_tensor_from_data(&base, data, sizeof data, shape, 2, CTORCH_FLOAT32) != CTORCH_OK) return 1;
  for (size_t i = 0; i < n && !rc; ++i) rc = ctorch_to_dtype(&ts[i], base, dts[i], 0, 1, NULL) != CTORCH_OK;
  storm_path(g_storm_dict, sizeof g_storm_dict, "dict", 0);
  if (!rc) rc = ctorch_save_dict(g_storm_dict, names, ts, n) != CTORCH_OK;
  for (int id = 0; id < nthreads && !rc; ++id) {
    char p[256];
    storm_path(p, sizeof p, "one", id);
    rc = ctorch_save(p, ts[(size_t)id % n]) != CTORCH_OK;
  }
  if (rc) fprintf(stderr, "storm setup: %s\n", ctorch_last_error());
  for (size_t i = 0; i < n; ++i) ctorch_tensor_free(ts[i]);
  ctorch_tensor_free(base);
  return rc;
}

static void storm_cleanup(int nthreads) {
  unlink(g_storm_dict);
  for (int id = 0; id < nthreads; ++id) {
    char p[256];
    storm_path(p, sizeof p, "one", id);
    unlink(p);
  }
}

/* --race-lazy: the storm's bug class on purpose, for scripts/threads to
 * check that the storm makes ThreadSanitizer see it: a table of names built
 * on first use without synchronisation (heap strings, as a lazily built
 * std::map<std::string, ...> has), looked up by every storm thread at once. */
static int g_race_lazy;
static char **g_lazy_names;
static int lazy_lookup(const char *name) {
  static const char *const src[] = {"FloatStorage", "DoubleStorage", "ComplexFloatStorage", "ComplexDoubleStorage"};
  if (!g_lazy_names) {
    char **t = malloc(sizeof src);
    for (size_t i = 0; i < sizeof src / sizeof src[0]; ++i) t[i] = strdup(src[i]);
    g_lazy_names = t;
  }
  for (size_t i = 0; i < sizeof src / sizeof src[0]; ++i)
    if (!strcmp(g_lazy_names[i], name)) return (int)i;
  return -1;
}

/* All threads load at once, round after round. */
static void storm(worker *w) {
  char mine[256];
  storm_path(mine, sizeof mine, "one", w->id);
  for (int round = 0; round < g_storm_rounds; ++round) {
    ctorch_tensor t = NULL;
    ctorch_tensor_dict d = NULL;
    size_t n = 0;
    pthread_barrier_wait(&g_storm_barriers[round]);
    if (w->failures) continue; /* keep meeting the others at the barrier */
    if (g_race_lazy && lazy_lookup("ComplexDoubleStorage") != 3) w->failures++;
    if (ctorch_load(&t, mine) != CTORCH_OK || ctorch_load_dict(&d, g_storm_dict) != CTORCH_OK ||
        ctorch_tensor_dict_size(&n, d) != CTORCH_OK || n != 12) {
      if (!w->failures++) snprintf(w->msg, sizeof w->msg, "storm round %d: %s", round, ctorch_last_error());
    }
    ctorch_tensor_free(t);
    ctorch_tensor_dict_free(d);
  }
}

/* --race: a deliberate caller bug (two threads having ctorch write one
 * buffer, ctorch_tensor_sizes, unsynchronised), so scripts/threads can check
 * that ThreadSanitizer does see races in ctorch's code. */
static int64_t g_race_buf[4];
static void *race(void *arg) {
  (void)arg;
  for (int i = 0; i < 200; ++i) ctorch_tensor_sizes(g_race_buf, 4, g_shared);
  return NULL;
}

int main(int argc, char **argv) {
  int nthreads = 8, bad = 0, do_race = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--race")) do_race = 1;
    else if (!strcmp(argv[i], "--race-lazy")) g_race_lazy = 1;
    else if (i + 1 < argc && !strcmp(argv[i], "--threads")) nthreads = atoi(argv[++i]);
    else if (i + 1 < argc && !strcmp(argv[i], "--iters")) g_iters = atoi(argv[++i]);
    else if (i + 1 < argc && !strcmp(argv[i], "--storm-rounds")) g_storm_rounds = atoi(argv[++i]);
  }
  if (nthreads < 1 || nthreads > 256 || g_iters < 1 || g_storm_rounds < 0) {
    fprintf(stderr, "usage: thread_stress [--threads N (1..256)] [--iters K] [--storm-rounds R]\n");
    return 2;
  }
  {
    int64_t shape[2] = {4, 5};
    if (ctorch_randn(&g_shared, shape, 2, NULL, NULL, NULL, NULL) != CTORCH_OK) {
      fprintf(stderr, "setup: %s\n", ctorch_last_error());
      return 1;
    }
  }
  if (do_race) {
    pthread_t a, b;
    ctorch_tensor small = NULL;
    int64_t shape[1] = {12};
    ctorch_randn(&small, shape, 1, NULL, NULL, NULL, NULL);
    ctorch_tensor_free(g_shared);
    g_shared = small;
    pthread_create(&a, NULL, race, NULL);
    pthread_create(&b, NULL, race, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    ctorch_tensor_free(g_shared);
    puts("thread_stress: deliberate race done");
    return 0;
  }
  if (storm_prepare(nthreads)) return 1;
  g_storm_barriers = calloc((size_t)g_storm_rounds + 1, sizeof *g_storm_barriers);
  for (int r = 0; r < g_storm_rounds; ++r) pthread_barrier_init(&g_storm_barriers[r], NULL, (unsigned)nthreads);
  pthread_t *th = calloc((size_t)nthreads, sizeof *th);
  worker *ws = calloc((size_t)nthreads, sizeof *ws);
  for (int i = 0; i < nthreads; ++i) {
    ws[i].id = i;
    if (pthread_create(&th[i], NULL, run, &ws[i]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      return 1;
    }
  }
  for (int i = 0; i < nthreads; ++i) pthread_join(th[i], NULL);
  for (int r = 0; r < g_storm_rounds; ++r) pthread_barrier_destroy(&g_storm_barriers[r]);
  free(g_storm_barriers);
  storm_cleanup(nthreads);
  for (int i = 0; i < nthreads; ++i)
    if (ws[i].failures) {
      ++bad;
      fprintf(stderr, "thread %d: %s\n", i, ws[i].msg);
    }
  ctorch_tensor_free(g_shared);
  free(th);
  free(ws);
  printf("thread_stress: %d threads x (%d load-storm rounds + %d iterations), %d threads failed\n", nthreads,
         g_storm_rounds, g_iters, bad);
  return bad ? 1 : 0;
}
