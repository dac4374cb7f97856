// Helpers shared by the guards (guards*.cpp); not seen by the generated code.
#pragma once

#include "guards.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

namespace ctorch {
namespace guard {
namespace util {

std::string str(int64_t v);
// t.dim() in [lo, hi].
void require_dims(const at::Tensor &t, const char *arg, int64_t lo, int64_t hi);
// A given per-channel tensor has exactly `channels` elements.
void per_channel(const OptTensor &t, const char *arg, int64_t channels);
void require_given(const OptTensor &t, const char *arg, const char *when);
// No two elements share memory (a stride-0, expanded view).
void no_overlap(const at::Tensor &t, const char *arg);
void non_empty(at::TensorList l, const char *arg);
// A dimension index for a tensor of `ndim` dimensions (negative counts from
// the end); returns it wrapped.
int64_t dim_index(int64_t d, int64_t ndim, const char *arg);
void in_range(int64_t v, int64_t lo, int64_t hi, const char *arg);
// Every value in [lo, hi].
void all_in_range(at::IntArrayRef v, int64_t lo, int64_t hi, const char *arg);
// t's values can be read here: a defined, strided CPU tensor with elements.
bool readable(const at::Tensor &t);
// min and max of a readable tensor, as doubles (NaN if any is NaN).
void min_max(const at::Tensor &t, double *lo, double *hi);
// A convolution's self/weight and per-spatial-dimension lists: self 3-d to
// 5-d, weight of self's rank, each list one value per spatial dimension,
// groups in [1, kBig] (mkldnn_convolution, cudnn_convolution*).
void conv_shapes(const at::Tensor &self, const at::Tensor &weight,
                 std::initializer_list<std::pair<Ints, const char *>> lists, int64_t groups);
// The index of the last element of the view (offset, size, stride) over a
// storage, in 128 bits saturated at 2^100 (far past any storage) so nothing
// wraps; contiguous strides when stride is empty. Sizes and strides must be
// non-negative and none zero (an empty view has no last element).
__int128 last_index(__int128 offset, Ints size, Ints stride);
// Bound on sizes, counts and window extents: 2^31 keeps every product of
// two of them, and the sums libtorch forms from them, inside int64.
constexpr int64_t kBig = int64_t(1) << 31;

}  // namespace util
}  // namespace guard
}  // namespace ctorch
