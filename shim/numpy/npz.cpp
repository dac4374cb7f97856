// NumPy's .npz archives: a zip of NAME.npy members (numpy.savez stores
// them, savez_compressed deflates them). Read over zip/ (every offset and
// size checked, deflate inflated in bounded chunks and CRC-checked), each
// member parsed by npy::read; written as a plain stored zip whose members
// are numpy.save's bytes (the archive's own fields, such as timestamps,
// differ from Python's zipfile, which stamps the current time).
#include "numpy.h"
#include "files/files.h"

#include <unordered_set>

namespace ctorch {
namespace npz {
namespace {

[[noreturn]] void bad(const std::string &what, const std::string &why) {
  fail(CTORCH_VALUE, what + " is not a readable .npz archive: " + why);
}

void put(std::string &s, uint64_t v, int n) {
  for (int k = 0; k < n; ++k) s.push_back(static_cast<char>((v >> (8 * k)) & 0xFF));
}

// The members' .npy bytes, then a stored zip of them.
void write(const Sink &sink, const ctorch_tensor_dict_s &d) {
  std::string cd;
  uint64_t off = 0;
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < d.keys.size(); ++i) {
    const std::string name = d.keys[i] + ".npy";
    if (d.keys[i].empty() || name.size() > 0xFFFF) fail_arg("d", "entry " + std::to_string(i) + " has an empty or too long name");
    std::string data;
    npy::write([&](const void *p, size_t n) -> size_t {
      data.append(static_cast<const char *>(p), n);
      return n;
    }, d.values[i]);
    if (data.size() >= 0xFFFFFFFFu || off >= 0xFFFFFFFFu)
      fail(CTORCH_NOT_IMPLEMENTED, "'" + d.keys[i] + "': .npz members and archives of 4 GiB or more are not written (zip64)");
    const uint32_t crc = zip::crc32_of(data.data(), data.size());
    std::string h;
    put(h, 0x04034b50, 4); put(h, 20, 2); put(h, 0, 2); put(h, 0, 2); put(h, 0, 2); put(h, 0x21, 2);
    put(h, crc, 4); put(h, data.size(), 4); put(h, data.size(), 4); put(h, name.size(), 2); put(h, 0, 2);
    h += name;
    put(cd, 0x02014b50, 4); put(cd, 20, 2); put(cd, 20, 2); put(cd, 0, 2); put(cd, 0, 2); put(cd, 0, 2); put(cd, 0x21, 2);
    put(cd, crc, 4); put(cd, data.size(), 4); put(cd, data.size(), 4); put(cd, name.size(), 2);
    put(cd, 0, 2); put(cd, 0, 2); put(cd, 0, 2); put(cd, 0, 2); put(cd, 0x81A4u << 16, 4); put(cd, off, 4);
    cd += name;
    sink(h.data(), h.size());
    sink(data.data(), data.size());
    off += h.size() + data.size();
  }
  if (d.keys.size() > 0xFFFF || off + cd.size() >= 0xFFFFFFFFu)
    fail(CTORCH_NOT_IMPLEMENTED, ".npz archives of 65,535 members or 4 GiB or more are not written (zip64)");
  std::string end;
  put(end, 0x06054b50, 4); put(end, 0, 2); put(end, 0, 2); put(end, d.keys.size(), 2); put(end, d.keys.size(), 2);
  put(end, cd.size(), 4); put(end, off, 4); put(end, 0, 2);
  sink(cd.data(), cd.size());
  sink(end.data(), end.size());
}

// One member's bytes, inflated if deflated, in memory; charged first.
std::string member(const zip::Directory &dir, const zip::Entry &en, const std::string &what, LoadBudget &budget) {
  try {
    zip::Directory::require_readable(en);
    const uint64_t start = dir.data_offset(en, true);
    // Deflate expands at most 1032:1, so a member can claim no more than
    // that of the archive; the claim is charged before it is read.
    if (en.usize / 1032 > dir.file_size()) bad(what, "'" + en.name + "' claims more bytes than deflate can expand to");
    budget.charge_data(en.usize);
    std::string out;
    zip::Contents c = dir.stream(en, start, [&](const unsigned char *p, size_t n) {
      out.append(reinterpret_cast<const char *>(p), n);
    });
    if (!c.intact(en)) bad(what, "'" + en.name + "' is truncated, corrupt or fails its CRC check");
    return out;
  } catch (const zip::Error &e) {
    bad(what, e.what());
  }
}

ctorch_tensor_dict read(const ByteSource &src) {
  const std::string what = src.name();
  std::unique_ptr<zip::Source> in = open_source(src);
  zip::Options opt;
  opt.strict_counts = false;  // numpy.savez() with no arrays writes an empty archive
  std::unique_ptr<zip::Directory> dir;
  try {
    dir.reset(new zip::Directory(*in, opt));
  } catch (const zip::Error &e) {
    bad(what, e.what());
  }
  LoadBudget budget(what, 0);
  auto d = std::make_unique<ctorch_tensor_dict_s>();
  std::unordered_set<std::string> seen;
  for (const zip::Entry &en : dir->entries()) {
    const std::string &n = en.name;
    if (n.size() < 5 || n.compare(n.size() - 4, 4, ".npy") != 0)
      bad(what, "member '" + n + "' is not a .npy array (NumPy returns such members as bytes; ctorch reads arrays only)");
    std::string key = n.substr(0, n.size() - 4);
    if (!seen.insert(key).second) bad(what, "member '" + n + "' appears twice");
    std::string bytes = member(*dir, en, what, budget);
    zip::MemorySource ms(bytes.data(), bytes.size());
    LoadBudget none(what, 0);  // the member's bytes were charged above
    d->values.push_back(npy::read(ms, what + " member '" + n + "'", none));
    d->keys.push_back(std::move(key));
  }
  return d.release();
}

}  // namespace
}  // namespace npz
}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_npz_save(const char *path, ctorch_tensor_dict d) {
  CTORCH_TRY
  ctorch::require_ptr(path, "path");
  if (!*path) ctorch::fail_arg("path", "is empty");
  ctorch::check_handle(d, "d");
  ctorch::atomic_write_with(path, [&](const ctorch::Sink &s) { ctorch::npz::write(s, *d); });
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_npz_save_to_buffer(size_t *out_len, void *buf, size_t cap, ctorch_tensor_dict d) {
  CTORCH_TRY
  ctorch::require_buffer_args(out_len, buf, cap);
  ctorch::check_handle(d, "d");
  ctorch::write_to_buffer(out_len, buf, cap, [&](const ctorch::Sink &s) { ctorch::npz::write(s, *d); });
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_npz_load(ctorch_tensor_dict *out, const char *path) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(path, "path");
  if (!*path) ctorch::fail_arg("path", "is empty");
  *out = ctorch::npz::read(ctorch::ByteSource::file(path));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_npz_load_from_buffer(ctorch_tensor_dict *out, const void *data, size_t len) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  if (!data && len) ctorch::fail_arg("data", "is NULL with len " + std::to_string(len));
  *out = ctorch::npz::read(ctorch::ByteSource::memory(data, len));
  CTORCH_CATCH
}

}  // extern "C"
