/* The failure paths of the training utilities (utils_dump errors): NULL and
 * dead handles, handles of another type, bad enums, flags and sizes, calls
 * in the wrong state or on the wrong thread. Each must return its status with
 * a message naming the function and, where there is one, the argument; none
 * may crash. Returns 0 when every case held, else 1 (after printing each
 * mismatch). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <ctorch.h>

#include "../dump_ok.h"

static int failures;

static void expect(ctorch_status got, ctorch_status want, const char *needle, const char *what, int line) {
  const char *msg = ctorch_last_error();
  if (got != want || (needle && !strstr(msg, needle))) {
    fprintf(stderr, "utils_errors.c:%d: %s: got %s (%s), wanted %s with \"%s\"\n", line, what,
            ctorch_status_name(got), msg, ctorch_status_name(want), needle ? needle : "");
    ++failures;
  }
}
#define EXPECT(call, want, needle) expect((call), (want), (needle), #call, __LINE__)

typedef struct {
  ctorch_profiler p;
  ctorch_status st;
} stop_arg;

static void *stop_elsewhere(void *a) {
  stop_arg *s = (stop_arg *)a;
  s->st = ctorch_profiler_stop(s->p);
  return NULL;
}

static void *start_and_leave(void *a) {
  /* a session started here, whose handle the main thread frees while it records */
  ctorch_profiler *out = (ctorch_profiler *)a;
  OK(ctorch_profiler_start(out, 0));
  return NULL;
}

int utils_errors(void) {
  const int64_t shape[2] = {3, 4};
  ctorch_nn_module lin = NULL, seq = NULL, dead = NULL;
  ctorch_tensor x = NULL, y = (ctorch_tensor)1;
  ctorch_early_stopping es = NULL, es_dead = NULL;
  ctorch_profiler prof = NULL, prof2 = NULL;
  int stop = 0;
  double thr = 1.0;
  char *table = NULL;

  OK(ctorch_nn_new(&lin, "Linear", "4, 2"));
  OK(ctorch_nn_new(&seq, "Sequential", ""));
  OK(ctorch_nn_module_append(seq, lin));
  OK(ctorch_nn_new(&dead, "ReLU", ""));
  ctorch_nn_module_free(dead);
  OK(ctorch_randn(&x, shape, 2, NULL, NULL, NULL, NULL));

  /* ---- checkpointing ---- */
  EXPECT(ctorch_nn_checkpoint(NULL, lin, x, 0), CTORCH_INVALID_ARGUMENT, "ctorch_nn_checkpoint: argument 'out'");
  EXPECT(ctorch_nn_checkpoint(&y, NULL, x, 0), CTORCH_INVALID_ARGUMENT, "argument 'm'");
  if (y != NULL) fprintf(stderr, "checkpoint: *out not set to NULL on failure\n"), ++failures;
  EXPECT(ctorch_nn_checkpoint(&y, dead, x, 0), CTORCH_INVALID_ARGUMENT, "is not a live ctorch_nn_module");
  OK(ctorch_early_stopping_new(&es, CTORCH_BEST_MIN, 1, 0.0, 1, NULL, NULL, NULL));
  EXPECT(ctorch_nn_checkpoint(&y, (ctorch_nn_module)es, x, 0), CTORCH_INVALID_ARGUMENT,
         "is a ctorch_early_stopping handle, not a ctorch_nn_module");
  EXPECT(ctorch_nn_checkpoint(&y, lin, NULL, 0), CTORCH_INVALID_ARGUMENT, "argument 'input'");
  EXPECT(ctorch_nn_checkpoint(&y, lin, x, 2), CTORCH_INVALID_ARGUMENT, "argument 'flags'");
  EXPECT(ctorch_nn_checkpoint_sequential(&y, seq, 0, x, 0), CTORCH_INVALID_ARGUMENT, "argument 'segments'");
  EXPECT(ctorch_nn_checkpoint_sequential(&y, seq, 2, x, 0), CTORCH_INVALID_ARGUMENT, "number of children");
  EXPECT(ctorch_nn_checkpoint_sequential(&y, dead, 1, x, 0), CTORCH_INVALID_ARGUMENT, "argument 'seq'");
  EXPECT(ctorch_nn_checkpoint_sequential(&y, seq, 1, x, 0x80000000u), CTORCH_INVALID_ARGUMENT, "argument 'flags'");
  {
    /* a shape error inside the checkpointed forward comes back from the call */
    const int64_t bad[2] = {3, 5};
    ctorch_tensor xb = NULL;
    OK(ctorch_randn(&xb, bad, 2, NULL, NULL, NULL, NULL));
    ctorch_status st = ctorch_nn_checkpoint(&y, lin, xb, 0);
    if (st == CTORCH_OK || y != NULL || !strstr(ctorch_last_error(), "ctorch_nn_checkpoint"))
      fprintf(stderr, "a shape error inside the checkpoint: %s %s\n", ctorch_status_name(st), ctorch_last_error()),
          ++failures;
    ctorch_tensor_free(xb);
  }
  /* success still works after the failures, with and without grad mode */
  OK(ctorch_nn_checkpoint(&y, lin, x, CTORCH_CHECKPOINT_NO_RNG_STATE));
  ctorch_tensor_free(y);

  /* ---- early stopping ---- */
  EXPECT(ctorch_early_stopping_new(NULL, CTORCH_BEST_MIN, 1, 0.0, 1, NULL, NULL, NULL), CTORCH_INVALID_ARGUMENT,
         "argument 'out'");
  EXPECT(ctorch_early_stopping_new(&es_dead, CTORCH_BEST_NONE, 1, 0.0, 1, NULL, NULL, NULL), CTORCH_INVALID_ARGUMENT,
         "argument 'mode'");
  EXPECT(ctorch_early_stopping_new(&es_dead, (ctorch_best_mode)7, 1, 0.0, 1, NULL, NULL, NULL),
         CTORCH_INVALID_ARGUMENT, "argument 'mode'");
  EXPECT(ctorch_early_stopping_new(&es_dead, CTORCH_BEST_MAX, -1, 0.0, 1, NULL, NULL, NULL), CTORCH_INVALID_ARGUMENT,
         "argument 'patience'");
  EXPECT(ctorch_early_stopping_new(&es_dead, CTORCH_BEST_MAX, 1, NAN, 1, NULL, NULL, NULL), CTORCH_INVALID_ARGUMENT,
         "argument 'min_delta'");
  EXPECT(ctorch_early_stopping_new(&es_dead, CTORCH_BEST_MAX, 1, 0.0, 1, &thr, NULL, dead), CTORCH_INVALID_ARGUMENT,
         "argument 'model'");
  EXPECT(ctorch_early_stopping_step(NULL, NULL, es, 1.0), CTORCH_INVALID_ARGUMENT, "argument 'should_stop'");
  EXPECT(ctorch_early_stopping_step(&stop, NULL, NULL, 1.0), CTORCH_INVALID_ARGUMENT, "argument 'es'");
  EXPECT(ctorch_early_stopping_step(&stop, NULL, (ctorch_early_stopping)lin, 1.0), CTORCH_INVALID_ARGUMENT,
         "is a ctorch_nn_module handle, not a ctorch_early_stopping");
  EXPECT(ctorch_early_stopping_restore(es), CTORCH_VALUE, "no model was given");
  {
    ctorch_early_stopping with_model = NULL;
    OK(ctorch_early_stopping_new(&with_model, CTORCH_BEST_MIN, 1, 0.0, 1, NULL, NULL, lin));
    EXPECT(ctorch_early_stopping_restore(with_model), CTORCH_VALUE, "no value has improved yet");
    OK(ctorch_early_stopping_step(&stop, NULL, with_model, NAN)); /* non-finite: a stop, not an improvement */
    if (!stop) fprintf(stderr, "NaN with check_finite did not stop\n"), ++failures;
    EXPECT(ctorch_early_stopping_restore(with_model), CTORCH_VALUE, "no value has improved yet");
    ctorch_early_stopping_free(with_model);
    EXPECT(ctorch_early_stopping_restore(with_model), CTORCH_INVALID_ARGUMENT, "is not a live ctorch_early_stopping");
  }
  EXPECT(ctorch_early_stopping_best(NULL, NULL, NULL, NULL), CTORCH_INVALID_ARGUMENT, "argument 'es'");
  ctorch_early_stopping_free(es);
  ctorch_early_stopping_free(es); /* a second free: refused, harmless */
  if (!strstr(ctorch_last_error(), "nothing was freed")) fprintf(stderr, "double free not reported\n"), ++failures;
  ctorch_early_stopping_free(NULL);

  /* ---- profiler ---- */
  EXPECT(ctorch_profiler_start(NULL, 0), CTORCH_INVALID_ARGUMENT, "argument 'out'");
  OK(ctorch_profiler_start(&prof, 0));
  EXPECT(ctorch_profiler_start(&prof2, 0), CTORCH_RUNTIME, "already recording on this thread");
  EXPECT(ctorch_profiler_export_chrome_trace(prof, "/tmp/x.json"), CTORCH_RUNTIME, "still recording");
  EXPECT(ctorch_profiler_table(&table, prof, NULL, -1), CTORCH_RUNTIME, "still recording");
  {
    pthread_t th;
    stop_arg a = {prof, CTORCH_OK};
    pthread_create(&th, NULL, stop_elsewhere, &a);
    pthread_join(th, NULL);
    expect(a.st, CTORCH_RUNTIME, NULL, "ctorch_profiler_stop from another thread", __LINE__);
  }
  OK(ctorch_profiler_stop(prof));
  EXPECT(ctorch_profiler_stop(prof), CTORCH_RUNTIME, "already stopped");
  EXPECT(ctorch_profiler_table(&table, prof, "flops", -1), CTORCH_INVALID_ARGUMENT, "argument 'sort_by'");
  EXPECT(ctorch_profiler_table(NULL, prof, NULL, -1), CTORCH_INVALID_ARGUMENT, "argument 'out'");
  EXPECT(ctorch_profiler_export_chrome_trace(prof, NULL), CTORCH_INVALID_ARGUMENT, "argument 'path'");
  EXPECT(ctorch_profiler_export_chrome_trace(prof, "/nonexistent-dir/x/trace.json"), CTORCH_IO, "argument 'path'");
  EXPECT(ctorch_profiler_stop((ctorch_profiler)seq), CTORCH_INVALID_ARGUMENT, "not a ctorch_profiler");
  OK(ctorch_profiler_table(&table, prof, NULL, 0));
  ctorch_string_free(table);
  ctorch_profiler_free(prof);
  EXPECT(ctorch_profiler_stop(prof), CTORCH_INVALID_ARGUMENT, "is not a live ctorch_profiler");
  /* freed while recording on this thread: the next start works */
  OK(ctorch_profiler_start(&prof, 0));
  ctorch_profiler_free(prof);
  OK(ctorch_profiler_start(&prof, 0));
  OK(ctorch_profiler_stop(prof));
  ctorch_profiler_free(prof);
  {
    /* freed from another thread while its own thread records: refused
     * stops are not needed, the handle goes, nothing crashes */
    pthread_t th;
    ctorch_profiler other = NULL;
    pthread_create(&th, NULL, start_and_leave, &other);
    pthread_join(th, NULL);
    ctorch_profiler_free(other);
  }

  ctorch_tensor_free(x);
  ctorch_nn_module_free(seq);
  ctorch_nn_module_free(lin);
  if (failures) {
    fprintf(stderr, "%d failure case(s) did not behave\n", failures);
    return 1;
  }
  printf("ERRORS ok\n");
  return 0;
}
