/*
 * Language-model speed through the public C API (ctorch_lm_*): time to
 * first token, prefill and greedy decode, for a batch of sequences that
 * share one session.
 *
 *   lm_bench --model PATH [--options "dtype=bfloat16,device=cuda,init=random"]
 *            [--threads N] [--prompt 128] [--new 128] [--batch 1] [--rounds 3]
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

int main(int argc, char **argv) {
  const char *model_path = NULL, *options = NULL;
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
    else {
      fprintf(stderr, "lm_bench: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (!model_path || prompt < 1 || new_tokens < 1 || batch < 1 || rounds < 1 || rounds > 64) {
    fprintf(stderr, "usage: lm_bench --model PATH [--options TEXT] [--threads N] [--prompt N] [--new N] "
                    "[--batch N] [--rounds N]\n");
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
  printf("{\"load_s\": %.3f, \"prompt\": %" PRId64 ", \"new\": %" PRId64 ", \"batch\": %" PRId64
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
