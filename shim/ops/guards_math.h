// Guards of arithmetic, linear algebra, random engines and the zero
// factories (guards_math.cpp, and the few after them that guards_tensor.cpp
// defines); the rule, the tags and how the generator reads these
// declarations: guards.h, which includes this file at its end (moved out of
// it when it passed 800 lines; one declaration per line start, as there).
#pragma once

namespace ctorch {
namespace guard {

// [crash] Integer division of the type's minimum by -1 overflows, and x86's idiv
// traps on it: SIGFPE in floor_divide/fmod/remainder/div(rounding_mode) on
// int32 or int64 tensors (libtorch 1.13 and 2.x; Python crashes the same
// way). Refused when the computation is int32/int64 on the CPU and both a
// -1 divisor and a minimum dividend are present (two extra reductions, on
// integer division only; floating point is not affected).
void div_Tensor_mode(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> rounding_mode);
void div_Scalar_mode(const at::Tensor &self, const at::Scalar &other, c10::optional<c10::string_view> rounding_mode);
void div__Tensor_mode(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> rounding_mode);
void div__Scalar_mode(const at::Tensor &self, const at::Scalar &other, c10::optional<c10::string_view> rounding_mode);
void div_out_mode(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> rounding_mode,
                  const at::Tensor &out);
void divide_Tensor_mode(const at::Tensor &self, const at::Tensor &other,
                        c10::optional<c10::string_view> rounding_mode);
void divide_Scalar_mode(const at::Tensor &self, const at::Scalar &other,
                        c10::optional<c10::string_view> rounding_mode);
void divide__Tensor_mode(const at::Tensor &self, const at::Tensor &other,
                         c10::optional<c10::string_view> rounding_mode);
void divide__Scalar_mode(const at::Tensor &self, const at::Scalar &other,
                         c10::optional<c10::string_view> rounding_mode);
void divide_out_mode(const at::Tensor &self, const at::Tensor &other, c10::optional<c10::string_view> rounding_mode,
                     const at::Tensor &out);
void floor_divide(const at::Tensor &self, const at::Tensor &other);
void floor_divide_Scalar(const at::Tensor &self, const at::Scalar &other);
void floor_divide__Tensor(const at::Tensor &self, const at::Tensor &other);
void floor_divide__Scalar(const at::Tensor &self, const at::Scalar &other);
void floor_divide_out(const at::Tensor &self, const at::Tensor &other, const at::Tensor &out);
void fmod_Scalar(const at::Tensor &self, const at::Scalar &other);
void fmod_Scalar_out(const at::Tensor &self, const at::Scalar &other, const at::Tensor &out);
void fmod_Tensor(const at::Tensor &self, const at::Tensor &other);
void fmod_Tensor_out(const at::Tensor &self, const at::Tensor &other, const at::Tensor &out);
void fmod__Scalar(const at::Tensor &self, const at::Scalar &other);
void fmod__Tensor(const at::Tensor &self, const at::Tensor &other);
void remainder_Scalar(const at::Tensor &self, const at::Scalar &other);
void remainder_Scalar_out(const at::Tensor &self, const at::Scalar &other, const at::Tensor &out);
void remainder_Tensor(const at::Tensor &self, const at::Tensor &other);
void remainder_Tensor_out(const at::Tensor &self, const at::Tensor &other, const at::Tensor &out);
void remainder__Scalar(const at::Tensor &self, const at::Scalar &other);
void remainder__Tensor(const at::Tensor &self, const at::Tensor &other);
void remainder_Scalar_Tensor(const at::Scalar &self, const at::Tensor &other);
// [crash] libtorch 1.13 and 2.x: matrix_power with n = INT64_MIN negates n (signed
// overflow: still negative) and then squares without end (timeout).
void linalg_matrix_power(const at::Tensor &self, int64_t n);
void linalg_matrix_power_out(const at::Tensor &self, int64_t n, const at::Tensor &out);
void matrix_power(const at::Tensor &self, int64_t n);
void matrix_power_out(const at::Tensor &self, int64_t n, const at::Tensor &out);
// [crash] libtorch 1.13 with Debian's LAPACK: ?gesdd computing singular vectors of
// a matrix holding an infinity never returns (torch.linalg.svd hangs in
// Python too), and ?gelss (lstsq driver "gelss") likewise; ?gelsd calls
// xerbla, which exits the process. ?geev on NaN input corrupts the heap
// (linalg_eigvals, found by the sweep under ASan). libtorch 2.x reports
// such input as an error after LAPACK ("failed to converge ... non-finite
// values"); ctorch refuses it before, on every version, on CPU tensors
// (one isfinite pass, next to an O(n^3) factorisation).
void svd(const at::Tensor &self, bool some, bool compute_uv);
void svd_U(const at::Tensor &self, bool some, bool compute_uv, const at::Tensor &U, const at::Tensor &S,
           const at::Tensor &V);
void linalg_svd(const at::Tensor &A, bool full_matrices, c10::optional<c10::string_view> driver);
void linalg_svd_U(const at::Tensor &A, bool full_matrices, c10::optional<c10::string_view> driver,
                  const at::Tensor &U, const at::Tensor &S, const at::Tensor &Vh);
void _linalg_svd(const at::Tensor &A, bool full_matrices, bool compute_uv, c10::optional<c10::string_view> driver);
void _linalg_svd_U(const at::Tensor &A, bool full_matrices, bool compute_uv, c10::optional<c10::string_view> driver,
                   const at::Tensor &U, const at::Tensor &S, const at::Tensor &Vh);
void linalg_pinv(const at::Tensor &self, double rcond, bool hermitian);
void linalg_pinv_out(const at::Tensor &self, double rcond, bool hermitian, const at::Tensor &out);
void linalg_pinv_rcond_tensor(const at::Tensor &self, const at::Tensor &rcond, bool hermitian);
void linalg_pinv_out_rcond_tensor(const at::Tensor &self, const at::Tensor &rcond, bool hermitian,
                                  const at::Tensor &out);
void linalg_pinv_atol_rtol_float(const at::Tensor &self, c10::optional<double> atol, c10::optional<double> rtol,
                                 bool hermitian);
void linalg_pinv_atol_rtol_float_out(const at::Tensor &self, c10::optional<double> atol,
                                     c10::optional<double> rtol, bool hermitian, const at::Tensor &out);
void linalg_pinv_atol_rtol_tensor(const at::Tensor &self, const OptTensor &atol, const OptTensor &rtol,
                                  bool hermitian);
void linalg_pinv_atol_rtol_tensor_out(const at::Tensor &self, const OptTensor &atol, const OptTensor &rtol,
                                      bool hermitian, const at::Tensor &out);
void pinverse(const at::Tensor &self, double rcond);
void linalg_lstsq(const at::Tensor &self, const at::Tensor &b, c10::optional<double> rcond,
                  c10::optional<c10::string_view> driver);
void linalg_lstsq_out(const at::Tensor &self, const at::Tensor &b, c10::optional<double> rcond,
                      c10::optional<c10::string_view> driver, const at::Tensor &solution, const at::Tensor &residuals,
                      const at::Tensor &rank, const at::Tensor &singular_values);
void linalg_eig(const at::Tensor &self);
void linalg_eig_out(const at::Tensor &self, const at::Tensor &eigenvalues, const at::Tensor &eigenvectors);
void linalg_eigvals(const at::Tensor &self);
void linalg_eigvals_out(const at::Tensor &self, const at::Tensor &out);
void _linalg_eigvals(const at::Tensor &self);
// [crash] libtorch 1.13 and 2.x (the same loops): _sobol_engine_draw and
// _sobol_engine_ff_ read and write quasi/self[j * stride(0)] for j <
// dimension and read sobolstate[j, l] for l the rightmost zero bit of
// num_generated .. num_generated + n - 1, checking neither tensor has them:
// int64 [2,3] tensors with n = dimension = num_generated = 7 write past the
// 48-byte buffers (heap corruption, returned OK; found by calling every
// operator). Python's SobolEngine always passes [dimension] and
// [dimension, 30+] tensors. Refused exactly where the loops would leave the
// tensors: quasi/self with fewer than `dimension` rows (or no elements),
// sobolstate of fewer than 2 dimensions, `dimension` rows or the highest
// bit position the draws reach; and num_generated + n past INT64_MAX
// (signed overflow in the loop counter).
void _sobol_engine_draw(const at::Tensor &quasi, int64_t n, const at::Tensor &sobolstate, int64_t dimension,
                        int64_t num_generated, c10::optional<at::ScalarType> dtype);
void _sobol_engine_ff_(const at::Tensor &self, int64_t n, const at::Tensor &sobolstate, int64_t dimension,
                       int64_t num_generated);
// [crash] libtorch 1.13 and 2.x: _sobol_engine_scramble_ reads and writes
// self[d][j] and reads the row sums of ltm [d][p] for d < dimension and j,
// p < 30 (MAXBIT) through unchecked accessors; Python passes a [dimension,
// 30] state and [dimension, 30, 30] ltm. The same family as above (found
// while guarding it): refused unless self has at least [dimension, 30] and
// ltm at least [dimension, 30, n] (the accessors refuse other ranks).
void _sobol_engine_scramble_(const at::Tensor &self, const at::Tensor &ltm, int64_t dimension);
// [crash] libtorch 1.13 and 2.x: zero_ of an MKLDNN tensor (mkldnn_zero_)
// writes float32 zeros over numel elements whatever the dtype: a uint8 or
// bfloat16 one (both accepted by the MKLDNN layout) is overrun by 3x or 2x
// (heap-buffer-overflow, found by the in-process fuzz_interp; Python's
// torch.zeros(5, layout=torch._mkldnn, dtype=torch.uint8) overruns too).
// Refused for every entry point that zeroes such a tensor.
void zero_(const at::Tensor &self);
void zeros(Ints size, c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
           c10::optional<at::Device> device, c10::optional<bool> pin_memory);
void zeros_names(Ints size, c10::optional<at::DimnameList> names, c10::optional<at::ScalarType> dtype,
                 c10::optional<at::Layout> layout, c10::optional<at::Device> device, c10::optional<bool> pin_memory);
void zeros_out(Ints size, const at::Tensor &out);
void new_zeros(const at::Tensor &self, Ints size, c10::optional<at::ScalarType> dtype,
               c10::optional<at::Layout> layout, c10::optional<at::Device> device, c10::optional<bool> pin_memory);
// [crash] libtorch 1.13: permute of a 0-dim sparse COO tensor dereferences
// NULL in permute_sparse_coo (SIGSEGV; Python's t.permute(()) too; found by
// the in-process fuzz_interp). 2.x returns the tensor: refused on 1.x only.
void permute(const at::Tensor &self, Ints dims);

}  // namespace guard
}  // namespace ctorch
