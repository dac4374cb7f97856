// Per-call overhead: the same ops through ctorch from C (ops_c.c) and through
// the libtorch C++ API, in one binary, interleaved round by round so drift
// (frequency, the other core's load) hits both sides alike.
// Output: one JSON object on stdout with median/min/max ns per op.
#include <ATen/DLConvertor.h>
#include <ATen/Parallel.h>
#include <ATen/ops/add.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/transpose.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "bench.h"
#include "ctorch.h"

namespace {

// The C++ side: the same loops as ops_c.c, calling at:: directly. Tensors
// come in as at::Tensor pointers.
#define CPP_LOOP(NAME, EXPR)                                     \
  double NAME(void *pa, void *pb, long iters) {                  \
    const at::Tensor &a = *static_cast<at::Tensor *>(pa);        \
    const at::Tensor &b = pb ? *static_cast<at::Tensor *>(pb) : a; \
    (void)b;                                                     \
    double t0 = bench_now();                                     \
    for (long i = 0; i < iters; ++i) {                           \
      at::Tensor r = (EXPR);                                     \
    }                                                            \
    return (bench_now() - t0) * 1e9 / double(iters);             \
  }
CPP_LOOP(cpp_add, at::add(a, b, 1))
CPP_LOOP(cpp_mul, at::mul(a, b))
CPP_LOOP(cpp_relu, at::relu(a))
CPP_LOOP(cpp_transpose, at::transpose(a, 0, 1))
CPP_LOOP(cpp_matmul, at::matmul(a, b))
CPP_LOOP(cpp_dlpack, at::fromDLPack(at::toDLPack(a)))

struct Stats {
  double median, min, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

void emit(const char *key, const Stats &s, bool last = false) {
  std::printf("  \"%s\": {\"median\": %.4f, \"min\": %.4f, \"max\": %.4f}%s\n", key, s.median, s.min, s.max,
              last ? "" : ",");
}

// Handle <-> at::Tensor without a copy, for feeding the same tensors to both sides.
ctorch_tensor handle_of(const at::Tensor &t) {
  return reinterpret_cast<ctorch_tensor>(at::Tensor(t).unsafeReleaseTensorImpl());
}

}  // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const long iters = quick ? 20000 : 400000;
  const long mm_iters = quick ? 3 : 10;
  const int rounds = quick ? 3 : 15;
  at::set_num_threads(1);

  at::Tensor a = at::ones({1}), b = at::ones({1});
  at::Tensor a2 = at::ones({1, 1});
  at::Tensor ma = at::ones({1024, 1024}), mb = at::ones({1024, 1024});
  at::Tensor big = at::ones({64 * 1024 * 1024});  // 256 MiB of float32
  ctorch_tensor ha = handle_of(a), hb = handle_of(b), ha2 = handle_of(a2), hma = handle_of(ma), hmb = handle_of(mb), hbig = handle_of(big);

  struct Case {
    const char *name;
    bench_fn c_fn;
    void *x, *y;
    long n;
    bench_fn cpp_fn;
    void *cx, *cy;
  };
  std::vector<Case> cases = {
      {"add", bench_c_add, ha, hb, iters, cpp_add, &a, &b},
      {"mul", bench_c_mul, ha, hb, iters, cpp_mul, &a, &b},
      {"relu", bench_c_relu, ha, nullptr, iters, cpp_relu, &a, nullptr},
      {"transpose", bench_c_transpose, ha2, nullptr, iters, cpp_transpose, &a2, nullptr},
      {"matmul1024", bench_c_matmul, hma, hmb, mm_iters, cpp_matmul, &ma, &mb},
      {"dlpack_small", bench_c_dlpack, ha, nullptr, iters, cpp_dlpack, &a, nullptr},
      {"dlpack_large", bench_c_dlpack, hbig, nullptr, iters, cpp_dlpack, &big, nullptr},
  };

  std::vector<std::vector<double>> c_ns(cases.size()), cpp_ns(cases.size());
  for (size_t k = 0; k < cases.size(); ++k) {  // warm-up
    cases[k].c_fn(cases[k].x, cases[k].y, cases[k].n / 10 + 1);
    cases[k].cpp_fn(cases[k].cx, cases[k].cy, cases[k].n / 10 + 1);
  }
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < cases.size(); ++k) {
      // Alternate which side goes first so neither always runs warmer.
      if (r % 2) {
        c_ns[k].push_back(cases[k].c_fn(cases[k].x, cases[k].y, cases[k].n));
        cpp_ns[k].push_back(cases[k].cpp_fn(cases[k].cx, cases[k].cy, cases[k].n));
      } else {
        cpp_ns[k].push_back(cases[k].cpp_fn(cases[k].cx, cases[k].cy, cases[k].n));
        c_ns[k].push_back(cases[k].c_fn(cases[k].x, cases[k].y, cases[k].n));
      }
    }
  }
  std::printf("{\n  \"iters\": %ld,\n  \"rounds\": %d,\n", iters, rounds);
  for (size_t k = 0; k < cases.size(); ++k) {
    std::string n = cases[k].name;
    // ctorch/C++ within each round: the two sides ran back to back, so a slow
    // spell of the machine cancels out of the ratio.
    std::vector<double> paired;
    for (int r = 0; r < rounds; ++r) paired.push_back(c_ns[k][r] / cpp_ns[k][r]);
    emit(("op_" + n + "_ctorch").c_str(), stats(c_ns[k]));
    emit(("op_" + n + "_cpp").c_str(), stats(cpp_ns[k]));
    emit(("op_" + n + "_paired_ratio").c_str(), stats(paired), k + 1 == cases.size());
  }
  std::printf("}\n");
  for (ctorch_tensor h : {ha, hb, ha2, hma, hmb, hbig}) ctorch_tensor_free(h);
  return 0;
}
