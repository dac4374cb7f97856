// CPUID and XGETBV read once (cpu.h). Direct reads rather than
// __builtin_cpu_supports: GCC and clang know different feature names
// (amx-bf16 among them), and the AMX state bits are not among them.
#include "infer/cpu.h"

#include <cstdint>
#include <string>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ctorch {
namespace infer {

namespace {

CpuFeatures read_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  f.x86 = true;
  f.intel = b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;
  unsigned max_leaf = a;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return f;  // OSXSAVE: XGETBV is there
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  uint64_t xcr0 = (uint64_t(hi) << 32) | lo;
  bool ymm = (xcr0 & 0x6) == 0x6, zmm = ymm && (xcr0 & 0xe0) == 0xe0, tiles = (xcr0 & 0x60000) == 0x60000;
  if (max_leaf < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  unsigned max_sub = a;
  bool avx512f = zmm && (b & (1u << 16));
  f.avx512_vnni = avx512f && (c & (1u << 11));
  f.amx_bf16 = tiles && (d & (1u << 22));
  f.amx_int8 = tiles && (d & (1u << 25));
  if (max_sub < 1) return f;
  unsigned sub1 = 0;
  __cpuid_count(7, 1, sub1, b, c, d);
  f.avx512_bf16 = avx512f && (sub1 & (1u << 5));
  f.avx_vnni = ymm && (sub1 & (1u << 4));
#endif
  return f;
}

}  // namespace

const CpuFeatures &cpu_features() {
  static const CpuFeatures f = read_features();
  return f;
}

const char *cpu_feature_names() {
  static const std::string names = [] {
    const CpuFeatures &f = cpu_features();
    std::string s;
    auto add = [&](bool on, const char *n) {
      if (on) s += (s.empty() ? "" : " ") + std::string(n);
    };
    add(f.avx512_bf16, "avx512_bf16");
    add(f.amx_bf16, "amx_bf16");
    add(f.amx_int8, "amx_int8");
    add(f.avx512_vnni, "avx512_vnni");
    add(f.avx_vnni, "avx_vnni");
    return s;
  }();
  return names.c_str();
}

}  // namespace infer
}  // namespace ctorch
