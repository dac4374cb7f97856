// The C++ and ctorch-from-C sides of bench/peers/run's per-call rows: add,
// mul, relu and matmul on 1-element and 64x64 float tensors, through ctorch
// (bench/ops_c.c's loops) and through at:: directly, paired round by round in
// one process as bench_ops.cpp does (bench/paired.h). tch/src/main.rs and
// ops.py run the same cases (same names, tensors and calls per loop).
// Usage: peers_ops ITERS ROUNDS; prints paired.h's JSON ("op_<case>_ctorch",
// "op_<case>_cpp", "op_<case>_paired_ratio"; ns per call).
#include <ATen/Parallel.h>
#include <ATen/ops/add.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/relu.h>

#include <cstdlib>
#include <vector>

#include "paired.h"

namespace {

BENCH_CPP_LOOP(cpp_add, at::add(a, b, 1))
BENCH_CPP_LOOP(cpp_mul, at::mul(a, b))
BENCH_CPP_LOOP(cpp_relu, at::relu(a))
BENCH_CPP_LOOP(cpp_matmul, at::matmul(a, b))

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3 || std::atol(argv[1]) < 20 || std::atoi(argv[2]) < 1) {
    std::fprintf(stderr, "usage: peers_ops ITERS ROUNDS (ITERS >= 20, ROUNDS >= 1)\n");
    return 2;
  }
  const long iters = std::atol(argv[1]);
  const int rounds = std::atoi(argv[2]);
  at::set_num_threads(1);

  at::Tensor a = at::ones({1}), b = at::ones({1}), m = at::ones({1, 1}), n = at::ones({1, 1});
  at::Tensor s = at::ones({64, 64}), t = at::ones({64, 64});
  using ctorch_bench::handle_of;
  ctorch_tensor ha = handle_of(a), hb = handle_of(b), hm = handle_of(m), hn = handle_of(n), hs = handle_of(s),
                ht = handle_of(t);
  std::vector<ctorch_bench::Case> cases = {
      {"add_1", bench_c_add, ha, hb, iters, cpp_add, &a, &b},
      {"mul_1", bench_c_mul, ha, hb, iters, cpp_mul, &a, &b},
      {"relu_1", bench_c_relu, ha, nullptr, iters, cpp_relu, &a, nullptr},
      {"matmul_1", bench_c_matmul, hm, hn, iters, cpp_matmul, &m, &n},
      {"add_64x64", bench_c_add, hs, ht, iters / 2, cpp_add, &s, &t},
      {"mul_64x64", bench_c_mul, hs, ht, iters / 2, cpp_mul, &s, &t},
      {"relu_64x64", bench_c_relu, hs, nullptr, iters / 2, cpp_relu, &s, nullptr},
      {"matmul_64x64", bench_c_matmul, hs, ht, iters / 20, cpp_matmul, &s, &t},
  };
  auto time = [](bench_fn fn, void *x, void *y, long k) { return fn(x, y, k); };
  ctorch_bench::run_paired("op", cases, iters, rounds, time);
  for (ctorch_tensor h : {ha, hb, hm, hn, hs, ht}) ctorch_tensor_free(h);
  return 0;
}
