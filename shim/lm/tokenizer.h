// The tokenizers of the language models: byte-level BPE (GPT-2, Llama 3,
// Qwen2, SmolLM2: tokenizer.json's BPE with a ByteLevel pre-tokenizer, or
// GGUF's "gpt2" model) and SentencePiece-style BPE with byte fallback
// (Llama 2, Mistral, TinyLlama: tokenizer.json's BPE with byte_fallback and
// a Metaspace/Replace pre-tokenizer, or GGUF's "llama" model). Pre-tokenizer
// regular expressions run on PCRE2 (Unicode classes \p{L}, \p{N}).
// A Tokenizer is immutable once built: every method is safe from many
// threads at once. Errors throw ctorch::StatusError (INVALID_ARGUMENT for bad
// files or text, naming the file and what is wrong).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lm/vocab.h"

namespace ctorch {
namespace lm {

class Tokenizer {
 public:
  // tokenizer_json: the text of tokenizer.json; config_json: the text of
  // tokenizer_config.json or "" (add_bos_token, add_eos_token, bos/eos token
  // names, chat_template); file: the folder's name, for messages.
  static std::shared_ptr<const Tokenizer> from_hf_json(const std::string &tokenizer_json,
                                                       const std::string &config_json, const std::string &file);
  static std::shared_ptr<const Tokenizer> from_vocab(const VocabSpec &v, const std::string &file);
  virtual ~Tokenizer() = default;

  // transformers' encode(text, add_special_tokens=add_special); with
  // parse_special false, special/added tokens in text are plain text.
  // text must be valid UTF-8.
  virtual std::vector<int64_t> encode(const std::string &text, bool add_special, bool parse_special) const = 0;
  // transformers' decode(ids, skip_special_tokens=skip_special), invalid
  // UTF-8 replaced by U+FFFD. Ids outside [0, n_vocab) are refused.
  virtual std::string decode(const int64_t *ids, size_t n, bool skip_special) const = 0;
  // What a window of a longer run of ids needs to know of the ids before it.
  struct Before {
    bool any = false;            // false: the window starts the ids
    bool first_dropped = false;  // decode leaves the very first id out
  };
  // decode over a window: with before.any, ids are the last n of a run whose
  // earlier ids end at a cut, and the result is what decode(the whole run)
  // gives after the earlier ids' text. *cut_after (where not null): whether
  // these ids end at a cut, a point no later id can change the text before
  // (a complete character, no byte run or pattern open across it); not
  // every point that is one is reported, and some decoder chains never cut.
  virtual std::string decode_window(const int64_t *ids, size_t n, bool skip_special, const Before &before,
                                    bool *cut_after) const = 0;
  // Whether decode leaves the id out of the text (a special token under
  // skip_special, a GGUF control token).
  virtual bool dropped(int64_t id, bool skip_special) const = 0;
  // The vocabulary entry's own string (tokenizer.json's key, GGUF's token).
  virtual std::string token_text(int64_t id) const = 0;
  virtual int64_t n_vocab() const = 0;
  virtual bool is_special(int64_t id) const = 0;
  // -1 where the tokenizer has none.
  virtual int64_t bos_id() const = 0;
  virtual int64_t eos_id() const = 0;
  // The texts a chat template sees as bos_token / eos_token ("" if none).
  virtual std::string bos_text() const = 0;
  virtual std::string eos_text() const = 0;
  // tokenizer_config.json's chat_template (a string, or the one named
  // "default" of a list), or GGUF's; "" if none.
  virtual std::string chat_template() const = 0;
};

// Text out of ids one at a time: the concatenation of every push and the
// final flush equals decode(all ids). A push hands out the text of the ids
// since the last cut once they end at one (decode_window): complete
// characters no later id can change, usually each token's own. Not
// thread-safe.
class StreamDecoder {
 public:
  StreamDecoder(std::shared_ptr<const Tokenizer> tok, bool skip_special);
  std::string push(int64_t id);
  std::string flush();
  // The ids since the last cut: what the next push decodes again, with its id.
  size_t window() const { return ids_.size(); }

 private:
  std::shared_ptr<const Tokenizer> tok_;
  bool skip_special_;
  std::vector<int64_t> ids_;       // the window: the ids since the last cut
  Tokenizer::Before before_;       // the ids before it
};

}  // namespace lm
}  // namespace ctorch
