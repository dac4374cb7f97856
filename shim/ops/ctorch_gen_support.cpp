// Out-of-line helpers for the generated wrappers (compiled once, not per shard).
#include "ctorch_gen_support.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/core/interned_strings.h>

#include <limits>
#include <string>

namespace ctorch_gen {

std::vector<at::Scalar> scalar_list(const ctorch_scalar *p, size_t n, const char *arg) {
  ctorch::require_list(p, n, arg);
  std::vector<at::Scalar> v;
  v.reserve(n);
  for (size_t i = 0; i < n; ++i) v.push_back(ctorch::to_scalar(p[i], arg));
  return v;
}

#ifdef CTORCH_GEN_DIMNAME
at::Dimname dimname(const char *s, const char *arg) {
  require_str(s, arg);
  if (!at::Dimname::isValidName(s)) ctorch::fail_arg(arg, std::string("invalid dimension name '") + s + "'");
  // Symbol::dimname(s) was this in 1.13 and is gone in 2.x; the qualified
  // spelling works in both.
  return at::Dimname::fromSymbol(at::Symbol::fromQualString(std::string("dimname::") + s));
}

std::vector<at::Dimname> dimname_list(const char *const *p, size_t n, const char *arg) {
  ctorch::require_list(p, n, arg);
  std::vector<at::Dimname> v;
  v.reserve(n);
  for (size_t i = 0; i < n; ++i) v.push_back(dimname(p[i], arg));
  return v;
}
#endif

void require_no_overlap(const at::Tensor &t, const char *arg) {
  if (t.defined() && t.layout() == c10::kStrided && at::has_internal_overlap(t) == at::MemOverlap::Yes)
    ctorch::fail_arg(arg, "more than one element refers to the same memory (an expanded view?); "
                          "pass a tensor with memory of its own (clone or contiguous)");
}

void require_writable(const at::Tensor &t, const char *arg) {
  if (t.defined() && t._is_zerotensor())
    ctorch::fail_arg(arg, "is a zero tensor (_efficientzerotensor): it has no memory to write");
  require_no_overlap(t, arg);
}

void fail_out_replaced(const char *arg) {
  ctorch::fail(CTORCH_NOT_IMPLEMENTED, std::string("argument '") + arg +
                                           "': the kernel made a new tensor instead of writing into this one "
                                           "(libtorch does not support out= here); call the function without out");
}

void fail_fixed_list(const char *arg, size_t want, size_t got) {
  ctorch::fail_arg(arg, "expected " + std::to_string(want) + " values (or 1, used for all " + std::to_string(want) +
                            "), got " + std::to_string(got));
}

c10::DeviceIndex device_index(int64_t v, const char *arg) {
  if (v < -1 || v > std::numeric_limits<c10::DeviceIndex>::max())
    ctorch::fail_arg(arg, "device index " + std::to_string(v) + " out of range");
  return static_cast<c10::DeviceIndex>(v);
}

}  // namespace ctorch_gen
