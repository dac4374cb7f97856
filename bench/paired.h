// The C-vs-C++ per-call benchmarks (bench_ops.cpp on the CPU, gpu_ops.cpp on
// a CUDA device): the same op through ctorch (ops_c.c) and through the
// libtorch C++ API in one binary, round by round, each round running the two
// sides back to back in alternating order, so drift (frequency, a neighbour's
// load) hits both alike and cancels out of the per-round ratio.
// Output: one JSON object, "<prefix>_<case>_{ctorch,cpp,paired_ratio}":
// {"median", "min", "max"} (ns per op; the ratio is ctorch/C++).
#ifndef CTORCH_BENCH_PAIRED_H
#define CTORCH_BENCH_PAIRED_H

#include <ATen/core/Tensor.h>
#include <ATen/DLConvertor.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench.h"
#include "ctorch.h"

// The C++ side of a case: the loop of ops_c.c calling at:: directly, timed
// like it. Tensors come in as at::Tensor pointers (b may be null: then a).
#define BENCH_CPP_LOOP(NAME, EXPR)                                 \
  double NAME(void *pa, void *pb, long iters) {                    \
    const at::Tensor &a = *static_cast<at::Tensor *>(pa);          \
    const at::Tensor &b = pb ? *static_cast<at::Tensor *>(pb) : a; \
    (void)b;                                                       \
    double t0 = bench_now();                                       \
    for (long i = 0; i < iters; ++i) {                             \
      at::Tensor r = (EXPR);                                       \
    }                                                              \
    return (bench_now() - t0) * 1e9 / double(iters);               \
  }

namespace ctorch_bench {

// A handle that shares the tensor (no copy), so both sides get the same data.
// A ctorch handle to t's memory (same sizes, strides, dtype, device; its
// requires_grad and grad copied). Made through ctorch_from_dlpack: ctorch
// checks every tensor handle against its registry, so a TensorImpl pointer
// cast to a handle is refused.
inline ctorch_tensor handle_of(const at::Tensor &t) {
  ctorch_tensor h = nullptr;
  if (ctorch_from_dlpack(&h, at::toDLPack(t.detach())) != CTORCH_OK) bench_die("handle_of", ctorch_last_error());
  if (t.requires_grad() && ctorch_tensor_set_requires_grad(h, 1) != CTORCH_OK)
    bench_die("handle_of", ctorch_last_error());
  if (t.grad().defined()) {
    ctorch_tensor g = handle_of(t.grad());
    if (ctorch_tensor_set_grad(h, g) != CTORCH_OK) bench_die("handle_of", ctorch_last_error());
    ctorch_tensor_free(g);
  }
  return h;
}

struct Case {
  const char *name;
  bench_fn c_fn;  // ctorch handles x, y
  void *x, *y;
  long n;          // calls per timed loop
  bench_fn cpp_fn;  // at::Tensor pointers cx, cy
  void *cx, *cy;
};

struct Stats {
  double median, min, max;
};

inline Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

// One untimed warm-up of every case (a tenth of its calls), then `rounds`
// rounds; `time(fn, x, y, n)` runs one loop and returns ns per call. Prints
// the JSON object.
template <class Time>
void run_paired(const char *prefix, const std::vector<Case> &cases, long iters, int rounds, Time time) {
  std::vector<std::vector<double>> c_ns(cases.size()), cpp_ns(cases.size());
  for (const Case &c : cases) {
    time(c.c_fn, c.x, c.y, c.n / 10 + 1);
    time(c.cpp_fn, c.cx, c.cy, c.n / 10 + 1);
  }
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case &c = cases[k];
      // Alternate which side goes first so neither always runs warmer.
      if (r % 2) {
        c_ns[k].push_back(time(c.c_fn, c.x, c.y, c.n));
        cpp_ns[k].push_back(time(c.cpp_fn, c.cx, c.cy, c.n));
      } else {
        cpp_ns[k].push_back(time(c.cpp_fn, c.cx, c.cy, c.n));
        c_ns[k].push_back(time(c.c_fn, c.x, c.y, c.n));
      }
    }
  std::printf("{\n  \"iters\": %ld,\n  \"rounds\": %d", iters, rounds);
  for (size_t k = 0; k < cases.size(); ++k) {
    std::vector<double> paired;
    for (int r = 0; r < rounds; ++r) paired.push_back(c_ns[k][r] / cpp_ns[k][r]);
    const std::pair<const char *, Stats> rows[] = {
        {"ctorch", stats(c_ns[k])}, {"cpp", stats(cpp_ns[k])}, {"paired_ratio", stats(paired)}};
    for (const auto &row : rows)
      std::printf(",\n  \"%s_%s_%s\": {\"median\": %.4f, \"min\": %.4f, \"max\": %.4f}", prefix, cases[k].name,
                  row.first, row.second.median, row.second.min, row.second.max);
  }
  std::printf("\n}\n");
}

}  // namespace ctorch_bench

#endif
