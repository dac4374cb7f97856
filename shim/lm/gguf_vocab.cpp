// A GGUF file's vocabulary: the tokenizer.ggml.* keys (and
// tokenizer.chat_template) into a VocabSpec, each checked against the
// others (one score and one type per token, special ids inside the
// vocabulary) so the tokenizer built from it can index without checks.
#include "lm/gguf.h"

#include <algorithm>
#include <iterator>

#include "core/internal.h"

namespace ctorch {
namespace lm {

VocabSpec GgufFile::vocab() const {
  auto bad = [&](const std::string &what) { fail(CTORCH_INVALID_ARGUMENT, "'" + path_ + "': " + what); };
  VocabSpec v;
  if (!has("tokenizer.ggml.model")) bad("has no vocabulary (no tokenizer.ggml.model key)");
  if (!has("tokenizer.ggml.tokens")) bad("has no vocabulary (no tokenizer.ggml.tokens key)");
  v.model = str("tokenizer.ggml.model");
  v.pre = str_or("tokenizer.ggml.pre", "default");
  v.tokens = str_array("tokenizer.ggml.tokens");
  const size_t n = v.tokens.size();
  if (!n) bad("tokenizer.ggml.tokens is empty");
  if (has("tokenizer.ggml.scores")) {
    v.scores = f32_array("tokenizer.ggml.scores");
    if (v.scores.size() != n)
      bad("tokenizer.ggml.scores has " + std::to_string(v.scores.size()) + " entries for " + std::to_string(n) +
          " tokens");
  }
  if (has("tokenizer.ggml.token_type")) {
    std::vector<int64_t> types = int_array("tokenizer.ggml.token_type");
    if (types.size() != n)
      bad("tokenizer.ggml.token_type has " + std::to_string(types.size()) + " entries for " + std::to_string(n) +
          " tokens");
    v.types.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      // llama.cpp's llama_token_type: 0 undefined ... 6 byte.
      if (types[i] < 0 || types[i] > 6)
        bad("tokenizer.ggml.token_type of token " + std::to_string(i) + " is " + std::to_string(types[i]) +
            ", not a token type (0 to 6)");
      v.types.push_back(static_cast<int32_t>(types[i]));
    }
  }
  if (has("tokenizer.ggml.merges")) v.merges = str_array("tokenizer.ggml.merges");
  auto special = [&](const char *key, int64_t *out) {
    if (!has(key)) return;
    int64_t id = i64(key);
    if (id < 0 || static_cast<uint64_t>(id) >= n)
      bad(std::string(key) + " is " + std::to_string(id) + ", outside the vocabulary of " + std::to_string(n) +
          " tokens");
    *out = id;
  };
  special("tokenizer.ggml.bos_token_id", &v.bos);
  special("tokenizer.ggml.eos_token_id", &v.eos);
  special("tokenizer.ggml.unknown_token_id", &v.unk);
  special("tokenizer.ggml.padding_token_id", &v.pad);
  // Absent keys: llama.cpp's defaults (a SentencePiece vocabulary adds BOS
  // and a space prefix; a byte-level one neither, but for the pre-tokenizers
  // llama.cpp has add BOS: Llama 3's and those it groups with it, Tekken's,
  // Chameleon's).
  static const char *const kBosPre[] = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                                        "midm-2.0", "lfm2", "jina-v5-nano", "tekken", "chameleon"};
  bool bos_pre = v.model == "gpt2" && std::find(std::begin(kBosPre), std::end(kBosPre), v.pre) != std::end(kBosPre);
  v.add_bos = boolean_or("tokenizer.ggml.add_bos_token", v.model == "llama" || bos_pre);
  v.add_eos = boolean_or("tokenizer.ggml.add_eos_token", false);
  v.add_space_prefix = boolean_or("tokenizer.ggml.add_space_prefix", v.model == "llama");
  v.chat_template = str_or("tokenizer.chat_template", "");
  return v;
}

}  // namespace lm
}  // namespace ctorch
