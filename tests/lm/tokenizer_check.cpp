// The tokenizers (shim/lm/tokenizer*.cpp, compiled in) against transformers
// over Hugging Face tokenizers: for each folder tokenizer_ref.py built, every
// corpus text encodes to the same ids (plain, with the post-processor's
// specials, and with special tokens taken as text), decodes to the same text
// (with and without special tokens), round-trips byte for byte where the
// reference does, and streams (StreamDecoder) to the same text; random id
// sequences (bytes that are not UTF-8 among them) decode the same.
// Usage: tokenizer_check REF_DIR   (the folders and NAMES file tokenizer_ref.py wrote)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/internal.h"
#include "lm/tokenizer.h"

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

std::string streamed(const std::shared_ptr<const Tokenizer> &tok, const std::vector<int64_t> &ids, bool skip) {
  StreamDecoder d(tok, skip);
  std::string out;
  for (int64_t id : ids) out += d.push(id);
  return out + d.flush();
}

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
        if (c.texts % 5 == 0) {  // (a streamed text decodes once per id: a sample keeps the test short)
          std::string st = streamed(tok, want_sp, false), full = tok->decode(want_sp.data(), want_sp.size(), false);
          if (st != full) complain(c, name, "stream", text, st, full);
        }
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
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s %s: %zu texts, %zu random id sequences, %zu mismatches; round trip %zu/%zu (texts the reference round-trips); %.0f ms\n",
              c.bad || c.texts < 10000 ? "FAIL" : "ok", name.c_str(), c.texts, c.randoms, c.bad, c.roundtrip,
              c.ref_roundtrip, ms);
  return c.bad == 0 && c.texts >= 10000;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tokenizer_check REF_DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  std::istringstream names(read_file(dir + "/NAMES"));
  std::string name;
  bool ok = true;
  int n = 0;
  while (names >> name) ok = check(dir, name) && ok, ++n;
  if (n == 0) {
    std::printf("FAIL: no tokenizers listed in %s/NAMES\n", dir.c_str());
    return 1;
  }
  return ok ? 0 : 1;
}
