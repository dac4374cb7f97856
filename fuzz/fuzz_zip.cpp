// Harness: bytes into ctorch's zip reader (shim/zip/zip_directory.h), which
// every checkpoint, TorchScript archive and AOTI package passes through
// before anything else reads it. Compiled on its own (the standard library
// and zlib), so it runs on every build. The bytes are read as a zip file
// twice: whole (an AOTI package, or any zip), and without their first byte
// (the checkpoint and torchscript harnesses' inputs: a mode byte, then the
// file). Each time with both strictness options (miniz's, the default; and
// the TorchScript check's: zip64 only when saturated, no count checks).
// Properties (a violation aborts):
//   - no crash, no read outside the input (ASan), memory bounded whatever
//     the fields claim; a refusal is a zip::Error with a message;
//   - every listed entry: find() returns an entry of that name (ignoring
//     case) or says the name is ambiguous; data_offset() puts its csize
//     bytes inside the file; a stored entry streams exactly csize bytes, a
//     deflated one stops at most one chunk past usize; intact means exactly
//     usize bytes with the declared CRC;
//   - what reads intact round-trips: those entries written again as a
//     stored zip (fuzz/zip_writer.h) read back with the same names and bytes.
#include "zip/zip_directory.h"
#include "zip_writer.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using ctorch::zip::Contents;
using ctorch::zip::Directory;
using ctorch::zip::Entry;
using ctorch::zip::Error;
using ctorch::zip::MemorySource;
using ctorch::zip::Options;

[[noreturn]] void violation(const std::string &what) {
  std::fprintf(stderr, "CONTRACT VIOLATION: %s\n", what.c_str());
  std::abort();
}

bool same_ignoring_case(const std::string &a, const std::string &b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(a[k])) != std::tolower(static_cast<unsigned char>(b[k]))) return false;
  return true;
}

struct Kept {
  std::string name, bytes;
};

// Inflating more than this per entry is skipped (a small deflate stream may
// claim gigabytes; the reader's own bound is usize plus one chunk).
constexpr uint64_t kMaxInflate = 16u << 20;

void check_entries(const Directory &dir, bool round_trip) {
  std::vector<Kept> kept;
  uint64_t kept_bytes = 0;
  for (const Entry &en : dir.entries()) {
    try {
      const Entry *hit = dir.find(en.name);
      if (!hit || !same_ignoring_case(hit->name, en.name)) violation("find() misses a listed entry '" + en.name + "'");
    } catch (const Error &e) {
      if (std::string(e.what()).find("two entries are named") == std::string::npos)
        violation(std::string("find() refused with '") + e.what() + "'");
    }
    try {
      Directory::require_readable(en);
      const uint64_t start = dir.data_offset(en, (en.name.size() & 1) != 0);
      if (start > dir.file_size() || en.csize > dir.file_size() - start) violation("data_offset() past the file");
      if (en.method == 8 && en.usize > kMaxInflate) continue;
      std::string bytes;
      const bool keep = round_trip && kept_bytes + en.usize <= (64u << 20);
      const Contents c = dir.stream(en, start, [&](const unsigned char *p, size_t n) {
        if (keep && bytes.size() <= en.usize) bytes.append(reinterpret_cast<const char *>(p), n);
      });
      if (en.method == 0 && (c.outcome != Contents::COMPLETE || c.produced != en.csize))
        violation("a stored entry did not stream its csize bytes");
      if (c.produced > en.usize + (64u << 10)) violation("inflated more than one chunk past usize");
      if (c.outcome == Contents::COMPLETE && c.produced != en.usize) violation("COMPLETE with another size");
      if (c.intact(en) && keep) {
        kept.push_back({en.name, std::move(bytes)});
        kept_bytes += en.usize;
      }
    } catch (const Error &e) {
      if (!*e.what()) violation("a refusal without a message");
    }
  }
  if (!round_trip || kept.empty() || kept.size() >= 0xFFFF) return;
  fz::ZipWriter w;
  for (const Kept &k : kept) w.add(k.name, k.bytes);
  std::vector<uint8_t> again = w.finish();
  MemorySource src(again.data(), again.size());
  // Read back by the format's zip64 rule: the rewritten entries' bytes may
  // hold what looks like a zip64 locator and end record, which miniz's rule
  // would follow.
  Options plain;
  plain.zip64 = Options::ZIP64_WHEN_SATURATED;
  try {
    Directory d2(src, plain);
    if (d2.entries().size() != kept.size()) violation("the rewritten archive lists another number of entries");
    for (size_t i = 0; i < kept.size(); ++i) {
      const Entry &en = d2.entries()[i];
      if (en.name != kept[i].name || en.usize != kept[i].bytes.size()) violation("the rewritten archive changed an entry");
    }
    // The names and sizes are the same; the bytes come from the rewritten
    // file, read through its own directory.
    for (size_t i = 0; i < kept.size(); ++i) {
      const Entry &en = d2.entries()[i];
      std::string bytes;
      const Contents c = d2.stream(en, d2.data_offset(en, true), [&](const unsigned char *p, size_t n) {
        bytes.append(reinterpret_cast<const char *>(p), n);
      });
      if (!c.intact(en) || bytes != kept[i].bytes) violation("an intact entry did not round-trip");
    }
  } catch (const Error &e) {
    violation(std::string("the rewritten archive was refused: ") + e.what());
  }
}

void read_all(const uint8_t *data, size_t size, const Options &opt, bool round_trip) {
  MemorySource src(data, size);
  try {
    Directory dir(src, opt);
    if (opt.strict_counts && dir.entries().empty()) violation("a strict read listed no entries");
    check_entries(dir, round_trip);
  } catch (const Error &e) {
    if (!*e.what()) violation("a refusal without a message");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Options lenient;
  lenient.zip64 = Options::ZIP64_WHEN_SATURATED;
  lenient.strict_counts = false;
  read_all(data, size, Options(), true);
  read_all(data, size, lenient, false);
  if (size) {
    read_all(data + 1, size - 1, Options(), true);
    read_all(data + 1, size - 1, lenient, false);
  }
  return 0;
}
