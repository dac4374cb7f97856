// Optimizer step time on the CPU: ctorch's foreach step,
// ctorch's one-at-a-time (for-loop) step and libtorch's C++ torch::optim, in
// one process, round by round in rotating order (so a slow spell of the
// shared machine hits all three alike), for two parameter sets:
//   many   200 tensors of 16x16 (a model of many small parameters)
//   lenet  LeNet-5's 10 parameters (6x1x5x5 ... 10x84; 61,706 elements)
// and two optimizers (Adam, SGD with momentum 0.9). Gradients are fixed
// random tensors set once; a timed loop runs `steps` steps. One intra-op
// thread. bench/optim_step.py measures Python's foreach and for-loop on the
// same shapes; bench/run puts them side by side.
// Usage: optim_step [--quick] (OPTIM_STEP_ONLY=many_sgd: that case only). Prints one JSON object:
//   "<set>_<opt>_<side>_us": {"median","min","max"} (us per step) and
//   "<set>_<opt>_foreach_over_forloop" / "_foreach_over_cpp": the median of
//   the per-round ratios.
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "paired.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench.h"
#include "ctorch.h"

namespace {

std::vector<std::vector<int64_t>> shapes_of(const std::string &set) {
  if (set == "many") return std::vector<std::vector<int64_t>>(200, {16, 16});
  return {{6, 1, 5, 5}, {6}, {16, 6, 5, 5}, {16}, {120, 256}, {120}, {84, 120}, {84}, {10, 84}, {10}};
}

void check(ctorch_status st, const char *what) {
  if (st != CTORCH_OK) bench_die(what, ctorch_last_error());
}

using ctorch_bench::handle_of;  // paired.h: through DLPack (a cast pointer is refused)

// Parameters with fixed grads (fresh copies per side: each side's own state).
std::vector<at::Tensor> make_params(const std::vector<std::vector<int64_t>> &shapes) {
  at::manual_seed(0);
  std::vector<at::Tensor> ps;
  for (auto &s : shapes) {
    at::Tensor p = at::randn(s).set_requires_grad(true);
    p.mutable_grad() = at::randn(s);
    ps.push_back(p);
  }
  return ps;
}

struct Side {
  std::string name;
  std::function<void()> step;
};

struct Stats {
  double median, min, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

}  // namespace

int main(int argc, char **argv) {
  const bool quick = argc > 1 && !strcmp(argv[1], "--quick");
  const int rounds = quick ? 1 : 15;
  at::set_num_threads(1);
  at::NoGradGuard no_grad;
  std::printf("{");
  bool first_key = true;
  for (std::string set : {"many", "lenet"})
    for (std::string opt : {"adam", "sgd"}) {
      const char *only = std::getenv("OPTIM_STEP_ONLY");  // e.g. "many_sgd", for profiling one case
      if (only && set + "_" + opt != only) continue;
      auto shapes = shapes_of(set);
      const int steps = quick ? 2 : (set == "many" ? 200 : 300);
      // ctorch, foreach and for-loop: two optimizers over two copies.
      std::vector<std::shared_ptr<void>> keep;
      auto make_ctorch = [&](ctorch_optim_impl impl) {
        auto ps = make_params(shapes);
        std::vector<ctorch_tensor> hs;
        for (auto &p : ps) hs.push_back(handle_of(p));
        ctorch_optim_options o;
        ctorch_optimizer_kind kind = opt == "adam" ? CTORCH_OPTIM_ADAM : CTORCH_OPTIM_SGD;
        check(ctorch_optim_options_default(&o, kind), "options");
        if (opt == "sgd") o.momentum = 0.9;
        ctorch_optimizer h = nullptr;
        check(ctorch_optimizer_new(&h, kind, hs.data(), hs.size(), &o), "ctorch_optimizer_new");
        check(ctorch_optimizer_set_implementation(h, impl), "set_implementation");
        for (auto t : hs) ctorch_tensor_free(t);
        keep.push_back(std::shared_ptr<void>(h, [](void *x) { ctorch_optimizer_free((ctorch_optimizer)x); }));
        return [h] { check(ctorch_optimizer_step(h), "ctorch_optimizer_step"); };
      };
      std::vector<Side> sides;
      sides.push_back({"foreach", make_ctorch(CTORCH_OPTIM_IMPL_FOREACH)});
      sides.push_back({"forloop", make_ctorch(CTORCH_OPTIM_IMPL_FOR_LOOP)});
      std::shared_ptr<torch::optim::Optimizer> cpp;
      if (opt == "adam") cpp = std::make_shared<torch::optim::Adam>(make_params(shapes), torch::optim::AdamOptions(1e-3));
      else cpp = std::make_shared<torch::optim::SGD>(make_params(shapes), torch::optim::SGDOptions(1e-2).momentum(0.9));
      sides.push_back({"cpp", [cpp] { cpp->step(); }});
      std::vector<std::vector<double>> us(sides.size());
      std::vector<double> r_loop, r_cpp;
      for (auto &s : sides) s.step();  // warm-up (and the state)
      for (int r = 0; r < rounds; ++r) {
        std::vector<double> t(sides.size());
        for (size_t k = 0; k < sides.size(); ++k) {
          size_t i = (k + r) % sides.size();  // rotate who goes first
          double t0 = bench_now();
          for (int s = 0; s < steps; ++s) sides[i].step();
          t[i] = (bench_now() - t0) * 1e6 / steps;
          us[i].push_back(t[i]);
        }
        r_loop.push_back(t[0] / t[1]);
        r_cpp.push_back(t[0] / t[2]);
      }
      std::string prefix = set + "_" + opt;
      for (size_t i = 0; i < sides.size(); ++i) {
        Stats st = stats(us[i]);
        std::printf("%s\"%s_%s_us\": {\"median\": %.3f, \"min\": %.3f, \"max\": %.3f}", first_key ? "" : ", ",
                    prefix.c_str(), sides[i].name.c_str(), st.median, st.min, st.max);
        first_key = false;
      }
      std::printf(", \"%s_foreach_over_forloop\": %.4f, \"%s_foreach_over_cpp\": %.4f", prefix.c_str(),
                  stats(r_loop).median, prefix.c_str(), stats(r_cpp).median);
    }
  std::printf(", \"rounds\": %d, \"tensors\": {\"many\": 200, \"lenet\": 10}}\n", rounds);
  return 0;
}
