// Tokenizer::from_hf_json: tokenizer.json (Hugging Face tokenizers' file)
// and tokenizer_config.json (transformers') into a TokSpec. Every step type
// the file names is either read completely or refused by name: a tokenizer
// that would run differently from transformers is never built.
#include "core/internal.h"
#include "json/json.h"
#include "lm/tokenizer_internal.h"

namespace ctorch {
namespace lm {
namespace tok {
namespace {

using json::Value;

// The regular expression of tokenizers' ByteLevel pre-tokenizer (GPT-2's).
const char *const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Reader {
  const std::string &file;

  [[noreturn]] void bad(const std::string &where, const std::string &msg) const { fail_file(file, where + ": " + msg); }

  const Value &member(const Value &o, const char *key, const std::string &where) const {
    const Value *v = o.kind == Value::Object ? o.find(key) : nullptr;
    if (!v) bad(where, std::string("has no \"") + key + "\"");
    return *v;
  }
  const Value *opt(const Value &o, const char *key) const {
    const Value *v = o.kind == Value::Object ? o.find(key) : nullptr;
    return v && v->kind != Value::Null ? v : nullptr;
  }
  std::string str(const Value &v, const std::string &where) const {
    if (v.kind != Value::String) bad(where, "is not a string");
    return v.text;
  }
  bool flag(const Value &o, const char *key, bool dflt, const std::string &where) const {
    const Value *v = opt(o, key);
    if (!v) return dflt;
    if (v->kind != Value::Bool) bad(where + "." + key, "is not true or false");
    return v->boolean;
  }
  uint64_t u64(const Value &v, uint64_t max, const std::string &where) const {
    uint64_t x = 0;
    if (v.kind != Value::Number || !json::as_u64(v, &x)) bad(where, "is not a non-negative integer");
    if (x > max) bad(where, std::to_string(x) + " is more than " + std::to_string(max));
    return x;
  }
  const std::vector<Value> &array(const Value &v, size_t max, const std::string &where) const {
    if (v.kind != Value::Array) bad(where, "is not an array");
    if (v.items.size() > max) bad(where, "has " + std::to_string(v.items.size()) + " entries (at most " + std::to_string(max) + ")");
    return v.items;
  }
  std::string type_of(const Value &v, const std::string &where) const {
    if (v.kind != Value::Object) bad(where, "is not an object");
    return str(member(v, "type", where), where + ".type");
  }
  // {"String": s} or {"Regex": r}: the literal, or the compiled regex.
  void pattern(const Value &v, const std::string &where, std::string &lit, std::shared_ptr<const Regex> &re) const {
    if (const Value *s = opt(v, "String")) lit = str(*s, where + ".String");
    else if (const Value *r = opt(v, "Regex")) re = Regex::compile(str(*r, where + ".Regex"), file);
    else bad(where, "is neither {\"String\": ...} nor {\"Regex\": ...}");
  }

  void normalizer(const Value &v, const std::string &where, std::vector<NormStep> &out) const {
    std::string t = type_of(v, where);
    NormStep n{};
    if (t == "Sequence") {
      const auto &items = array(member(v, "normalizers", where), kMaxSteps, where + ".normalizers");
      for (size_t i = 0; i < items.size(); ++i) normalizer(items[i], where + ".normalizers[" + std::to_string(i) + "]", out);
      return;
    } else if (t == "Prepend") {
      n.kind = NormStep::Prepend;
      n.a = str(member(v, "prepend", where), where + ".prepend");
    } else if (t == "Replace") {
      n.kind = NormStep::Replace;
      pattern(member(v, "pattern", where), where + ".pattern", n.a, n.re);
      n.b = str(member(v, "content", where), where + ".content");
    } else if (t == "Strip") {
      n.kind = NormStep::Strip;
      n.left = flag(v, "strip_left", false, where);
      n.right = flag(v, "strip_right", false, where);
    } else {
      bad(where, "the normalizer '" + t + "' is not supported (Sequence, Prepend, Replace, Strip are)");
    }
    out.push_back(std::move(n));
  }

  Behavior behavior(const Value &v, const std::string &where) const {
    std::string b = str(v, where);
    if (b == "Isolated") return Behavior::Isolated;
    if (b == "Removed") return Behavior::Removed;
    if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
    if (b == "MergedWithNext") return Behavior::MergedWithNext;
    if (b == "Contiguous") return Behavior::Contiguous;
    bad(where, "unknown split behavior '" + b + "'");
  }

  PreStep::Prepend prepend_scheme(const Value &v, const std::string &where) const {
    if (const Value *s = opt(v, "prepend_scheme")) {
      std::string p = str(*s, where + ".prepend_scheme");
      if (p == "always") return PreStep::Always;
      if (p == "first") return PreStep::First;
      if (p == "never") return PreStep::Never;
      bad(where + ".prepend_scheme", "unknown scheme '" + p + "'");
    }
    return flag(v, "add_prefix_space", true, where) ? PreStep::Always : PreStep::Never;
  }

  std::string one_char(const Value &v, const std::string &where) const {
    std::string s = str(v, where);
    size_t i = 0;
    if (s.empty() || (next_cp(s, i), i != s.size())) bad(where, "is not one character");
    return s;
  }

  void pre_tokenizer(const Value &v, const std::string &where, std::vector<PreStep> &out) const {
    std::string t = type_of(v, where);
    PreStep p{};
    if (t == "Sequence") {
      const auto &items = array(member(v, "pretokenizers", where), kMaxSteps, where + ".pretokenizers");
      for (size_t i = 0; i < items.size(); ++i)
        pre_tokenizer(items[i], where + ".pretokenizers[" + std::to_string(i) + "]", out);
      return;
    } else if (t == "Split") {
      p.kind = PreStep::Split;
      pattern(member(v, "pattern", where), where + ".pattern", p.literal, p.re);
      p.behavior = behavior(member(v, "behavior", where), where + ".behavior");
      p.invert = flag(v, "invert", false, where);
    } else if (t == "ByteLevel") {
      p.kind = PreStep::ByteLevel;
      p.add_prefix_space = flag(v, "add_prefix_space", true, where);
      if (flag(v, "use_regex", true, where)) p.re = Regex::compile(kGpt2Pattern, file);
    } else if (t == "Metaspace") {
      p.kind = PreStep::Metaspace;
      p.replacement = one_char(member(v, "replacement", where), where + ".replacement");
      p.prepend = prepend_scheme(v, where);
      p.split = flag(v, "split", true, where);
    } else if (t == "Digits") {
      // tokenizers' Digits: runs of numeric characters (\p{N}), each digit
      // alone where individual_digits.
      p.kind = PreStep::Split;
      bool each = flag(v, "individual_digits", false, where);
      p.re = Regex::compile(each ? "\\p{N}" : "\\p{N}+", file);
      p.behavior = Behavior::Isolated;
    } else {
      bad(where, "the pre-tokenizer '" + t + "' is not supported (Sequence, Split, ByteLevel, Metaspace, Digits are)");
    }
    out.push_back(std::move(p));
  }

  void decoder(const Value &v, const std::string &where, std::vector<DecStep> &out) const {
    std::string t = type_of(v, where);
    DecStep d{};
    if (t == "Sequence") {
      const auto &items = array(member(v, "decoders", where), kMaxSteps, where + ".decoders");
      for (size_t i = 0; i < items.size(); ++i) decoder(items[i], where + ".decoders[" + std::to_string(i) + "]", out);
      return;
    } else if (t == "ByteLevel") {
      d.kind = DecStep::ByteLevel;
    } else if (t == "Replace") {
      d.kind = DecStep::Replace;
      std::shared_ptr<const Regex> re;
      pattern(member(v, "pattern", where), where + ".pattern", d.a, re);
      if (re) bad(where, "a Replace decoder with a Regex pattern is not supported");
      d.b = str(member(v, "content", where), where + ".content");
    } else if (t == "ByteFallback") {
      d.kind = DecStep::ByteFallback;
    } else if (t == "Fuse") {
      d.kind = DecStep::Fuse;
    } else if (t == "Strip") {
      d.kind = DecStep::Strip;
      d.a = one_char(member(v, "content", where), where + ".content");
      d.start = u64(member(v, "start", where), 1 << 20, where + ".start");
      d.stop = u64(member(v, "stop", where), 1 << 20, where + ".stop");
    } else if (t == "Metaspace") {
      d.kind = DecStep::Metaspace;
      d.a = one_char(member(v, "replacement", where), where + ".replacement");
      d.prepend = prepend_scheme(v, where) != PreStep::Never;
    } else {
      bad(where, "the decoder '" + t + "' is not supported (Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace are)");
    }
    out.push_back(std::move(d));
  }

  // The ids the post-processor puts around a single sequence.
  void post_processor(const Value &v, const std::string &where, TokSpec &s) const {
    std::string t = type_of(v, where);
    if (t == "Sequence") {
      const auto &items = array(member(v, "processors", where), kMaxSteps, where + ".processors");
      for (size_t i = 0; i < items.size(); ++i) post_processor(items[i], where + ".processors[" + std::to_string(i) + "]", s);
    } else if (t == "ByteLevel") {
      // offsets only
    } else if (t == "TemplateProcessing") {
      const Value &specials = member(v, "special_tokens", where);
      if (specials.kind != Value::Object) bad(where + ".special_tokens", "is not an object");
      const auto &single = array(member(v, "single", where), kMaxSteps, where + ".single");
      s.prefix.clear();
      s.suffix.clear();
      bool seen_a = false;
      for (size_t i = 0; i < single.size(); ++i) {
        std::string w = where + ".single[" + std::to_string(i) + "]";
        if (const Value *sq = opt(single[i], "Sequence")) {
          std::string id = str(member(*sq, "id", w), w + ".Sequence.id");
          if (id != "A" || seen_a) bad(w, "a single-sequence template has one sequence, A");
          seen_a = true;
        } else if (const Value *sp = opt(single[i], "SpecialToken")) {
          std::string name = str(member(*sp, "id", w), w + ".SpecialToken.id");
          const Value *tok = specials.find(name);
          if (!tok) bad(w, "names '" + name + "', which special_tokens lacks");
          for (const Value &x : array(member(*tok, "ids", w), kMaxSteps, where + ".special_tokens." + name + ".ids"))
            (seen_a ? s.suffix : s.prefix).push_back(int64_t(u64(x, kMaxVocab - 1, where + ".special_tokens." + name)));
        } else {
          bad(w, "is neither a Sequence nor a SpecialToken");
        }
      }
      if (!seen_a) bad(where + ".single", "has no sequence A");
    } else if (t == "BertProcessing" || t == "RobertaProcessing") {
      auto pair_id = [&](const char *key) {
        const auto &p = array(member(v, key, where), 2, where + "." + key);
        if (p.size() != 2) bad(where + "." + key, "is not [token, id]");
        return int64_t(u64(p[1], kMaxVocab - 1, where + "." + key + "[1]"));
      };
      s.prefix.assign(1, pair_id("cls"));
      s.suffix.assign(1, pair_id("sep"));
    } else {
      bad(where, "the post-processor '" + t + "' is not supported");
    }
  }
};

// A token named in tokenizer_config.json: a string or {"content": ...}.
std::string token_name(const Reader &r, const Value &v, const std::string &where) {
  if (v.kind == Value::Object) return r.str(r.member(v, "content", where), where + ".content");
  return r.str(v, where);
}

json::Value parse_json(const std::string &text, const std::string &file) {
  if (text.size() > kMaxJsonBytes)
    fail_file(file, std::to_string(text.size()) + " bytes (at most " + std::to_string(kMaxJsonBytes) + ")");
  struct Budget {
    uint64_t left;
  } budget{uint64_t(16) * text.size() + (uint64_t(1) << 20)};
  try {
    return json::parse(text.data(), text.size(),
                       [](void *ctx, uint64_t bytes) {
                         auto *b = static_cast<Budget *>(ctx);
                         if (bytes > b->left) throw json::JsonError("the parsed document would take too much memory");
                         b->left -= bytes;
                       },
                       &budget);
  } catch (const json::JsonError &e) {
    fail_file(file, std::string("not valid JSON: ") + e.what());
  }
}

}  // namespace
}  // namespace tok

std::shared_ptr<const Tokenizer> Tokenizer::from_hf_json(const std::string &tokenizer_json, const std::string &config_json,
                                                         const std::string &file) {
  using namespace tok;
  const std::string tfile = file + "/tokenizer.json", cfile = file + "/tokenizer_config.json";
  Value root = parse_json(tokenizer_json, tfile);
  Reader r{tfile};
  if (root.kind != Value::Object) r.bad("the file", "is not a JSON object");
  TokSpec s;
  s.file = tfile;
  std::fill(std::begin(s.byte_ids), std::end(s.byte_ids), int64_t(-1));

  // The model: BPE.
  const Value &m = r.member(root, "model", "the file");
  if (const Value *t = r.opt(m, "type"))
    if (r.str(*t, "model.type") != "BPE")
      r.bad("model.type", "the model '" + t->text + "' is not supported (BPE is)");
  for (const char *k : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const Value *x = r.opt(m, k))
      if (!r.str(*x, std::string("model.") + k).empty()) r.bad(std::string("model.") + k, "is not supported");
  if (const Value *x = r.opt(m, "dropout"))
    if (!(x->kind == Value::Number && (x->text == "0" || x->text == "0.0"))) r.bad("model.dropout", "is not supported");
  s.byte_fallback = r.flag(m, "byte_fallback", false, "model");
  s.fuse_unk = r.flag(m, "fuse_unk", false, "model");
  s.ignore_merges = r.flag(m, "ignore_merges", false, "model");
  const Value &vocab = r.member(m, "vocab", "model");
  if (vocab.kind != Value::Object) r.bad("model.vocab", "is not an object");
  if (vocab.members.size() > kMaxVocab) r.bad("model.vocab", "has more than " + std::to_string(kMaxVocab) + " entries");
  s.ids.reserve(vocab.members.size());
  for (const auto &kv : vocab.members) {
    if (kv.first.size() > kMaxTokenBytes) r.bad("model.vocab", "an entry of " + std::to_string(kv.first.size()) + " bytes");
    int64_t id = int64_t(r.u64(kv.second, kMaxVocab - 1, "model.vocab[\"" + kv.first.substr(0, 64) + "\"]"));
    if (size_t(id) >= s.vocab.size()) s.vocab.resize(id + 1);
    if (!s.vocab[id].empty()) r.bad("model.vocab", "id " + std::to_string(id) + " is given twice");
    s.vocab[id] = kv.first;
    s.ids.emplace(kv.first, id);
  }
  const auto &merges = r.array(r.member(m, "merges", "model"), kMaxMerges, "model.merges");
  s.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    std::string where = "model.merges[" + std::to_string(i) + "]", a, b;
    if (merges[i].kind == Value::String) {
      size_t sp = merges[i].text.find(' ');
      if (sp == std::string::npos || merges[i].text.find(' ', sp + 1) != std::string::npos)
        r.bad(where, "is not two tokens separated by one space");
      a = merges[i].text.substr(0, sp);
      b = merges[i].text.substr(sp + 1);
    } else {
      const auto &p = r.array(merges[i], 2, where);
      if (p.size() != 2) r.bad(where, "is not a pair");
      a = r.str(p[0], where);
      b = r.str(p[1], where);
    }
    auto ia = s.ids.find(a), ib = s.ids.find(b), im = s.ids.find(a + b);
    if (ia == s.ids.end() || ib == s.ids.end() || im == s.ids.end())
      r.bad(where, "'" + a + " " + b + "' names a token the vocabulary lacks");
    // The first of two equal merges ranks (tokenizers keeps the first).
    s.merges.emplace(uint64_t(ia->second) << 32 | uint64_t(ib->second), std::make_pair(int32_t(i), int32_t(im->second)));
  }
  if (const Value *u = r.opt(m, "unk_token")) {
    auto it = s.ids.find(r.str(*u, "model.unk_token"));
    if (it == s.ids.end()) r.bad("model.unk_token", "'" + u->text + "' is not in the vocabulary");
    s.unk = it->second;
  }
  if (s.byte_fallback)
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      auto it = s.ids.find(name);
      if (it != s.ids.end()) s.byte_ids[b] = it->second;
    }

  // Added tokens.
  if (const Value *at = r.opt(root, "added_tokens")) {
    const auto &items = r.array(*at, kMaxAdded, "added_tokens");
    for (size_t i = 0; i < items.size(); ++i) {
      std::string where = "added_tokens[" + std::to_string(i) + "]";
      Added a;
      a.id = int64_t(r.u64(r.member(items[i], "id", where), kMaxVocab - 1, where + ".id"));
      a.content = r.str(r.member(items[i], "content", where), where + ".content");
      if (a.content.empty() || a.content.size() > kMaxTokenBytes) r.bad(where + ".content", "is empty or too long");
      a.special = r.flag(items[i], "special", false, where);
      a.lstrip = r.flag(items[i], "lstrip", false, where);
      a.rstrip = r.flag(items[i], "rstrip", false, where);
      a.normalized = r.flag(items[i], "normalized", !a.special, where);
      a.single_word = r.flag(items[i], "single_word", false, where);
      if (!s.added_by_id.emplace(a.id, s.added.size()).second) r.bad(where, "id " + std::to_string(a.id) + " is added twice");
      s.added.push_back(std::move(a));
    }
  }

  if (const Value *n = r.opt(root, "normalizer")) r.normalizer(*n, "normalizer", s.norm);
  if (const Value *p = r.opt(root, "pre_tokenizer")) r.pre_tokenizer(*p, "pre_tokenizer", s.pre);
  if (const Value *d = r.opt(root, "decoder")) r.decoder(*d, "decoder", s.dec);
  if (const Value *p = r.opt(root, "post_processor")) r.post_processor(*p, "post_processor", s);

  // tokenizer_config.json: transformers' settings over the file.
  if (!config_json.empty()) {
    Value cfg = parse_json(config_json, cfile);
    Reader c{cfile};
    if (cfg.kind != Value::Object) c.bad("the file", "is not a JSON object");
    if (const Value *v = c.opt(cfg, "bos_token")) s.bos_text = token_name(c, *v, "bos_token");
    if (const Value *v = c.opt(cfg, "eos_token")) s.eos_text = token_name(c, *v, "eos_token");
    s.cleanup_spaces = c.flag(cfg, "clean_up_tokenization_spaces", false, "the file");
    if (const Value *v = c.opt(cfg, "chat_template")) {
      if (v->kind == Value::String) {
        s.chat_template = v->text;
      } else {
        for (const Value &t : c.array(*v, kMaxSteps, "chat_template"))
          if (c.str(c.member(t, "name", "chat_template[]"), "chat_template[].name") == "default")
            s.chat_template = c.str(c.member(t, "template", "chat_template[]"), "chat_template[].template");
      }
    }
    // transformers' Llama and Gemma tokenizers build their post-processor
    // from add_bos_token (default true) and add_eos_token (default false).
    std::string cls;
    if (const Value *v = c.opt(cfg, "tokenizer_class")) cls = c.str(*v, "tokenizer_class");
    for (const char *fam : {"LlamaTokenizer", "CodeLlamaTokenizer", "GemmaTokenizer"})
      if (cls.rfind(fam, 0) == 0) {
        s.prefix.clear();
        s.suffix.clear();
        s.add_bos = c.flag(cfg, "add_bos_token", true, "the file");
        s.add_eos = c.flag(cfg, "add_eos_token", false, "the file");
      }
  }
  return build(std::move(s));
}

}  // namespace lm
}  // namespace ctorch
