// Tokenizer::from_vocab: a GGUF file's vocabulary (tokenizer.ggml.*) into a
// TokSpec that tokenizes as llama.cpp does: "gpt2" is byte-level BPE split
// by the regular expressions llama.cpp uses for the file's pre-tokenizer
// name, "llama" is SentencePiece's BPE (merges by score, byte fallback, a
// space before the text and after each added token). Token types are
// llama.cpp's (some texts are control tokens whatever the file says), and
// added tokens are matched longest first, as it matches them
// (tests/lm/tokenizer_vs_llamacpp.py compares the two).
#include <algorithm>
#include <unordered_set>

#include "core/internal.h"
#include "lm/tokenizer_internal.h"

namespace ctorch {
namespace lm {
namespace tok {
namespace {

// The pre-tokenizer names (tokenizer.ggml.pre) llama.cpp knows, grouped by
// the regular expressions it splits with (applied in turn, each splitting
// the pieces of the one before). Names outside these are refused.
const char *const kGpt2Re = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char *const kLlama3Re =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char *const kQwen2Re =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreName {
  const char *names[12];
  std::vector<const char *> regexes;
  bool ignore_merges;
};

const std::vector<PreName> &pre_names() {
  static const std::vector<PreName> k = {
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
       {kLlama3Re},
       true},
      {{"dbrx", "smaug-bpe"}, {kLlama3Re}, false},
      {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "megrez", "hunyuan", "solar-open"}, {kQwen2Re}, false},
      {{"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", "mellum2"},
       {R"(\p{N})", kGpt2Re},
       false},
      {{"gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "granite-docling", "exaone4", "gigachat", "a.x-4.0", "mellum"},
       {kGpt2Re},
       false},
      {{"default"},
       {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Re, R"(\p{N}+)", "[0-9][0-9][0-9]"},
       false},
  };
  return k;
}

// The token type llama.cpp gives a token whatever the file says: the texts
// it takes for end-of-generation and fill-in-the-middle tokens become
// control tokens (3), gpt-oss's channel markers user-defined ones (4);
// "<|end|>" is user-defined beside gpt-oss's "<|return|>" and "<|call|>"
// (or "<|calls|>" and "<|flush|>"), "</s>" normal beside "<|tool_response>"
// or "<|plamo:eos|>". (llama.cpp marks one text of each fill-in-the-middle
// list, the first its hash map yields, where the file names no id for it;
// every one of them is marked here.)
std::vector<int32_t> llama_cpp_types(const VocabSpec &v) {
  static const std::unordered_set<std::string> control = {
      // end of generation (and of turn, of message)
      "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
      "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
      "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>",
      "[e~[",
      // fill in the middle: prefix, suffix, middle, pad, repository, file separator
      "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>",
      "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
      "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>", "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>",
      "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>",
      "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
      "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>"};
  static const std::unordered_set<std::string> user = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};
  const size_t n = v.tokens.size();
  std::vector<int32_t> t(n, 1);
  if (!v.types.empty()) t = v.types;
  std::unordered_set<std::string> present;
  for (size_t i = 0; i < n; ++i) {
    if (control.count(v.tokens[i])) t[i] = 3, present.insert(v.tokens[i]);
    else if (user.count(v.tokens[i])) t[i] = 4;
  }
  auto has = [&](const char *x) { return present.count(x) > 0; };
  bool harmony_end = (has("<|return|>") && has("<|call|>")) || (has("<|calls|>") && has("<|flush|>"));
  bool normal_eos = std::any_of(v.tokens.begin(), v.tokens.end(),
                                [](const std::string &x) { return x == "<|tool_response>" || x == "<|plamo:eos|>"; });
  for (size_t i = 0; i < n; ++i) {
    if (harmony_end && v.tokens[i] == "<|end|>") t[i] = 4;
    if (normal_eos && v.tokens[i] == "</s>") t[i] = 1;
  }
  return t;
}

const PreName &find_pre(const std::string &pre, const std::string &file) {
  const std::string name = pre.empty() ? "default" : pre;
  std::string known;
  for (const PreName &p : pre_names())
    for (const char *n : p.names) {
      if (!n) break;
      if (name == n) return p;
      known += std::string(known.empty() ? "" : ", ") + n;
    }
  fail_file(file, "the pre-tokenizer '" + name + "' (tokenizer.ggml.pre) is not supported (" + known + " are)");
}

}  // namespace
}  // namespace tok

std::shared_ptr<const Tokenizer> Tokenizer::from_vocab(const VocabSpec &v, const std::string &file) {
  using namespace tok;
  TokSpec s;
  s.file = file;
  std::fill(std::begin(s.byte_ids), std::end(s.byte_ids), int64_t(-1));
  const size_t n = v.tokens.size();
  if (n == 0 || n > kMaxVocab)
    fail_file(file, "tokenizer.ggml.tokens has " + std::to_string(n) + " entries (1 to " + std::to_string(kMaxVocab) + ")");
  if (!v.types.empty() && v.types.size() != n)
    fail_file(file, "tokenizer.ggml.token_type has " + std::to_string(v.types.size()) + " entries for " + std::to_string(n) + " tokens");
  if (!v.scores.empty() && v.scores.size() != n)
    fail_file(file, "tokenizer.ggml.scores has " + std::to_string(v.scores.size()) + " entries for " + std::to_string(n) + " tokens");
  s.vocab = v.tokens;
  s.ids.reserve(n);
  const std::vector<int32_t> types = llama_cpp_types(v);
  for (size_t i = 0; i < n; ++i) {
    if (v.tokens[i].size() > kMaxTokenBytes) fail_file(file, "token " + std::to_string(i) + " is longer than " + std::to_string(kMaxTokenBytes) + " bytes");
    s.ids[v.tokens[i]] = int64_t(i);  // a repeated text names its last id, as in llama.cpp
    int32_t type = types[i];
    if (type == 0 || type == 5) {  // undefined, unused: llama.cpp's decode gives nothing for them
      if (s.unrendered.empty()) s.unrendered.resize(n);
      s.unrendered[i] = true;
    }
    // Control (3) and unknown (2) tokens are special; user-defined ones (4)
    // are matched in the text even when special tokens are not. All are
    // matched longest first, as llama.cpp does.
    if ((type == 2 || type == 3 || type == 4) && !v.tokens[i].empty()) {
      Added a;
      a.content = v.tokens[i];
      a.id = int64_t(i);
      a.special = type != 4;
      s.added_by_id.emplace(a.id, s.added.size());
      s.added.push_back(std::move(a));
    }
  }
  s.added_longest_first = true;
  if (s.added.size() > kMaxAdded) fail_file(file, "more than " + std::to_string(kMaxAdded) + " control tokens");
  auto check_id = [&](int64_t id, const char *key) {
    if (id >= int64_t(n)) fail_file(file, std::string(key) + " " + std::to_string(id) + " is outside the vocabulary");
    return id;
  };
  s.bos = v.bos >= 0 ? check_id(v.bos, "tokenizer.ggml.bos_token_id") : -1;
  s.eos = v.eos >= 0 ? check_id(v.eos, "tokenizer.ggml.eos_token_id") : -1;
  s.unk = v.unk >= 0 ? check_id(v.unk, "tokenizer.ggml.unknown_token_id") : -1;
  s.add_bos = v.add_bos;
  s.add_eos = v.add_eos;
  s.chat_template = v.chat_template;

  if (v.model == "gpt2") {
    if (v.merges.size() > kMaxMerges) fail_file(file, "more than " + std::to_string(kMaxMerges) + " merges");
    s.merges.reserve(v.merges.size());
    for (size_t i = 0; i < v.merges.size(); ++i) {
      const std::string &mg = v.merges[i];
      size_t sp = mg.find(' ', 1);
      if (sp == std::string::npos) fail_file(file, "merge " + std::to_string(i) + " ('" + mg.substr(0, 64) + "') has no space");
      std::string a = mg.substr(0, sp), b = mg.substr(sp + 1);
      auto ia = s.ids.find(a), ib = s.ids.find(b), im = s.ids.find(a + b);
      if (ia == s.ids.end() || ib == s.ids.end() || im == s.ids.end())
        fail_file(file, "merge " + std::to_string(i) + " ('" + mg.substr(0, 64) + "') names a token the vocabulary lacks");
      s.merges.emplace(uint64_t(ia->second) << 32 | uint64_t(ib->second), std::make_pair(int32_t(i), int32_t(im->second)));
    }
    const PreName &p = find_pre(v.pre, file);
    s.ignore_merges = p.ignore_merges;
    for (const char *re : p.regexes) {
      PreStep st{};
      st.kind = PreStep::Split;
      st.re = Regex::compile(re, file);
      st.behavior = Behavior::Isolated;
      s.pre.push_back(std::move(st));
    }
    PreStep bl{};
    bl.kind = PreStep::ByteLevel;  // the bytes as characters; no prefix, no further split
    s.pre.push_back(std::move(bl));
    DecStep d{};
    d.kind = DecStep::ByteLevel;
    s.dec.push_back(d);
  } else if (v.model == "llama") {
    if (v.scores.empty()) fail_file(file, "a \"llama\" vocabulary without tokenizer.ggml.scores");
    s.by_score = true;
    s.scores = v.scores;
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      auto it = s.ids.find(name);
      if (it != s.ids.end()) s.byte_ids[b] = it->second;
    }
    const std::string space = "\xE2\x96\x81";  // U+2581, SentencePiece's space
    // llama.cpp puts a space before every stretch of text that starts the
    // input or follows a special token: Prepend on each stretch.
    if (v.add_space_prefix) s.norm.push_back({NormStep::Prepend, space, "", nullptr, false, false});
    s.norm.push_back({NormStep::Replace, " ", space, nullptr, false, false});
    DecStep rep{};
    rep.kind = DecStep::Replace;
    rep.a = space;
    rep.b = " ";
    s.dec.push_back(rep);
    DecStep fb{};
    fb.kind = DecStep::ByteFallback;
    s.dec.push_back(fb);
    DecStep fuse{};
    fuse.kind = DecStep::Fuse;
    s.dec.push_back(fuse);
    if (v.add_space_prefix) {
      DecStep strip{};
      strip.kind = DecStep::Strip;
      strip.a = " ";
      strip.start = 1;
      strip.first_piece = true;
      s.dec.push_back(strip);
    }
  } else {
    fail_file(file, "the tokenizer model '" + v.model + "' (tokenizer.ggml.model) is not supported (gpt2, llama are)");
  }
  return build(std::move(s));
}

}  // namespace lm
}  // namespace ctorch
