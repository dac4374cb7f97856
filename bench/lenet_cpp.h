// LeNet-5 in libtorch's C++ API (torch::nn), the C++ reference model of the
// training benchmarks: train_cpp.cpp (CPU) and gpu_train_cpp.cpp (CUDA). The
// same layers as examples/lenet5_model.h and bench/train_python.py:
//   conv(6, k5) relu -> maxpool 2 -> conv(16, k5) relu -> maxpool 2 -> flatten 256
//   -> dense 120 relu -> dense 84 relu -> dense 10
#ifndef CTORCH_BENCH_LENET_CPP_H
#define CTORCH_BENCH_LENET_CPP_H

#include <torch/torch.h>

struct LeNetImpl : torch::nn::Module {
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  LeNetImpl() {
    conv1 = register_module("conv1", torch::nn::Conv2d(1, 6, 5));
    conv2 = register_module("conv2", torch::nn::Conv2d(6, 16, 5));
    fc1 = register_module("fc1", torch::nn::Linear(256, 120));
    fc2 = register_module("fc2", torch::nn::Linear(120, 84));
    fc3 = register_module("fc3", torch::nn::Linear(84, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    x = x.flatten(1);
    x = torch::relu(fc1->forward(x));
    x = torch::relu(fc2->forward(x));
    return fc3->forward(x);
  }
};
TORCH_MODULE(LeNet);

#endif
