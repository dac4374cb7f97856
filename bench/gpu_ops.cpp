// Per-call overhead on a CUDA device: the loops of ops_c.c (ctorch from C)
// and the same ops through the libtorch C++ API, on 1-element CUDA tensors
// (launch-bound: what is measured is the host cost of one op) and a 64x64
// matmul, interleaved round by round as in bench_ops.cpp. Every timed loop
// starts and ends with a device synchronisation.
// Output: one JSON object (median/min/max ns per op, paired ratios);
// without a CUDA device: "skipped: no CUDA device", exit status 77.
#include <ATen/ops/add.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/relu.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "bench.h"
#include "ctorch.h"

namespace {

void sync() {
  if (ctorch_cuda_synchronize(-1) != CTORCH_OK) bench_die("ctorch_cuda_synchronize", ctorch_last_error());
}

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
CPP_LOOP(cpp_matmul, at::matmul(a, b))

// A timed loop bracketed by synchronisations, so queued kernels are counted.
double synced(bench_fn fn, void *a, void *b, long n) {
  sync();
  double t0 = bench_now();
  fn(a, b, n);
  sync();
  return (bench_now() - t0) * 1e9 / double(n);
}

ctorch_tensor handle_of(const at::Tensor &t) {
  return reinterpret_cast<ctorch_tensor>(at::Tensor(t).unsafeReleaseTensorImpl());
}

struct Stats {
  double median, min, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

}  // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  int n = 0;
  if (ctorch_cuda_device_count(&n) != CTORCH_OK || n == 0) {
    std::printf("skipped: no CUDA device\n");
    return 77;
  }
  const long iters = quick ? 2000 : 100000;
  const int rounds = quick ? 3 : 15;
  auto cuda = at::TensorOptions().device(at::kCUDA, 0);
  at::Tensor a = at::ones({1}, cuda), b = at::ones({1}, cuda);
  at::Tensor ma = at::ones({64, 64}, cuda), mb = at::ones({64, 64}, cuda);
  ctorch_tensor ha = handle_of(a), hb = handle_of(b), hma = handle_of(ma), hmb = handle_of(mb);
  struct Case {
    const char *name;
    bench_fn c_fn;
    void *x, *y;
    bench_fn cpp_fn;
    void *cx, *cy;
  };
  std::vector<Case> cases = {
      {"add", bench_c_add, ha, hb, cpp_add, &a, &b},
      {"mul", bench_c_mul, ha, hb, cpp_mul, &a, &b},
      {"relu", bench_c_relu, ha, nullptr, cpp_relu, &a, nullptr},
      {"mm64", bench_c_matmul, hma, hmb, cpp_matmul, &ma, &mb},
  };
  std::vector<std::vector<double>> c_ns(cases.size()), cpp_ns(cases.size());
  for (auto &k : cases) {  // warm-up: CUDA context, kernels, allocator
    synced(k.c_fn, k.x, k.y, iters / 10 + 1);
    synced(k.cpp_fn, k.cx, k.cy, iters / 10 + 1);
  }
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < cases.size(); ++k) {
      auto &c = cases[k];
      if (r % 2) {
        c_ns[k].push_back(synced(c.c_fn, c.x, c.y, iters));
        cpp_ns[k].push_back(synced(c.cpp_fn, c.cx, c.cy, iters));
      } else {
        cpp_ns[k].push_back(synced(c.cpp_fn, c.cx, c.cy, iters));
        c_ns[k].push_back(synced(c.c_fn, c.x, c.y, iters));
      }
    }
  std::printf("{\n  \"iters\": %ld,\n  \"rounds\": %d", iters, rounds);
  for (size_t k = 0; k < cases.size(); ++k) {
    std::vector<double> paired;
    for (int r = 0; r < rounds; ++r) paired.push_back(c_ns[k][r] / cpp_ns[k][r]);
    for (auto &kv : {std::make_pair(std::string("ctorch"), stats(c_ns[k])), std::make_pair(std::string("cpp"), stats(cpp_ns[k])),
                     std::make_pair(std::string("paired_ratio"), stats(paired))})
      std::printf(",\n  \"cuda_%s_%s\": {\"median\": %.4f, \"min\": %.4f, \"max\": %.4f}", cases[k].name,
                  kv.first.c_str(), kv.second.median, kv.second.min, kv.second.max);
  }
  std::printf("\n}\n");
  for (ctorch_tensor h : {ha, hb, hma, hmb}) ctorch_tensor_free(h);
  return 0;
}
