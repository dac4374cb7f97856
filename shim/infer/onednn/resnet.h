// The module optimiser's oneDNN ResNet (option onednn_resnet=1): a module
// tree shaped and named as torchvision's ResNet, declared by the caller to
// run torchvision's forward, run as one plan of oneDNN primitives. Part of
// infer/'s internals: optimize.cpp calls it where ctorch is built with
// oneDNN (CTORCH_HAVE_ONEDNN).
#pragma once

#include "nn/module.h"

#include <ostream>

namespace ctorch {
namespace infer {

// m as an OnednnResNet (kind and children as m's: its state dict, repr and
// children stay m's) whose forward is torchvision's ResNet forward run by
// oneDNN: the BatchNorms folded into the convolutions, the weights laid out
// once per input shape in the layout each primitive asks for, ReLU and the
// residual add as post-ops, activations in oneDNN's blocked layout between
// layers; the input and the pooled features are libtorch's tensors, read
// and written in place. Inputs it cannot take (not float32 4-d on the CPU,
// grad) run torchvision's forward through the children. Where m is not
// shaped so, or ctorch is built without oneDNN: m itself, with a
// "skip onednn_resnet" line saying why.
// int8 (precision=int8-static): the plan is float32 until
// onednn_resnet_int8_finish, observing each activation's range on the
// calibration batches, then int8 convolutions (resnet.cpp); where the
// oneDNN is 2.x, m itself with a "skip onednn_resnet int8" line.
nn::ModulePtr onednn_resnet(const nn::ModulePtr &m, std::ostream &report, bool int8);

// After int8-static's calibration batches ran through m: where m is
// onednn_resnet's int8 plan, its activation scales are fixed (one report
// line) and true; else false.
bool onednn_resnet_int8_finish(nn::Module &m, std::ostream &report);

}  // namespace infer
}  // namespace ctorch
