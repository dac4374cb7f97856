// Parameter initialisation (torch::nn::init) from C: in place, no graph.
#include "core/internal.h"

#include <torch/nn/init.h>

#include <cmath>

using ctorch::Borrowed;

namespace {

torch::nn::init::NonlinearityType nonlinearity_of(int v) {
  switch (v) {
    case CTORCH_NONLINEARITY_LINEAR: return torch::kLinear;
    case CTORCH_NONLINEARITY_CONV1D: return torch::kConv1D;
    case CTORCH_NONLINEARITY_CONV2D: return torch::kConv2D;
    case CTORCH_NONLINEARITY_CONV3D: return torch::kConv3D;
    case CTORCH_NONLINEARITY_CONV_TRANSPOSE1D: return torch::kConvTranspose1D;
    case CTORCH_NONLINEARITY_CONV_TRANSPOSE2D: return torch::kConvTranspose2D;
    case CTORCH_NONLINEARITY_CONV_TRANSPOSE3D: return torch::kConvTranspose3D;
    case CTORCH_NONLINEARITY_SIGMOID: return torch::kSigmoid;
    case CTORCH_NONLINEARITY_TANH: return torch::kTanh;
    case CTORCH_NONLINEARITY_RELU: return torch::kReLU;
    case CTORCH_NONLINEARITY_LEAKY_RELU: return torch::kLeakyReLU;
  }
  ctorch::fail_arg("nonlinearity", "unknown value " + std::to_string(v));
}

torch::nn::init::FanModeType mode_of(int v) {
  if (v == CTORCH_FAN_IN) return torch::kFanIn;
  if (v == CTORCH_FAN_OUT) return torch::kFanOut;
  ctorch::fail_arg("mode", "unknown fan mode " + std::to_string(v));
}

// Every init writes into t: it must be a defined floating tensor.
at::Tensor &target(Borrowed &b, ctorch_tensor t) {
  ctorch::require_tensor(t, "t");
  if (!at::isFloatingType(b->scalar_type()))
    ctorch::fail(CTORCH_TYPE, std::string("argument 't': init needs a floating tensor, got ") + c10::toString(b->scalar_type()));
  return b.get();
}

// fan-based inits need dim >= 2 and no zero-element tensor (libtorch would
// divide by zero and fill with nan/inf without complaint).
void require_fans(const at::Tensor &x) {
  if (x.dim() < 2)
    ctorch::fail_arg("t", "fan in and fan out cannot be computed for a tensor with fewer than 2 dimensions");
  if (x.numel() == 0) ctorch::fail_arg("t", "has no elements");
}

void require_finite(double v, const char *arg) {
  if (!std::isfinite(v)) ctorch::fail_arg(arg, "must be finite");
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_init_calculate_gain(double *out, ctorch_nonlinearity nonlinearity, double param) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = torch::nn::init::calculate_gain(nonlinearity_of(nonlinearity), param);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_init_calculate_fan_in_and_fan_out(int64_t *fan_in, int64_t *fan_out, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_out(fan_in, "fan_in");
  ctorch::require_out(fan_out, "fan_out");
  ctorch::require_tensor(t, "t");
  Borrowed b(t);
  if (b->dim() < 2) ctorch::fail_arg("t", "fan in and fan out cannot be computed for a tensor with fewer than 2 dimensions");
  auto f = torch::nn::init::_calculate_fan_in_and_fan_out(b.get());
  *fan_in = std::get<0>(f);
  *fan_out = std::get<1>(f);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_init_uniform_(ctorch_tensor t, double a, double b) {
  CTORCH_TRY
  Borrowed x(t);
  auto &v = target(x, t);
  require_finite(a, "a");
  require_finite(b, "b");
  if (a > b) ctorch::fail_arg("b", "must be >= a");
  torch::nn::init::uniform_(v, a, b);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_init_normal_(ctorch_tensor t, double mean, double std) {
  CTORCH_TRY
  Borrowed x(t);
  auto &v = target(x, t);
  require_finite(mean, "mean");
  if (!(std >= 0) || std::isinf(std)) ctorch::fail_arg("std", "must be a finite number >= 0");
  torch::nn::init::normal_(v, mean, std);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_init_constant_(ctorch_tensor t, double value) {
  CTORCH_TRY
  Borrowed x(t);
  torch::nn::init::constant_(target(x, t), value);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_init_zeros_(ctorch_tensor t) {
  CTORCH_TRY
  Borrowed x(t);
  torch::nn::init::zeros_(target(x, t));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_init_ones_(ctorch_tensor t) {
  CTORCH_TRY
  Borrowed x(t);
  torch::nn::init::ones_(target(x, t));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_init_xavier_uniform_(ctorch_tensor t, double gain) {
  CTORCH_TRY
  Borrowed x(t);
  auto &v = target(x, t);
  require_fans(v);
  require_finite(gain, "gain");
  torch::nn::init::xavier_uniform_(v, gain);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_init_xavier_normal_(ctorch_tensor t, double gain) {
  CTORCH_TRY
  Borrowed x(t);
  auto &v = target(x, t);
  require_fans(v);
  require_finite(gain, "gain");
  torch::nn::init::xavier_normal_(v, gain);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_init_kaiming_uniform_(ctorch_tensor t, double a, ctorch_fan_mode mode,
                                                      ctorch_nonlinearity nonlinearity) {
  CTORCH_TRY
  Borrowed x(t);
  auto &v = target(x, t);
  require_fans(v);
  require_finite(a, "a");
  torch::nn::init::kaiming_uniform_(v, a, mode_of(mode), nonlinearity_of(nonlinearity));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_init_kaiming_normal_(ctorch_tensor t, double a, ctorch_fan_mode mode,
                                                     ctorch_nonlinearity nonlinearity) {
  CTORCH_TRY
  Borrowed x(t);
  auto &v = target(x, t);
  require_fans(v);
  require_finite(a, "a");
  torch::nn::init::kaiming_normal_(v, a, mode_of(mode), nonlinearity_of(nonlinearity));
  CTORCH_CATCH
}

}  // extern "C"
