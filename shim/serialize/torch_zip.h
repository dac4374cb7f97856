// Private to serialize/: the zip layer of torch.save / torch.jit.save
// archives, read by ctorch itself over zip/ (stored records, CRC-checked)
// rather than by libtorch's PyTorchStreamReader, whose constructor leaks
// when it throws. Split from serialize_reader.cpp (the unpickler), which is
// its only includer.
#pragma once

#include "serialize.h"
#include "zip/zip_directory.h"

#include "files/files.h"

#include <c10/core/CPUAllocator.h>
#include <caffe2/serialize/versions.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <unordered_map>

namespace ctorch {
namespace torch_zip {

[[noreturn]] inline void corrupt(const std::string &msg) { fail(CTORCH_VALUE, msg); }

// ---- the zip layer ------------------------------------------------------------

// A torch.save / torch.jit.save archive read by ctorch itself (zip/: stored
// records, CRC-checked) rather than by libtorch's PyTorchStreamReader, whose
// constructor leaks miniz's state whenever it throws on a corrupt archive.
class ZipReader {
 public:
  explicit ZipReader(const ByteSource &src)
      : file_(open_source(src)) {}

  // The checks PyTorchStreamReader's constructor makes (so that, passed,
  // libtorch can open the file without throwing from it).
  void check() {
    guarded([&] {
      dir_.reset(new zip::Directory(*file_));  // refuses an archive with no entries
      const std::string &first = dir_->entries()[0].name;
      size_t slash = first.find('/');
      if (slash == std::string::npos) bad("its first entry '" + first + "' is not inside a folder");
      prefix_ = first.substr(0, slash + 1);
      // libtorch looks records up by C string: a folder name with a NUL
      // byte ends there, its version record is not found and its
      // constructor throws (and leaks). (find() matches names as miniz does,
      // without regard to case, and refuses two that match.)
      if (prefix_.find('\0') != std::string::npos) bad("its first entry's folder name has a NUL byte");
      const zip::Entry *v = dir_->find(prefix_ + ".data/version");
      if (!v) v = dir_->find(prefix_ + "version");
      if (!v) bad("it has no 'version' record");
      uint64_t version = parse_version(record(*v, 4096));
      if (version < caffe2::serialize::kMinSupportedFileFormatVersion ||
          version > caffe2::serialize::kMaxSupportedFileFormatVersion)
        bad("archive format version " + std::to_string(version) + " is not supported by this libtorch");
    });
  }

  bool hasRecord(const std::string &name) {
    return guarded([&] { return dir_->find(prefix_ + name) != nullptr; });
  }

  // The whole archive rewritten as a plain stored zip (every record's CRC
  // checked on the way): what libtorch's reader then parses is well formed
  // by construction, whatever odd but valid-looking layout the file had.
  std::string canonical() {
    return guarded([&] {
      const std::vector<zip::Entry> &entries = dir_->entries();
      // Past the plain zip format's limits: "" (the caller opens the file as
      // is, after check()).
      // Sizes are checked against the file first: a directory claiming a
      // 4 GiB record in a small file must not send it down the large path.
      uint64_t total = 22;
      for (const zip::Entry &en : entries) {
        if (en.csize > file_->size()) bad("'" + en.name + "' is larger than the file");
        total += 76 + 2 * en.name.size() + en.csize;
      }
      if (entries.size() > 0xFFFF || total > 0xFFFFFFF0u) return std::string();
      std::string out, cd;
      auto put = [](std::string &s, uint64_t v, int n) {
        for (int k = 0; k < n; ++k) s.push_back(static_cast<char>((v >> (8 * k)) & 0xFF));
      };
      for (const zip::Entry &en : entries) {
        // Stored records are CRC-checked here; deflated ones (torch.jit.save
        // compresses code/) are copied as they are and checked by
        // check_deflated_records (models/jit_zip_check.cpp) before libtorch
        // reads them.
        uint64_t at = raw_offset(en);
        if (en.method == 0 && en.csize != en.usize) bad("'" + en.name + "' has inconsistent sizes");
        std::string data(static_cast<size_t>(en.csize), '\0');
        if (!data.empty()) dir_->read(at, &data[0], data.size());
        if (en.method == 0 && zip::crc32_of(data.data(), data.size()) != en.crc) bad("CRC mismatch in '" + en.name + "'");
        uint64_t off = out.size();
        put(out, 0x04034b50, 4); put(out, 20, 2); put(out, 0, 2); put(out, en.method, 2); put(out, 0, 4);
        put(out, en.crc, 4); put(out, data.size(), 4); put(out, en.usize, 4);
        put(out, en.name.size(), 2); put(out, 0, 2);
        out += en.name;
        out += data;
        put(cd, 0x02014b50, 4); put(cd, 20, 2); put(cd, 20, 2); put(cd, 0, 2); put(cd, en.method, 2); put(cd, 0, 4);
        put(cd, en.crc, 4); put(cd, data.size(), 4); put(cd, en.usize, 4);
        put(cd, en.name.size(), 2); put(cd, 0, 2); put(cd, 0, 2); put(cd, 0, 2); put(cd, 0, 2); put(cd, 0, 4);
        put(cd, off, 4);
        cd += en.name;
      }
      uint64_t cd_off = out.size();
      out += cd;
      put(out, 0x06054b50, 4); put(out, 0, 2); put(out, 0, 2);
      put(out, entries.size(), 2); put(out, entries.size(), 2);
      put(out, cd.size(), 4); put(out, cd_off, 4); put(out, 0, 2);
      return out;
    });
  }
  // Uncompressed size of every record, by the name libtorch's reader uses
  // (without the archive's folder). A name stored twice keeps the smaller
  // size: which copy miniz returns is unspecified.
  std::unordered_map<std::string, uint64_t> record_sizes() const {
    std::unordered_map<std::string, uint64_t> out;
    for (const zip::Entry &en : dir_->entries()) {
      if (en.name.compare(0, prefix_.size(), prefix_) != 0) continue;
      auto ins = out.emplace(en.name.substr(prefix_.size()), en.usize);
      if (!ins.second && en.usize < ins.first->second) ins.first->second = en.usize;
    }
    return out;
  }
  // The record's bytes in memory from libtorch's CPU allocator (so a storage
  // made over them frees and resizes them as any other).
  std::tuple<at::DataPtr, size_t> getRecord(const std::string &name) {
    return guarded([&] {
      const zip::Entry *en = dir_->find(prefix_ + name);
      if (!en) bad("no record '" + name + "'");
      uint64_t at = data_offset(*en);  // checks that its bytes lie inside the file
      size_t n = static_cast<size_t>(en->usize);
      at::DataPtr d = c10::GetCPUAllocator()->allocate(n);
      if (n) dir_->read(at, d.get(), n);
      if (zip::crc32_of(d.get(), n) != en->crc) bad("CRC mismatch in '" + en->name + "'");
      return std::make_tuple(std::move(d), n);
    });
  }

 private:
  std::unique_ptr<zip::Source> file_;
  std::unique_ptr<zip::Directory> dir_;
  std::string prefix_;

  [[noreturn]] static void bad(const std::string &why) {
    fail(CTORCH_VALUE, std::string("not a readable torch zip archive: ") + why);
  }
  // Runs f, turning the zip reader's refusals into bad().
  template <class F>
  static auto guarded(F &&f) -> decltype(f()) {
    try {
      return f();
    } catch (const zip::Error &e) {
      bad(e.what());
    }
  }

  // Where a stored record's bytes start (after its local header).
  uint64_t data_offset(const zip::Entry &en) {
    if (en.method != 0) bad("'" + en.name + "' is compressed (torch.save stores records uncompressed)");
    if (en.csize != en.usize) bad("'" + en.name + "' has inconsistent sizes");
    return raw_offset(en);
  }
  // Where a record's (possibly deflated) bytes start; csize of them lie
  // inside the file.
  uint64_t raw_offset(const zip::Entry &en) {
    zip::Directory::require_readable(en);
    return dir_->data_offset(en);
  }

  std::string record(const zip::Entry &en, uint64_t max) {
    uint64_t data = data_offset(en);
    if (en.usize > max) bad("'" + en.name + "' is too long for a version number");
    std::string out(static_cast<size_t>(en.usize), '\0');
    dir_->read(data, &out[0], out.size());
    if (zip::crc32_of(out.data(), out.size()) != en.crc) bad("CRC mismatch in '" + en.name + "'");
    return out;
  }

  // std::stoull's grammar (which libtorch applies): spaces, a sign, digits.
  uint64_t parse_version(const std::string &s) {
    size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    bool neg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) bad("its version record is not a number");
    uint64_t v = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      unsigned d = static_cast<unsigned>(s[i] - '0');
      if (v > (UINT64_MAX - d) / 10) bad("its version number overflows");
      v = v * 10 + d;
    }
    return neg ? 0 - v : v;
  }
};

}  // namespace torch_zip
}  // namespace ctorch
