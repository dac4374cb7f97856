// What this x86 CPU and its OS run, read once from CPUID (and XGETBV for
// the registers the OS saves): the choices the optimiser makes per CPU.
// All false on other architectures.
#pragma once

namespace ctorch {
namespace infer {

struct CpuFeatures {
  bool x86 = false;
  bool intel = false;        // "GenuineIntel": MKL takes its tuned paths only here
  bool avx512_bf16 = false;  // VDPBF16PS with the ZMM state saved by the OS
  bool amx_bf16 = false;     // AMX tiles (TDPBF16PS) with the tile state saved by the OS
  bool amx_int8 = false;     // AMX tiles (TDPBUSD and its signed kin), likewise
  bool avx512_vnni = false;  // VPDPBUSD on ZMM
  bool avx_vnni = false;     // VPDPBUSD on YMM (Alder Lake and later)
};

const CpuFeatures &cpu_features();

// "avx512_bf16 amx_bf16 amx_int8 avx512_vnni avx_vnni" as this CPU has them ("" for none).
const char *cpu_feature_names();

}  // namespace infer
}  // namespace ctorch
