// Private to numpy/: the .npy format (npy.cpp), used by the .npz archives
// (npz.cpp).
#pragma once

#include "files/files.h"
#include "serialize/serialize.h"

#include <string>

namespace ctorch {
namespace npy {

// NumPy's own bound on a header it reads (numpy.lib.format's
// _MAX_HEADER_SIZE): longer ones are refused before they are parsed.
constexpr size_t kMaxHeader = 10000;

// The .npy bytes numpy.save writes for t (format 1.0 unless the header needs
// 2.0), through sink. Throws NOT_IMPLEMENTED for dtypes NumPy lacks.
void write(const Sink &sink, const at::Tensor &t);

// Reads one .npy array from src (offset 0 .. src.size()); what: the name in
// messages. budget: the caller's LoadBudget (the tensor's bytes are charged
// before they are allocated). Throws StatusError (VALUE naming why,
// NOT_IMPLEMENTED for dtypes this libtorch lacks).
at::Tensor read(const zip::Source &src, const std::string &what, LoadBudget &budget);

}  // namespace npy
}  // namespace ctorch
