// Harness: bytes into the image decoders (shim/image). The first byte
// chooses:
//   bits 0-2  the mode: 1 + (value % 5) (UNCHANGED .. RGB_ALPHA);
//   bit 3     through ctorch_image_read of a memory file instead of
//             ctorch_image_decode;
//   bit 4     a pixel limit of 4,096 for this input (else kMaxPixels).
// The rest is the image. A decoded tensor must be what the header allowed:
// 3-D, UINT8 or INT32 (16-bit PNG, values 0..65535), the mode's channel
// count, at most the pixel limit; it is read back whole (ASan checks the
// copy lies inside it). A PNG's IHDR says its size, which must match. A
// failure leaves no handle.
#include "fuzz_util.h"
#include "mem_file.h"

#include <vector>

namespace {

constexpr uint64_t kMaxPixels = 1u << 20;  // keeps each input's work small (64 MiB load limit too)

uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

void inspect(ctorch_tensor t, int mode, uint64_t max_pixels, const uint8_t *img, size_t n, const char *call) {
  int64_t dim = 0, sz[3] = {0, 0, 0};
  ctorch_dtype d;
  FZ(ctorch_tensor_dim(&dim, t));
  if (dim != 3) fz::violation("an image tensor that is not [C, H, W]", call, CTORCH_OK);
  FZ(ctorch_tensor_sizes(sz, 3, t));
  FZ(ctorch_tensor_dtype(&d, t));
  if (d != CTORCH_UINT8 && d != CTORCH_INT32) fz::violation("an image dtype other than UINT8/INT32", call, CTORCH_OK);
  static const int want[6] = {0, 0, 1, 2, 3, 4};
  if (mode != CTORCH_IMAGE_READ_UNCHANGED && sz[0] != want[mode])
    fz::violation("channels differ from the mode's", call, CTORCH_OK);
  if (sz[0] < 1 || sz[0] > 4) fz::violation("more than 4 channels", call, CTORCH_OK);
  if ((uint64_t)sz[1] * (uint64_t)sz[2] > max_pixels) fz::violation("more pixels than the limit", call, CTORCH_OK);
  bool png = n >= 8 && img[0] == 0x89 && img[1] == 'P';
  if (png && n >= 24 && (be32(img + 16) != (uint64_t)sz[2] || be32(img + 20) != (uint64_t)sz[1]))
    fz::violation("size differs from the PNG's IHDR", call, CTORCH_OK);
  if (!png && d != CTORCH_UINT8) fz::violation("a JPEG that is not UINT8", call, CTORCH_OK);
  size_t item = d == CTORCH_UINT8 ? 1 : 4, count = (size_t)(sz[0] * sz[1] * sz[2]);
  std::vector<unsigned char> buf(count * item + 1);
  FZ(ctorch_tensor_copy_to(buf.data(), buf.size(), t));
  if (d == CTORCH_INT32)
    for (size_t i = 0; i < count; ++i) {
      int32_t v;
      std::memcpy(&v, buf.data() + 4 * i, 4);
      if (v < 0 || v > 65535) fz::violation("a 16-bit sample outside 0..65535", call, CTORCH_OK);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz::init_once();
  if (size == 0) return 0;
  uint8_t ctl = data[0];
  int mode = 1 + (ctl & 7) % 5;
  uint64_t max_pixels = (ctl & 16) ? 4096 : kMaxPixels;
  FZ(ctorch_image_set_max_pixels(nullptr, max_pixels));
  const uint8_t *img = data + 1;
  size_t n = size - 1;
  ctorch_tensor t = nullptr;
  const char *call = (ctl & 8) ? "ctorch_image_read" : "ctorch_image_decode";
  ctorch_status st;
  if (ctl & 8) {
    fz::MemFile f(img, n);
    st = FZ(ctorch_image_read(&t, f.path(), (ctorch_image_read_mode)mode));
  } else {
    st = FZ(ctorch_image_decode(&t, n ? img : data, n, (ctorch_image_read_mode)mode));
  }
  if (st == CTORCH_OK) {
    inspect(t, mode, max_pixels, img, n, call);
    ctorch_tensor_free(t);
  } else if (t) {
    fz::violation("failure left a handle", call, st);
  }
  return 0;
}
