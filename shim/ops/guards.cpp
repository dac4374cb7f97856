// The checks behind guards.h (why each exists is written there). Out of
// line and compiled once: only the guarded wrappers call them.
#include "guards_util.h"

#include "core/internal.h"

#include "ctorch_gen_support.h"

#include <algorithm>
#include <string>

namespace ctorch {
namespace guard {
namespace {

using namespace util;

// Also C > 0: the kernels divide by the channel count (SIGFPE in 1.13 for an
// input of sizes [2, 0]).
int64_t batch_norm_channels(const at::Tensor &input, const char *arg) {
  if (input.dim() < 2) fail_arg(arg, "expected at least 2 dimensions (N, C, ...), got " + str(input.dim()));
  if (input.size(1) == 0) fail_arg(arg, "has no channels (size 0 in dimension 1)");
  return input.size(1);
}

void batch_norm_forward(const at::Tensor &input, const OptTensor &weight, const OptTensor &bias,
                        const OptTensor &running_mean, const OptTensor &running_var, bool training) {
  int64_t c = batch_norm_channels(input, "input");
  per_channel(weight, "weight", c);
  per_channel(bias, "bias", c);
  per_channel(running_mean, "running_mean", c);
  per_channel(running_var, "running_var", c);
  if (!training) {
    require_given(running_mean, "running_mean", "training is false");
    require_given(running_var, "running_var", "training is false");
  }
}

// The backward kernel reads each per-channel tensor's first C elements
// from its data pointer: more elements are computed alike (1.13, 2.15);
// fewer, or a stride-0 or strided view, are read past or across their
// memory (results change with the heap's contents).
void per_channel_read(const OptTensor &t, const char *arg, int64_t channels) {
  if (!t.has_value() || !t->defined()) return;
  if (t->numel() < channels)
    fail_arg(arg, "has " + str(t->numel()) + " elements, fewer than the " + str(channels) + " channels");
  if (!t->is_contiguous()) fail_arg(arg, "must be contiguous (the kernel reads it as a flat array)");
}

void batch_norm_backward(const at::Tensor &grad_out, const char *grad_arg, const at::Tensor &input,
                         const OptTensor &weight, const OptTensor &running_mean, const OptTensor &running_var,
                         const OptTensor &save_mean, const char *save_mean_arg, const OptTensor &save_invstd,
                         const char *save_invstd_arg, bool train) {
  int64_t c = batch_norm_channels(input, "input");
  if (grad_out.sizes() != input.sizes()) fail_arg(grad_arg, "must have the sizes of input");
  per_channel_read(weight, "weight", c);
  per_channel_read(running_mean, "running_mean", c);
  per_channel_read(running_var, "running_var", c);
  per_channel_read(save_mean, save_mean_arg, c);
  per_channel_read(save_invstd, save_invstd_arg, c);
  if (train) {
    require_given(save_mean, save_mean_arg, "train is true");
    require_given(save_invstd, save_invstd_arg, "train is true");
  } else {
    require_given(running_mean, "running_mean", "train is false");
    require_given(running_var, "running_var", "train is false");
  }
}

// input [N, I] (or [I]), hidden [N, H] (or [H]), w_ih [gates*H, I],
// w_hh [gates*H, H], biases gates*H elements.
void rnn_cell(int64_t gates, const at::Tensor &input, const at::Tensor &hx, const char *hx_arg,
              const at::Tensor &w_ih, const at::Tensor &w_hh, const OptTensor &b_ih, const OptTensor &b_hh) {
  require_dims(input, "input", 1, 2);
  require_dims(hx, hx_arg, 1, 2);
  require_dims(w_ih, "w_ih", 2, 2);
  require_dims(w_hh, "w_hh", 2, 2);
  int64_t h = hx.size(-1);
  if (w_hh.size(0) != gates * h || w_hh.size(1) != h)
    fail_arg("w_hh", "expected [" + str(gates * h) + ", " + str(h) + "] (" + str(gates) +
                         " gates of the hidden size " + str(h) + ")");
  if (w_ih.size(0) != gates * h || w_ih.size(1) != input.size(-1))
    fail_arg("w_ih", "expected [" + str(gates * h) + ", " + str(input.size(-1)) + "] (" + str(gates) +
                         " gates of the hidden size by the input size)");
  if (input.dim() != hx.dim() || (input.dim() == 2 && input.size(0) != hx.size(0)))
    fail_arg(hx_arg, "batch does not match input's");
  per_channel(b_ih, "b_ih", gates * h);
  per_channel(b_hh, "b_hh", gates * h);
}

void lstm_hidden(at::TensorList hx) {
  if (hx.size() != 2) fail_arg("hx", "expected 2 tensors (h, c), got " + str(static_cast<int64_t>(hx.size())));
  if (hx[0].sizes() != hx[1].sizes()) fail_arg("hx", "h and c must have the same sizes");
}

}  // namespace

void native_batch_norm(const at::Tensor &input, const OptTensor &weight, const OptTensor &bias,
                       const OptTensor &running_mean, const OptTensor &running_var, bool training, double,
                       double) {
  batch_norm_forward(input, weight, bias, running_mean, running_var, training);
}

void native_batch_norm_out(const at::Tensor &input, const OptTensor &weight, const OptTensor &bias,
                           const OptTensor &running_mean, const OptTensor &running_var, bool training, double,
                           double, const at::Tensor &, const at::Tensor &, const at::Tensor &) {
  batch_norm_forward(input, weight, bias, running_mean, running_var, training);
  batch_norm_out_input(input);  // guards_norm.h: libtorch 2.x's wrong results
}

void native_batch_norm_backward(const at::Tensor &grad_out, const at::Tensor &input, const OptTensor &weight,
                                const OptTensor &running_mean, const OptTensor &running_var,
                                const OptTensor &save_mean, const OptTensor &save_invstd, bool train, double,
                                std::array<bool, 3>) {
  batch_norm_backward(grad_out, "grad_out", input, weight, running_mean, running_var, save_mean, "save_mean",
                      save_invstd, "save_invstd", train);
}

void _batch_norm_impl_index_backward(int64_t, const at::Tensor &input, const at::Tensor &grad_output,
                                     const OptTensor &weight, const OptTensor &running_mean,
                                     const OptTensor &running_var, const OptTensor &save_mean,
                                     const OptTensor &save_var_transform, bool train, double,
                                     std::array<bool, 3>, const at::Tensor &) {
  batch_norm_backward(grad_output, "grad_output", input, weight, running_mean, running_var, save_mean,
                      "save_mean", save_var_transform, "save_var_transform", train);
}

void batch_norm_update_stats(const at::Tensor &input, const OptTensor &running_mean, const OptTensor &running_var,
                             double) {
  int64_t c = batch_norm_channels(input, "input");
  if (input.numel() == 0) fail_arg("input", "is empty");
  per_channel(running_mean, "running_mean", c);
  per_channel(running_var, "running_var", c);
}

void gru_cell(const at::Tensor &input, const at::Tensor &hx, const at::Tensor &w_ih, const at::Tensor &w_hh,
              const OptTensor &b_ih, const OptTensor &b_hh) {
  rnn_cell(3, input, hx, "hx", w_ih, w_hh, b_ih, b_hh);
}

void lstm_cell(const at::Tensor &input, at::TensorList hx, const at::Tensor &w_ih, const at::Tensor &w_hh,
               const OptTensor &b_ih, const OptTensor &b_hh) {
  lstm_hidden(hx);
  rnn_cell(4, input, hx[0], "hx", w_ih, w_hh, b_ih, b_hh);
}

void quantized_lstm_cell(const at::Tensor &input, at::TensorList hx, const at::Tensor &w_ih,
                         const at::Tensor &w_hh, const at::Tensor &b_ih, const at::Tensor &b_hh, const at::Tensor &,
                         const at::Tensor &, const at::Tensor &, const at::Tensor &, const at::Scalar &,
                         const at::Scalar &, const at::Scalar &, const at::Scalar &) {
  lstm_hidden(hx);
  rnn_cell(4, input, hx[0], "hx", w_ih, w_hh, b_ih, b_hh);
}

void quantized_gru_cell(const at::Tensor &input, const at::Tensor &hx, const at::Tensor &w_ih,
                        const at::Tensor &w_hh, const at::Tensor &b_ih, const at::Tensor &b_hh, const at::Tensor &,
                        const at::Tensor &, const at::Tensor &, const at::Tensor &, const at::Scalar &,
                        const at::Scalar &, const at::Scalar &, const at::Scalar &) {
  rnn_cell(3, input, hx, "hx", w_ih, w_hh, b_ih, b_hh);
}

void _symeig_helper(const at::Tensor &self, bool, bool) {
  if (self.dim() < 2) fail_arg("self", "expected a matrix or a batch of matrices, got " + str(self.dim()) + " dimensions");
  if (self.size(-1) != self.size(-2))
    fail_arg("self", "expected square matrices, got " + str(self.size(-2)) + " by " + str(self.size(-1)));
}

namespace util {

std::string str(int64_t v) { return std::to_string(v); }

void require_dims(const at::Tensor &t, const char *arg, int64_t lo, int64_t hi) {
  if (t.dim() < lo || t.dim() > hi)
    fail_arg(arg, "expected " + (lo == hi ? str(lo) : str(lo) + " to " + str(hi)) + " dimensions, got " +
                      str(t.dim()));
}

void per_channel(const OptTensor &t, const char *arg, int64_t channels) {
  if (t.has_value() && t->defined() && t->numel() != channels)
    fail_arg(arg, "expected " + str(channels) + " elements (one per channel of input), got " + str(t->numel()));
}

void require_given(const OptTensor &t, const char *arg, const char *when) {
  if (!t.has_value() || !t->defined()) fail_arg(arg, std::string("must be given when ") + when);
}

void no_overlap(const at::Tensor &t, const char *arg) { ctorch_gen::require_no_overlap(t, arg); }

void non_empty(at::TensorList l, const char *arg) {
  if (l.empty()) fail_arg(arg, "expected at least one tensor, got none");
}

int64_t dim_index(int64_t d, int64_t ndim, const char *arg) {
  int64_t n = ndim > 0 ? ndim : 1;
  if (d < -n || d >= n)
    fail_arg(arg, "dimension " + str(d) + " out of range for a tensor of " + str(ndim) + " dimensions");
  return d < 0 ? d + n : d;
}

void in_range(int64_t v, int64_t lo, int64_t hi, const char *arg) {
  if (v < lo || v > hi) fail_arg(arg, str(v) + " is out of range [" + str(lo) + ", " + str(hi) + "]");
}

void all_in_range(at::IntArrayRef v, int64_t lo, int64_t hi, const char *arg) {
  for (int64_t x : v) in_range(x, lo, hi, arg);
}

void conv_shapes(const at::Tensor &self, const at::Tensor &weight,
                 std::initializer_list<std::pair<Ints, const char *>> lists, int64_t groups) {
  if (!self.defined() || !weight.defined()) return;  // libtorch reports these
  require_dims(self, "self", 3, 5);
  if (weight.dim() != self.dim())
    fail_arg("weight", "must have as many dimensions as self (" + str(self.dim()) + "), got " + str(weight.dim()));
  size_t sp = static_cast<size_t>(self.dim() - 2);
  for (const auto &l : lists)
    if (l.first.size() != sp)
      fail_arg(l.second, "expected " + std::to_string(sp) + " values (one per spatial dimension of self), got " +
                             std::to_string(l.first.size()));
  in_range(groups, 1, kBig, "groups");
}

__int128 last_index(__int128 offset, Ints size, Ints stride) {
  const __int128 cap = static_cast<__int128>(1) << 100;
  __int128 last = std::min(offset, cap), contiguous = 1;
  for (size_t k = size.size(); k-- > 0;) {
    last = std::min(cap, last + static_cast<__int128>(size[k] - 1) * (stride.empty() ? contiguous : stride[k]));
    contiguous = std::min(contiguous * size[k], static_cast<__int128>(1) << 64);
  }
  return last;
}

bool readable(const at::Tensor &t) {
  return t.defined() && t.numel() > 0 && t.layout() == c10::kStrided && t.device().is_cpu() &&
         !t._is_zerotensor() && !c10::isQIntType(t.scalar_type());
}

}  // namespace util
}  // namespace guard
}  // namespace ctorch
