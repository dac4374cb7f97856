/*
 * A minimal PNG writer for the examples (vae.c's grid of samples): 8-bit
 * grey or RGB, no interlacing, every row stored with filter 0 ("none") and
 * the whole image deflated at once by zlib's compress2; each chunk's CRC is
 * zlib's crc32 over its type and data (PNG's CRC is that CRC-32). zlib is
 * already one of ctorch's dependencies. Decoding images is the library's job
 * (ctorch_image_*); writing one picture is all an example needs.
 * Header-only; link the program with zlib (-lz).
 */
#ifndef CTORCH_PNG_WRITE_H
#define CTORCH_PNG_WRITE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static inline void png_put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* One chunk: length, type, data, CRC-32 of type + data. Returns 0 or -1. */
static inline int png_chunk(FILE *f, const char type[4], const unsigned char *data, uint32_t n) {
  unsigned char head[8], tail[4];
  uLong crc = crc32(0L, (const Bytef *)type, 4);
  if (n) crc = crc32(crc, data, n);
  png_put32(head, n);
  memcpy(head + 4, type, 4);
  png_put32(tail, (uint32_t)crc);
  return fwrite(head, 1, 8, f) == 8 && (!n || fwrite(data, 1, n, f) == n) && fwrite(tail, 1, 4, f) == 4 ? 0 : -1;
}

/* Writes height rows of width * channels bytes (channels 1: grey, 3: RGB)
 * from pixels (row-major, borrowed) to path as a PNG. Returns 0, or -1 when
 * the arguments are out of range, memory runs out or the file cannot be
 * written (errno tells why for the last). */
static inline int png_write(const char *path, const uint8_t *pixels, uint32_t width, uint32_t height, int channels) {
  static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  unsigned char ihdr[13];
  size_t stride = (size_t)width * (size_t)channels, raw_n = (stride + 1) * height, y;
  uLongf packed_n = compressBound((uLong)raw_n);
  unsigned char *raw, *packed;
  FILE *f;
  int rc = -1;
  if ((channels != 1 && channels != 3) || width < 1 || height < 1 || width > 65536 || height > 65536) return -1;
  raw = (unsigned char *)malloc(raw_n);
  packed = (unsigned char *)malloc(packed_n);
  if (raw && packed) {
    for (y = 0; y < height; ++y) { /* each row: filter byte 0, then its pixels as they are */
      raw[y * (stride + 1)] = 0;
      memcpy(raw + y * (stride + 1) + 1, pixels + y * stride, stride);
    }
    png_put32(ihdr, width);
    png_put32(ihdr + 4, height);
    ihdr[8] = 8;                      /* bits per sample */
    ihdr[9] = channels == 1 ? 0 : 2;  /* colour type: grey or RGB */
    ihdr[10] = ihdr[11] = ihdr[12] = 0; /* deflate, adaptive filtering, no interlace */
    if (compress2(packed, &packed_n, raw, (uLong)raw_n, Z_BEST_COMPRESSION) == Z_OK && (f = fopen(path, "wb"))) {
      rc = fwrite(signature, 1, 8, f) == 8 && !png_chunk(f, "IHDR", ihdr, 13) &&
                   !png_chunk(f, "IDAT", packed, (uint32_t)packed_n) && !png_chunk(f, "IEND", NULL, 0)
               ? 0
               : -1;
      if (fclose(f) != 0) rc = -1;
    }
  }
  free(raw);
  free(packed);
  return rc;
}

#endif
