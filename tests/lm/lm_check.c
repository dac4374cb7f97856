/* The model and session entry points driven from C, for lm_vs_transformers.py:
 *
 *   lm_check --prompt 1,2,3 [--new N] [--options OPTS] --out DIR MODEL...
 *     for each MODEL (after a line "model=MODEL"): writes
 *     DIR/<MODEL's last name>/prompt_logits.f32 (ctorch_lm_decode of the
 *     prompt with all_logits: [n, n_vocab] float32), step_logits.f32 (the
 *     logits of each greedy step's decode: [N - 1, n_vocab]) and
 *     describe.json, prints "greedy=<ids>" (N argmax ids, one decode per
 *     id), then
 *     "batch_maxdiff=<x>" (three rounds of ctorch_lm_decode_batch over
 *     three sequences of different lengths against each sequence decoded
 *     alone in another session), "fork_maxdiff=<x>" and "rewind_maxdiff=<x>"
 *     (the prompt's logits again after a fork or a rewind at a position),
 *     and checks the refusals past a session's n_ctx (nothing appended).
 *   lm_check --expect-fail [--options OPTS] [--ctx N] MODEL...
 *     loads each MODEL (and makes a session of N positions): prints
 *     "status=<name> error=<message>" for each, then "peak_rss_kb=<n>" (this
 *     process's own peak, VmHWM: a forked parent's pages are not counted),
 *     and exits 0 if each load or session was refused, 1 if one was not.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

#define MAXP 512

static void die(const char *what) {
  fprintf(stderr, "lm_check: %s: %s\n", what, ctorch_last_error());
  exit(2);
}
#define OK(call)                  \
  do {                            \
    if ((call) != CTORCH_OK) die(#call); \
  } while (0)

static int64_t n_vocab;

/* VmHWM of /proc/self/status (-1 where there is none). */
static long long peak_rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6)) kb = atoll(line + 6);
  if (f) fclose(f);
  return kb;
}

/* The float32 logits of t into a new buffer (rows * n_vocab). */
static float *logits_of(ctorch_tensor t, int64_t rows) {
  int64_t numel = 0;
  OK(ctorch_tensor_numel(&numel, t));
  if (numel != rows * n_vocab) {
    fprintf(stderr, "lm_check: logits have %lld elements, expected %lld\n", (long long)numel,
            (long long)(rows * n_vocab));
    exit(2);
  }
  float *f = malloc(sizeof(float) * (size_t)numel);
  OK(ctorch_tensor_copy_to(f, sizeof(float) * (size_t)numel, t));
  ctorch_tensor_free(t);
  return f;
}

static double maxdiff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (!(d <= m)) m = d; /* NaN wins */
  }
  return m;
}

static int64_t argmax(const float *row) {
  int64_t best = 0;
  for (int64_t i = 1; i < n_vocab; ++i)
    if (row[i] > row[best]) best = i;
  return best;
}

static float *decode(ctorch_lm_session s, int64_t seq, const int64_t *ids, size_t n, int all) {
  ctorch_tensor t = NULL;
  OK(ctorch_lm_decode(&t, s, seq, ids, n, all));
  return logits_of(t, all ? (int64_t)n : 1);
}

static int64_t describe_vocab(ctorch_lm_model m, const char *out_dir) {
  char *js = NULL;
  OK(ctorch_lm_describe(&js, m));
  const char *p = strstr(js, "\"n_vocab\":");
  if (!p) die("describe has no n_vocab");
  int64_t v = strtoll(p + 10, NULL, 10);
  if (out_dir) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/describe.json", out_dir) >= sizeof path) die("path too long");
    FILE *f = fopen(path, "w");
    if (!f) die("describe.json");
    fputs(js, f);
    fclose(f);
  }
  ctorch_string_free(js);
  return v;
}

/* Three rounds of decode_batch against decode alone: prompts of different
   lengths, then one token each, then unequal counts on unequal pasts. */
static double check_batch(ctorch_lm_model m, const int64_t *p, size_t np) {
  ctorch_lm_session alone = NULL, batch = NULL;
  OK(ctorch_lm_session_new(&alone, m, 64, 3));
  OK(ctorch_lm_session_new(&batch, m, 64, 4));
  /* sequence k of `alone` is sequence seqs[k] of `batch` */
  const int64_t seqs[3] = {2, 0, 3};
  const int64_t rounds[3][3] = {{(int64_t)np, 3, 5}, {1, 1, 1}, {2, 1, 3}};
  double worst = 0;
  size_t off = 0;
  for (int r = 0; r < 3; ++r) {
    int64_t toks[64];
    size_t nt = 0;
    float *want[3];
    for (int k = 0; k < 3; ++k) {
      const int64_t *src = p + (off + (size_t)k) % np;
      want[k] = decode(alone, k, src, (size_t)rounds[r][k], 0);
      for (int64_t i = 0; i < rounds[r][k]; ++i) toks[nt++] = src[i];
    }
    ctorch_tensor t = NULL;
    OK(ctorch_lm_decode_batch(&t, batch, seqs, rounds[r], 3, toks, nt));
    float *got = logits_of(t, 3);
    for (int k = 0; k < 3; ++k) {
      double d = maxdiff(got + k * n_vocab, want[k], (size_t)n_vocab);
      if (!(d <= worst)) worst = d;
      free(want[k]);
    }
    free(got);
    off += 2;
  }
  for (int k = 0; k < 3; ++k) {
    int64_t a = 0, b = 0;
    OK(ctorch_lm_session_length(&a, alone, k));
    OK(ctorch_lm_session_length(&b, batch, seqs[k]));
    if (a != b) {
      fprintf(stderr, "lm_check: batch length %lld != alone %lld\n", (long long)b, (long long)a);
      exit(2);
    }
  }
  ctorch_lm_session_free(alone);
  ctorch_lm_session_free(batch);
  return worst;
}

static void expect_refused(ctorch_status st, const char *what) {
  if (st != CTORCH_INVALID_ARGUMENT) {
    fprintf(stderr, "lm_check: %s: status %s, expected CTORCH_INVALID_ARGUMENT\n", what, ctorch_status_name(st));
    exit(2);
  }
}

static void expect_length(ctorch_lm_session s, int64_t seq, int64_t want) {
  int64_t got = -1;
  OK(ctorch_lm_session_length(&got, s, seq));
  if (got != want) {
    fprintf(stderr, "lm_check: sequence %lld holds %lld positions, expected %lld\n", (long long)seq,
            (long long)got, (long long)want);
    exit(2);
  }
}

/* Past n_ctx: refused, nothing appended; up to n_ctx: accepted. */
static void check_context(ctorch_lm_model m, const int64_t *p, size_t np) {
  ctorch_lm_session s = NULL;
  ctorch_tensor t = NULL;
  OK(ctorch_lm_session_new(&s, m, (int64_t)np + 2, 2));
  free(decode(s, 0, p, np, 0));
  expect_refused(ctorch_lm_decode(&t, s, 0, p, 3, 0), "decode past n_ctx");
  if (t) die("refused decode returned a tensor");
  expect_length(s, 0, (int64_t)np);
  const int64_t seqs[2] = {1, 0}, counts[2] = {1, 3};
  expect_refused(ctorch_lm_decode_batch(&t, s, seqs, counts, 2, p, 4), "decode_batch past n_ctx");
  expect_length(s, 0, (int64_t)np);
  expect_length(s, 1, 0);
  const int64_t bad_id = n_vocab;
  expect_refused(ctorch_lm_decode(&t, s, 1, &bad_id, 1, 0), "decode of an id outside the vocabulary");
  expect_refused(ctorch_lm_decode(&t, s, 2, p, 1, 0), "decode of a sequence outside the session");
  expect_refused(ctorch_lm_session_rewind(s, 0, (int64_t)np + 1), "rewind past the length");
  expect_length(s, 1, 0);
  free(decode(s, 0, p, 2, 0));
  expect_length(s, 0, (int64_t)np + 2);
  expect_refused(ctorch_lm_decode(&t, s, 0, p, 1, 0), "decode at a full context");
  ctorch_lm_session_free(s);
}

/* Everything above for one model; results into out (a folder that exists). */
static void run_model(const char *model, const char *options, const char *out, const int64_t *p, size_t np,
                      int64_t n_new) {
  ctorch_lm_model m = NULL;
  OK(ctorch_lm_load(&m, model, options));
  n_vocab = describe_vocab(m, out);

  /* The prompt's logits at every position, then greedy ids. */
  ctorch_lm_session s = NULL;
  OK(ctorch_lm_session_new(&s, m, (int64_t)np + n_new + 1, 4));
  float *all = decode(s, 0, p, np, 1);
  char path[4096];
  if ((size_t)snprintf(path, sizeof path, "%s/prompt_logits.f32", out) >= sizeof path) die("path too long");
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(all, sizeof(float) * (size_t)n_vocab, np, f) != np) die("prompt_logits.f32");
  fclose(f);
  if ((size_t)snprintf(path, sizeof path, "%s/step_logits.f32", out) >= sizeof path) die("path too long");
  FILE *steps = fopen(path, "wb");
  if (!steps) die("step_logits.f32");
  printf("greedy=");
  int64_t next = argmax(all + (np - 1) * (size_t)n_vocab);
  for (int64_t i = 0; i < n_new; ++i) {
    printf(i ? ",%lld" : "%lld", (long long)next);
    if (i + 1 < n_new) {
      float *row = decode(s, 0, &next, 1, 0);
      if (fwrite(row, sizeof(float), (size_t)n_vocab, steps) != (size_t)n_vocab) die("step_logits.f32");
      next = argmax(row);
      free(row);
    }
  }
  fclose(steps);
  printf("\n");

  /* Fork at 5 and rewind to 4: the prompt's remaining logits again. */
  const size_t at = 5, back = 4;
  OK(ctorch_lm_session_fork(s, 3, 0, (int64_t)at));
  expect_length(s, 3, (int64_t)at);
  float *forked = decode(s, 3, p + at, np - at, 1);
  printf("fork_maxdiff=%g\n", maxdiff(forked, all + at * (size_t)n_vocab, (np - at) * (size_t)n_vocab));
  OK(ctorch_lm_session_rewind(s, 0, (int64_t)back));
  float *rewound = decode(s, 0, p + back, np - back, 1);
  printf("rewind_maxdiff=%g\n", maxdiff(rewound, all + back * (size_t)n_vocab, (np - back) * (size_t)n_vocab));
  free(forked);
  free(rewound);
  free(all);
  ctorch_lm_session_free(s);

  printf("batch_maxdiff=%g\n", check_batch(m, p, np));
  check_context(m, p, np);
  printf("context=ok\n");
  ctorch_lm_model_free(m);
}

int main(int argc, char **argv) {
  const char *models[64], *options = NULL, *out = NULL, *prompt = NULL;
  int expect_fail = 0;
  int64_t n_new = 0, ctx = 0;
  int n_models = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--options") && i + 1 < argc) options = argv[++i];
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--prompt") && i + 1 < argc) prompt = argv[++i];
    else if (!strcmp(argv[i], "--new") && i + 1 < argc) n_new = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--ctx") && i + 1 < argc) ctx = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--expect-fail")) expect_fail = 1;
    else if (n_models < 64) models[n_models++] = argv[i];
  }
  if (!n_models) {
    fprintf(stderr, "usage: lm_check (--prompt IDS --out DIR [--new N] | --expect-fail) [--options OPTS] MODEL...\n");
    return 2;
  }
  ctorch_lm_model m = NULL;
  if (expect_fail) {
    int rc = 0;
    for (int i = 0; i < n_models; ++i) {
      ctorch_status st = ctorch_lm_load(&m, models[i], options);
      if (st == CTORCH_OK) {
        ctorch_lm_session s = NULL;
        st = ctorch_lm_session_new(&s, m, ctx, 1);
        ctorch_lm_session_free(s);
        ctorch_lm_model_free(m);
      }
      printf("status=%s error=%s\n", ctorch_status_name(st), st == CTORCH_OK ? "" : ctorch_last_error());
      if (st == CTORCH_OK) rc = 1;
    }
    printf("peak_rss_kb=%lld\n", peak_rss_kb());
    return rc;
  }
  if (!prompt || !out) die("--prompt and --out are required");
  int64_t p[MAXP];
  size_t np = 0;
  char *copy = strdup(prompt);
  for (char *tok = strtok(copy, ","); tok && np < MAXP; tok = strtok(NULL, ",")) p[np++] = strtoll(tok, NULL, 10);
  free(copy);
  if (np < 12 || np > 56) {
    fprintf(stderr, "lm_check: the prompt needs 12 to 56 ids\n");
    return 2;
  }
  for (int i = 0; i < n_models; ++i) {
    char dir[4096];
    const char *base = strrchr(models[i], '/');
    snprintf(dir, sizeof dir, "%s/%s", out, base ? base + 1 : models[i]);
    printf("model=%s\n", models[i]);
    run_model(models[i], options, dir, p, np, n_new);
  }
  return 0;
}
