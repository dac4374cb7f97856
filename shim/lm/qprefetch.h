// Software prefetch for lm/'s kernels over packed rows (qkernels_x86.cpp,
// qkernels_int8.cpp). x86 only: include after lm/x86.h, inside
// CTORCH_LM_X86.
#pragma once

#include <algorithm>
#include <cstdint>

#include "lm/qkernels.h"
#include "lm/x86.h"

#ifdef CTORCH_LM_X86
namespace ctorch {
namespace lm {
namespace qk {

// Software prefetch. Decode reads each weight once, from memory: the
// hardware prefetchers alone leave a kernel at about 60% of the machine's
// read bandwidth (the loops' arithmetic keeps too few loads in flight), so
// the kernels ask for the packed data w.prefetch bytes ahead of the block
// of R rows they multiply, a line for every line they consume, and for the
// scales and offsets of the rows that data belongs to.
struct Ahead {
  const char *at, *end;
};

template <int R>
__attribute__((always_inline)) inline Ahead ahead_of(const View &w, int64_t r) {
  const char *base = reinterpret_cast<const char *>(w.data);
  Ahead a{base + (r + R) * w.row_bytes + w.prefetch, base + w.rows * w.row_bytes};
  if (w.prefetch) {  // the scales and offsets of the rows at a.at
    const int64_t from = r + R + w.prefetch / w.row_bytes, to = std::min(w.rows, from + R);
    const int64_t size = w.half ? 2 : 4;
    const void *tables[2] = {w.half ? static_cast<const void *>(w.scale16) : w.scale,
                             w.half ? static_cast<const void *>(w.offset16) : w.offset};
    for (const void *t : tables) {
      if (!t || from >= to) continue;
      const char *b = static_cast<const char *>(t);
      for (const char *p = b + from * w.scale_stride * size, *e = b + to * w.scale_stride * size; p < e; p += 64)
        _mm_prefetch(p, _MM_HINT_T0);
    }
  }
  return a;
}

// The lines of [off, off + bytes) past a.at (bytes: what one iteration of a
// kernel's loop consumes of the block's data).
__attribute__((always_inline)) inline void prefetch(const Ahead &a, int64_t off, int64_t bytes) {
  for (int64_t k = 0; k < bytes; k += 64)
    if (a.at + off + k < a.end) _mm_prefetch(a.at + off + k, _MM_HINT_T0);
}

}  // namespace qk
}  // namespace lm
}  // namespace ctorch
#endif
