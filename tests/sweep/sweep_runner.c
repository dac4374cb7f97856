/* The sweep's process machinery (sweep_runner.h): worker children that run
 * one function's recipes each and report over a pipe, the parent's poll
 * loop with the per-recipe timeout, and the classification of every call
 * (status, crash, sanitizer report, timeout, contract violation, unexpected
 * exit, CUDA context lost) into the results sweep_main.c prints.
 *
 * Worker children are forked (no exec: the parent never runs an operator,
 * so no thread pool exists when it forks); each runs the jobs (a function's
 * recipes) the parent sends it over a command pipe: one function per child
 * by default, many with --jobs-per-child (the CUDA sweep: one CUDA context
 * per child instead of one per function). The child reports each recipe's
 * start, its argument text and its end over a pipe; when it dies (signal,
 * sanitizer exit) or overruns the per-recipe timeout, the recipe in flight
 * gets that class and a new child goes on with the next recipe. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sweep_runner.h"

/* ---- classes ----------------------------------------------------------------- */
const char *sw_class_name(int c) {
  switch (c) {
    case C_CUDA_LOST: return "CUDA error (context lost)";
    case C_CRASH: return "crash (signal)";
    case C_SANITIZER: return "sanitizer report";
    case C_TIMEOUT: return "timeout";
    case C_CONTRACT: return "contract violation";
    case C_EXIT: return "unexpected exit";
  }
  return ctorch_status_name((ctorch_status)c);
}
int sw_is_failure(int c) { return c >= C_CRASH; }

/* ---- child protocol ---------------------------------------------------------- */
enum { EV_BEGIN = 1, EV_DESC, EV_END, EV_DONE };
typedef struct msg {
  int32_t k;      /* index into the job's recipe list */
  int32_t event;
  int32_t value;  /* EV_END: status, or C_CONTRACT */
  char text[3000];
} msg;

static int child_fd = -1;
static int child_k;
int sw_device_cuda; /* --device cuda */

/* A status message that says the CUDA context is gone (sticky errors). */
static int cuda_lost_message(const char *m) {
  return m && (strstr(m, "CUDA error") || strstr(m, "device-side assert"));
}

/* What each child sets up before its first recipe. */
void sw_child_setup(void) {
  if (!SANITIZED) {
    /* Huge sizes must fail as allocations, not fill the machine. CUDA's
     * runtime maps more (its host-side heaps and pinned staging), hence a
     * higher limit with --device cuda. */
    rlim_t lim = (rlim_t)(sw_device_cuda ? 8 : 3) << 30;
    struct rlimit rl = {lim, lim};
    setrlimit(RLIMIT_DATA, &rl);
  }
  sw_cuda = sw_device_cuda;
  ctorch_set_num_threads(1);
}

static void send_msg(int event, int value, const char *text) {
  msg m;
  memset(&m, 0, offsetof(msg, text));
  m.k = child_k;
  m.event = event;
  m.value = value;
  snprintf(m.text, sizeof m.text, "%s", text ? text : "");
  size_t n = offsetof(msg, text) + strlen(m.text) + 1;
  if (write(child_fd, &m, n) != (ssize_t)n) _exit(3);
}

/* Called by sw_before_call (sweep_check.c) once the arguments exist. */
int sw_print_arguments;
void sw_report_arguments(void) {
  if (child_fd >= 0) send_msg(EV_DESC, 0, sw_recipe_text());
  if (sw_print_arguments) {
    printf("  arguments: %s\n", sw_recipe_text());
    fflush(stdout);
  }
}

/* Runs recipes [start, n) of one function; returns normally when done, or
 * exits the process after a CUDA error (the parent restarts it after the
 * recipe that lost the context). */
static void run_recipes(int op_index, const long *recipes, int n, int start) {
  const sw_op *op = &sw_ops[op_index];
  for (int k = start; k < n; ++k) {
    child_k = k;
    send_msg(EV_BEGIN, 0, NULL);
    sw_recipe_begin(op, op_index, recipes[k], 1);
    ctorch_status st = sw_boxed ? op->boxed() : op->call();
    const char *v = sw_contract_violation();
    char last[256];
    snprintf(last, sizeof last, "%s", st != CTORCH_OK ? ctorch_last_error() : "");
    char viol[600];
    if (v) snprintf(viol, sizeof viol, "%s", v);
    if (sw_device_cuda && !v) {
      /* A kernel's error surfaces at the next synchronisation: here, so that
       * it is this recipe's. */
      int lost = st != CTORCH_OK && cuda_lost_message(last);
      if (!lost && ctorch_cuda_synchronize_all() != CTORCH_OK && cuda_lost_message(ctorch_last_error())) {
        snprintf(last, sizeof last, "after %s: %s", ctorch_status_name(st), ctorch_last_error());
        lost = 1;
      }
      if (lost) {
        /* Nothing more in this process: the next recipe gets a fresh one
         * (the parent restarts the child where it stopped). */
        send_msg(EV_END, C_CUDA_LOST, last);
        _exit(0);
      }
    }
    sw_recipe_end(); /* frees: heap corruption shows here, still inside the recipe */
    send_msg(EV_END, v ? C_CONTRACT : (int)st, v ? viol : last);
  }
}

/* A job on the command pipe: its header, then n recipe numbers. */
typedef struct job_cmd {
  int32_t op, start, n;
} job_cmd;

static int read_full(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    p += r;
    n -= (size_t)r;
  }
  return 1;
}

/* A worker child: jobs from the parent until it closes the command pipe.
 * With --jobs-per-child 1 (the CPU default) that is one function per
 * process; a CUDA sweep keeps its child, and with it the CUDA context, for
 * many functions (creating a context per function cost most of the first
 * GPU run's time budget). */
static void child_main(int cmd_fd, int fd, int err_fd) {
  /* Its own process group: whatever an operator signals or spawns stays with
   * it, and a timeout kills the whole group. */
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  dup2(err_fd, 2);
  dup2(err_fd, 1);
  sw_child_setup();
  child_fd = fd;
  job_cmd c;
  while (read_full(cmd_fd, &c, sizeof c)) {
    long *recipes = malloc(sizeof(long) * (size_t)(c.n ? c.n : 1));
    if (!recipes || !read_full(cmd_fd, recipes, sizeof(long) * (size_t)c.n)) _exit(4);
    run_recipes(c.op, recipes, c.n, c.start);
    free(recipes);
    child_k = -1;
    send_msg(EV_DONE, 0, NULL);
  }
  _exit(0);
}

/* ---- results ------------------------------------------------------------------- */
long sw_class_calls[N_CLASSES];
int *sw_op_fail_count, *sw_op_ran;
sw_failure *sw_failures;
static sw_failure **fail_tail = &sw_failures;
sw_failure *sw_cuda_lost;
static sw_failure **cuda_lost_tail = &sw_cuda_lost;
long sw_cuda_lost_count;
long sw_total_calls;
static int jobs_started, failing_ops;

static void record(int op, long recipe, int cls, const char *detail, const char *args) {
  ++sw_total_calls;
  ++sw_class_calls[cls];
  sw_op_ran[op] = 1;
  if (!sw_is_failure(cls) && cls != C_CUDA_LOST) return;
  sw_failure *f = calloc(1, sizeof *f);
  f->op = op;
  f->recipe = recipe;
  f->cls = cls;
  f->detail = strdup(detail ? detail : "");
  f->args = strdup(args ? args : "");
  if (cls == C_CUDA_LOST) {
    ++sw_cuda_lost_count;
    *cuda_lost_tail = f;
    cuda_lost_tail = &f->next;
    return;
  }
  if (!sw_op_fail_count[op]++) ++failing_ops;
  *fail_tail = f;
  fail_tail = &f->next;
}

/* What the child's stderr says about its death: the sanitizer's headline
 * and first frames, or glibc's last words. */
static void explain(const char *path, int *cls, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  out[0] = 0;
  if (!f) return;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  long from = size > 65536 ? size - 65536 : 0;
  fseek(f, from, SEEK_SET);
  static char buf[65537];
  size_t n = fread(buf, 1, 65536, f);
  buf[n] = 0;
  fclose(f);
  char *head = NULL, *p;
  if ((p = strstr(buf, "ERROR: AddressSanitizer: ")) || (p = strstr(buf, "ERROR: LeakSanitizer: ")) ||
      (p = strstr(buf, "runtime error: ")))
    head = p;
  if (head) {
    if (strstr(head, "SEGV on unknown address") || strstr(head, "deadly signal") || strstr(head, "BUS on") ||
        strstr(head, "FPE on") || strstr(head, "stack-overflow"))
      *cls = C_CRASH;
    else
      *cls = C_SANITIZER;
    size_t m = strcspn(head, "\n");
    snprintf(out, cap, "%.*s", (int)(m < 200 ? m : 200), head);
    /* first frames outside the sanitizer runtime */
    int frames = 0;
    for (char *q = strstr(head, "\n    #"); q && frames < 3; q = strstr(q + 1, "\n    #")) {
      char *in = strstr(q, " in ");
      char *eol = strchr(q + 1, '\n');
      if (!in || (eol && in > eol)) continue;
      in += 4;
      size_t len = strcspn(in, "\n(");
      if (len > 90) len = 90;
      size_t used = strlen(out);
      if (used + len + 8 < cap) snprintf(out + used, cap - used, " | %.*s", (int)len, in);
      ++frames;
    }
    return;
  }
  /* glibc's own checks (free(): invalid pointer, ...): the last line */
  while (n && (buf[n - 1] == '\n')) buf[--n] = 0;
  p = strrchr(buf, '\n');
  snprintf(out, cap, "%.200s", p ? p + 1 : buf);
}

/* ---- jobs and workers ---------------------------------------------------------- */
typedef struct worker {
  pid_t pid;
  int fd;         /* reports from the child; -1: no child */
  int cmd_fd;     /* jobs to the child; -1 once closed */
  int busy;       /* a job sent, its EV_DONE not yet read */
  int jobs_run;   /* jobs sent to this child */
  sw_job j;
  int pos;        /* next recipe index to (re)start from */
  int in_flight;  /* recipe index begun, not ended, or -1 */
  double began;
  char err_path[256];
  char args[3000];
  char buf[sizeof(msg) * 2];
  size_t have;
} worker;

double sw_timeout_s = 20.0;
int sw_jobs_per_child = 1;
char sw_tmpdir[128];

double sw_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sends the worker's job from w->pos to its child. */
static void send_job(worker *w) {
  job_cmd c = {w->j.op, w->pos, w->j.n};
  /* each job's stderr on its own: the log is opened O_APPEND, so the child
   * writes at the new end */
  if (truncate(w->err_path, 0) != 0) perror("sweep: truncate");
  if (write(w->cmd_fd, &c, sizeof c) != (ssize_t)sizeof c ||
      write(w->cmd_fd, w->j.recipes, sizeof(long) * (size_t)w->j.n) != (ssize_t)(sizeof(long) * (size_t)w->j.n)) {
    /* the child died before reading it: the EOF on its report pipe says so */
    close(w->cmd_fd);
    w->cmd_fd = -1;
  }
  w->busy = 1;
  ++w->jobs_run;
}

static void spawn(worker *w) {
  int p[2], c[2];
  if (pipe2(p, O_CLOEXEC) != 0 || pipe2(c, O_CLOEXEC) != 0) {
    perror("sweep: pipe");
    exit(2);
  }
  int err = open(w->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (err < 0) {
    perror("sweep: open");
    exit(2);
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    perror("sweep: fork");
    exit(2);
  }
  if (pid == 0) {
    close(p[0]);
    close(c[1]);
    child_main(c[0], p[1], err);
  }
  close(p[1]);
  close(c[0]);
  close(err);
  w->pid = pid;
  w->fd = p[0];
  w->cmd_fd = c[1];
  w->jobs_run = 0;
  w->in_flight = -1;
  w->have = 0;
  w->args[0] = 0;
  send_job(w);
}

/* The child is gone (EOF or killed): classify what was in flight. */
static void reap(worker *w, int timed_out) {
  int status = 0, was_busy = w->busy;
  if (timed_out) {
    kill(-w->pid, SIGKILL);
    kill(w->pid, SIGKILL);
  }
  while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {
  }
  close(w->fd);
  w->fd = -1;
  if (w->cmd_fd >= 0) close(w->cmd_fd);
  w->cmd_fd = -1;
  w->busy = 0;
  w->pid = 0;
  int normal = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (w->in_flight < 0) {
    if (!normal && !timed_out && was_busy) {
      char why[600];
      int cls = C_EXIT;
      explain(w->err_path, &cls, why, sizeof why);
      record(w->j.op, -1, cls, why, "(between recipes)");
    }
    /* A normal exit: done, or ended after a CUDA error (pos is then the
     * next recipe, which a fresh child starts from). Otherwise nothing left
     * to attribute: the job is done. (Not busy: the child ended between
     * jobs, and w->j may already be the next one, not started.) */
    if (!normal && was_busy) w->pos = w->j.n;
    return;
  }
  long r = w->j.recipes[w->in_flight];
  char why[600] = "";
  int cls;
  if (timed_out) {
    cls = C_TIMEOUT;
    snprintf(why, sizeof why, "no answer after %.0f s", sw_timeout_s);
  } else if (WIFSIGNALED(status)) {
    cls = C_CRASH;
    char more[400];
    int dummy = C_CRASH;
    explain(w->err_path, &dummy, more, sizeof more);
    snprintf(why, sizeof why, "%s%s%s", strsignal(WTERMSIG(status)), more[0] ? ": " : "", more);
  } else {
    cls = C_EXIT;
    char more[400];
    explain(w->err_path, &cls, more, sizeof more);
    snprintf(why, sizeof why, "exit %d%s%s", WIFEXITED(status) ? WEXITSTATUS(status) : -1, more[0] ? ": " : "",
             more);
  }
  record(w->j.op, r, cls, why, w->args);
  w->pos = w->in_flight + 1;
  w->in_flight = -1;
}

static void handle(worker *w, const msg *m) {
  if (m->event == EV_BEGIN) {
    w->in_flight = m->k;
    w->began = sw_now();
    w->args[0] = 0;
  } else if (m->event == EV_DESC) {
    snprintf(w->args, sizeof w->args, "%s", m->text);
  } else if (m->event == EV_END) {
    record(w->j.op, w->j.recipes[m->k], m->value, m->value == C_CONTRACT || m->value == C_CUDA_LOST ? m->text : NULL,
           w->args);
    w->in_flight = -1;
    w->pos = m->k + 1;
  } else if (m->event == EV_DONE) {
    w->pos = w->j.n;
    w->busy = 0;
  }
}

/* Reads what is there; returns 0 on EOF. */
static int drain(worker *w) {
  ssize_t r = read(w->fd, w->buf + w->have, sizeof w->buf - w->have);
  if (r <= 0) return r < 0 && errno == EINTR;
  w->have += (size_t)r;
  for (;;) {
    size_t fixed = offsetof(msg, text);
    if (w->have < fixed + 1) break;
    const char *nul = memchr(w->buf + fixed, 0, w->have - fixed);
    if (!nul) break;
    size_t len = (size_t)(nul - w->buf) + 1;
    msg m;
    memcpy(&m, w->buf, len);
    handle(w, &m);
    memmove(w->buf, w->buf + len, w->have - len);
    w->have -= len;
  }
  return 1;
}

static double progress_every = 60.0;

void sw_run_jobs(int jobs, sw_next_job_fn next, double deadline) {
  worker *ws = calloc((size_t)jobs, sizeof *ws);
  int active = 0, more = 1;
  double t_start = sw_now(), t_progress = t_start;
  for (int k = 0; k < jobs; ++k) {
    snprintf(ws[k].err_path, sizeof ws[k].err_path, "%s/worker%d.err", sw_tmpdir, k);
    ws[k].fd = -1;
    ws[k].cmd_fd = -1;
  }
  for (;;) {
    for (int k = 0; k < jobs; ++k) {
      worker *w = &ws[k];
      if (w->fd >= 0 && (w->busy || w->cmd_fd < 0)) continue; /* working, or told to end */
      if (w->fd < 0 && w->j.recipes && w->pos < w->j.n) {
        spawn(w); /* the rest of a job whose child died */
        continue;
      }
      free(w->j.recipes);
      w->j.recipes = NULL;
      sw_job j;
      int got = 0;
      if (more && (deadline <= 0 || sw_now() < deadline)) {
        if (next(&j)) got = 1;
        else more = 0;
      }
      if (!got || (w->fd >= 0 && w->jobs_run >= sw_jobs_per_child)) {
        /* no more work for this child (or it has done its share): closing
         * its command pipe ends it, and its EOF reaps it */
        if (w->fd >= 0) {
          close(w->cmd_fd);
          w->cmd_fd = -1;
        }
      }
      if (!got) continue;
      ++jobs_started;
      w->j = j;
      w->pos = 0;
      if (w->fd < 0) spawn(w);
      else if (w->cmd_fd >= 0) send_job(w);
      /* else: the old child is ending; once it is reaped, the next pass
       * spawns one for this job */
    }
    struct pollfd pf[64];
    int map[64];
    active = 0;
    double t = sw_now(), wait_s = 1.0;
    for (int k = 0; k < jobs; ++k) {
      if (ws[k].fd < 0) continue;
      pf[active].fd = ws[k].fd;
      pf[active].events = POLLIN;
      map[active++] = k;
      if (ws[k].in_flight >= 0) {
        double left = ws[k].began + sw_timeout_s - t;
        if (left < wait_s) wait_s = left;
      }
    }
    if (!active) break;
    if (wait_s < 0) wait_s = 0;
    int rc = poll(pf, (nfds_t)active, (int)(wait_s * 1000) + 1);
    if (rc < 0 && errno != EINTR) {
      perror("sweep: poll");
      exit(2);
    }
    for (int a = 0; a < active; ++a) {
      worker *w = &ws[map[a]];
      if (pf[a].revents & (POLLIN | POLLHUP | POLLERR)) {
        if (!drain(w)) reap(w, 0);
      }
    }
    t = sw_now();
    for (int k = 0; k < jobs; ++k)
      if (ws[k].fd >= 0 && ws[k].in_flight >= 0 && t - ws[k].began > sw_timeout_s) reap(&ws[k], 1);
    if (t - t_progress > progress_every) {
      t_progress = t;
      fprintf(stderr, "sweep: %.0f s, %d jobs started (now %s), %ld calls, %d functions failing\n", t - t_start,
              jobs_started, sw_ops[ws[0].j.op].c_name, sw_total_calls, failing_ops);
    }
  }
  free(ws);
}
