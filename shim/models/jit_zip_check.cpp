// Deflated records of a TorchScript archive, inflated by ctorch (zlib)
// before libtorch's reader inflates them.
//
// libtorch's zip reader (miniz, compiled without its CRC checks) returns a
// deflated record's full declared size even when inflating it failed at the
// first block: getRecord() then hands back a buffer it never wrote, stale
// heap bytes (pointers, freed strings), as the record. Checked with 1.13.1
// and 2.15.0 (PyTorchFileReader.get_record on a record whose deflate stream
// starts with a block of the reserved type 3: 515 bytes of heap, no error).
// TorchScript code records are deflated (torch.jit.save compresses code/),
// so the importer - and ctorch's own source check - parsed that garbage:
// with 2.11's heap it aborted ("free(): invalid pointer") replaying
// tests/harden/regressions/torchscript/debug_pickle_underflow_heap_corruption,
// whose code/__torch__.py is such a stream (fuzz_torchscript's find).
// Streams that end early or run long, libtorch reports itself.
//
// Every deflated record must inflate, to its end, to exactly the size and
// CRC-32 its directory entry declares; stored records were CRC-checked when
// the archive was made canonical (serialize_reader.cpp).
#include "jit_archive_check.h"

#include "zip/zip_directory.h"

#include <caffe2/serialize/read_adapter_interface.h>

#include <new>

namespace ctorch {
namespace {

// The archive through libtorch's read adapter (the canonical archive in
// memory, or the file itself past the plain zip format's limits).
class AdapterSource : public zip::Source {
 public:
  explicit AdapterSource(const caffe2::serialize::ReadAdapterInterface &in) : in_(in), size_(in.size()) {}
  uint64_t size() const override { return size_; }
  void read(uint64_t at, void *buf, size_t n) const override {
    if (in_.read(at, buf, n, "ctorch zip check") != n) throw zip::Error("a short read");
  }

 private:
  const caffe2::serialize::ReadAdapterInterface &in_;
  uint64_t size_;
};

// Inflates r's stream in chunks (memory bounded whatever r claims).
void check_deflated(const zip::Directory &dir, const zip::Entry &r) {
  const zip::Contents c = dir.stream(r, dir.data_offset(r));
  std::string why;
  switch (c.outcome) {
    case zip::Contents::COMPLETE:
      if (c.crc != r.crc) why = "its CRC-32 does not match";
      break;
    case zip::Contents::INVALID: why = "invalid deflate data: " + c.zlib_msg; break;
    case zip::Contents::TRUNCATED: why = "the stream ends before its last block"; break;
    case zip::Contents::ZLIB_ERROR: why = "zlib error " + std::to_string(c.zlib_rc); break;
    case zip::Contents::TOO_LONG: why = "it inflates to more than " + std::to_string(r.usize) + " bytes"; break;
    case zip::Contents::ENDS_EARLY: why = "it inflates to " + std::to_string(c.produced) + " bytes"; break;
    case zip::Contents::NO_MEMORY: throw std::bad_alloc();
  }
  if (!why.empty())
    fail(CTORCH_VALUE, "record '" + r.name + "' does not inflate to the " + std::to_string(r.usize) +
         " bytes and CRC-32 its directory declares (" + why + "; libtorch's zip reader would hand back " +
         "bytes it never wrote)");
}

}  // namespace

void check_deflated_records(const caffe2::serialize::ReadAdapterInterface &in) {
  AdapterSource src(in);
  // miniz's zip64 rule (a zip64 record wins whenever present), so this
  // check reads the directory libtorch's reader will read; no count checks:
  // the archive was checked by canonical_torch_archive already (the
  // canonical copy, or the file itself when too large for one).
  zip::Options opt;
  opt.zip64 = zip::Options::ZIP64_WINS;
  opt.strict_counts = false;
  try {
    const zip::Directory dir(src, opt);
    for (const zip::Entry &r : dir.entries())
      if (r.method == 8) check_deflated(dir, r);
  } catch (const zip::Error &e) {
    fail(CTORCH_VALUE, std::string("not a readable torch zip archive: ") + e.what());
  }
}

}  // namespace ctorch
