// Private to lm/'s packed quantised weights (qweight.cpp): the matrix-times-
// rows kernels over packed blocks, one set per instruction set (a portable
// scalar one in qkernels.cpp, AVX2+FMA and AVX-512 ones in
// qkernels_x86.cpp), and the choice among them at run time.
//
// The packed layouts (QWeight in qweight.h holds the memory):
//   Q8: a row is `cols` int8 values; value k of the row is
//       scale[k / group] * q[k] (group 16 or 32).
//   Q4: a row is cols / 2 bytes; group g (32 values) is 16 bytes at 16 g,
//       value j of the group in the low nibble of byte j, value j + 16 in
//       its high nibble (GGUF's Q4_0/Q4_1 order); value = scale * q + offset
//       (q in 0..15, one scale and one offset per group). A symmetric Q4
//       (GGUF's Q4_0) has no offset table: its offset is -8 * scale, formed
//       in float32 where it is used (exact: the scale is a half, or a
//       float32 that -8 times does not round).
//   BF16: a row is `cols` bfloat16 values (2 bytes each, a float32's upper
//       half): weight-only bf16, no scales (group 32 only for the scalar
//       loops' chunks).
//   F32: a row is `cols` float32 values (a float matrix viewed in place,
//       qweight.h's float_linear_into), no scales.
// scale and offset are [rows, cols / group], row-major: float32, or IEEE
// half where every value is one (GGUF's Q8_0, Q4_0 and Q4_1 store theirs so:
// kept as they are, a quarter fewer bytes to read per value of Q4).
// Tiled (View::tiled; Q8 or Q4 in groups of 32, for the int8 kernels): the
// same bytes and scales, rearranged so that each vpdpbusd meets 16 weight
// rows at once. Tile t holds rows 16 t .. 16 t + 15; its groups follow one
// another, group g of tile t at (t * ngroups + g) * 16 * B (B the bytes of
// one row's group: 32 for Q8, 16 for Q4), as B / 4 vectors of 64 bytes.
// Vector c holds bytes 4c .. 4c + 3 of each row's group, row l at 4 l: a
// Q4 byte j still carries values j (low nibble) and j + 16 (high), as in
// the row-major layout. The scales (and offsets) of group g of tile t are
// 16 consecutive entries at (t * ngroups + g) * 16, row l at l.
// Q6 (tiled only: GGUF's Q6_K for the int8 kernels, at the file's size):
// groups of 16 values q in -32..31 held as u = q + 32 in 6 bits; group g
// of tile t is 3 vectors of 64 bytes at (t * ngroups + g) * 192. Byte
// 4 l + i of vector s holds row l's u of value 4 s + i in bits 0-5 and
// bits 2 s, 2 s + 1 of its u of value 12 + i in bits 6-7. The scale of a
// group is d * sc: sc an int8 per group (scale8, the tiled scales' order)
// and d a half per 256 values (super16: entry ((t * nsupers + s) * 16 + l)
// for super-block s of row l), as Q6_K stores them, so that a product
// d * sc is the float32 value GGUF's dequantisation forms.
#pragma once

#include <cstdint>
#include <vector>

namespace ctorch {
namespace lm {
namespace qk {

enum Fmt : int { kQ8 = 0, kQ4 = 1, kBF16 = 2, kF32 = 3, kQ6 = 4 };
// The rows of one tile of a tiled matrix.
constexpr int64_t kTile = 16;
// Where the tiled layout keeps group g of row r (a matrix of ngroups groups
// a row): the entry of its scale (and offset), and the offset of its first
// 4 bytes in the data (n: the bytes of one row's group; byte run c lies 64 c
// further on).
inline int64_t tiled_scale_at(int64_t r, int64_t g, int64_t ngroups) {
  return ((r / kTile) * ngroups + g) * kTile + r % kTile;
}
inline int64_t tiled_bytes_at(int64_t r, int64_t g, int64_t ngroups, int64_t n) {
  return ((r / kTile) * ngroups + g) * kTile * n + 4 * (r % kTile);
}

struct View {
  int fmt = kQ8;
  int64_t rows = 0, cols = 0, group = 32;
  int64_t row_bytes = 0;  // bytes of one packed row
  int64_t ngroups = 0;    // cols / group
  // scale's (and offset's) row stride in entries: ngroups, or the whole
  // matrix's for a view of some of its columns (a prompt's column blocks)
  int64_t scale_stride = 0;
  const uint8_t *data = nullptr;
  bool half = false;  // scale16/offset16 hold the scales, not scale/offset
  bool sym = false;   // Q4 with offset -8 * scale and no offset table
  bool tiled = false; // rows in tiles of kTile (above); rows a multiple of kTile
  const float *scale = nullptr, *offset = nullptr;
  const uint16_t *scale16 = nullptr, *offset16 = nullptr;
  const int8_t *scale8 = nullptr;     // Q6: each group's sc
  const uint16_t *super16 = nullptr;  // Q6: each super-block's d (half)
  // How far ahead of the rows being multiplied the kernels prefetch the
  // packed data (bytes; 0: none). qkernels_x86.cpp says why.
  int64_t prefetch = 0;
};

// y[m * ldy + r] = sum_k w[r, k] * x[m * ldx + k] for r in [r0, r1) and m in
// [0, M), M <= kMaxRows: each weight block is unpacked once and used for
// every row of x. Float32 throughout; the sums differ from a float32
// product with the dequantised matrix in their order only.
constexpr int64_t kMaxRows = 8;
using Kernel = void (*)(const View &w, int64_t r0, int64_t r1, const float *x, int64_t M, int64_t ldx, float *y,
                        int64_t ldy);

enum class Isa : int { scalar = 0, avx2 = 1, avx512 = 2 };
const char *isa_name(Isa isa);
// Whether this CPU (and this build) runs the variant.
bool isa_supported(Isa isa);
// The variant in use: the best the CPU supports, or the one the
// environment's CTORCH_LM_KERNELS names (scalar, avx2, avx512; one the CPU
// lacks falls back to the best it has), or the one isa_force set.
Isa isa_active();
// For tests: use `isa` from now on (refused, returning false, where the
// CPU does not run it).
bool isa_force(Isa isa);

Kernel kernel(Isa isa, int fmt, bool half);
Kernel scalar_kernel(int fmt);
Kernel avx2_kernel(int fmt, bool half);
Kernel avx512_kernel(int fmt, bool half);

// Rows [r0, r1) of w as float32 into out ([r1 - r0, cols], row-major),
// bit-equal to value = scale * q + offset (Q8: scale * q), in the active
// instruction set (every variant gives the same bits).
void dequant_rows(const View &w, int64_t r0, int64_t r1, float *out);
using Dequant = void (*)(const View &w, int64_t r0, int64_t r1, float *out);
Dequant avx512_dequant();

// ---- Int8 activations (qkernels_int8.cpp) --------------------------------
// Rows of x quantised for the int8 kernels, llama.cpp's Q8_0 activations:
// per row and group of 32 values, d = max|x| / 127 and q = round(x / d).
struct Acts8 {
  int64_t M = 0, K = 0;
  int64_t pairs = 0;       // groups of 32 in pairs: ceil(K / 64)
  // The order of each pair's 64 values in q and of its scales in d16: x's
  // own ([group 2p, group 2p+1]), or where q4_order Q4's (qkernels_int8.cpp):
  // the middle two 16-value quarters swapped.
  bool q4_order = false;
  std::vector<int8_t> q;   // [M][pairs * 64], a missing last group zero
  std::vector<float> d16;  // [M][pairs][16]: each value's group's d, 4 values a lane
  std::vector<float> sum;  // [M][pairs * 2]: each group's sum of x (float32)
  std::vector<int32_t> qsum;  // [M][pairs * 2]: each group's sum of q
  // [M][pairs][16]: -128 times the sum of q's four values in each 32-bit
  // lane (where the Q8 kernel's sums start; qkernels_int8.cpp says why)
  std::vector<int32_t> c16;
};
// Whether this CPU runs the int8 kernels (AVX-512 BW, VL and VNNI).
bool int8_supported();
// x [M, K] (row stride ldx; K a multiple of 32) into a, in Q4's order
// where q4_order (the order the kernels of the matrices it meets most use:
// the other format's kernel reorders x on the fly).
void quantize_acts(const float *x, int64_t M, int64_t K, int64_t ldx, Acts8 &a, bool q4_order);
// y[m * ldy + r] = sum_k w[r, k] * x[m, k] for r in [r0, r1) and every row
// of a, in 32-bit integers per group: Q8 or Q4 with groups of 32. A tiled
// w takes r0 and r1 at whole tiles; its Q4 offset -8 * scale (GGUF's Q4_0)
// meets x's 8-bit values, as its other values do (llama.cpp's sum), where
// the row-major kernel multiplies it by x's float32 sum.
void int8_rows(const View &w, int64_t r0, int64_t r1, const Acts8 &a, float *y, int64_t ldy);
// Whether the int8 kernels run here: the CPU has them and the AVX-512
// kernels are the active set (CTORCH_LM_KERNELS=avx2 or scalar turns them
// off with the rest).
bool int8_available();

}  // namespace qk
}  // namespace lm
}  // namespace ctorch
