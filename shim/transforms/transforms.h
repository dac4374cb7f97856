// transforms/'s interface to the other folders (data/'s loader applies a
// transform to each item of a batch on its worker threads).
#pragma once

#include "core/internal.h"

namespace ctorch {
namespace transforms {

// One more reference to t (a live, checked handle).
void retain(ctorch_transform t) noexcept;
// Drops one reference (NULL-safe); the last one frees t and its parts.
void release(ctorch_transform t) noexcept;
// t applied to one image [C, H, W] as ctorch_transform_apply applies it to
// each image of a batch (the same checks first, then the same draws from
// gen). Returns a new tensor or a view of img; throws StatusError.
at::Tensor apply_image(ctorch_transform t, const at::Tensor &img, const at::Generator &gen);

}  // namespace transforms
}  // namespace ctorch
