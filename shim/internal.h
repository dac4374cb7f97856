// Private C++ helpers shared by the hand-written core and the generated
// wrappers. Kept small: every generated translation unit includes it, so
// anything heavy here multiplies build time.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/Generator.h>
#include <ATen/core/List.h>
#include <c10/core/Scalar.h>
#include <c10/util/Optional.h>

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "ctorch.h"

// A list handle: owned tensors. Defined here so the generator and the core
// agree on it.
struct ctorch_tensor_list_s {
  std::vector<at::Tensor> items;
};
struct ctorch_generator_s {
  at::Generator gen;
};

namespace ctorch {

using TensorImplPtr = c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

// An error carrying its own status; thrown by argument checks inside a
// CTORCH_TRY block. `what()` must not name the function: the catch adds it.
class StatusError : public std::exception {
 public:
  StatusError(ctorch_status status, std::string msg) : status_(status), msg_(std::move(msg)) {}
  const char *what() const noexcept override { return msg_.c_str(); }
  ctorch_status status() const noexcept { return status_; }

 private:
  ctorch_status status_;
  std::string msg_;
};

[[noreturn]] void fail(ctorch_status status, const std::string &msg);
// "argument 'NAME': MSG" with INVALID_ARGUMENT.
[[noreturn]] void fail_arg(const char *arg, const std::string &msg);

// Records the exception in flight as this thread's last error, prefixed by
// `fn`, and returns its status. Call only from a catch block.
ctorch_status translate_exception(const char *fn) noexcept;
// Records an error without an exception (for early argument checks).
ctorch_status set_error(const char *fn, ctorch_status status, const std::string &msg) noexcept;

// ---- handles -------------------------------------------------------------

inline c10::TensorImpl *impl_of(ctorch_tensor h) { return reinterpret_cast<c10::TensorImpl *>(h); }

// Views a borrowed handle as an at::Tensor without touching the reference
// count (no atomics on the hot path). NULL becomes the undefined tensor.
class Borrowed {
 public:
  explicit Borrowed(ctorch_tensor h) noexcept {
    new (&t_) at::Tensor(TensorImplPtr::reclaim(h ? impl_of(h) : c10::UndefinedTensorImpl::singleton()));
  }
  ~Borrowed() { t_.unsafeReleaseTensorImpl(); }
  Borrowed(const Borrowed &) = delete;
  Borrowed &operator=(const Borrowed &) = delete;
  at::Tensor &get() noexcept { return t_; }
  const at::Tensor &get() const noexcept { return t_; }
  operator at::Tensor &() noexcept { return t_; }
  operator const at::Tensor &() const noexcept { return t_; }
  const at::Tensor *operator->() const noexcept { return &t_; }
  at::Tensor *operator->() noexcept { return &t_; }

 private:
  union {
    at::Tensor t_;
  };
};

// Transfers one reference of `t` to a new handle (NULL if undefined).
inline ctorch_tensor give(at::Tensor &&t) noexcept {
  if (!t.defined()) return nullptr;
  return reinterpret_cast<ctorch_tensor>(t.unsafeReleaseTensorImpl());
}
inline ctorch_tensor give(const at::Tensor &t) noexcept { return give(at::Tensor(t)); }

// Borrowed handle -> owned at::Tensor (one new reference), e.g. to store it.
inline at::Tensor own(ctorch_tensor h) { return Borrowed(h).get(); }

// Throws INVALID_ARGUMENT if a required tensor handle is NULL.
inline void require_tensor(ctorch_tensor h, const char *arg) {
  if (!h) fail_arg(arg, "tensor handle is NULL (undefined tensor not allowed here)");
}
template <class T>
inline void require_out(T *p, const char *arg) {
  if (!p) fail_arg(arg, "output pointer is NULL");
}
// A list argument: ptr may be NULL only when len is 0.
template <class T>
inline void require_list(const T *p, size_t len, const char *arg) {
  if (!p && len) fail_arg(arg, "pointer is NULL but length is " + std::to_string(len));
}

// Borrowed handles -> owned tensors for Tensor[] arguments (NULL rejected).
std::vector<at::Tensor> tensor_list(const ctorch_tensor *p, size_t n, const char *arg);
// For Tensor?[] arguments (NULL entries = none).
c10::List<c10::optional<at::Tensor>> opt_tensor_list(const ctorch_tensor *p, size_t n, const char *arg);
inline c10::optional<at::Tensor> opt_tensor(ctorch_tensor h) {
  if (!h) return c10::nullopt;
  return own(h);
}

// Generator? arguments: NULL = the default generator.
inline c10::optional<at::Generator> opt_generator(ctorch_generator g) {
  if (!g) return c10::nullopt;
  return g->gen;
}

// New list handle owning `v`.
inline ctorch_tensor_list give_list(std::vector<at::Tensor> &&v) {
  return new ctorch_tensor_list_s{std::move(v)};
}

// ---- enums and values (validate, then convert; throw StatusError) ---------

c10::ScalarType to_scalar_type(int dtype, const char *arg);
ctorch_dtype from_scalar_type(c10::ScalarType t);
c10::Device to_device(const ctorch_device &d, const char *arg);
ctorch_device from_device(const c10::Device &d);
c10::Layout to_layout(int layout, const char *arg);
ctorch_layout from_layout(c10::Layout l);
c10::MemoryFormat to_memory_format(int mf, const char *arg);
c10::Scalar to_scalar(const ctorch_scalar &s, const char *arg);
ctorch_scalar from_scalar(const c10::Scalar &s);

}  // namespace ctorch

// Every entry point body is wrapped so that no exception escapes:
//   CTORCH_TRY ... CTORCH_CATCH
// Success falls through to `return CTORCH_OK`.
#define CTORCH_TRY try {
#define CTORCH_CATCH                                   \
  }                                                    \
  catch (...) {                                        \
    return ::ctorch::translate_exception(__func__);    \
  }                                                    \
  return CTORCH_OK;

// The two commonest entry-point shapes, shared by the core and autograd:
// a getter `NAME(OUT_T *out, ctorch_tensor t)` writing EXPR, and a transform
// `NAME(ctorch_tensor *out, ctorch_tensor t EXTRA_PARAMS)` returning a new
// handle to EXPR. Both see the borrowed input as `const at::Tensor &x`.
#define CTORCH_GETTER(NAME, OUT_T, EXPR)                         \
  CTORCH_API ctorch_status NAME(OUT_T *out, ctorch_tensor t) {   \
    CTORCH_TRY                                                   \
    ::ctorch::require_out(out, "out");                           \
    ::ctorch::require_tensor(t, "t");                            \
    ::ctorch::Borrowed b(t);                                     \
    const at::Tensor &x = b.get();                               \
    *out = (EXPR);                                               \
    CTORCH_CATCH                                                 \
  }
#define CTORCH_TRANSFORM(NAME, EXTRA_PARAMS, EXPR)                                  \
  CTORCH_API ctorch_status NAME(ctorch_tensor *out, ctorch_tensor t EXTRA_PARAMS) { \
    CTORCH_TRY                                                                      \
    ::ctorch::require_out(out, "out");                                              \
    *out = nullptr;                                                                 \
    ::ctorch::require_tensor(t, "t");                                               \
    ::ctorch::Borrowed b(t);                                                        \
    const at::Tensor &x = b.get();                                                  \
    *out = ::ctorch::give(EXPR);                                                    \
    CTORCH_CATCH                                                                    \
  }
#define CTORCH_COMMA ,
