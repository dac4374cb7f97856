// Helpers used only by the generated operator wrappers (copied next to the
// generated shards at build time). The C++ spelling of ATen parameter types
// lives here, so the generator's output stays the same across libtorch
// versions; where a spelling differs between versions, the helper calls the
// named shim in shim/compat.h.
#pragma once

#include "core/internal.h"
#include "core/storage_write.h"

#include <ATen/core/ATen_fwd.h>
#ifdef CTORCH_GEN_DIMNAME  // see dimname() below
#include <ATen/core/Dimname.h>
#endif
#include <c10/core/SymIntArrayRef.h>
#include <c10/util/OptionalArrayRef.h>

#include <c10/util/SmallVector.h>

#include <array>
#include <vector>

namespace ctorch_gen {

// Tensor? argument viewed without reference-count traffic (like
// ctorch::Borrowed): the optional adopts the caller's reference for the
// duration of the call and gives it back un-decremented. NULL is none; a
// handle that is not live is INVALID_ARGUMENT naming `arg`.
class BorrowedOpt {
 public:
  BorrowedOpt(ctorch_tensor h, const char *arg) {
    if (!h) return;
    c10::TensorImpl *p = ctorch::tensor_live(h);
    if (C10_UNLIKELY(!p)) ctorch::fail_tensor(h, arg);
    o_.emplace(ctorch::TensorImplPtr::reclaim(p));
  }
  ~BorrowedOpt() {
    if (o_.has_value()) o_->unsafeReleaseTensorImpl();
  }
  BorrowedOpt(const BorrowedOpt &) = delete;
  BorrowedOpt &operator=(const BorrowedOpt &) = delete;
  const c10::optional<at::Tensor> &get() const noexcept { return o_; }

 private:
  c10::optional<at::Tensor> o_;
};

// The resize family (resize_, resize_as_, ...) in libtorch 1.13 writes the
// new sizes before it can fail (negative size, allocation failure) and leaves
// them in place when it does: the next op then reads past the storage. This
// restores a strided tensor's sizes, strides and offset unless committed.
class ShapeGuard {
 public:
  explicit ShapeGuard(const at::Tensor &t)
      : impl_(t.defined() && t.layout() == c10::kStrided ? t.unsafeGetTensorImpl() : nullptr) {
    if (!impl_) return;
    sizes_.assign(impl_->sizes().begin(), impl_->sizes().end());
    strides_.assign(impl_->strides().begin(), impl_->strides().end());
    offset_ = impl_->storage_offset();
  }
  ~ShapeGuard() {
    if (!impl_ || committed_) return;
    try {
      impl_->set_sizes_and_strides(sizes_, strides_);
      impl_->set_storage_offset(offset_);
    } catch (...) {
      // Nothing better to do: the original error is being reported.
    }
  }
  ShapeGuard(const ShapeGuard &) = delete;
  ShapeGuard &operator=(const ShapeGuard &) = delete;
  void commit() noexcept { committed_ = true; }

 private:
  c10::TensorImpl *impl_;
  c10::SmallVector<int64_t, 6> sizes_, strides_;
  int64_t offset_ = 0;
  bool committed_ = false;
};

// Length 0 is PyTorch's []: an ArrayRef with a NULL data(), which is what
// Python's argument parser builds from an empty list. Kernels may read a
// NULL data() as "not given" (set_.source_Tensor_storage_offset with
// stride=[] means contiguous), so the caller's pointer, NULL or not, must
// not reach them when the length is 0.
inline at::IntArrayRef int_list(const int64_t *p, size_t n) { return at::IntArrayRef(n ? p : nullptr, n); }
inline c10::SymIntArrayRef sym_int_list(const int64_t *p, size_t n) {
  return ctorch::compat::sym_int_array(int_list(p, n));
}
inline at::ArrayRef<double> double_list(const double *p, size_t n) { return at::ArrayRef<double>(n ? p : nullptr, n); }
// int[]? / SymInt[]? / float[]?: a NULL pointer is None, a non-NULL one with
// length 0 is [].
inline at::OptionalIntArrayRef opt_int_list(const int64_t *p, size_t n) {
  if (!p) return c10::nullopt;
  return int_list(p, n);
}
inline at::OptionalSymIntArrayRef opt_sym_int_list(const int64_t *p, size_t n) {
  if (!p) return c10::nullopt;
  return sym_int_list(p, n);
}
inline c10::optional<at::ArrayRef<double>> opt_double_list(const double *p, size_t n) {
  if (!p) return c10::nullopt;
  return double_list(p, n);
}

// A tensor to be written whose elements share memory (an expanded view):
// libtorch's TensorIterator kernels refuse one ("more than one element of the
// written-to tensor refers to a single memory location"); the others write
// numel elements through its data pointer, past its storage (1.13:
// _softmax.out, narrow_copy.out, log_sigmoid_forward.output,
// reflection_pad1d.out, ...). A zero tensor (_efficientzerotensor) has no
// storage to write (1.13: kron.out resized it through NULL).
void require_writable(const at::Tensor &t, const char *arg);
// Kept for the guards: the overlap half of require_writable.
void require_no_overlap(const at::Tensor &t, const char *arg);

// An out= argument (every keyword-only Tensor(a!) of a schema). Unlike the
// other arguments it holds a reference rather than borrowing the caller's:
// some kernels assign a new tensor to their out parameter instead of writing
// into it (1.13: quantized mean.out, `result = quantize_per_tensor(...)`),
// which on a borrowed tensor drops the caller's reference (use after free)
// and leaks the new one. check() afterwards reports that as an error: the
// caller's tensor does not hold the result. Its storage is held for the call
// (ctorch::WriteHold).
[[noreturn, gnu::cold, gnu::noinline]] void fail_out_replaced(const char *arg);
class OutArg {
 public:
  OutArg(ctorch_tensor h, const char *arg) : t_(ctorch::own(h)), impl_(t_.unsafeGetTensorImpl()), arg_(arg) {
    require_writable(t_, arg);
    hold_.hold(t_, arg);
  }
  // Inline at the wrappers' -O1 too (CMakeLists.txt), as at -O2.
  C10_ALWAYS_INLINE ~OutArg() = default;
  at::Tensor &get() noexcept { return t_; }
  void check() const {
    if (C10_UNLIKELY(t_.unsafeGetTensorImpl() != impl_)) fail_out_replaced(arg_);
  }

 private:
  at::Tensor t_;
  c10::TensorImpl *impl_;
  const char *arg_;
  ctorch::WriteHold hold_;
};

// int[N] / SymInt[N] with N >= 2, checked as the schema says: libtorch's
// kernels index such a list up to N-1 without looking at its length (1.13:
// reflection_pad1d with padding=[], max_unpool2d with output_size=[],
// to_sparse_bsr with blocksize=[] read past the caller's array). As Python's
// argument parser does, one value stands for all N; an empty list is kept
// only where the schema's default is [] (pooling's stride: "as kernel_size").
[[noreturn, gnu::cold, gnu::noinline]] void fail_fixed_list(const char *arg, size_t want, size_t got);
template <size_t N>
class FixedInts {
 public:
  FixedInts(const int64_t *p, size_t n, const char *arg, bool empty_ok) {
    ctorch::require_list(p, n, arg);
    if (n == N) {
      for (size_t i = 0; i < N; ++i) v_[i] = p[i];
      n_ = N;
    } else if (n == 1) {
      v_.fill(p[0]);
      n_ = N;
    } else if (!(n == 0 && empty_ok)) {
      fail_fixed_list(arg, N, n);
    }
  }
  at::IntArrayRef ref() const { return at::IntArrayRef(v_.data(), n_); }
  c10::SymIntArrayRef sym_ref() const { return ctorch::compat::sym_int_array(ref()); }

 private:
  std::array<int64_t, N> v_{};
  size_t n_ = 0;
};

template <size_t N>
std::array<bool, N> bool_array(const int *p, size_t n, const char *arg) {
  if (n != N) ctorch::fail_arg(arg, "expected " + std::to_string(N) + " values, got " + std::to_string(n));
  ctorch::require_list(p, n, arg);
  std::array<bool, N> a{};
  for (size_t i = 0; i < N; ++i) a[i] = p[i] != 0;
  return a;
}

std::vector<at::Scalar> scalar_list(const ctorch_scalar *p, size_t n, const char *arg);

inline void require_str(const char *s, const char *arg) {
  if (!s) ctorch::fail_arg(arg, "string is NULL");
}

// Dimension names (named tensors) are passed as C strings.
#ifdef CTORCH_GEN_DIMNAME
// Named tensors: only while the yaml has Dimname arguments (1.13 does;
// PyTorch dropped them from its schemas and headers by 2.15). generate.cmake
// defines CTORCH_GEN_DIMNAME from the yaml itself.
at::Dimname dimname(const char *s, const char *arg);
std::vector<at::Dimname> dimname_list(const char *const *p, size_t n, const char *arg);
#endif

c10::DeviceIndex device_index(int64_t v, const char *arg);

inline int64_t sym_to_int(const c10::SymInt &s) { return s.expect_int(); }

}  // namespace ctorch_gen
