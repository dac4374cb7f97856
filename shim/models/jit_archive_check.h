// Private to jit.cpp: checks a TorchScript archive before torch::jit::load
// reads it, for inputs libtorch's importer and unpickler act on unchecked
// (crashes, reads past buffers) instead of throwing. Each check refuses
// with StatusError(VALUE) naming the record; what it cannot read or parse
// is left for libtorch, which then throws as it would anyway.
#pragma once

#include "core/internal.h"

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace caffe2 {
namespace serialize {
class PyTorchStreamReader;
class ReadAdapterInterface;
}
}  // namespace caffe2

namespace torch {
namespace jit {
struct ClassDef;
}
}  // namespace torch

namespace ctorch {

// One code file (code/<path>.py) walked as libtorch's importer reads it
// (SourceImporterImpl::parseSourceIfNeeded): an optional 'op_version_set = N'
// line, imports, then classes and functions; on_class gets each class with
// its qualifier ("code/__torch__/a.py" -> "__torch__.a"). Stops at the first
// token the importer would refuse (libtorch then refuses it itself).
void for_each_source_class(const std::string &record, const char *text, size_t size,
                           const std::function<void(const torch::jit::ClassDef &, const std::string &)> &on_class);

// A literal as TorchScript source and pickles hold it: an Enum member's
// value, or a pickle value the unpickler check tracks.
struct JitLiteral {
  enum Kind { Int, Float, Str } kind = Int;
  int64_t i = 0;
  double f = 0;
  std::string s;
  bool operator==(const JitLiteral &o) const {
    return kind == o.kind && (kind == Int ? i == o.i : kind == Float ? f == o.f : s == o.s);
  }
};

// Enum classes in the archive's code, by qualified name ("__torch__.Color"),
// with their members' values.
using JitEnums = std::unordered_map<std::string, std::vector<JitLiteral>>;

// Before libtorch's reader opens the archive: every deflated record inflates
// (zlib) to exactly the size and CRC-32 its directory declares, which
// libtorch's reader does not make sure of (jit_zip_check.cpp).
void check_deflated_records(const caffe2::serialize::ReadAdapterInterface &in);

// Every check, in the order libtorch reads: code/*.py (collecting enums),
// then every pickle (*.pkl, code/*.debug_pkl). sizes: record sizes by name.
void check_torchscript_archive(caffe2::serialize::PyTorchStreamReader &reader,
                               const std::unordered_map<std::string, uint64_t> &sizes);

// TorchScript without side effects (jit_sandbox.cpp): compiles every class
// in code/ without running any of it and refuses (VALUE, naming the
// operator, the function and the source line) code that calls an operator
// reading or writing files or talking to other processes; unless `allow`
// has CTORCH_MODULE_LOAD_ALLOW_CLASSES, code, class attributes and pickles
// that use a built-in (torch.classes) class off its allow-list; unless it
// has CTORCH_MODULE_LOAD_ALLOW_UNBOUNDED_LOOPS, a __setstate__ (with what
// it calls) whose loops are not bounded by constants.
void check_torchscript_side_effects(caffe2::serialize::PyTorchStreamReader &reader, uint32_t allow);

// One pickle record: replays it as libtorch's Unpickler moves its stack.
// storage_dir: where its persistent storages live ("data/", "constants/").
void check_torchscript_pickle(const std::string &record, const char *data, size_t size, const JitEnums &enums,
                              const std::string &storage_dir, const std::unordered_map<std::string, uint64_t> &sizes);

}  // namespace ctorch
