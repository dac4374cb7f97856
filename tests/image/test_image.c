/* shim/image and the eval transforms: decoding PNG and JPEG images written
 * here with libpng and libjpeg themselves (every pixel known for PNG; JPEG
 * near its source), reading files, the limits (pixel limit, load limit,
 * decompression bombs refused from the header), and every failure: NULLs,
 * bad enums, bad sizes, truncated and corrupt data, each with its status
 * and the argument or cause named. The comparison with torchvision and
 * Pillow is image_vs_torchvision.py. */
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jpeglib.h>
#include <png.h>
#include <zlib.h>

#include "check_main.h"

/* ---- images written with the libraries ---------------------------------- */
typedef struct {
  unsigned char *p;
  size_t n, cap;
} buf_t;

static void buf_write(png_structp png, png_bytep d, png_size_t n) {
  buf_t *b = (buf_t *)png_get_io_ptr(png);
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->p = realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}
static void buf_flush(png_structp png) { (void)png; }

/* A PNG of w x h with color type `color`, 8 or 16 bits, samples from
 * sample(i) (i = the sample's index in row-major HWC order). */
static unsigned sample(size_t i, int depth) { return (unsigned)((i * 37 + 11) % (depth == 16 ? 65536 : 256)); }

static buf_t make_png(int w, int h, int color, int depth, int interlace) {
  buf_t b = {NULL, 0, 0};
  int ch = color == PNG_COLOR_TYPE_GRAY ? 1 : color == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : color == PNG_COLOR_TYPE_RGB ? 3 : 4;
  size_t row = (size_t)w * ch * (depth / 8), i;
  unsigned char *px = malloc(row * h);
  png_bytep *rows = malloc(sizeof(png_bytep) * h);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  for (i = 0; i < (size_t)w * h * ch; ++i) {
    unsigned v = sample(i, depth);
    if (depth == 16) {
      px[2 * i] = (unsigned char)(v >> 8);
      px[2 * i + 1] = (unsigned char)v;
    } else {
      px[i] = (unsigned char)v;
    }
  }
  for (i = 0; i < (size_t)h; ++i) rows[i] = px + row * i;
  ck_assert(png && info);
  ck_assert(!setjmp(png_jmpbuf(png)));
  png_set_write_fn(png, &b, buf_write, buf_flush);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, color,
               interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_rows(png, info, rows);
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
  png_destroy_write_struct(&png, &info);
  free(rows);
  free(px);
  return b;
}

static buf_t make_jpeg(int w, int h, int comps, int quality, int progressive) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr err;
  unsigned char *out = NULL, *px = malloc((size_t)w * h * comps);
  unsigned long n = 0;
  int i;
  buf_t b;
  for (i = 0; i < w * h * comps; ++i) px[i] = (unsigned char)((i / comps % w) * 4 + (i / comps / w) * 3 + i % comps * 20);
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &out, &n);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = comps;
  c.in_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  if (progressive) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW r = px + (size_t)c.next_scanline * w * comps;
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  free(px);
  b.p = malloc(n);
  memcpy(b.p, out, n);
  b.n = b.cap = n;
  free(out);
  return b;
}

static void sizes_are(ctorch_tensor t, ctorch_dtype dt, int64_t c, int64_t h, int64_t w) {
  int64_t sz[3], d;
  ctorch_dtype got;
  int contiguous = 0;
  CT_OK(ctorch_tensor_dim(&d, t));
  ck_assert_int_eq(d, 3);
  CT_OK(ctorch_tensor_sizes(sz, 3, t));
  ck_assert_int_eq(sz[0], c);
  ck_assert_int_eq(sz[1], h);
  ck_assert_int_eq(sz[2], w);
  CT_OK(ctorch_tensor_dtype(&got, t));
  ck_assert_int_eq(got, dt);
  CT_OK(ctorch_tensor_is_contiguous(&contiguous, t));
  ck_assert(contiguous);
}

START_TEST(test_png_pixels) {
  /* Every 8- and 16-bit colour type, plain and Adam7: UNCHANGED gives the
   * samples written, CHW. */
  static const int colors[4] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                PNG_COLOR_TYPE_RGB_ALPHA};
  int ci, depth, il;
  for (ci = 0; ci < 4; ++ci)
    for (depth = 8; depth <= 16; depth += 8)
      for (il = 0; il < 2; ++il) {
        const int w = 11, h = 7, ch = ci + 1;
        buf_t b = make_png(w, h, colors[ci], depth, il);
        ctorch_tensor t = NULL;
        int32_t got[4 * 11 * 7];
        uint8_t got8[4 * 11 * 7];
        int c, y, x;
        CT_OK(ctorch_image_decode(&t, b.p, b.n, CTORCH_IMAGE_READ_UNCHANGED));
        sizes_are(t, depth == 16 ? CTORCH_INT32 : CTORCH_UINT8, ch, h, w);
        if (depth == 16) CT_OK(ctorch_tensor_copy_to(got, sizeof got, t));
        else CT_OK(ctorch_tensor_copy_to(got8, sizeof got8, t));
        for (c = 0; c < ch; ++c)
          for (y = 0; y < h; ++y)
            for (x = 0; x < w; ++x) {
              unsigned want = sample((size_t)(y * w + x) * ch + c, depth);
              unsigned v = depth == 16 ? (unsigned)got[(c * h + y) * w + x] : got8[(c * h + y) * w + x];
              ck_assert_msg(v == want, "colour %d depth %d interlace %d: [%d,%d,%d] = %u, wrote %u", colors[ci],
                            depth, il, c, y, x, v, want);
            }
        ctorch_tensor_free(t);
        /* Modes: channel counts (alpha added opaque, dropped, gray <-> rgb). */
        {
          static const int want_ch[6] = {0, 0, 1, 2, 3, 4};
          int m;
          for (m = CTORCH_IMAGE_READ_GRAY; m <= CTORCH_IMAGE_READ_RGB_ALPHA; ++m) {
            CT_OK(ctorch_image_decode(&t, b.p, b.n, (ctorch_image_read_mode)m));
            sizes_are(t, depth == 16 ? CTORCH_INT32 : CTORCH_UINT8, want_ch[m], h, w);
            if (m == CTORCH_IMAGE_READ_RGB_ALPHA && (ch == 1 || ch == 3) && depth == 8) {
              CT_OK(ctorch_tensor_copy_to(got8, sizeof got8, t));
              ck_assert_int_eq(got8[3 * h * w], 255); /* the added alpha is opaque */
            }
            ctorch_tensor_free(t);
          }
        }
        free(b.p);
      }
}
END_TEST

START_TEST(test_jpeg) {
  buf_t g = make_jpeg(16, 9, 1, 100, 0), rgb = make_jpeg(20, 12, 3, 95, 1);
  ctorch_tensor t = NULL;
  uint8_t px[3 * 20 * 12];
  int i;
  CT_OK(ctorch_image_decode(&t, g.p, g.n, CTORCH_IMAGE_READ_UNCHANGED));
  sizes_are(t, CTORCH_UINT8, 1, 9, 16);
  CT_OK(ctorch_tensor_copy_to(px, 16 * 9, t));
  for (i = 0; i < 16 * 9; ++i) ck_assert_int_le(abs((int)px[i] - (i % 16) * 4 - (i / 16) * 3), 2);
  ctorch_tensor_free(t);
  CT_OK(ctorch_image_decode(&t, g.p, g.n, CTORCH_IMAGE_READ_RGB));
  sizes_are(t, CTORCH_UINT8, 3, 9, 16);
  ctorch_tensor_free(t);
  CT_OK(ctorch_image_decode(&t, rgb.p, rgb.n, CTORCH_IMAGE_READ_UNCHANGED));
  sizes_are(t, CTORCH_UINT8, 3, 12, 20);
  CT_OK(ctorch_tensor_copy_to(px, sizeof px, t));
  for (i = 0; i < 20 * 12; ++i) ck_assert_int_le(abs((int)px[i] - (i % 20) * 4 - (i / 20) * 3), 8); /* red, CHW */
  ctorch_tensor_free(t);
  CT_OK(ctorch_image_decode(&t, rgb.p, rgb.n, CTORCH_IMAGE_READ_GRAY));
  sizes_are(t, CTORCH_UINT8, 1, 12, 20);
  ctorch_tensor_free(t);
  /* Alpha modes are refused for JPEG, as torchvision 0.14. */
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_image_decode(&t, rgb.p, rgb.n, CTORCH_IMAGE_READ_RGB_ALPHA));
  CT_ERROR_HAS("RGB_ALPHA is not supported for JPEG");
  ck_assert_ptr_null(t);
  CT_FAILS(CTORCH_NOT_IMPLEMENTED, ctorch_image_decode(&t, g.p, g.n, CTORCH_IMAGE_READ_GRAY_ALPHA));
  /* Truncated anywhere: VALUE, never a crash. */
  for (i = 1; i < (int)rgb.n - 2; i += 7) {
    ctorch_status st = ctorch_image_decode(&t, rgb.p, (size_t)i, CTORCH_IMAGE_READ_RGB);
    ck_assert_msg(st == CTORCH_VALUE, "truncated at %d: %s", i, ctorch_status_name(st));
    ck_assert_ptr_null(t);
  }
  CT_FAILS(CTORCH_VALUE, ctorch_image_decode(&t, rgb.p, rgb.n / 2, CTORCH_IMAGE_READ_RGB));
  CT_ERROR_HAS("JPEG: Image is incomplete or truncated");
  free(g.p);
  free(rgb.p);
}
END_TEST

/* A PNG header (signature + IHDR with a correct CRC) for a w x h RGB
 * image, an empty IDAT and IEND: a decompression bomb's header. */
static size_t bomb_png(unsigned char *out, uint32_t w, uint32_t h) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  unsigned char ihdr[17] = {'I', 'H', 'D', 'R', 0, 0, 0, 0, 0, 0, 0, 0, 8, 2, 0, 0, 0};
  uLong crc;
  int i;
  for (i = 0; i < 4; ++i) {
    ihdr[4 + i] = (unsigned char)(w >> (24 - 8 * i));
    ihdr[8 + i] = (unsigned char)(h >> (24 - 8 * i));
  }
  memcpy(out, sig, 8);
  memcpy(out + 8, "\0\0\0\x0d", 4);
  memcpy(out + 12, ihdr, 17);
  crc = crc32(0, ihdr, 17);
  for (i = 0; i < 4; ++i) out[29 + i] = (unsigned char)(crc >> (24 - 8 * i));
  /* An empty IDAT (png_read_info stops at the first IDAT), then IEND. */
  memcpy(out + 33, "\0\0\0\0IDAT", 8);
  crc = crc32(0, (const Bytef *)"IDAT", 4);
  for (i = 0; i < 4; ++i) out[41 + i] = (unsigned char)(crc >> (24 - 8 * i));
  memcpy(out + 45, "\0\0\0\0IEND\xae\x42\x60\x82", 12);
  return 57;
}

START_TEST(test_limits_and_bombs) {
  unsigned char bomb[80];
  size_t n = bomb_png(bomb, 2000000, 4);
  buf_t small = make_png(40, 30, PNG_COLOR_TYPE_RGB, 8, 0), j = make_jpeg(24, 16, 3, 90, 0);
  ctorch_tensor t = NULL;
  uint64_t prev = 0, prev_load = 0;
  size_t k;
  /* Wider than libpng's own limit of 1e6 per side: its error, as VALUE. */
  CT_FAILS(CTORCH_VALUE, ctorch_image_decode(&t, bomb, n, CTORCH_IMAGE_READ_RGB));
  CT_ERROR_HAS("PNG: ");
  n = bomb_png(bomb, 90000, 90000); /* 8.1e9 pixels */
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_image_decode(&t, bomb, n, CTORCH_IMAGE_READ_RGB));
  n = bomb_png(bomb, 20000, 20000); /* 4e8 pixels > the default limit */
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_image_decode(&t, bomb, n, CTORCH_IMAGE_READ_RGB));
  CT_ERROR_HAS("20000 x 20000 = 400000000 pixels is larger than the limit of 178956970 pixels");
  ck_assert_ptr_null(t);
  /* A JPEG whose frame header says 60000 x 60000 (SOF0 patched). */
  for (k = 0; k + 9 < j.n; ++k)
    if (j.p[k] == 0xff && j.p[k + 1] == 0xc0) {
      j.p[k + 5] = 0xea, j.p[k + 6] = 0x60, j.p[k + 7] = 0xea, j.p[k + 8] = 0x60;
      break;
    }
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_image_decode(&t, j.p, j.n, CTORCH_IMAGE_READ_RGB));
  CT_ERROR_HAS("60000 x 60000");
  /* The pixel limit is the caller's. */
  CT_OK(ctorch_image_set_max_pixels(&prev, 1000));
  ck_assert_uint_eq(prev, 178956970u);
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_image_decode(&t, small.p, small.n, CTORCH_IMAGE_READ_RGB));
  CT_ERROR_HAS("40 x 30 = 1200 pixels is larger than the limit of 1000");
  CT_OK(ctorch_image_set_max_pixels(NULL, 1200));
  CT_OK(ctorch_image_decode(&t, small.p, small.n, CTORCH_IMAGE_READ_RGB));
  ctorch_tensor_free(t);
  CT_OK(ctorch_image_set_max_pixels(&prev, 178956970u));
  ck_assert_uint_eq(prev, 1200);
  /* And so is the load limit: 40 x 30 x 4 bytes > 4000. */
  CT_OK(ctorch_set_load_limit(&prev_load, 4000));
  CT_FAILS(CTORCH_OUT_OF_MEMORY, ctorch_image_decode(&t, small.p, small.n, CTORCH_IMAGE_READ_RGB_ALPHA));
  CT_OK(ctorch_image_decode(&t, small.p, small.n, CTORCH_IMAGE_READ_RGB));
  ctorch_tensor_free(t);
  CT_OK(ctorch_set_load_limit(NULL, prev_load));
  free(small.p);
  free(j.p);
}
END_TEST

START_TEST(test_read_file_and_failures) {
  buf_t b = make_png(5, 4, PNG_COLOR_TYPE_RGB, 8, 0);
  char path[] = "/tmp/ctorch-image-XXXXXX";
  int fd = mkstemp(path);
  ctorch_tensor t = NULL, u = NULL;
  unsigned char junk[16] = "GIF89a not png.";
  int eq = 0;
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, b.p, b.n), (ssize_t)b.n);
  close(fd);
  CT_OK(ctorch_image_read(&t, path, CTORCH_IMAGE_READ_UNCHANGED));
  CT_OK(ctorch_image_decode(&u, b.p, b.n, CTORCH_IMAGE_READ_UNCHANGED));
  CT_OK(ctorch_equal(&eq, t, u));
  ck_assert(eq);
  ctorch_tensor_free(t);
  ctorch_tensor_free(u);
  t = NULL;
  /* Arguments. */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_image_decode(NULL, b.p, b.n, CTORCH_IMAGE_READ_RGB));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_image_decode(&t, NULL, b.n, CTORCH_IMAGE_READ_RGB));
  CT_ERROR_HAS("'data'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_image_decode(&t, b.p, 0, CTORCH_IMAGE_READ_RGB));
  CT_ERROR_HAS("'nbytes'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_image_decode(&t, b.p, b.n, (ctorch_image_read_mode)0));
  CT_ERROR_HAS("argument 'mode': is not a ctorch_image_read_mode");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_image_decode(&t, b.p, b.n, (ctorch_image_read_mode)6));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_image_read(&t, NULL, CTORCH_IMAGE_READ_RGB));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_image_read(&t, path, (ctorch_image_read_mode)-1));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_image_read(NULL, path, CTORCH_IMAGE_READ_RGB));
  /* Not an image; truncated; a corrupt CRC in IHDR. */
  CT_FAILS(CTORCH_VALUE, ctorch_image_decode(&t, junk, sizeof junk, CTORCH_IMAGE_READ_RGB));
  CT_ERROR_HAS("not a JPEG or PNG image");
  CT_FAILS(CTORCH_VALUE, ctorch_image_decode(&t, b.p, b.n - 20, CTORCH_IMAGE_READ_RGB));
  CT_ERROR_HAS("PNG: Image is incomplete or truncated");
  CT_FAILS(CTORCH_VALUE, ctorch_image_decode(&t, b.p, 8, CTORCH_IMAGE_READ_RGB));
  b.p[20] ^= 0x40; /* inside IHDR's width: the CRC no longer matches */
  CT_FAILS(CTORCH_VALUE, ctorch_image_decode(&t, b.p, b.n, CTORCH_IMAGE_READ_RGB));
  CT_ERROR_HAS("PNG: IHDR: CRC error");
  ck_assert_ptr_null(t);
  /* Files: missing, a directory, named in the message; errors name the path. */
  CT_FAILS(CTORCH_IO, ctorch_image_read(&t, "/nonexistent/x.png", CTORCH_IMAGE_READ_RGB));
  CT_ERROR_HAS("/nonexistent/x.png");
  CT_FAILS(CTORCH_IO, ctorch_image_read(&t, "/tmp", CTORCH_IMAGE_READ_RGB));
  fd = open(path, O_WRONLY | O_TRUNC);
  ck_assert_int_eq(write(fd, b.p, 30), 30);
  close(fd);
  CT_FAILS(CTORCH_VALUE, ctorch_image_read(&t, path, CTORCH_IMAGE_READ_RGB));
  CT_ERROR_HAS(path);
  unlink(path);
  free(b.p);
}
END_TEST

/* ---- eval transforms --------------------------------------------------- */
static ctorch_tensor u8_batch(int64_t n, int64_t c, int64_t h, int64_t w) {
  int64_t sz[4] = {n, c, h, w}, i, total = n * c * h * w;
  uint8_t *v = malloc((size_t)total);
  ctorch_tensor t = NULL;
  for (i = 0; i < total; ++i) v[i] = (uint8_t)(i * 7 % 256);
  CT_OK(ctorch_tensor_from_data(&t, v, (size_t)total, sz, 4, CTORCH_UINT8));
  free(v);
  return t;
}

static void shape4(ctorch_tensor t, ctorch_dtype dt, int64_t n, int64_t c, int64_t h, int64_t w) {
  int64_t sz[4];
  ctorch_dtype got;
  CT_OK(ctorch_tensor_sizes(sz, 4, t));
  ck_assert_int_eq(sz[0], n);
  ck_assert_int_eq(sz[1], c);
  ck_assert_int_eq(sz[2], h);
  ck_assert_int_eq(sz[3], w);
  CT_OK(ctorch_tensor_dtype(&got, t));
  ck_assert_int_eq(got, dt);
}

START_TEST(test_eval_transforms) {
  ctorch_tensor b = u8_batch(2, 3, 6, 5), out = NULL;
  ctorch_transform r = NULL, c = NULL, cv = NULL, all = NULL, parts[3];
  int64_t one[1] = {10}, two[2] = {4, 9};
  float f[2 * 3 * 4 * 4];
  uint8_t u[2 * 3 * 6 * 5];
  /* Shorter side: W=5 -> 10, H = int(10 * 6 / 5) = 12. */
  CT_OK(ctorch_transform_resize(&r, one, 1, CTORCH_INTERPOLATION_BILINEAR, 0, 1));
  CT_OK(ctorch_transform_apply(&out, r, b, NULL));
  shape4(out, CTORCH_UINT8, 2, 3, 12, 10);
  ctorch_tensor_free(out);
  ctorch_transform_free(r);
  /* max_size caps the longer side: 12 > 11 -> H 11, W int(11 * 10 / 12) = 9. */
  CT_OK(ctorch_transform_resize(&r, one, 1, CTORCH_INTERPOLATION_BICUBIC, 11, 0));
  CT_OK(ctorch_transform_apply(&out, r, b, NULL));
  shape4(out, CTORCH_UINT8, 2, 3, 11, 9);
  ctorch_tensor_free(out);
  ctorch_transform_free(r);
  CT_OK(ctorch_transform_resize(&r, two, 2, CTORCH_INTERPOLATION_BICUBIC, 0, 1));
  CT_OK(ctorch_transform_apply(&out, r, b, NULL));
  shape4(out, CTORCH_UINT8, 2, 3, 4, 9);
  ctorch_tensor_free(out);
  ctorch_transform_free(r);
  /* The shorter side already has the size: unchanged. */
  one[0] = 5;
  CT_OK(ctorch_transform_resize(&r, one, 1, CTORCH_INTERPOLATION_BILINEAR, 0, 1));
  CT_OK(ctorch_transform_apply(&out, r, b, NULL));
  {
    int eq = 0;
    CT_OK(ctorch_equal(&eq, out, b));
    ck_assert(eq);
  }
  ctorch_tensor_free(out);
  /* Center crop 4x4 of 6x5: top round(1.0) = 1, left round(0.5) = 0 (half to even). */
  CT_OK(ctorch_transform_center_crop(&c, 4, 4));
  CT_OK(ctorch_transform_convert_image_dtype(&cv, CTORCH_FLOAT32));
  parts[0] = c;
  parts[1] = cv;
  CT_OK(ctorch_transform_compose(&all, parts, 2));
  CT_OK(ctorch_transform_apply(&out, all, b, NULL));
  shape4(out, CTORCH_FLOAT32, 2, 3, 4, 4);
  CT_OK(ctorch_tensor_copy_to(f, sizeof f, out));
  CT_OK(ctorch_tensor_copy_to(u, sizeof u, b));
  ck_assert_float_eq(f[0], (float)u[1 * 5 + 0] / 255.0f);
  ck_assert_float_eq(f[4 * 4 + 5], (float)u[6 * 5 + 2 * 5 + 1] / 255.0f); /* channel 1, row 1, col 1 */
  ctorch_tensor_free(out);
  /* Larger than the image: zero padding, 8x7 of 6x5 (1 left, 1 top, 1 right, 1 bottom). */
  ctorch_transform_free(c);
  CT_OK(ctorch_transform_center_crop(&c, 8, 7));
  CT_OK(ctorch_transform_apply(&out, c, b, NULL));
  shape4(out, CTORCH_UINT8, 2, 3, 8, 7);
  {
    uint8_t p[2 * 3 * 8 * 7];
    CT_OK(ctorch_tensor_copy_to(p, sizeof p, out));
    ck_assert_int_eq(p[0], 0);
    ck_assert_int_eq(p[8], u[0]); /* row 1, col 1 = the image's (0, 0) */
  }
  ctorch_tensor_free(out);
  ctorch_transform_free(c);
  ctorch_transform_free(cv);
  ctorch_transform_free(all);
  ctorch_transform_free(r);
  /* Failures: constructors. */
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_resize(NULL, two, 2, CTORCH_INTERPOLATION_BILINEAR, 0, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_resize(&r, NULL, 1, CTORCH_INTERPOLATION_BILINEAR, 0, 0));
  CT_ERROR_HAS("'size'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_resize(&r, two, 3, CTORCH_INTERPOLATION_BILINEAR, 0, 0));
  CT_ERROR_HAS("'n_size'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_resize(&r, two, 0, CTORCH_INTERPOLATION_BILINEAR, 0, 0));
  two[1] = 0;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_resize(&r, two, 2, CTORCH_INTERPOLATION_BILINEAR, 0, 0));
  CT_ERROR_HAS("entry 1 is 0");
  two[1] = 9;
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_resize(&r, two, 2, (ctorch_interpolation)0, 0, 0));
  CT_ERROR_HAS("'interpolation'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_resize(&r, two, 2, (ctorch_interpolation)3, 0, 0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_resize(&r, two, 2, CTORCH_INTERPOLATION_BILINEAR, 20, 0));
  CT_ERROR_HAS("only allowed with one size");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_resize(&r, one, 1, CTORCH_INTERPOLATION_BILINEAR, 5, 0));
  CT_ERROR_HAS("strictly greater");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_resize(&r, one, 1, CTORCH_INTERPOLATION_BILINEAR, -1, 0));
  ck_assert_ptr_null(r);
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_center_crop(NULL, 3, 3));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_center_crop(&c, 0, 3));
  CT_ERROR_HAS("'height'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_center_crop(&c, 3, -2));
  CT_ERROR_HAS("'width'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_convert_image_dtype(NULL, CTORCH_FLOAT32));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_convert_image_dtype(&cv, CTORCH_BOOL));
  CT_ERROR_HAS("'dtype'");
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_convert_image_dtype(&cv, (ctorch_dtype)0));
  CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_convert_image_dtype(&cv, (ctorch_dtype)99));
  ck_assert_ptr_null(cv);
  /* At apply time: float32 -> int32 refused; bool batches refused. */
  {
    ctorch_tensor fb = NULL, bb = NULL;
    ctorch_transform to_f = NULL, to_i = NULL, rz = NULL;
    CT_OK(ctorch_transform_convert_image_dtype(&to_f, CTORCH_FLOAT32));
    CT_OK(ctorch_transform_convert_image_dtype(&to_i, CTORCH_INT32));
    parts[0] = to_f;
    parts[1] = to_i;
    CT_OK(ctorch_transform_compose(&all, parts, 2));
    CT_FAILS(CTORCH_VALUE, ctorch_transform_apply(&out, all, b, NULL));
    CT_ERROR_HAS("cannot be performed safely");
    ck_assert_ptr_null(out);
    CT_OK(ctorch_tensor_to_dtype(&bb, b, CTORCH_BOOL));
    CT_FAILS(CTORCH_TYPE, ctorch_transform_apply(&out, to_f, bb, NULL));
    CT_OK(ctorch_transform_resize(&rz, two, 2, CTORCH_INTERPOLATION_BILINEAR, 0, 0));
    CT_FAILS(CTORCH_TYPE, ctorch_transform_apply(&out, rz, bb, NULL));
    CT_ERROR_HAS("resize needs a real batch");
    CT_FAILS(CTORCH_INVALID_ARGUMENT, ctorch_transform_apply(&out, NULL, b, NULL));
    /* An empty batch keeps the output's shape and dtype. */
    {
      int64_t sz[4] = {0, 3, 6, 5};
      CT_OK(ctorch_tensor_from_data(&fb, u, 0, sz, 4, CTORCH_UINT8));
      CT_OK(ctorch_transform_apply(&out, to_f, fb, NULL));
      shape4(out, CTORCH_FLOAT32, 0, 3, 6, 5);
      ctorch_tensor_free(out);
    }
    ctorch_tensor_free(fb);
    ctorch_tensor_free(bb);
    ctorch_transform_free(to_f);
    ctorch_transform_free(to_i);
    ctorch_transform_free(rz);
    ctorch_transform_free(all);
  }
  ctorch_tensor_free(b);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("image");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_png_pixels);
  tcase_add_test(tc, test_jpeg);
  tcase_add_test(tc, test_limits_and_bombs);
  tcase_add_test(tc, test_read_file_and_failures);
  tcase_add_test(tc, test_eval_transforms);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
