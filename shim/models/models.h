// The models capability's interface to other folders: a TorchScript archive
// checked before libtorch's archive reader sees it (optim/ reads
// ctorch_optimizer_save's files, which are TorchScript archives, this way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace caffe2 {
namespace serialize {
class ReadAdapterInterface;
}
}  // namespace caffe2

namespace ctorch {

// The archive at path after every check ctorch_module_load makes before
// torch::jit::load: a regular file (never blocks on a FIFO), a zip archive
// rewritten in memory as a plain one (canonical_torch_archive: no leak in
// PyTorchStreamReader's constructor), deflated records that inflate to what
// they declare, and every pickle and code record replayed by
// check_torchscript_archive (records libtorch's importer would crash on),
// and, unless flags has CTORCH_MODULE_LOAD_ALLOW_IO, code that calls an
// operator touching the outside world, uses a built-in class off the
// allow-list or loops without a constant bound while it loads
// (check_torchscript_side_effects; flags: ctorch_module_load_ex's).
// Throws StatusError (IO: the file cannot be opened or is not a regular
// file; VALUE: anything refused), its message not naming the path.
struct CheckedTorchScript {
  std::shared_ptr<const std::string> bytes;  // the canonical archive (null for one too large for it)
  std::shared_ptr<caffe2::serialize::ReadAdapterInterface> in;  // over bytes, or the file
};
CheckedTorchScript check_torchscript_file(const char *path, uint32_t flags = 0);
// The same checks of an archive in memory (data, len: the caller's, read
// during this call only; the result holds a canonical copy, or, for an
// archive too large for one, reads data itself: keep it alive while
// the result is used). Throws StatusError(VALUE) for anything refused.
CheckedTorchScript check_torchscript_memory(const void *data, size_t len, uint32_t flags = 0);

}  // namespace ctorch
