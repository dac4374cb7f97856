// The one reader of zip archives in ctorch: the end-of-directory search, the
// zip64 locator and end record, the central directory's entries (zip64
// extra fields included), local headers, and the entries' contents (stored
// or deflated, streamed in bounded chunks, sizes and CRC-32 checked). Every
// offset and length is checked against the file before it is used; a field
// that lies (a directory past the end, a count the directory cannot hold,
// an entry past the file, sizes that disagree) is refused with zip::Error.
//
// Used by serialize/ (torch.save checkpoints, the canonical TorchScript
// archive) and models/ (the TorchScript deflate check, the AOTI package
// check). Depends on the C++ standard library and zlib only, never on
// libtorch or core/: models/aoti_check.cpp, its replay program and the fuzz
// harnesses compile it on their own. What a refusal becomes (a status, a
// verdict) is the caller's business: catch zip::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ctorch {
namespace zip {

// A refusal: the archive is not one this reader vouches for. what() says
// why, without a prefix (callers add theirs).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where the bytes come from. The reader asks only for ranges inside size();
// read() fills buf completely or throws (zip::Error, or the caller's own
// exception for an I/O failure, which passes through the reader).
class Source {
 public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  virtual void read(uint64_t offset, void *buf, size_t n) const = 0;
};

// The whole file in memory (not copied: data must outlive the source).
class MemorySource : public Source {
 public:
  MemorySource(const void *data, size_t size) : data_(static_cast<const unsigned char *>(data)), size_(size) {}
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, void *buf, size_t n) const override;

 private:
  const unsigned char *data_;
  size_t size_;
};

// One central directory entry (zip64 values substituted where the extra
// field gives them).
struct Entry {
  std::string name;
  uint16_t flags = 0, method = 0;  // method: 0 stored, 8 deflated
  uint32_t crc = 0;
  uint64_t csize = 0, usize = 0;   // compressed, uncompressed size
  uint64_t offset = 0;             // of its local header
};

// How strictly the directory is read. The defaults read it as miniz (hence
// libtorch's readers) does, and refuse what miniz would misread.
struct Options {
  enum Zip64 {
    // A zip64 locator right before the end record, pointing at a zip64 end
    // record inside the file, overrides the 32-bit fields whatever they
    // hold; a missing or broken one is ignored (miniz).
    ZIP64_WINS,
    // The zip64 records are read only when a 32-bit field is saturated
    // (0xFFFF entries, 0xFFFFFFFF size or offset), and then they must be
    // there (the format's own rule).
    ZIP64_WHEN_SATURATED,
  };
  Zip64 zip64 = ZIP64_WINS;
  // Refuse an archive with no entries, one whose zip64 record's two entry
  // counts disagree, and a count the directory is too small to hold (46
  // bytes an entry). Off: an empty archive has no entries, and a count too
  // large fails at the first entry missing from the directory.
  bool strict_counts = true;
};

// What streaming an entry's contents found (Directory::stream).
struct Contents {
  enum Outcome {
    COMPLETE,      // the stored bytes, or a deflate stream that ended at exactly usize bytes
    TOO_LONG,      // inflates to more than usize bytes (stopped there)
    ENDS_EARLY,    // the deflate stream ends before usize bytes
    TRUNCATED,     // the compressed bytes end before the deflate stream does
    INVALID,       // not valid deflate data (zlib_msg says why)
    ZLIB_ERROR,    // another zlib failure (zlib_rc)
    NO_MEMORY,     // zlib could not be initialised
  };
  Outcome outcome = COMPLETE;
  int zlib_rc = 0;
  std::string zlib_msg;
  uint64_t produced = 0;  // bytes handed to the sink
  uint32_t crc = 0;       // CRC-32 of those bytes
  // Complete, and its CRC-32 is the one the directory declares.
  bool intact(const Entry &en) const { return outcome == COMPLETE && produced == en.usize && crc == en.crc; }
};

using Sink = std::function<void(const unsigned char *, size_t)>;

class Directory {
 public:
  // Finds and reads the central directory; throws Error. src must outlive
  // the Directory.
  explicit Directory(const Source &src, const Options &opt = Options());

  const std::vector<Entry> &entries() const { return entries_; }
  uint64_t file_size() const { return size_; }

  // The one entry named name, compared without regard to ASCII case (as
  // miniz does); nullptr if none; throws Error if two entries match.
  const Entry *find(const std::string &name) const;

  // Throws Error unless the entry can be read: not encrypted, stored or
  // deflated.
  static void require_readable(const Entry &en);

  // Where the entry's (possibly deflated) bytes start, after its local
  // header: the header must be there, and csize bytes from that start must
  // lie inside the file. check_name: the local header must repeat the
  // directory's name (miniz reads the directory's and does not compare).
  uint64_t data_offset(const Entry &en, bool check_name = false) const;

  // Reads n bytes at offset, which must lie inside the file.
  void read(uint64_t offset, void *buf, size_t n) const;

  // Streams the entry's contents to sink (may be empty) in chunks of at
  // most 64 KiB, memory bounded whatever the entry claims; start is
  // data_offset(en). Stored: csize bytes, which must equal usize (Error
  // otherwise). Deflated: inflated until the stream ends, or past usize.
  // The caller judges the result (Contents::intact). Other methods: Error.
  Contents stream(const Entry &en, uint64_t start, const Sink &sink = Sink()) const;

 private:
  const Source &src_;
  uint64_t size_;
  std::vector<Entry> entries_;
};

// CRC-32 (zlib's) of n bytes.
uint32_t crc32_of(const void *data, size_t n);

}  // namespace zip
}  // namespace ctorch
