// The zip reader (shim/zip/zip_directory.h) on archives built here: a
// normal archive (fuzz/zip_writer.h's and one with a deflated entry), ZIP64
// under both zip64 rules, truncated and missing end records, comments, a
// directory out of bounds, entries past the file, duplicate names, and
// sizes, counts and CRCs that lie. Every refusal is asserted with its
// reason, every acceptance with the bytes read back.
#include "zip/zip_directory.h"
#include "zip_writer.h"

#include <check.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ctorch::zip;

namespace {

using Bytes = std::vector<uint8_t>;

void put(Bytes &b, uint64_t v, int n) {
  for (int k = 0; k < n; ++k) b.push_back(static_cast<uint8_t>(v >> (8 * k)));
}
void poke(Bytes &b, size_t at, uint64_t v, int n) {
  for (int k = 0; k < n; ++k) b[at + k] = static_cast<uint8_t>(v >> (8 * k));
}

std::string deflate_raw(const std::string &s) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::bad_alloc();
  std::string out(deflateBound(&z, s.size()), '\0');
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(s.data()));
  z.avail_in = static_cast<uInt>(s.size());
  z.next_out = reinterpret_cast<Bytef *>(&out[0]);
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  return out;
}

// An archive whose every field can be made to lie: add() writes a local
// header and the data and records the central entry, which the test may
// edit before finish() writes the directory and end records.
struct Builder {
  struct Central {
    std::string name;
    uint16_t flags = 0, method = 0;
    uint32_t crc = 0;
    uint64_t csize = 0, usize = 0, offset = 0;
    bool zip64 = false;  // saturated 32-bit fields, the values in a zip64 extra field
  };
  Bytes out;
  std::vector<Central> entries;
  std::string comment;
  bool zip64 = false;            // write a zip64 end record and locator
  bool saturate = false;         // ... and saturate the 32-bit end record fields
  int64_t eocd_count = -1;       // override the 32-bit end record's count
  int64_t zip64_total = -1;      // override the zip64 record's total count (counts disagree)
  int64_t cd_off_delta = 0, cd_size_delta = 0;

  // local_name: what the local header calls it (the same name by default).
  Central &add(const std::string &name, const std::string &data, uint16_t method = 0,
               const char *local_name = nullptr) {
    Central c;
    c.name = name;
    c.method = method;
    c.crc = crc32_of(data.data(), data.size());
    std::string stored = method == 8 ? deflate_raw(data) : data;
    c.csize = stored.size();
    c.usize = data.size();
    c.offset = out.size();
    const std::string ln = local_name ? local_name : name;
    put(out, 0x04034b50, 4);
    put(out, 20, 2), put(out, 0, 2), put(out, method, 2), put(out, 0, 4);
    put(out, c.crc, 4), put(out, c.csize, 4), put(out, c.usize, 4);
    put(out, ln.size(), 2), put(out, 0, 2);
    out.insert(out.end(), ln.begin(), ln.end());
    out.insert(out.end(), stored.begin(), stored.end());
    entries.push_back(c);
    return entries.back();
  }

  Bytes finish() {
    Bytes b = out;
    const uint64_t cd_off = b.size();
    for (const Central &c : entries) {
      put(b, 0x02014b50, 4);
      put(b, 45, 2), put(b, 20, 2), put(b, c.flags, 2), put(b, c.method, 2), put(b, 0, 4);
      put(b, c.crc, 4);
      put(b, c.zip64 ? 0xFFFFFFFF : c.csize, 4), put(b, c.zip64 ? 0xFFFFFFFF : c.usize, 4);
      put(b, c.name.size(), 2), put(b, c.zip64 ? 28 : 0, 2), put(b, 0, 2), put(b, 0, 2), put(b, 0, 2), put(b, 0, 4);
      put(b, c.zip64 ? 0xFFFFFFFF : c.offset, 4);
      b.insert(b.end(), c.name.begin(), c.name.end());
      if (c.zip64) {
        put(b, 1, 2), put(b, 24, 2);
        put(b, c.usize, 8), put(b, c.csize, 8), put(b, c.offset, 8);
      }
    }
    const uint64_t cd_size = b.size() - cd_off;
    const uint64_t n = entries.size();
    if (zip64) {
      const uint64_t z_off = b.size();
      put(b, 0x06064b50, 4), put(b, 44, 8), put(b, 45, 2), put(b, 45, 2), put(b, 0, 4), put(b, 0, 4);
      put(b, zip64_total >= 0 ? static_cast<uint64_t>(zip64_total) : n, 8);
      put(b, n, 8), put(b, cd_size + cd_size_delta, 8), put(b, cd_off + cd_off_delta, 8);
      put(b, 0x07064b50, 4), put(b, 0, 4), put(b, z_off, 8), put(b, 1, 4);
    }
    put(b, 0x06054b50, 4), put(b, 0, 2), put(b, 0, 2);
    const uint64_t count = eocd_count >= 0 ? static_cast<uint64_t>(eocd_count) : n;
    put(b, saturate ? 0xFFFF : count, 2), put(b, saturate ? 0xFFFF : count, 2);
    put(b, saturate ? 0xFFFFFFFF : cd_size + (zip64 ? 0 : cd_size_delta), 4);
    put(b, saturate ? 0xFFFFFFFF : cd_off + (zip64 ? 0 : cd_off_delta), 4);
    put(b, comment.size(), 2);
    b.insert(b.end(), comment.begin(), comment.end());
    return b;
  }
};

Options format_rule() {
  Options o;
  o.zip64 = Options::ZIP64_WHEN_SATURATED;
  o.strict_counts = false;
  return o;
}

// The reason a read of b is refused ("" when it is not).
std::string refusal(const Bytes &b, const Options &opt = Options()) {
  MemorySource src(b.data(), b.size());
  try {
    Directory d(src, opt);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

#define ck_assert_refused(b, needle, ...)                                                           \
  do {                                                                                              \
    std::string why_ = refusal(b, ##__VA_ARGS__);                                                   \
    ck_assert_msg(why_.find(needle) != std::string::npos, "refusal '%s' lacks '%s'", why_.c_str(), \
                  needle);                                                                          \
  } while (0)

// Compares as std::string (check's str macro keeps a pointer into a temporary).
#define ck_assert_stdstr_eq(a, b)                                                                     \
  do {                                                                                               \
    const std::string a_ = (a), b_ = (b);                                                            \
    ck_assert_msg(a_ == b_, "'%s' != '%s' (%s)", a_.c_str(), b_.c_str(), #a);                       \
  } while (0)

template <class F>
std::string refusal_of(F f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

// The entry's contents, which must be intact.
std::string contents(const Directory &d, const Entry &en, bool check_name = true) {
  std::string s;
  Contents c = d.stream(en, d.data_offset(en, check_name), [&](const unsigned char *p, size_t n) {
    s.append(reinterpret_cast<const char *>(p), n);
  });
  ck_assert_msg(c.intact(en), "'%s' is not intact (outcome %d, %llu bytes)", en.name.c_str(), (int)c.outcome,
                (unsigned long long)c.produced);
  return s;
}

const std::string kText = "the quick brown fox jumps over the lazy dog; " + std::string(3000, 'z') + " end";

}  // namespace

START_TEST(normal_archive) {
  fz::ZipWriter w;
  w.add("archive/data.pkl", std::string("\x80\x02}q\x00.", 6));
  w.add("archive/version", std::string("3\n"));
  w.add("archive/data/0", std::string());
  Bytes b = w.finish();
  MemorySource src(b.data(), b.size());
  for (const Options &opt : {Options(), format_rule()}) {
    Directory d(src, opt);
    ck_assert_uint_eq(d.entries().size(), 3);
    ck_assert_uint_eq(d.file_size(), b.size());
    ck_assert_stdstr_eq(d.entries()[1].name, "archive/version");
    const Entry *v = d.find("ARCHIVE/Version");  // miniz compares without case
    ck_assert_ptr_nonnull(v);
    ck_assert_stdstr_eq(contents(d, *v), "3\n");
    ck_assert_uint_eq(contents(d, d.entries()[0]).size(), 6);
    ck_assert_stdstr_eq(contents(d, d.entries()[2]), "");
    ck_assert_ptr_null(d.find("archive/missing"));
    ck_assert_ptr_null(d.find("archive/version2"));
  }
  // A deflated entry inflates to its bytes; the zlib CRC helper agrees.
  Builder z;
  z.add("a/stored", "plain");
  z.add("a/deflated", kText, 8);
  b = z.finish();
  MemorySource src2(b.data(), b.size());
  Directory d(src2);
  ck_assert_uint_lt(d.entries()[1].csize, d.entries()[1].usize);
  ck_assert(contents(d, d.entries()[1]) == kText);
  ck_assert_uint_eq(crc32_of("123456789", 9), 0xCBF43926u);
}
END_TEST

START_TEST(zip64) {
  // Saturated 32-bit fields everywhere, the values in zip64 records and
  // extra fields: both rules read it.
  Builder z;
  z.zip64 = z.saturate = true;
  z.add("big/one", "first record").zip64 = true;
  z.add("big/two", kText, 8).zip64 = true;
  Bytes b = z.finish();
  MemorySource src(b.data(), b.size());
  for (const Options &opt : {Options(), format_rule()}) {
    Directory d(src, opt);
    ck_assert_uint_eq(d.entries().size(), 2);
    ck_assert_uint_eq(d.entries()[1].usize, kText.size());
    ck_assert_uint_ne(d.entries()[1].offset, 0xFFFFFFFF);
    ck_assert_stdstr_eq(contents(d, d.entries()[0]), "first record");
    ck_assert(contents(d, d.entries()[1]) == kText);
  }
  // The rules differ where the 32-bit fields are not saturated: miniz's
  // believes the zip64 record, the format's the 32-bit fields.
  Builder lie;
  lie.zip64 = true;
  lie.eocd_count = 1;
  lie.add("x/a", "A");
  lie.add("x/b", "B");
  b = lie.finish();
  MemorySource src2(b.data(), b.size());
  ck_assert_uint_eq(Directory(src2).entries().size(), 2);
  ck_assert_uint_eq(Directory(src2, format_rule()).entries().size(), 1);
  // Saturated fields without a zip64 locator: the format's rule refuses;
  // miniz's reads the saturated values, a directory past the file.
  Builder none;
  none.saturate = true;
  none.add("x/a", "A");
  b = none.finish();
  ck_assert_refused(b, "no zip64 end-of-directory locator", format_rule());
  ck_assert_refused(b, "the zip directory lies beyond the end of the file");
  // A locator pointing outside the file, or at no zip64 record.
  Builder z2;
  z2.zip64 = z2.saturate = true;
  z2.add("x/a", "A");
  b = z2.finish();
  size_t loc = b.size() - 22 - 20;
  poke(b, loc + 8, b.size() + 100, 8);
  ck_assert_refused(b, "no zip64 end-of-directory record", format_rule());
  ck_assert_refused(b, "the zip directory lies beyond the end of the file");  // miniz's rule ignores it
  poke(b, loc + 8, 0, 8);  // the first local header
  ck_assert_refused(b, "no zip64 end-of-directory record", format_rule());
  // The zip64 record's two counts disagree: refused when strict.
  Builder z3;
  z3.zip64 = z3.saturate = true;
  z3.zip64_total = 3;
  z3.add("x/a", "A");
  b = z3.finish();
  ck_assert_refused(b, "zip64 entry counts disagree");
  ck_assert_stdstr_eq(refusal(b, format_rule()), "");
  // A zip64 directory offset past the file.
  Builder z4;
  z4.zip64 = z4.saturate = true;
  z4.cd_off_delta = 1000;
  z4.add("x/a", "A");
  b = z4.finish();
  ck_assert_refused(b, "the zip directory lies beyond the end of the file");
  ck_assert_refused(b, "the zip directory lies beyond the end of the file", format_rule());
}
END_TEST

START_TEST(truncated_end_record) {
  Builder z;
  z.add("x/a", "hello");
  const Bytes full = z.finish();
  ck_assert_stdstr_eq(refusal(full), "");
  for (size_t cut = 1; cut <= 22; ++cut) {
    Bytes b(full.begin(), full.end() - static_cast<long>(cut));
    ck_assert_refused(b, "no end-of-directory record");
    ck_assert_refused(b, "no end-of-directory record", format_rule());
  }
  ck_assert_refused(Bytes(), "too short for a zip file");
  ck_assert_refused(Bytes(full.end() - 21, full.end()), "too short for a zip file");
  ck_assert_refused(Bytes(100, 'x'), "no end-of-directory record");
  // The end record alone (an empty archive): refused when strict; the
  // format's rule without count checks reads no entries.
  Builder empty;
  Bytes e = empty.finish();
  ck_assert_uint_eq(e.size(), 22);
  ck_assert_refused(e, "the archive holds no files");
  MemorySource src(e.data(), e.size());
  ck_assert_uint_eq(Directory(src, format_rule()).entries().size(), 0);
}
END_TEST

START_TEST(comment) {
  Builder z;
  z.add("x/a", "hello");
  z.comment = "a comment after the end record";
  Bytes b = z.finish();
  MemorySource src(b.data(), b.size());
  Directory d(src);
  ck_assert_stdstr_eq(contents(d, d.entries()[0]), "hello");
  // The longest comment there can be: the end record is still found.
  z.comment = std::string(0xFFFF, 'c');
  b = z.finish();
  MemorySource src2(b.data(), b.size());
  ck_assert_uint_eq(Directory(src2).entries().size(), 1);
  // One byte more after it: the record lies outside the search window.
  b.push_back('c');
  ck_assert_refused(b, "no end-of-directory record");
  // A comment holding an end record's signature: the last one wins (as in
  // miniz), here a fake one whose fields are zeros.
  z.comment = std::string("PK\x05\x06", 4) + std::string(18, '\0');
  b = z.finish();
  ck_assert_refused(b, "the archive holds no files");
}
END_TEST

START_TEST(directory_out_of_bounds) {
  Builder z;
  z.add("x/a", "hello");
  z.cd_off_delta = 1000;
  Bytes b = z.finish();
  ck_assert_refused(b, "the zip directory lies beyond the end of the file");
  ck_assert_refused(b, "the zip directory lies beyond the end of the file", format_rule());
  z.cd_off_delta = 0;
  z.cd_size_delta = 1000;
  b = z.finish();
  ck_assert_refused(b, "the zip directory lies beyond the end of the file");
  // Offset and size each inside the file, their sum not (no wrap-around).
  z.cd_size_delta = 0;
  b = z.finish();
  const size_t eocd = b.size() - 22;
  poke(b, eocd + 12, b.size() - 1, 4);
  ck_assert_refused(b, "the zip directory lies beyond the end of the file", format_rule());
  // A directory that starts at the wrong place, or ends inside an entry.
  z.cd_off_delta = 0;
  b = z.finish();
  poke(b, eocd + 16, 2, 4);
  ck_assert_refused(b, "corrupt zip directory entry 0");
  b = z.finish();
  poke(b, eocd + 12, 50, 4);  // 46 + name of 3 = 49: fits; 45 would not
  ck_assert_stdstr_eq(refusal(b), "");
  poke(b, eocd + 12, 48, 4);
  ck_assert_refused(b, "corrupt zip directory entry 0");
  // More entries than the directory holds: refused before reading when
  // strict, at the first missing entry otherwise.
  z.eocd_count = 2;
  b = z.finish();
  ck_assert_refused(b, "the zip directory is too small for its entry count");
  ck_assert_refused(b, "corrupt zip directory entry 1", format_rule());
}
END_TEST

START_TEST(entry_past_the_file) {
  Builder z;
  z.add("x/a", "hello");
  z.add("x/b", "world");
  z.entries[0].offset = 1u << 20;      // local header past the end
  z.entries[1].offset += 3;            // no local header signature there
  Bytes b = z.finish();
  MemorySource src(b.data(), b.size());
  Directory d(src);  // the directory itself is fine
  ck_assert_stdstr_eq(refusal_of([&] { d.data_offset(d.entries()[0]); }), "entry 'x/a' has no valid local header");
  ck_assert_stdstr_eq(refusal_of([&] { d.data_offset(d.entries()[1]); }), "entry 'x/b' has no valid local header");
  // A local header in the last 29 bytes.
  Builder z2;
  z2.add("x/a", "hello");
  b = z2.finish();
  MemorySource src2(b.data(), b.size());
  Directory d2(src2);
  Entry en = d2.entries()[0];
  en.offset = b.size() - 29;
  ck_assert_stdstr_eq(refusal_of([&] { d2.data_offset(en); }), "entry 'x/a' has no valid local header");
  // Data running past the end of the file.
  Builder z3;
  z3.add("x/a", "hello").csize = 1000;
  z3.entries[0].usize = 1000;
  b = z3.finish();
  MemorySource src3(b.data(), b.size());
  Directory d3(src3);
  ck_assert_stdstr_eq(refusal_of([&] { d3.data_offset(d3.entries()[0]); }),
                   "entry 'x/a' lies beyond the end of the file");
  // Reads outside the file are refused, in the source and in the directory.
  unsigned char buf[8];
  ck_assert_stdstr_eq(refusal_of([&] { d3.read(b.size() - 4, buf, 8); }),
                   "a structure lies beyond the end of the file");
  ck_assert_stdstr_eq(refusal_of([&] { src3.read(UINT64_MAX - 2, buf, 8); }),
                   "a structure lies beyond the end of the file");
  // The local header naming another file.
  Builder z4;
  z4.add("x/a", "hello", 0, "x/evil");
  z4.add("x/b", "hello", 0, "x/B");
  b = z4.finish();
  MemorySource src4(b.data(), b.size());
  Directory d4(src4);
  for (const Entry &e : d4.entries()) {
    ck_assert_stdstr_eq(refusal_of([&] { d4.data_offset(e, true); }),
                     ("entry '" + e.name + "' has another name in its local header (the file is damaged)"));
    ck_assert_stdstr_eq(contents(d4, e, false), "hello");  // miniz does not compare
  }
}
END_TEST

START_TEST(duplicate_names) {
  Builder z;
  z.add("x/version", "1");
  z.add("x/data.pkl", "p");
  z.add("X/VERSION", "2");
  Bytes b = z.finish();
  MemorySource src(b.data(), b.size());
  Directory d(src);
  ck_assert_uint_eq(d.entries().size(), 3);  // listed, both
  ck_assert_stdstr_eq(refusal_of([&] { d.find("x/version"); }), "two entries are named 'x/version'");
  ck_assert_stdstr_eq(refusal_of([&] { d.find("x/Version"); }), "two entries are named 'x/Version'");
  ck_assert_ptr_eq(d.find("x/data.pkl"), &d.entries()[1]);
}
END_TEST

START_TEST(sizes_that_lie) {
  // Stored: compressed and uncompressed sizes differ.
  Builder z;
  z.add("x/a", "hello").usize = 4;
  Bytes b = z.finish();
  MemorySource src(b.data(), b.size());
  Directory d(src);
  ck_assert_stdstr_eq(refusal_of([&] { d.stream(d.entries()[0], d.data_offset(d.entries()[0])); }),
                   "entry 'x/a' is stored with two different sizes");
  // Deflated, claiming fewer bytes than it inflates to: stopped there.
  Builder z2;
  z2.add("x/short", kText, 8).usize = 100;
  z2.add("x/long", kText, 8).usize = kText.size() + 1;
  z2.add("x/crc", kText, 8).crc ^= 1;
  Builder::Central &cut = z2.add("x/cut", kText, 8);
  cut.csize -= 5;
  b = z2.finish();
  MemorySource src2(b.data(), b.size());
  Directory d2(src2);
  auto outcome = [&](size_t i) {
    const Entry &en = d2.entries()[i];
    return d2.stream(en, d2.data_offset(en));
  };
  Contents c = outcome(0);
  ck_assert_int_eq(c.outcome, Contents::TOO_LONG);
  ck_assert_uint_gt(c.produced, 100);
  ck_assert(!c.intact(d2.entries()[0]));
  c = outcome(1);
  ck_assert_int_eq(c.outcome, Contents::ENDS_EARLY);
  ck_assert_uint_eq(c.produced, kText.size());
  c = outcome(2);
  ck_assert_int_eq(c.outcome, Contents::COMPLETE);
  ck_assert(!c.intact(d2.entries()[2]));  // the CRC
  c = outcome(3);
  ck_assert_int_eq(c.outcome, Contents::TRUNCATED);
  // A stream claiming 100 bytes that inflates to 16 MiB: stopped within a
  // chunk (64 KiB) of its claim, the sink never handed more.
  Builder bomb;
  bomb.add("x/bomb", std::string(16u << 20, '\0'), 8).usize = 100;
  b = bomb.finish();
  ck_assert_uint_lt(b.size(), 64u << 10);
  MemorySource src_bomb(b.data(), b.size());
  Directory d_bomb(src_bomb);
  uint64_t sunk = 0;
  c = d_bomb.stream(d_bomb.entries()[0], d_bomb.data_offset(d_bomb.entries()[0]),
                    [&](const unsigned char *, size_t n) { sunk += n; });
  ck_assert_int_eq(c.outcome, Contents::TOO_LONG);
  ck_assert_uint_eq(sunk, c.produced);
  ck_assert_uint_le(c.produced, 100 + (64u << 10));
  // Not deflate data at all: a block of the reserved type 3.
  Builder z3;
  Builder::Central &bad = z3.add("x/bad", std::string("\x07\x00\x00\x00", 4), 0);
  bad.method = 8;
  bad.usize = 515;
  b = z3.finish();
  MemorySource src3(b.data(), b.size());
  Directory d3(src3);
  c = d3.stream(d3.entries()[0], d3.data_offset(d3.entries()[0]));
  ck_assert_int_eq(c.outcome, Contents::INVALID);
  ck_assert_stdstr_eq(c.zlib_msg, "invalid block type");
  // Encrypted, or another method: not readable.
  Builder z4;
  z4.add("x/enc", "e").flags = 1;
  z4.add("x/bz2", "b").method = 12;
  b = z4.finish();
  MemorySource src4(b.data(), b.size());
  Directory d4(src4);
  ck_assert_stdstr_eq(refusal_of([&] { Directory::require_readable(d4.entries()[0]); }), "entry 'x/enc' is encrypted");
  ck_assert_stdstr_eq(refusal_of([&] { Directory::require_readable(d4.entries()[1]); }),
                   "entry 'x/bz2' uses zip method 12");
  ck_assert_stdstr_eq(refusal_of([&] { d4.stream(d4.entries()[1], d4.data_offset(d4.entries()[1])); }),
                   "entry 'x/bz2' uses zip method 12");
  // A zip64 extra field too short for the value it should hold: the
  // saturated field stays as it is (and then lies about the file).
  Builder z5;
  z5.add("x/a", "hello").zip64 = true;
  b = z5.finish();
  const size_t cd = b.size() - 22 - (46 + 3 + 28);
  poke(b, cd + 46 + 3 + 2, 8, 2);  // extra block length 8: usize only
  MemorySource src5(b.data(), b.size());
  Directory d5(src5);
  ck_assert_uint_eq(d5.entries()[0].usize, 5);
  ck_assert_uint_eq(d5.entries()[0].csize, 0xFFFFFFFF);
  ck_assert_uint_eq(d5.entries()[0].offset, 0xFFFFFFFF);
  ck_assert_stdstr_eq(refusal_of([&] { d5.data_offset(d5.entries()[0]); }), "entry 'x/a' has no valid local header");
}
END_TEST

// An I/O failure of the caller's source passes through the reader as the
// caller's own exception (the checkpoint reader's CTORCH_IO).
struct FailingSource : Source {
  uint64_t size() const override { return 100; }
  void read(uint64_t, void *, size_t) const override { throw std::runtime_error("disk on fire"); }
};

START_TEST(source_failure_passes_through) {
  FailingSource src;
  try {
    Directory d(src);
    ck_abort_msg("read a directory from a failing source");
  } catch (const Error &) {
    ck_abort_msg("an I/O failure became a refusal");
  } catch (const std::runtime_error &e) {
    ck_assert_stdstr_eq(e.what(), "disk on fire");
  }
}
END_TEST

int main() {
  Suite *s = suite_create("zip_directory");
  TCase *tc = tcase_create("zip_directory");
  tcase_add_test(tc, normal_archive);
  tcase_add_test(tc, zip64);
  tcase_add_test(tc, truncated_end_record);
  tcase_add_test(tc, comment);
  tcase_add_test(tc, directory_out_of_bounds);
  tcase_add_test(tc, entry_past_the_file);
  tcase_add_test(tc, duplicate_names);
  tcase_add_test(tc, sizes_that_lie);
  tcase_add_test(tc, source_failure_passes_through);
  suite_add_tcase(s, tc);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
