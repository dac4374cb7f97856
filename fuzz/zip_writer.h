// A minimal "stored" (uncompressed) zip writer, so the loader harnesses can
// wrap fuzzed records (a pickle, TorchScript code) in a well-formed archive:
// mutated raw zip bytes mostly die at the CRC check, and the interesting
// code (ctorch's unpickler, the TorchScript importer) sits behind it.
// records_archive() makes such an archive of any set of records.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fz {

class ZipWriter {
 public:
  void add(const std::string &name, const void *data, size_t size) {
    Entry e{name, (uint32_t)crc32(0L, static_cast<const Bytef *>(data), (uInt)size), (uint32_t)size, (uint32_t)out_.size()};
    put32(0x04034b50);
    put16(20); put16(0); put16(0); put16(0); put16(0);
    put32(e.crc); put32(e.size); put32(e.size);
    put16((uint16_t)name.size()); put16(0);
    out_.insert(out_.end(), name.begin(), name.end());
    const uint8_t *p = static_cast<const uint8_t *>(data);
    out_.insert(out_.end(), p, p + size);
    entries_.push_back(e);
  }
  void add(const std::string &name, const std::string &s) { add(name, s.data(), s.size()); }
  std::vector<uint8_t> finish() {
    uint32_t cd = (uint32_t)out_.size();
    for (const auto &e : entries_) {
      put32(0x02014b50);
      put16(20); put16(20); put16(0); put16(0); put16(0); put16(0);
      put32(e.crc); put32(e.size); put32(e.size);
      put16((uint16_t)e.name.size()); put16(0); put16(0); put16(0); put16(0);
      put32(0); put32(e.offset);
      out_.insert(out_.end(), e.name.begin(), e.name.end());
    }
    uint32_t cd_size = (uint32_t)out_.size() - cd;
    put32(0x06054b50);
    put16(0); put16(0);
    put16((uint16_t)entries_.size()); put16((uint16_t)entries_.size());
    put32(cd_size); put32(cd); put16(0);
    return std::move(out_);
  }

 private:
  struct Entry {
    std::string name;
    uint32_t crc, size, offset;
  };
  std::vector<uint8_t> out_;
  std::vector<Entry> entries_;
  void put16(uint16_t v) {
    out_.push_back((uint8_t)v);
    out_.push_back((uint8_t)(v >> 8));
  }
  void put32(uint32_t v) {
    put16((uint16_t)v);
    put16((uint16_t)(v >> 16));
  }
};

// A zip archive of the records the bytes describe, one after the other:
// [u8 name length][name][u16 data length][data], until the bytes end (a
// short last field takes what is left). Any archive can be written this way
// (fuzz/make_seeds.py's records() does it for its seeds), so a harness
// reaches every record of a real file with correct CRCs, whatever the
// fuzzer changes in the names and contents.
inline std::vector<uint8_t> records_archive(const uint8_t *p, size_t n) {
  ZipWriter z;
  auto take = [&](size_t want, const uint8_t **at) {
    size_t k = want < n ? want : n;
    *at = p;
    p += k;
    n -= k;
    return k;
  };
  while (n) {
    const uint8_t *f = nullptr;
    size_t name_len = take(1, &f) ? f[0] : 0;
    const uint8_t *name = nullptr;
    name_len = take(name_len, &name);
    size_t data_len = take(2, &f) == 2 ? (size_t)(f[0] | (f[1] << 8)) : 0;
    const uint8_t *data = nullptr;
    data_len = take(data_len, &data);
    z.add(std::string(reinterpret_cast<const char *>(name), name_len), data, data_len);
  }
  return z.finish();
}

}  // namespace fz
