// Private to the interop area: the loaded-dict handle (shared with
// jit.cpp's named_parameters/buffers), the torch.save reader and the atomic
// writer.
#pragma once

#include "core/internal.h"

#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

struct ctorch_tensor_dict_s {
  std::vector<std::string> keys;
  std::vector<at::Tensor> values;
  // A safetensors file's "__metadata__" (shim/safetensors/), in the order
  // read; empty for torch.save dicts.
  std::vector<std::pair<std::string, std::string>> metadata;
  ctorch::Live<ctorch_tensor_dict_s> live{this};  // last: see core/internal.h
};

namespace ctorch {

// What a torch.save file held at top level.
struct Checkpoint {
  bool is_tensor = false;
  at::Tensor tensor;      // when is_tensor
  ctorch_tensor_dict_s dict;  // otherwise
};

// Reads a torch.save zip file (tensor, or dict/OrderedDict str -> Tensor).
// Throws StatusError: IO when the file cannot be opened, VALUE when it is
// not a readable checkpoint, TYPE when it holds something else.
Checkpoint read_checkpoint(const char *path);

// The zip archive at path, checked and rewritten in memory as a plain
// stored zip, for libtorch's PyTorchStreamReader. That reader's constructor
// leaks miniz's state (about 1 KiB per attempt) whenever it throws after
// opening a zip (no files, first entry not in a folder, a missing, corrupt,
// unparsable or unsupported 'version' record, layouts miniz reads
// differently); a canonical archive that passed these checks does not make
// it throw. Throws StatusError(VALUE) for anything else than such an
// archive (IO if the file cannot be read). Returns "" for a valid archive
// too large for a plain zip (4 GiB): the caller then opens the file itself.
// sizes (optional): each record's uncompressed size, by the name
// PyTorchStreamReader uses (without the archive's folder).
std::string canonical_torch_archive(const char *path, std::unordered_map<std::string, uint64_t> *sizes = nullptr);

// Writes path atomically: produce() writes the contents through the sink
// into a temporary file in the same directory, which is then fsync'ed and
// renamed over path. Throws StatusError(IO) (or what produce throws) and
// leaves any previous file untouched.
using Sink = std::function<size_t(const void *, size_t)>;
void atomic_write_with(const char *path, const std::function<void(const Sink &)> &produce);

}  // namespace ctorch
