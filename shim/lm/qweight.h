// Packed quantised matrices for the CPU decoder: a linear layer's weight
// [rows, cols] held as groups of 8-bit or 4-bit values with float scales
// (qkernels.h describes the layouts), products computed from the packed
// groups directly, for float32 activations.
//
// The formats represent GGUF's blocks exactly: Q8_0 is Q8 with a group of
// 32, Q6_K is Q8 with a group of 16 (its 16-value sub-blocks, each with the
// product of the super-block's and the sub-block's scales), Q4_0, Q4_1 and
// Q4_K are Q4 (scale and offset per 32 values: Q4_0's offset is -8 d, formed
// where it is used rather than stored, Q4_1's is m, Q4_K's sub-block s has
// scale d * sc[s] and offset -dmin * m[s]).
// Every unpacked value is bit-equal to gguf.quants.dequantize's, so a
// product differs from the dequantised model's only in its summation order.
// Q8_0, Q4_0 and Q4_1 keep the file's half scales (a fifth fewer bytes per
// Q4 value than float32 ones: decode reads every weight once); the K-quants'
// scales are products that need float32.
//
// QWeight is immutable once made; any number of threads use one at once.
// Errors throw ctorch::StatusError.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ctorch {
namespace lm {

struct QWeight {
  int fmt = 0;  // qk::kQ8, qk::kQ4, qk::kBF16 or (tiled only) qk::kQ6
  int64_t rows = 0, cols = 0, group = 32;
  at::Tensor data;    // uint8 [rows, row bytes]: cols (Q8), cols / 2 (Q4) or 2 cols (BF16)
  at::Tensor scale;   // float32 or float16 [rows, cols / group]; undefined for BF16
  at::Tensor offset;  // as scale (Q4); undefined for Q8 and Q4_0 (offset -8 * scale)
  // Q6_K's super-block scales d, float16 [rows, cols / 256], beside the
  // products d * sc in scale (Q8/16 from a Q6_K tensor), so that its tiles
  // (qweight_tile) keep the file's size; Q6 tiles: scale holds sc (int8).
  at::Tensor super;
  // Products with x rounded to 8 bits per group of 32 (qkernels.h's Acts8,
  // llama.cpp's activations) where the CPU runs the int8 kernels, for the
  // matrices int8_form() admits. The load option activations=int8 sets it.
  bool int8_acts = false;
  // The rows in tiles of 16 for the int8 kernels (qkernels.h's tiled
  // layout; qweight_tile): the same bytes and scales, data and scale of the
  // same shapes, rearranged.
  bool tiled = false;

  bool defined() const { return data.defined(); }
  // Whether the scales are the file's own halves (Q8_0, Q4_0, Q4_1).
  bool half_scales() const { return scale.defined() && scale.scalar_type() == at::kHalf; }
  int64_t nbytes() const;
  // "Q8/32", "Q8/16", "Q4/32": the values' bits and the group.
  std::string format() const;
  // Whether the int8 kernels multiply this layout: Q8 or Q4 in groups of
  // 32, or Q6 tiles.
  bool int8_form() const;
};

// Whether a GGUF tensor type (ggml_type's number) has a packed form: Q8_0,
// Q4_0, Q4_1, Q4_K, Q6_K.
bool qweight_supports(uint32_t ggml_type);

// Repacks a GGUF tensor's blocks (rows x cols values, `nbytes` bytes at
// src, as the file's table gives them) without a float32 copy. row_order,
// where not null, takes packed row r from the file's row row_order[r] (a
// permutation of [0, rows)). Refuses (INVALID_ARGUMENT) a type without a
// packed form, cols not a multiple of the block, nbytes that do not match,
// a row index outside [0, rows).
QWeight qweight_from_gguf(uint32_t ggml_type, const uint8_t *src, uint64_t nbytes, int64_t rows, int64_t cols,
                          const int64_t *row_order);

// Quantises a floating matrix [rows, cols] (cols a multiple of 32) in
// groups of 32: "q8_0" (scale max|x| / 127), "q4_0" (scale: the value of
// largest magnitude / -8, offset -8 scale) or "q4_1" (scale (max - min) /
// 15, offset min), values rounded to nearest; or "bf16": each value rounded
// to bfloat16 as torch's .to(torch.bfloat16), weight-only (the products
// stay float32). Non-finite inputs give
// finite nonsense, never undefined behaviour.
QWeight qweight_quantize(const at::Tensor &w, const std::string &how);

// w with its rows in tiles of 16 (QWeight::tiled), marked for 8-bit
// activations: where it takes them (Q8 or Q4 in groups of 32, rows a
// multiple of 16) and the CPU runs the int8 kernels; w itself otherwise.
// A Q6_K tensor's Q8/16 (its super-block scales kept, its values in
// -32..31 and each product d * sc exact) becomes Q6 tiles at the file's
// 6.5625 bits a value instead of Q8's 10.
// Why: a prompt's products with the tiles make a third of the row-major
// kernel's instructions (qkernels_int8.cpp), and decode reads one stream.
// The values, lookups and dequantisation are unchanged; the products of a
// tiled matrix always take 8-bit x (where the int8 kernels are turned off
// after tiling, CTORCH_LM_KERNELS or isa_force, by unpacked tiles).
QWeight qweight_tile(const QWeight &w);

// Whether b's rows can be appended to a's (the same format, group, cols).
bool qweight_same_layout(const QWeight &a, const QWeight &b);
// The rows of parts (qweight_same_layout of each other) stacked.
QWeight qweight_cat(const std::vector<QWeight> &parts);

// The matrix as float32 [rows, cols].
at::Tensor qweight_dequantize(const QWeight &w);
// An embedding lookup: the rows `ids` (int64, any shape, each in [0, rows))
// as float32 [..., cols]; only those rows are unpacked.
at::Tensor qweight_embedding(const QWeight &w, const at::Tensor &ids);

// x @ W^T for W the rows of parts stacked (each part's cols = x's last
// dimension): float32 [..., sum of the parts' rows]. Up to a few rows of x
// (decode) run the packed kernels, each unpacked block used for all rows;
// more rows (prefill) unpack tiles of W into float32 and multiply them with
// at::mm. Split over the intra-op threads by weight rows.
at::Tensor qweight_linear(const at::Tensor &x, const std::vector<QWeight> &parts);

// qweight_linear on raw float32 rows: y [M, sum of the parts' rows] = x [M,
// cols] times the stacked parts, transposed. The parts must already agree
// (qweight_linear checks them; the fused decode step calls this on a
// model's own layers, checked at load).
void qweight_linear_into(const std::vector<QWeight> &parts, const float *x, int64_t M, float *y);

// y [M, rows] = x [M, cols] times a float32 matrix w [rows, cols]
// (row-major, cols a multiple of 32) transposed, by the packed kernels'
// float32 variant with their prefetch: for decode's few rows of x, where
// it reads the matrix at the memory's pace (a BLAS's matrix-vector product
// need not). The sums differ from a BLAS's in their order only.
void float_linear_into(const float *w, int64_t rows, int64_t cols, const float *x, int64_t M, float *y);

// The kernels' instruction set in use: "avx512", "avx2" or "scalar".
const char *qweight_isa();
// From how many rows of x qweight_linear switches to the unpacked tiles
// (measured: qweight_check --bench): the instruction set's own threshold,
// or the one set here (0: back to the instruction set's); for tests and
// measuring.
int64_t qweight_prefill_rows();
void qweight_set_prefill_rows(int64_t rows);
// How far ahead of the rows being multiplied the kernels prefetch the
// packed data, in bytes (0: not at all); for measuring.
int64_t qweight_prefetch();
void qweight_set_prefetch(int64_t bytes);

}  // namespace lm
}  // namespace ctorch
