// Packed quantised matrices: GGUF's blocks repacked (qweight.h says how each
// type maps), floats quantised at load, rows stacked, unpacked, looked up,
// and the products, split over the intra-op threads.
#include "lm/qweight.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/internal.h"
#include "infer/intra_op.h"
#include "lm/gguf.h"
#include "lm/qkernels.h"

namespace ctorch {
namespace lm {
namespace qweight_detail {

[[noreturn]] void bad(const std::string &what) { fail(CTORCH_INVALID_ARGUMENT, "packed weights: " + what); }

inline float half_at(const uint8_t *p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return c10::detail::fp16_ieee_to_fp32_value(h);
}

// How far ahead the kernels prefetch (qk::View::prefetch): 2 KiB was
// fastest on decode-shaped sweeps (qweight_check --bench-step) with AVX2
// and AVX-512 alike, 30-40% over none.
std::atomic<int64_t> g_prefetch{2048};

qk::View view_of(const QWeight &w) {
  qk::View v;
  v.fmt = w.fmt;
  v.rows = w.rows;
  v.cols = w.cols;
  v.group = w.group;
  v.row_bytes = w.fmt == qk::kQ8   ? w.cols
                : w.fmt == qk::kQ4 ? w.cols / 2
                : w.fmt == qk::kQ6 ? w.cols / 4 * 3
                                   : 2 * w.cols;
  v.ngroups = w.cols / w.group;
  v.scale_stride = v.ngroups;
  v.data = w.data.data_ptr<uint8_t>();
  v.half = w.half_scales();
  v.sym = w.fmt == qk::kQ4 && !w.offset.defined();
  v.tiled = w.tiled;
  if (w.fmt == qk::kQ6) {
    v.scale8 = w.scale.data_ptr<int8_t>();
    v.super16 = reinterpret_cast<const uint16_t *>(w.super.data_ptr<at::Half>());
  } else if (v.half) {
    v.scale16 = reinterpret_cast<const uint16_t *>(w.scale.data_ptr<at::Half>());
    v.offset16 = w.offset.defined() ? reinterpret_cast<const uint16_t *>(w.offset.data_ptr<at::Half>()) : nullptr;
  } else if (w.scale.defined()) {  // (BF16 has none)
    v.scale = w.scale.data_ptr<float>();
    v.offset = w.offset.defined() ? w.offset.data_ptr<float>() : nullptr;
  }
  v.prefetch = g_prefetch.load(std::memory_order_relaxed);
  return v;
}

// sym: a Q4 without an offset table (its offset -8 * scale).
QWeight make(int fmt, int64_t rows, int64_t cols, int64_t group, bool half, bool sym = false) {
  QWeight w;
  w.fmt = fmt;
  w.rows = rows;
  w.cols = cols;
  w.group = group;
  auto u8 = at::TensorOptions().dtype(at::kByte), sc = at::TensorOptions().dtype(half ? at::kHalf : at::kFloat);
  w.data = at::empty({rows, fmt == qk::kQ8 ? cols : fmt == qk::kQ4 ? cols / 2 : 2 * cols}, u8);
  if (fmt != qk::kBF16) w.scale = at::empty({rows, cols / group}, sc);
  if (fmt == qk::kQ4 && !sym) w.offset = at::empty({rows, cols / group}, sc);
  return w;
}

// f(r0, r1) over [0, n) in one contiguous range per intra-op thread (all
// on this thread where there is one), each a multiple of `whole` rows (the
// kernels' row blocks, a tiled matrix's tiles) but the last.
template <typename F>
void split_rows(int64_t n, int64_t min_rows, const F &f, int64_t whole = 4) {
  const int64_t threads = std::max<int64_t>(1, at::get_num_threads());
  const int64_t parts = std::max<int64_t>(1, std::min(threads, n / std::max<int64_t>(1, min_rows)));
  if (parts == 1) return f(int64_t(0), n);
  const int64_t per = ((n + parts - 1) / parts + whole - 1) / whole * whole;
  infer::intra_op_for(parts, [&](int64_t p) {
    const int64_t r0 = std::min(n, p * per), r1 = std::min(n, r0 + per);
    if (r0 < r1) f(r0, r1);
  });
}

// Columns [k0, k0 + n) of the matrix v views (k0 and n whole groups).
qk::View column_slice(const qk::View &v, int64_t k0, int64_t n) {
  qk::View s = v;
  s.cols = n;
  s.ngroups = n / v.group;
  const int64_t g0 = k0 / v.group;
  s.data += v.fmt == qk::kQ8 ? k0 : v.fmt == qk::kQ4 ? k0 / 2 : v.fmt == qk::kBF16 ? 2 * k0 : 4 * k0;
  if (s.scale) s.scale += g0;
  if (s.offset) s.offset += g0;
  if (s.scale16) s.scale16 += g0;
  if (s.offset16) s.offset16 += g0;
  return s;
}

// Q4_K's eight 6-bit scales and mins of a super-block (12 bytes at s).
void q4k_scales(const uint8_t *s, uint8_t sc[8], uint8_t mn[8]) {
  for (int k = 0; k < 4; ++k) {
    sc[k] = s[k] & 0x3F;
    mn[k] = s[k + 4] & 0x3F;
    sc[k + 4] = static_cast<uint8_t>((s[k + 8] & 0x0F) | ((s[k] >> 2) & 0x30));
    mn[k + 4] = static_cast<uint8_t>((s[k + 8] >> 4) | ((s[k + 4] >> 2) & 0x30));
  }
}

inline uint16_t half_bits(const uint8_t *p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

// Q8_0, Q4_0 and Q4_1 keep the file's half scales (w.half_scales()); Q4_0
// is symmetric (its offset -8 d formed where it is used).
bool keeps_half_scales(uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1: return true;
    default: return false;
  }
}

// One file row (nb blocks at src) into packed row r. The scales are formed
// with the float32 operations gguf_quants.cpp's dequantisation uses, or kept
// as the file's halves (w.half_scales()).
void repack_row(uint32_t type, const uint8_t *src, int64_t nb, QWeight &w, const qk::View &v, int64_t r) {
  uint8_t *dst = w.data.data_ptr<uint8_t>() + r * v.row_bytes;
  if (v.half) {
    uint16_t *scale = reinterpret_cast<uint16_t *>(w.scale.data_ptr<at::Half>()) + r * v.ngroups;
    uint16_t *offset = w.offset.defined() ? reinterpret_cast<uint16_t *>(w.offset.data_ptr<at::Half>()) + r * v.ngroups
                                          : nullptr;
    switch (static_cast<GgmlType>(type)) {
      case GgmlType::Q8_0:
        for (int64_t b = 0; b < nb; ++b, src += 34) {
          scale[b] = half_bits(src);
          std::memcpy(dst + 32 * b, src + 2, 32);
        }
        return;
      case GgmlType::Q4_0:  // [d: f16][16 bytes of nibbles]: d * (q - 8) = d * q + (-8 d), both exact
        for (int64_t b = 0; b < nb; ++b, src += 18) {
          scale[b] = half_bits(src);
          std::memcpy(dst + 16 * b, src + 2, 16);
        }
        return;
      case GgmlType::Q4_1:
        for (int64_t b = 0; b < nb; ++b, src += 20) {
          scale[b] = half_bits(src);
          offset[b] = half_bits(src + 2);
          std::memcpy(dst + 16 * b, src + 4, 16);
        }
        return;
      default: bad(ggml_type_name(type) + " has no half scales");
    }
  }
  float *scale = w.scale.data_ptr<float>() + r * v.ngroups;
  float *offset = w.offset.defined() ? w.offset.data_ptr<float>() + r * v.ngroups : nullptr;
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::Q8_0:  // [d: f16][32 x int8]
      for (int64_t b = 0; b < nb; ++b, src += 34) {
        scale[b] = half_at(src);
        std::memcpy(dst + 32 * b, src + 2, 32);
      }
      return;
    case GgmlType::Q4_1:  // [d: f16][m: f16][16 bytes of nibbles]
      for (int64_t b = 0; b < nb; ++b, src += 20) {
        scale[b] = half_at(src);
        offset[b] = half_at(src + 2);
        std::memcpy(dst + 16 * b, src + 4, 16);
      }
      return;
    case GgmlType::Q4_K:
      // [d][dmin][12 bytes of scales/mins][128 bytes]: sub-block s is the low
      // (s even) or high (s odd) nibbles of bytes 32 (s / 2) .. + 32, in
      // order; repacked to value j in byte j's low nibble, j + 16 in its high.
      for (int64_t b = 0; b < nb; ++b, src += 144) {
        const float d = half_at(src), dmin = half_at(src + 2);
        uint8_t sc[8], mn[8];
        q4k_scales(src + 4, sc, mn);
        const uint8_t *q = src + 16;
        for (int s = 0; s < 8; ++s) {
          const int64_t g = 8 * b + s;
          scale[g] = d * static_cast<float>(sc[s]);
          offset[g] = -(dmin * static_cast<float>(mn[s]));
          const uint8_t *qs = q + 32 * (s / 2);
          const int sh = 4 * (s % 2);
          uint8_t *o = dst + 16 * g;
          for (int j = 0; j < 16; ++j)
            o[j] = static_cast<uint8_t>(((qs[j] >> sh) & 0x0F) | (((qs[j + 16] >> sh) & 0x0F) << 4));
        }
      }
      return;
    case GgmlType::Q6_K:
      // [ql: 128][qh: 64][16 int8 scales][d: f16]: value e (of 256) has its
      // low 4 bits in ql, high 2 in qh (gguf_quants.cpp's deq_q6_k says
      // where); it becomes the int8 q - 32 with the scale d * scale[e / 16].
      // d is kept too (QWeight::super), for the Q6 tiles.
      for (int64_t b = 0; b < nb; ++b, src += 210) {
        const uint8_t *ql = src, *qh = src + 128;
        std::memcpy(reinterpret_cast<uint8_t *>(w.super.data_ptr<at::Half>()) + 2 * (r * nb + b), src + 208, 2);
        const int8_t *sc = reinterpret_cast<const int8_t *>(src + 192);
        const float d = half_at(src + 208);
        for (int k = 0; k < 16; ++k) scale[16 * b + k] = d * static_cast<float>(sc[k]);
        int8_t *o = reinterpret_cast<int8_t *>(dst + 256 * b);
        for (int e = 0; e < 256; ++e) {
          const int h = e / 128, rr = e % 128;
          const int lo = (ql[64 * h + rr % 64] >> (4 * (rr / 64))) & 0x0F;
          const int hi = (qh[32 * h + rr % 32] >> (2 * (rr / 32))) & 0x03;
          o[e] = static_cast<int8_t>((lo | (hi << 4)) - 32);
        }
      }
      return;
    default: break;
  }
  bad(ggml_type_name(type) + " has no packed form");
}

// Quantises group g of row r of src (float32, row-major) into w.
void quantize_group(const float *x, const std::string &how, QWeight &w, const qk::View &v, int64_t r, int64_t g) {
  float *scale = w.scale.data_ptr<float>() + r * v.ngroups + g;
  if (how == "q8_0") {
    float amax = 0.f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.f, id = d > 0.f && std::isfinite(d) ? 1.f / d : 0.f;
    int8_t *q = reinterpret_cast<int8_t *>(w.data.data_ptr<uint8_t>() + r * v.row_bytes + 32 * g);
    for (int j = 0; j < 32; ++j)  // fmin/fmax take the number over a NaN: the cast is always defined
      q[j] = static_cast<int8_t>(std::lrint(std::fmin(127.f, std::fmax(-127.f, x[j] * id))));
    *scale = d;
    return;
  }
  float d = 0.f, off = 0.f, base = 0.f;
  if (how == "q4_0") {
    float mx = 0.f;  // the value of largest magnitude, with its sign
    for (int j = 0; j < 32; ++j)
      if (std::fabs(x[j]) > std::fabs(mx)) mx = x[j];
    d = mx / -8.f;
  } else {  // q4_1
    float lo = x[0], hi = x[0];
    for (int j = 1; j < 32; ++j) lo = std::fmin(lo, x[j]), hi = std::fmax(hi, x[j]);
    d = (hi - lo) / 15.f;
    off = base = lo;
  }
  const float id = d != 0.f && std::isfinite(d) ? 1.f / d : 0.f;
  uint8_t *q = w.data.data_ptr<uint8_t>() + r * v.row_bytes + 16 * g;
  auto level = [&](float xv) {
    const float t = how == "q4_0" ? xv * id + 8.f : (xv - base) * id;
    return static_cast<uint8_t>(std::lrint(std::fmin(15.f, std::fmax(0.f, t))));
  };
  for (int j = 0; j < 16; ++j) q[j] = static_cast<uint8_t>(level(x[j]) | (level(x[j + 16]) << 4));
  *scale = d;
  if (w.offset.defined()) w.offset.data_ptr<float>()[r * v.ngroups + g] = off;
}

// 0: the instruction set's own threshold (prefill_rows_of).
std::atomic<int64_t> g_prefill_rows{0};

// From how many rows of x the unpacked tiles and BLAS beat the kernels,
// which unpack each block once per kMaxRows rows of x (qweight_check
// --bench, SmolLM2-135M's matrices, one thread of an AVX-512 Xeon): with
// MKL's GEMM (PyPI's libtorch) the tiles win from about 64 rows; with
// Debian's OpenBLAS the kernels won at every count up to 128 (3x at 128);
// the scalar kernels lose from kMaxRows + 1 on.
int64_t prefill_rows_of(qk::Isa isa) {
  if (isa == qk::Isa::scalar) return qk::kMaxRows + 1;
  return at::hasMKL() ? 64 : std::numeric_limits<int64_t>::max();
}

int64_t prefill_rows() {
  const int64_t set = g_prefill_rows.load(std::memory_order_relaxed);
  return set > 0 ? set : prefill_rows_of(qk::isa_active());
}

// Whether w multiplies 8-bit activations (qkernels_int8.cpp).
bool takes_int8(const QWeight &w) { return w.int8_acts && w.int8_form() && qk::int8_available(); }

// The rows of x [M, K] times w's rows into y's columns [col, col + rows)
// (y [M, ldy]). x8: x quantised (qk::quantize_acts), where w takes_int8.
void product(const QWeight &w, const float *x, const qk::Acts8 *x8, int64_t M, float *y, int64_t ldy, int64_t col) {
  const qk::View v = view_of(w);
  const int64_t K = w.cols;
  if (takes_int8(w)) {
    // 8-bit activations, every row count.
    split_rows(
        w.rows, 16, [&](int64_t r0, int64_t r1) { qk::int8_rows(v, r0, r1, *x8, y + col, ldy); },
        v.tiled ? qk::kTile : 4);
    return;
  }
  if (M >= prefill_rows() || v.tiled) {  // (tiles' float32 products: only where int8 was turned off)
    // Prefill: W unpacked to float32 and multiplied by BLAS; the unpacking
    // is 1 / M of the products' work. A matrix of up to 32 MiB of floats is
    // unpacked whole and multiplied straight into y (one GEMM, no copies);
    // a larger one (an output head) in tiles of 512 KiB.
    const int64_t whole = (int64_t(32) << 20) / (4 * K);
    const int64_t tile = w.rows <= whole ? w.rows : std::max<int64_t>(16, (int64_t(1) << 17) / K);
    at::Tensor xt = at::from_blob(const_cast<float *>(x), {M, K}, at::TensorOptions().dtype(at::kFloat));
    at::Tensor buf = at::empty({std::min(tile, w.rows), K}, at::TensorOptions().dtype(at::kFloat));
    at::Tensor yt = at::from_blob(y, {M, ldy}, at::TensorOptions().dtype(at::kFloat));
    for (int64_t r0 = 0; r0 < w.rows; r0 += tile) {
      const int64_t n = std::min(tile, w.rows - r0);
      float *b = buf.data_ptr<float>();
      split_rows(n, 16, [&](int64_t a, int64_t e) { qk::dequant_rows(v, r0 + a, r0 + e, b + a * K); });
      if (n == ldy) {
        at::Tensor out = yt;  // the whole of y: the product lands in place
        at::mm_out(out, xt, buf.t());
      } else {
        yt.narrow(1, col + r0, n).copy_(at::mm(xt, buf.narrow(0, 0, n).t()));
      }
    }
    return;
  }
  const qk::Kernel k = qk::kernel(qk::isa_active(), w.fmt, v.half);
  if (M <= qk::kMaxRows) {  // decode: one pass over the matrix
    split_rows(w.rows, 16, [&](int64_t r0, int64_t r1) { k(v, r0, r1, x, M, K, y + col, ldy); });
    return;
  }
  // A prompt through the kernels: blocks of 64 weight rows and of kColumns
  // columns, so that a batch of kMaxRows rows of x (kMaxRows x kColumns
  // floats, 16 KiB) stays in the L1 cache while the block's weight rows go
  // over it (whole rows of x were read again from L2 for every weight row,
  // a third of the speed at a 1B model's widths). Each later column
  // block's sums are added into y.
  constexpr int64_t kColumns = 512;
  split_rows(w.rows, 16, [&](int64_t r0, int64_t r1) {
    std::vector<float> part(static_cast<size_t>(K > kColumns ? qk::kMaxRows * w.rows : 0));
    for (int64_t a = r0; a < r1; a += 64) {
      const int64_t e = std::min(r1, a + 64);
      for (int64_t k0 = 0; k0 < K; k0 += kColumns) {
        const qk::View s = column_slice(v, k0, std::min(kColumns, K - k0));
        for (int64_t m = 0; m < M; m += qk::kMaxRows) {
          const int64_t n = std::min(qk::kMaxRows, M - m);
          if (k0 == 0) {
            k(s, a, e, x + m * K, n, K, y + m * ldy + col, ldy);
            continue;
          }
          k(s, a, e, x + m * K + k0, n, K, part.data(), w.rows);
          for (int64_t i = 0; i < n; ++i)
            for (int64_t r = a; r < e; ++r) y[(m + i) * ldy + col + r] += part[size_t(i * w.rows + r)];
        }
      }
    }
  });
}

// Q6 tiles (qkernels.h's layout) from a Q6_K tensor's Q8/16: each scale
// split back into the file's d (kept in w.super) and an int8 sc. w itself
// where that is not exact or a value lies outside -32..31 (a file whose d
// is not finite, or a Q8/16 made otherwise): it keeps float32 activations.
QWeight tile_q6(const QWeight &w) {
  const int64_t ng = w.cols / 16, nsup = w.cols / 256, tiles = w.rows / qk::kTile;
  if (w.cols % 256 || w.super.dim() != 2 || w.super.size(0) != w.rows || w.super.size(1) != nsup || w.half_scales())
    return w;
  QWeight t = w;
  t.fmt = qk::kQ6;
  t.tiled = true;
  t.int8_acts = true;
  t.data = at::empty({w.rows, w.cols / 4 * 3}, at::TensorOptions().dtype(at::kByte));
  t.scale = at::empty({w.rows, ng}, at::TensorOptions().dtype(at::kChar));
  t.super = at::empty_like(w.super);
  const auto *q = reinterpret_cast<const int8_t *>(w.data.data_ptr<uint8_t>());
  const float *sf = w.scale.data_ptr<float>();
  const auto *ds = reinterpret_cast<const uint16_t *>(w.super.data_ptr<at::Half>());
  uint8_t *dst = t.data.data_ptr<uint8_t>();
  int8_t *sc = t.scale.data_ptr<int8_t>();
  auto *dd = reinterpret_cast<uint16_t *>(t.super.data_ptr<at::Half>());
  std::atomic<bool> ok{true};
  split_rows(tiles, 4, [&](int64_t t0, int64_t t1) {
    for (int64_t tt = t0; tt < t1; ++tt)
      for (int64_t l = 0; l < qk::kTile; ++l) {
        const int64_t r = tt * qk::kTile + l;
        for (int64_t b = 0; b < nsup; ++b) dd[(tt * nsup + b) * qk::kTile + l] = ds[r * nsup + b];
        for (int64_t g = 0; g < ng; ++g) {
          const float d = c10::detail::fp16_ieee_to_fp32_value(ds[r * nsup + g / 16]), s = sf[r * ng + g];
          const float k = d != 0.f ? s / d : 0.f;
          if (!(std::isfinite(d) && k >= -128.f && k <= 127.f && k == std::nearbyint(k) && d * k == s)) {
            ok = false;
            return;
          }
          sc[qk::tiled_scale_at(r, g, ng)] = static_cast<int8_t>(k);
          const int8_t *v = q + r * w.cols + 16 * g;
          uint8_t u[16];
          for (int j = 0; j < 16; ++j) {
            if (v[j] < -32 || v[j] > 31) {
              ok = false;
              return;
            }
            u[j] = static_cast<uint8_t>(v[j] + 32);
          }
          uint8_t *o = dst + (tt * ng + g) * qk::kTile * 12 + 4 * l;
          for (int c = 0; c < 3; ++c)
            for (int i = 0; i < 4; ++i)
              o[64 * c + i] = static_cast<uint8_t>(u[4 * c + i] | (((u[12 + i] >> (2 * c)) & 3) << 6));
        }
      }
  }, 1);
  return ok ? t : w;
}

}  // namespace qweight_detail

namespace qd = qweight_detail;

int64_t QWeight::nbytes() const {
  if (!defined()) return 0;
  return data.numel() + (scale.defined() ? scale.numel() * scale.element_size() : 0) +
         (offset.defined() ? offset.numel() * offset.element_size() : 0) + (super.defined() ? super.numel() * 2 : 0);
}

bool QWeight::int8_form() const { return ((fmt == qk::kQ8 || fmt == qk::kQ4) && group == 32) || fmt == qk::kQ6; }

std::string QWeight::format() const {
  if (fmt == qk::kBF16) return "BF16";
  return std::string(fmt == qk::kQ8 ? "Q8/" : fmt == qk::kQ6 ? "Q6/" : "Q4/") + std::to_string(group);
}

bool qweight_supports(uint32_t t) {
  switch (static_cast<GgmlType>(t)) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q4_K:
    case GgmlType::Q6_K: return true;
    default: return false;
  }
}

QWeight qweight_from_gguf(uint32_t type, const uint8_t *src, uint64_t nbytes, int64_t rows, int64_t cols,
                          const int64_t *row_order) {
  if (!qweight_supports(type)) qd::bad(ggml_type_name(type) + " has no packed form");
  int64_t be = 0, bb = 0;
  ggml_block(type, &be, &bb);
  if (rows < 1 || cols < 1 || be < 1 || cols % be)
    qd::bad("a " + ggml_type_name(type) + " matrix of " + std::to_string(rows) + " x " + std::to_string(cols) +
        " values is not whole blocks of " + std::to_string(be));
  const int64_t nb = cols / be;  // blocks per row
  const uint64_t row_src = uint64_t(nb) * uint64_t(bb);
  if (!src || nbytes / row_src != uint64_t(rows) || nbytes % row_src)
    qd::bad("a " + ggml_type_name(type) + " matrix of " + std::to_string(rows) + " x " + std::to_string(cols) +
        " values does not take " + std::to_string(nbytes) + " bytes");
  const auto t = static_cast<GgmlType>(type);
  const int fmt = t == GgmlType::Q8_0 || t == GgmlType::Q6_K ? qk::kQ8 : qk::kQ4;
  QWeight w = qd::make(fmt, rows, cols, t == GgmlType::Q6_K ? 16 : 32, qd::keeps_half_scales(type), t == GgmlType::Q4_0);
  if (t == GgmlType::Q6_K) w.super = at::empty({rows, nb}, at::TensorOptions().dtype(at::kHalf));
  const qk::View v = qd::view_of(w);
  if (row_order)
    for (int64_t r = 0; r < rows; ++r)
      if (row_order[r] < 0 || row_order[r] >= rows) qd::bad("a row index outside the matrix");
  qd::split_rows(rows, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t from = row_order ? row_order[r] : r;
      qd::repack_row(type, src + uint64_t(from) * row_src, nb, w, v, r);
    }
  });
  return w;
}

QWeight qweight_quantize(const at::Tensor &w_in, const std::string &how) {
  if (how != "q8_0" && how != "q4_0" && how != "q4_1" && how != "bf16")
    qd::bad("\"" + how + "\" is not q8_0, q4_0, q4_1 or bf16");
  if (w_in.dim() != 2 || w_in.size(1) % 32 || w_in.size(0) < 1)
    qd::bad("only a matrix whose rows are whole groups of 32 values is quantised");
  if (how == "bf16") {  // torch's rounding to bfloat16 (to nearest, ties to even), the bits kept
    QWeight w = qd::make(qk::kBF16, w_in.size(0), w_in.size(1), 32, false);
    at::Tensor b = w_in.to(at::kBFloat16).contiguous();
    std::memcpy(w.data.data_ptr<uint8_t>(), b.data_ptr(), size_t(b.numel()) * 2);
    return w;
  }
  at::Tensor x = w_in.to(at::kFloat).contiguous();
  const int64_t rows = x.size(0), cols = x.size(1);
  QWeight w = qd::make(how == "q8_0" ? qk::kQ8 : qk::kQ4, rows, cols, 32, false, how == "q4_0");
  const qk::View v = qd::view_of(w);
  const float *xp = x.data_ptr<float>();
  qd::split_rows(rows, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t g = 0; g < v.ngroups; ++g) qd::quantize_group(xp + r * cols + 32 * g, how, w, v, r, g);
  });
  return w;
}

QWeight qweight_tile(const QWeight &w) {
  if (!w.tiled && w.fmt == qk::kQ8 && w.super.defined() && w.rows % qk::kTile == 0 && qk::int8_available())
    return qd::tile_q6(w);
  if (w.tiled || !w.int8_form() || w.rows % qk::kTile || !qk::int8_available()) return w;
  const qk::View v = qd::view_of(w);
  const int64_t n = w.fmt == qk::kQ8 ? 32 : 16;  // a row's bytes per group
  const int64_t ng = v.ngroups, tiles = w.rows / qk::kTile;
  QWeight t = w;
  t.tiled = true;
  t.int8_acts = true;
  t.data = at::empty_like(w.data);
  t.scale = at::empty_like(w.scale);
  if (w.offset.defined()) t.offset = at::empty_like(w.offset);
  const uint8_t *src = w.data.data_ptr<uint8_t>();
  uint8_t *dst = t.data.data_ptr<uint8_t>();
  const int64_t es = w.scale.element_size();
  const auto *ss = static_cast<const uint8_t *>(w.scale.data_ptr());
  auto *ds = static_cast<uint8_t *>(t.scale.data_ptr());
  const auto *so = w.offset.defined() ? static_cast<const uint8_t *>(w.offset.data_ptr()) : nullptr;
  auto *dof = w.offset.defined() ? static_cast<uint8_t *>(t.offset.data_ptr()) : nullptr;
  qd::split_rows(tiles, 4, [&](int64_t t0, int64_t t1) {
    for (int64_t tt = t0; tt < t1; ++tt)
      for (int64_t g = 0; g < ng; ++g)
        for (int64_t l = 0; l < qk::kTile; ++l) {
          const int64_t r = tt * qk::kTile + l, at = qk::tiled_bytes_at(r, g, ng, n), e = qk::tiled_scale_at(r, g, ng);
          // byte 4c .. 4c + 3 of the row's group into vector c
          for (int64_t c = 0; c < n / 4; ++c) std::memcpy(dst + at + 64 * c, src + r * v.row_bytes + g * n + 4 * c, 4);
          std::memcpy(ds + e * es, ss + (r * ng + g) * es, size_t(es));
          if (so) std::memcpy(dof + e * es, so + (r * ng + g) * es, size_t(es));
        }
  }, 1);
  return t;
}

bool qweight_same_layout(const QWeight &a, const QWeight &b) {
  return a.fmt == b.fmt && a.group == b.group && a.cols == b.cols && a.half_scales() == b.half_scales() &&
         a.offset.defined() == b.offset.defined() && a.super.defined() == b.super.defined() && a.tiled == b.tiled;
}

QWeight qweight_cat(const std::vector<QWeight> &parts) {
  if (parts.empty()) qd::bad("nothing to stack");
  if (parts.size() == 1) return parts[0];
  QWeight w = parts[0];
  std::vector<at::Tensor> d, s, o, u;
  w.rows = 0;
  for (const QWeight &p : parts) {
    if (!qweight_same_layout(parts[0], p)) qd::bad("stacked matrices of different formats");
    w.rows += p.rows;
    d.push_back(p.data);
    if (p.scale.defined()) s.push_back(p.scale);
    if (p.offset.defined()) o.push_back(p.offset);
    if (p.super.defined()) u.push_back(p.super);
  }
  w.data = at::cat(d, 0);
  if (!s.empty()) w.scale = at::cat(s, 0);
  if (!o.empty()) w.offset = at::cat(o, 0);
  if (!u.empty()) w.super = at::cat(u, 0);
  return w;
}

at::Tensor qweight_dequantize(const QWeight &w) {
  at::Tensor out = at::empty({w.rows, w.cols}, at::TensorOptions().dtype(at::kFloat));
  const qk::View v = qd::view_of(w);
  float *o = out.data_ptr<float>();
  qd::split_rows(w.rows, 64, [&](int64_t r0, int64_t r1) { qk::dequant_rows(v, r0, r1, o + r0 * w.cols); });
  return out;
}

at::Tensor qweight_embedding(const QWeight &w, const at::Tensor &ids) {
  at::Tensor flat = ids.to(at::kLong).contiguous().view({-1});
  const int64_t n = flat.numel();
  const int64_t *id = flat.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    if (id[i] < 0 || id[i] >= w.rows)
      fail(CTORCH_INVALID_ARGUMENT, "token id " + std::to_string(id[i]) + " is outside the vocabulary [0, " +
                                        std::to_string(w.rows) + ")");
  at::Tensor out = at::empty({n, w.cols}, at::TensorOptions().dtype(at::kFloat));
  const qk::View v = qd::view_of(w);
  float *o = out.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) qk::dequant_rows(v, id[i], id[i] + 1, o + i * w.cols);
  std::vector<int64_t> shape = ids.sizes().vec();
  shape.push_back(w.cols);
  return out.view(shape);
}

void float_linear_into(const float *w, int64_t rows, int64_t cols, const float *x, int64_t M, float *y) {
  qk::View v;
  v.fmt = qk::kF32;
  v.rows = rows;
  v.cols = cols;
  v.group = 32;
  v.ngroups = cols / 32;
  v.row_bytes = 4 * cols;
  v.scale_stride = v.ngroups;
  v.data = reinterpret_cast<const uint8_t *>(w);
  v.prefetch = qd::g_prefetch.load(std::memory_order_relaxed);
  const qk::Kernel k = qk::kernel(qk::isa_active(), qk::kF32, false);
  qd::split_rows(rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t m = 0; m < M; m += qk::kMaxRows)
      k(v, r0, r1, x + m * cols, std::min(qk::kMaxRows, M - m), cols, y + m * rows, rows);
  });
}

void qweight_linear_into(const std::vector<QWeight> &parts, const float *x, int64_t M, float *y) {
  int64_t N = 0, rows8 = 0, rows4 = 0, tiled = 0;
  for (const QWeight &p : parts) {
    N += p.rows;
    if (qd::takes_int8(p)) (p.tiled ? tiled : p.fmt == qk::kQ4 ? rows4 : rows8) += p.rows;
  }
  // x quantised once for every part that takes 8-bit activations (a small
  // part of the products' work), in the order of the row-major format with
  // most rows (the tiles' kernels read either order alike).
  qk::Acts8 x8;
  if (rows8 + rows4 + tiled) qk::quantize_acts(x, M, parts[0].cols, parts[0].cols, x8, rows4 > rows8);
  int64_t col = 0;
  for (const QWeight &p : parts) {
    qd::product(p, x, &x8, M, y, N, col);
    col += p.rows;
  }
}

at::Tensor qweight_linear(const at::Tensor &x_in, const std::vector<QWeight> &parts) {
  if (parts.empty()) qd::bad("no matrix");
  const int64_t K = parts[0].cols;
  int64_t N = 0;
  for (const QWeight &p : parts) {
    if (p.cols != K) qd::bad("stacked matrices of different widths");
    N += p.rows;
  }
  if (x_in.dim() < 1 || x_in.size(-1) != K)
    qd::bad("an input of width " + std::to_string(x_in.dim() ? x_in.size(-1) : 0) + " for a matrix of width " +
        std::to_string(K));
  at::Tensor x = x_in.to(at::kFloat).contiguous().view({-1, K});
  const int64_t M = x.size(0);
  at::Tensor y = at::empty({M, N}, at::TensorOptions().dtype(at::kFloat));
  if (M > 0) qweight_linear_into(parts, x.data_ptr<float>(), M, y.data_ptr<float>());
  std::vector<int64_t> shape = x_in.sizes().vec();
  shape.back() = N;
  return y.view(shape);
}

const char *qweight_isa() { return qk::isa_name(qk::isa_active()); }
int64_t qweight_prefill_rows() { return qd::prefill_rows(); }
int64_t qweight_prefetch() { return qd::g_prefetch.load(std::memory_order_relaxed); }
void qweight_set_prefetch(int64_t bytes) { qd::g_prefetch.store(std::max<int64_t>(0, bytes)); }
void qweight_set_prefill_rows(int64_t rows) { qd::g_prefill_rows.store(std::max<int64_t>(0, rows)); }

}  // namespace lm
}  // namespace ctorch
