// For lm/'s files with x86 vector variants (qkernels_x86.cpp, attend.cpp):
// the intrinsics and CTORCH_LM_X86 where this is x86 with GCC or Clang, and
// a pair of macros around their code. Each variant carries its instruction
// set in a target attribute, so these files build with the compiler's
// default flags and a variant runs only where qkernels.cpp's check of the
// CPU chose it.
#pragma once

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define CTORCH_LM_X86 1
#endif

// The kernels' loops over a template's fixed counts (rows, accumulators)
// unrolled, so that the accumulator arrays live in registers: GCC at -O2
// keeps them in memory otherwise.
#define CTORCH_UNROLL _Pragma("GCC unroll 16")

// GCC 12's AVX-512 intrinsics start from a self-initialised "undefined"
// register (`__m512 __Y = __Y;`), which -Wmaybe-uninitialized reports at
// every inlined use: a false report, silenced between these two.
#if defined(__GNUC__) && !defined(__clang__)
#define CTORCH_LM_VECTOR_BEGIN _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define CTORCH_LM_VECTOR_END _Pragma("GCC diagnostic pop")
#else
#define CTORCH_LM_VECTOR_BEGIN
#define CTORCH_LM_VECTOR_END
#endif
