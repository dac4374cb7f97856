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
  // How many leading bytes of text = decode(ids, n, skip_special) no id
  // appended later can change (a character still incomplete, a run of byte
  // tokens not yet settled, a clean-up pattern begun): what a streaming
  // decoder may hand out.
  virtual size_t stable_length(const int64_t *ids, size_t n, bool skip_special, const std::string &text) const = 0;
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
// final flush equals decode(all ids) (transformers' TextStreamer: decode the
// ids so far, hand out the new complete characters). Not thread-safe.
class StreamDecoder {
 public:
  StreamDecoder(std::shared_ptr<const Tokenizer> tok, bool skip_special);
  std::string push(int64_t id);
  std::string flush();

 private:
  std::shared_ptr<const Tokenizer> tok_;
  bool skip_special_;
  std::vector<int64_t> ids_;
  size_t emitted_ = 0;  // bytes of decode(ids_) already handed out
};

}  // namespace lm
}  // namespace ctorch
