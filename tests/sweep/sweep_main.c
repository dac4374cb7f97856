/* The sweep's driver: runs recipes of every generated function in child
 * processes and classifies each call (docs/guarantees.md, "The sweep").
 *
 * One child per function (fork, no exec: the parent never runs an operator,
 * so no thread pool exists when it forks). The child reports each recipe's
 * start, its argument text and its end over a pipe; when it dies (signal,
 * sanitizer exit) or overruns the per-recipe timeout, the recipe in flight
 * gets that class and a new child goes on with the next recipe. Usage:
 *   ctorch_sweep [--budget | --long SECONDS] [--op NAME] [--recipe K]
 *                [--jobs N] [--timeout S] [--failures FILE] [--list]
 *                [--nulls FILE]  (appends every result NULL with CTORCH_OK)
 *                [--device cpu|cuda]
 * Last line: "N passed, M failed" over the functions run, not counting
 * those ops.json flags unsafe (listed separately).
 *
 * --device cuda: the same recipes with their strided tensor inputs on
 * cuda:0 (sweep_tensors.c). The parent never initialises CUDA (a child
 * forked after its parent did gets "initialization error" from every CUDA
 * call): a first child checks that cuda:0 works, and without it the sweep
 * prints "skipped: no CUDA device" and exits 77. A CUDA error is sticky
 * (after a device-side assert every later call in the process fails), so a
 * recipe whose status message says "CUDA error" or "device-side assert", or
 * after which synchronising does, is classed "CUDA error (context lost)" and
 * its child ends there, the next recipe starting in a fresh process. That
 * class is listed but not counted as a failure: the call returned a status,
 * as the contract asks (a kernel's device-side assert on bad indices is how
 * CUDA reports what the CPU reports as INDEX). Crashes, timeouts and
 * contract violations count as on the CPU. */
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sweep_internal.h"

extern void __asan_init(void) __attribute__((weak));
#define SANITIZED (&__asan_init != NULL)

/* ---- classes ----------------------------------------------------------------- */
/* C_CUDA_LOST is a status (see the top): after the statuses, before the
 * failures. */
enum { C_CUDA_LOST = CTORCH_UNKNOWN + 1, C_CRASH, C_SANITIZER, C_TIMEOUT, C_CONTRACT, C_EXIT, N_CLASSES };
static const char *class_name(int c) {
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
static int is_failure(int c) { return c >= C_CRASH; }

/* ---- child protocol ---------------------------------------------------------- */
enum { EV_BEGIN = 1, EV_DESC, EV_END };
typedef struct msg {
  int32_t k;      /* index into the job's recipe list */
  int32_t event;
  int32_t value;  /* EV_END: status, or C_CONTRACT */
  char text[3000];
} msg;

static int child_fd = -1;
static int child_k;
static int device_cuda; /* --device cuda */

/* A status message that says the CUDA context is gone (sticky errors). */
static int cuda_lost_message(const char *m) {
  return m && (strstr(m, "CUDA error") || strstr(m, "device-side assert"));
}

/* What each child sets up before its first recipe. */
static void child_setup(void) {
  if (!SANITIZED) {
    /* Huge sizes must fail as allocations, not fill the machine. CUDA's
     * runtime maps more (its host-side heaps and pinned staging), hence a
     * higher limit with --device cuda. */
    rlim_t lim = (rlim_t)(device_cuda ? 8 : 3) << 30;
    struct rlimit rl = {lim, lim};
    setrlimit(RLIMIT_DATA, &rl);
  }
  sw_cuda = device_cuda;
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
static int print_arguments;
void sw_report_arguments(void) {
  if (child_fd >= 0) send_msg(EV_DESC, 0, sw_recipe_text());
  if (print_arguments) {
    printf("  arguments: %s\n", sw_recipe_text());
    fflush(stdout);
  }
}

static void child_run(int op_index, const long *recipes, int n, int start, int fd, int err_fd) {
  /* Its own process group: whatever an operator signals or spawns stays with
   * it, and a timeout kills the whole group. */
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  dup2(err_fd, 2);
  dup2(err_fd, 1);
  child_setup();
  child_fd = fd;
  const sw_op *op = &sw_ops[op_index];
  for (int k = start; k < n; ++k) {
    child_k = k;
    send_msg(EV_BEGIN, 0, NULL);
    sw_recipe_begin(op, op_index, recipes[k], 1);
    ctorch_status st = op->call();
    const char *v = sw_contract_violation();
    char last[256];
    snprintf(last, sizeof last, "%s", st != CTORCH_OK ? ctorch_last_error() : "");
    char viol[600];
    if (v) snprintf(viol, sizeof viol, "%s", v);
    if (device_cuda && !v) {
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
  _exit(0);
}

/* ---- results ------------------------------------------------------------------- */
typedef struct failure {
  int op;
  long recipe;
  int cls;
  char *detail;
  char *args;
  struct failure *next;
} failure;

static long class_calls[N_CLASSES];
static int *op_fail_count, *op_ran;
static failure *failures, **fail_tail = &failures;
static failure *cuda_lost, **cuda_lost_tail = &cuda_lost; /* C_CUDA_LOST, listed, not counted */
static long cuda_lost_count;
static long total_calls;
static int jobs_started, failing_ops;

static void record(int op, long recipe, int cls, const char *detail, const char *args) {
  ++total_calls;
  ++class_calls[cls];
  op_ran[op] = 1;
  if (!is_failure(cls) && cls != C_CUDA_LOST) return;
  failure *f = calloc(1, sizeof *f);
  f->op = op;
  f->recipe = recipe;
  f->cls = cls;
  f->detail = strdup(detail ? detail : "");
  f->args = strdup(args ? args : "");
  if (cls == C_CUDA_LOST) {
    ++cuda_lost_count;
    *cuda_lost_tail = f;
    cuda_lost_tail = &f->next;
    return;
  }
  if (!op_fail_count[op]++) ++failing_ops;
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
typedef struct job {
  int op;
  long *recipes;
  int n;
} job;

typedef struct worker {
  pid_t pid;
  int fd;
  job j;
  int pos;        /* next recipe index to (re)start from */
  int in_flight;  /* recipe index begun, not ended, or -1 */
  double began;
  char err_path[256];
  char args[3000];
  char buf[sizeof(msg) * 2];
  size_t have;
} worker;

static double timeout_s = 20.0;
static char tmpdir[128];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void spawn(worker *w) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    perror("sweep: pipe");
    exit(2);
  }
  int err = open(w->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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
    child_run(w->j.op, w->j.recipes, w->j.n, w->pos, p[1], err);
  }
  close(p[1]);
  close(err);
  w->pid = pid;
  w->fd = p[0];
  w->in_flight = -1;
  w->have = 0;
  w->args[0] = 0;
}

/* The child is gone (EOF or killed): classify what was in flight. */
static void reap(worker *w, int timed_out) {
  int status = 0;
  if (timed_out) {
    kill(-w->pid, SIGKILL);
    kill(w->pid, SIGKILL);
  }
  while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {
  }
  close(w->fd);
  w->fd = -1;
  w->pid = 0;
  int normal = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (w->in_flight < 0) {
    if (!normal && !timed_out) {
      char why[600];
      int cls = C_EXIT;
      explain(w->err_path, &cls, why, sizeof why);
      record(w->j.op, -1, cls, why, "(between recipes)");
    }
    /* A normal exit: done, or ended after a CUDA error (pos is then the
     * next recipe, which a fresh child starts from). Otherwise nothing left
     * to attribute: done. */
    if (!normal) w->pos = w->j.n;
    return;
  }
  long r = w->j.recipes[w->in_flight];
  char why[600] = "";
  int cls;
  if (timed_out) {
    cls = C_TIMEOUT;
    snprintf(why, sizeof why, "no answer after %.0f s", timeout_s);
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
    w->began = now();
    w->args[0] = 0;
  } else if (m->event == EV_DESC) {
    snprintf(w->args, sizeof w->args, "%s", m->text);
  } else if (m->event == EV_END) {
    record(w->j.op, w->j.recipes[m->k], m->value, m->value == C_CONTRACT || m->value == C_CUDA_LOST ? m->text : NULL,
           w->args);
    w->in_flight = -1;
    w->pos = m->k + 1;
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

typedef int (*next_job_fn)(job *j);

static double progress_every = 60.0;

static void run_jobs(int jobs, next_job_fn next, double deadline) {
  worker *ws = calloc((size_t)jobs, sizeof *ws);
  int active = 0, more = 1;
  double t_start = now(), t_progress = t_start;
  for (int k = 0; k < jobs; ++k) {
    snprintf(ws[k].err_path, sizeof ws[k].err_path, "%s/worker%d.err", tmpdir, k);
    ws[k].fd = -1;
  }
  for (;;) {
    for (int k = 0; k < jobs; ++k) {
      worker *w = &ws[k];
      if (w->fd >= 0) continue;
      if (w->j.recipes && w->pos < w->j.n) {
        spawn(w);
        continue;
      }
      free(w->j.recipes);
      w->j.recipes = NULL;
      if (more && (deadline <= 0 || now() < deadline)) {
        job j;
        if (next(&j)) {
          ++jobs_started;
          w->j = j;
          w->pos = 0;
          spawn(w);
        } else {
          more = 0;
        }
      }
    }
    struct pollfd pf[64];
    int map[64];
    active = 0;
    double t = now(), wait_s = 1.0;
    for (int k = 0; k < jobs; ++k) {
      if (ws[k].fd < 0) continue;
      pf[active].fd = ws[k].fd;
      pf[active].events = POLLIN;
      map[active++] = k;
      if (ws[k].in_flight >= 0) {
        double left = ws[k].began + timeout_s - t;
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
    t = now();
    for (int k = 0; k < jobs; ++k)
      if (ws[k].fd >= 0 && ws[k].in_flight >= 0 && t - ws[k].began > timeout_s) reap(&ws[k], 1);
    if (t - t_progress > progress_every) {
      t_progress = t;
      fprintf(stderr, "sweep: %.0f s, %d jobs started (now %s), %ld calls, %d functions failing\n", t - t_start,
              jobs_started, sw_ops[ws[0].j.op].c_name, total_calls, failing_ops);
    }
  }
  free(ws);
}

/* ---- what to run -------------------------------------------------------------- */
static int only_op = -1, include_unsafe_in_count = 0;
static char *op_mask; /* --op NAME[,NAME...]: the functions to run, or NULL for all */
static long only_recipe = -1;
static int sample = 1;        /* mutation recipes kept: 1 in `sample` */
static long random_batch = 0; /* long mode: random recipes per function per round */
static int next_op, round_no, long_mode;

static int public_only; /* --public-only: leave out internal functions (a GPU run's time budget) */
static int selected(int i) { return (!op_mask || op_mask[i]) && !(public_only && (sw_ops[i].flags & SW_INTERNAL)); }

static int keep(const sw_op *op, long r) {
  if (sample <= 1 || r < sw_n_themes()) return 1; /* every theme */
  return sw_mix(sw_hash_str(op->c_name) ^ (uint64_t)r) % (uint64_t)sample == 0;
}

static int next_fixed(job *j) {
  while (next_op < sw_n_ops && !selected(next_op)) ++next_op;
  if (next_op >= sw_n_ops) return 0;
  const sw_op *op = &sw_ops[next_op];
  int nf = sw_fixed_recipes(op);
  j->op = next_op++;
  j->recipes = malloc(sizeof(long) * (size_t)(nf ? nf : 1));
  j->n = 0;
  if (only_recipe >= 0) {
    j->recipes[j->n++] = only_recipe;
    return 1;
  }
  for (long r = 0; r < nf; ++r)
    if (keep(op, r)) j->recipes[j->n++] = r;
  return 1;
}

/* Long mode, after the fixed recipes: rounds of random recipes. */
static int next_random(job *j) {
  for (;;) {
    if (next_op >= sw_n_ops) {
      next_op = 0;
      ++round_no;
    }
    int i = next_op++;
    if (!selected(i)) continue;
    const sw_op *op = &sw_ops[i];
    long base = sw_fixed_recipes(op) + (long)round_no * random_batch;
    j->op = i;
    j->n = (int)random_batch;
    j->recipes = malloc(sizeof(long) * (size_t)random_batch);
    for (long k = 0; k < random_batch; ++k) j->recipes[k] = base + k;
    return 1;
  }
}

static int fixed_done;
static int next_long(job *j) {
  if (!fixed_done) {
    if (next_fixed(j)) return 1;
    fixed_done = 1;
    next_op = 0;
  }
  return next_random(j);
}

/* --op NAME --recipe K: one call, described, in a child. */
static int run_one(void) {
  const sw_op *op = &sw_ops[only_op];
  printf("%s (%s)\n  schema: %s\n  recipe %ld (%s)\n", op->c_name, op->flags & SW_INTERNAL ? "internal" : "public",
         op->schema, only_recipe, sw_recipe_theme(op, only_recipe));
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    child_setup();
    sw_recipe_begin(op, only_op, only_recipe, 1);
    print_arguments = 1;
    ctorch_status st = op->call();
    printf("  status: %s%s%s\n", ctorch_status_name(st),
           st ? "\n  message: " : "", st ? ctorch_last_error() : "");
    if (sw_contract_violation()) printf("  CONTRACT VIOLATION: %s\n", sw_contract_violation());
    if (device_cuda && ctorch_cuda_synchronize_all() != CTORCH_OK)
      printf("  after the call, synchronising cuda failed: %s\n", ctorch_last_error());
    fflush(stdout);
    sw_recipe_end();
    _exit(sw_contract_violation() ? 4 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    printf("  CRASH: %s\n", strsignal(WTERMSIG(status)));
    return 1;
  }
  if (WEXITSTATUS(status) == 86) printf("  SANITIZER REPORT (above)\n");
  return WEXITSTATUS(status) != 0;
}

static void usage(void) {
  fprintf(stderr,
          "usage: ctorch_sweep [--budget | --long SECONDS] [--sample N] [--op NAME[,NAME...] | --op NAME --recipe K]\n"
          "                    [--jobs N] [--timeout S] [--failures FILE] [--list] [--device cpu|cuda]\n"
          "                    [--nulls FILE]\n"
          "                    [--public-only] [--max-seconds S]\n");
  exit(2);
}

/* Sanitizer options must be in the environment before the process starts:
 * set them and re-execute once. */
static void ensure_env(char **argv) {
  if (getenv("CTORCH_SWEEP_ENV")) return;
  char buf[1024];
  const char *a = getenv("ASAN_OPTIONS");
  /* exitcode 86: a report, told apart from crashes and other exits.
   * allocator_may_return_null + max_allocation_size_mb: a huge size is an
   * allocation failure libtorch reports, not an abort nor a full machine.
   * hard_rss_limit_mb: many moderate allocations still stop somewhere. */
  snprintf(buf, sizeof buf,
           "exitcode=86:halt_on_error=1:allocator_may_return_null=1:max_allocation_size_mb=2048:"
           "hard_rss_limit_mb=3072:detect_leaks=0:handle_abort=1%s%s",
           a ? ":" : "", a ? a : "");
  setenv("ASAN_OPTIONS", buf, 1);
  const char *u = getenv("UBSAN_OPTIONS");
  snprintf(buf, sizeof buf, "exitcode=86:halt_on_error=1:print_stacktrace=1%s%s", u ? ":" : "", u ? u : "");
  setenv("UBSAN_OPTIONS", buf, 1);
  if (!SANITIZED && !getenv("CTORCH_SWEEP_NO_MALLOC_CHECK") &&
      access("/lib/x86_64-linux-gnu/libc_malloc_debug.so.0", R_OK) == 0) {
    /* Without ASan, glibc's checking malloc catches writes past a block at
     * its free (each recipe frees everything before it reports). */
    setenv("LD_PRELOAD", "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0", 1);
    setenv("GLIBC_TUNABLES", "glibc.malloc.check=3", 1);
  }
  setenv("CTORCH_SWEEP_ENV", "1", 1);
  execv("/proc/self/exe", argv);
  perror("sweep: re-exec");
}

/* --device cuda: whether cuda:0 works, asked in a child (the parent must
 * not initialise CUDA before it forks the workers). 1 if it does; else 0,
 * and why in `why`. */
static int cuda_usable(char *why, size_t cap) {
  int p[2];
  snprintf(why, cap, "the check did not answer");
  if (pipe2(p, O_CLOEXEC) != 0) return 0;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    char msg_[512] = "";
    int n = 0, ok = 0;
    close(p[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    child_setup();
    if (ctorch_cuda_device_count(&n) != CTORCH_OK) {
      snprintf(msg_, sizeof msg_, "%s", ctorch_last_error());
    } else if (n == 0) {
      snprintf(msg_, sizeof msg_, "no CUDA device visible to libtorch");
    } else {
      ctorch_tensor t = NULL;
      const int64_t one = 1;
      const ctorch_dtype f32 = CTORCH_FLOAT32;
      const ctorch_device d = {CTORCH_DEVICE_CUDA, 0};
      if (ctorch_zeros(&t, &one, 1, &f32, NULL, &d, NULL) != CTORCH_OK || ctorch_cuda_synchronize_all() != CTORCH_OK)
        snprintf(msg_, sizeof msg_, "cuda:0 does not work: %s", ctorch_last_error());
      else
        ok = 1;
      ctorch_tensor_free(t);
    }
    if (write(p[1], msg_, strlen(msg_) + 1) < 0) _exit(3);
    _exit(ok ? 0 : 1);
  }
  close(p[1]);
  char buf[512] = "";
  size_t have = 0;
  struct pollfd pf = {p[0], POLLIN, 0};
  double until = now() + 120;
  while (have < sizeof buf - 1) {
    double left = until - now();
    if (left <= 0) break;
    int rc = poll(&pf, 1, (int)(left * 1000) + 1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) break;
    ssize_t r = read(p[0], buf + have, sizeof buf - 1 - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    have += (size_t)r;
  }
  buf[have] = 0;
  close(p[0]);
  kill(pid, SIGKILL); /* gone already, unless it hung */
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) {
    if (buf[0]) snprintf(why, cap, "%s", buf);
    else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) snprintf(why, cap, "the check died: %s", strsignal(WTERMSIG(status)));
  }
  return ok;
}

int main(int argc, char **argv) {
  int jobs = 2, list = 0;
  double long_s = 0, max_s = 0; /* --max-seconds: start no function after that (fixed recipes) */
  const char *failures_path = NULL, *op_name = NULL;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--budget")) sample = 3;
    else if (!strcmp(a, "--long") && v) long_s = atof(v), ++i;
    else if (!strcmp(a, "--sample") && v) sample = atoi(v), ++i;
    else if (!strcmp(a, "--max-seconds") && v) max_s = atof(v), ++i;
    else if (!strcmp(a, "--public-only")) public_only = 1;
    else if (!strcmp(a, "--op") && v) op_name = v, ++i;
    else if (!strcmp(a, "--recipe") && v) only_recipe = atol(v), ++i;
    else if (!strcmp(a, "--jobs") && v) jobs = atoi(v), ++i;
    else if (!strcmp(a, "--timeout") && v) timeout_s = atof(v), ++i;
    else if (!strcmp(a, "--failures") && v) failures_path = v, ++i;
    else if (!strcmp(a, "--nulls") && v) setenv("CTORCH_SWEEP_NULLS", v, 1), ++i; /* sweep_check.c */
    else if (!strcmp(a, "--list")) list = 1;
    else if (!strcmp(a, "--device") && v && (!strcmp(v, "cpu") || !strcmp(v, "cuda"))) device_cuda = !strcmp(v, "cuda"), ++i;
    else usage();
  }
  if (jobs < 1 || jobs > 64) usage();
  ensure_env(argv);
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (op_name) {
    op_mask = calloc((size_t)sw_n_ops, 1);
    char *names = strdup(op_name), *save = NULL;
    int n = 0;
    for (char *tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      int found = -1;
      for (int i = 0; i < sw_n_ops; ++i)
        if (!strcmp(sw_ops[i].c_name, tok)) found = i;
      if (found < 0) {
        fprintf(stderr, "sweep: no generated function %s\n", tok);
        return 2;
      }
      op_mask[found] = 1;
      only_op = found;
      ++n;
    }
    free(names);
    if (n != 1) only_op = -1;
    if (only_recipe >= 0 && n != 1) usage();
  }
  if (list) {
    long total = 0;
    for (int i = 0; i < sw_n_ops; ++i) {
      if (!selected(i)) continue;
      int n = sw_fixed_recipes(&sw_ops[i]);
      total += n;
      printf("%s\t%s\t%d recipes%s%s\n", sw_ops[i].c_name, sw_ops[i].flags & SW_INTERNAL ? "internal" : "public", n,
             sw_ops[i].unsafe ? "\tUNSAFE: " : "", sw_ops[i].unsafe ? sw_ops[i].unsafe : "");
    }
    printf("%ld fixed recipes\n", total);
    return 0;
  }
  if (device_cuda) {
    char why[600];
    if (!cuda_usable(why, sizeof why)) {
      printf("skipped: no CUDA device\n");
      fprintf(stderr, "sweep: --device cuda: %s\n", why);
      return 77;
    }
  }
  if (only_op >= 0 && only_recipe >= 0) return run_one();

  snprintf(tmpdir, sizeof tmpdir, "/tmp/ctorch-sweep.%d", (int)getpid());
  mkdir(tmpdir, 0700);
  op_fail_count = calloc((size_t)sw_n_ops, sizeof(int));
  op_ran = calloc((size_t)sw_n_ops, sizeof(int));
  const char *torch = "?";
  double t0 = now();
  if (long_s > 0) {
    long_mode = 1;
    random_batch = 20;
    run_jobs(jobs, next_long, t0 + long_s);
  } else {
    run_jobs(jobs, next_fixed, max_s > 0 ? t0 + max_s : 0);
  }
  double elapsed = now() - t0;
  (void)ctorch_torch_version(&torch);

  /* ---- the table ---- */
  long class_fns[N_CLASSES] = {0};
  int pub = 0, internal = 0;
  for (int i = 0; i < sw_n_ops; ++i)
    if (op_ran[i]) (sw_ops[i].flags & SW_INTERNAL) ? ++internal : ++pub;
  for (failure *f = failures; f; f = f->next) {
    int seen = 0;
    for (failure *g = failures; g != f; g = g->next)
      if (g->op == f->op && g->cls == f->cls) seen = 1;
    if (!seen) ++class_fns[f->cls];
  }
  printf("sweep: libtorch %s, %s%s%s, %d functions (%d public, %d internal), %ld calls in %.0f s (%.0f calls/s)\n",
         torch, SANITIZED ? "ASan+UBSan build" : "plain build (glibc malloc checks)",
         long_mode ? ", long mode" : sample > 1 ? ", budget mode" : "", device_cuda ? ", CUDA tensors (cuda:0)" : "",
         pub + internal, pub, internal, total_calls, elapsed, elapsed > 0 ? total_calls / elapsed : 0.0);
  if (max_s > 0) {
    int chosen = 0;
    for (int i = 0; i < sw_n_ops; ++i) chosen += selected(i);
    if (pub + internal < chosen)
      printf("sweep: stopped at --max-seconds %.0f: %d of the %d chosen functions ran (the rest in order: from %s)\n",
             max_s, pub + internal, chosen, next_op < sw_n_ops ? sw_ops[next_op].c_name : "-");
  }
  printf("  %-24s %10s %10s\n", "class", "calls", "functions");
  for (int c = 0; c < N_CLASSES; ++c) {
    if (!class_calls[c] && c > CTORCH_OK && !is_failure(c) && !(c == C_CUDA_LOST && device_cuda)) continue;
    if (is_failure(c))
      printf("  %-24s %10ld %10ld\n", class_name(c), class_calls[c], class_fns[c]);
    else
      printf("  %-24s %10ld\n", class_name(c), class_calls[c]);
  }
  FILE *ff = failures_path ? fopen(failures_path, "w") : NULL;
  int passed = 0, failed = 0, unsafe_failed = 0, unsafe_passed = 0;
  for (int i = 0; i < sw_n_ops; ++i) {
    if (!op_ran[i]) continue;
    const sw_op *op = &sw_ops[i];
    if (op->unsafe && !include_unsafe_in_count) {
      op_fail_count[i] ? ++unsafe_failed : ++unsafe_passed;
      continue;
    }
    op_fail_count[i] ? ++failed : ++passed;
  }
  const char *repro_base = getenv("CTORCH_SWEEP_REPRO") ? getenv("CTORCH_SWEEP_REPRO") : "ctorch_sweep";
  char repro[600];
  snprintf(repro, sizeof repro, "%s%s", repro_base, device_cuda ? " --device cuda" : "");
  int shown_ops = 0;
  for (int i = 0; i < sw_n_ops; ++i) {
    if (!op_fail_count[i]) continue;
    const sw_op *op = &sw_ops[i];
    int shown = 0;
    if (op->unsafe) {
      /* Known: one line each, the failures still go to the TSV. */
      for (failure *f = failures; f; f = f->next)
        if (f->op == i && ff)
          fprintf(ff, "%s\t%ld\t%s\t%s\t%s\tunsafe\n", op->c_name, f->recipe, class_name(f->cls), f->detail, f->args);
      printf("unsafe (flagged, not counted) %s: %d failing recipes\n", op->c_name, op_fail_count[i]);
      continue;
    }
    if (shown_ops++ < 200 || ff)
      for (failure *f = failures; f; f = f->next) {
        if (f->op != i) continue;
        if (ff)
          fprintf(ff, "%s\t%ld\t%s\t%s\t%s\t%s\n", op->c_name, f->recipe, class_name(f->cls), f->detail, f->args,
                  op->unsafe ? "unsafe" : op->flags & SW_INTERNAL ? "internal" : "public");
        if (shown++ >= 3 || shown_ops > 200) continue;
        printf("FAIL %s%s%s recipe %ld (%s): %s: %s\n     args: %.300s\n     repro: %s --op %s --recipe %ld\n",
               op->c_name, op->flags & SW_INTERNAL ? " [internal]" : "", op->unsafe ? " [flagged unsafe]" : "",
               f->recipe, f->recipe >= 0 ? sw_recipe_theme(op, f->recipe) : "-", class_name(f->cls), f->detail,
               f->args, repro, op->c_name, f->recipe);
      }
    if (shown > 3 && shown_ops <= 200) printf("     (%d more failing recipes)\n", shown - 3);
  }
  /* CUDA errors (context lost): statuses, listed, not counted. */
  int shown_lost = 0;
  for (failure *f = cuda_lost; f; f = f->next) {
    const sw_op *op = &sw_ops[f->op];
    if (ff)
      fprintf(ff, "%s\t%ld\t%s\t%s\t%s\tcuda-lost\n", op->c_name, f->recipe, class_name(f->cls), f->detail, f->args);
    if (shown_lost++ < 100)
      printf("CUDA error (context lost, not counted) %s recipe %ld (%s): %.300s\n     args: %.300s\n     repro: %s --op %s "
             "--recipe %ld\n",
             op->c_name, f->recipe, f->recipe >= 0 ? sw_recipe_theme(op, f->recipe) : "-", f->detail, f->args, repro,
             op->c_name, f->recipe);
  }
  if (shown_lost > 100) printf("     (%d more CUDA errors (context lost), all in the failures file)\n", shown_lost - 100);
  if (device_cuda) printf("CUDA errors (context lost, not counted): %ld calls\n", cuda_lost_count);
  if (ff) fclose(ff);
  if (unsafe_failed + unsafe_passed)
    printf("flagged unsafe (not counted): %d still fail, %d no longer fail\n", unsafe_failed, unsafe_passed);
  /* tidy the per-worker logs */
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "sweep: could not remove %s\n", tmpdir);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
