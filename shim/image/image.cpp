// JPEG and PNG images into tensors, as torchvision.io's decode_jpeg /
// decode_png (0.14, the version Debian pairs with libtorch 1.13) decode
// them, with the same libraries (the system's libjpeg-turbo and libpng):
// the same conversions per ImageReadMode, so the same pixels.
//
// Hostile input. libjpeg and libpng report errors through a callback that
// must not return; here it records the message and longjmps back into the
// phase that called the library. Each phase (header, rows) is a function
// whose frame holds only trivially destructible locals, so the longjmp
// skips no C++ destructor; the pixel tensor is allocated between the two
// phases, in plain C++, after the header's size has been checked against
// the pixel limit and ctorch_set_load_limit. libjpeg's own working memory
// (a progressive JPEG keeps every coefficient) is bounded through
// max_memory_to_use (no backing store: exceeding it is an error), and the
// number of progressive scans is bounded (a tiny file with thousands of
// scans is a CPU bomb). Warnings are dropped instead of printed.
#include "core/internal.h"
#include "files/files.h"

#include <ATen/ATen.h>

#include <cerrno>
#include <climits>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <unistd.h>

#include <jpeglib.h>
#include <png.h>

namespace {

using ctorch::fail;

// Pillow's decompression-bomb error threshold: 2 * Image.MAX_IMAGE_PIXELS.
std::atomic<uint64_t> g_max_pixels{178956970};
constexpr int kMaxScans = 500;  // libjpeg-turbo's own fuzzers use the same bound

const char *mode_name(int mode) {
  switch (mode) {
    case CTORCH_IMAGE_READ_UNCHANGED: return "UNCHANGED";
    case CTORCH_IMAGE_READ_GRAY: return "GRAY";
    case CTORCH_IMAGE_READ_GRAY_ALPHA: return "GRAY_ALPHA";
    case CTORCH_IMAGE_READ_RGB: return "RGB";
    case CTORCH_IMAGE_READ_RGB_ALPHA: return "RGB_ALPHA";
  }
  return nullptr;
}

// The size check made from the header, before any pixel memory is taken.
void check_size(const char *kind, uint64_t w, uint64_t h, uint64_t channels, uint64_t bytes_per_sample) {
  uint64_t max = g_max_pixels.load();
  uint64_t pixels = w * h;  // both < 2^32: no overflow
  if (max && pixels > max)
    fail(CTORCH_OUT_OF_MEMORY, std::string(kind) + " image of " + std::to_string(w) + " x " + std::to_string(h) +
                                   " = " + std::to_string(pixels) + " pixels is larger than the limit of " +
                                   std::to_string(max) + " pixels (ctorch_image_set_max_pixels): refused before decoding");
  ctorch::LoadBudget(std::string(kind) + " image of " + std::to_string(w) + " x " + std::to_string(h), 0)
      .charge_data(pixels * channels * bytes_per_sample);
}

// ---- JPEG -------------------------------------------------------------------
struct Jpeg {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  jpeg_source_mgr src;
  jpeg_progress_mgr progress;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX + 64];
  bool created;
  Jpeg() {
    std::memset(static_cast<void *>(this), 0, sizeof *this);
  }
  ~Jpeg() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

Jpeg &jpeg_of(j_common_ptr c) { return *reinterpret_cast<Jpeg *>(c->client_data); }

[[noreturn]] void jpeg_jump(j_common_ptr c, const char *why) {
  Jpeg &j = jpeg_of(c);
  std::snprintf(j.msg, sizeof j.msg, "%s", why);
  longjmp(j.jump, 1);
}
[[noreturn]] void jpeg_error_exit_cb(j_common_ptr c) {
  char buf[JMSG_LENGTH_MAX];
  (*c->err->format_message)(c, buf);
  jpeg_jump(c, buf);
}
void jpeg_silent_cb(j_common_ptr) {}  // warnings (corrupt data libjpeg recovers from) are not printed
// The whole file is in memory: needing more is a truncated file (as
// torchvision's source manager says), never a wait.
void src_init_cb(j_decompress_ptr) {}
boolean src_fill_cb(j_decompress_ptr c) { jpeg_jump(reinterpret_cast<j_common_ptr>(c), "Image is incomplete or truncated"); }
// Skipping past the end (a marker segment longer than the file) leaves an
// end-of-image marker to read, as torchvision's source manager does.
const JOCTET kEoi[2] = {0xFF, JPEG_EOI};
void src_skip_cb(j_decompress_ptr c, long n) {
  if (n <= 0) return;
  if (static_cast<unsigned long>(n) > c->src->bytes_in_buffer) {
    c->src->next_input_byte = kEoi;
    c->src->bytes_in_buffer = 2;
    return;
  }
  c->src->next_input_byte += n;
  c->src->bytes_in_buffer -= static_cast<size_t>(n);
}
void src_term_cb(j_decompress_ptr) {}
void progress_cb(j_common_ptr c) {
  if (c->is_decompressor && reinterpret_cast<j_decompress_ptr>(c)->input_scan_number > kMaxScans)
    jpeg_jump(c, "progressive JPEG with more than 500 scans (refused: a CPU bomb)");
}

// Phase 1: the header and the output format. Returns false on a libjpeg
// error (message in j.msg). *unsupported: the mode is not offered for JPEG.
bool jpeg_header(Jpeg &j, const uint8_t *p, size_t n, int mode, uint64_t mem_cap, bool *unsupported) noexcept {
  j.cinfo.err = jpeg_std_error(&j.err);
  j.err.error_exit = jpeg_error_exit_cb;
  j.err.output_message = jpeg_silent_cb;
  j.cinfo.client_data = &j;
  if (setjmp(j.jump)) return false;
  j.created = true;  // jpeg_destroy_decompress is safe on a zeroed or half-made struct
  jpeg_create_decompress(&j.cinfo);
  j.cinfo.client_data = &j;  // jpeg_create_decompress keeps err and client_data; set again to be sure
  if (mem_cap) j.cinfo.mem->max_memory_to_use = static_cast<long>(std::min<uint64_t>(mem_cap, LONG_MAX));
  j.src.next_input_byte = p;
  j.src.bytes_in_buffer = n;
  j.src.init_source = src_init_cb;
  j.src.fill_input_buffer = src_fill_cb;
  j.src.skip_input_data = src_skip_cb;
  j.src.resync_to_restart = jpeg_resync_to_restart;
  j.src.term_source = src_term_cb;
  j.cinfo.src = &j.src;
  j.progress.progress_monitor = progress_cb;
  j.cinfo.progress = &j.progress;
  jpeg_read_header(&j.cinfo, TRUE);
  // torchvision's choice of output colour space per mode.
  switch (mode) {
    case CTORCH_IMAGE_READ_UNCHANGED: break;
    case CTORCH_IMAGE_READ_GRAY:
      if (j.cinfo.jpeg_color_space != JCS_GRAYSCALE) j.cinfo.out_color_space = JCS_GRAYSCALE;
      break;
    case CTORCH_IMAGE_READ_RGB:
      if (j.cinfo.jpeg_color_space != JCS_RGB) j.cinfo.out_color_space = JCS_RGB;
      break;
    default: *unsupported = true; return true;
  }
  jpeg_calc_output_dimensions(&j.cinfo);
  return true;
}

// Phase 3: the rows into out (H x W x C bytes, checked by the caller).
bool jpeg_rows(Jpeg &j, uint8_t *out) noexcept {
  if (setjmp(j.jump)) return false;
  jpeg_start_decompress(&j.cinfo);
  const size_t stride = static_cast<size_t>(j.cinfo.output_width) * j.cinfo.output_components;
  while (j.cinfo.output_scanline < j.cinfo.output_height) {
    JSAMPROW row = out + stride * j.cinfo.output_scanline;
    if (jpeg_read_scanlines(&j.cinfo, &row, 1) != 1) jpeg_jump(reinterpret_cast<j_common_ptr>(&j.cinfo), "no progress reading scanlines");
  }
  jpeg_finish_decompress(&j.cinfo);
  return true;
}

uint64_t jpeg_mem_cap() {
  uint64_t limit = ctorch::load_limit(), px = g_max_pixels.load();
  if (limit) return limit;
  return px ? px * 8 + (uint64_t{64} << 20) : 0;  // coefficients: 2 bytes x <= 4 components per pixel
}

at::Tensor decode_jpeg(const uint8_t *p, size_t n, int mode) {
  Jpeg j;
  bool unsupported = false;
  if (!jpeg_header(j, p, n, mode, jpeg_mem_cap(), &unsupported)) fail(CTORCH_VALUE, std::string("JPEG: ") + j.msg);
  if (unsupported)
    fail(CTORCH_NOT_IMPLEMENTED, std::string("argument 'mode': ") + mode_name(mode) +
                                     " is not supported for JPEG images (UNCHANGED, GRAY or RGB; as torchvision)");
  const uint64_t w = j.cinfo.output_width, h = j.cinfo.output_height, c = j.cinfo.output_components;
  if (c < 1 || c > 4) fail(CTORCH_VALUE, "JPEG: unsupported number of output components " + std::to_string(c));
  check_size("JPEG", w, h, c, 1);
  at::Tensor hwc = at::empty({static_cast<int64_t>(h), static_cast<int64_t>(w), static_cast<int64_t>(c)}, at::kByte);
  if (!jpeg_rows(j, hwc.data_ptr<uint8_t>())) fail(CTORCH_VALUE, std::string("JPEG: ") + j.msg);
  return hwc.permute({2, 0, 1}).contiguous();
}

// ---- PNG --------------------------------------------------------------------
struct Png {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const uint8_t *p = nullptr;
  size_t left = 0;
  char msg[256] = {0};
  ~Png() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

[[noreturn]] void png_error_cb(png_structp png, png_const_charp m) {
  auto *s = static_cast<Png *>(png_get_error_ptr(png));
  std::snprintf(s->msg, sizeof s->msg, "%s", m ? m : "unknown libpng error");
  png_longjmp(png, 1);
}
void png_warning_cb(png_structp, png_const_charp) {}  // not printed
void png_read_cb(png_structp png, png_bytep out, png_size_t n) {
  auto *s = static_cast<Png *>(png_get_io_ptr(png));
  if (n > s->left) png_error(png, "Image is incomplete or truncated");
  std::memcpy(out, s->p, n);
  s->p += n;
  s->left -= n;
}

struct PngLayout {
  png_uint_32 width = 0, height = 0;
  int channels = 0, depth = 0, passes = 1;
};

// Phase 1: header, the mode's transformations (torchvision's, with an
// opaque alpha where torchvision's would leave memory unwritten: a palette
// without transparency, or 1/2/4-bit images, asked for an alpha channel),
// and the row layout they give, checked against the tensor's.
bool png_header(Png &s, int mode, PngLayout *L) noexcept {
  if (setjmp(png_jmpbuf(s.png))) return false;
  png_set_sig_bytes(s.png, 8);
  png_set_read_fn(s.png, &s, png_read_cb);
  png_read_info(s.png, s.info);
  int depth = 0, color = 0, interlace = 0;
  png_get_IHDR(s.png, s.info, &L->width, &L->height, &depth, &color, &interlace, nullptr, nullptr);
  if (depth > 8 && depth != 16) png_error(s.png, "bit depth is not <= 8 or 16");
  int channels = png_get_channels(s.png, s.info);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(s.png);
  const bool palette = (color & PNG_COLOR_MASK_PALETTE) != 0, has_color = (color & PNG_COLOR_MASK_COLOR) != 0;
  // palette_to_rgb turns a tRNS chunk into alpha (torchvision assumes it always does).
  const bool alpha = (color & PNG_COLOR_MASK_ALPHA) != 0 || (palette && png_get_valid(s.png, s.info, PNG_INFO_tRNS));
  const png_uint_32 opaque = depth == 16 ? 0xffff : 0xff;  // after 1/2/4-bit expansion: 8 bits
  switch (mode) {
    case CTORCH_IMAGE_READ_UNCHANGED:
      if (palette && depth < 8) png_set_packing(s.png);  // indices, one byte each
      break;
    case CTORCH_IMAGE_READ_GRAY:
      if (color != PNG_COLOR_TYPE_GRAY) {
        if (palette) png_set_palette_to_rgb(s.png);
        if (alpha) png_set_strip_alpha(s.png);
        if (has_color) png_set_rgb_to_gray(s.png, 1, 0.2989, 0.587);
        channels = 1;
      }
      break;
    case CTORCH_IMAGE_READ_GRAY_ALPHA:
      if (color != PNG_COLOR_TYPE_GRAY_ALPHA) {
        if (palette) png_set_palette_to_rgb(s.png);
        if (!alpha) png_set_add_alpha(s.png, opaque, PNG_FILLER_AFTER);
        if (has_color) png_set_rgb_to_gray(s.png, 1, 0.2989, 0.587);
        channels = 2;
      }
      break;
    case CTORCH_IMAGE_READ_RGB:
      if (color != PNG_COLOR_TYPE_RGB) {
        if (palette) png_set_palette_to_rgb(s.png);
        else if (!has_color) png_set_gray_to_rgb(s.png);
        if (alpha) png_set_strip_alpha(s.png);
        channels = 3;
      }
      break;
    case CTORCH_IMAGE_READ_RGB_ALPHA:
      if (color != PNG_COLOR_TYPE_RGB_ALPHA) {
        if (palette) png_set_palette_to_rgb(s.png);
        else if (!has_color) png_set_gray_to_rgb(s.png);
        if (!alpha) png_set_add_alpha(s.png, opaque, PNG_FILLER_AFTER);
        channels = 4;
      }
      break;
  }
  if (interlace == PNG_INTERLACE_ADAM7) L->passes = png_set_interlace_handling(s.png);
  if (depth == 16) png_set_swap(s.png);  // host order (little endian: x86, arm)
  png_read_update_info(s.png, s.info);
  L->depth = png_get_bit_depth(s.png, s.info);
  L->channels = png_get_channels(s.png, s.info);
  if (L->channels != channels || (L->depth != 8 && L->depth != 16) ||
      png_get_rowbytes(s.png, s.info) != static_cast<size_t>(L->width) * channels * (L->depth / 8))
    png_error(s.png, "unexpected row layout after the mode's conversion");
  return true;
}

// Phase 3: every pass's rows into out (rows of width * channels samples).
bool png_rows(Png &s, const PngLayout &L, uint8_t *out) noexcept {
  if (setjmp(png_jmpbuf(s.png))) return false;
  const size_t stride = static_cast<size_t>(L.width) * L.channels * (L.depth / 8);
  for (int pass = 0; pass < L.passes; ++pass)
    for (png_uint_32 i = 0; i < L.height; ++i) png_read_row(s.png, out + stride * i, nullptr);
  return true;
}

at::Tensor decode_png(const uint8_t *p, size_t n, int mode) {
  Png s;
  s.p = p + 8;
  s.left = n - 8;
  s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, png_error_cb, png_warning_cb);
  if (!s.png) fail(CTORCH_OUT_OF_MEMORY, "PNG: libpng could not allocate its read structure");
  s.info = png_create_info_struct(s.png);
  if (!s.info) fail(CTORCH_OUT_OF_MEMORY, "PNG: libpng could not allocate its info structure");
  PngLayout L;
  if (!png_header(s, mode, &L)) fail(CTORCH_VALUE, std::string("PNG: ") + s.msg);
  const bool wide = L.depth == 16;
  // 16-bit: the rows, then their INT32 copy (both counted).
  check_size("PNG", L.width, L.height, L.channels, wide ? 6 : 1);
  const int64_t h = L.height, w = L.width, c = L.channels;
  at::Tensor hwc = at::empty({h, w, c}, wide ? at::kShort : at::kByte);
  if (!png_rows(s, L, static_cast<uint8_t *>(hwc.data_ptr()))) fail(CTORCH_VALUE, std::string("PNG: ") + s.msg);
  if (wide) hwc = hwc.to(at::kInt).bitwise_and(0xffff);  // the uint16 samples, as INT32 0..65535
  return hwc.permute({2, 0, 1}).contiguous();
}

at::Tensor decode(const uint8_t *p, size_t n, int mode) {
  if (n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff) return decode_jpeg(p, n, mode);
  if (n >= 8 && png_sig_cmp(const_cast<png_bytep>(p), 0, 8) == 0) return decode_png(p, n, mode);
  char head[40] = {0};
  for (size_t i = 0; i < n && i < 8; ++i) std::snprintf(head + 3 * i, 4, "%02x ", p[i]);
  fail(CTORCH_VALUE, std::string("not a JPEG or PNG image (") + std::to_string(n) + " bytes, starting " + head +
                         "); only JPEG and PNG are supported");
}

void check_mode(int mode) {
  if (!mode_name(mode))
    ctorch::fail_arg("mode", "is not a ctorch_image_read_mode (1..5), got " + std::to_string(mode));
}

}  // namespace

CTORCH_API ctorch_status ctorch_image_decode(ctorch_tensor *out, const void *data, size_t nbytes,
                                             ctorch_image_read_mode mode) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(data, "data");
  if (nbytes == 0) ctorch::fail_arg("nbytes", "is 0 (an empty buffer holds no image)");
  check_mode(mode);
  *out = ctorch::give(decode(static_cast<const uint8_t *>(data), nbytes, mode));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_image_read(ctorch_tensor *out, const char *path, ctorch_image_read_mode mode) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(path, "path");
  check_mode(mode);
  const std::string name = std::string("'") + path + "'";
  ctorch::ReadFile file(path);  // IO naming the path: missing, unreadable, not a regular file
  if (file.size() == 0) fail(CTORCH_VALUE, name + " is empty (no image)");
  ctorch::LoadBudget(name, 0).charge_data(file.size());
  std::vector<uint8_t> bytes(file.size());
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t k = ::read(file.fd(), bytes.data() + got, bytes.size() - got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) fail(CTORCH_IO, "read error on " + name + ": " + std::strerror(errno));
    if (k == 0) fail(CTORCH_IO, name + " shrank while being read");
    got += static_cast<size_t>(k);
  }
  try {
    *out = ctorch::give(decode(bytes.data(), bytes.size(), mode));
  } catch (const ctorch::StatusError &e) {
    fail(e.status(), name + ": " + e.what());
  }
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_image_set_max_pixels(uint64_t *previous, uint64_t max_pixels) {
  uint64_t was = g_max_pixels.exchange(max_pixels);
  if (previous) *previous = was;
  return CTORCH_OK;
}
