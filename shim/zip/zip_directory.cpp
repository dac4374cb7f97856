// The zip reader of zip_directory.h. Record layouts (APPNOTE 4.3): end of
// central directory 22 bytes + comment; zip64 locator 20 bytes right before
// it; zip64 end record 56 bytes; central entry 46 bytes + name, extra,
// comment; local header 30 bytes + name, extra.
#include "zip_directory.h"
#include "text/text.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

namespace ctorch {
namespace zip {
namespace {

constexpr uint32_t kEndRecord = 0x06054b50, kZip64Locator = 0x07064b50, kZip64End = 0x06064b50,
                   kCentral = 0x02014b50, kLocal = 0x04034b50;
constexpr size_t kChunk = 64 * 1024;

[[noreturn]] void refuse(const std::string &why) { throw Error(why); }

uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int k = 0; k < n; ++k) v |= static_cast<uint64_t>(p[k]) << (8 * k);
  return v;
}

bool same_ignoring_case(const std::string &a, const std::string &b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (text::ascii_lower(a[k]) != text::ascii_lower(b[k])) return false;
  return true;
}

}  // namespace

uint32_t crc32_of(const void *data, size_t n) {
  const Bytef *p = static_cast<const Bytef *>(data);
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n) {
    uInt k = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = crc32(crc, p, k);
    p += k;
    n -= k;
  }
  return static_cast<uint32_t>(crc);
}

void MemorySource::read(uint64_t offset, void *buf, size_t n) const {
  if (offset > size_ || n > size_ - offset) refuse("a structure lies beyond the end of the file");
  if (n) std::memcpy(buf, data_ + offset, n);
}

void Directory::read(uint64_t offset, void *buf, size_t n) const {
  if (offset > size_ || n > size_ - offset) refuse("a structure lies beyond the end of the file");
  if (n) src_.read(offset, buf, n);
}

Directory::Directory(const Source &src, const Options &opt) : src_(src), size_(src.size()) {
  if (size_ < 22) refuse("too short for a zip file");
  // The end record is in the last 22 + 65535 bytes (its comment is at most
  // 65535); the search runs backwards, so the last signature wins.
  const uint64_t tail = std::min<uint64_t>(size_, 22 + 0xFFFF);
  std::vector<unsigned char> buf(static_cast<size_t>(tail));
  read(size_ - tail, buf.data(), buf.size());
  size_t eocd = SIZE_MAX;
  for (size_t i = buf.size() - 22 + 1; i-- > 0;)
    if (le(&buf[i], 4) == kEndRecord) {
      eocd = i;
      break;
    }
  if (eocd == SIZE_MAX) refuse("not a zip file (no end-of-directory record)");
  const unsigned char *e = &buf[eocd];
  uint64_t count = le(e + 10, 2), cd_size = le(e + 12, 4), cd_off = le(e + 16, 4);
  const uint64_t eocd_pos = size_ - tail + eocd;

  unsigned char loc[20], z[56];
  bool zip64 = false;
  if (opt.zip64 == Options::ZIP64_WINS) {
    if (eocd_pos >= 20) {
      read(eocd_pos - 20, loc, 20);
      const uint64_t z_off = le(loc + 8, 8);
      if (le(loc, 4) == kZip64Locator && z_off <= size_ && size_ - z_off >= 56) {
        read(z_off, z, 56);
        zip64 = le(z, 4) == kZip64End;
      }
    }
  } else if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_off == 0xFFFFFFFF) {
    if (eocd_pos < 20) refuse("no zip64 end-of-directory locator");
    read(eocd_pos - 20, loc, 20);
    if (le(loc, 4) != kZip64Locator) refuse("no zip64 end-of-directory locator");
    const uint64_t z_off = le(loc + 8, 8);
    if (z_off > size_ || size_ - z_off < 56) refuse("no zip64 end-of-directory record");
    read(z_off, z, 56);
    if (le(z, 4) != kZip64End) refuse("no zip64 end-of-directory record");
    zip64 = true;
  }
  if (zip64) {
    if (opt.strict_counts && le(z + 24, 8) != le(z + 32, 8)) refuse("zip64 entry counts disagree");
    count = le(z + 32, 8);
    cd_size = le(z + 40, 8);
    cd_off = le(z + 48, 8);
  }
  if (opt.strict_counts && count == 0) refuse("the archive holds no files");
  if (cd_size > size_ || cd_off > size_ - cd_size) refuse("the zip directory lies beyond the end of the file");
  if (opt.strict_counts && count > cd_size / 46) refuse("the zip directory is too small for its entry count");

  std::vector<unsigned char> cd(static_cast<size_t>(cd_size));
  read(cd_off, cd.data(), cd.size());
  entries_.reserve(static_cast<size_t>(std::min<uint64_t>(count, cd_size / 46)));
  size_t p = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (cd.size() - p < 46 || le(&cd[p], 4) != kCentral) refuse("corrupt zip directory entry " + std::to_string(i));
    const unsigned char *h = &cd[p];
    Entry en;
    en.flags = static_cast<uint16_t>(le(h + 8, 2));
    en.method = static_cast<uint16_t>(le(h + 10, 2));
    en.crc = static_cast<uint32_t>(le(h + 16, 4));
    en.csize = le(h + 20, 4);
    en.usize = le(h + 24, 4);
    const size_t nlen = le(h + 28, 2), xlen = le(h + 30, 2), clen = le(h + 32, 2);
    en.offset = le(h + 42, 4);
    if (cd.size() - p - 46 < nlen + xlen + clen) refuse("corrupt zip directory entry " + std::to_string(i));
    en.name.assign(reinterpret_cast<const char *>(h + 46), nlen);
    // The zip64 extra field (id 1): 8-byte values of the fields that are
    // all ones, in the order usize, csize, offset. A field too short for
    // one leaves it as it is; a malformed extra block ends the scan.
    const unsigned char *x = h + 46 + nlen, *xe = x + xlen;
    while (xe - x >= 4) {
      const size_t id = le(x, 2), len = le(x + 2, 2);
      if (static_cast<size_t>(xe - x - 4) < len) break;
      if (id == 1) {
        const unsigned char *f = x + 4, *fe = f + len;
        for (uint64_t *v : {&en.usize, &en.csize, &en.offset})
          if (*v == 0xFFFFFFFF && fe - f >= 8) *v = le(f, 8), f += 8;
      }
      x += 4 + len;
    }
    entries_.push_back(std::move(en));
    p += 46 + nlen + xlen + clen;
  }
}

const Entry *Directory::find(const std::string &name) const {
  const Entry *hit = nullptr;
  for (const Entry &en : entries_) {
    if (!same_ignoring_case(en.name, name)) continue;
    if (hit) refuse("two entries are named '" + name + "'");
    hit = &en;
  }
  return hit;
}

void Directory::require_readable(const Entry &en) {
  if (en.flags & 1) refuse("entry '" + en.name + "' is encrypted");
  if (en.method != 0 && en.method != 8) refuse("entry '" + en.name + "' uses zip method " + std::to_string(en.method));
}

uint64_t Directory::data_offset(const Entry &en, bool check_name) const {
  unsigned char h[30];
  if (en.offset > size_ || size_ - en.offset < 30) refuse("entry '" + en.name + "' has no valid local header");
  read(en.offset, h, 30);
  if (le(h, 4) != kLocal) refuse("entry '" + en.name + "' has no valid local header");
  const uint64_t lname = le(h + 26, 2), start = en.offset + 30 + lname + le(h + 28, 2);
  if (check_name) {
    bool same = lname == en.name.size() && size_ - en.offset - 30 >= lname;
    if (same && lname) {
      std::string local(static_cast<size_t>(lname), '\0');
      read(en.offset + 30, &local[0], local.size());
      same = local == en.name;
    }
    if (!same) refuse("entry '" + en.name + "' has another name in its local header (the file is damaged)");
  }
  if (start > size_ || en.csize > size_ - start) refuse("entry '" + en.name + "' lies beyond the end of the file");
  return start;
}

Contents Directory::stream(const Entry &en, uint64_t start, const Sink &sink) const {
  Contents c;
  std::vector<unsigned char> in(kChunk);
  uLong crc = crc32(0L, Z_NULL, 0);
  if (en.method == 0) {
    if (en.csize != en.usize) refuse("entry '" + en.name + "' is stored with two different sizes");
    for (uint64_t at = start, left = en.csize; left > 0;) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(left, kChunk));
      read(at, in.data(), k);
      crc = crc32(crc, in.data(), static_cast<uInt>(k));
      if (sink) sink(in.data(), k);
      at += k, left -= k;
      c.produced += k;
    }
    c.crc = static_cast<uint32_t>(crc);
    return c;
  }
  if (en.method != 8) refuse("entry '" + en.name + "' uses zip method " + std::to_string(en.method));
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) {
    c.outcome = Contents::NO_MEMORY;
    return c;
  }
  struct End {
    z_stream *z;
    ~End() { inflateEnd(z); }
  } end{&z};
  std::vector<unsigned char> out(kChunk);
  uint64_t at = start, left = en.csize;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (z.avail_in == 0 && left > 0) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(left, kChunk));
      read(at, in.data(), k);
      at += k, left -= k;
      z.next_in = in.data();
      z.avail_in = static_cast<uInt>(k);
    }
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    rc = inflate(&z, Z_NO_FLUSH);
    const size_t got = out.size() - z.avail_out;
    c.produced += got;
    crc = crc32(crc, out.data(), static_cast<uInt>(got));
    if (sink && got) sink(out.data(), got);
    if (c.produced > en.usize) break;                                  // runs long: stop here
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && left == 0) break;     // the input ends first
    if (rc == Z_BUF_ERROR) rc = Z_OK;  // no progress possible this round only
  }
  c.crc = static_cast<uint32_t>(crc);
  c.zlib_rc = rc;
  if (rc == Z_DATA_ERROR) {
    c.outcome = Contents::INVALID;
    c.zlib_msg = z.msg ? z.msg : "zlib error";
  } else if (rc == Z_BUF_ERROR) {
    c.outcome = Contents::TRUNCATED;
  } else if (rc != Z_STREAM_END && rc != Z_OK) {
    c.outcome = Contents::ZLIB_ERROR;
  } else if (c.produced > en.usize) {
    c.outcome = Contents::TOO_LONG;
  } else if (c.produced < en.usize) {
    c.outcome = Contents::ENDS_EARLY;
  }
  return c;
}

}  // namespace zip
}  // namespace ctorch
