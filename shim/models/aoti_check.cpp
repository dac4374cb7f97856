// The package check of aoti_check.h. The zip directory is read as miniz
// reads it (zip64 end records win over the 32-bit fields; names compared
// without regard to case), the entries libtorch's loader would extract are
// selected by the loader's own rule (names starting with
// <prefix>data/aotinductor/<model> or <prefix>data/constants), and those are
// checked completely: safe names, one output path each, readable and CRC-
// correct contents, exactly one shared library for this machine, and its
// metadata record.
#include "aoti_check.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
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

uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int k = 0; k < n; ++k) v |= static_cast<uint64_t>(p[k]) << (8 * k);
  return v;
}

struct Entry {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t csize = 0, usize = 0, offset = 0;
};

std::vector<Entry> read_directory(const unsigned char *d, size_t size) {
  if (size < 22) bad("too short for a zip file");
  size_t tail = std::min<size_t>(size, 22 + 65535);
  size_t eocd = SIZE_MAX;
  for (size_t i = size - 22 + 1; i-- > size - tail;)
    if (le(d + i, 4) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd == SIZE_MAX) bad("not a zip file (no end-of-directory record)");
  uint64_t count = le(d + eocd + 10, 2), cd_size = le(d + eocd + 12, 4), cd_off = le(d + eocd + 16, 4);
  if (eocd >= 20 && le(d + eocd - 20, 4) == 0x07064b50) {
    uint64_t z = le(d + eocd - 20 + 8, 8);
    if (z <= size && size - z >= 56 && le(d + z, 4) == 0x06064b50) {
      if (le(d + z + 24, 8) != le(d + z + 32, 8)) bad("zip64 entry counts disagree");
      count = le(d + z + 32, 8);
      cd_size = le(d + z + 40, 8);
      cd_off = le(d + z + 48, 8);
    }
  }
  if (count == 0) bad("the archive holds no files");
  if (cd_size > size || cd_off > size - cd_size) bad("the zip directory lies beyond the end of the file");
  if (count > cd_size / 46) bad("the zip directory is too small for its entry count");
  std::vector<Entry> out;
  out.reserve(static_cast<size_t>(count));
  const unsigned char *p = d + cd_off, *end = p + cd_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (end - p < 46 || le(p, 4) != 0x02014b50) bad("corrupt zip directory entry " + std::to_string(i));
    Entry en;
    en.flags = static_cast<uint16_t>(le(p + 8, 2));
    en.method = static_cast<uint16_t>(le(p + 10, 2));
    en.crc = static_cast<uint32_t>(le(p + 16, 4));
    en.csize = le(p + 20, 4);
    en.usize = le(p + 24, 4);
    size_t nlen = le(p + 28, 2), xlen = le(p + 30, 2), clen = le(p + 32, 2);
    en.offset = le(p + 42, 4);
    if (static_cast<size_t>(end - p - 46) < nlen + xlen + clen) bad("corrupt zip directory entry " + std::to_string(i));
    en.name.assign(reinterpret_cast<const char *>(p + 46), nlen);
    const unsigned char *x = p + 46 + nlen, *xe = x + xlen;
    while (xe - x >= 4) {  // zip64 extra field: the saturated fields, in order
      size_t id = le(x, 2), len = le(x + 2, 2);
      if (static_cast<size_t>(xe - x - 4) < len) break;
      if (id == 1) {
        const unsigned char *f = x + 4, *fe = f + len;
        if (en.usize == 0xFFFFFFFF && fe - f >= 8) en.usize = le(f, 8), f += 8;
        if (en.csize == 0xFFFFFFFF && fe - f >= 8) en.csize = le(f, 8), f += 8;
        if (en.offset == 0xFFFFFFFF && fe - f >= 8) en.offset = le(f, 8), f += 8;
      }
      x += 4 + len;
    }
    out.push_back(std::move(en));
    p += 46 + nlen + xlen + clen;
  }
  return out;
}

std::string lower(std::string s) {
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool starts_with(const std::string &s, const std::string &p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string &s, const std::string &e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

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
void verify_contents(const unsigned char *d, size_t size, const Entry &en, unsigned char *head, size_t head_len) {
  std::fill(head, head + head_len, 0);
  if (en.flags & 1) bad("entry '" + en.name + "' is encrypted");
  if (en.method != 0 && en.method != 8) bad("entry '" + en.name + "' uses zip method " + std::to_string(en.method));
  if (en.offset > size || size - en.offset < 30 || le(d + en.offset, 4) != 0x04034b50)
    bad("entry '" + en.name + "' has no valid local header");
  uint64_t lname = le(d + en.offset + 26, 2);
  uint64_t start = en.offset + 30 + lname + le(d + en.offset + 28, 2);
  // The local header repeats the name: a different one means a damaged
  // header (miniz reads the directory's and does not compare).
  if (lname != en.name.size() || size - en.offset - 30 < lname ||
      en.name.compare(0, std::string::npos, reinterpret_cast<const char *>(d + en.offset + 30), lname) != 0)
    bad("entry '" + en.name + "' has another name in its local header (the file is damaged)");
  if (start > size || en.csize > size - start) bad("entry '" + en.name + "' lies beyond the end of the file");
  const unsigned char *src = d + start;
  uLong crc = crc32(0L, Z_NULL, 0);
  if (en.method == 0) {
    if (en.csize != en.usize) bad("entry '" + en.name + "' is stored with two different sizes");
    for (uint64_t done = 0; done < en.csize;) {
      uInt n = static_cast<uInt>(std::min<uint64_t>(en.csize - done, 1u << 30));
      crc = crc32(crc, src + done, n);
      done += n;
    }
    std::copy(src, src + std::min<uint64_t>(head_len, en.csize), head);
  } else {
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) bad("zlib could not be initialised");
    std::vector<unsigned char> buf(1 << 16);
    uint64_t fed = 0, total = 0;
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      if (zs.avail_in == 0 && fed < en.csize) {
        zs.next_in = const_cast<unsigned char *>(src + fed);
        zs.avail_in = static_cast<uInt>(std::min<uint64_t>(en.csize - fed, 1u << 30));
        fed += zs.avail_in;
      }
      zs.next_out = buf.data();
      zs.avail_out = static_cast<uInt>(buf.size());
      rc = inflate(&zs, Z_NO_FLUSH);
      size_t got = buf.size() - zs.avail_out;
      if (total < head_len) std::copy(buf.data(), buf.data() + std::min<uint64_t>(got, head_len - total), head + total);
      crc = crc32(crc, buf.data(), static_cast<uInt>(got));
      total += got;
      if (total > en.usize) rc = Z_DATA_ERROR;
      if (rc != Z_OK && rc != Z_STREAM_END) break;
      if (rc == Z_OK && got == 0 && zs.avail_in == 0 && fed >= en.csize) {
        rc = Z_DATA_ERROR;  // input exhausted before the end of the stream
        break;
      }
    }
    inflateEnd(&zs);
    if (rc != Z_STREAM_END || total != en.usize) bad("entry '" + en.name + "' does not inflate to its declared size");
  }
  if (static_cast<uint32_t>(crc) != en.crc) bad("CRC mismatch in entry '" + en.name + "' (the file is corrupt)");
}

// The ELF identification and header fields a shared library for this
// process must have.
void require_loadable_elf(const std::string &name, const unsigned char *h) {
  if (!(h[0] == 0x7f && h[1] == 'E' && h[2] == 'L' && h[3] == 'F')) bad("'" + name + "' is not an ELF shared library");
  if (h[4] != (sizeof(void *) == 8 ? 2 : 1)) bad("'" + name + "' is built for another word size");
  const uint16_t one = 1;
  const bool little = *reinterpret_cast<const unsigned char *>(&one) == 1;
  if (h[5] != (little ? 1 : 2)) bad("'" + name + "' is built for another byte order");
  if (le(h + 16, 2) != 3) bad("'" + name + "' is not a shared library (ELF type " + std::to_string(le(h + 16, 2)) + ")");
#if defined(__x86_64__)
  const uint64_t machine = 62;
#elif defined(__aarch64__)
  const uint64_t machine = 183;
#else
  const uint64_t machine = 0;
#endif
  if (little && machine && le(h + 18, 2) != machine)
    bad("'" + name + "' is built for another processor (ELF machine " + std::to_string(le(h + 18, 2)) + ")");
}

std::string top_folder(const std::string &n) { return n.substr(0, n.find('/')); }

}  // namespace

PackageCheck check_package(const unsigned char *data, size_t size, const std::string &model) {
  PackageCheck r;
  try {
    if (model.empty() || model.find('/') != std::string::npos || model.find('\\') != std::string::npos ||
        model == "." || model == "..")
      bad("model name '" + model + "' is not a directory name");
    std::vector<Entry> entries = read_directory(data, size);
    for (const Entry &en : entries)
      if (en.name.find('\0') != std::string::npos) bad("an entry's name holds a NUL byte");
    // The loader's prefix rule: the first two entries' top folder, when equal.
    if (entries.size() >= 2 && top_folder(entries[0].name) == top_folder(entries[1].name) &&
        !top_folder(entries[0].name).empty())
      r.prefix = top_folder(entries[0].name) + "/";
    const std::string models_dir = r.prefix + "data/aotinductor/";
    const std::string model_dir = models_dir + model, const_dir = r.prefix + "data/constants";
    std::set<std::string> names;
    for (const Entry &en : entries) {
      if (!starts_with(en.name, models_dir)) continue;
      std::string rest = en.name.substr(models_dir.size());
      size_t slash = rest.find('/');
      if (slash != std::string::npos && slash > 0) names.insert(rest.substr(0, slash));
    }
    r.models.assign(names.begin(), names.end());

    std::set<std::string> outputs;
    const Entry *so = nullptr;
    size_t n_so = 0;
    bool has_cpp = false;
    std::set<std::string> extracted;
    for (const Entry &en : entries) {
      bool in_model = starts_with(en.name, model_dir), in_const = starts_with(en.name, const_dir);
      if (!in_model && !in_const) continue;
      require_safe_name(en.name);
      std::string out = in_model ? en.name : model_dir + en.name.substr(en.name.rfind('/'));
      if (!outputs.insert(lower(out)).second)
        bad("two entries would be extracted to '" + out + "' (names differ only in case, or a constant shadows a file)");
      unsigned char head[64];
      verify_contents(data, size, en, head, sizeof head);
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
  }
  return r;
}

}  // namespace aoti
}  // namespace ctorch
