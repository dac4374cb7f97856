// The tokenizers (shim/lm/tokenizer*.cpp, compiled in) against transformers
// over Hugging Face tokenizers: for each folder tokenizer_ref.py built, every
// corpus text encodes to the same ids (plain, with the post-processor's
// specials, and with special tokens taken as text), decodes to the same text
// (with and without special tokens), round-trips byte for byte where the
// reference does, and streams (StreamDecoder) to the same text; random id
// sequences (bytes that are not UTF-8 among them) decode the same.
// Usage: tokenizer_check REF_DIR   (the folders and NAMES file tokenizer_ref.py wrote)
//        tokenizer_check --llamacpp DIR   (GGUF files and llama.cpp's results,
//        tokenizer_vs_llamacpp.py: see check_llamacpp below)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/internal.h"
#include "text/utf8.h"
#include "lm/gguf.h"
#include "lm/tokenizer.h"
#include "lm/vocab.h"

using ctorch::lm::StreamDecoder;
using ctorch::lm::Tokenizer;

namespace {

std::string read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::string();
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string unhex(const std::string &h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += char(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

std::vector<int64_t> parse_ids(const std::string &s) {
  std::vector<int64_t> v;
  std::istringstream in(s);
  int64_t x;
  while (in >> x) v.push_back(x);
  return v;
}

std::vector<std::string> fields(const std::string &line) {
  std::vector<std::string> f;
  size_t b = 0;
  for (size_t e; (e = line.find('\t', b)) != std::string::npos; b = e + 1) f.push_back(line.substr(b, e - b));
  f.push_back(line.substr(b));
  return f;
}

std::string show(const std::vector<int64_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 40; ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s + (v.size() > 40 ? " ..." : "");
}

std::string quote(const std::string &s) {
  std::string o;
  for (unsigned char c : s.substr(0, 160)) {
    if (c < 0x20 || c == '\\') {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      o += b;
    } else {
      o += char(c);
    }
  }
  return o;
}

struct Counts {
  size_t texts = 0, randoms = 0, bad = 0, roundtrip = 0, ref_roundtrip = 0;
};

void complain(Counts &c, const std::string &name, const std::string &what, const std::string &text,
              const std::string &got, const std::string &want) {
  if (++c.bad <= 8)
    std::printf("MISMATCH %s %s on '%s'\n   ctorch: %s\n   reference: %s\n", name.c_str(), what.c_str(), quote(text).c_str(),
                quote(got).c_str(), quote(want).c_str());
}

// max_window (where not null): the most ids one push decoded.
std::string streamed(const std::shared_ptr<const Tokenizer> &tok, const std::vector<int64_t> &ids, bool skip,
                     size_t *max_window = nullptr) {
  StreamDecoder d(tok, skip);
  std::string out;
  for (int64_t id : ids) {
    out += d.push(id);
    if (max_window) *max_window = std::max(*max_window, d.window() + 1);
  }
  return out + d.flush();
}

// What a push may decode again at most on the corpus: a stream cuts its
// window where the text so far is final (an ASCII byte ending it, nothing
// open across it), so a push costs a few ids, not the stream's length.
constexpr size_t kMaxWindow = 1024;

bool check(const std::string &dir, const std::string &name) {
  auto t0 = std::chrono::steady_clock::now();
  std::string folder = dir + "/" + name;
  std::shared_ptr<const Tokenizer> tok;
  try {
    tok = Tokenizer::from_hf_json(read_file(folder + "/tokenizer.json"), read_file(folder + "/tokenizer_config.json"), folder);
  } catch (const std::exception &e) {
    std::printf("FAIL %s: load: %s\n", name.c_str(), e.what());
    return false;
  }
  std::ifstream ref(dir + "/" + name + ".ref");
  Counts c;
  std::string line;
  std::vector<int64_t> all_ids;  // every text's ids (with the specials), one after another
  while (std::getline(ref, line)) {
    std::vector<std::string> f = fields(line);
    try {
      if (f[0] == "T" && f.size() == 7) {
        ++c.texts;
        std::string text = unhex(f[1]), dec = unhex(f[5]), dec_skip = unhex(f[6]);
        std::vector<int64_t> want = parse_ids(f[2]), want_sp = parse_ids(f[3]), want_plain = parse_ids(f[4]);
        std::vector<int64_t> got = tok->encode(text, false, true);
        if (got != want) complain(c, name, "encode", text, show(got), show(want));
        std::vector<int64_t> got_sp = tok->encode(text, true, true);
        if (got_sp != want_sp) complain(c, name, "encode(add_special)", text, show(got_sp), show(want_sp));
        std::vector<int64_t> got_plain = tok->encode(text, false, false);
        if (got_plain != want_plain) complain(c, name, "encode(parse_special=0)", text, show(got_plain), show(want_plain));
        std::string d = tok->decode(want.data(), want.size(), false);
        if (d != dec) complain(c, name, "decode", text, d, dec);
        std::string ds = tok->decode(want_sp.data(), want_sp.size(), true);
        if (ds != dec_skip) complain(c, name, "decode(skip_special)", text, ds, dec_skip);
        std::string st = streamed(tok, want_sp, false), full = tok->decode(want_sp.data(), want_sp.size(), false);
        if (st != full) complain(c, name, "stream", text, st, full);
        all_ids.insert(all_ids.end(), want_sp.begin(), want_sp.end());
        if (dec == text) {
          ++c.ref_roundtrip;
          std::string back = tok->decode(got.data(), got.size(), false);
          if (back == text) ++c.roundtrip;
          else complain(c, name, "round trip", text, back, text);
        }
      } else if (f[0] == "R" && f.size() == 4) {
        ++c.randoms;
        std::vector<int64_t> ids = parse_ids(f[1]);
        std::string dec = unhex(f[2]), dec_skip = unhex(f[3]);
        std::string d = tok->decode(ids.data(), ids.size(), false), ds = tok->decode(ids.data(), ids.size(), true);
        if (d != dec) complain(c, name, "decode(random ids " + show(ids) + ")", "", d, dec);
        if (ds != dec_skip) complain(c, name, "decode(random ids, skip_special)", "", ds, dec_skip);
        std::string st = streamed(tok, ids, true);
        if (st != ds) complain(c, name, "stream(random ids)", "", st, ds);
      } else {
        std::printf("FAIL %s: a malformed reference line\n", name.c_str());
        return false;
      }
    } catch (const std::exception &e) {
      complain(c, name, "exception", f.size() > 1 ? unhex(f[1]) : "", e.what(), "-");
    }
  }
  // The whole corpus as one stream: the pieces are one decode's text, and no
  // push decodes more than kMaxWindow ids.
  size_t max_window = 0;
  for (bool skip : {false, true}) {
    std::string st = streamed(tok, all_ids, skip, &max_window), full = tok->decode(all_ids.data(), all_ids.size(), skip);
    if (st != full) {
      size_t m = 0;
      while (m < st.size() && m < full.size() && st[m] == full[m]) ++m;
      complain(c, name, "stream(the corpus, " + std::to_string(all_ids.size()) + " ids) from byte " + std::to_string(m), "",
               st.substr(m, 80), full.substr(m, 80));
    }
  }
  if (max_window > kMaxWindow)
    complain(c, name, "stream(the corpus)", "", "a push decoded " + std::to_string(max_window) + " ids",
             "at most " + std::to_string(kMaxWindow));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s %s: %zu texts, %zu random id sequences, %zu mismatches; round trip %zu/%zu (texts the reference round-trips); "
              "the corpus streamed as one (%zu ids), a push decoding at most %zu; %.0f ms\n",
              c.bad || c.texts < 10000 ? "FAIL" : "ok", name.c_str(), c.texts, c.randoms, c.bad, c.roundtrip,
              c.ref_roundtrip, all_ids.size(), max_window, ms);
  return c.bad == 0 && c.texts >= 10000;
}

}  // namespace

// The GGUF path (Tokenizer::from_vocab) on SmolLM2's own vocabulary keys:
// its ids equal tokenizers' under SmolLM2's pre-tokenizer for every text
// (special tokens parsed, none added), and decoding them gives the text
// back.
bool check_gguf_vocab(const std::string &dir) {
  std::ifstream in(dir + "/smollm2.vocab");
  if (!in) return true;  // no SmolLM2 in this Python
  auto t0 = std::chrono::steady_clock::now();
  ctorch::lm::VocabSpec v;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = fields(line);
    if (f[0] == "T" && f.size() == 3) {
      v.tokens.push_back(unhex(f[1]));
      v.types.push_back(std::stoi(f[2]));
    } else if (f[0] == "M" && f.size() == 2) {
      v.merges.push_back(unhex(f[1]));
    } else {
      size_t eq = line.find('=');
      std::string k = line.substr(0, eq), val = line.substr(eq + 1);
      if (k == "model") v.model = val;
      else if (k == "pre") v.pre = val;
      else if (k == "bos") v.bos = std::stoll(val);
      else if (k == "eos") v.eos = std::stoll(val);
      else if (k == "unk") v.unk = std::stoll(val);
      else if (k == "add_bos_token") v.add_bos = val == "1";
      else if (k == "add_eos_token") v.add_eos = val == "1";
      else if (k == "add_space_prefix") v.add_space_prefix = val == "1";
    }
  }
  std::shared_ptr<const Tokenizer> tok;
  try {
    tok = Tokenizer::from_vocab(v, "SmolLM2-135M-Instruct.Q4_1.gguf");
  } catch (const std::exception &e) {
    std::printf("FAIL smollm2 GGUF vocabulary: %s\n", e.what());
    return false;
  }
  std::ifstream ref(dir + "/smollm2_gguf.ref");
  Counts c;
  while (std::getline(ref, line)) {
    std::vector<std::string> f = fields(line);
    if (f[0] != "T") continue;
    ++c.texts;
    std::string text = unhex(f[1]);
    std::vector<int64_t> want = parse_ids(f[2]), got = tok->encode(text, false, true);
    if (got != want) complain(c, "smollm2(GGUF)", "encode", text, show(got), show(want));
    std::string back = tok->decode(got.data(), got.size(), false);
    if (back == text) ++c.roundtrip;
    else complain(c, "smollm2(GGUF)", "round trip", text, back, text);
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s smollm2 from its GGUF vocabulary: %zu texts, %zu mismatches; round trip %zu/%zu; %.0f ms\n",
              c.bad ? "FAIL" : "ok", c.texts, c.bad, c.roundtrip, c.texts, ms);
  return c.bad == 0;
}

// The GGUF path as the library takes it (ctorch's GGUF reader, then
// Tokenizer::from_vocab) against llama.cpp's tokenizer on the same file:
// the ids of every text in the four modes (add_special, parse_special),
// the decode of llama.cpp's ids beside the pieces llama.cpp gives for them
// (special tokens shown and left out), and the round trip of the plain ids
// (owed where llama.cpp's own decode round-trips); and the decodes of random
// id sequences, where llama.cpp's bytes are UTF-8 (ctorch's decode replaces
// bytes that are not, as transformers' does).
// Prints a line a vocabulary, and the same figures as "RESULT {json}".
bool check_llamacpp(const std::string &dir, const std::string &name) {
  auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<const Tokenizer> tok;
  std::string kind;
  try {
    ctorch::lm::VocabSpec v = ctorch::lm::GgufFile::open(dir + "/" + name + ".gguf")->vocab();
    kind = v.model + (v.model == "gpt2" ? " / " + v.pre : "");
    tok = Tokenizer::from_vocab(v, name + ".gguf");
  } catch (const std::exception &e) {
    std::printf("FAIL %s: load: %s\n", name.c_str(), e.what());
    return false;
  }
  static const char *const kModes[] = {"encode", "encode(add_special)", "encode(parse_special=0)",
                                       "encode(add_special, parse_special=0)", "decode", "decode(skip_special)"};
  size_t bad[8] = {0, 0, 0, 0, 0, 0, 0, 0}, n_random_utf8[2] = {0, 0};
  Counts c;
  std::ifstream ref(dir + "/" + name + ".llama");
  std::string line;
  while (std::getline(ref, line)) {
    std::vector<std::string> f = fields(line);
    if (f[0] == "R" && f.size() == 4) {  // random ids: decodes compared where llama.cpp's bytes are UTF-8
      ++c.randoms;
      std::vector<int64_t> ids = parse_ids(f[1]);
      for (int m = 0; m < 2; ++m) {
        std::string want = unhex(f[2 + m]);
        if (!ctorch::valid_utf8(want.data(), want.size(), nullptr)) continue;
        ++n_random_utf8[m];
        std::string d = tok->decode(ids.data(), ids.size(), m == 1);
        if (d != want) ++bad[6 + m], complain(c, name, std::string(kModes[4 + m]) + " of random ids " + show(ids), "", d, want);
      }
      continue;
    }
    if (f[0] != "T" || f.size() != 9) {
      std::printf("FAIL %s: a malformed line in %s.llama\n", name.c_str(), name.c_str());
      return false;
    }
    ++c.texts;
    std::string text = unhex(f[1]);
    try {
      for (int m = 0; m < 4; ++m) {
        std::vector<int64_t> want = parse_ids(f[2 + m]), got = tok->encode(text, m == 1 || m == 3, m < 2);
        if (got != want) ++bad[m], complain(c, name, kModes[m], text, show(got), show(want));
      }
      std::vector<int64_t> ids = parse_ids(f[2]);
      for (int m = 0; m < 2; ++m) {
        std::string d = tok->decode(ids.data(), ids.size(), m == 1), want = unhex(f[6 + m]);
        if (d != want) ++bad[4 + m], complain(c, name, kModes[4 + m], text, d, want);
      }
      // The round trip is owed where llama.cpp's own decode gives the text back.
      std::vector<int64_t> plain = tok->encode(text, false, false);
      std::string back = tok->decode(plain.data(), plain.size(), false);
      bool owed = unhex(f[8]) == text;
      c.ref_roundtrip += owed;
      if (back == text) ++c.roundtrip;
      else if (owed) complain(c, name, "round trip", text, back, text);
    } catch (const std::exception &e) {
      complain(c, name, "exception", text, e.what(), "-");
    }
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  bool ok = c.bad == 0 && c.texts >= 10000;
  std::printf("%s %s (%s): %zu texts; mismatches with llama.cpp:", ok ? "ok" : "FAIL", name.c_str(), kind.c_str(), c.texts);
  for (int m = 0; m < 6; ++m) std::printf("%s %s %zu", m ? "," : "", kModes[m], bad[m]);
  std::printf("; round trip %zu/%zu (llama.cpp's own: %zu); random ids: decode %zu of %zu, decode(skip_special) %zu of %zu; %.0f ms\n",
              c.roundtrip, c.texts, c.ref_roundtrip, bad[6], n_random_utf8[0], bad[7], n_random_utf8[1], ms);
  std::printf("RESULT {\"name\": \"%s\", \"kind\": \"%s\", \"texts\": %zu, \"encode\": %zu, \"encode_add\": %zu, "
              "\"encode_plain\": %zu, \"encode_add_plain\": %zu, \"decode\": %zu, \"decode_skip\": %zu, "
              "\"roundtrip\": %zu, \"ref_roundtrip\": %zu, \"random\": %zu, \"random_decode\": %zu, "
              "\"random_decode_skip\": %zu, \"random_utf8\": %zu, \"random_utf8_skip\": %zu}\n",
              name.c_str(), kind.c_str(), c.texts, bad[0], bad[1], bad[2], bad[3], bad[4], bad[5], c.roundtrip,
              c.ref_roundtrip, c.randoms, bad[6], bad[7], n_random_utf8[0], n_random_utf8[1]);
  return ok;
}

int main(int argc, char **argv) {
  if (argc == 3 && std::string(argv[1]) == "--llamacpp") {
    std::istringstream names(read_file(std::string(argv[2]) + "/NAMES"));
    std::string name;
    bool ok = true;
    int n = 0;
    while (names >> name) ok = check_llamacpp(argv[2], name) && ok, ++n;
    if (n == 0) std::printf("FAIL: no vocabularies listed in %s/NAMES\n", argv[2]);
    return ok && n ? 0 : 1;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: tokenizer_check REF_DIR | --llamacpp DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  std::istringstream names(read_file(dir + "/NAMES"));
  std::string name;
  bool ok = true;
  int n = 0;
  while (names >> name) ok = check(dir, name) && ok, ++n;
  ok = check_gguf_vocab(dir) && ok;
  if (n == 0) {
    std::printf("FAIL: no tokenizers listed in %s/NAMES\n", dir.c_str());
    return 1;
  }
  return ok ? 0 : 1;
}
