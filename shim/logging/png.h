// A minimal PNG encoder for TensorBoard images: 8-bit grey, RGB or RGBA,
// no filtering, zlib-compressed (zlib is already linked for checkpoints).
#pragma once

#include <cstdint>
#include <string>

namespace ctorch {
namespace logging {

// PNG bytes of an image stored row-major as height x width x channels
// (channels 1, 3 or 4). Throws StatusError (RUNTIME) if zlib fails.
std::string encode_png(const uint8_t *hwc, int64_t height, int64_t width, int channels);

}  // namespace logging
}  // namespace ctorch
