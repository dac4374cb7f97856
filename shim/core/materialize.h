// Materialising tensors that have no memory of their own, for the code that
// hands memory out (DLPack export, copy_to, save). Not in internal.h: every
// generated shard includes that, and none needs this.
#pragma once

#include <ATen/core/Tensor.h>

namespace ctorch {

// t, or zeros of its sizes and options when t is a zero tensor
// (_efficientzerotensor: sizes but no memory, a NULL data pointer).
at::Tensor materialize_zero(const at::Tensor &t);

}  // namespace ctorch
