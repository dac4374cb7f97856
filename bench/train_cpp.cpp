// Training throughput through the libtorch C++ API: the reference ctorch is
// measured against. Two regimes, same definitions as train_python.py and
// train_ctorch.c:
//   lenet: LeNet-5 step (forward, cross-entropy, backward, AdamW), batch 256,
//          fixed random inputs, 2 intra-op threads -> images/s
//   tiny:  MLP 4-64-2 tanh, MSE, SGD lr 0.01, batch 1, 1 thread -> steps/s
// Usage: train_cpp lenet|tiny STEPS [THREADS [none]]  (intra-op threads; default 2 for lenet, 1 for tiny;
//        none: set the gradients to None each step instead of zeroing them; torch >= 2)
// Prints two rates: over the whole timed run, and at the median step.
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "lenet_cpp.h"

namespace {

// Gradients are zeroed, not set to None, in all three programs: the default of
// libtorch 1.13 (its zero_grad() has no argument), spelled out for 2.x; on 2.x
// "none" sets them to None (bench/peers/run compares both).
bool set_to_none = false;
void zero_grad(torch::optim::Optimizer &opt) {
#if TORCH_VERSION_MAJOR >= 2
  opt.zero_grad(set_to_none);
#else
  opt.zero_grad();
#endif
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Times `steps` calls of step after `warm` untimed ones; prints per * rate
// over the whole run and at the median step (robust to a noisy neighbour).
template <class F>
void timed(F step, int warm, long steps, double per) {
  for (int i = 0; i < warm; ++i) step();
  std::vector<double> dt(steps);
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < steps; ++i) {
    auto ts = std::chrono::steady_clock::now();
    step();
    dt[i] = seconds_since(ts);
  }
  double total = seconds_since(t0);
  std::nth_element(dt.begin(), dt.begin() + steps / 2, dt.end());
  double med = dt[steps / 2];
  if (steps % 2 == 0) med = 0.5 * (med + *std::max_element(dt.begin(), dt.begin() + steps / 2));
  std::printf("%.3f %.3f\n", per * steps / total, per / med);
}

void lenet(long steps, int threads) {
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  LeNet net;
  torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(1e-3));
  auto x = torch::randn({256, 1, 28, 28});
  auto y = torch::randint(0, 10, {256});
  auto step = [&] {
    zero_grad(opt);
    auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    opt.step();
  };
  timed(step, 5, steps, 256.0);
}

void tiny(long steps, int threads) {
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  torch::nn::Linear l1(4, 64), l2(64, 2);
  std::vector<torch::Tensor> params = l1->parameters();
  for (auto &p : l2->parameters()) params.push_back(p);
  torch::optim::SGD opt(params, torch::optim::SGDOptions(0.01));
  auto x = torch::randn({1, 4});
  auto y = torch::randn({1, 2});
  auto step = [&] {
    zero_grad(opt);
    auto loss = torch::mse_loss(l2->forward(torch::tanh(l1->forward(x))), y);
    loss.backward();
    opt.step();
  };
  timed(step, 200, steps, 1.0);
}

}  // namespace

int main(int argc, char **argv) {
  set_to_none = argc == 5 && std::strcmp(argv[4], "none") == 0;
  if (argc < 3 || argc > 5 || (argc == 5 && !set_to_none) || (set_to_none && TORCH_VERSION_MAJOR < 2)) {
    std::fprintf(stderr, "usage: train_cpp lenet|tiny STEPS [THREADS [none]] (none: torch >= 2)\n");
    return 2;
  }
  long steps = std::atol(argv[2]);
  if (steps < 1) {
    std::fprintf(stderr, "train_cpp: STEPS must be at least 1\n");
    return 2;
  }
  bool is_lenet = std::strcmp(argv[1], "lenet") == 0;
  int threads = argc >= 4 ? std::atoi(argv[3]) : is_lenet ? 2 : 1;
  if (threads < 1) {
    std::fprintf(stderr, "train_cpp: THREADS must be at least 1\n");
    return 2;
  }
  if (is_lenet) lenet(steps, threads);
  else tiny(steps, threads);
  return 0;
}
