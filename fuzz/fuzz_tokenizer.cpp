// Harness: bytes as a tokenizer (shim/lm/tokenizer*.cpp, compiled in) and a
// text for it. The first byte chooses the file:
//   even: [u16 L][L bytes of tokenizer.json][u16 C][C bytes of
//         tokenizer_config.json][text...] into Tokenizer::from_hf_json;
//   odd:  a GGUF-like vocabulary into Tokenizer::from_vocab: [u8 flags]
//         [u8 pre][u16 N] then N tokens as [u8 len][bytes][u8 type], then
//         merges as [u8 len][bytes] up to a 0xFF byte, then the text.
// Properties (a violation aborts):
//   - a refusal is a ctorch::StatusError with INVALID_ARGUMENT and a message
//     (or std::bad_alloc); never a crash, a hang or another exception;
//   - a tokenizer built: the text (when it is UTF-8) encodes under every
//     flag to ids inside [0, n_vocab); those ids, and ids drawn from the
//     input, decode to valid UTF-8; streaming them gives what decode gives;
//     token_text of each id works; an id outside the vocabulary is refused.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/internal.h"
#include "text/utf8.h"
#include "lm/tokenizer.h"

namespace {

[[noreturn]] void violation(const char *what, const std::string &detail) {
  std::fprintf(stderr, "CONTRACT VIOLATION: %s: %.400s\n", what, detail.c_str());
  std::abort();
}

struct In {
  const uint8_t *p;
  size_t n;
  uint8_t u8() { return n ? (--n, *p++) : 0; }
  uint16_t u16() {
    uint16_t lo = u8();  // (two statements: the order of the reads is fixed)
    return uint16_t(lo | u8() << 8);
  }
  std::string take(size_t k) {
    k = std::min(k, n);
    std::string s(reinterpret_cast<const char *>(p), k);
    p += k;
    n -= k;
    return s;
  }
};

template <class F>
bool guarded(const char *what, F f) {
  try {
    f();
    return true;
  } catch (const ctorch::StatusError &e) {
    if (std::getenv("CTORCH_FUZZ_VERBOSE")) std::fprintf(stderr, "  %s refused: %.300s\n", what, e.what());
    if (e.status() != CTORCH_INVALID_ARGUMENT || !*e.what()) violation(what, std::string("a refusal without its status or message: ") + e.what());
  } catch (const std::bad_alloc &) {
  } catch (const std::exception &e) {
    violation(what, std::string("an exception that is not a StatusError: ") + e.what());
  }
  return false;
}

void exercise(const std::shared_ptr<const ctorch::lm::Tokenizer> &tok, const std::string &text, const std::string &raw_ids) {
  const int64_t nv = tok->n_vocab();
  std::vector<std::vector<int64_t>> runs;
  if (ctorch::valid_utf8(text.data(), text.size())) {
    for (int flags = 0; flags < 4; ++flags)
      guarded("encode", [&] {
        runs.push_back(tok->encode(text, flags & 1, flags & 2));
        for (int64_t id : runs.back())
          if (id < 0 || id >= nv) violation("encode", "an id outside [0, n_vocab)");
      });
  } else {
    bool refused = !guarded("encode", [&] { tok->encode(text, true, true); });
    if (!refused) violation("encode", "text that is not UTF-8 was taken");
  }
  std::vector<int64_t> drawn;
  for (size_t i = 0; i + 1 < raw_ids.size() && drawn.size() < 64; i += 2)
    drawn.push_back(int64_t((uint8_t(raw_ids[i]) | uint8_t(raw_ids[i + 1]) << 8) % (nv + 2)) - 1);
  runs.push_back(drawn);
  for (const auto &ids : runs)
    for (bool skip : {false, true}) {
      bool in_range = true;
      for (int64_t id : ids) in_range = in_range && id >= 0 && id < nv;
      std::string full;
      bool ok = guarded("decode", [&] { full = tok->decode(ids.data(), ids.size(), skip); });
      if (ok != in_range) violation("decode", in_range ? "ids in range were refused" : "an id out of range was taken");
      if (!ok) continue;
      if (!ctorch::valid_utf8(full.data(), full.size())) violation("decode", "text that is not UTF-8");
      guarded("stream", [&] {
        ctorch::lm::StreamDecoder d(tok, skip);
        std::string s;
        for (int64_t id : ids) s += d.push(id);
        s += d.flush();
        if (s != full) violation("StreamDecoder", "the pieces differ from decode");
      });
      for (int64_t id : ids) guarded("token_text", [&] { tok->token_text(id); });
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  In in{data + 1, size - 1};
  std::shared_ptr<const ctorch::lm::Tokenizer> tok;
  std::string text;
  if ((data[0] & 1) == 0) {
    std::string tj = in.take(in.u16());
    std::string cj = in.take(in.u16());
    text = in.take(in.n);
    guarded("from_hf_json", [&] { tok = ctorch::lm::Tokenizer::from_hf_json(tj, cj, "fuzz"); });
  } else {
    static const char *const kPre[] = {"default", "llama-bpe", "qwen2", "smollm", "gpt-2", "unknown-pre"};
    ctorch::lm::VocabSpec v;
    uint8_t flags = in.u8();
    v.model = (flags & 1) ? "llama" : "gpt2";
    if (flags & 64) v.model = "bert";
    v.pre = kPre[in.u8() % 6];
    v.add_bos = flags & 2;
    v.add_eos = flags & 4;
    v.add_space_prefix = flags & 8;
    size_t n = in.u16() % 2048;
    for (size_t i = 0; i < n && in.n; ++i) {
      v.tokens.push_back(in.take(in.u8()));
      v.types.push_back(in.u8() % 8);
      v.scores.push_back(float(int(i % 97) - 48));
    }
    while (in.n && in.p[0] != 0xFF && v.merges.size() < 4096) v.merges.push_back(in.take(in.u8()));
    in.u8();
    if (flags & 16) v.bos = int64_t(in.u16()) - 1;
    if (flags & 32) v.eos = int64_t(in.u16()) - 1;
    text = in.take(in.n);
    guarded("from_vocab", [&] { tok = ctorch::lm::Tokenizer::from_vocab(v, "fuzz.gguf"); });
  }
  if (tok) {
    if (std::getenv("CTORCH_FUZZ_VERBOSE")) std::fprintf(stderr, "  built: %lld ids\n", (long long)tok->n_vocab());
    exercise(tok, text, text);
  }
  return 0;
}
