// Training throughput on a CUDA device through the libtorch C++ API (torch::nn,
// torch::optim): the C++ reference for gpu_train.c, eager only (same models,
// options, inputs, warm-up and timing; see there).
// Usage: gpu_train_cpp lenet|resnet|resnet-cl fp32|bf16|fp16 eager adamw|sgd STEPS [WIDTH BATCH]
//        gpu_train_cpp -   (those arguments, one case per line on stdin)
// Prints images/s; without CUDA: "skipped: no CUDA device", exit 77.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#define CTORCH_COMPAT_AUTOCAST 1
#include "compat/compat.h"  // ctorch::compat::set_autocast_* (1.13 and 2.x spell them differently)
#include "lenet_cpp.h"

namespace {

torch::nn::Conv2dOptions conv(int64_t cin, int64_t cout, int64_t k, int64_t stride) {
  return torch::nn::Conv2dOptions(cin, cout, k).stride(stride).padding(k / 2).bias(false);
}

struct BlockImpl : torch::nn::Module {
  torch::nn::Conv2d c1{nullptr}, c2{nullptr}, pc{nullptr};
  torch::nn::BatchNorm2d b1{nullptr}, b2{nullptr}, pb{nullptr};
  BlockImpl(int64_t cin, int64_t cout, int64_t stride) {
    c1 = register_module("conv1", torch::nn::Conv2d(conv(cin, cout, 3, stride)));
    b1 = register_module("bn1", torch::nn::BatchNorm2d(cout));
    c2 = register_module("conv2", torch::nn::Conv2d(conv(cout, cout, 3, 1)));
    b2 = register_module("bn2", torch::nn::BatchNorm2d(cout));
    if (stride != 1 || cin != cout) {
      pc = register_module("proj_conv", torch::nn::Conv2d(conv(cin, cout, 1, stride)));
      pb = register_module("proj_bn", torch::nn::BatchNorm2d(cout));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    auto out = b2->forward(c2->forward(torch::relu(b1->forward(c1->forward(x)))));
    return torch::relu(out + (pc ? pb->forward(pc->forward(x)) : x));
  }
};
TORCH_MODULE(Block);

struct ResNetImpl : torch::nn::Module {
  torch::nn::Conv2d stem{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  Block l1{nullptr}, l2{nullptr}, l3{nullptr};
  torch::nn::Linear fc{nullptr};
  explicit ResNetImpl(int64_t w) {
    stem = register_module("stem", torch::nn::Conv2d(conv(1, w, 3, 1)));
    bn = register_module("bn", torch::nn::BatchNorm2d(w));
    l1 = register_module("layer1", Block(w, w, 1));
    l2 = register_module("layer2", Block(w, 2 * w, 2));
    l3 = register_module("layer3", Block(2 * w, 4 * w, 2));
    fc = register_module("fc", torch::nn::Linear(4 * w, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = l3->forward(l2->forward(l1->forward(torch::relu(bn->forward(stem->forward(x))))));
    return fc->forward(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }
};

// The autocast region of torch.autocast, in C++ (what ctorch's scope does).
struct Autocast {
  bool on;
  Autocast(bool enabled, at::ScalarType t) : on(enabled) {
    if (!on) return;
    ctorch::compat::set_autocast_dtype(c10::DeviceType::CUDA, t);
    ctorch::compat::set_autocast_enabled(c10::DeviceType::CUDA, true);
    at::autocast::increment_nesting();
  }
  ~Autocast() {
    if (!on) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    ctorch::compat::set_autocast_enabled(c10::DeviceType::CUDA, false);
  }
};

}  // namespace

static int run_case(int argc, char **argv) {
  if (argc != 6 && argc != 8) {
    std::fprintf(stderr, "usage: gpu_train_cpp lenet|resnet|resnet-cl fp32|bf16|fp16 eager adamw|sgd STEPS [WIDTH BATCH]\n");
    return 2;
  }
  if (!torch::cuda::is_available()) {
    std::printf("skipped: no CUDA device\n");
    return 77;
  }
  bool channels_last = !std::strcmp(argv[1], "resnet-cl");
  bool resnet = channels_last || !std::strcmp(argv[1], "resnet"), adamw = !std::strcmp(argv[4], "adamw");
  std::string prec = argv[2];
  long steps = std::atol(argv[5]);
  int64_t width = 128, batch = resnet ? 512 : 256;
  if (argc == 8) width = std::atoll(argv[6]), batch = std::atoll(argv[7]);
  if (std::strcmp(argv[3], "eager") != 0) {
    std::printf("skipped: graph capture is measured in gpu_train.c and gpu_train.py only\n");
    return 77;
  }
  torch::manual_seed(0);
  torch::Device dev(torch::kCUDA, 0);
  std::shared_ptr<torch::nn::Module> net;
  std::function<torch::Tensor(torch::Tensor)> fwd;
  if (resnet) {
    auto m = std::make_shared<ResNetImpl>(width);
    m->to(dev);
    if (channels_last)  // Module::to has no memory format: convert the 4-d weights, as Python's to() does
      for (auto &p : m->parameters())
        if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
    net = m;
    fwd = [m](torch::Tensor x) { return m->forward(x); };
  } else {
    auto m = std::make_shared<LeNetImpl>();
    m->to(dev);
    net = m;
    fwd = [m](torch::Tensor x) { return m->forward(x); };
  }
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (adamw) opt = std::make_unique<torch::optim::AdamW>(net->parameters(), torch::optim::AdamWOptions(1e-3));
  else opt = std::make_unique<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  bool amp = prec != "fp32";
  at::ScalarType dtype = prec == "fp16" ? at::kHalf : at::kBFloat16;
  double scale = 65536.0;  // fp16: a fixed loss scale (the dynamic scaler is ctorch's/Python's concern here)
  std::vector<torch::Tensor> xs, ys;
  for (int i = 0; i < 2; ++i) {
    xs.push_back(torch::randn({batch, 1, 28, 28}, dev));
    if (channels_last) xs.back() = xs.back().contiguous(at::MemoryFormat::ChannelsLast);
    ys.push_back(torch::randint(0, 10, {batch}, torch::TensorOptions().dtype(torch::kLong).device(dev)));
  }
  auto x = xs[0].clone(), y = ys[0].clone();
  auto step = [&] {
    for (auto &p : net->parameters())
      if (p.grad().defined()) p.grad().zero_();
    torch::Tensor loss;
    {
      Autocast ac(amp, dtype);
      loss = torch::nn::functional::cross_entropy(fwd(x), y);
    }
    if (prec == "fp16") {
      (loss * scale).backward();
      for (auto &p : net->parameters())
        if (p.grad().defined()) p.grad().mul_(1.0 / scale);
    } else {
      loss.backward();
    }
    opt->step();
  };
  for (int i = 0; i < 5; ++i) step();
  torch::cuda::synchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < steps; ++i) {
    x.copy_(xs[i % 2], true);
    y.copy_(ys[i % 2], true);
    step();
  }
  torch::cuda::synchronize();
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.3f\n", double(batch) * double(steps) / dt);
  return 0;
}

// "gpu_train_cpp -": one case per line on stdin, as gpu_train.c.
int main(int argc, char **argv) {
  if (!(argc == 2 && !std::strcmp(argv[1], "-"))) return run_case(argc, argv);
  char line[256];
  int rc = 0;
  while (std::fgets(line, sizeof line, stdin)) {
    char *av[9] = {argv[0]};
    int ac = 1;
    for (char *tok = std::strtok(line, " \t\n"); tok && ac < 9; tok = std::strtok(nullptr, " \t\n")) av[ac++] = tok;
    if (ac == 1) continue;
    rc = run_case(ac, av);
    std::fflush(stdout);
    if (rc != 0) return rc;
  }
  return rc;
}
