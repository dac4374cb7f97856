// Guards of arithmetic and linear-algebra operators declared in the
// "arithmetic and linear algebra" part of guards.h (why each exists is
// written there).
#include "guards_util.h"

#include "core/internal.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <string>

namespace ctorch {
namespace guard {

using namespace util;

namespace {

// The integer type an integer division runs in, or Undefined when it is
// not one that traps (floating point, bool, 8/16-bit types, which C++
// promotes to int before dividing, and unsigned types).
at::ScalarType trapping_type(at::ScalarType t) {
  return t == at::kInt || t == at::kLong ? t : at::ScalarType::Undefined;
}

int64_t type_min(at::ScalarType t) {
  return t == at::kInt ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
}

bool tensor_has(const at::Tensor &t, int64_t v) { return readable(t) && t.eq(v).any().item<bool>(); }

[[noreturn]] void overflow(at::ScalarType t) {
  fail_arg("other", std::string("divides ") + (t == at::kInt ? "INT32_MIN" : "INT64_MIN") + " in self by -1: the " +
                        c10::toString(t) + " quotient overflows (the CPU's division traps on it)");
}

void int_division(const at::Tensor &self, const at::Tensor &other) {
  if (!self.defined() || !other.defined()) return;
  at::ScalarType t = trapping_type(at::result_type(self, other));
  if (t == at::ScalarType::Undefined || !self.device().is_cpu() || !other.device().is_cpu()) return;
  if (tensor_has(other, -1) && tensor_has(self, type_min(t))) overflow(t);
}

void int_division(const at::Tensor &self, const at::Scalar &other) {
  if (!self.defined() || !other.isIntegral(false)) return;
  at::ScalarType t = trapping_type(at::result_type(self, other));
  if (t == at::ScalarType::Undefined || !self.device().is_cpu()) return;
  if (other.toLong() == -1 && tensor_has(self, type_min(t))) overflow(t);
}

void int_division(const at::Scalar &self, const at::Tensor &other) {
  if (!other.defined() || !self.isIntegral(false)) return;
  at::ScalarType t = trapping_type(at::result_type(self, other));
  if (t == at::ScalarType::Undefined || !other.device().is_cpu()) return;
  if (self.toLong() == type_min(t) && tensor_has(other, -1)) overflow(t);
}

// div(rounding_mode=None) is true division (floating point).
bool integer_mode(const c10::optional<c10::string_view> &mode) { return mode.has_value(); }

void power(int64_t n) {
  if (n == std::numeric_limits<int64_t>::min())
    fail_arg("n", "INT64_MIN cannot be negated (the kernel inverts the matrix and raises it to -n)");
}

// The LAPACK routines named in guards.h, on CPU input.
void finite(const at::Tensor &t, const char *arg, const char *routine) {
  if (!readable(t) || !(at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()))) return;
  if (!at::isfinite(t).all().item<bool>())
    fail_arg(arg, std::string("contains NaN or infinity, which LAPACK's ") + routine +
                      " does not survive on every build (it never returns, exits or corrupts memory)");
}

// lstsq's drivers gelsd and gelss go through an SVD; the CPU default,
// gelsy, and gels do not.
void lstsq(const at::Tensor &self, const at::Tensor &b, const c10::optional<c10::string_view> &driver) {
  if (!driver.has_value() || (*driver != "gelsd" && *driver != "gelss")) return;
  finite(self, "self", "?gelsd/?gelss");
  finite(b, "b", "?gelsd/?gelss");
}

}  // namespace

void div_Tensor_mode(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> mode) {
  if (integer_mode(mode)) int_division(self, other);
}
void div_Scalar_mode(const at::Tensor &self, const at::Scalar &other, c10::optional<c10::string_view> mode) {
  if (integer_mode(mode)) int_division(self, other);
}
void div__Tensor_mode(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> mode) {
  if (integer_mode(mode)) int_division(self, other);
}
void div__Scalar_mode(const at::Tensor &self, const at::Scalar &other, c10::optional<c10::string_view> mode) {
  if (integer_mode(mode)) int_division(self, other);
}
void div_out_mode(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> mode,
                  const at::Tensor &) {
  if (integer_mode(mode)) int_division(self, other);
}
void divide_Tensor_mode(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> mode) {
  if (integer_mode(mode)) int_division(self, other);
}
void divide_Scalar_mode(const at::Tensor &self, const at::Scalar &other, c10::optional<c10::string_view> mode) {
  if (integer_mode(mode)) int_division(self, other);
}
void divide__Tensor_mode(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> mode) {
  if (integer_mode(mode)) int_division(self, other);
}
void divide__Scalar_mode(const at::Tensor &self, const at::Scalar &other, c10::optional<c10::string_view> mode) {
  if (integer_mode(mode)) int_division(self, other);
}
void divide_out_mode(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> mode,
                     const at::Tensor &) {
  if (integer_mode(mode)) int_division(self, other);
}
void floor_divide(const at::Tensor &self, const at::Tensor &other) { int_division(self, other); }
void floor_divide_Scalar(const at::Tensor &self, const at::Scalar &other) { int_division(self, other); }
void floor_divide__Tensor(const at::Tensor &self, const at::Tensor &other) { int_division(self, other); }
void floor_divide__Scalar(const at::Tensor &self, const at::Scalar &other) { int_division(self, other); }
void floor_divide_out(const at::Tensor &self, const at::Tensor &other, const at::Tensor &) {
  int_division(self, other);
}
void fmod_Scalar(const at::Tensor &self, const at::Scalar &other) { int_division(self, other); }
void fmod_Scalar_out(const at::Tensor &self, const at::Scalar &other, const at::Tensor &) {
  int_division(self, other);
}
void fmod_Tensor(const at::Tensor &self, const at::Tensor &other) { int_division(self, other); }
void fmod_Tensor_out(const at::Tensor &self, const at::Tensor &other, const at::Tensor &) {
  int_division(self, other);
}
void fmod__Scalar(const at::Tensor &self, const at::Scalar &other) { int_division(self, other); }
void fmod__Tensor(const at::Tensor &self, const at::Tensor &other) { int_division(self, other); }
void remainder_Scalar(const at::Tensor &self, const at::Scalar &other) { int_division(self, other); }
void remainder_Scalar_out(const at::Tensor &self, const at::Scalar &other, const at::Tensor &) {
  int_division(self, other);
}
void remainder_Tensor(const at::Tensor &self, const at::Tensor &other) { int_division(self, other); }
void remainder_Tensor_out(const at::Tensor &self, const at::Tensor &other, const at::Tensor &) {
  int_division(self, other);
}
void remainder__Scalar(const at::Tensor &self, const at::Scalar &other) { int_division(self, other); }
void remainder__Tensor(const at::Tensor &self, const at::Tensor &other) { int_division(self, other); }
void remainder_Scalar_Tensor(const at::Scalar &self, const at::Tensor &other) { int_division(self, other); }

void linalg_matrix_power(const at::Tensor &, int64_t n) { power(n); }
void linalg_matrix_power_out(const at::Tensor &, int64_t n, const at::Tensor &) { power(n); }
void matrix_power(const at::Tensor &, int64_t n) { power(n); }
void matrix_power_out(const at::Tensor &, int64_t n, const at::Tensor &) { power(n); }

void svd(const at::Tensor &self, bool, bool) { finite(self, "self", "?gesdd"); }
void svd_U(const at::Tensor &self, bool, bool, const at::Tensor &, const at::Tensor &, const at::Tensor &) {
  finite(self, "self", "?gesdd");
}
void linalg_svd(const at::Tensor &A, bool, c10::optional<c10::string_view>) { finite(A, "A", "?gesdd"); }
void linalg_svd_U(const at::Tensor &A, bool, c10::optional<c10::string_view>, const at::Tensor &, const at::Tensor &,
                  const at::Tensor &) {
  finite(A, "A", "?gesdd");
}
void _linalg_svd(const at::Tensor &A, bool, bool, c10::optional<c10::string_view>) { finite(A, "A", "?gesdd"); }
void _linalg_svd_U(const at::Tensor &A, bool, bool, c10::optional<c10::string_view>, const at::Tensor &,
                   const at::Tensor &, const at::Tensor &) {
  finite(A, "A", "?gesdd");
}
// hermitian = true takes ?syevd, which reports non-finite input itself.
void linalg_pinv(const at::Tensor &self, double, bool hermitian) {
  if (!hermitian) finite(self, "self", "?gesdd");
}
void linalg_pinv_out(const at::Tensor &self, double, bool hermitian, const at::Tensor &) {
  if (!hermitian) finite(self, "self", "?gesdd");
}
void linalg_pinv_rcond_tensor(const at::Tensor &self, const at::Tensor &, bool hermitian) {
  if (!hermitian) finite(self, "self", "?gesdd");
}
void linalg_pinv_out_rcond_tensor(const at::Tensor &self, const at::Tensor &, bool hermitian, const at::Tensor &) {
  if (!hermitian) finite(self, "self", "?gesdd");
}
void linalg_pinv_atol_rtol_float(const at::Tensor &self, c10::optional<double>, c10::optional<double>,
                                 bool hermitian) {
  if (!hermitian) finite(self, "self", "?gesdd");
}
void linalg_pinv_atol_rtol_float_out(const at::Tensor &self, c10::optional<double>, c10::optional<double>,
                                     bool hermitian, const at::Tensor &) {
  if (!hermitian) finite(self, "self", "?gesdd");
}
void linalg_pinv_atol_rtol_tensor(const at::Tensor &self, const OptTensor &, const OptTensor &, bool hermitian) {
  if (!hermitian) finite(self, "self", "?gesdd");
}
void linalg_pinv_atol_rtol_tensor_out(const at::Tensor &self, const OptTensor &, const OptTensor &, bool hermitian,
                                      const at::Tensor &) {
  if (!hermitian) finite(self, "self", "?gesdd");
}
void pinverse(const at::Tensor &self, double) { finite(self, "self", "?gesdd"); }
void linalg_lstsq(const at::Tensor &self, const at::Tensor &b, c10::optional<double>,
                  c10::optional<c10::string_view> driver) {
  lstsq(self, b, driver);
}
void linalg_lstsq_out(const at::Tensor &self, const at::Tensor &b, c10::optional<double>,
                      c10::optional<c10::string_view> driver, const at::Tensor &, const at::Tensor &,
                      const at::Tensor &, const at::Tensor &) {
  lstsq(self, b, driver);
}
void linalg_eig(const at::Tensor &self) { finite(self, "self", "?geev"); }
void linalg_eig_out(const at::Tensor &self, const at::Tensor &, const at::Tensor &) { finite(self, "self", "?geev"); }
void linalg_eigvals(const at::Tensor &self) { finite(self, "self", "?geev"); }
void linalg_eigvals_out(const at::Tensor &self, const at::Tensor &) { finite(self, "self", "?geev"); }
void _linalg_eigvals(const at::Tensor &self) { finite(self, "self", "?geev"); }

void unfold(const at::Tensor &, int64_t, int64_t size, int64_t step) {
  in_range(size, 0, std::numeric_limits<int64_t>::max(), "size");
  in_range(step, 1, std::numeric_limits<int64_t>::max(), "step");
}
void unfold_copy(const at::Tensor &self, int64_t dimension, int64_t size, int64_t step) {
  unfold(self, dimension, size, step);
}
void unfold_copy_out(const at::Tensor &self, int64_t dimension, int64_t size, int64_t step, const at::Tensor &) {
  unfold(self, dimension, size, step);
}
void max_unpool2d(const at::Tensor &, const at::Tensor &, Ints output_size) {
  all_in_range(output_size, 0, kBig, "output_size");
}
void max_unpool2d_out(const at::Tensor &, const at::Tensor &, Ints output_size, const at::Tensor &) {
  all_in_range(output_size, 0, kBig, "output_size");
}
void max_unpool3d(const at::Tensor &, const at::Tensor &, Ints output_size, Ints, Ints) {
  all_in_range(output_size, 0, kBig, "output_size");
}
void max_unpool3d_out(const at::Tensor &, const at::Tensor &, Ints output_size, Ints, Ints, const at::Tensor &) {
  all_in_range(output_size, 0, kBig, "output_size");
}
void embedding_backward(const at::Tensor &, const at::Tensor &, int64_t num_weights, int64_t, bool, bool) {
  in_range(num_weights, 0, kBig, "num_weights");
}
void embedding_dense_backward(const at::Tensor &, const at::Tensor &, int64_t num_weights, int64_t, bool) {
  in_range(num_weights, 0, kBig, "num_weights");
}
void embedding_sparse_backward(const at::Tensor &, const at::Tensor &, int64_t num_weights, int64_t, bool) {
  in_range(num_weights, 0, kBig, "num_weights");
}
void linalg_tensorinv(const at::Tensor &self, int64_t ind) {
  if (self.defined()) in_range(ind, 1, std::max<int64_t>(self.dim(), 1), "ind");
}
void linalg_tensorinv_out(const at::Tensor &self, int64_t ind, const at::Tensor &) {
  if (self.defined()) in_range(ind, 1, std::max<int64_t>(self.dim(), 1), "ind");
}

// ---- Sobol engine ----------------------------------------------------------

namespace {

// The largest count of trailing one bits (libtorch's rightmost_zero) among
// first .. first + n - 1 (n > 0, no overflow; negative values have none:
// -3 % 2 == -1 stops libtorch's loop at once). A value with k trailing ones
// exists in the range when the smallest one at or above the range's start,
// start | (2^k - 1), lies in it.
int64_t highest_rightmost_zero(int64_t first, int64_t n) {
  int64_t last = first + (n - 1);
  if (last < 0) return 0;
  uint64_t a = static_cast<uint64_t>(std::max<int64_t>(first, 0)), b = static_cast<uint64_t>(last);
  for (int k = 63; k > 0; --k) {
    uint64_t mask = (uint64_t(1) << k) - 1;
    if ((a | mask) <= b) return k;
  }
  return 0;
}

void sobol(const at::Tensor &quasi, const char *quasi_name, int64_t n, const at::Tensor &state, int64_t dimension,
           int64_t num_generated) {
  if (n <= 0 || dimension <= 0 || !quasi.defined() || !state.defined()) return;  // no element is touched
  if (num_generated > 0 && n > std::numeric_limits<int64_t>::max() - num_generated)
    fail_arg("n", "num_generated + n overflows int64 (" + std::to_string(num_generated) + " + " + std::to_string(n) +
                      ")");
  if (quasi.dim() < 1 || quasi.numel() == 0 || quasi.size(0) < dimension)
    fail_arg(quasi_name, "must have at least dimension = " + std::to_string(dimension) + " rows, got sizes " +
                             c10::str(quasi.sizes()));
  if (state.dim() < 2) return;  // libtorch refuses it (stride(1))
  int64_t bits = highest_rightmost_zero(num_generated, n) + 1;
  if (state.numel() == 0 || state.size(0) < dimension || state.size(1) < bits)
    fail_arg("sobolstate", "must be at least [dimension, " + std::to_string(bits) + "] = [" + std::to_string(dimension) +
                               ", " + std::to_string(bits) + "] for draws " + std::to_string(num_generated) + " .. " +
                               std::to_string(num_generated) + " + " + std::to_string(n) + ", got sizes " +
                               c10::str(state.sizes()));
}

}  // namespace

void _sobol_engine_draw(const at::Tensor &quasi, int64_t n, const at::Tensor &sobolstate, int64_t dimension,
                        int64_t num_generated, c10::optional<at::ScalarType>) {
  sobol(quasi, "quasi", n, sobolstate, dimension, num_generated);
}

void _sobol_engine_ff_(const at::Tensor &self, int64_t n, const at::Tensor &sobolstate, int64_t dimension,
                       int64_t num_generated) {
  sobol(self, "self", n, sobolstate, dimension, num_generated);
}

void _sobol_engine_scramble_(const at::Tensor &self, const at::Tensor &ltm, int64_t dimension) {
  constexpr int64_t kMaxBit = 30;  // SobolEngineOpsUtils.h's MAXBIT
  if (dimension <= 0 || !self.defined() || !ltm.defined()) return;
  if (self.dim() == 2 && (self.size(0) < dimension || self.size(1) < kMaxBit))
    fail_arg("self", "must be at least [dimension, 30] = [" + std::to_string(dimension) + ", 30], got sizes " +
                         c10::str(self.sizes()));
  if (ltm.dim() == 3 && (ltm.size(0) < dimension || ltm.size(1) < kMaxBit))
    fail_arg("ltm", "must be at least [dimension, 30, n] = [" + std::to_string(dimension) + ", 30, n], got sizes " +
                        c10::str(ltm.sizes()));
}

}  // namespace guard
}  // namespace ctorch
