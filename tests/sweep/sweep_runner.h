/* The sweep's driver, split along its seam: sweep_runner.c runs recipes in
 * worker children and classifies every call; sweep_main.c chooses what to
 * run (the command line, the job lists) and prints the results. */
#ifndef CTORCH_SWEEP_RUNNER_H
#define CTORCH_SWEEP_RUNNER_H

#include "sweep_internal.h"

extern void __asan_init(void) __attribute__((weak));
#define SANITIZED (&__asan_init != NULL)

/* ---- classes: a call's ctorch_status, or one of these ------------------- */
/* C_CUDA_LOST is a status (see sweep_main.c's top): after the statuses,
 * before the failures. */
enum { C_CUDA_LOST = CTORCH_BUSY + 1, C_CRASH, C_SANITIZER, C_TIMEOUT, C_CONTRACT, C_EXIT, N_CLASSES };
const char *sw_class_name(int c);
int sw_is_failure(int c);

/* ---- settings (set by main before sw_run_jobs) --------------------------- */
extern int sw_device_cuda;      /* --device cuda */
extern double sw_timeout_s;     /* --timeout: per recipe */
extern int sw_jobs_per_child;   /* --jobs-per-child: functions a worker child runs before a fresh one */
extern char sw_tmpdir[128];     /* the workers' stderr logs */
extern int sw_print_arguments;  /* --op --recipe: print the argument text */

/* What each child sets up before its first recipe (memory limit, threads,
 * sw_cuda). */
void sw_child_setup(void);
double sw_now(void); /* monotonic seconds */

/* ---- jobs: one function's recipes, run by one child ---------------------- */
typedef struct sw_job {
  int op;
  long *recipes; /* malloc'ed; the runner frees it */
  int n;
} sw_job;
/* Fills *j with the next job; 0 when there is none. */
typedef int (*sw_next_job_fn)(sw_job *j);

/* Runs jobs from `next` on `jobs` workers until it has no more, starting no
 * job after `deadline` (sw_now() seconds; <= 0: none). */
void sw_run_jobs(int jobs, sw_next_job_fn next, double deadline);

/* ---- results (sw_run_jobs fills them) ------------------------------------ */
typedef struct sw_failure {
  int op;
  long recipe; /* -1: between recipes */
  int cls;
  char *detail;
  char *args;
  struct sw_failure *next;
} sw_failure;

extern long sw_class_calls[N_CLASSES];
extern int *sw_op_fail_count, *sw_op_ran; /* per function; main allocates them (sw_n_ops) */
extern sw_failure *sw_failures;           /* the failing calls, in order */
extern sw_failure *sw_cuda_lost;          /* C_CUDA_LOST: listed, not counted */
extern long sw_cuda_lost_count;
extern long sw_total_calls;

#endif
