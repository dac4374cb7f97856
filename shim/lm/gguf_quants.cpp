// ggml's block formats: the table of every type's block size, and the
// dequantisation of the types the GGUF reader turns into float32 tensors.
// Each loop computes what gguf.quants.dequantize computes, in the same
// float32 operations in the same order, so the results are bit-equal: the
// scale is the block's float16 widened exactly, products and sums are
// single float32 operations (never fused into one multiply-add, which
// rounds once instead of twice: fp-contract is off for these functions).
// The inner loops run over a block's fixed-size arrays with no branches,
// which the compiler vectorises.
#include "lm/gguf.h"

#include <c10/util/Half.h>

#include <cstring>

#include "core/internal.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
#if defined(__clang__)
#define CTORCH_NO_CONTRACT _Pragma("clang fp contract(off)")
#else
#define CTORCH_NO_CONTRACT
#endif

namespace ctorch {
namespace lm {
namespace {

inline float half_at(const uint8_t *p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return c10::detail::fp16_ieee_to_fp32_value(h);
}

constexpr int64_t kQK = 256;  // the K-quants' super-block

// Q8_0: [d: f16][32 x int8]; x = q * d.
void deq_q8_0(const uint8_t *src, float *dst, int64_t nb) {
  CTORCH_NO_CONTRACT
  for (int64_t b = 0; b < nb; ++b, src += 34, dst += 32) {
    const float d = half_at(src);
    const int8_t *q = reinterpret_cast<const int8_t *>(src + 2);
    for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(q[j]) * d;
  }
}

// Q4_0: [d: f16][16 bytes: element j in byte j's low nibble, j+16 in its high]; x = d * (q - 8).
void deq_q4_0(const uint8_t *src, float *dst, int64_t nb) {
  CTORCH_NO_CONTRACT
  for (int64_t b = 0; b < nb; ++b, src += 18, dst += 32) {
    const float d = half_at(src);
    const uint8_t *q = src + 2;
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>(static_cast<int>(q[j] & 0x0F) - 8);
      dst[j + 16] = d * static_cast<float>(static_cast<int>(q[j] >> 4) - 8);
    }
  }
}

// Q4_1: [d: f16][m: f16][16 bytes of nibbles as Q4_0]; x = d * q + m.
void deq_q4_1(const uint8_t *src, float *dst, int64_t nb) {
  CTORCH_NO_CONTRACT
  for (int64_t b = 0; b < nb; ++b, src += 20, dst += 32) {
    const float d = half_at(src), m = half_at(src + 2);
    const uint8_t *q = src + 4;
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>(q[j] & 0x0F) + m;
      dst[j + 16] = d * static_cast<float>(q[j] >> 4) + m;
    }
  }
}

// Q4_K: [d: f16][dmin: f16][12 bytes: eight 6-bit scales and mins][128
// bytes of nibbles]. Sub-block s (32 elements) is the low (s even) or high
// nibbles of bytes 32*(s/2) ...; x = (d * sc[s]) * q - (dmin * m[s]).
void deq_q4_k(const uint8_t *src, float *dst, int64_t nb) {
  CTORCH_NO_CONTRACT
  for (int64_t b = 0; b < nb; ++b, src += 144, dst += kQK) {
    const float d = half_at(src), dmin = half_at(src + 2);
    const uint8_t *s = src + 4, *q = src + 16;
    uint8_t sc[8], mn[8];
    for (int k = 0; k < 4; ++k) {
      sc[k] = s[k] & 0x3F;
      mn[k] = s[k + 4] & 0x3F;
      sc[k + 4] = static_cast<uint8_t>((s[k + 8] & 0x0F) | ((s[k] >> 2) & 0x30));
      mn[k + 4] = static_cast<uint8_t>((s[k + 8] >> 4) | ((s[k + 4] >> 2) & 0x30));
    }
    for (int i = 0; i < 4; ++i) {
      const float d0 = d * static_cast<float>(sc[2 * i]), m0 = dmin * static_cast<float>(mn[2 * i]);
      const float d1 = d * static_cast<float>(sc[2 * i + 1]), m1 = dmin * static_cast<float>(mn[2 * i + 1]);
      const uint8_t *qi = q + 32 * i;
      float *o = dst + 64 * i;
      for (int l = 0; l < 32; ++l) {
        o[l] = d0 * static_cast<float>(qi[l] & 0x0F) - m0;
        o[l + 32] = d1 * static_cast<float>(qi[l] >> 4) - m1;
      }
    }
  }
}

// Q6_K: [ql: 128 bytes][qh: 64 bytes][16 int8 scales][d: f16]. Element e
// of half h = e / 128 (r = e % 128): low 4 bits from ql[64h + r % 64]
// (shifted by 4 when r >= 64), high 2 bits from qh[32h + r % 32] (shifted
// by 2 * (r / 32)); x = (d * scale[e / 16]) * (q - 32).
void deq_q6_k(const uint8_t *src, float *dst, int64_t nb) {
  CTORCH_NO_CONTRACT
  for (int64_t b = 0; b < nb; ++b, src += 210, dst += kQK) {
    const uint8_t *ql = src, *qh = src + 128;
    const int8_t *sc = reinterpret_cast<const int8_t *>(src + 192);
    const float d = half_at(src + 208);
    float ds[16];
    for (int k = 0; k < 16; ++k) ds[k] = d * static_cast<float>(sc[k]);
    for (int h = 0; h < 2; ++h) {
      const uint8_t *l4 = ql + 64 * h, *h2 = qh + 32 * h;
      float *o = dst + 128 * h;
      const float *dh = ds + 8 * h;
      for (int r = 0; r < 128; ++r) {
        const int lo = (l4[r % 64] >> (4 * (r / 64))) & 0x0F;
        const int hi = (h2[r % 32] >> (2 * (r / 32))) & 0x03;
        o[r] = dh[r / 16] * static_cast<float>((lo | (hi << 4)) - 32);
      }
    }
  }
}

}  // namespace

void ggml_block(uint32_t type, int64_t *block_elems, int64_t *block_bytes) {
  // gguf.constants.GGML_QUANT_SIZES: (elements, bytes) per block.
  static const struct {
    uint32_t type;
    int64_t elems, bytes;
  } kSizes[] = {
      {0, 1, 4},        {1, 1, 2},        {2, 32, 18},      {3, 32, 20},     {6, 32, 22},      {7, 32, 24},
      {8, 32, 34},      {9, 32, 40},      {10, 256, 84},    {11, 256, 110},  {12, 256, 144},   {13, 256, 176},
      {14, 256, 210},   {15, 256, 292},   {16, 256, 66},    {17, 256, 74},   {18, 256, 98},    {19, 256, 50},
      {20, 32, 18},     {21, 256, 110},   {22, 256, 82},    {23, 256, 136},  {24, 1, 1},       {25, 1, 2},
      {26, 1, 4},       {27, 1, 8},       {28, 1, 8},       {29, 256, 56},   {30, 1, 2},       {34, 256, 54},
      {35, 256, 66},    {39, 32, 17},
  };
  for (const auto &s : kSizes)
    if (s.type == type) {
      *block_elems = s.elems;
      *block_bytes = s.bytes;
      return;
    }
  *block_elems = 0;
  *block_bytes = 0;
}

std::string ggml_type_name(uint32_t type) {
  static const char *const kNames[] = {"F32",     "F16",    "Q4_0",  "Q4_1",   "type 4", "type 5",  "Q5_0",
                                       "Q5_1",    "Q8_0",   "Q8_1",  "Q2_K",   "Q3_K",   "Q4_K",    "Q5_K",
                                       "Q6_K",    "Q8_K",   "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
                                       "IQ3_S",   "IQ2_S",  "IQ4_XS", "I8",    "I16",    "I32",     "I64",
                                       "F64",     "IQ1_M",  "BF16",  "type 31", "type 32", "type 33", "TQ1_0",
                                       "TQ2_0",   "type 36", "type 37", "type 38", "MXFP4"};
  if (type < sizeof(kNames) / sizeof(kNames[0])) return kNames[type];
  return "type " + std::to_string(type);
}

void gguf_dequantize(GgmlType type, const uint8_t *src, float *dst, int64_t n) {
  int64_t be = 0, bb = 0;
  ggml_block(static_cast<uint32_t>(type), &be, &bb);
  if (be <= 1 || n < 0 || n % be)
    fail(CTORCH_INVALID_ARGUMENT, "gguf_dequantize: " + std::to_string(n) + " elements are not whole blocks of " +
                                      ggml_type_name(static_cast<uint32_t>(type)));
  const int64_t nb = n / be;
  switch (type) {
    case GgmlType::Q8_0: return deq_q8_0(src, dst, nb);
    case GgmlType::Q4_0: return deq_q4_0(src, dst, nb);
    case GgmlType::Q4_1: return deq_q4_1(src, dst, nb);
    case GgmlType::Q4_K: return deq_q4_k(src, dst, nb);
    case GgmlType::Q6_K: return deq_q6_k(src, dst, nb);
    default: break;
  }
  fail(CTORCH_INVALID_ARGUMENT,
       "gguf_dequantize: " + ggml_type_name(static_cast<uint32_t>(type)) + " is not a type ctorch dequantises");
}

}  // namespace lm
}  // namespace ctorch

#undef CTORCH_NO_CONTRACT
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
