// The one UTF-8 check of the library (RFC 3629): what every file format that
// must hold text uses before writing or trusting a string (safetensors' JSON,
// torch.save keys, TensorBoard records). Refused: bytes that start no
// sequence (0x80-0xBF alone, 0xF8-0xFF), truncated sequences, overlong
// forms (0xC0 0x80 for NUL), code points above U+10FFFF and the UTF-16
// surrogates U+D800..U+DFFF (CESU-8 / "WTF-8" text, which Python writes with
// errors='surrogatepass' and protobuf readers reject as bad UTF-8).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ctorch {

// Length of the UTF-8 sequence at p (1..4; n >= 1 bytes readable), or 0 if
// it is not a valid one.
inline size_t utf8_len(const unsigned char *p, size_t n) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
  else return 0;
  if (len > n) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

// Whether [p, p + n) is valid UTF-8; if not, *bad_at (may be NULL) gets the
// offset of the first byte of the first bad sequence.
inline bool valid_utf8(const char *p, size_t n, size_t *bad_at = nullptr) {
  const auto *u = reinterpret_cast<const unsigned char *>(p);
  for (size_t i = 0; i < n;) {
    size_t len = utf8_len(u + i, n - i);
    if (!len) {
      if (bad_at) *bad_at = i;
      return false;
    }
    i += len;
  }
  return true;
}

}  // namespace ctorch
