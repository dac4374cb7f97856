// The pieces the tokenizer files share (private to lm/): a tokenizer is a
// TokSpec (vocabulary, merges, added tokens, and the normalizer,
// pre-tokenizer, post-processor and decoder steps) that tokenizer_hf.cpp
// fills from tokenizer.json and tokenizer_gguf.cpp from a GGUF vocabulary;
// tokenizer.cpp runs it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lm/tokenizer.h"

namespace ctorch {
namespace lm {
namespace tok {

// Bounds on what a tokenizer file may declare (a hostile file is refused
// before it allocates without limit).
constexpr size_t kMaxVocab = size_t(1) << 22;       // 4,194,304 entries
constexpr size_t kMaxMerges = size_t(1) << 23;      // 8,388,608 merges
constexpr size_t kMaxTokenBytes = 4096;             // one vocabulary entry
constexpr size_t kMaxAdded = size_t(1) << 20;       // added tokens
constexpr size_t kMaxPattern = 64 * 1024;           // one regular expression
constexpr size_t kMaxSteps = 64;                    // steps of one Sequence
constexpr size_t kMaxJsonBytes = size_t(256) << 20; // tokenizer.json's text

// [[noreturn]] INVALID_ARGUMENT "FILE: MSG".
[[noreturn]] void fail_file(const std::string &file, const std::string &msg);

// A compiled PCRE2 pattern (UTF, UCP; JIT where the library has it),
// shareable between threads: each match uses its own match data.
class Regex {
 public:
  // Throws INVALID_ARGUMENT naming `file` and the pattern's error.
  static std::shared_ptr<const Regex> compile(const std::string &pattern, const std::string &file);
  ~Regex();
  // Appends the [begin, end) of every non-empty match in s[0, n), left to
  // right, not overlapping. Throws INVALID_ARGUMENT where the match limit
  // (a pattern that backtracks without bound) is reached.
  void find_all(const char *s, size_t n, std::vector<std::pair<size_t, size_t>> &out) const;
  Regex(const Regex &) = delete;
  Regex &operator=(const Regex &) = delete;

 private:
  Regex() = default;
  void *code_ = nullptr;   // pcre2_code_8
  void *mctx_ = nullptr;   // pcre2_match_context_8 (limits), read-only once made
  std::string pattern_;
};

// How a Split keeps the matches (tokenizers' SplitDelimiterBehavior).
enum class Behavior { Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous };

// A normalizer step, applied to each stretch of text between added tokens.
struct NormStep {
  enum Kind { Prepend, Replace, Strip, NFC } kind;
  std::string a, b;                   // Prepend: a; Replace: a (literal) -> b
  std::shared_ptr<const Regex> re;    // Replace with a Regex pattern
  bool left = false, right = false;   // Strip
};

// A pre-tokenizer step: splits each piece into smaller ones.
struct PreStep {
  enum Kind { Split, ByteLevel, Metaspace } kind;
  // Split: a regex or a literal, and what becomes of the matches.
  std::shared_ptr<const Regex> re;
  std::string literal;
  Behavior behavior = Behavior::Isolated;
  bool invert = false;
  // ByteLevel
  bool add_prefix_space = false;
  // Metaspace: the replacement for ' ', when to prepend it, whether to split on it.
  std::string replacement;
  enum Prepend { Always, First, Never } prepend = Always;
  bool split = true;
};

// A decoder step over the list of token strings.
struct DecStep {
  enum Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace } kind;
  std::string a, b;                      // Replace: a -> b; Strip: a (one character); Metaspace: a (replacement)
  size_t start = 0, stop = 0;            // Strip
  bool prepend = true;                   // Metaspace: strip the space the encoder prepended
  // Strip: not run where the first id is left out (a special token under
  // skip_special, an unrendered one): llama.cpp takes the space off the
  // first id's piece only, and that piece is empty.
  bool first_piece = false;
};

struct Added {
  std::string content;
  int64_t id = -1;
  bool special = false, lstrip = false, rstrip = false, normalized = false, single_word = false;
};

struct TokSpec {
  std::string file;  // for messages
  // The model's vocabulary: id -> string, string -> id.
  std::vector<std::string> vocab;
  std::unordered_map<std::string, int64_t> ids;
  // Merging: by rank (tokenizers' BPE, GGUF "gpt2": a pair of ids -> rank
  // and the merged id) or by score (SentencePiece, GGUF "llama": the
  // merged string's score, higher first).
  bool by_score = false;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;  // (left << 32 | right) -> (rank, new id)
  std::vector<float> scores;
  bool byte_fallback = false, fuse_unk = false, ignore_merges = false;
  int64_t unk = -1;
  int64_t byte_ids[256];  // "<0xXX>" ids where byte_fallback (-1: absent)
  // Added tokens (special or not), matched in the text before the model runs:
  // leftmost, then longest (tokenizers), or each token in turn, longest
  // first, at every place it occurs in what is still text (llama.cpp).
  std::vector<Added> added;
  bool added_longest_first = false;
  // Ids a decode leaves out whatever skip_special says (GGUF's unused and
  // undefined tokens, which llama.cpp renders as nothing); empty: none.
  std::vector<bool> unrendered;
  std::unordered_map<int64_t, size_t> added_by_id;  // id -> index in `added`
  std::vector<NormStep> norm;
  std::vector<PreStep> pre;
  std::vector<DecStep> dec;
  // The post-processor: ids around the sequence when add_special; add_bos /
  // add_eos put the BOS / EOS id first / last besides (build resolves them).
  std::vector<int64_t> prefix, suffix;
  bool add_bos = false, add_eos = false;
  bool cleanup_spaces = false;  // transformers' clean_up_tokenization_spaces on decode
  // BOS / EOS: by id (GGUF) or by text (tokenizer_config.json); build
  // finds the one from the other.
  int64_t bos = -1, eos = -1;
  std::string bos_text, eos_text, chat_template;
  int64_t n_vocab = 0;  // 1 + the largest id (vocabulary and added tokens)
};

// Builds the runnable tokenizer (checks the spec, indexes the added tokens).
std::shared_ptr<const Tokenizer> build(TokSpec &&spec);

// The GPT-2 byte <-> character map of byte-level BPE.
const std::string &byte_char(uint8_t b);  // the UTF-8 of byte b's character
int byte_of_char(uint32_t cp);             // the byte of a character, -1 if none

// s in Unicode Normalization Form C (ICU's), as tokenizers' NFC normalizer.
std::string nfc(const std::string &s);
// Appends code point cp as UTF-8.
void append_utf8(std::string &out, uint32_t cp);
// Decodes the valid UTF-8 sequence at s[i] (advancing i).
uint32_t next_cp(const std::string &s, size_t &i);
// Unicode White_Space (Rust's char::is_whitespace, what tokenizers uses).
bool is_white_space(uint32_t cp);
// Replaces invalid UTF-8 by U+FFFD as Rust's String::from_utf8_lossy does.
std::string lossy_utf8(const std::string &bytes);

}  // namespace tok
}  // namespace lm
}  // namespace ctorch
