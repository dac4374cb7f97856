// Guards of neural-network kernels: embedding bags, upsampling, slow and
// mkldnn convolutions, im2col/col2im, pooling, padding, channel shuffle,
// weight norm (why each exists: guards.h).
#include "guards_util.h"

#include "core/internal.h"

#include <ATen/ATen.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace ctorch {
namespace guard {

using namespace util;

namespace {

// ---- embedding bags ----------------------------------------------------------

// padding_idx: -1 (none) or a row of weight, as the kernels expect it
// (embedding_bag.padding_idx wraps a negative one first: `wrapped`).
void embedding_bag_check(const at::Tensor &weight, const at::Tensor &indices, const at::Tensor &offsets,
                         int64_t mode, const OptTensor &per_sample_weights, bool include_last_offset,
                         c10::optional<int64_t> padding_idx, bool wrapped) {
  require_dims(weight, "weight", 2, 2);
  // 1-D or 2-D indices, as libtorch 2.x's own check says ("input has to be
  // a 1D or 2D Tensor"; 1.13 has none); 1-D offsets, likewise.
  require_dims(indices, "indices", 1, 2);
  require_dims(offsets, "offsets", 1, 1);
  auto it = indices.scalar_type();
  if (it != at::kLong && it != at::kInt) fail_arg("indices", "must be an int32 or int64 tensor");
  if (offsets.scalar_type() != it) fail_arg("offsets", "must have the dtype of indices");
  in_range(mode, 0, 2, "mode");
  // Sum and mean compute 2-D indices deterministically (1.13 and 2.15);
  // max writes its argmax through offsets sized for 1-D input: SIGSEGV or
  // abort with indices [2, 3] and offsets [0, 1], on both versions.
  if (mode == 2 && indices.dim() == 2)
    fail_arg("indices", "must be 1-D when mode is max (2-D indices crash libtorch's max kernel)");
  if (per_sample_weights.has_value() && per_sample_weights->defined() &&
      per_sample_weights->numel() != indices.numel())
    fail_arg("per_sample_weights", "must have one weight per index");
  if (include_last_offset && offsets.numel() < 1)
    fail_arg("offsets", "needs at least one element when include_last_offset is set");
  int64_t rows = weight.size(0);
  if (padding_idx.has_value() && (*padding_idx != -1 || wrapped))
    in_range(*padding_idx, wrapped ? -rows : 0, rows - 1, "padding_idx");
  if (readable(indices)) {
    double lo, hi;
    min_max(indices, &lo, &hi);
    if (lo < 0 || hi >= static_cast<double>(rows))
      fail_arg("indices", "hold values outside [0, " + str(rows) + ") (the rows of weight)");
  }
  if (readable(offsets)) {
    at::Tensor o = offsets.to(at::kLong).contiguous();
    const int64_t *p = o.data_ptr<int64_t>();
    int64_t n = o.numel();
    if (p[0] != 0) fail_arg("offsets", "must start at 0");
    for (int64_t i = 1; i < n; ++i)
      if (p[i] < p[i - 1]) fail_arg("offsets", "must not decrease");
    if (p[n - 1] > indices.numel()) fail_arg("offsets", "points past the end of indices");
  }
}

// ---- upsampling --------------------------------------------------------------

// A scale (when given and positive, and align_corners is false) is what the
// kernel uses to map output to input positions: it must not map the last
// output past the input. Python's interpolate passes output = floor(input *
// scale), which always passes.
void upsample_check(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                    std::initializer_list<c10::optional<double>> scales, std::initializer_list<const char *> names) {
  int64_t spatial = static_cast<int64_t>(scales.size());
  require_dims(self, "self", spatial + 2, spatial + 2);
  if (static_cast<int64_t>(output_size.size()) != spatial)
    fail_arg("output_size", "expected " + str(spatial) + " values, got " + str(static_cast<int64_t>(output_size.size())));
  auto name = names.begin();
  int64_t i = 0;
  for (const auto &s : scales) {
    int64_t in = self.size(2 + i), out = output_size[i].expect_int();
    in_range(out, 0, kBig, "output_size");
    if (!align_corners && s.has_value() && *s > 0 && !(out - 0.5 < *s * (in + 0.5)))
      fail_arg(*name, "scale " + std::to_string(*s) + " maps output size " + str(out) + " past input size " +
                          str(in) + " (expected output_size <= input size * scale)");
    ++i, ++name;
  }
}

// ---- convolutions, windows -----------------------------------------------------

void conv3d_check(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size,
                  Ints stride, Ints padding) {
  require_dims(self, "self", 4, 5);
  require_dims(weight, "weight", 5, 5);
  for (int64_t s : weight.sizes())
    if (s <= 0) fail_arg("weight", "has a dimension of size 0");
  all_in_range(kernel_size, 1, kBig, "kernel_size");
  all_in_range(stride, 1, kBig, "stride");
  all_in_range(padding, 0, kBig, "padding");
  // The kernel reads the (contiguous) weight as [out, in * prod(kernel_size)]:
  // a kernel_size other than the weight's is computed (1.13 and 2.15 alike)
  // while that stays inside the weight; a larger product reads past it
  // (results change with the heap's contents).
  int64_t kernel = 1, spatial = weight.size(2) * weight.size(3) * weight.size(4);
  for (size_t i = 0; i < kernel_size.size() && i < 3; ++i) kernel *= kernel_size[i];
  if (kernel > spatial)
    fail_arg("kernel_size", "covers " + str(kernel) + " elements per filter, more than weight's " + str(spatial) +
                                " (it would be read past its end)");
}

void window_check(Ints kernel_size, Ints dilation, Ints padding,
                  Ints stride) {
  all_in_range(kernel_size, 1, kBig, "kernel_size");
  all_in_range(dilation, 1, kBig, "dilation");
  all_in_range(padding, 0, kBig, "padding");
  all_in_range(stride, 1, kBig, "stride");
}

void pool1d_check(const at::Tensor &self, Ints kernel_size, Ints stride,
                  Ints padding, Ints dilation) {
  require_dims(self, "self", 2, 3);
  window_check(kernel_size, dilation, padding, stride);
  if (kernel_size.size() == 1 && padding.size() <= 1 && dilation.size() <= 1) {
    int64_t p = padding.empty() ? 0 : padding[0], d = dilation.empty() ? 1 : dilation[0];
    if (d * (kernel_size[0] - 1) + 1 > self.size(-1) + 2 * p)
      fail_arg("kernel_size", "the window is wider than the padded input");
  }
}

void pad_check(Ints padding) { all_in_range(padding, -kBig, kBig, "padding"); }

void shuffle_check(const at::Tensor &self, int64_t groups) {
  if (self.dim() < 3) fail_arg("self", "expected more than 2 dimensions, got " + str(self.dim()));
  in_range(groups, 1, kBig, "groups");
  if (self.size(1) == 0 || self.size(1) % groups != 0)
    fail_arg("groups", "must divide the number of channels (" + str(self.size(1)) + ", which must be positive)");
}

// The fused kernel reads v and g as memory; a zero tensor has none (see guards.h).
void weight_norm_no_zero_tensors(const at::Tensor &v, const at::Tensor &g) {
  if (v._is_zerotensor())
    fail_arg("v", "is a zero tensor (_efficientzerotensor), which the fused weight-norm kernel would read as memory; "
                  "materialise it (clone) first");
  if (g._is_zerotensor())
    fail_arg("g", "is a zero tensor (_efficientzerotensor), which the fused weight-norm kernel would read as memory; "
                  "materialise it (clone) first");
}

void weight_norm_check(const at::Tensor &v, const at::Tensor &g, int64_t dim) {
  if (v.numel() == 0) fail_arg("v", "is empty");
  weight_norm_no_zero_tensors(v, g);
  in_range(dim, -1, v.dim() - 1, "dim");
  int64_t want = dim == -1 ? 1 : v.size(dim);
  if (g.numel() != want) fail_arg("g", "expected " + str(want) + " elements (one per slice along dim)");
}

// _weight_norm takes the fused kernel for dim 0 or the last dim, which reads
// one g per slice as a flat array: fewer than that is read past its end. A
// larger g is read in its first elements, and any other dim (or -1) goes
// through v * (g / norm), where g broadcasts or libtorch refuses it.
void weight_norm_fused_check(const at::Tensor &v, const at::Tensor &g, int64_t dim) {
  if (v.numel() == 0) fail_arg("v", "is empty");
  in_range(dim, -1, v.dim() - 1, "dim");
  if (dim == 0 || dim == v.dim() - 1) {
    weight_norm_no_zero_tensors(v, g);
    if (g.numel() < v.size(dim))
      fail_arg("g", "has " + str(g.numel()) + " elements; dim " + str(dim) + " needs at least " + str(v.size(dim)) +
                        " (one per slice)");
  }
}

}  // namespace

void embedding_bag(const at::Tensor &weight, const at::Tensor &indices, const at::Tensor &offsets, bool,
                   int64_t mode, bool, const OptTensor &per_sample_weights, bool include_last_offset) {
  embedding_bag_check(weight, indices, offsets, mode, per_sample_weights, include_last_offset, c10::nullopt, false);
}
void embedding_bag_padding_idx(const at::Tensor &weight, const at::Tensor &indices, const at::Tensor &offsets, bool,
                               int64_t mode, bool, const OptTensor &per_sample_weights, bool include_last_offset,
                               c10::optional<int64_t> padding_idx) {
  embedding_bag_check(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx, true);
}
void _embedding_bag(const at::Tensor &weight, const at::Tensor &indices, const at::Tensor &offsets, bool,
                    int64_t mode, bool, const OptTensor &per_sample_weights, bool include_last_offset,
                    int64_t padding_idx) {
  embedding_bag_check(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx, false);
}
void _embedding_bag_forward_only(const at::Tensor &weight, const at::Tensor &indices, const at::Tensor &offsets, bool,
                                 int64_t mode, bool, const OptTensor &per_sample_weights, bool include_last_offset,
                                 int64_t padding_idx) {
  embedding_bag_check(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx, false);
}

void upsample_linear1d(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                       c10::optional<double> scales) {
  upsample_check(self, output_size, align_corners, {scales}, {"scales"});
}
void upsample_linear1d_out(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                           c10::optional<double> scales, const at::Tensor &) {
  upsample_check(self, output_size, align_corners, {scales}, {"scales"});
}
void upsample_bilinear2d(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                         c10::optional<double> scales_h, c10::optional<double> scales_w) {
  upsample_check(self, output_size, align_corners, {scales_h, scales_w}, {"scales_h", "scales_w"});
}
void upsample_bilinear2d_out(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                             c10::optional<double> scales_h, c10::optional<double> scales_w, const at::Tensor &) {
  upsample_check(self, output_size, align_corners, {scales_h, scales_w}, {"scales_h", "scales_w"});
}
void upsample_trilinear3d(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                          c10::optional<double> scales_d, c10::optional<double> scales_h,
                          c10::optional<double> scales_w) {
  upsample_check(self, output_size, align_corners, {scales_d, scales_h, scales_w}, {"scales_d", "scales_h", "scales_w"});
}
void upsample_trilinear3d_out(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                              c10::optional<double> scales_d, c10::optional<double> scales_h,
                              c10::optional<double> scales_w, const at::Tensor &) {
  upsample_check(self, output_size, align_corners, {scales_d, scales_h, scales_w}, {"scales_d", "scales_h", "scales_w"});
}
void _upsample_bilinear2d_aa(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                             c10::optional<double> scales_h, c10::optional<double> scales_w) {
  upsample_check(self, output_size, align_corners, {scales_h, scales_w}, {"scales_h", "scales_w"});
}
void _upsample_bilinear2d_aa_out(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                                 c10::optional<double> scales_h, c10::optional<double> scales_w, const at::Tensor &) {
  upsample_check(self, output_size, align_corners, {scales_h, scales_w}, {"scales_h", "scales_w"});
}
void _upsample_bicubic2d_aa(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                            c10::optional<double> scales_h, c10::optional<double> scales_w) {
  upsample_check(self, output_size, align_corners, {scales_h, scales_w}, {"scales_h", "scales_w"});
}
void _upsample_bicubic2d_aa_out(const at::Tensor &self, c10::SymIntArrayRef output_size, bool align_corners,
                                c10::optional<double> scales_h, c10::optional<double> scales_w, const at::Tensor &) {
  upsample_check(self, output_size, align_corners, {scales_h, scales_w}, {"scales_h", "scales_w"});
}

void slow_conv3d(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size, const OptTensor &,
                 Ints stride, Ints padding) {
  conv3d_check(self, weight, kernel_size, stride, padding);
}
void slow_conv3d_out(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size, const OptTensor &,
                     Ints stride, Ints padding, const at::Tensor &) {
  conv3d_check(self, weight, kernel_size, stride, padding);
}
void slow_conv3d_forward(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size,
                         const OptTensor &, Ints stride, Ints padding) {
  conv3d_check(self, weight, kernel_size, stride, padding);
}
void slow_conv3d_forward_output(const at::Tensor &self, const at::Tensor &weight, Ints kernel_size,
                                const OptTensor &, Ints stride, Ints padding,
                                const at::Tensor &) {
  conv3d_check(self, weight, kernel_size, stride, padding);
}

void mkldnn_convolution(const at::Tensor &self, const at::Tensor &weight, const OptTensor &, Ints padding,
                        Ints stride, Ints dilation, int64_t groups) {
  conv_shapes(self, weight, {{padding, "padding"}, {stride, "stride"}, {dilation, "dilation"}}, groups);
}

// The weight-reorder ops: a positive stride. (A list of one value is
// expanded to every spatial dimension before the guard, typed and by name.)
static void reorder_check(Ints stride) { all_in_range(stride, 1, kBig, "stride"); }
void mkldnn_reorder_conv2d_weight(const at::Tensor &, Ints, Ints stride, Ints, c10::SymInt) {
  reorder_check(stride);
}
void mkldnn_reorder_conv2d_weight(const at::Tensor &, Ints, Ints stride, Ints, c10::SymInt,
                                  at::OptionalSymIntArrayRef) {
  reorder_check(stride);
}
void mkldnn_reorder_conv3d_weight(const at::Tensor &, Ints, Ints stride, Ints, c10::SymInt) {
  reorder_check(stride);
}
void mkldnn_reorder_conv3d_weight(const at::Tensor &, Ints, Ints stride, Ints, c10::SymInt,
                                  at::OptionalSymIntArrayRef) {
  reorder_check(stride);
}

void col2im(const at::Tensor &, c10::SymIntArrayRef output_size, Ints kernel_size,
            Ints dilation, Ints padding, Ints stride) {
  for (const auto &s : output_size) in_range(s.expect_int(), 1, kBig, "output_size");
  window_check(kernel_size, dilation, padding, stride);
}
void col2im_out(const at::Tensor &self, c10::SymIntArrayRef output_size, Ints kernel_size,
                Ints dilation, Ints padding, Ints stride, const at::Tensor &) {
  col2im(self, output_size, kernel_size, dilation, padding, stride);
}
void im2col(const at::Tensor &, Ints kernel_size, Ints dilation, Ints padding,
            Ints stride) {
  window_check(kernel_size, dilation, padding, stride);
}

void max_pool1d(const at::Tensor &self, Ints kernel_size, Ints stride, Ints padding,
                Ints dilation, bool) {
  pool1d_check(self, kernel_size, stride, padding, dilation);
}
void max_pool1d_with_indices(const at::Tensor &self, Ints kernel_size, Ints stride,
                             Ints padding, Ints dilation, bool) {
  pool1d_check(self, kernel_size, stride, padding, dilation);
}

void reflection_pad1d(const at::Tensor &, Ints padding) { pad_check(padding); }
void reflection_pad1d_out(const at::Tensor &, Ints padding, const at::Tensor &) { pad_check(padding); }
void reflection_pad2d(const at::Tensor &, Ints padding) { pad_check(padding); }
void reflection_pad2d_out(const at::Tensor &, Ints padding, const at::Tensor &) { pad_check(padding); }
void reflection_pad3d(const at::Tensor &, Ints padding) { pad_check(padding); }
void reflection_pad3d_out(const at::Tensor &, Ints padding, const at::Tensor &) { pad_check(padding); }
void replication_pad1d(const at::Tensor &, Ints padding) { pad_check(padding); }
void replication_pad1d_out(const at::Tensor &, Ints padding, const at::Tensor &) { pad_check(padding); }
void replication_pad2d(const at::Tensor &, Ints padding) { pad_check(padding); }
void replication_pad2d_out(const at::Tensor &, Ints padding, const at::Tensor &) { pad_check(padding); }
void replication_pad3d(const at::Tensor &, Ints padding) { pad_check(padding); }
void replication_pad3d_out(const at::Tensor &, Ints padding, const at::Tensor &) { pad_check(padding); }

void native_channel_shuffle(const at::Tensor &self, int64_t groups) {
  shuffle_check(self, groups);
  if (self.numel() == 0) fail_arg("self", "is empty");
}
void channel_shuffle(const at::Tensor &self, int64_t groups) { shuffle_check(self, groups); }

void _weight_norm(const at::Tensor &v, const at::Tensor &g, int64_t dim) { weight_norm_fused_check(v, g, dim); }
void _weight_norm_interface(const at::Tensor &v, const at::Tensor &g, int64_t dim) { weight_norm_check(v, g, dim); }

void lstm_input(const at::Tensor &input, at::TensorList hx, at::TensorList params, bool has_biases,
                int64_t num_layers, double, bool, bool bidirectional, bool batch_first) {
  if (hx.size() != 2) fail_arg("hx", "must hold 2 tensors (h0, c0), not " + str(hx.size()));
  require_dims(input, "input", 3, 3);
  require_dims(hx[0], "hx", 3, 3);
  require_dims(hx[1], "hx", 3, 3);
  in_range(num_layers, 1, kBig, "num_layers");
  const int64_t dirs = bidirectional ? 2 : 1, batch = input.size(batch_first ? 0 : 1);
  const int64_t hidden = hx[1].size(2), real = hx[0].size(2);
  const bool proj = real != hidden;
  if (hx[0].size(0) != num_layers * dirs || hx[1].size(0) != num_layers * dirs || hx[0].size(1) != batch ||
      hx[1].size(1) != batch)
    fail_arg("hx", "h0 and c0 must be [num_layers * directions, batch, size] = [" + str(num_layers * dirs) + ", " +
                       str(batch) + ", *]");
  const int64_t per = (has_biases ? 4 : 2) + (proj ? 1 : 0);
  if (static_cast<int64_t>(params.size()) != num_layers * dirs * per)
    fail_arg("params", "must hold " + str(num_layers * dirs * per) + " tensors (" + str(per) +
                           " per layer and direction), not " + str(params.size()));
  size_t k = 0;
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    const int64_t in = layer == 0 ? input.size(2) : real * dirs;
    for (int64_t d = 0; d < dirs; ++d) {
      std::vector<std::vector<int64_t>> want = {{4 * hidden, in}, {4 * hidden, real}};
      if (has_biases) want.push_back({4 * hidden}), want.push_back({4 * hidden});
      if (proj) want.push_back({real, hidden});
      for (const auto &shape : want) {
        const at::Tensor &p = params[k];
        if (!p.defined() || p.sizes() != at::IntArrayRef(shape) || p.scalar_type() != input.scalar_type() ||
            p.device() != input.device())
          fail_arg("params", "tensor " + str(k) + " (layer " + str(layer) + ", direction " + str(d) + ") must be " +
                                 c10::str(at::IntArrayRef(shape)) + " of input's dtype and device");
        ++k;
      }
    }
  }
}

}  // namespace guard
}  // namespace ctorch
