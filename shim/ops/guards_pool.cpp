// Guards of convolution, pooling and activation kernels declared in the
// "neural-network kernels, continued" part of guards.h (why each exists is
// written there).
#include "guards_util.h"

#include "core/internal.h"

#include <ATen/ATen.h>

#include <string>

namespace ctorch {
namespace guard {

using namespace util;

namespace {

void conv_groups(int64_t groups) { in_range(groups, 1, kBig, "groups"); }

void factor(int64_t f, const char *arg) { in_range(f, 1, kBig, arg); }

// random_samples is [N, C, k] (k = 2 or 3 dims pooled).
void fractional(const at::Tensor &self, Ints kernel_size, Ints output_size, const at::Tensor &random_samples,
                int64_t k) {
  all_in_range(kernel_size, 1, kBig, "kernel_size");
  all_in_range(output_size, 1, kBig, "output_size");
  if (!self.defined() || !random_samples.defined()) return;  // libtorch reports these
  if (self.dim() != k + 1 && self.dim() != k + 2) return;     // and this (wrong rank)
  int64_t n = self.dim() == k + 2 ? self.size(0) : 1, c = self.size(-k - 1);
  // libtorch 2.x's own check: [N' >= N, C, k]. A larger batch is read in
  // its first N rows (1.13 and 2.x compute it alike).
  if (random_samples.dim() != 3 || random_samples.size(0) < n || random_samples.size(1) != c ||
      random_samples.size(2) != k)
    fail_arg("random_samples", "expected sizes [>= " + str(n) + ", " + str(c) + ", " + str(k) +
                                   "] (batch, channels, " + str(k) + " pooled dimensions), got " +
                                   c10::str(random_samples.sizes()));
  // 1.13 reads it as a flat array; 2.x takes its contiguous copy (compat.h).
  if (CTORCH_COMPAT_FRACTIONAL_SAMPLES_FLAT && !random_samples.is_contiguous())
    fail_arg("random_samples", "must be contiguous (libtorch 1.13's kernel reads it as a flat array)");
}

void adaptive(Ints output_size) { all_in_range(output_size, 0, kBig, "output_size"); }

void rrelu_noise(const at::Tensor &self, const at::Tensor &noise, bool training) {
  if (!training || !self.defined()) return;
  if (!noise.defined()) fail_arg("noise", "must be given when training is true");
  if (noise.sizes() != self.sizes())
    fail_arg("noise", "must have self's sizes " + c10::str(self.sizes()) + " when training is true (it receives one "
                          "random factor per element), got " + c10::str(noise.sizes()));
  if (!noise.is_contiguous()) fail_arg("noise", "must be contiguous when training is true (it is written as a flat array)");
}

void quantized_pool(Ints kernel_size, Ints stride, Ints padding, Ints dilation) {
  all_in_range(kernel_size, 1, kBig, "kernel_size");
  all_in_range(stride, 1, kBig, "stride");
  all_in_range(dilation, 1, kBig, "dilation");
  all_in_range(padding, 0, kBig, "padding");
  for (size_t i = 0; i < padding.size(); ++i) {
    int64_t k = kernel_size.empty() ? 1 : kernel_size[kernel_size.size() == 1 ? 0 : std::min(i, kernel_size.size() - 1)];
    if (padding[i] > k / 2)
      fail_arg("padding", str(padding[i]) + " is more than half the kernel size " + str(k));
  }
}

// grad_output/indices of a max pool over the last k dims of self.
void pool_backward(const at::Tensor &grad_output, const at::Tensor &self, const at::Tensor &indices, int64_t k) {
  if (!grad_output.defined() || !self.defined() || !indices.defined()) return;  // libtorch reports these
  if (self.dim() != k + 1 && self.dim() != k + 2)
    fail_arg("self", "expected " + str(k + 1) + " or " + str(k + 2) + " dimensions, got " + str(self.dim()));
  if (grad_output.dim() != self.dim())
    fail_arg("grad_output", "must have as many dimensions as self (" + str(self.dim()) + "), got " +
                                str(grad_output.dim()));
  for (int64_t d = 0; d < self.dim() - k; ++d)
    if (grad_output.size(d) != self.size(d))
      fail_arg("grad_output", "its batch and channel sizes must be self's: " + c10::str(grad_output.sizes()) +
                                  " against " + c10::str(self.sizes()));
  if (indices.sizes() != grad_output.sizes())
    fail_arg("indices", "must have grad_output's sizes " + c10::str(grad_output.sizes()) + ", got " +
                            c10::str(indices.sizes()));
  if (!readable(indices)) return;
  int64_t plane = 1;
  for (int64_t d = self.dim() - k; d < self.dim(); ++d) plane *= self.size(d);
  double lo = 0, hi = 0;
  min_max(indices, &lo, &hi);
  if (!(lo >= 0 && hi < static_cast<double>(plane)))
    fail_arg("indices", "holds values outside [0, " + str(plane) + ") (one plane of self, from the forward pass)");
}

void batch_norm_input(const at::Tensor &input) {
  if (input.defined() && input.numel() == 0)
    fail_arg("input", "has no elements (the CUDA kernels divide by the elements per channel: SIGFPE)");
}

// batch_norm_elemt reads one mean and one invstd per channel (input's dim 1)
// whatever their shapes: fewer elements than channels is an out-of-bounds
// read on the device (CUDA sweep, 2.11, H100: "an illegal memory access",
// the context lost). More elements, as libtorch allows, stay accepted.
void batch_norm_per_channel(const at::Tensor &input, const at::Tensor &t, const char *name) {
  if (!input.defined() || input.dim() < 2 || !t.defined()) return;
  if (t.numel() < input.size(1))
    fail_arg(name, "has " + str(t.numel()) + " elements for " + str(input.size(1)) +
                       " channels (input's dimension 1): the kernel reads one per channel");
}

}  // namespace

void cudnn_convolution(const at::Tensor &self, const at::Tensor &weight, Ints padding, Ints stride, Ints dilation,
                       int64_t groups, bool, bool, bool) {
  conv_shapes(self, weight, {{padding, "padding"}, {stride, "stride"}, {dilation, "dilation"}}, groups);
}
void cudnn_convolution_transpose(const at::Tensor &self, const at::Tensor &weight, Ints padding, Ints output_padding,
                                 Ints stride, Ints dilation, int64_t groups, bool, bool, bool) {
  conv_shapes(self, weight,
               {{padding, "padding"}, {output_padding, "output_padding"}, {stride, "stride"}, {dilation, "dilation"}},
               groups);
}
void cudnn_convolution_relu(const at::Tensor &self, const at::Tensor &weight, const OptTensor &, Ints stride,
                            Ints padding, Ints dilation, int64_t groups) {
  conv_shapes(self, weight, {{stride, "stride"}, {padding, "padding"}, {dilation, "dilation"}}, groups);
}
void cudnn_convolution_add_relu(const at::Tensor &self, const at::Tensor &weight, const at::Tensor &z,
                                const c10::optional<at::Scalar> &, const OptTensor &, Ints stride, Ints padding,
                                Ints dilation, int64_t groups) {
  conv_shapes(self, weight, {{stride, "stride"}, {padding, "padding"}, {dilation, "dilation"}}, groups);
  if (z.defined() && z.dim() != self.dim())
    fail_arg("z", "must have as many dimensions as self (" + str(self.dim()) + "), got " + str(z.dim()));
}

void batch_norm_stats(const at::Tensor &input, double) { batch_norm_input(input); }
void batch_norm_elemt(const at::Tensor &input, const OptTensor &, const OptTensor &, const at::Tensor &mean,
                      const at::Tensor &invstd, double) {
  batch_norm_input(input);
  batch_norm_per_channel(input, mean, "mean");
  batch_norm_per_channel(input, invstd, "invstd");
}
void batch_norm_elemt_out(const at::Tensor &input, const OptTensor &, const OptTensor &, const at::Tensor &mean,
                          const at::Tensor &invstd, double, const at::Tensor &) {
  batch_norm_input(input);
  batch_norm_per_channel(input, mean, "mean");
  batch_norm_per_channel(input, invstd, "invstd");
}

void range_out_(const at::Scalar &, const at::Scalar &, const at::Tensor &out) {
  if (out.defined() && !out.device().is_cpu())
    fail_arg("out", "must be a CPU tensor: range.out_ (without step) runs libtorch's CPU kernel whatever out's device "
                    "is (a CUDA out: SIGSEGV); use range.out with step 1");
}

void adaptive_max_pool2d_backward(const at::Tensor &g, const at::Tensor &self, const at::Tensor &indices) {
  pool_backward(g, self, indices, 2);
}
void adaptive_max_pool2d_backward_grad_input(const at::Tensor &g, const at::Tensor &self, const at::Tensor &indices,
                                             const at::Tensor &) {
  pool_backward(g, self, indices, 2);
}
void adaptive_max_pool3d_backward(const at::Tensor &g, const at::Tensor &self, const at::Tensor &indices) {
  pool_backward(g, self, indices, 3);
}
void adaptive_max_pool3d_backward_grad_input(const at::Tensor &g, const at::Tensor &self, const at::Tensor &indices,
                                             const at::Tensor &) {
  pool_backward(g, self, indices, 3);
}
void fractional_max_pool2d_backward(const at::Tensor &g, const at::Tensor &self, Ints, Ints,
                                    const at::Tensor &indices) {
  pool_backward(g, self, indices, 2);
}
void fractional_max_pool2d_backward_grad_input(const at::Tensor &g, const at::Tensor &self, Ints, Ints,
                                               const at::Tensor &indices, const at::Tensor &) {
  pool_backward(g, self, indices, 2);
}
void fractional_max_pool3d_backward(const at::Tensor &g, const at::Tensor &self, Ints, Ints,
                                    const at::Tensor &indices) {
  pool_backward(g, self, indices, 3);
}
void fractional_max_pool3d_backward_grad_input(const at::Tensor &g, const at::Tensor &self, Ints, Ints,
                                               const at::Tensor &indices, const at::Tensor &) {
  pool_backward(g, self, indices, 3);
}
void max_pool2d_with_indices_backward(const at::Tensor &g, const at::Tensor &self, Ints, Ints, Ints, Ints, bool,
                                      const at::Tensor &indices) {
  pool_backward(g, self, indices, 2);
}
void max_pool2d_with_indices_backward_grad_input(const at::Tensor &g, const at::Tensor &self, Ints, Ints, Ints, Ints,
                                                 bool, const at::Tensor &indices, const at::Tensor &) {
  pool_backward(g, self, indices, 2);
}
void max_pool3d_with_indices_backward(const at::Tensor &g, const at::Tensor &self, Ints, Ints, Ints, Ints, bool,
                                      const at::Tensor &indices) {
  pool_backward(g, self, indices, 3);
}
void max_pool3d_with_indices_backward_grad_input(const at::Tensor &g, const at::Tensor &self, Ints, Ints, Ints, Ints,
                                                 bool, const at::Tensor &indices, const at::Tensor &) {
  pool_backward(g, self, indices, 3);
}

void convolution(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, Ints, Ints, bool, Ints,
                 int64_t groups) {
  conv_groups(groups);
}
void convolution_overrideable(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, Ints, Ints, bool,
                              Ints, int64_t groups) {
  conv_groups(groups);
}
void _convolution(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, Ints, Ints, bool, Ints,
                  int64_t groups, bool, bool, bool, bool) {
  conv_groups(groups);
}
void _convolution_deprecated(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, Ints, Ints, bool, Ints,
                             int64_t groups, bool, bool, bool) {
  conv_groups(groups);
}
void _convolution_mode(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, c10::string_view, Ints,
                       int64_t groups) {
  conv_groups(groups);
}
void conv1d(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, Ints, Ints, int64_t groups) {
  conv_groups(groups);
}
void conv2d(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, Ints, Ints, int64_t groups) {
  conv_groups(groups);
}
void conv3d(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, Ints, Ints, int64_t groups) {
  conv_groups(groups);
}
void conv1d_padding(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, c10::string_view, Ints,
                    int64_t groups) {
  conv_groups(groups);
}
void conv2d_padding(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, c10::string_view, Ints,
                    int64_t groups) {
  conv_groups(groups);
}
void conv3d_padding(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, c10::string_view, Ints,
                    int64_t groups) {
  conv_groups(groups);
}
void conv_transpose1d(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, Ints, Ints, int64_t groups,
                      Ints) {
  conv_groups(groups);
}
void conv_transpose2d_input(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, Ints, Ints,
                            int64_t groups, Ints) {
  conv_groups(groups);
}
void conv_transpose3d_input(const at::Tensor &, const at::Tensor &, const OptTensor &, Ints, Ints, Ints,
                            int64_t groups, Ints) {
  conv_groups(groups);
}

void pixel_shuffle(const at::Tensor &, int64_t upscale_factor) { factor(upscale_factor, "upscale_factor"); }
void pixel_unshuffle(const at::Tensor &, int64_t downscale_factor) { factor(downscale_factor, "downscale_factor"); }

void fractional_max_pool2d(const at::Tensor &self, Ints kernel_size, Ints output_size,
                           const at::Tensor &random_samples) {
  fractional(self, kernel_size, output_size, random_samples, 2);
}
void fractional_max_pool2d_output(const at::Tensor &self, Ints kernel_size, Ints output_size,
                                  const at::Tensor &random_samples, const at::Tensor &, const at::Tensor &) {
  fractional(self, kernel_size, output_size, random_samples, 2);
}
void fractional_max_pool3d(const at::Tensor &self, Ints kernel_size, Ints output_size,
                           const at::Tensor &random_samples) {
  fractional(self, kernel_size, output_size, random_samples, 3);
}
void fractional_max_pool3d_output(const at::Tensor &self, Ints kernel_size, Ints output_size,
                                  const at::Tensor &random_samples, const at::Tensor &, const at::Tensor &) {
  fractional(self, kernel_size, output_size, random_samples, 3);
}

void adaptive_avg_pool1d(const at::Tensor &, Ints output_size) { adaptive(output_size); }
void adaptive_avg_pool2d(const at::Tensor &, Ints output_size) { adaptive(output_size); }
void adaptive_avg_pool2d_out(const at::Tensor &, Ints output_size, const at::Tensor &) { adaptive(output_size); }
void adaptive_avg_pool3d(const at::Tensor &, Ints output_size) { adaptive(output_size); }
void adaptive_avg_pool3d_out(const at::Tensor &, Ints output_size, const at::Tensor &) { adaptive(output_size); }
void _adaptive_avg_pool2d(const at::Tensor &, Ints output_size) { adaptive(output_size); }
void _adaptive_avg_pool3d(const at::Tensor &, Ints output_size) { adaptive(output_size); }
void mkldnn_adaptive_avg_pool2d(const at::Tensor &, Ints output_size) { adaptive(output_size); }
void mkldnn_adaptive_avg_pool2d_out(const at::Tensor &, Ints output_size, const at::Tensor &) {
  adaptive(output_size);
}
void adaptive_max_pool1d(const at::Tensor &, Ints output_size) { adaptive(output_size); }
void adaptive_max_pool2d(const at::Tensor &, Ints output_size) { adaptive(output_size); }
void adaptive_max_pool2d_out(const at::Tensor &, Ints output_size, const at::Tensor &, const at::Tensor &) {
  adaptive(output_size);
}
void adaptive_max_pool3d(const at::Tensor &, Ints output_size) { adaptive(output_size); }
void adaptive_max_pool3d_out(const at::Tensor &, Ints output_size, const at::Tensor &, const at::Tensor &) {
  adaptive(output_size);
}

void rrelu_with_noise(const at::Tensor &self, const at::Tensor &noise, const at::Scalar &, const at::Scalar &,
                      bool training, c10::optional<at::Generator>) {
  rrelu_noise(self, noise, training);
}
void rrelu_with_noise_(const at::Tensor &self, const at::Tensor &noise, const at::Scalar &, const at::Scalar &,
                       bool training, c10::optional<at::Generator>) {
  rrelu_noise(self, noise, training);
}
void rrelu_with_noise_out(const at::Tensor &self, const at::Tensor &noise, const at::Scalar &, const at::Scalar &,
                          bool training, c10::optional<at::Generator>, const at::Tensor &) {
  rrelu_noise(self, noise, training);
}
void rrelu_with_noise_functional(const at::Tensor &self, const at::Tensor &noise, const at::Scalar &,
                                 const at::Scalar &, bool training, c10::optional<at::Generator>) {
  rrelu_noise(self, noise, training);
}

void quantized_max_pool1d(const at::Tensor &, Ints kernel_size, Ints stride, Ints padding, Ints dilation, bool) {
  quantized_pool(kernel_size, stride, padding, dilation);
}
void quantized_max_pool2d(const at::Tensor &, Ints kernel_size, Ints stride, Ints padding, Ints dilation, bool) {
  quantized_pool(kernel_size, stride, padding, dilation);
}
void quantized_max_pool3d(const at::Tensor &, Ints kernel_size, Ints stride, Ints padding, Ints dilation, bool) {
  quantized_pool(kernel_size, stride, padding, dilation);
}

}  // namespace guard
}  // namespace ctorch
