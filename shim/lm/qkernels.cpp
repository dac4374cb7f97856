// The portable kernels over packed quantised rows (qkernels.h's layouts),
// the unpacking of rows into float32, and the run-time choice of the
// instruction set: AVX-512 where the CPU has it, else AVX2 with FMA, else
// these scalar loops; CTORCH_LM_KERNELS=scalar|avx2|avx512 picks one (for
// measuring, and so the scalar path is tested on every machine).
#include "lm/qkernels.h"

#include <c10/util/Half.h>
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

namespace ctorch {
namespace lm {
namespace qk {
namespace {

inline float scale_at(const View &w, int64_t i) {
  return w.half ? c10::detail::fp16_ieee_to_fp32_value(w.scale16[i]) : w.scale[i];
}
inline float offset_at(const View &w, int64_t i) {
  if (w.sym) return -8.f * scale_at(w, i);
  return w.half ? c10::detail::fp16_ieee_to_fp32_value(w.offset16[i]) : w.offset[i];
}

// Where group g of row r has its scale (and offset).
inline int64_t scale_index(const View &w, int64_t r, int64_t g) {
  return w.tiled ? tiled_scale_at(r, g, w.ngroups) : r * w.scale_stride + g;
}

// Group g of row r's n bytes (Q8: 32, Q4: 16) in the row-major order:
// in place, or gathered from a tiled matrix's vectors into tmp.
inline const uint8_t *group_bytes(const View &w, int64_t r, int64_t g, int64_t n, uint8_t *tmp) {
  if (!w.tiled) return w.data + r * w.row_bytes + g * n;
  const uint8_t *b = w.data + tiled_bytes_at(r, g, w.ngroups, n);
  for (int64_t c = 0; c < n / 4; ++c) std::memcpy(tmp + 4 * c, b + 64 * c, 4);
  return tmp;
}

// Group g of a Q8 row as float32: scale * q (exactly the product GGUF's
// dequantisation forms).
inline void unpack_q8(const View &w, int64_t r, int64_t g, float *out) {
  uint8_t tmp[32];
  const int8_t *q = reinterpret_cast<const int8_t *>(group_bytes(w, r, g, w.group, tmp));
  const float s = scale_at(w, scale_index(w, r, g));
  for (int64_t j = 0; j < w.group; ++j) out[j] = s * static_cast<float>(q[j]);
}

// Group g of a Q4 row: scale * q + offset, two roundings as GGUF's
// dequantisation (fp-contract is off in this file: no fused multiply-add).
inline void unpack_q4(const View &w, int64_t r, int64_t g, float *out) {
  uint8_t tmp[16];
  const uint8_t *p = group_bytes(w, r, g, 16, tmp);
  const float s = scale_at(w, scale_index(w, r, g)), o = offset_at(w, scale_index(w, r, g));
  for (int j = 0; j < 16; ++j) {
    out[j] = s * static_cast<float>(p[j] & 0x0F) + o;
    out[j + 16] = s * static_cast<float>(p[j] >> 4) + o;
  }
}

// Group g of a row of Q6 tiles: d * sc (float32, as GGUF's dequantisation
// forms it) times q = u - 32, u's 6 bits gathered from the tile's vectors.
inline void unpack_q6(const View &w, int64_t r, int64_t g, float *out) {
  const int64_t l = r % kTile, nsup = w.ngroups / 16;
  const uint8_t *b = w.data + ((r / kTile) * w.ngroups + g) * kTile * 12 + 4 * l;
  const float d = c10::detail::fp16_ieee_to_fp32_value(w.super16[((r / kTile) * nsup + g / 16) * kTile + l]);
  const float s = d * static_cast<float>(w.scale8[tiled_scale_at(r, g, w.ngroups)]);
  int u[16] = {};
  for (int v = 0; v < 3; ++v)
    for (int i = 0; i < 4; ++i) {
      const int byte = b[64 * v + i];
      u[4 * v + i] = byte & 0x3F;
      u[12 + i] |= (byte >> 6) << (2 * v);
    }
  for (int j = 0; j < 16; ++j) out[j] = s * static_cast<float>(u[j] - 32);
}

// Group g of a BF16 row: each value's bits are a float32's upper half.
inline void unpack_bf16(const View &w, int64_t r, int64_t g, float *out) {
  const uint8_t *p = w.data + r * w.row_bytes + g * w.group * 2;
  for (int64_t j = 0; j < w.group; ++j) {
    uint16_t h;
    std::memcpy(&h, p + 2 * j, 2);
    const uint32_t bits = uint32_t(h) << 16;
    std::memcpy(out + j, &bits, 4);
  }
}

inline void unpack(const View &w, int64_t r, int64_t g, float *out) {
  if (w.fmt == kQ8) unpack_q8(w, r, g, out);
  else if (w.fmt == kQ4) unpack_q4(w, r, g, out);
  else if (w.fmt == kQ6) unpack_q6(w, r, g, out);
  else if (w.fmt == kBF16) unpack_bf16(w, r, g, out);
  else std::memcpy(out, w.data + r * w.row_bytes + g * w.group * 4, size_t(w.group) * 4);
}

// One weight row at a time: its groups unpacked into a small buffer, each
// used for all M rows of x (kept in per-row sums).
void scalar(const View &w, int64_t r0, int64_t r1, const float *x, int64_t M, int64_t ldx, float *y, int64_t ldy) {
  float buf[32];
  float acc[kMaxRows];
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t m = 0; m < M; ++m) acc[m] = 0.f;
    for (int64_t g = 0; g < w.ngroups; ++g) {
      unpack(w, r, g, buf);
      const int64_t k0 = g * w.group;
      for (int64_t m = 0; m < M; ++m) {
        const float *xm = x + m * ldx + k0;
        float s = 0.f;
        for (int64_t j = 0; j < w.group; ++j) s += buf[j] * xm[j];
        acc[m] += s;
      }
    }
    for (int64_t m = 0; m < M; ++m) y[m * ldy + r] = acc[m];
  }
}

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
// F16C (the half scales' widening) from CPUID: Clang's
// __builtin_cpu_supports does not know the name.
// Read once: a virtual machine's hypervisor may take microseconds to answer
// CPUID, and the products ask on every call.
bool has_f16c() {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
  }();
  return yes;
}
#endif

Isa best() {
  if (isa_supported(Isa::avx512)) return Isa::avx512;
  if (isa_supported(Isa::avx2)) return Isa::avx2;
  return Isa::scalar;
}

Isa from_env() {
  const char *e = std::getenv("CTORCH_LM_KERNELS");
  Isa want = best();
  if (e && !std::strcmp(e, "scalar")) want = Isa::scalar;
  else if (e && !std::strcmp(e, "avx2")) want = Isa::avx2;
  else if (e && !std::strcmp(e, "avx512")) want = Isa::avx512;
  return isa_supported(want) ? want : best();
}

// -1: not chosen yet.
std::atomic<int> g_isa{-1};

}  // namespace

const char *isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    default: return "scalar";
  }
}

bool isa_supported(Isa isa) {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    case Isa::avx512: return __builtin_cpu_supports("avx512f") && has_f16c();
  }
  return false;
#else
  return isa == Isa::scalar;
#endif
}

Isa isa_active() {
  int v = g_isa.load(std::memory_order_relaxed);
  if (v < 0) {
    v = static_cast<int>(from_env());
    g_isa.store(v, std::memory_order_relaxed);
  }
  return static_cast<Isa>(v);
}

bool isa_force(Isa isa) {
  if (!isa_supported(isa)) return false;
  g_isa.store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

Kernel scalar_kernel(int) { return scalar; }

Kernel kernel(Isa isa, int fmt, bool half) {
  Kernel k = nullptr;
  if (isa == Isa::avx512) k = avx512_kernel(fmt, half);
  else if (isa == Isa::avx2) k = avx2_kernel(fmt, half);
  return k ? k : scalar_kernel(fmt);
}

bool int8_available() { return isa_active() == Isa::avx512 && int8_supported(); }

void dequant_rows(const View &w, int64_t r0, int64_t r1, float *out) {
  // (a tiled matrix's rows are unpacked one group at a time: for lookups
  // and checks; its products run the int8 kernels)
  if (isa_active() == Isa::avx512 && (w.fmt == kQ8 || w.fmt == kQ4) && !w.tiled)
    if (Dequant d = avx512_dequant()) return d(w, r0, r1, out);
  for (int64_t r = r0; r < r1; ++r, out += w.cols)
    for (int64_t g = 0; g < w.ngroups; ++g) unpack(w, r, g, out + g * w.group);
}

}  // namespace qk
}  // namespace lm
}  // namespace ctorch

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
