// Private to the interop area: the loaded-dict handle (shared with
// jit.cpp's named_parameters/buffers), the torch.save reader and the atomic
// writer.
#pragma once

#include "core/internal.h"
#include "zip/zip_directory.h"

#include <functional>
#include <memory>
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

// The dict behind a handle argument named "d" (INVALID_ARGUMENT where it is
// not a live one): the accessors of torch.save and safetensors dicts.
inline ctorch_tensor_dict_s &dict_ref(ctorch_tensor_dict d) {
  check_handle(d, "d");
  return *d;
}

// What a torch.save file held at top level.
struct Checkpoint {
  bool is_tensor = false;
  at::Tensor tensor;      // when is_tensor
  ctorch_tensor_dict_s dict;  // otherwise
};

// Where a loader's bytes are: a file (path), or the caller's memory (data,
// len: borrowed for the load). Every loader has one code path for both; the
// file form only opens the file (files/files.h's checks) first.
struct ByteSource {
  const char *path = nullptr;
  const void *data = nullptr;
  size_t len = 0;
  static ByteSource file(const char *p) { ByteSource s; s.path = p; return s; }
  static ByteSource memory(const void *d, size_t n) { ByteSource s; s.data = d; s.len = n; return s; }
  // For messages: "'path'" or "the buffer".
  std::string name() const { return path ? "'" + std::string(path) + "'" : std::string("the buffer"); }
};

// The bytes of src for zip/'s reader and the other loaders: a file read
// with pread (a regular file only, opened without blocking: files/files.h;
// failing to read it is IO, not a refusal of its contents), or the memory.
std::unique_ptr<zip::Source> open_source(const ByteSource &src);

// Reads a torch.save zip file (tensor, or dict/OrderedDict str -> Tensor).
// Throws StatusError: IO when the file cannot be opened, VALUE when it is
// not a readable checkpoint, TYPE when it holds something else.
Checkpoint read_checkpoint(const ByteSource &src);
inline Checkpoint read_checkpoint(const char *path) { return read_checkpoint(ByteSource::file(path)); }

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
// The same of bytes in memory (or a file): src.name() in messages.
std::string canonical_torch_archive(const ByteSource &src, std::unordered_map<std::string, uint64_t> *sizes = nullptr);

// Writes path atomically: produce() writes the contents through the sink
// into a temporary file in the same directory, which is then fsync'ed and
// renamed over path. Throws StatusError(IO) (or what produce throws) and
// leaves any previous file untouched.
using Sink = std::function<size_t(const void *, size_t)>;
using Producer = std::function<void(const Sink &)>;
void atomic_write_with(const char *path, const Producer &produce);

// The same producers into memory and into a caller's callbacks
// (serialize_memory.cpp): the bytes are those the file form writes.
// write_to_buffer: the first cap bytes into buf (NULL when cap is 0), the
// full length into *out_len (the *_to_buffer convention). write_to_stream: every chunk goes to write(); its
// first failure stops the writing and is reported (IO) once produce is done.
void write_to_buffer(size_t *out_len, void *buf, size_t cap, const Producer &produce);
// The checks of the *_to_buffer arguments (out_len; buf unless cap is 0).
void require_buffer_args(size_t *out_len, void *buf, size_t cap);
void write_to_stream(ctorch_write_fn write, void *user_data, const Producer &produce);
// Reads a caller's stream to its end (read() gives 0 bytes) into memory,
// refusing (OUT_OF_MEMORY) more than ctorch_set_load_limit allows.
std::string read_stream(ctorch_read_fn read, void *user_data);

}  // namespace ctorch
