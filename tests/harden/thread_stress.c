/* Thread stress: many threads at once, each on its own tensors, creating,
 * computing (checked numerically), failing on purpose (and checking that
 * ctorch_last_error() still holds ITS failure after other threads failed
 * differently), running autograd, saving/loading to their own files, and all
 * reading one shared tensor concurrently (read-only sharing is allowed).
 * Exit status 0 only if every check passed. Run by ctest (plain build) and
 * by scripts/threads under ThreadSanitizer.
 * Usage: thread_stress [--threads N] [--iters K] */
#include <ctorch.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ctorch_tensor g_shared; /* read by every thread, written by none */
static int g_iters = 200;

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
  for (int it = 0; it < g_iters; ++it) {
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
    else if (i + 1 < argc && !strcmp(argv[i], "--threads")) nthreads = atoi(argv[++i]);
    else if (i + 1 < argc && !strcmp(argv[i], "--iters")) g_iters = atoi(argv[++i]);
  }
  if (nthreads < 1 || nthreads > 256 || g_iters < 1) {
    fprintf(stderr, "usage: thread_stress [--threads N (1..256)] [--iters K]\n");
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
  for (int i = 0; i < nthreads; ++i)
    if (ws[i].failures) {
      ++bad;
      fprintf(stderr, "thread %d: %s\n", i, ws[i].msg);
    }
  ctorch_tensor_free(g_shared);
  free(th);
  free(ws);
  printf("thread_stress: %d threads x %d iterations, %d threads failed\n", nthreads, g_iters, bad);
  return bad ? 1 : 0;
}
