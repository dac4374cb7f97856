// See png.h. Layout: signature, IHDR, one IDAT (the zlib stream of every row
// prefixed by filter type 0), IEND; each chunk CRC-32 over type and data.
#include "logging/png.h"

#include <zlib.h>

#include <vector>

#include "core/internal.h"

namespace ctorch {
namespace logging {
namespace {

void put_be32(std::string &s, uint32_t v) {
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>(v >> (8 * i)));
}

void chunk(std::string &out, const char *type, const std::string &data) {
  put_be32(out, static_cast<uint32_t>(data.size()));
  std::string td(type, 4);
  td += data;
  out += td;
  put_be32(out, static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef *>(td.data()),
                                             static_cast<uInt>(td.size()))));
}

}  // namespace

std::string encode_png(const uint8_t *hwc, int64_t height, int64_t width, int channels) {
  static const int kColorType[5] = {0, 0, 0, 2, 6};  // grey, -, -, RGB, RGBA
  const size_t row = static_cast<size_t>(width) * channels;
  std::vector<unsigned char> raw;
  raw.reserve((row + 1) * static_cast<size_t>(height));
  for (int64_t y = 0; y < height; ++y) {
    raw.push_back(0);  // filter: none
    raw.insert(raw.end(), hwc + y * row, hwc + (y + 1) * row);
  }
  uLongf zlen = compressBound(static_cast<uLong>(raw.size()));
  std::string z(zlen, '\0');
  if (compress2(reinterpret_cast<Bytef *>(&z[0]), &zlen, raw.data(), static_cast<uLong>(raw.size()), 6) != Z_OK)
    fail(CTORCH_RUNTIME, "zlib could not compress the image");
  z.resize(zlen);
  std::string ihdr;
  put_be32(ihdr, static_cast<uint32_t>(width));
  put_be32(ihdr, static_cast<uint32_t>(height));
  ihdr += std::string{8, static_cast<char>(kColorType[channels]), 0, 0, 0};  // depth 8, deflate, no filter, no interlace
  std::string out("\x89PNG\r\n\x1a\n", 8);
  chunk(out, "IHDR", ihdr);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", std::string());
  return out;
}

}  // namespace logging
}  // namespace ctorch
