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

#include <caffe2/serialize/read_adapter_interface.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace ctorch {
namespace {

struct Record {
  std::string name;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t csize = 0, usize = 0, offset = 0;
};

class Zip {
 public:
  explicit Zip(const caffe2::serialize::ReadAdapterInterface &in) : in_(in), size_(in.size()) {}

  // The central directory (ZIP64 where the fields say so).
  std::vector<Record> records() {
    const uint64_t tail = std::min<uint64_t>(size_, 22 + 0xFFFF);
    if (tail < 22) bad("no end of central directory");
    std::vector<unsigned char> t(tail);
    read(size_ - tail, t.data(), tail);
    long eocd = -1;
    for (long k = static_cast<long>(tail) - 22; k >= 0 && eocd < 0; --k)
      if (le(&t[k], 4) == 0x06054b50) eocd = k;
    if (eocd < 0) bad("no end of central directory");
    uint64_t count = le(&t[eocd + 10], 2), cd_size = le(&t[eocd + 12], 4), cd_off = le(&t[eocd + 16], 4);
    if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_off == 0xFFFFFFFF) {
      uint64_t at = size_ - tail + static_cast<uint64_t>(eocd);
      if (at < 20) bad("no ZIP64 locator");
      unsigned char loc[20], z[56];
      read(at - 20, loc, 20);
      if (le(loc, 4) != 0x07064b50) bad("no ZIP64 locator");
      read(le(loc + 8, 8), z, 56);
      if (le(z, 4) != 0x06064b50) bad("no ZIP64 end of central directory");
      count = le(z + 32, 8), cd_size = le(z + 40, 8), cd_off = le(z + 48, 8);
    }
    if (cd_off > size_ || cd_size > size_ - cd_off) bad("central directory past the end of the file");
    std::vector<unsigned char> cd(static_cast<size_t>(cd_size));
    read(cd_off, cd.data(), cd.size());
    std::vector<Record> out;
    size_t p = 0;
    for (uint64_t i = 0; i < count; ++i) {
      if (cd.size() - p < 46 || le(&cd[p], 4) != 0x02014b50) bad("corrupt central directory");
      Record r;
      r.method = static_cast<uint16_t>(le(&cd[p + 10], 2));
      r.crc = static_cast<uint32_t>(le(&cd[p + 16], 4));
      r.csize = le(&cd[p + 20], 4);
      r.usize = le(&cd[p + 24], 4);
      size_t n = le(&cd[p + 28], 2), m = le(&cd[p + 30], 2), c = le(&cd[p + 32], 2);
      r.offset = le(&cd[p + 42], 4);
      if (cd.size() - p - 46 < n + m + c) bad("corrupt central directory");
      r.name.assign(reinterpret_cast<const char *>(&cd[p + 46]), n);
      // ZIP64 extra field: the 8-byte values of the fields that are all ones.
      for (size_t e = p + 46 + n; e + 4 <= p + 46 + n + m;) {
        size_t id = le(&cd[e], 2), len = le(&cd[e + 2], 2), v = e + 4;
        if (e + 4 + len > p + 46 + n + m) break;
        if (id == 1) {
          uint64_t *fields[3] = {&r.usize, &r.csize, &r.offset};
          for (uint64_t *f : fields)
            if (*f == 0xFFFFFFFF && v + 8 <= e + 4 + len) *f = le(&cd[v], 8), v += 8;
        }
        e += 4 + len;
      }
      out.push_back(std::move(r));
      p += 46 + n + m + c;
    }
    return out;
  }

  // Inflates r's stream in chunks (memory bounded whatever r claims).
  void check_deflated(const Record &r) {
    unsigned char h[30];
    read(r.offset, h, 30);
    if (le(h, 4) != 0x04034b50) bad("corrupt local header of '" + r.name + "'");
    uint64_t at = r.offset + 30 + le(h + 26, 2) + le(h + 28, 2);
    if (at > size_ || r.csize > size_ - at) bad("'" + r.name + "' is larger than the file");
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw std::bad_alloc();
    struct End {
      z_stream *z;
      ~End() { inflateEnd(z); }
    } end{&z};
    std::vector<unsigned char> src(64 * 1024), dst(64 * 1024);
    uint64_t left = r.csize, produced = 0;
    uLong crc = crc32(0L, Z_NULL, 0);
    int rc = Z_OK;
    while (rc == Z_OK) {
      if (z.avail_in == 0 && left > 0) {
        size_t k = static_cast<size_t>(std::min<uint64_t>(left, src.size()));
        read(at, src.data(), k);
        at += k, left -= k;
        z.next_in = src.data();
        z.avail_in = static_cast<uInt>(k);
      }
      z.next_out = dst.data();
      z.avail_out = static_cast<uInt>(dst.size());
      rc = inflate(&z, Z_NO_FLUSH);
      size_t got = dst.size() - z.avail_out;
      produced += got;
      crc = crc32(crc, dst.data(), static_cast<uInt>(got));
      if (produced > r.usize) break;
      if (rc == Z_BUF_ERROR && z.avail_in == 0 && left == 0) break;  // the stream stops short
      if (rc == Z_BUF_ERROR) rc = Z_OK;  // no progress possible this round only
    }
    std::string why;
    if (rc == Z_DATA_ERROR) why = std::string("invalid deflate data: ") + (z.msg ? z.msg : "zlib error");
    else if (rc == Z_BUF_ERROR) why = "the stream ends before its last block";
    else if (rc != Z_STREAM_END && rc != Z_OK) why = "zlib error " + std::to_string(rc);
    else if (produced != r.usize) why = "it inflates to more than " + std::to_string(r.usize) + " bytes";
    else if (crc != r.crc) why = "its CRC-32 does not match";
    if (rc == Z_STREAM_END && produced < r.usize) why = "it inflates to " + std::to_string(produced) + " bytes";
    if (!why.empty())
      fail(CTORCH_VALUE, "record '" + r.name + "' does not inflate to the " + std::to_string(r.usize) +
           " bytes and CRC-32 its directory declares (" + why + "; libtorch's zip reader would hand back " +
           "bytes it never wrote)");
  }

 private:
  const caffe2::serialize::ReadAdapterInterface &in_;
  uint64_t size_;

  [[noreturn]] void bad(const std::string &why) { fail(CTORCH_VALUE, "not a readable torch zip archive: " + why); }
  void read(uint64_t at, void *buf, uint64_t n) {
    if (at > size_ || n > size_ - at) bad("a read past the end of the file");
    if (n && in_.read(at, buf, static_cast<size_t>(n), "ctorch zip check") != n) bad("a short read");
  }
  static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int k = 0; k < n; ++k) v |= static_cast<uint64_t>(p[k]) << (8 * k);
    return v;
  }
};

}  // namespace

void check_deflated_records(const caffe2::serialize::ReadAdapterInterface &in) {
  Zip zip(in);
  for (const Record &r : zip.records())
    if (r.method == 8) zip.check_deflated(r);
}

}  // namespace ctorch
