// Helpers shared by the built-in layers (layers_*.cpp) and nothing else:
// Python's text for the values extra_repr prints, and the few argument
// checks several families make. Kept inline and small: each layer file
// includes it once.
#pragma once

#include "module.h"

#include <string>
#include <vector>

namespace ctorch {
namespace nn {
namespace layers {

// Python's repr of a tuple of ints, e.g. (3, 3) or (3,): what _pair/_single
// leave in a module's attributes and extra_repr prints.
inline Value int_tuple(const std::vector<int64_t> &v) {
  Value r;
  r.kind = Value::Seq;
  for (int64_t x : v) {
    Value e;
    e.kind = Value::Int;
    e.i = x;
    r.items.push_back(e);
  }
  return r;
}
inline std::string tuple_repr(const std::vector<int64_t> &v) { return int_tuple(v).repr(); }

// Python's repr of a float (shortest round trip: 1e-05, 0.1, 2.0).
inline std::string float_repr(double f) {
  Value v;
  v.kind = Value::Float;
  v.f = f;
  return v.repr();
}

inline const char *py_bool(bool b) { return b ? "True" : "False"; }

// An undefined tensor as Python's None for the at:: ops that take Tensor?.
inline c10::optional<at::Tensor> opt(const at::Tensor &t) {
  return t.defined() ? c10::optional<at::Tensor>(t) : c10::nullopt;
}

// The value as the caller wrote it ("p=0" stays 0, "p=0.0" stays 0.0):
// Python keeps the object it was given, and extra_repr prints that.
inline std::string given_repr(const Args &a, const char *name) { return a.get(name).repr(); }

// Python's "x != (v,) * n" on an expanded tuple.
inline bool all_equal(const std::vector<int64_t> &v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

// ValueError raised by a module's forward (Python's message).
[[noreturn]] inline void value_error(const std::string &msg) { fail(CTORCH_VALUE, msg); }

// repr differences between the two libtorch versions the project builds
// against, read from torch/nn/modules/*.py of each: 1.13.1
// prints Upsample's mode and EmbeddingBag's mode unquoted (str.format of the
// attributes); 2.15.0 quotes them (repr) and adds "bias=" to BatchNorm's,
// InstanceNorm's and LayerNorm's text. The release that changed each lies
// between the two. The GPU image's torch 2.11 (measured on the H100 the
// same day) already quotes the modes and does not yet print "bias=", so the
// quotes switch at 2.11, the bias text at 2.15.
#define CTORCH_NN_REPR_QUOTES_MODE CTORCH_TORCH_AT_LEAST(2, 11)
#define CTORCH_NN_REPR_NORM_BIAS CTORCH_TORCH_AT_LEAST(2, 15)

}  // namespace layers
}  // namespace nn
}  // namespace ctorch
