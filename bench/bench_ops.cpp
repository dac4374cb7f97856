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
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "paired.h"

namespace {

BENCH_CPP_LOOP(cpp_add, at::add(a, b, 1))
BENCH_CPP_LOOP(cpp_mul, at::mul(a, b))
BENCH_CPP_LOOP(cpp_relu, at::relu(a))
BENCH_CPP_LOOP(cpp_transpose, at::transpose(a, 0, 1))
BENCH_CPP_LOOP(cpp_matmul, at::matmul(a, b))
BENCH_CPP_LOOP(cpp_dlpack, at::fromDLPack(at::toDLPack(a)))

// In place: no result to keep (the C loop makes no handle either).
double cpp_add_inplace(void *pa, void *pb, long iters) {
  const at::Tensor &a = *static_cast<at::Tensor *>(pa);
  const at::Tensor &b = *static_cast<at::Tensor *>(pb);
  double t0 = bench_now();
  for (long i = 0; i < iters; ++i) a.add_(b, 1);
  return (bench_now() - t0) * 1e9 / double(iters);
}

}  // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const long iters = quick ? 20000 : 400000;
  const long mm_iters = quick ? 3 : 10;
  // CTORCH_BENCH_ROUNDS and CTORCH_BENCH_CASES ("add,mul": those cases only)
  // narrow a run, e.g. to re-measure the per-call ops many times quickly.
  const char *env_rounds = std::getenv("CTORCH_BENCH_ROUNDS");
  const int rounds = env_rounds ? std::atoi(env_rounds) : quick ? 3 : 15;
  at::set_num_threads(1);

  at::Tensor a = at::ones({1}), b = at::ones({1}), acc = at::ones({1});
  at::Tensor a2 = at::ones({1, 1});
  at::Tensor ma = at::ones({1024, 1024}), mb = at::ones({1024, 1024});
  at::Tensor big = at::ones({64 * 1024 * 1024});  // 256 MiB of float32
  using ctorch_bench::handle_of;
  ctorch_tensor ha = handle_of(a), hb = handle_of(b), hacc = handle_of(acc), ha2 = handle_of(a2), hma = handle_of(ma), hmb = handle_of(mb),
                hbig = handle_of(big);

  std::vector<ctorch_bench::Case> cases = {
      {"add", bench_c_add, ha, hb, iters, cpp_add, &a, &b},
      {"add_", bench_c_add_inplace, hacc, hb, iters, cpp_add_inplace, &acc, &b},
      // The same add with a handle scope open (freed at once; freed by leave).
      {"add_in_scope", bench_c_add_in_scope, ha, hb, iters, cpp_add, &a, &b},
      {"add_scope_leave", bench_c_add_scope_leave, ha, hb, iters, cpp_add, &a, &b},
      {"mul", bench_c_mul, ha, hb, iters, cpp_mul, &a, &b},
      {"relu", bench_c_relu, ha, nullptr, iters, cpp_relu, &a, nullptr},
      {"transpose", bench_c_transpose, ha2, nullptr, iters, cpp_transpose, &a2, nullptr},
      {"matmul1024", bench_c_matmul, hma, hmb, mm_iters, cpp_matmul, &ma, &mb},
      {"dlpack_small", bench_c_dlpack, ha, nullptr, iters, cpp_dlpack, &a, nullptr},
      {"dlpack_large", bench_c_dlpack, hbig, nullptr, iters, cpp_dlpack, &big, nullptr},
  };
  if (const char *only = std::getenv("CTORCH_BENCH_CASES")) {
    std::string list = std::string(",") + only + ",";
    cases.erase(std::remove_if(cases.begin(), cases.end(),
                               [&](const ctorch_bench::Case &c) {
                                 return list.find(std::string(",") + c.name + ",") == std::string::npos;
                               }),
                cases.end());
  }
  // The C loops and the C++ loops time themselves.
  auto time = [](bench_fn fn, void *x, void *y, long n) { return fn(x, y, n); };
  ctorch_bench::run_paired("op", cases, iters, rounds, time);
  for (ctorch_tensor h : {ha, hb, hacc, ha2, hma, hmb, hbig}) ctorch_tensor_free(h);
  return 0;
}
