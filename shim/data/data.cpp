// Data from C: IDX (MNIST-style) files, plain or gzip. The loader is in
// loader.cpp, datasets in dataset.cpp, CIFAR files in cifar.cpp.
#include "data/data.h"

#include "files/files.h"

#include <ATen/ops/empty.h>

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <memory>

using ctorch::Borrowed;

namespace {

[[noreturn]] void corrupt(const std::string &path, const std::string &why) {
  ctorch::fail(CTORCH_VALUE, "'" + path + "' is not a valid IDX file: " + why);
}

// Sequential reader over a plain or gzip file (decided by the magic bytes
// 1f 8b). read() returns how many bytes it got (short only at end of data).
// gzip is inflated here (zlib's inflate, not gzread, which silently ignores
// bytes after the last gzip member): several members are read one after
// the other, as gunzip does, and anything else after the data is refused,
// as the plain reader refuses bytes past the announced size.
class Source {
 public:
  explicit Source(const std::string &path) : path_(path) {
    {
      ctorch::ReadFile file(path.c_str());  // a regular file only, opened without blocking
      file_size_ = file.size();
      f_ = fdopen(file.fd(), "rb");
      if (!f_) ctorch::fail(CTORCH_IO, "cannot read '" + path + "': " + std::strerror(errno));
      file.release();  // f_ owns it now
    }
    unsigned char magic[2] = {0, 0};
    size_t got = std::fread(magic, 1, 2, f_);
    std::rewind(f_);
    if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
      gz_ = true;
      in_.resize(1 << 16);
      if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) ctorch::fail(CTORCH_OUT_OF_MEMORY, "cannot start zlib");
      z_live_ = true;
    }
  }
  ~Source() {
    if (z_live_) inflateEnd(&z_);
    if (f_) std::fclose(f_);
  }
  Source(const Source &) = delete;
  Source &operator=(const Source &) = delete;

  bool compressed() const { return gz_; }
  uint64_t file_size() const { return file_size_; }

  size_t read(void *dst, size_t n) {
    char *p = static_cast<char *>(dst);
    size_t total = 0;
    while (total < n) {
      size_t got = gz_ ? inflate_some(p + total, n - total) : std::fread(p + total, 1, n - total, f_);
      if (got == 0) {
        if (!gz_ && std::ferror(f_)) ctorch::fail(CTORCH_IO, "read error on '" + path_ + "'");
        break;
      }
      total += got;
    }
    return total;
  }

 private:
  std::string path_;
  FILE *f_ = nullptr;
  bool gz_ = false, z_live_ = false, z_done_ = false;
  z_stream z_{};
  std::vector<unsigned char> in_;
  uint64_t file_size_ = 0;

  // More compressed input; false at the end of the file.
  bool refill() {
    size_t got = std::fread(in_.data(), 1, in_.size(), f_);
    if (got == 0 && std::ferror(f_)) ctorch::fail(CTORCH_IO, "read error on '" + path_ + "': " + std::strerror(errno));
    z_.next_in = in_.data();
    z_.avail_in = static_cast<uInt>(got);
    return got > 0;
  }

  // Up to n inflated bytes; 0 at the end of the data (after checking that
  // nothing but further gzip members follows it).
  size_t inflate_some(char *out, size_t n) {
    if (z_done_) return 0;
    z_.next_out = reinterpret_cast<Bytef *>(out);
    z_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    const uInt want = z_.avail_out;
    while (z_.avail_out == want) {
      if (z_.avail_in == 0 && !refill()) corrupt(path_, "gzip data is truncated");
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        size_t made = want - z_.avail_out;
        // What follows a member: nothing, another member, or garbage.
        if (z_.avail_in == 0 && !refill()) {
          z_done_ = true;
          return made;
        }
        if (z_.next_in[0] != 0x1f || (z_.avail_in >= 2 && z_.next_in[1] != 0x8b))
          corrupt(path_, "trailing bytes after the gzip data");
        if (inflateReset(&z_) != Z_OK) corrupt(path_, "gzip data is corrupt");
        if (made) return made;
        continue;
      }
      if (rc == Z_MEM_ERROR) ctorch::fail(CTORCH_OUT_OF_MEMORY, "zlib ran out of memory reading '" + path_ + "'");
      if (rc != Z_OK && rc != Z_BUF_ERROR)
        corrupt(path_, std::string("gzip data is corrupt: ") + (z_.msg ? z_.msg : "unknown zlib error"));
    }
    return want - z_.avail_out;
  }
};

at::ScalarType idx_type(unsigned code, size_t *size) {
  switch (code) {
    case 0x08: *size = 1; return at::kByte;
    case 0x09: *size = 1; return at::kChar;
    case 0x0B: *size = 2; return at::kShort;
    case 0x0C: *size = 4; return at::kInt;
    case 0x0D: *size = 4; return at::kFloat;
    case 0x0E: *size = 8; return at::kDouble;
  }
  *size = 0;
  return at::kByte;
}

// IDX stores multi-byte elements big-endian.
void to_host_order(unsigned char *p, size_t n, size_t width) {
  if (width == 1) return;
  for (size_t i = 0; i < n; ++i, p += width)
    for (size_t a = 0, b = width - 1; a < b; ++a, --b) std::swap(p[a], p[b]);
}

}  // namespace

namespace ctorch {
namespace data {

at::Tensor read_idx(const std::string &path) {
  Source src(path);
  unsigned char head[4];
  if (src.read(head, 4) != 4) corrupt(path, "file is shorter than the 4-byte IDX header");
  if (head[0] != 0 || head[1] != 0) corrupt(path, "bad magic number (first two bytes must be 0)");
  size_t width = 0;
  at::ScalarType st = idx_type(head[2], &width);
  if (!width) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02X", head[2]);
    corrupt(path, std::string("unknown element type code ") + buf);
  }
  unsigned ndim = head[3];
  if (ndim == 0) corrupt(path, "zero dimensions");
  std::vector<int64_t> sizes(ndim);
  uint64_t numel = 1;
  for (unsigned i = 0; i < ndim; ++i) {
    unsigned char b[4];
    if (src.read(b, 4) != 4) corrupt(path, "truncated in the dimension sizes");
    uint64_t d = (uint64_t(b[0]) << 24) | (uint64_t(b[1]) << 16) | (uint64_t(b[2]) << 8) | uint64_t(b[3]);
    sizes[i] = static_cast<int64_t>(d);
    if (d && numel > (uint64_t(1) << 48) / d) corrupt(path, "dimension sizes multiply to an absurd element count");
    numel *= d;
  }
  uint64_t header = 4 + 4ull * ndim;
  uint64_t nbytes = numel * width;
  // Refuse sizes the file cannot hold before allocating: exact for plain
  // files, and gzip cannot expand data more than ~1032:1.
  if (!src.compressed() && src.file_size() - header != nbytes)
    corrupt(path, "header announces " + std::to_string(nbytes) + " data bytes but the file holds " +
                      std::to_string(src.file_size() - header) + (src.file_size() - header < nbytes ? " (truncated)" : ""));
  if (src.compressed() && nbytes > src.file_size() * 1100 + (1 << 20))
    corrupt(path, "header announces " + std::to_string(nbytes) + " data bytes, more than the compressed file can hold");
  ctorch::LoadBudget("'" + path + "'", 0).charge_data(nbytes);  // the caller's ctorch_set_load_limit
  at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(st));
  auto *p = static_cast<unsigned char *>(t.data_ptr());
  size_t got = src.read(p, nbytes);
  if (got != nbytes)
    corrupt(path, "truncated: " + std::to_string(got) + " of " + std::to_string(nbytes) + " data bytes present");
  unsigned char extra;
  if (src.read(&extra, 1) != 0) corrupt(path, "trailing bytes after the announced data");
  to_host_order(p, numel, width);
  return t;
}

void mnist_pair(at::Tensor *images, at::Tensor *labels, const std::string &ip, const std::string &lp) {
  at::Tensor im = read_idx(ip);
  if (im.scalar_type() != at::kByte || im.dim() != 3)
    corrupt(ip, "MNIST images must be ubyte data of 3 dimensions, got " + std::string(c10::toString(im.scalar_type())) +
                    " of " + std::to_string(im.dim()));
  at::Tensor lb = read_idx(lp);
  if (lb.scalar_type() != at::kByte || lb.dim() != 1)
    corrupt(lp, "MNIST labels must be ubyte data of 1 dimension, got " + std::string(c10::toString(lb.scalar_type())) +
                    " of " + std::to_string(lb.dim()));
  if (lb.size(0) != im.size(0))
    ctorch::fail(CTORCH_VALUE, "'" + lp + "' holds " + std::to_string(lb.size(0)) + " labels but '" + ip + "' holds " +
                                   std::to_string(im.size(0)) + " images");
  *images = std::move(im);
  *labels = lb.to(at::kLong);
}

static std::string pick(const std::string &base) {
  struct stat st {};
  if (stat((base + ".gz").c_str(), &st) == 0) return base + ".gz";
  return base;  // if this one is missing too, opening it reports CTORCH_IO
}

void mnist_dir(at::Tensor *images, at::Tensor *labels, const std::string &dir, bool train) {
  std::string d(dir);
  if (!d.empty() && d.back() != '/') d += '/';
  std::string prefix = d + (train ? "train" : "t10k");
  mnist_pair(images, labels, pick(prefix + "-images-idx3-ubyte"), pick(prefix + "-labels-idx1-ubyte"));
}

uint64_t epoch_seed(uint64_t seed, uint64_t epoch) { return seed * 1000003ull + epoch; }

}  // namespace data
}  // namespace ctorch

using namespace ctorch::data;

extern "C" {

CTORCH_API ctorch_status ctorch_data_idx_read(ctorch_tensor *out, const char *path) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(path, "path");
  *out = ctorch::give(read_idx(path));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_mnist_read(ctorch_tensor *images, ctorch_tensor *labels, const char *images_path,
                                                const char *labels_path) {
  CTORCH_TRY
  ctorch::require_out(images, "images");
  ctorch::require_out(labels, "labels");
  *images = nullptr;
  *labels = nullptr;
  ctorch::require_ptr(images_path, "images_path");
  ctorch::require_ptr(labels_path, "labels_path");
  at::Tensor im, lb;
  mnist_pair(&im, &lb, images_path, labels_path);
  *images = ctorch::give(std::move(im));
  *labels = ctorch::give(std::move(lb));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_data_mnist_read_dir(ctorch_tensor *images, ctorch_tensor *labels, const char *dir,
                                                    int train) {
  CTORCH_TRY
  ctorch::require_out(images, "images");
  ctorch::require_out(labels, "labels");
  *images = nullptr;
  *labels = nullptr;
  ctorch::require_ptr(dir, "dir");
  at::Tensor im, lb;
  mnist_dir(&im, &lb, dir, train != 0);
  *images = ctorch::give(std::move(im));
  *labels = ctorch::give(std::move(lb));
  CTORCH_CATCH
}


}  // extern "C"
