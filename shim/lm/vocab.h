// A vocabulary as a GGUF file's tokenizer.ggml.* keys give it: what
// gguf.cpp reads and Tokenizer::from_vocab builds a tokenizer from. A
// folder's tokenizer.json is read by Tokenizer::from_hf_json instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ctorch {
namespace lm {

struct VocabSpec {
  std::string model;  // tokenizer.ggml.model: "gpt2" (byte-level BPE) or "llama" (SentencePiece BPE)
  std::string pre;    // tokenizer.ggml.pre: the pre-tokenizer ("smollm", "llama-bpe", "qwen2", "gpt-2", "default", ...)
  std::vector<std::string> tokens;  // tokenizer.ggml.tokens
  std::vector<float> scores;        // tokenizer.ggml.scores (may be empty)
  std::vector<int32_t> types;       // tokenizer.ggml.token_type: 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte
  std::vector<std::string> merges;  // tokenizer.ggml.merges: "left right"
  int64_t bos = -1, eos = -1, unk = -1, pad = -1;  // tokenizer.ggml.*_token_id (-1: none)
  bool add_bos = false, add_eos = false;           // tokenizer.ggml.add_bos_token / add_eos_token
  bool add_space_prefix = true;                    // tokenizer.ggml.add_space_prefix (SentencePiece only)
  std::string chat_template;                       // tokenizer.chat_template ("" if none)
};

}  // namespace lm
}  // namespace ctorch
