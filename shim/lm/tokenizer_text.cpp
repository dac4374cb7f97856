// The text machinery of the tokenizers: PCRE2 patterns (the pre-tokenizers'
// regular expressions with Unicode classes), ICU's NFC normalization, the
// byte-level character map, UTF-8 helpers.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <array>
#include <cstring>

#include "core/internal.h"
#include "text/utf8.h"
#include "lm/tokenizer_internal.h"

namespace ctorch {
namespace lm {
namespace tok {

void fail_file(const std::string &file, const std::string &msg) { throw StatusError(CTORCH_INVALID_ARGUMENT, file + ": " + msg); }

// ---- PCRE2 -------------------------------------------------------------------

// A match of the pre-tokenizer's patterns on one piece of text is linear for
// the patterns tokenizers ship; these limits end a hostile pattern's
// backtracking (an error, never a hang).
constexpr uint32_t kMatchLimit = 20000000;
constexpr uint32_t kHeapLimitKiB = 64 * 1024;

std::shared_ptr<const Regex> Regex::compile(const std::string &pattern, const std::string &file) {
  if (pattern.size() > kMaxPattern)
    fail_file(file, "a pre-tokenizer pattern of " + std::to_string(pattern.size()) + " bytes (at most " +
                        std::to_string(kMaxPattern) + ")");
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code *code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    fail_file(file, "the pattern '" + pattern.substr(0, 200) + "' does not compile at offset " + std::to_string(off) +
                        ": " + reinterpret_cast<const char *>(msg));
  }
  std::shared_ptr<Regex> r(new Regex());
  r->code_ = code;
  r->pattern_ = pattern;
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // the interpreter where JIT is absent
  pcre2_match_context *mctx = pcre2_match_context_create(nullptr);
  if (!mctx) throw std::bad_alloc();
  r->mctx_ = mctx;
  pcre2_set_match_limit(mctx, kMatchLimit);
  pcre2_set_heap_limit(mctx, kHeapLimitKiB);
  return r;
}

Regex::~Regex() {
  pcre2_match_context_free(static_cast<pcre2_match_context *>(mctx_));
  pcre2_code_free(static_cast<pcre2_code *>(code_));
}

namespace {

struct MatchData {
  pcre2_match_data *md;
  explicit MatchData(const pcre2_code *code) : md(pcre2_match_data_create_from_pattern(code, nullptr)) {
    if (!md) throw std::bad_alloc();
  }
  ~MatchData() { pcre2_match_data_free(md); }
};

}  // namespace

void Regex::find_all(const char *s, size_t n, std::vector<std::pair<size_t, size_t>> &out) const {
  auto *code = static_cast<const pcre2_code *>(code_);
  auto *mctx = static_cast<pcre2_match_context *>(mctx_);
  MatchData m(code);
  auto subject = reinterpret_cast<PCRE2_SPTR>(s);
  size_t pos = 0;
  while (pos <= n) {
    // The text was checked as UTF-8 once, before it was split.
    int rc = pcre2_match(code, subject, n, pos, PCRE2_NO_UTF_CHECK, m.md, mctx);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw StatusError(CTORCH_INVALID_ARGUMENT, "the pre-tokenizer pattern '" + pattern_.substr(0, 200) +
                                        "' failed on the text: " + reinterpret_cast<const char *>(msg));
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m.md);
    size_t b = ov[0], e = ov[1];
    if (e > b) {
      out.emplace_back(b, e);
      pos = e;
    } else {
      // An empty match: the next search starts one character on (as
      // tokenizers' regex iterators do).
      if (b >= n) break;
      size_t len = utf8_len(reinterpret_cast<const unsigned char *>(s) + b, n - b);
      pos = b + (len ? len : 1);
    }
  }
}

// ---- the byte-level map (GPT-2's bytes_to_unicode) --------------------------

namespace {

struct ByteMap {
  std::array<std::string, 256> text;
  std::array<int16_t, 324> byte_of;  // characters 0..323 (the map's range)
  ByteMap() {
    byte_of.fill(-1);
    // Printable bytes stand for themselves; the others (controls, space,
    // DEL, NBSP, soft hyphen) take 256, 257, ... in byte order.
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool self = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      uint32_t cp = self ? uint32_t(b) : next++;
      append_utf8(text[b], cp);
      byte_of[cp] = int16_t(b);
    }
  }
};

const ByteMap &byte_map() {
  static const ByteMap m;
  return m;
}

}  // namespace

const std::string &byte_char(uint8_t b) { return byte_map().text[b]; }

int byte_of_char(uint32_t cp) { return cp < 324 ? byte_map().byte_of[cp] : -1; }

// ---- Unicode normalization (ICU) ---------------------------------------------

std::string nfc(const std::string &s) {
  bool ascii = true;
  for (unsigned char c : s) ascii = ascii && c < 0x80;
  if (ascii) return s;
  if (s.size() > (size_t(1) << 30))
    throw StatusError(CTORCH_INVALID_ARGUMENT, "a text of more than 1 GiB cannot be normalized (NFC)");
  UErrorCode e = U_ZERO_ERROR;
  const UNormalizer2 *n = unorm2_getNFCInstance(&e);
  if (U_FAILURE(e)) throw StatusError(CTORCH_RUNTIME, std::string("ICU's NFC data: ") + u_errorName(e));
  std::vector<UChar> src(s.size() + 1);
  int32_t n16 = 0;
  u_strFromUTF8(src.data(), int32_t(src.size()), &n16, s.data(), int32_t(s.size()), &e);
  if (U_FAILURE(e)) throw StatusError(CTORCH_INVALID_ARGUMENT, std::string("NFC: ") + u_errorName(e));
  if (unorm2_quickCheck(n, src.data(), n16, &e) == UNORM_YES && U_SUCCESS(e)) return s;
  e = U_ZERO_ERROR;
  // NFC never takes more than three times the UTF-16 units of its input.
  std::vector<UChar> dst(size_t(n16) * 3 + 1);
  int32_t m16 = unorm2_normalize(n, src.data(), n16, dst.data(), int32_t(dst.size()), &e);
  if (U_FAILURE(e)) throw StatusError(CTORCH_INVALID_ARGUMENT, std::string("NFC: ") + u_errorName(e));
  std::string out(size_t(m16) * 3 + 1, '\0');
  int32_t n8 = 0;
  u_strToUTF8(&out[0], int32_t(out.size()), &n8, dst.data(), m16, &e);
  if (U_FAILURE(e)) throw StatusError(CTORCH_INVALID_ARGUMENT, std::string("NFC: ") + u_errorName(e));
  out.resize(size_t(n8));
  return out;
}

// ---- UTF-8 ------------------------------------------------------------------

void append_utf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

uint32_t next_cp(const std::string &s, size_t &i) {
  auto u = reinterpret_cast<const unsigned char *>(s.data());
  unsigned char c = u[i];
  if (c < 0x80) {
    ++i;
    return c;
  }
  size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
  uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (u[i + k] & 0x3F);
  i += len;
  return cp;
}

bool is_white_space(uint32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string lossy_utf8(const std::string &bytes) {
  // Each maximal invalid subpart becomes one U+FFFD (the WHATWG / Rust rule):
  // a truncated sequence is one subpart; any other bad byte is one alone.
  std::string out;
  out.reserve(bytes.size());
  auto u = reinterpret_cast<const unsigned char *>(bytes.data());
  size_t n = bytes.size();
  for (size_t i = 0; i < n;) {
    size_t len = utf8_len(u + i, n - i);
    if (len) {
      out.append(bytes, i, len);
      i += len;
      continue;
    }
    // How many bytes form a valid prefix of some sequence?
    unsigned char c = u[i];
    size_t need = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    size_t k = 1;
    if (need) {
      unsigned char lo = 0x80, hi = 0xBF;
      if (c == 0xE0) lo = 0xA0;
      else if (c == 0xED) hi = 0x9F;
      else if (c == 0xF0) lo = 0x90;
      else if (c == 0xF4) hi = 0x8F;
      if (i + 1 < n && u[i + 1] >= lo && u[i + 1] <= hi) {
        k = 2;
        while (k < need && i + k < n && (u[i + k] & 0xC0) == 0x80) ++k;
      }
    }
    out += "\xEF\xBF\xBD";
    i += k;
  }
  return out;
}

}  // namespace tok
}  // namespace lm
}  // namespace ctorch
