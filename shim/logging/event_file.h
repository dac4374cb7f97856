// TensorBoard's on-disk format, written by hand (no protobuf library): the
// few protocol-buffer messages a summary needs (tensorflow/core/util/
// event.proto, framework/summary.proto, tensor.proto) encoded field by
// field, and the TFRecord framing around each (length, masked CRC-32C of the
// length, payload, masked CRC-32C of the payload).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ctorch {
namespace logging {

// A protocol-buffer message being encoded: append fields in field order.
class Proto {
 public:
  void varint_field(int field, uint64_t v);                       // int32/int64/enum/bool
  void double_field(int field, double v);                         // fixed64
  void float_field(int field, float v);                           // fixed32
  void bytes_field(int field, const std::string &b);              // string, bytes, sub-message
  void packed_doubles(int field, const std::vector<double> &v);   // repeated double [packed]
  const std::string &bytes() const { return s_; }

 private:
  void varint(uint64_t v);
  std::string s_;
};

// CRC-32C (Castagnoli), as TFRecord checks it.
uint32_t crc32c(const void *data, size_t n);
// One TFRecord: 8-byte length, masked CRC of it, the payload, masked CRC of it.
std::string tfrecord(const std::string &payload);

// An Event {wall_time = 1, step = 2, file_version = 3 | summary = 5}.
std::string event_file_version(double wall_time);
std::string event_summary(double wall_time, int64_t step, const std::string &summary);

}  // namespace logging
}  // namespace ctorch
