// The packed quantised matrices (shim/lm/qweight*, qkernels*) against float
// references, on every instruction set this CPU runs (the scalar one
// always):
//   - random GGUF blocks of Q8_0, Q4_0, Q4_1, Q4_K and Q6_K (odd row
//     counts, rows permuted as llama's q/k are) repacked: unpacked again
//     bit-equal to gguf_dequantize's floats, embedding rows too;
//   - products with 1..9 rows of x, 20 rows (the unpacked tiles) and
//     matrices of two formats stacked, equal to float64 products with the
//     dequantised matrix within float32 summation error, on 1 and 2
//     threads;
//   - where the CPU has AVX-512 VNNI, the same products with 8-bit
//     activations (int8_acts) against float64 products of x rounded as
//     qkernels.h's Acts8 says, written out here on their own;
//   - the same matrices in tiles of 16 rows (qweight_tile) for the int8
//     kernels: the same values, products as above; Q6_K's in Q6 tiles at
//     the file's size, and kept as Q8/16 where its d is not finite;
//   - floats quantised at load (q8_0, q4_0, q4_1): each value within half
//     a step of the original, products as above;
//   - refusals: a wrong byte count, a row index outside the matrix, a
//     token id outside the vocabulary, an unknown quantisation.
// With --bench it times the kernels on SmolLM2-135M's shapes instead.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <limits>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/internal.h"
#include "lm/gguf.h"
#include "lm/qkernels.h"
#include "lm/qweight.h"

using namespace ctorch;
using namespace ctorch::lm;

namespace {

int failures = 0;

void check(bool ok, const std::string &what) {
  if (!ok) {
    ++failures;
    std::printf("FAIL %s\n", what.c_str());
  }
}

void put_half(uint8_t *p, float v) {
  uint16_t h = c10::Half(v).x;
  std::memcpy(p, &h, 2);
}

// Random blocks of `type` for rows x cols values, scales in a model's range.
std::vector<uint8_t> random_blocks(GgmlType type, int64_t rows, int64_t cols, std::mt19937 &rng) {
  int64_t be = 0, bb = 0;
  ggml_block(static_cast<uint32_t>(type), &be, &bb);
  const int64_t nb = rows * cols / be;
  std::vector<uint8_t> out(static_cast<size_t>(nb * bb));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f), sign(-1.f, 1.f);
  for (auto &b : out) b = static_cast<uint8_t>(byte(rng));
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t *p = out.data() + b * bb;
    switch (type) {
      case GgmlType::Q8_0:
      case GgmlType::Q4_0: put_half(p, scale(rng)); break;
      case GgmlType::Q4_1:
        put_half(p, scale(rng));
        put_half(p + 2, -8 * scale(rng));
        break;
      case GgmlType::Q4_K:
        put_half(p, scale(rng) / 8);
        put_half(p + 2, scale(rng) / 8);
        break;
      case GgmlType::Q6_K: put_half(p + 208, scale(rng) / 32 * (sign(rng) < 0 ? -1 : 1)); break;
      default: break;
    }
  }
  return out;
}

// max |a - b| over |x| @ |W|^T (the scale of float32 summation error).
double rel_err(const at::Tensor &y, const at::Tensor &x, const at::Tensor &w) {
  at::Tensor ref = at::matmul(x.to(at::kDouble), w.to(at::kDouble).t());
  at::Tensor bound = at::matmul(x.abs().to(at::kDouble), w.abs().to(at::kDouble).t()) + 1e-30;
  return ((y.to(at::kDouble) - ref).abs() / bound).max().item<double>();
}

// x's rows as the int8 kernels see them (qkernels.h's Acts8), written out
// here on its own: per group of 32, d = max|x| / 127, q = round(x / d) to
// nearest even, value q * d (in float64).
at::Tensor int8_rounded(const at::Tensor &x) {
  at::Tensor g = x.contiguous().view({x.size(0), -1, 32});
  at::Tensor d = g.abs().amax(2, true) / 127.f;
  at::Tensor id = at::where(d != 0, 1.f / d, at::zeros_like(d));
  at::Tensor q = at::round(g * id);  // (torch.round: half to even)
  return (q.to(at::kDouble) * d.to(at::kDouble)).view(x.sizes());
}

// A matrix's scales and offsets [rows, groups] (offsets spread over their
// groups' values), from the row-major or the tiled arrangement.
at::Tensor rows_of(const QWeight &p, const at::Tensor &t) {
  at::Tensor d = t.to(at::kDouble);
  if (!p.tiled) return d;
  const int64_t g = p.cols / p.group;
  return d.reshape({p.rows / qk::kTile, g, qk::kTile}).transpose(1, 2).reshape({p.rows, g});
}
at::Tensor scales_of(const QWeight &p) { return rows_of(p, p.scale); }
at::Tensor offsets_of(const QWeight &p) { return rows_of(p, p.offset).repeat_interleave(32, 1); }

// The int8 kernels' product: the parts of Q8/Q4 with groups of 32 take x
// rounded to 8 bits against their scaled values and the group's offset
// against x itself (offset * sum(x)); the other parts x as it is.
double int8_err(const at::Tensor &y, const at::Tensor &x, const std::vector<QWeight> &parts) {
  std::vector<at::Tensor> refs, bounds;
  const at::Tensor xd = x.to(at::kDouble), xr = int8_rounded(x);
  for (const QWeight &p : parts) {
    at::Tensor w = qweight_dequantize(p).to(at::kDouble);
    bounds.push_back(at::matmul(xd.abs(), w.abs().t()));
    if (!p.int8_form()) {
      refs.push_back(at::matmul(xd, w.t()));
      continue;
    }
    // (a tiled Q4_0's offset meets x's 8-bit values with the rest)
    at::Tensor o = p.offset.defined()              ? offsets_of(p)
                   : p.fmt == qk::kQ4 && !p.tiled ? (-8 * scales_of(p)).repeat_interleave(32, 1)  // (Q4_0)
                                                   : at::zeros_like(w);
    refs.push_back(at::matmul(xr, (w - o).t()) + at::matmul(xd, o.t()));
  }
  return ((y.to(at::kDouble) - at::cat(refs, 1)).abs() / (at::cat(bounds, 1) + 1e-30)).max().item<double>();
}

// Products of 1..9 and 20 rows of x (and a [2, 3, K] batch) with the
// stacked parts against `ref` (their dequantised rows stacked); 9 and 20
// rows both through the kernels and through the unpacked tiles. Where the
// int8 kernels run, the parts marked for them (int8_acts) with 1, 3, 9, 20
// and 37 rows: against int8_err's reference, and each row's result the
// same bits whatever the other rows.
void check_products(const std::vector<QWeight> &parts, const at::Tensor &ref, const std::string &what) {
  const int64_t K = ref.size(1);
  if (qk::int8_available()) {
    std::vector<QWeight> marked(parts);
    bool all = true;  // (the float32 kernels' sums depend on the row count)
    for (QWeight &p : marked) {
      p.int8_acts = true;
      all = all && p.int8_form();
    }
    at::Tensor x = at::randn({37, K});
    at::Tensor y = qweight_linear(x, marked);
    for (int64_t M : {1, 3, 9, 20}) {
      if (!all) break;
      at::Tensor part = qweight_linear(x.narrow(0, 37 - M, M), marked);
      check(at::equal(part, y.narrow(0, 37 - M, M)), what + " int8 M=" + std::to_string(M) + ": rows differ from M=37's");
    }
    double e = int8_err(y, x, parts);
    check(e < 1e-5, what + " int8 M=37: relative error " + std::to_string(e));
  }
  for (int64_t M : {1, 2, 3, 4, 5, 6, 7, 8, 9, 20}) {
    at::Tensor x = at::randn({M, K});
    for (int64_t tiles_from : {int64_t(1) << 40, int64_t(9)}) {
      qweight_set_prefill_rows(tiles_from);
      if (M < 9 && tiles_from == 9) continue;
      double e = rel_err(qweight_linear(x, parts), x, ref);
      check(e < 2e-6, what + " M=" + std::to_string(M) + (M >= tiles_from ? " (tiles)" : "") +
                          ": relative error " + std::to_string(e));
    }
    qweight_set_prefill_rows(0);
  }
  at::Tensor x = at::randn({2, 3, K});
  at::Tensor y = qweight_linear(x, parts);
  check(y.sizes() == at::IntArrayRef({2, 3, ref.size(0)}), what + ": the batch's shape");
  double e = rel_err(y.view({6, -1}), x.view({6, K}), ref);
  check(e < 2e-6, what + " batch [2, 3]: relative error " + std::to_string(e));
}

// Tiled matrices (qweight_tile), where the int8 kernels run: parts of 16,
// 32 and 48 rows, unpacked and looked up as before tiling; products with
// 1 to 37 rows of x on 1 and 2 threads against int8_err's reference, each
// row's result the same bits whatever the other rows; beside row-major
// parts whose x comes in either order; and with the int8 kernels turned
// off after tiling, float32 products.
void check_tiles(std::mt19937 &rng) {
  if (!qk::int8_available()) {
    std::printf("tiles: skipped (no AVX-512 VNNI)\n");
    return;
  }
  auto gguf = [&](GgmlType t, int64_t rows, int64_t cols) {
    std::vector<uint8_t> b = random_blocks(t, rows, cols, rng);
    return qweight_from_gguf(uint32_t(t), b.data(), b.size(), rows, cols, nullptr);
  };
  struct Set {
    std::string name;
    std::vector<QWeight> parts;  // row-major
  };
  at::Tensor f = at::randn({32, 1600}) * 0.1;
  std::vector<Set> sets = {
      {"Q8_0", {gguf(GgmlType::Q8_0, 48, 96)}},
      {"Q4_0", {gguf(GgmlType::Q4_0, 32, 160)}},
      {"Q4_1", {gguf(GgmlType::Q4_1, 16, 96)}},
      {"Q4_K", {gguf(GgmlType::Q4_K, 16, 512)}},
      {"Q4_0 wide", {gguf(GgmlType::Q4_0, 16, 1600)}},
      {"q8_0 float scales", {qweight_quantize(f, "q8_0")}},
      {"q4_0 float scales", {qweight_quantize(f, "q4_0")}},
      {"q4_1 float scales", {qweight_quantize(f, "q4_1")}},
      // x in Q4's order (row-major Q4 rows the most), then in its own
      {"tiled Q8_0 + Q4_0 + tiled Q4_1", {gguf(GgmlType::Q8_0, 16, 96), gguf(GgmlType::Q4_0, 37, 96),
                                          gguf(GgmlType::Q4_1, 32, 96)}},
      {"tiled Q4_0 + Q8_0", {gguf(GgmlType::Q4_0, 16, 160), gguf(GgmlType::Q8_0, 21, 160)}},
      {"Q6_K", {gguf(GgmlType::Q6_K, 32, 512)}},
      // Q6 tiles with x in Q4's order (a row-major Q4_K), and a Q6_K left
      // row-major (float32 x)
      {"tiled Q6_K + Q4_K + Q6_K", {gguf(GgmlType::Q6_K, 16, 512), gguf(GgmlType::Q4_K, 23, 512),
                                    gguf(GgmlType::Q6_K, 23, 512)}},
  };
  for (const Set &set : sets) {
    std::vector<QWeight> tiled;
    std::vector<at::Tensor> refs;
    for (const QWeight &p : set.parts) {
      QWeight m = p;  // (a part left row-major takes 8-bit x too)
      m.int8_acts = true;
      QWeight t = qweight_tile(m);
      // (Q6 tiles: Q6_K's own 210 bytes per 256 values)
      const int64_t bytes = t.fmt == qk::kQ6 ? p.rows * p.cols / 256 * 210 : p.nbytes();
      check(t.tiled == (p.rows % 16 == 0) && t.nbytes() == bytes, set.name + ": tiled where rows allow, its bytes");
      at::Tensor ref = qweight_dequantize(p);
      check(at::equal(qweight_dequantize(t), ref), set.name + ": tiled values differ from row-major ones");
      at::Tensor ids = at::tensor(std::vector<int64_t>{p.rows - 1, 0, 5, 17 % p.rows});
      check(at::equal(qweight_embedding(t, ids), at::embedding(ref, ids)), set.name + ": tiled embedding rows");
      tiled.push_back(t);
      refs.push_back(ref);
    }
    const int64_t K = set.parts[0].cols;
    at::Tensor x = at::randn({37, K});
    for (int threads : {1, 2}) {
      at::set_num_threads(threads);
      const std::string what = set.name + " threads=" + std::to_string(threads);
      at::Tensor y = qweight_linear(x, tiled);
      double e = int8_err(y, x, tiled);
      check(e < 1e-5, what + " tiled M=37: relative error " + std::to_string(e));
      for (int64_t M : {1, 2, 3, 4, 5, 8, 9, 20}) {
        at::Tensor part = qweight_linear(x.narrow(0, 37 - M, M), tiled);
        check(at::equal(part, y.narrow(0, 37 - M, M)), what + " tiled M=" + std::to_string(M) + ": rows differ");
      }
    }
    at::set_num_threads(1);
    qk::isa_force(qk::Isa::avx2);  // the int8 kernels off: the tiles unpacked, float32 products
    double e = rel_err(qweight_linear(x.narrow(0, 0, 3), tiled), x.narrow(0, 0, 3), at::cat(refs, 0));
    check(e < 2e-6, set.name + " tiled, int8 turned off: relative error " + std::to_string(e));
    qk::isa_force(qk::Isa::avx512);
  }
  // Tiled parts stack as row-major ones do, by whole tiles.
  QWeight a = qweight_tile(gguf(GgmlType::Q4_0, 32, 96)), b = qweight_tile(gguf(GgmlType::Q4_0, 16, 96));
  QWeight ab = qweight_cat({a, b});
  check(ab.tiled && ab.rows == 48 &&
            at::equal(qweight_dequantize(ab), at::cat({qweight_dequantize(a), qweight_dequantize(b)}, 0)),
        "tiled parts stacked");
  check(!qweight_same_layout(a, gguf(GgmlType::Q4_0, 16, 96)), "tiled and row-major parts are not stacked");
  QWeight a6 = qweight_tile(gguf(GgmlType::Q6_K, 32, 256)), b6 = qweight_tile(gguf(GgmlType::Q6_K, 16, 256));
  QWeight ab6 = qweight_cat({a6, b6});
  check(ab6.fmt == qk::kQ6 && ab6.rows == 48 &&
            at::equal(qweight_dequantize(ab6), at::cat({qweight_dequantize(a6), qweight_dequantize(b6)}, 0)),
        "Q6 tiles stacked");
  // A Q6_K whose d is not finite keeps its Q8/16 (float32 x), values intact.
  std::vector<uint8_t> inf = random_blocks(GgmlType::Q6_K, 16, 256, rng);
  put_half(inf.data() + 208, std::numeric_limits<float>::infinity());
  QWeight pi = qweight_from_gguf(uint32_t(GgmlType::Q6_K), inf.data(), inf.size(), 16, 256, nullptr);
  QWeight ti = qweight_tile(pi);
  check(!ti.tiled && ti.fmt == qk::kQ8 && !ti.int8_form(), "Q6_K with an infinite d: not tiled");
}

template <typename F>
bool refuses(const F &f) {
  try {
    f();
  } catch (const StatusError &e) {
    return e.status() == CTORCH_INVALID_ARGUMENT;
  }
  return false;
}

void run_checks(std::mt19937 &rng) {
  struct Case {
    GgmlType type;
    const char *name;
    int64_t rows, cols;
  } cases[] = {{GgmlType::Q8_0, "Q8_0", 37, 96},
               {GgmlType::Q4_0, "Q4_0", 37, 160},
               {GgmlType::Q4_1, "Q4_1", 41, 64},
               {GgmlType::Q4_K, "Q4_K", 19, 512},
               {GgmlType::Q6_K, "Q6_K", 23, 256},
               // wider than a prompt's column block (512): its blocks' sums added up
               {GgmlType::Q4_1, "Q4_1 wide", 21, 1600},
               {GgmlType::Q6_K, "Q6_K wide", 9, 768}};
  std::vector<qk::Isa> isas;
  for (qk::Isa i : {qk::Isa::scalar, qk::Isa::avx2, qk::Isa::avx512})
    if (qk::isa_supported(i)) isas.push_back(i);
  for (const Case &c : cases) {
    std::vector<uint8_t> blocks = random_blocks(c.type, c.rows, c.cols, rng);
    at::Tensor deq = at::empty({c.rows, c.cols});
    gguf_dequantize(c.type, blocks.data(), deq.data_ptr<float>(), c.rows * c.cols);
    // Rows reversed in pairs, as a stand-in for llama's q/k permutation.
    std::vector<int64_t> order(static_cast<size_t>(c.rows));
    for (int64_t r = 0; r < c.rows; ++r) order[size_t(r)] = (r ^ 1) < c.rows ? (r ^ 1) : r;
    for (bool permuted : {false, true}) {
      const std::string what = std::string(c.name) + (permuted ? " permuted" : "");
      QWeight w = qweight_from_gguf(static_cast<uint32_t>(c.type), blocks.data(), blocks.size(), c.rows, c.cols,
                                    permuted ? order.data() : nullptr);
      at::Tensor ref = permuted ? deq.index_select(0, at::tensor(order)) : deq;
      const bool half = c.type == GgmlType::Q8_0 || c.type == GgmlType::Q4_0 || c.type == GgmlType::Q4_1;
      check(w.half_scales() == half, what + ": the file's half scales kept (only Q8_0, Q4_0, Q4_1)");
      at::Tensor ids = at::tensor(std::vector<int64_t>{0, c.rows - 1, 3, 3}).view({2, 2});
      for (qk::Isa isa : isas) {
        qk::isa_force(isa);
        check(at::equal(qweight_dequantize(w), ref),
              what + " " + qk::isa_name(isa) + ": unpacked values differ from gguf_dequantize's");
        check(at::equal(qweight_embedding(w, ids), at::embedding(ref, ids)), what + ": embedding rows");
        for (int threads : {1, 2}) {
          at::set_num_threads(threads);
          check_products({w}, ref, what + " " + qk::isa_name(isa) + " threads=" + std::to_string(threads));
        }
      }
      at::set_num_threads(1);
    }
    check(refuses([&] {
            qweight_from_gguf(static_cast<uint32_t>(c.type), blocks.data(), blocks.size() - 1, c.rows, c.cols,
                              nullptr);
          }),
          std::string(c.name) + ": a short tensor is refused");
    std::vector<int64_t> wild(order);
    wild[0] = c.rows;
    check(refuses([&] {
            qweight_from_gguf(static_cast<uint32_t>(c.type), blocks.data(), blocks.size(), c.rows, c.cols,
                              wild.data());
          }),
          std::string(c.name) + ": a row index outside the matrix is refused");
  }
  // Two formats stacked (as Q4_K q/k with Q6_K v in a Q4_K_M file).
  std::vector<uint8_t> a = random_blocks(GgmlType::Q4_K, 9, 256, rng), b = random_blocks(GgmlType::Q6_K, 7, 256, rng);
  QWeight qa = qweight_from_gguf(uint32_t(GgmlType::Q4_K), a.data(), a.size(), 9, 256, nullptr);
  QWeight qb = qweight_from_gguf(uint32_t(GgmlType::Q6_K), b.data(), b.size(), 7, 256, nullptr);
  at::Tensor ref = at::cat({qweight_dequantize(qa), qweight_dequantize(qb)}, 0);
  for (qk::Isa isa : isas) {
    qk::isa_force(isa);
    check_products({qa, qb}, ref, std::string("Q4_K + Q6_K stacked ") + qk::isa_name(isa));
  }
  // Q4_0 keeps the file's bytes and no offset table (its offset -8 d is
  // formed in float32 where it is used): a block whose -8 d overflows a
  // half stays exact; stacked with another Q4_0 matrix, not with a Q4_1.
  std::vector<uint8_t> big = random_blocks(GgmlType::Q4_0, 5, 64, rng);
  put_half(big.data() + 18 * 3, 9000.f);
  QWeight qbig = qweight_from_gguf(uint32_t(GgmlType::Q4_0), big.data(), big.size(), 5, 64, nullptr);
  check(qbig.half_scales() && !qbig.offset.defined() && qbig.nbytes() == int64_t(big.size()),
        "Q4_0: half scales, no offsets, the file's size");
  at::Tensor deq_big = at::empty({5, 64});
  gguf_dequantize(GgmlType::Q4_0, big.data(), deq_big.data_ptr<float>(), 5 * 64);
  std::vector<uint8_t> small = random_blocks(GgmlType::Q4_0, 3, 64, rng);
  QWeight qsmall = qweight_from_gguf(uint32_t(GgmlType::Q4_0), small.data(), small.size(), 3, 64, nullptr);
  std::vector<uint8_t> b41 = random_blocks(GgmlType::Q4_1, 3, 64, rng);
  QWeight q41 = qweight_from_gguf(uint32_t(GgmlType::Q4_1), b41.data(), b41.size(), 3, 64, nullptr);
  check(qweight_same_layout(qbig, qsmall) && !qweight_same_layout(qsmall, q41),
        "Q4_0 stacks with Q4_0, not with Q4_1 (an offset table)");
  for (qk::Isa isa : isas) {
    qk::isa_force(isa);
    check(at::equal(qweight_dequantize(qbig), deq_big), std::string("Q4_0, -8 d beyond a half ") + qk::isa_name(isa));
    check_products({qweight_cat({qbig, qsmall})}, at::cat({deq_big, qweight_dequantize(qsmall)}, 0),
                   std::string("Q4_0 stacked ") + qk::isa_name(isa));
    check_products({qbig, q41}, at::cat({deq_big, qweight_dequantize(q41)}, 0),
                   std::string("Q4_0 beside Q4_1 ") + qk::isa_name(isa));
    // Q8 beside Q4 in one product: x quantised once, in the order of the
    // format with more rows; the other's kernel reorders it.
    for (int64_t rows8 : {2, 11}) {
      std::vector<uint8_t> b8 = random_blocks(GgmlType::Q8_0, rows8, 64, rng);
      QWeight q8 = qweight_from_gguf(uint32_t(GgmlType::Q8_0), b8.data(), b8.size(), rows8, 64, nullptr);
      check_products({q8, qbig, q41}, at::cat({qweight_dequantize(q8), deq_big, qweight_dequantize(q41)}, 0),
                     "Q8_0 (" + std::to_string(rows8) + " rows) beside Q4_0 and Q4_1 " + qk::isa_name(isa));
    }
  }
  // Weight-only bf16: the values are torch's rounding, exactly, in every
  // instruction set; products as the other formats'.
  at::Tensor fb = at::randn({37, 96});
  QWeight wb = qweight_quantize(fb, "bf16");
  const at::Tensor bref = fb.to(at::kBFloat16).to(at::kFloat);
  check(wb.format() == "BF16" && wb.nbytes() == 37 * 96 * 2, "bf16: the format and its bytes");
  for (qk::Isa isa : isas) {
    qk::isa_force(isa);
    check(at::equal(qweight_dequantize(wb), bref), std::string("bf16 ") + qk::isa_name(isa) + ": unpacked values");
    at::Tensor ids = at::tensor(std::vector<int64_t>{5, 0, 36});
    check(at::equal(qweight_embedding(wb, ids), at::embedding(bref, ids)), "bf16: embedding rows");
    for (int threads : {1, 2}) {
      at::set_num_threads(threads);
      check_products({wb}, bref, std::string("bf16 ") + qk::isa_name(isa) + " threads=" + std::to_string(threads));
    }
    at::set_num_threads(1);
  }
  // float32 matrices in place (the fused decode step's float layers).
  at::Tensor ff = at::randn({37, 96});
  for (qk::Isa isa : isas) {
    qk::isa_force(isa);
    for (int64_t M : {1, 2, 5, 8}) {
      at::Tensor x = at::randn({M, 96}), y = at::empty({M, 37});
      float_linear_into(ff.data_ptr<float>(), 37, 96, x.data_ptr<float>(), M, y.data_ptr<float>());
      double e = rel_err(y, x, ff);
      check(e < 2e-6, std::string("float32 ") + qk::isa_name(isa) + " M=" + std::to_string(M) +
                          ": relative error " + std::to_string(e));
    }
  }
  // Floats quantised at load.
  at::Tensor f = at::randn({33, 128}) * 0.05;
  f[3].zero_();  // an all-zero group: scale 0
  for (const char *how : {"q8_0", "q4_0", "q4_1"}) {
    QWeight w = qweight_quantize(f, how);
    qk::isa_force(qk::Isa::scalar);
    at::Tensor back = qweight_dequantize(w);
    for (qk::Isa isa : isas) {  // every instruction set unpacks the same bits
      qk::isa_force(isa);
      check(at::equal(qweight_dequantize(w), back), std::string(how) + " " + qk::isa_name(isa) + ": unpacked bits");
    }
    // Each value within half a step (the group's scale) of the original;
    // q4_0's levels run from -8 to 7 steps, so a value near the opposite of
    // the group's extreme is cut by up to one whole step.
    at::Tensor step = w.scale.abs().repeat_interleave(32, 1);
    double worst = ((back - f).abs() / (step * 0.5 + 1e-12)).max().item<double>();
    const double most = std::string(how) == "q4_0" ? 2.0001 : 1.0001;
    check(worst <= most, std::string(how) + ": a value moved " + std::to_string(worst) + " half steps");
    check(at::equal(back[3], at::zeros({128})), std::string(how) + ": a zero group stays zero");
    for (qk::Isa isa : isas) {
      qk::isa_force(isa);
      check_products({w}, back, std::string(how) + " " + qk::isa_name(isa));
    }
  }
  at::Tensor odd = at::full({2, 32}, std::numeric_limits<float>::quiet_NaN());
  odd[1] = std::numeric_limits<float>::infinity();
  for (const char *how : {"q8_0", "q4_0", "q4_1"}) qweight_quantize(odd, how);  // defined, whatever it gives
  check(refuses([&] { qweight_quantize(f, "q3_0"); }), "an unknown quantisation is refused");
  check(refuses([&] { qweight_quantize(at::randn({4, 40}), "q8_0"); }), "rows of 40 values are refused");
  QWeight w = qweight_quantize(f, "q8_0");
  check(refuses([&] { qweight_embedding(w, at::tensor(std::vector<int64_t>{33})); }),
        "a token id outside the vocabulary is refused");
  check(refuses([&] { qweight_linear(at::randn({1, 64}), {w}); }), "an input of the wrong width is refused");
  qk::isa_force(isas.back());
}

double seconds_of(const std::function<void()> &f, int reps) {
  f();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
}

// SmolLM2-135M's matrices (gate/up stacked, down, the tied head) in Q4 and
// Q8: microseconds per product at M rows, each ISA, against at::mv /
// at::linear on the float32 matrix; prefill by tiles and by the kernels;
// the int8 kernels (where the CPU has VNNI) at every M.
void bench() {
  at::set_num_threads(1);
  struct Shape {
    const char *name;
    int64_t rows, cols;
  } shapes[] = {{"gate_up 3072x576", 3072, 576}, {"down 576x1536", 576, 1536}, {"head 49152x576", 49152, 576}};
  for (const Shape &s : shapes) {
    at::Tensor f = at::randn({s.rows, s.cols}) * 0.05;
    for (const char *how : {"q4_0", "q4_1", "q8_0"}) {
      QWeight w = qweight_quantize(f, how);
      at::Tensor deq = qweight_dequantize(w);
      for (int64_t M : {1, 4, 8, 16, 32, 64, 128, 512}) {
        at::Tensor x = at::randn({M, s.cols});
        const int reps = M >= 128 ? 3 : 20;
        double t_f = seconds_of([&] { M == 1 ? (void)at::mv(deq, x[0]) : (void)at::linear(x, deq); }, reps);
        std::printf("%-18s %-5s M=%-3lld float32 %8.1f us", s.name, how, (long long)M, t_f * 1e6);
        for (qk::Isa isa : {qk::Isa::scalar, qk::Isa::avx2, qk::Isa::avx512}) {
          if (!qk::isa_force(isa) || (isa == qk::Isa::scalar && M > 8) || (isa == qk::Isa::avx2 && M > 128)) continue;
          qweight_set_prefill_rows(1 << 30);
          double t = seconds_of([&] { qweight_linear(x, {w}); }, reps);
          std::printf("  %s %8.1f", qk::isa_name(isa), t * 1e6);
        }
        if (M > 8) {  // (unpacked by the best instruction set)
          qweight_set_prefill_rows(1);
          std::printf("  tiles %8.1f", seconds_of([&] { qweight_linear(x, {w}); }, reps) * 1e6);
        }
        if (qk::int8_available()) {
          QWeight w8 = w;
          w8.int8_acts = true;
          std::printf("  int8 %8.1f", seconds_of([&] { qweight_linear(x, {w8}); }, reps) * 1e6);
          QWeight wt = qweight_tile(w8);
          std::printf("  tiled %8.1f", seconds_of([&] { qweight_linear(x, {wt}); }, reps) * 1e6);
        }
        qweight_set_prefill_rows(0);
        std::printf("\n");
      }
    }
  }
}

// This thread's CPU time: the time it ran, whatever else the machine runs.
double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// One decode step's products as a model makes them: SmolLM2-135M's 30
// layers (q/k/v, o, gate/up, down: distinct matrices, so the weights stream
// from memory as in a model) in one format, then the head in Q8_0, repacked
// from GGUF blocks (half scales) or quantised at load (float32 scales).
struct StepSet {
  std::string name;
  std::vector<QWeight> ws, tiled;  // (tiled: where the int8 kernels run)
  int64_t layer_bytes = 0, layer_values = 0, head_bytes = 0;

  StepSet(GgmlType type, bool float32, std::mt19937 &rng) {
    name = std::string(type == GgmlType::Q8_0 ? "Q8_0" : type == GgmlType::Q4_0 ? "Q4_0" : "Q4_1") +
           (float32 ? ", float32 scales" : ", half scales");
    auto add = [&](int64_t rows, int64_t cols, GgmlType t) {
      if (float32) {
        ws.push_back(qweight_quantize(at::randn({rows, cols}) * 0.05,
                                      t == GgmlType::Q8_0 ? "q8_0" : t == GgmlType::Q4_0 ? "q4_0" : "q4_1"));
      } else {
        std::vector<uint8_t> b = random_blocks(t, rows, cols, rng);
        ws.push_back(qweight_from_gguf(uint32_t(t), b.data(), b.size(), rows, cols, nullptr));
      }
    };
    for (int l = 0; l < 30; ++l) add(960, 576, type), add(576, 576, type), add(3072, 576, type), add(576, 1536, type);
    for (const QWeight &w : ws) layer_bytes += w.nbytes(), layer_values += w.rows * w.cols;
    add(49152, 576, GgmlType::Q8_0);
    head_bytes = ws.back().nbytes();
    if (qk::int8_available())
      for (QWeight w : ws) {
        w.int8_acts = true;
        tiled.push_back(qweight_tile(w));
      }
  }

  // Seconds of this thread's CPU time (so that other processes count
  // less) for the layers and for the head, one row of x.
  std::pair<double, double> time(bool int8, bool tiles) const {
    at::Tensor x = at::randn({1, 1536}), y = at::empty({1, 49152});
    auto run = [&](size_t i) {
      QWeight w = tiles ? tiled[i] : ws[i];
      w.int8_acts = int8;
      qweight_linear_into({w}, x.data_ptr<float>(), 1, y.data_ptr<float>());
    };
    for (size_t i = 0; i < ws.size(); ++i) run(i);  // warm-up
    const double t0 = thread_seconds();
    for (size_t i = 0; i + 1 < ws.size(); ++i) run(i);
    const double t1 = thread_seconds();
    run(ws.size() - 1);
    return {t1 - t0, thread_seconds() - t1};
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// --bench-step: every set, instruction set (and the int8 kernels) and
// prefetch distance (none, the chosen one) interleaved over 9 rounds; the medians.
void bench_step() {
  at::set_num_threads(1);
  std::mt19937 rng(1);
  std::vector<StepSet> sets;
  for (GgmlType t : {GgmlType::Q4_1, GgmlType::Q4_0, GgmlType::Q8_0})
    for (bool float32 : {true, false}) sets.emplace_back(t, float32, rng);
  const int64_t chosen = qweight_prefetch();
  struct Point {
    size_t set;
    qk::Isa isa;
    int64_t prefetch;
    bool int8;  // 8-bit activations (where the CPU runs them)
    bool tiles; // the matrices in tiles (qweight_tile)
    std::vector<double> layers, head;
  };
  std::vector<Point> points;
  for (qk::Isa isa : {qk::Isa::avx2, qk::Isa::avx512})
    if (qk::isa_supported(isa))
      for (int64_t pf : {int64_t(0), chosen})
        for (size_t i = 0; i < sets.size(); ++i) {
          points.push_back({i, isa, pf, false, false, {}, {}});
          if (isa == qk::Isa::avx512 && qk::int8_available())
            for (bool tiles : {false, true}) points.push_back({i, isa, pf, true, tiles, {}, {}});
        }
  for (int round = 0; round < 9; ++round)
    for (Point &p : points) {
      qk::isa_force(p.isa);
      qweight_set_prefetch(p.prefetch);
      auto t = sets[p.set].time(p.int8, p.tiles);
      p.layers.push_back(t.first);
      p.head.push_back(t.second);
    }
  qweight_set_prefetch(chosen);
  for (const Point &p : points) {
    const StepSet &s = sets[p.set];
    const double tl = median(p.layers), th = median(p.head);
    std::printf("%-6s%s prefetch %4lld  %-22s%s layers %6.2f ms (%4.1f GB/s, %.3f bytes/value)  Q8_0 head %5.2f ms (%4.1f GB/s)\n",
                qk::isa_name(p.isa), p.int8 ? "+int8" : "     ", (long long)p.prefetch, s.name.c_str(),
                p.tiles ? " tiled" : "      ", tl * 1e3, s.layer_bytes / tl / 1e9,
                double(s.layer_bytes) / s.layer_values, th * 1e3, s.head_bytes / th / 1e9);
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && !std::strcmp(argv[1], "--bench")) {
    bench();
    return 0;
  }
  if (argc > 1 && !std::strcmp(argv[1], "--bench-step")) {
    bench_step();
    return 0;
  }
  std::mt19937 rng(1234);
  at::manual_seed(1234);
  std::printf("instruction sets:");
  for (qk::Isa i : {qk::Isa::scalar, qk::Isa::avx2, qk::Isa::avx512})
    if (qk::isa_supported(i)) std::printf(" %s", qk::isa_name(i));
  std::printf("\n");
  try {
    run_checks(rng);
    check_tiles(rng);
  } catch (const std::exception &e) {
    std::printf("FAIL exception: %s\n", e.what());
    return 1;
  }
  if (failures) {
    std::printf("%d failures\n", failures);
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
