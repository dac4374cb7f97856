/*
 * DQN on CartPole in C with ctorch's modules: a Q-network learns to balance
 * a pole on a cart from the reward alone (1 per step the pole stays up).
 *
 *   CartPole-v1 (gymnasium's equations, written here in C, float64): a cart
 *     pushed left or right with force 10 N, Euler steps of tau = 0.02 s; an
 *     episode ends when |x| > 2.4 or |theta| > 12 degrees (terminated), or
 *     after 500 steps (truncated: bootstrapped, not a terminal state). The
 *     agent sees the state as float32, as gymnasium's observation.
 *   Q-network: Linear(4, 128) -> ReLU -> Linear(128, 128) -> ReLU -> Linear(128, 2);
 *   target network: the same, synced by load_state_dict every --target-every steps;
 *   replay buffer of the last 50,000 transitions, batches of 64 drawn uniformly;
 *   epsilon-greedy, epsilon from 1 down to 0.05 over --eps-steps steps;
 *   loss: MSE between Q(s, a) (gathered) and r + 0.99 * max_a' Q_target(s', a');
 *   Adam(lr 1e-3), one update per step after --learning-starts steps.
 *
 * Every random choice comes from one torch.Generator seeded with --seed, in
 * a fixed order: a reset's initial state (4 uniforms, float64, scaled to
 * [-0.05, 0.05) as gymnasium's reset), then per step one uniform (explore or
 * not) and, when exploring, randint(0, 2); per update, randint(0, size, 64)
 * for the batch. The networks' initial weights come from
 * ctorch_manual_seed(seed) as torch.nn's. examples/dqn.py is the same program
 * in Python PyTorch: from the same seed it prints the same returns (with
 * libtorch 1.13.1 on one thread, where the CPU kernels are deterministic,
 * the same weights bit for bit; on 2.x see the demo's note below).
 *
 * Usage: dqn [--episodes K] [--seed S] [--threads N] [--learning-starts N]
 *            [--eps-steps N] [--target-every N] [--solve 0|1] [--save PATH]
 *        dqn --dynamics N [--seed S]
 *   --solve 1 (the default) stops once the mean return of the last 100
 *   episodes reaches 195 (the usual "solved" bar). --dynamics N prints N
 *   steps of CartPole under random actions (a "reset" line with the initial
 *   state, then "step" lines: action, state, terminated, truncated) and
 *   exits: tests/examples/dqn_vs_python.py replays them in gymnasium.
 *
 * The demo (minutes, so not a ctest; tests/examples/CMakeLists.txt runs
 * 60 episodes against the twin):  dqn --threads 1
 * With the defaults (seed 1) it was solved at episode 496 (55,176 steps):
 * on Debian's libtorch 1.13.1, 90 s of CPU (319 s wall on the busy 2-core
 * machine; examples/dqn.py: the same 496 episodes line for line, 175 s);
 * on PyPI's torch 2.15.0 at episode 266 (23,696 steps, 20.5 s wall, 8 s of
 * CPU), where dqn.py took 443 episodes (42.8 s). In those 2.15 runs
 * ctorch's Adam still rounded apart from Python's (libtorch's C++ update vs
 * lerp_) and the runs parted after ~50 episodes; with torch.optim's order of
 * operations the twins are bit-identical on 2.x too (dqn_matches_python).
 * The test's faster settings (--learning-starts 300 --eps-steps 1500
 * --target-every 200) reach returns near 200 by episode 55.
 *
 * The last line of output is machine-readable:
 *   episodes=<n> steps=<n> solved_at=<episode or 0> mean100=<return> last_loss=<mse> seconds=<s> steps_per_s=<number>
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ctorch_status st_ = (call);                                                                    \
    if (st_ != CTORCH_OK) {                                                                        \
      fprintf(stderr, "dqn: %s:%d: %s failed with %s: %s\n", __FILE__, __LINE__, #call,            \
              ctorch_status_name(st_), ctorch_last_error());                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#include "train_device.h" /* example_args.h's device options (unused here) */
#include "example_args.h"
#include "example_nn.h"

/* ---- CartPole-v1, as gymnasium/envs/classic_control/cartpole.py ---- */
/* The constants and every expression in gymnasium's order of operations
 * (float64 throughout), so the states are equal bit for bit. */
#define GRAVITY 9.8
#define MASSCART 1.0
#define MASSPOLE 0.1
#define LENGTH 0.5 /* half the pole's length */
#define FORCE_MAG 10.0
#define TAU 0.02
#define X_THRESHOLD 2.4
#define MAX_STEPS 500

/* One Euler step of s = (x, x_dot, theta, theta_dot) under action 0 (push
 * left) or 1 (push right); returns 1 when the episode has terminated. */
static int cartpole_step(double s[4], int action) {
  const double total_mass = MASSPOLE + MASSCART, polemass_length = MASSPOLE * LENGTH;
  const double theta_threshold = 12 * 2 * M_PI / 360;
  const double x = s[0], x_dot = s[1], theta = s[2], theta_dot = s[3];
  const double force = action == 1 ? FORCE_MAG : -FORCE_MAG;
  const double costheta = cos(theta), sintheta = sin(theta);
  const double temp = (force + polemass_length * (theta_dot * theta_dot) * sintheta) / total_mass;
  const double thetaacc =
      (GRAVITY * sintheta - costheta * temp) / (LENGTH * (4.0 / 3.0 - MASSPOLE * (costheta * costheta) / total_mass));
  const double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
  s[0] = x + TAU * x_dot;
  s[1] = x_dot + TAU * xacc;
  s[2] = theta + TAU * theta_dot;
  s[3] = theta_dot + TAU * thetaacc;
  return s[0] < -X_THRESHOLD || s[0] > X_THRESHOLD || s[2] < -theta_threshold || s[2] > theta_threshold;
}

/* ---- random draws, all from the program's generator g ---- */

/* gymnasium's reset: 4 uniforms in [-0.05, 0.05) (float64). */
static void cartpole_reset(double s[4], ctorch_generator g) {
  const int64_t four[1] = {4};
  const ctorch_dtype f64 = CTORCH_FLOAT64;
  ctorch_tensor u = NULL;
  int i;
  CHECK(ctorch_rand_generator(&u, four, 1, g, &f64, NULL, NULL, NULL));
  CHECK(ctorch_tensor_copy_to(s, 4 * sizeof(double), u));
  ctorch_tensor_free(u);
  for (i = 0; i < 4; ++i) s[i] = s[i] * 0.1 - 0.05;
}

/* torch.rand(1, generator=g).item() (float32). */
static double uniform(ctorch_generator g) {
  const int64_t one[1] = {1};
  ctorch_tensor u = NULL;
  double v = 0;
  CHECK(ctorch_rand_generator(&u, one, 1, g, NULL, NULL, NULL, NULL));
  CHECK(ctorch_tensor_item_double(&v, u));
  ctorch_tensor_free(u);
  return v;
}

/* torch.randint(0, high, (n,), generator=g) into idx[0..n) (int64 as
 * Python's default; C++'s at::randint would make floats). */
static void randint(int64_t *idx, int64_t high, int64_t n, ctorch_generator g) {
  const ctorch_dtype i64 = CTORCH_INT64;
  ctorch_tensor r = NULL;
  CHECK(ctorch_randint_generator(&r, high, &n, 1, g, &i64, NULL, NULL, NULL));
  CHECK(ctorch_tensor_copy_to(idx, (size_t)n * sizeof(int64_t), r));
  ctorch_tensor_free(r);
}

/* ---- --dynamics N: CartPole under random actions, for the gymnasium check ---- */
static void print_state(const char *what, const double s[4]) {
  printf("%s %.17g %.17g %.17g %.17g", what, s[0], s[1], s[2], s[3]);
}

static void dynamics(int n, ctorch_generator g) {
  double s[4];
  int i, t = 0;
  cartpole_reset(s, g);
  print_state("reset", s);
  printf("\n");
  for (i = 0; i < n; ++i) {
    int64_t a = 0;
    int term;
    randint(&a, 2, 1, g);
    term = cartpole_step(s, (int)a);
    ++t;
    printf("step %d ", (int)a);
    print_state("", s);
    printf(" %d %d\n", term, !term && t == MAX_STEPS);
    if (term || t == MAX_STEPS) {
      cartpole_reset(s, g);
      print_state("reset", s);
      printf("\n");
      t = 0;
    }
  }
}

/* ---- the agent ---- */
#define OBS 4
#define ACTIONS 2
#define CAPACITY 50000
#define BATCH 64
#define GAMMA 0.99

/* The transitions, a ring of CAPACITY; `size` of them filled. */
typedef struct {
  float obs[CAPACITY][OBS], next[CAPACITY][OBS], reward[CAPACITY], notdone[CAPACITY];
  int64_t action[CAPACITY];
  int64_t size, pos;
} replay;

/* dqn.py's QNet(): its layers in its order (the order of the draws). */
static ctorch_nn_module make_qnet(void) {
  static const nn_layer table[] = {
      {"0", "Linear", "4, 128"}, {"1", "ReLU", ""}, {"2", "Linear", "128, 128"}, {"3", "ReLU", ""},
      {"4", "Linear", "128, 2"},
  };
  return nn_sequential(table, sizeof table / sizeof table[0]);
}

/* target.load_state_dict(q.state_dict()) */
static void sync_target(ctorch_nn_module target, ctorch_nn_module q) {
  ctorch_tensor_dict sd = NULL;
  CHECK(ctorch_nn_module_state_dict(&sd, q));
  CHECK(ctorch_nn_module_load_state_dict(NULL, target, sd, 1));
  ctorch_tensor_dict_free(sd);
}

/* argmax_a Q(obs, a) (the first on a tie, as torch.argmax). */
static int greedy(ctorch_nn_module q, const float obs[OBS]) {
  const int64_t shape[2] = {1, OBS};
  ctorch_autograd_scope ng = NULL;
  ctorch_tensor x = NULL, out = NULL;
  float v[ACTIONS];
  CHECK(ctorch_autograd_scope_enter(&ng, CTORCH_SCOPE_NO_GRAD));
  CHECK(ctorch_tensor_from_data(&x, obs, sizeof(float) * OBS, shape, 2, CTORCH_FLOAT32));
  CHECK(ctorch_nn_module_forward(&out, q, x));
  CHECK(ctorch_tensor_copy_to(v, sizeof v, out));
  CHECK(ctorch_autograd_scope_leave(ng));
  ctorch_tensor_free(x);
  ctorch_tensor_free(out);
  return v[1] > v[0];
}

/* A [BATCH, width] float tensor of rows idx of `rows` (width floats each). */
static ctorch_tensor rows_of(const float *rows, int64_t width, const int64_t *idx) {
  float buf[BATCH * OBS];
  const int64_t shape[2] = {BATCH, width};
  ctorch_tensor t = NULL;
  int i;
  for (i = 0; i < BATCH; ++i) memcpy(buf + i * width, rows + idx[i] * width, (size_t)width * sizeof(float));
  CHECK(ctorch_tensor_from_data(&t, buf, (size_t)(BATCH * width) * sizeof(float), shape, 2, CTORCH_FLOAT32));
  return t;
}

/* One update on a batch drawn from the buffer; returns the loss. Its
 * tensors live in the caller's handle scope. */
static double update(ctorch_nn_module q, ctorch_nn_module target, ctorch_optimizer opt, const replay *rb,
                     ctorch_generator g) {
  int64_t idx[BATCH], act[BATCH];
  const int64_t col[2] = {BATCH, 1};
  ctorch_tensor s, s2, r, nd, a = NULL, qs = NULL, qa = NULL, qn = NULL, qmax = NULL, arg = NULL, y = NULL,
                              loss = NULL;
  ctorch_autograd_scope ng = NULL;
  double l = 0;
  int i;
  randint(idx, rb->size, BATCH, g);
  for (i = 0; i < BATCH; ++i) act[i] = rb->action[idx[i]];
  s = rows_of(&rb->obs[0][0], OBS, idx);
  s2 = rows_of(&rb->next[0][0], OBS, idx);
  r = rows_of(rb->reward, 1, idx);
  nd = rows_of(rb->notdone, 1, idx);
  CHECK(ctorch_tensor_from_data(&a, act, sizeof act, col, 2, CTORCH_INT64));
  /* q(s).gather(1, a).squeeze(1) */
  CHECK(ctorch_nn_module_forward(&qs, q, s));
  CHECK(ctorch_gather(&qa, qs, 1, a, 0));
  CHECK(ctorch_squeeze_dim(&qa, qa, 1));
  /* with torch.no_grad(): y = r + GAMMA * target(s2).max(1).values * notdone */
  CHECK(ctorch_autograd_scope_enter(&ng, CTORCH_SCOPE_NO_GRAD));
  CHECK(ctorch_nn_module_forward(&qn, target, s2));
  CHECK(ctorch_max_dim(&qmax, &arg, qn, 1, 0));
  CHECK(ctorch_mul_Scalar(&y, qmax, ctorch_scalar_float(GAMMA)));
  CHECK(ctorch_squeeze_dim(&nd, nd, 1));
  CHECK(ctorch_mul_Tensor(&y, y, nd));
  CHECK(ctorch_squeeze_dim(&r, r, 1));
  CHECK(ctorch_add_Tensor(&y, r, y, ctorch_scalar_int(1)));
  CHECK(ctorch_autograd_scope_leave(ng));
  CHECK(ctorch_mse_loss(&loss, qa, y, 1 /* mean */));
  CHECK(ctorch_optimizer_zero_grad(opt, 1));
  CHECK(ctorch_tensor_backward(loss, NULL, 0, 0, NULL, 0));
  CHECK(ctorch_optimizer_step(opt));
  CHECK(ctorch_tensor_item_double(&l, loss));
  return l;
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--episodes K] [--seed S] [--threads N] [--learning-starts N] [--eps-steps N]\n"
          "          [--target-every N] [--solve 0|1] [--save PATH]\n"
          "       %s --dynamics N [--seed S]\n"
          "  defaults: 1000 episodes (stopping when solved), seed 1, libtorch's threads, learning from step\n"
          "  1000, epsilon 1 -> 0.05 over 10000 steps, target synced every 500 steps\n",
          prog, prog);
}

int main(int argc, char **argv) {
  const char *save = "";
  int episodes = 1000, threads = 0, learning_starts = 1000, eps_steps = 10000, target_every = 500, solve = 1;
  int n_dynamics = 0, ep, solved_at = 0, returns[100] = {0};
  unsigned long long seed = 1;
  int64_t t = 0;
  double mean100 = 0, loss = 0, t0, dt;
  ctorch_generator g = NULL;
  ctorch_nn_module q, target;
  ctorch_optimizer opt;
  replay *rb;

  {
    const example_arg args[] = {
        EXAMPLE_INT("--episodes", &episodes),   EXAMPLE_U64("--seed", &seed),
        EXAMPLE_INT("--threads", &threads),     EXAMPLE_INT("--learning-starts", &learning_starts),
        EXAMPLE_INT("--eps-steps", &eps_steps), EXAMPLE_INT("--target-every", &target_every),
        EXAMPLE_INT("--solve", &solve),         EXAMPLE_STR("--save", &save),
        EXAMPLE_INT("--dynamics", &n_dynamics),
    };
    int rc = example_parse_args(argc, argv, args, EXAMPLE_NARGS(args), usage);
    if (rc >= 0) return rc;
  }
  if (episodes < 1 || learning_starts < 1 || eps_steps < 1 || target_every < 1 || n_dynamics < 0) {
    fprintf(stderr, "dqn: --episodes, --learning-starts, --eps-steps and --target-every must be >= 1\n");
    return 2;
  }
  CHECK(ctorch_generator_new(&g, ctorch_device_cpu(), seed));
  if (n_dynamics > 0) {
    dynamics(n_dynamics, g);
    ctorch_generator_free(g);
    return 0;
  }
  if (threads > 0) CHECK(ctorch_set_num_threads(threads));
  CHECK(ctorch_get_num_threads(&threads));
  rb = calloc(1, sizeof *rb);
  if (!rb) return 1;

  CHECK(ctorch_manual_seed(seed));
  q = make_qnet();
  target = make_qnet();
  sync_target(target, q);
  {
    ctorch_optim_options o;
    CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAM));
    o.lr = 1e-3;
    CHECK(ctorch_optimizer_new_from_module(&opt, CTORCH_OPTIM_ADAM, q, &o));
  }
  printf("DQN on CartPole-v1, up to %d episodes, %d thread(s), seed %llu\n", episodes, threads, seed);
  fflush(stdout);

  t0 = now();
  for (ep = 1; ep <= episodes; ++ep) {
    double s[4];
    float obs[OBS];
    int k, ret = 0, done = 0;
    cartpole_reset(s, g);
    for (k = 0; k < OBS; ++k) obs[k] = (float)s[k];
    while (!done) {
      const double eps = 1.0 + (0.05 - 1.0) * (t < eps_steps ? (double)t / eps_steps : 1.0);
      int64_t a = 0;
      int term;
      if (uniform(g) < eps) randint(&a, 2, 1, g);
      else a = greedy(q, obs);
      term = cartpole_step(s, (int)a);
      ++ret;
      ++t;
      done = term || ret == MAX_STEPS;
      /* store (obs, a, 1, next obs, not terminated): a truncated episode's
       * last state is not terminal, its value is bootstrapped */
      memcpy(rb->obs[rb->pos], obs, sizeof obs);
      for (k = 0; k < OBS; ++k) obs[k] = rb->next[rb->pos][k] = (float)s[k];
      rb->action[rb->pos] = a;
      rb->reward[rb->pos] = 1.0f;
      rb->notdone[rb->pos] = term ? 0.0f : 1.0f;
      rb->pos = (rb->pos + 1) % CAPACITY;
      if (rb->size < CAPACITY) ++rb->size;
      if (t >= learning_starts) {
        ctorch_handle_scope sc = scope_enter();
        loss = update(q, target, opt, rb, g);
        scope_leave(sc);
      }
      if (t % target_every == 0) sync_target(target, q);
    }
    returns[(ep - 1) % 100] = ret;
    mean100 = 0;
    for (k = 0; k < (ep < 100 ? ep : 100); ++k) mean100 += returns[k];
    mean100 /= ep < 100 ? ep : 100;
    printf("episode %d return %d mean100 %.2f steps %lld loss %.6f\n", ep, ret, mean100, (long long)t, loss);
    if (ep >= 100 && mean100 >= 195 && !solved_at) {
      solved_at = ep;
      printf("solved at episode %d (mean return of the last 100: %.2f)\n", ep, mean100);
      if (solve) break;
    }
  }
  dt = now() - t0;
  if (*save) {
    nn_save(q, save);
    printf("saved weights to %s\n", save);
  }
  printf("episodes=%d steps=%lld solved_at=%d mean100=%.2f last_loss=%.6f seconds=%.1f steps_per_s=%.1f\n",
         ep > episodes ? episodes : ep, (long long)t, solved_at, mean100, loss, dt, (double)t / dt);

  ctorch_optimizer_free(opt);
  ctorch_nn_module_free(q);
  ctorch_nn_module_free(target);
  ctorch_generator_free(g);
  free(rb);
  return 0;
}
