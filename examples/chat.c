/*
 * Chat with a language model from C: load a GGUF file or a Hugging Face
 * folder, render the conversation through the model's own chat template,
 * and stream the answer as it is generated.
 *
 *   chat MODEL "question" [--system TEXT] [--max-tokens N] [--temperature T] [--seed S]
 *
 * Greedy by default (temperature 0); with --temperature the draw is seeded.
 * Prints the answer, then one line "finish=<reason> tokens=<n>" on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

/* Appends s to *out as a JSON string literal. */
static void json_string(char **out, size_t *len, const char *s) {
  size_t need = *len + 6 * strlen(s) + 3; /* \u00XX at most per byte, quotes */
  *out = realloc(*out, need + 1);
  char *p = *out + *len;
  *p++ = '"';
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') *p++ = '\\', *p++ = (char)c;
    else if (c == '\n') *p++ = '\\', *p++ = 'n';
    else if (c < 0x20) p += sprintf(p, "\\u%04x", c);
    else *p++ = (char)c;
  }
  *p++ = '"';
  *p = 0;
  *len = (size_t)(p - *out);
}

static void append(char **out, size_t *len, const char *s) {
  size_t n = strlen(s);
  *out = realloc(*out, *len + n + 1);
  memcpy(*out + *len, s, n + 1);
  *len += n;
}

static int fail(const char *what) {
  fprintf(stderr, "chat: %s: %s\n", what, ctorch_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: chat MODEL \"question\" [--system TEXT] [--max-tokens N] [--temperature T] [--seed S]\n");
    return 2;
  }
  const char *system = NULL, *max_tokens = "256", *temperature = "0", *seed = "0";
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--system")) system = argv[i + 1];
    else if (!strcmp(argv[i], "--max-tokens")) max_tokens = argv[i + 1];
    else if (!strcmp(argv[i], "--temperature")) temperature = argv[i + 1];
    else if (!strcmp(argv[i], "--seed")) seed = argv[i + 1];
  }
  /* The conversation as JSON messages: [{"role": ..., "content": ...}, ...]. */
  char *messages = NULL;
  size_t len = 0;
  append(&messages, &len, "[");
  if (system) {
    append(&messages, &len, "{\"role\": \"system\", \"content\": ");
    json_string(&messages, &len, system);
    append(&messages, &len, "}, ");
  }
  append(&messages, &len, "{\"role\": \"user\", \"content\": ");
  json_string(&messages, &len, argv[2]);
  append(&messages, &len, "}]");

  ctorch_lm_model model = NULL;
  ctorch_lm_session session = NULL;
  ctorch_lm_sampler sampler = NULL;
  ctorch_lm_stream stream = NULL;
  ctorch_tensor prompt = NULL;
  char *text = NULL, options[128];
  int rc = 1;
  if (ctorch_lm_load(&model, argv[1], NULL) != CTORCH_OK) { rc = fail("load"); goto done; }
  if (ctorch_lm_chat_apply(&text, model, messages, 1, NULL) != CTORCH_OK) { rc = fail("chat template"); goto done; }
  /* The template writes the specials itself: no BOS added, specials parsed. */
  if (ctorch_lm_tokenize(&prompt, model, text, 0, 1) != CTORCH_OK) { rc = fail("tokenize"); goto done; }
  int64_t n = 0;
  const int64_t *ids = NULL;
  if (ctorch_tensor_numel(&n, prompt) != CTORCH_OK || ctorch_tensor_data_ptr((void **)&ids, prompt) != CTORCH_OK) {
    rc = fail("prompt ids");
    goto done;
  }
  snprintf(options, sizeof options, "temperature=%s,seed=%s", temperature, seed);
  if (ctorch_lm_sampler_new(&sampler, options) != CTORCH_OK) { rc = fail("sampler"); goto done; }
  if (ctorch_lm_session_new(&session, model, n + atoll(max_tokens), 1) != CTORCH_OK) { rc = fail("session"); goto done; }
  snprintf(options, sizeof options, "max_tokens=%s", max_tokens);
  if (ctorch_lm_stream_new(&stream, session, 0, sampler, ids, (size_t)n, options) != CTORCH_OK) {
    rc = fail("stream");
    goto done;
  }
  int generated = 0;
  for (int finished = 0; !finished;) {
    char *piece = NULL;
    int64_t id = -1;
    if (ctorch_lm_stream_next(&piece, &id, &finished, stream) != CTORCH_OK) { rc = fail("generate"); goto done; }
    fputs(piece, stdout);
    fflush(stdout);
    ctorch_string_free(piece);
    generated += id >= 0;
  }
  const char *reason = "";
  ctorch_lm_stream_finish_reason(&reason, stream);
  printf("\n");
  fprintf(stderr, "finish=%s tokens=%d\n", reason, generated);
  rc = 0;
done:
  ctorch_lm_stream_free(stream);
  ctorch_lm_session_free(session);
  ctorch_lm_sampler_free(sampler);
  ctorch_tensor_free(prompt);
  ctorch_string_free(text);
  ctorch_lm_model_free(model);
  free(messages);
  return rc;
}
