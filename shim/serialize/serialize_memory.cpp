// torch.save checkpoints to and from memory buffers and the caller's
// stream callbacks: the same writer (write_pickled through a sink) and the
// same reader (read_checkpoint over a ByteSource) as the file forms, so the
// bytes and the checks are the file forms' own.
#include "serialize_value.h"
#include "files/files.h"

#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace ctorch {

namespace {

class FileSource : public zip::Source {
 public:
  explicit FileSource(const char *path) : path_(path) {
    ReadFile f(path);
    size_ = f.size();
    fd_ = f.release();
  }
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource &) = delete;
  FileSource &operator=(const FileSource &) = delete;
  uint64_t size() const override { return size_; }
  void read(uint64_t off, void *buf, size_t n) const override {
    char *p = static_cast<char *>(buf);
    while (n) {
      ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(off));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) fail(CTORCH_IO, std::string("cannot read '") + path_ + "'");
      p += r;
      off += static_cast<uint64_t>(r);
      n -= static_cast<size_t>(r);
    }
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_ = 0;
};

}  // namespace

std::unique_ptr<zip::Source> open_source(const ByteSource &src) {
  if (src.path) return std::unique_ptr<zip::Source>(new FileSource(src.path));
  return std::unique_ptr<zip::Source>(new zip::MemorySource(src.data, src.len));
}

void write_to_buffer(size_t *out_len, void *buf, size_t cap, const Producer &produce) {
  // Only what fits is copied; the rest is counted (a sink reports every
  // byte as written: libtorch's zip writer throws on a short write).
  uint64_t total = 0;
  char *dst = static_cast<char *>(buf);
  produce([&](const void *p, size_t n) -> size_t {
    if (total < cap) std::memcpy(dst + total, p, std::min<uint64_t>(n, cap - total));
    total += n;
    return n;
  });
  *out_len = static_cast<size_t>(total);
}

void require_buffer_args(size_t *out_len, void *buf, size_t cap) {
  require_out(out_len, "out_len");
  *out_len = 0;
  if (!buf && cap) fail_arg("buf", "is NULL with cap " + std::to_string(cap));
}

void write_to_stream(ctorch_write_fn write, void *user_data, const Producer &produce) {
  ctorch_status first = CTORCH_OK;
  produce([&](const void *p, size_t n) -> size_t {
    if (first == CTORCH_OK && n) first = write(user_data, p, n);
    return n;
  });
  if (first != CTORCH_OK)
    fail(CTORCH_IO, "the write callback returned status " + std::to_string(static_cast<int>(first)) + " (" +
                        ctorch_status_name(first) + "); the save stopped there");
}

std::string read_stream(ctorch_read_fn read, void *user_data) {
  const uint64_t limit = load_limit();
  std::string data;
  std::vector<char> chunk(1 << 16);
  for (;;) {
    size_t n = 0;
    ctorch_status st = read(user_data, chunk.data(), chunk.size(), &n);
    if (st != CTORCH_OK)
      fail(CTORCH_IO, "the read callback returned status " + std::to_string(static_cast<int>(st)) + " (" +
                          ctorch_status_name(st) + ")");
    if (n > chunk.size())
      fail(CTORCH_VALUE, "the read callback reported " + std::to_string(n) + " bytes read into a buffer of " +
                             std::to_string(chunk.size()));
    if (n == 0) return data;
    if (limit && data.size() + n > limit)
      fail(CTORCH_OUT_OF_MEMORY, "the stream is longer than the load limit of " + std::to_string(limit) +
                                     " bytes (ctorch_set_load_limit)");
    data.append(chunk.data(), n);
  }
}

}  // namespace ctorch

namespace {

void require_input(const void *data, size_t len) {
  if (!data && len) ctorch::fail_arg("data", "is NULL with len " + std::to_string(len));
}

ctorch_tensor tensor_of(ctorch::Checkpoint &&c) {
  if (!c.is_tensor)
    ctorch::fail(CTORCH_TYPE, "the data holds a dict of " + std::to_string(c.dict.keys.size()) +
                                  " tensors, not one tensor (use the dict loader)");
  return ctorch::give(std::move(c.tensor));
}

ctorch_tensor_dict dict_of(ctorch::Checkpoint &&c) {
  if (c.is_tensor) ctorch::fail(CTORCH_TYPE, "the data holds one tensor, not a dict (use the tensor loader)");
  return new ctorch_tensor_dict_s(std::move(c.dict));
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_save_to_buffer(size_t *out_len, void *buf, size_t cap, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_buffer_args(out_len, buf, cap);
  ctorch::P v = ctorch::saved_tensor_value(t);
  ctorch::write_to_buffer(out_len, buf, cap, [&](const ctorch::Sink &s) { ctorch::write_pickled(s, *v); });
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_load_from_buffer(ctorch_tensor *out, const void *data, size_t len) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  require_input(data, len);
  *out = tensor_of(ctorch::read_checkpoint(ctorch::ByteSource::memory(data, len)));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_dict_save_to_buffer(size_t *out_len, void *buf, size_t cap, ctorch_tensor_dict d) {
  CTORCH_TRY
  ctorch::require_buffer_args(out_len, buf, cap);
  ctorch::P v = ctorch::saved_dict_value(d);
  ctorch::write_to_buffer(out_len, buf, cap, [&](const ctorch::Sink &s) { ctorch::write_pickled(s, *v); });
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_load_dict_from_buffer(ctorch_tensor_dict *out, const void *data, size_t len) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  require_input(data, len);
  *out = dict_of(ctorch::read_checkpoint(ctorch::ByteSource::memory(data, len)));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_save_to_stream(ctorch_write_fn write, void *user_data, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_ptr(write, "write");
  ctorch::P v = ctorch::saved_tensor_value(t);
  ctorch::write_to_stream(write, user_data, [&](const ctorch::Sink &s) { ctorch::write_pickled(s, *v); });
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_load_from_stream(ctorch_tensor *out, ctorch_read_fn read, void *user_data) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(read, "read");
  std::string bytes = ctorch::read_stream(read, user_data);
  *out = tensor_of(ctorch::read_checkpoint(ctorch::ByteSource::memory(bytes.data(), bytes.size())));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_dict_save_to_stream(ctorch_write_fn write, void *user_data, ctorch_tensor_dict d) {
  CTORCH_TRY
  ctorch::require_ptr(write, "write");
  ctorch::P v = ctorch::saved_dict_value(d);
  ctorch::write_to_stream(write, user_data, [&](const ctorch::Sink &s) { ctorch::write_pickled(s, *v); });
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_load_dict_from_stream(ctorch_tensor_dict *out, ctorch_read_fn read, void *user_data) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(read, "read");
  std::string bytes = ctorch::read_stream(read, user_data);
  *out = dict_of(ctorch::read_checkpoint(ctorch::ByteSource::memory(bytes.data(), bytes.size())));
  CTORCH_CATCH
}

}  // extern "C"
