/*
 * Language-model speed through the public C API (ctorch_lm_*): time to
 * first token, prefill and greedy decode, for a batch of sequences that
 * share one session.
 *
 *   lm_bench --model PATH [--options "dtype=bfloat16,device=cuda,init=random"]
 *            [--threads N] [--prompt 128] [--new 128] [--batch 1] [--rounds 3]
 *            [--perplexity TEXT_FILE]
 *
 * Each round makes a new session of batch sequences (n_ctx = prompt + new),
 * decodes a prompt of `prompt` ids drawn from a fixed seed into every
 * sequence (one ctorch_lm_decode_batch: the prefill), then `new` greedy
 * steps, one ctorch_lm_decode_batch of one id per sequence each (argmax on
 * the logits' device, the ids read back every step, which waits for a GPU).
 * The last line is one JSON object: the median round's prefill and decode
 * tokens per second (all sequences counted), the time to first token (the
 * prefill and the first pick), the resident set after the run, and the
 * first sequence's greedy ids (to compare with another implementation).
 *
 * --perplexity adds the perplexity of the model on a text file, after the
 * timed rounds: the text tokenized by the model's own tokenizer (its specials
 * added, as the model's tokenizer adds them), run in one decode that returns
 * every position's logits, and exp of the mean of -log softmax(logits)[next
 * id] over every position but the last. It measures what a precision or a
 * quantisation class costs in accuracy, beside its speed.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ctorch.h"

#define CK(call)                                                                                \
  do {                                                                                          \
    if ((call) != CTORCH_OK) bench_die(#call, ctorch_last_error());                             \
  } while (0)

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

/* The argmax of each row of logits [B, V], read back into ids[0..B). */
static void greedy(int64_t *ids, ctorch_tensor logits, int64_t batch) {
  ctorch_tensor arg = NULL, cpu = NULL;
  int64_t dim = 1;
  CK(ctorch_argmax(&arg, logits, &dim, 0));
  CK(ctorch_tensor_to_device(&cpu, arg, ctorch_device_cpu()));
  CK(ctorch_tensor_copy_to(ids, (size_t)batch * sizeof *ids, cpu));
  ctorch_tensor_free(cpu);
  ctorch_tensor_free(arg);
}

/* Perplexity of the model on the UTF-8 text in `path` (see the header
   comment). log-sum-exp and exp go through ctorch's operators: the program
   links only ctorch. */
static double perplexity(ctorch_lm_model m, const char *path, int64_t *out_n) {
  FILE *f = fopen(path, "rb");
  if (!f) bench_die("--perplexity", "cannot open the text file");
  char *text = malloc(1 << 20);
  if (!text) bench_die("malloc", "out of memory");
  size_t len = fread(text, 1, (1 << 20) - 1, f);
  fclose(f);
  text[len] = 0;
  ctorch_tensor tok = NULL, logits = NULL, cpu = NULL, lse = NULL, nll_t = NULL, mean = NULL, ppl_t = NULL;
  CK(ctorch_lm_tokenize(&tok, m, text, 1, 0));
  free(text);
  int64_t n = 0, shape[2] = {0, 0}, dim = 1;
  CK(ctorch_tensor_numel(&n, tok));
  if (n < 2) bench_die("--perplexity", "the text is shorter than two tokens");
  int64_t *ids = malloc(sizeof *ids * (size_t)n);
  if (!ids) bench_die("malloc", "out of memory");
  CK(ctorch_tensor_copy_to(ids, sizeof *ids * (size_t)n, tok));
  ctorch_lm_session s = NULL;
  CK(ctorch_lm_session_new(&s, m, n, 1));
  CK(ctorch_lm_decode(&logits, s, 0, ids, (size_t)n, 1));
  CK(ctorch_tensor_to_device(&cpu, logits, ctorch_device_cpu()));
  CK(ctorch_tensor_sizes(shape, 2, cpu));
  CK(ctorch_logsumexp(&lse, cpu, &dim, 1, 0));
  float *z = malloc(sizeof *z * (size_t)(shape[0] * shape[1])), *l = malloc(sizeof *l * (size_t)n);
  double *nll = malloc(sizeof *nll * (size_t)n);
  if (!z || !l || !nll) bench_die("malloc", "out of memory");
  CK(ctorch_tensor_copy_to(z, sizeof *z * (size_t)(shape[0] * shape[1]), cpu));
  CK(ctorch_tensor_copy_to(l, sizeof *l * (size_t)n, lse));
  /* -log softmax(logits[t])[ids[t + 1]] = logsumexp(logits[t]) - logits[t][ids[t + 1]] */
  for (int64_t t = 0; t + 1 < n; ++t) nll[t] = (double)l[t] - (double)z[t * shape[1] + ids[t + 1]];
  int64_t len_nll = n - 1;
  double ppl = 0;
  CK(ctorch_tensor_from_data(&nll_t, nll, sizeof *nll * (size_t)len_nll, &len_nll, 1, CTORCH_FLOAT64));
  CK(ctorch_mean(&mean, nll_t, NULL));
  CK(ctorch_exp(&ppl_t, mean));
  CK(ctorch_tensor_item_double(&ppl, ppl_t));
  free(z), free(l), free(nll), free(ids);
  ctorch_tensor_free(ppl_t), ctorch_tensor_free(mean), ctorch_tensor_free(nll_t), ctorch_tensor_free(lse);
  ctorch_tensor_free(cpu), ctorch_tensor_free(logits), ctorch_tensor_free(tok);
  ctorch_lm_session_free(s);
  *out_n = n;
  return ppl;
}

int main(int argc, char **argv) {
  const char *model_path = NULL, *options = NULL, *ppl_path = NULL;
  int threads = 0, rounds = 3;
  int64_t prompt = 128, new_tokens = 128, batch = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--model")) model_path = argv[i + 1];
    else if (!strcmp(argv[i], "--options")) options = argv[i + 1];
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--prompt")) prompt = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--new")) new_tokens = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--batch")) batch = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--perplexity")) ppl_path = argv[i + 1];
    else {
      fprintf(stderr, "lm_bench: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (!model_path || prompt < 1 || new_tokens < 1 || batch < 1 || rounds < 1 || rounds > 64) {
    fprintf(stderr, "usage: lm_bench --model PATH [--options TEXT] [--threads N] [--prompt N] [--new N] "
                    "[--batch N] [--rounds N] [--perplexity TEXT_FILE]\n");
    return 2;
  }
  if (threads > 0) CK(ctorch_set_num_threads(threads));
  double t0 = bench_now();
  ctorch_lm_model m = NULL;
  CK(ctorch_lm_load(&m, model_path, options));
  double load_s = bench_now() - t0;
  char *info = NULL;
  CK(ctorch_lm_describe(&info, m));

  /* Prompt ids from a fixed seed, the same in every round and sequence; the
     vocabulary size is read from the description's "n_vocab". */
  const char *nv = strstr(info, "\"n_vocab\":");
  int64_t vocab = nv ? atoll(nv + 10) : 0;
  if (vocab < 2) bench_die("describe", "no n_vocab");
  int64_t *ids = malloc(sizeof *ids * (size_t)(prompt * batch));
  int64_t *seqs = malloc(sizeof *seqs * (size_t)batch), *counts = malloc(sizeof *counts * (size_t)batch);
  int64_t *step = malloc(sizeof *step * (size_t)batch), *first = malloc(sizeof *first * (size_t)new_tokens);
  if (!ids || !seqs || !counts || !step || !first) bench_die("malloc", "out of memory");
  uint64_t x = 88172645463325252ull;
  for (int64_t i = 0; i < prompt; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    ids[i] = (int64_t)(x % (uint64_t)vocab);
  }
  for (int64_t b = 1; b < batch; ++b) memcpy(ids + b * prompt, ids, sizeof *ids * (size_t)prompt);

  double prefill[64], decode[64], ttft[64];
  for (int r = 0; r < rounds; ++r) {
    ctorch_lm_session s = NULL;
    CK(ctorch_lm_session_new(&s, m, prompt + new_tokens, batch));
    for (int64_t b = 0; b < batch; ++b) seqs[b] = b, counts[b] = prompt;
    ctorch_tensor logits = NULL;
    double a = bench_now();
    CK(ctorch_lm_decode_batch(&logits, s, seqs, counts, (size_t)batch, ids, (size_t)(prompt * batch)));
    greedy(step, logits, batch);
    double b_ = bench_now();
    ctorch_tensor_free(logits);
    first[0] = step[0];
    for (int64_t b = 0; b < batch; ++b) counts[b] = 1;
    for (int64_t t = 1; t < new_tokens; ++t) {
      CK(ctorch_lm_decode_batch(&logits, s, seqs, counts, (size_t)batch, step, (size_t)batch));
      greedy(step, logits, batch);
      ctorch_tensor_free(logits);
      first[t] = step[0];
    }
    double c = bench_now();
    ttft[r] = b_ - a;
    prefill[r] = (double)(prompt * batch) / (b_ - a);
    decode[r] = new_tokens > 1 ? (double)((new_tokens - 1) * batch) / (c - b_) : 0;
    ctorch_lm_session_free(s);
  }
  if (ppl_path) {
    int64_t n = 0;
    double ppl = perplexity(m, ppl_path, &n);
    printf("{\"perplexity\": %.4f, \"perplexity_tokens\": %" PRId64 ", ", ppl, n);
  } else {
    printf("{");
  }
  printf("\"load_s\": %.3f, \"prompt\": %" PRId64 ", \"new\": %" PRId64 ", \"batch\": %" PRId64
         ", \"threads\": %d, \"rounds\": %d, \"prefill_tok_s\": %.2f, \"decode_tok_s\": %.2f, "
         "\"ttft_ms\": %.2f, \"rss_mib\": %.1f, \"ids\": [",
         load_s, prompt, new_tokens, batch, threads, rounds, bench_median(prefill, (size_t)rounds),
         bench_median(decode, (size_t)rounds), 1e3 * bench_median(ttft, (size_t)rounds), rss_kib() / 1024.0);
  for (int64_t t = 0; t < new_tokens; ++t) printf("%s%" PRId64, t ? ", " : "", first[t]);
  printf("], \"model\": %s}\n", info);
  ctorch_string_free(info);
  ctorch_lm_model_free(m);
  free(ids), free(seqs), free(counts), free(step), free(first);
  return 0;
}
