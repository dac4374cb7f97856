// check_torchscript_file (models.h): the checks every TorchScript archive
// passes before libtorch's reader sees it, whichever entry point loads it.
#include "models.h"

#include "jit_archive_check.h"
#include "core/files.h"
#include "serialize/serialize.h"

#include <caffe2/serialize/file_adapter.h>
#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>

namespace ctorch {

CheckedTorchScript check_torchscript_file(const char *path, bool allow_io) {
  require_regular_file(path);
  CheckedTorchScript out;
  std::unordered_map<std::string, uint64_t> sizes;
  // Zip archives only (what torch.jit.save writes), checked and rewritten
  // before libtorch's reader sees them: see canonical_torch_archive.
  auto bytes = std::make_shared<const std::string>(canonical_torch_archive(path, &sizes));
  // The caller's limit (ctorch_set_load_limit): libtorch's reader holds
  // every record it reads whole, so an archive whose records add up to more
  // is refused before it reads any.
  if (load_limit() != 0) {
    LoadBudget budget(std::string("'") + path + "'", 0);
    budget.charge_data(bytes->size());
    for (const auto &kv : sizes) budget.charge_data(kv.second);
  }
  try {
    if (bytes->empty()) {
      out.in = std::make_shared<caffe2::serialize::FileAdapter>(path);
    } else {
      out.bytes = bytes;
      out.in = std::make_shared<caffe2::serialize::MemoryReadAdapter>(bytes->data(), bytes->size());
    }
    check_deflated_records(*out.in);
    caffe2::serialize::PyTorchStreamReader reader(out.in);
    check_torchscript_archive(reader, sizes);
    if (!allow_io) check_torchscript_side_effects(reader);
  } catch (const c10::Error &e) {
    fail(CTORCH_VALUE, e.what_without_backtrace());
  }
  return out;
}

}  // namespace ctorch
