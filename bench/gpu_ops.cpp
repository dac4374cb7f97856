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

#include <cstring>
#include <vector>

#include "paired.h"

namespace {

void sync() {
  if (ctorch_cuda_synchronize(-1) != CTORCH_OK) bench_die("ctorch_cuda_synchronize", ctorch_last_error());
}

BENCH_CPP_LOOP(cpp_add, at::add(a, b, 1))
BENCH_CPP_LOOP(cpp_mul, at::mul(a, b))
BENCH_CPP_LOOP(cpp_relu, at::relu(a))
BENCH_CPP_LOOP(cpp_matmul, at::matmul(a, b))

// A timed loop bracketed by synchronisations, so queued kernels are counted.
double synced(bench_fn fn, void *a, void *b, long n) {
  sync();
  double t0 = bench_now();
  fn(a, b, n);
  sync();
  return (bench_now() - t0) * 1e9 / double(n);
}

}  // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  int n = 0;
  if (ctorch_cuda_device_count(&n) != CTORCH_OK || n == 0) {
    std::printf("skipped: no CUDA device\n");
    return 77;
  }
  const long iters = quick ? 2000 : 20000;  // 20,000 x 7 us: 0.14 s a round
  const int rounds = quick ? 3 : 11;
  auto cuda = at::TensorOptions().device(at::kCUDA, 0);
  at::Tensor a = at::ones({1}, cuda), b = at::ones({1}, cuda);
  at::Tensor ma = at::ones({64, 64}, cuda), mb = at::ones({64, 64}, cuda);
  using ctorch_bench::handle_of;
  ctorch_tensor ha = handle_of(a), hb = handle_of(b), hma = handle_of(ma), hmb = handle_of(mb);
  std::vector<ctorch_bench::Case> cases = {
      {"add", bench_c_add, ha, hb, iters, cpp_add, &a, &b},
      {"mul", bench_c_mul, ha, hb, iters, cpp_mul, &a, &b},
      {"relu", bench_c_relu, ha, nullptr, iters, cpp_relu, &a, nullptr},
      {"mm64", bench_c_matmul, hma, hmb, iters, cpp_matmul, &ma, &mb},
  };
  // The warm-up (a tenth of the calls) also brings up the CUDA context, the kernels and the allocator.
  ctorch_bench::run_paired("cuda", cases, iters, rounds, synced);
  for (ctorch_tensor h : {ha, hb, hma, hmb}) ctorch_tensor_free(h);
  return 0;
}
