/* Resume after a crash, exactly: a training run (Linear-ReLU-Dropout-Linear,
 * SGD with momentum, a cosine schedule stepped every step, a shuffling loader, dropout
 * drawing from the default generator) saves a training state after every
 * step (ctorch_train_state_save_kept: keep 2, best by loss). The test kills
 * it with SIGKILL at random moments (a kill may land inside a save), starts
 * it again each time from ctorch_train_state_latest, and at the end compares
 * every parameter with those of an uninterrupted run of the same seed:
 * they must be bit-identical. The run reports each save on its standard
 * output; the kills land a random 0-30 ms after the 1st to 6th save of each
 * start, so in a later step or inside a save, however slow the machine.
 *
 *   resume_kill                 the test (spawns itself)
 *   resume_kill run DIR [STOP]  one run in DIR: resume from DIR's newest
 *                               checkpoint if any, train to the end, write
 *                               DIR/final.pt (or stop after step STOP,
 *                               train_state_vs_torch.py's starting point)
 * Exit 0: identical; 1: a difference or a failing call. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ctorch.h>

#include "../dump_ok.h"

enum { N = 240, FEATURES = 20, CLASSES = 4, BATCH = 16, EPOCHS = 3 };

static ctorch_nn_module child(const char *kind, const char *args) {
  ctorch_nn_module m = NULL;
  OK(ctorch_nn_new(&m, kind, args));
  return m;
}

/* Trains in dir from its newest checkpoint (or from the start); returns
 * after writing dir/final.pt. */
static void run(const char *dir, int64_t stop) {
  const int64_t xs[2] = {N, FEATURES}, ys[1] = {N};
  ctorch_tensor x = NULL, y = NULL, *params;
  ctorch_tensor_list list = NULL;
  ctorch_nn_module net = NULL, layer;
  ctorch_optimizer opt = NULL;
  ctorch_optim_options oo;
  ctorch_lr_schedule_options so;
  ctorch_lr_scheduler sched = NULL;
  ctorch_data_loader loader = NULL;
  int64_t epoch = 0, step = 0;
  double metric = NAN;
  ctorch_tensor_dict final = NULL;
  size_t n, i;
  char *latest = NULL, path[4096];
  int64_t nb;

  OK(ctorch_set_num_threads(1));
  OK(ctorch_manual_seed(20261123));
  OK(ctorch_randn(&x, xs, 2, NULL, NULL, NULL, NULL));
  {
    const ctorch_dtype i64 = CTORCH_INT64; /* Python's torch.randint default */
    OK(ctorch_randint(&y, CLASSES, ys, 1, &i64, NULL, NULL, NULL));
  }
  OK(ctorch_nn_new(&net, "Sequential", ""));
  {
    static const char *const kinds[4][2] = {{"Linear", "20, 32"}, {"ReLU", ""}, {"Dropout", "0.2"}, {"Linear", "32, 4"}};
    for (i = 0; i < 4; ++i) {
      layer = child(kinds[i][0], kinds[i][1]);
      OK(ctorch_nn_module_append(net, layer));
      ctorch_nn_module_free(layer);
    }
  }
  OK(ctorch_nn_module_parameters(&list, net));
  OK(ctorch_tensor_list_size(&n, list));
  params = calloc(n, sizeof *params);
  for (i = 0; i < n; ++i) OK(ctorch_tensor_list_get(&params[i], list, i));
  ctorch_tensor_list_free(list);
  /* SGD with momentum: libtorch's update is Python's op for op on 1.13 and
   * 2.x (Adam's is not on 2.x, whose Python uses lerp_), so Python can
   * continue this run bit for bit (train_state_vs_torch.py). */
  OK(ctorch_optim_options_default(&oo, CTORCH_OPTIM_SGD));
  oo.lr = 0.05, oo.momentum = 0.9;
  OK(ctorch_optimizer_new(&opt, CTORCH_OPTIM_SGD, params, n, &oo));
  OK(ctorch_data_loader_new(&loader, x, y, BATCH, 1, 99, 0));
  OK(ctorch_data_loader_num_batches(&nb, loader));
  OK(ctorch_lr_schedule_options_default(&so, CTORCH_LR_COSINE));
  so.t_max = nb * EPOCHS;
  OK(ctorch_lr_scheduler_new(&sched, opt, CTORCH_LR_COSINE, &so));

  OK(ctorch_train_state_latest(&latest, dir));
  if (latest) {
    OK(ctorch_train_state_load(&epoch, &step, &metric, latest, net, opt, sched, loader));
    ctorch_string_free(latest);
  }
  while (epoch < EPOCHS) {
    int has = 0;
    ctorch_tensor bx = NULL, by = NULL, logits = NULL, loss = NULL;
    OK(ctorch_data_loader_next(&has, &bx, &by, loader));
    if (!has) {
      epoch += 1;
      OK(ctorch_data_loader_start_epoch(loader, (uint64_t)epoch));
      continue;
    }
    OK(ctorch_optimizer_zero_grad(opt, 1));
    OK(ctorch_nn_module_forward(&logits, net, bx));
    OK(ctorch_cross_entropy_loss(&loss, logits, by, NULL, 1, -100, 0.0));
    OK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
    OK(ctorch_optimizer_step(opt));
    OK(ctorch_lr_scheduler_step(sched));
    OK(ctorch_tensor_item_double(&metric, loss));
    step += 1;
    OK(ctorch_train_state_save_kept(dir, 2, CTORCH_BEST_MIN, net, opt, sched, loader, epoch, step, metric));
    printf("saved %lld\n", (long long)step); /* the parent's cue (spawn) */
    fflush(stdout);
    ctorch_tensor_free(bx), ctorch_tensor_free(by), ctorch_tensor_free(logits), ctorch_tensor_free(loss);
    if (step == stop) exit(0);
  }
  OK(ctorch_nn_module_state_dict(&final, net));
  snprintf(path, sizeof path, "%s/final.pt", dir);
  OK(ctorch_tensor_dict_save(path, final));
  ctorch_tensor_dict_free(final);
  for (i = 0; i < n; ++i) ctorch_tensor_free(params[i]);
  free(params);
  ctorch_lr_scheduler_free(sched);
  ctorch_optimizer_free(opt);
  ctorch_data_loader_free(loader);
  ctorch_nn_module_free(net);
  ctorch_tensor_free(x), ctorch_tensor_free(y);
}

/* Runs `self run dir`. With saves > 0, kills it (SIGKILL) once it has
 * reported that many saves and then slept kill_us microseconds, so the kill
 * lands somewhere in a later step (or inside a save), whatever the machine's
 * speed. Returns 1 if it finished, 0 if it was killed. */
static int spawn(const char *self, const char *dir, int saves, long kill_us) {
  int status = 0, fds[2], seen = 0;
  FILE *in;
  char line[128];
  pid_t pid;
  if (pipe(fds) != 0) {
    perror("pipe");
    exit(1);
  }
  pid = fork();
  if (pid < 0) {
    perror("fork");
    exit(1);
  }
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    execl(self, self, "run", dir, (char *)NULL);
    perror("execl");
    _exit(127);
  }
  close(fds[1]);
  in = fdopen(fds[0], "r");
  while (fgets(line, sizeof line, in)) {
    if (saves > 0 && ++seen == saves) {
      struct timespec ts = {kill_us / 1000000, (kill_us % 1000000) * 1000};
      nanosleep(&ts, NULL);
      kill(pid, SIGKILL);
      break;
    }
  }
  fclose(in);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 1;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) return 0;
  fprintf(stderr, "the run failed (status %d)\n", status);
  exit(1);
}

static int same_files(const char *a, const char *b) {
  ctorch_tensor_dict da = NULL, db = NULL;
  size_t na, nb, i, diffs = 0;
  OK(ctorch_load_dict(&da, a));
  OK(ctorch_load_dict(&db, b));
  OK(ctorch_tensor_dict_size(&na, da));
  OK(ctorch_tensor_dict_size(&nb, db));
  if (na != nb) return 0;
  for (i = 0; i < na; ++i) {
    ctorch_tensor ta = NULL, tb = NULL;
    const char *key;
    int64_t numel = 0;
    float *fa, *fb;
    OK(ctorch_tensor_dict_key(&key, da, i));
    OK(ctorch_tensor_dict_get(&ta, da, i));
    OK(ctorch_tensor_dict_find(&tb, db, key));
    OK(ctorch_tensor_numel(&numel, ta));
    fa = malloc((size_t)numel * 4), fb = malloc((size_t)numel * 4);
    OK(ctorch_tensor_copy_to(fa, (size_t)numel * 4, ta));
    OK(ctorch_tensor_copy_to(fb, (size_t)numel * 4, tb));
    if (memcmp(fa, fb, (size_t)numel * 4) != 0) {
      fprintf(stderr, "%s differs\n", key);
      ++diffs;
    }
    free(fa), free(fb);
    ctorch_tensor_free(ta), ctorch_tensor_free(tb);
  }
  ctorch_tensor_dict_free(da), ctorch_tensor_dict_free(db);
  return diffs == 0;
}

int main(int argc, char **argv) {
  char ref[] = "/tmp/ctorch_resume_refXXXXXX", killed[] = "/tmp/ctorch_resume_killXXXXXX", a[4096], b[4096];
  int kills = 0, done = 0, tries;
  if ((argc == 3 || argc == 4) && strcmp(argv[1], "run") == 0) {
    run(argv[2], argc == 4 ? atoll(argv[3]) : -1);
    return 0;
  }
  if (!mkdtemp(ref) || !mkdtemp(killed)) {
    perror("mkdtemp");
    return 1;
  }
  spawn(argv[0], ref, 0, 0);
  srand((unsigned)time(NULL) ^ (unsigned)getpid());
  /* Kill after 1-6 saves plus 0-30 ms, 8 times, then let the run finish. */
  for (tries = 0; tries < 8 && !done; ++tries) {
    done = spawn(argv[0], killed, 1 + rand() % 6, (long)(rand() % 30000));
    if (!done) ++kills;
  }
  if (!done) done = spawn(argv[0], killed, 0, 0);
  snprintf(a, sizeof a, "%s/final.pt", ref);
  snprintf(b, sizeof b, "%s/final.pt", killed);
  if (!same_files(a, b)) {
    fprintf(stderr, "resumed run differs from the uninterrupted one (%d kills)\n", kills);
    return 1;
  }
  snprintf(a, sizeof a, "rm -rf '%s' '%s'", ref, killed);
  if (system(a) != 0) fprintf(stderr, "could not remove %s and %s\n", ref, killed);
  printf("killed %d times mid-training (SIGKILL), resumed each time: parameters bit-identical to the "
         "uninterrupted run\n", kills);
  return kills > 0 ? 0 : 1;
}
