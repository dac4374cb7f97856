// check_torchscript_file (models.h): the checks every TorchScript archive
// passes before libtorch's reader sees it, whichever entry point loads it.
#include "models.h"

#include "jit_archive_check.h"
#include "files/files.h"
#include "serialize/serialize.h"

#include <caffe2/serialize/file_adapter.h>
#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>

#include <cstdio>
#include <cstring>

namespace ctorch {

namespace {

// PyTorch's flatbuffer TorchScript (mobile) format: its file identifier
// "PTMF" follows the 4-byte root offset. libtorch 1.13 reads it only when
// built with flatbuffer support; 2.x's torch::jit::load reads it, running
// its bytecode with none of the checks below, so it is refused whatever
// the flags: such a file is no zip archive, and its code is bytecode, not
// source ctorch can compile and check.
void refuse_flatbuffer_head(const char *head, size_t n) {
  if (n >= 8 && std::memcmp(head + 4, "PTMF", 4) == 0)
    fail(CTORCH_VALUE, "it is in PyTorch's flatbuffer (mobile, .ff/.ptl) format, which ctorch does not load (its "
                       "bytecode cannot be checked before it runs); save the module with torch.jit.save instead");
}

void refuse_flatbuffer(const char *path) {
  char head[8] = {0};
  FILE *f = std::fopen(path, "rb");
  if (!f) return;  // the zip check reports it
  size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  refuse_flatbuffer_head(head, n);
}

// Everything after the source's own opening checks, for a file (path) or
// memory (data, len: path NULL); one code path, so the two cannot drift.
CheckedTorchScript check_archive(const ByteSource &src, uint32_t flags) {
  CheckedTorchScript out;
  std::unordered_map<std::string, uint64_t> sizes;
  // Zip archives only (what torch.jit.save writes), checked and rewritten
  // before libtorch's reader sees them: see canonical_torch_archive.
  auto bytes = std::make_shared<const std::string>(canonical_torch_archive(src, &sizes));
  // The caller's limit (ctorch_set_load_limit): libtorch's reader holds
  // every record it reads whole, so an archive whose records add up to more
  // is refused before it reads any.
  if (load_limit() != 0) {
    LoadBudget budget(src.name(), 0);
    budget.charge_data(bytes->size());
    for (const auto &kv : sizes) budget.charge_data(kv.second);
  }
  try {
    if (!bytes->empty()) {
      out.bytes = bytes;
      out.in = std::make_shared<caffe2::serialize::MemoryReadAdapter>(bytes->data(), bytes->size());
    } else if (src.path) {
      out.in = std::make_shared<caffe2::serialize::FileAdapter>(src.path);
    } else {
      out.in = std::make_shared<caffe2::serialize::MemoryReadAdapter>(src.data, src.len);
    }
    check_deflated_records(*out.in);
    caffe2::serialize::PyTorchStreamReader reader(out.in);
    check_torchscript_archive(reader, sizes);
    if (!(flags & CTORCH_MODULE_LOAD_ALLOW_IO)) check_torchscript_side_effects(reader, flags);
  } catch (const c10::Error &e) {
    fail(CTORCH_VALUE, e.what_without_backtrace());
  }
  return out;
}

}  // namespace

CheckedTorchScript check_torchscript_file(const char *path, uint32_t flags) {
  require_regular_file(path);
  refuse_flatbuffer(path);
  return check_archive(ByteSource::file(path), flags);
}

CheckedTorchScript check_torchscript_memory(const void *data, size_t len, uint32_t flags) {
  refuse_flatbuffer_head(static_cast<const char *>(data), len);
  return check_archive(ByteSource::memory(data, len), flags);
}

}  // namespace ctorch
