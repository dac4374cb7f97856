// See event_file.h. Field numbers are those of TensorFlow's .proto files.
#include "logging/event_file.h"

#include <cstring>

namespace ctorch {
namespace logging {

void Proto::varint(uint64_t v) {
  while (v >= 0x80) {
    s_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s_.push_back(static_cast<char>(v));
}

void Proto::varint_field(int field, uint64_t v) {
  varint(static_cast<uint64_t>(field) << 3 | 0);
  varint(v);
}

void Proto::double_field(int field, double v) {
  varint(static_cast<uint64_t>(field) << 3 | 1);
  char b[8];
  std::memcpy(b, &v, 8);  // little-endian hosts only (x86-64, aarch64), as the rest of ctorch
  s_.append(b, 8);
}

void Proto::float_field(int field, float v) {
  varint(static_cast<uint64_t>(field) << 3 | 5);
  char b[4];
  std::memcpy(b, &v, 4);
  s_.append(b, 4);
}

void Proto::bytes_field(int field, const std::string &b) {
  varint(static_cast<uint64_t>(field) << 3 | 2);
  varint(b.size());
  s_ += b;
}

void Proto::packed_doubles(int field, const std::vector<double> &v) {
  varint(static_cast<uint64_t>(field) << 3 | 2);
  varint(v.size() * 8);
  for (double d : v) {
    char b[8];
    std::memcpy(b, &d, 8);
    s_.append(b, 8);
  }
}

namespace {
struct Crc32cTable {
  uint32_t t[256];
  Crc32cTable() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
  }
};

uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

void put_le(std::string &s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
}  // namespace

uint32_t crc32c(const void *data, size_t n) {
  static const Crc32cTable table;
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) c = table.t[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

std::string tfrecord(const std::string &payload) {
  std::string out, len;
  put_le(len, payload.size(), 8);
  out += len;
  put_le(out, masked(crc32c(len.data(), len.size())), 4);
  out += payload;
  put_le(out, masked(crc32c(payload.data(), payload.size())), 4);
  return out;
}

std::string event_file_version(double wall_time) {
  Proto e;
  e.double_field(1, wall_time);
  e.bytes_field(3, "brain.Event:2");
  return e.bytes();
}

std::string event_summary(double wall_time, int64_t step, const std::string &summary) {
  Proto e;
  e.double_field(1, wall_time);
  if (step != 0) e.varint_field(2, static_cast<uint64_t>(step));  // proto3: 0 is the default, not written
  e.bytes_field(5, summary);
  return e.bytes();
}

}  // namespace logging
}  // namespace ctorch
