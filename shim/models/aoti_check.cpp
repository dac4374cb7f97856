// The package check of aoti_check.h. The zip directory is read as miniz
// reads it (zip/zip_directory.h's defaults: zip64 end records win over the
// 32-bit fields; output names compared without regard to case), the entries
// libtorch's loader would extract are selected by the loader's own rule
// (names starting with <prefix>data/aotinductor/<model> or
// <prefix>data/constants), and those are checked completely: safe names,
// one output path each, readable and CRC-correct contents, exactly one
// shared library for this machine, and its metadata record.
#include "text/text.h"
#include "aoti_check.h"

#include "zip/zip_directory.h"

#include <algorithm>
#include <cstdint>
#include <set>

namespace ctorch {
namespace aoti {
namespace {

struct Refusal {
  PackageCheck::Verdict verdict;
  std::string message;
};
[[noreturn]] void bad(const std::string &m) { throw Refusal{PackageCheck::BAD, m}; }

using text::ends_with;
using text::starts_with;

// A name the loader joins to its temporary directory: relative, no empty,
// "." or ".." component, no backslash (a separator on Windows, and in
// libtorch's path normalisation).
void require_safe_name(const std::string &n) {
  if (n.empty() || n[0] == '/' || n.back() == '/' || n.find('\\') != std::string::npos)
    bad("entry '" + n + "' is not a relative file name");
  size_t start = 0;
  for (;;) {
    size_t slash = n.find('/', start);
    std::string part = n.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == "..")
      bad("entry '" + n + "' has a '" + part + "' path component (it would be written outside the package's directory)");
    if (slash == std::string::npos) return;
    start = slash + 1;
  }
}

// Reads the entry's contents as miniz would extract them, checking sizes and
// CRC; copies the first bytes into head (zero-filled past the end).
void verify_contents(const zip::Directory &dir, const zip::Entry &en, unsigned char *head, size_t head_len) {
  std::fill(head, head + head_len, 0);
  zip::Directory::require_readable(en);
  uint64_t got = 0;
  zip::Contents c = dir.stream(en, dir.data_offset(en, /*check_name=*/true), [&](const unsigned char *p, size_t n) {
    if (got < head_len) std::copy(p, p + std::min<uint64_t>(n, head_len - got), head + got);
    got += n;
  });
  if (c.outcome == zip::Contents::NO_MEMORY) bad("zlib could not be initialised");
  if (c.outcome != zip::Contents::COMPLETE || c.produced != en.usize)
    bad("entry '" + en.name + "' does not inflate to its declared size");
  if (c.crc != en.crc) bad("CRC mismatch in entry '" + en.name + "' (the file is corrupt)");
}

// The ELF identification and header fields a shared library for this
// process must have.
void require_loadable_elf(const std::string &name, const unsigned char *h) {
  if (!(h[0] == 0x7f && h[1] == 'E' && h[2] == 'L' && h[3] == 'F')) bad("'" + name + "' is not an ELF shared library");
  if (h[4] != (sizeof(void *) == 8 ? 2 : 1)) bad("'" + name + "' is built for another word size");
  const uint16_t one = 1;
  const bool little = *reinterpret_cast<const unsigned char *>(&one) == 1;
  if (h[5] != (little ? 1 : 2)) bad("'" + name + "' is built for another byte order");
  const unsigned type = h[16] | h[17] << 8, machine_here = h[18] | h[19] << 8;
  if (type != 3) bad("'" + name + "' is not a shared library (ELF type " + std::to_string(type) + ")");
#if defined(__x86_64__)
  const uint64_t machine = 62;
#elif defined(__aarch64__)
  const uint64_t machine = 183;
#else
  const uint64_t machine = 0;
#endif
  if (little && machine && machine_here != machine)
    bad("'" + name + "' is built for another processor (ELF machine " + std::to_string(machine_here) + ")");
}

std::string top_folder(const std::string &n) { return n.substr(0, n.find('/')); }

}  // namespace

PackageCheck check_package(const unsigned char *data, size_t size, const std::string &model) {
  PackageCheck r;
  try {
    if (model.empty() || model.find('/') != std::string::npos || model.find('\\') != std::string::npos ||
        model == "." || model == "..")
      bad("model name '" + model + "' is not a directory name");
    zip::MemorySource src(data, size);
    const zip::Directory dir(src);
    const std::vector<zip::Entry> &entries = dir.entries();
    for (const zip::Entry &en : entries)
      if (en.name.find('\0') != std::string::npos) bad("an entry's name holds a NUL byte");
    // The loader's prefix rule: the first two entries' top folder, when equal.
    if (entries.size() >= 2 && top_folder(entries[0].name) == top_folder(entries[1].name) &&
        !top_folder(entries[0].name).empty())
      r.prefix = top_folder(entries[0].name) + "/";
    const std::string models_dir = r.prefix + "data/aotinductor/";
    const std::string model_dir = models_dir + model, const_dir = r.prefix + "data/constants";
    std::set<std::string> names;
    for (const zip::Entry &en : entries) {
      if (!starts_with(en.name, models_dir)) continue;
      std::string rest = en.name.substr(models_dir.size());
      size_t slash = rest.find('/');
      if (slash != std::string::npos && slash > 0) names.insert(rest.substr(0, slash));
    }
    r.models.assign(names.begin(), names.end());

    std::set<std::string> outputs;
    const zip::Entry *so = nullptr;
    size_t n_so = 0;
    bool has_cpp = false;
    std::set<std::string> extracted;
    for (const zip::Entry &en : entries) {
      bool in_model = starts_with(en.name, model_dir), in_const = starts_with(en.name, const_dir);
      if (!in_model && !in_const) continue;
      require_safe_name(en.name);
      std::string out = in_model ? en.name : model_dir + en.name.substr(en.name.rfind('/'));
      if (!outputs.insert(text::ascii_lower(out)).second)
        bad("two entries would be extracted to '" + out + "' (names differ only in case, or a constant shadows a file)");
      unsigned char head[64];
      verify_contents(dir, en, head, sizeof head);
      extracted.insert(out);
      if (ends_with(en.name, ".so")) {
        require_loadable_elf(en.name, head);
        so = &en;
        ++n_so;
      }
      if (ends_with(en.name, ".cpp")) has_cpp = true;
    }
    if (n_so == 0) {
      if (has_cpp)
        throw Refusal{PackageCheck::UNSUPPORTED,
                      "model '" + model +
                          "' has no compiled library, only C++ sources (aoti_compile_and_package with "
                          "package_cpp_only): ctorch does not let libtorch compile them, with a command line read "
                          "from the package"};
      std::string list;
      for (const auto &m : r.models) list += (list.empty() ? "" : ", ") + m;
      bad("no model named '" + model + "' (models in the archive: " + (list.empty() ? "none" : list) + ")");
    }
    if (n_so > 1) bad("model '" + model + "' holds " + std::to_string(n_so) + " shared libraries; the loader uses one");
    const std::string meta = so->name.substr(0, so->name.size() - 3) + "_metadata.json";
    if (!extracted.count(meta)) bad("'" + meta + "' is missing (the model's metadata)");
    r.so_entry = so->name;
    r.verdict = PackageCheck::OK;
  } catch (const Refusal &e) {
    r.verdict = e.verdict;
    r.message = e.message;
  } catch (const zip::Error &e) {
    r.verdict = PackageCheck::BAD;
    r.message = e.what();
  }
  return r;
}

}  // namespace aoti
}  // namespace ctorch
