// Private to safetensors/: the dtype table, the file reader and the writer.
#pragma once

#include "core/internal.h"
#include "serialize/serialize.h"
#include "files/files.h"

#include <string>
#include <utility>
#include <vector>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; ctorch reads and writes it as the host's bytes");

namespace ctorch {
namespace st {

// A malformed file: VALUE, naming the file (the reader and the sharded index).
[[noreturn]] inline void bad(const std::string &file, const std::string &what) { fail(CTORCH_VALUE, file + ": " + what); }
// The LoadBudget callback of the JSON reader (ctx is the LoadBudget).
inline void charge_budget(void *ctx, uint64_t bytes) { static_cast<LoadBudget *>(ctx)->charge(bytes); }

// The format's 100,000,000-byte bound on the JSON header (the Python
// package's MAX_HEADER_SIZE), applied to sharded indexes too.
constexpr uint64_t kMaxHeader = 100000000;

// One of the format's dtypes. rank: its place in the Rust crate's `Dtype`
// enum, whose derived order the writer sorts by (descending, then by name).
// ctorch_dtype 0 (with itemsize 0): sub-byte types libtorch has no dtype for.
struct Dtype {
  const char *name;
  int ctorch_dtype;
  size_t itemsize;
  int rank;
};
const Dtype *dtype_by_name(const std::string &name);
const Dtype *dtype_by_ctorch(int ctorch_dtype);

// Reads a safetensors file into d (tensors in the order of their data,
// the "__metadata__" map). device: where the tensors go (nullptr: the CPU,
// sharing the file's mapping where they can). Throws StatusError.
void load_file(ctorch_tensor_dict_s &d, const char *path, const ctorch_device *device);

// Reads a sharded checkpoint through its index (model.safetensors.index.json).
void load_sharded(ctorch_tensor_dict_s &d, const char *index_path, const ctorch_device *device);

// Writes tensors with metadata as the Python package does. Throws StatusError.
void save_file(const char *path, const std::vector<std::string> &names, const std::vector<at::Tensor> &tensors,
               const std::vector<std::pair<std::string, std::string>> &metadata);

}  // namespace st
}  // namespace ctorch
