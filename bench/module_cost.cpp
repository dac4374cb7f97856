// What the module layer costs on the LeNet-5 training step
// (forward, cross-entropy, backward, AdamW; batch 256; 2 intra-op threads),
// three ways in one process:
//   functional: ctorch from C, one call per op (examples/lenet5_model.h)
//   module:     ctorch from C, torch.nn modules (examples/lenet5_nn.h)
//   cpp:        libtorch's C++ torch::nn (bench/lenet_cpp.h)
// One process, so all three share the allocator's state and the machine's
// moment: rounds of `steps` steps per side, the order rotating each round,
// and the headline is the median of the per-round ratios (drift cancels).
// Separate processes made the C++ twin look 1.5x slow on 2.15 (bench/run):
// glibc's malloc trims and re-grows the heap every step in some
// runs and not in others (thousands of page faults per step), which is the
// process's luck, not the library's; see docs/benchmarks.md.
// Usage: module_cost [--quick | ROUNDS]. Output: one JSON object.
#include <torch/torch.h>

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "ctorch.h"
#include "lenet_cpp.h"
#include "module_cost.h"

namespace {

struct CppSide {
  LeNet net;
  torch::optim::AdamW opt;
  torch::Tensor x, y;
  CppSide()
      : net((torch::manual_seed(0), LeNet())),
        opt(net->parameters(), torch::optim::AdamWOptions(1e-3)),
        x(torch::randn({256, 1, 28, 28})),
        y(torch::randint(0, 10, {256})) {}
  double steps(long n) {
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
      for (auto &p : net->parameters())  // zeroed, not None: as the other sides
        if (p.grad().defined()) p.grad().zero_();
      auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
      loss.backward();
      opt.step();
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / double(n);
  }
};

long minor_faults() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

void print_stats(const char *key, std::vector<double> v, double scale, bool last = false) {
  std::sort(v.begin(), v.end());
  std::printf("  \"%s\": {\"median\": %.6g, \"min\": %.6g, \"max\": %.6g}%s\n", key, v[v.size() / 2] * scale,
              v.front() * scale, v.back() * scale, last ? "" : ",");
}

}  // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int rounds = quick ? 2 : argc > 1 ? std::max(1, std::atoi(argv[1])) : 41;
  const long steps = quick ? 1 : 8;
  torch::set_num_threads(2);
  if (ctorch_set_num_threads(2) != CTORCH_OK) return 1;

  mc_side *fn = mc_functional_new(), *mod = mc_module_new();
  CppSide cpp;
  enum { FN, MOD, CPP, N };
  auto run = [&](int side, long n) {
    return side == FN ? mc_steps(fn, n) : side == MOD ? mc_steps(mod, n) : cpp.steps(n);
  };
  for (int s = 0; s < N; ++s) run(s, quick ? 1 : 5);  // warm-up: allocator, kernels' first calls
  std::vector<double> t[N], faults[N], mod_fn, mod_cpp, fn_cpp;
  for (int r = 0; r < rounds; ++r) {
    double dt[N];
    for (int k = 0; k < N; ++k) {
      int s = (r + k) % N;
      long f0 = minor_faults();
      dt[s] = run(s, steps);
      faults[s].push_back(double(minor_faults() - f0) / double(steps));
      t[s].push_back(dt[s]);
    }
    mod_fn.push_back(dt[MOD] / dt[FN]);
    mod_cpp.push_back(dt[MOD] / dt[CPP]);
    fn_cpp.push_back(dt[FN] / dt[CPP]);
  }
  mc_free(fn);
  mc_free(mod);
  std::printf("{\n  \"rounds\": %d, \"steps_per_round\": %ld,\n", rounds, steps);
  print_stats("functional_ms_per_step", t[FN], 1e3);
  print_stats("module_ms_per_step", t[MOD], 1e3);
  print_stats("cpp_ms_per_step", t[CPP], 1e3);
  print_stats("functional_minor_faults_per_step", faults[FN], 1);
  print_stats("module_minor_faults_per_step", faults[MOD], 1);
  print_stats("cpp_minor_faults_per_step", faults[CPP], 1);
  print_stats("module_over_functional", mod_fn, 1);
  print_stats("functional_over_cpp", fn_cpp, 1);
  print_stats("module_over_cpp", mod_cpp, 1, true);
  std::printf("}\n");
  return 0;
}
