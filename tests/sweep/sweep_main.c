/* The sweep's driver: runs recipes of every generated function in child
 * processes and classifies each call (docs/guarantees.md, "The sweep").
 * This file chooses what runs (the command line, the job lists) and prints
 * the results; sweep_runner.c runs the children and classifies. Usage:
 *   ctorch_sweep [--budget | --long SECONDS] [--op NAME] [--recipe K]
 *                [--jobs N] [--jobs-per-child N] [--timeout S] [--failures FILE] [--list]
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sweep_runner.h"

/* ---- what to run -------------------------------------------------------------- */
static int only_op = -1, include_unsafe_in_count = 0;
static char *op_mask; /* --op NAME[,NAME...]: the functions to run, or NULL for all */
static long only_recipe = -1;
static int sample = 1;        /* mutation recipes kept: 1 in `sample` */
static long random_batch = 0; /* long mode: random recipes per function per round */
static int next_op, round_no, long_mode;

static int public_only; /* --public-only: leave out internal functions (a GPU run's time budget) */
static int selected(int i) {
  return (!op_mask || op_mask[i]) && !(public_only && (sw_ops[i].flags & SW_INTERNAL)) &&
         (sw_boxed || !(sw_ops[i].flags & SW_BOXED_ONLY));
}

static int keep(const sw_op *op, long r) {
  if (sample <= 1 || r < sw_n_themes()) return 1; /* every theme */
  return sw_mix(sw_hash_str(op->c_name) ^ (uint64_t)r) % (uint64_t)sample == 0;
}

static int next_fixed(sw_job *j) {
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
static int next_random(sw_job *j) {
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
static int next_long(sw_job *j) {
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
    sw_child_setup();
    sw_recipe_begin(op, only_op, only_recipe, 1);
    sw_print_arguments = 1;
    ctorch_status st = sw_boxed ? op->boxed() : op->call();
    printf("  status: %s%s%s\n", ctorch_status_name(st),
           st ? "\n  message: " : "", st ? ctorch_last_error() : "");
    if (sw_contract_violation()) printf("  CONTRACT VIOLATION: %s\n", sw_contract_violation());
    if (sw_device_cuda && ctorch_cuda_synchronize_all() != CTORCH_OK)
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
          "                    [--jobs N] [--jobs-per-child N] [--timeout S] [--failures FILE] [--list] [--device cpu|cuda]\n"
          "                    [--nulls FILE] [--boxed]\n"
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
    sw_child_setup();
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
  double until = sw_now() + 120;
  while (have < sizeof buf - 1) {
    double left = until - sw_now();
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
  int jobs = 2, list = 0, per_child = 0;
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
    else if (!strcmp(a, "--timeout") && v) sw_timeout_s = atof(v), ++i;
    else if (!strcmp(a, "--jobs-per-child") && v) per_child = atoi(v), ++i;
    else if (!strcmp(a, "--failures") && v) failures_path = v, ++i;
    else if (!strcmp(a, "--nulls") && v) setenv("CTORCH_SWEEP_NULLS", v, 1), ++i; /* sweep_check.c */
    else if (!strcmp(a, "--list")) list = 1;
    else if (!strcmp(a, "--boxed")) sw_boxed = 1; /* sweep_boxed.c */
    else if (!strcmp(a, "--device") && v && (!strcmp(v, "cpu") || !strcmp(v, "cuda"))) sw_device_cuda = !strcmp(v, "cuda"), ++i;
    else usage();
  }
  if (jobs < 1 || jobs > 64 || per_child < 0) usage();
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
  /* One function per child on the CPU: a crash, a sanitizer report or
   * global state a function changes is that function's alone. On CUDA 50
   * per child: a CUDA context per function cost more than its calls (the
   * first GPU run reached 1,329 of 1,906 functions in its time); a lost
   * context ends the child either way. */
  sw_jobs_per_child = per_child ? per_child : sw_device_cuda ? 50 : 1;
  if (sw_device_cuda) {
    char why[600];
    if (!cuda_usable(why, sizeof why)) {
      printf("skipped: no CUDA device\n");
      fprintf(stderr, "sweep: --device cuda: %s\n", why);
      return 77;
    }
  }
  if (only_op >= 0 && only_recipe >= 0) return run_one();

  snprintf(sw_tmpdir, sizeof sw_tmpdir, "/tmp/ctorch-sweep.%d", (int)getpid());
  mkdir(sw_tmpdir, 0700);
  sw_op_fail_count = calloc((size_t)sw_n_ops, sizeof(int));
  sw_op_ran = calloc((size_t)sw_n_ops, sizeof(int));
  const char *torch = "?";
  double t0 = sw_now();
  if (long_s > 0) {
    long_mode = 1;
    random_batch = 20;
    sw_run_jobs(jobs, next_long, t0 + long_s);
  } else {
    sw_run_jobs(jobs, next_fixed, max_s > 0 ? t0 + max_s : 0);
  }
  double elapsed = sw_now() - t0;
  (void)ctorch_torch_version(&torch);

  /* ---- the table ---- */
  long class_fns[N_CLASSES] = {0};
  int pub = 0, internal = 0;
  for (int i = 0; i < sw_n_ops; ++i)
    if (sw_op_ran[i]) (sw_ops[i].flags & SW_INTERNAL) ? ++internal : ++pub;
  for (sw_failure *f = sw_failures; f; f = f->next) {
    int seen = 0;
    for (sw_failure *g = sw_failures; g != f; g = g->next)
      if (g->op == f->op && g->cls == f->cls) seen = 1;
    if (!seen) ++class_fns[f->cls];
  }
  printf("sweep: libtorch %s, %s%s%s, %d functions (%d public, %d internal), %ld calls in %.0f s (%.0f calls/s)\n",
         torch, SANITIZED ? "ASan+UBSan build" : "plain build (glibc malloc checks)",
         long_mode ? ", long mode" : sample > 1 ? ", budget mode" : "", sw_device_cuda ? ", CUDA tensors (cuda:0)" : "",
         pub + internal, pub, internal, sw_total_calls, elapsed, elapsed > 0 ? sw_total_calls / elapsed : 0.0);
  if (max_s > 0) {
    int chosen = 0;
    for (int i = 0; i < sw_n_ops; ++i) chosen += selected(i);
    if (pub + internal < chosen)
      printf("sweep: stopped at --max-seconds %.0f: %d of the %d chosen functions ran (the rest in order: from %s)\n",
             max_s, pub + internal, chosen, next_op < sw_n_ops ? sw_ops[next_op].c_name : "-");
  }
  printf("  %-24s %10s %10s\n", "class", "calls", "functions");
  for (int c = 0; c < N_CLASSES; ++c) {
    if (!sw_class_calls[c] && c > CTORCH_OK && !sw_is_failure(c) && !(c == C_CUDA_LOST && sw_device_cuda)) continue;
    if (sw_is_failure(c))
      printf("  %-24s %10ld %10ld\n", sw_class_name(c), sw_class_calls[c], class_fns[c]);
    else
      printf("  %-24s %10ld\n", sw_class_name(c), sw_class_calls[c]);
  }
  FILE *ff = failures_path ? fopen(failures_path, "w") : NULL;
  int passed = 0, failed = 0, unsafe_failed = 0, unsafe_passed = 0;
  for (int i = 0; i < sw_n_ops; ++i) {
    if (!sw_op_ran[i]) continue;
    const sw_op *op = &sw_ops[i];
    if (op->unsafe && !include_unsafe_in_count) {
      sw_op_fail_count[i] ? ++unsafe_failed : ++unsafe_passed;
      continue;
    }
    sw_op_fail_count[i] ? ++failed : ++passed;
  }
  const char *repro_base = getenv("CTORCH_SWEEP_REPRO") ? getenv("CTORCH_SWEEP_REPRO") : "ctorch_sweep";
  char repro[600];
  snprintf(repro, sizeof repro, "%s%s", repro_base, sw_device_cuda ? " --device cuda" : "");
  int shown_ops = 0;
  for (int i = 0; i < sw_n_ops; ++i) {
    if (!sw_op_fail_count[i]) continue;
    const sw_op *op = &sw_ops[i];
    int shown = 0;
    if (op->unsafe) {
      /* Known: one line each, the failures still go to the TSV. */
      for (sw_failure *f = sw_failures; f; f = f->next)
        if (f->op == i && ff)
          fprintf(ff, "%s\t%ld\t%s\t%s\t%s\tunsafe\n", op->c_name, f->recipe, sw_class_name(f->cls), f->detail, f->args);
      printf("unsafe (flagged, not counted) %s: %d failing recipes\n", op->c_name, sw_op_fail_count[i]);
      continue;
    }
    if (shown_ops++ < 200 || ff)
      for (sw_failure *f = sw_failures; f; f = f->next) {
        if (f->op != i) continue;
        if (ff)
          fprintf(ff, "%s\t%ld\t%s\t%s\t%s\t%s\n", op->c_name, f->recipe, sw_class_name(f->cls), f->detail, f->args,
                  op->unsafe ? "unsafe" : op->flags & SW_INTERNAL ? "internal" : "public");
        if (shown++ >= 3 || shown_ops > 200) continue;
        printf("FAIL %s%s%s recipe %ld (%s): %s: %s\n     args: %.300s\n     repro: %s --op %s --recipe %ld\n",
               op->c_name, op->flags & SW_INTERNAL ? " [internal]" : "", op->unsafe ? " [flagged unsafe]" : "",
               f->recipe, f->recipe >= 0 ? sw_recipe_theme(op, f->recipe) : "-", sw_class_name(f->cls), f->detail,
               f->args, repro, op->c_name, f->recipe);
      }
    if (shown > 3 && shown_ops <= 200) printf("     (%d more failing recipes)\n", shown - 3);
  }
  /* CUDA errors (context lost): statuses, listed, not counted. */
  int shown_lost = 0;
  for (sw_failure *f = sw_cuda_lost; f; f = f->next) {
    const sw_op *op = &sw_ops[f->op];
    if (ff)
      fprintf(ff, "%s\t%ld\t%s\t%s\t%s\tcuda-lost\n", op->c_name, f->recipe, sw_class_name(f->cls), f->detail, f->args);
    if (shown_lost++ < 100)
      printf("CUDA error (context lost, not counted) %s recipe %ld (%s): %.300s\n     args: %.300s\n     repro: %s --op %s "
             "--recipe %ld\n",
             op->c_name, f->recipe, f->recipe >= 0 ? sw_recipe_theme(op, f->recipe) : "-", f->detail, f->args, repro,
             op->c_name, f->recipe);
  }
  if (shown_lost > 100) printf("     (%d more CUDA errors (context lost), all in the failures file)\n", shown_lost - 100);
  if (sw_device_cuda) printf("CUDA errors (context lost, not counted): %ld calls\n", sw_cuda_lost_count);
  if (ff) fclose(ff);
  if (unsafe_failed + unsafe_passed)
    printf("flagged unsafe (not counted): %d still fail, %d no longer fail\n", unsafe_failed, unsafe_passed);
  /* tidy the per-worker logs */
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", sw_tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "sweep: could not remove %s\n", sw_tmpdir);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
