// Harness: bytes into the IDX (MNIST-style) readers, ctorch_data_idx_read
// and ctorch_data_mnist_read. The first byte chooses:
//   bit 0  the reader (0: ctorch_data_idx_read of the rest; 1:
//          ctorch_data_mnist_read of two files, [u16 length L][L bytes of
//          images][the rest: labels]);
//   bit 1  gzip the file(s) here first (1), so the inflating reader gets
//          well-formed streams of fuzzed contents; else the bytes are the
//          file (gzip or not, by their first bytes, as the reader decides);
//   bit 2  with bit 1: append a second gzip member (gunzip reads both) made
//          of the last byte of the data, or one byte of garbage after it.
// A read tensor is read back whole (ASan checks the copy lies inside it)
// and checked against the header it came from: an IDX file announces its
// dtype and shape, so a tensor of another numel would be a lie.
#include "fuzz_util.h"
#include "mem_file.h"

#include <zlib.h>

#include <vector>

namespace {

// data gzip-compressed (one member; a second one, or garbage, after it).
std::vector<uint8_t> gzip(const uint8_t *p, size_t n, int tail) {
  std::vector<uint8_t> out;
  auto member = [&out](const uint8_t *q, size_t m) {
    z_stream z{};
    if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
    std::vector<uint8_t> buf(deflateBound(&z, (uLong)m) + 32);
    z.next_in = const_cast<Bytef *>(q);
    z.avail_in = (uInt)m;
    z.next_out = buf.data();
    z.avail_out = (uInt)buf.size();
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
    out.insert(out.end(), buf.begin(), buf.begin() + (long)z.total_out);
    deflateEnd(&z);
  };
  if (tail == 1 && n) {
    member(p, n - 1);
    member(p + n - 1, 1);
  } else {
    member(p, n);
    if (tail == 2) out.push_back(0x5a);
  }
  return out;
}

// The dtype width and element count an IDX header announces (plain
// bytes); false if it is not one.
bool header(const uint8_t *p, size_t n, size_t *width, int64_t *ndim, uint64_t *numel) {
  static const size_t widths[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 2, 4, 4, 8, 0};
  if (n < 4 || p[0] || p[1] || p[2] > 15 || !widths[p[2]] || !p[3] || n < 4 + 4u * p[3]) return false;
  *width = widths[p[2]];
  *ndim = p[3];
  *numel = 1;
  for (int i = 0; i < p[3]; ++i) {
    const uint8_t *d = p + 4 + 4 * i;
    uint64_t k = (uint64_t)d[0] << 24 | (uint64_t)d[1] << 16 | (uint64_t)d[2] << 8 | d[3];
    if (k && *numel > ((uint64_t)1 << 48) / k) return false;  // the reader refuses these
    *numel *= k;
  }
  return true;
}

void inspect(ctorch_tensor t, const char *call) {
  int64_t n = 0, dim = 0;
  size_t item = 0;
  ctorch_dtype d;
  FZ(ctorch_tensor_numel(&n, t));
  FZ(ctorch_tensor_dim(&dim, t));
  FZ(ctorch_tensor_dtype(&d, t));
  FZ(ctorch_dtype_size(&item, d));
  if (dim < 1) fz::violation("an IDX tensor without dimensions", call, CTORCH_OK);
  if (n > (1 << 22)) fz::violation("more elements than a small input can hold", call, CTORCH_OK);
  std::vector<unsigned char> buf((size_t)n * item + 1);
  FZ(ctorch_tensor_copy_to(buf.data(), buf.size(), t));
  ctorch_tensor s = nullptr;
  if (FZ(ctorch_sum(&s, t, nullptr)) == CTORCH_OK) ctorch_tensor_free(s);
}

struct File {
  std::vector<uint8_t> bytes;
  File(const uint8_t *p, size_t n, uint8_t mode) {
    if (mode & 2) bytes = gzip(p, n, (mode & 4) ? 1 + (n & 1) : 0);
    else bytes.assign(p, p + n);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz::init_once();
  if (size == 0) return 0;
  uint8_t mode = data[0];
  fz::Bytes in{data + 1, size - 1};
  if ((mode & 1) == 0) {
    File f(in.p, in.n, mode);
    fz::MemFile m(f.bytes.data(), f.bytes.size());
    ctorch_tensor t = nullptr;
    if (FZ(ctorch_data_idx_read(&t, m.path())) == CTORCH_OK) {
      inspect(t, "ctorch_data_idx_read");
      size_t width = 0, item = 0;
      int64_t ndim = 0, dim = 0, numel = 0;
      uint64_t announced = 0;
      ctorch_dtype d;
      bool plain = (mode & 2) || in.n < 2 || in.p[0] != 0x1f || in.p[1] != 0x8b;
      if (plain && header(in.p, in.n, &width, &ndim, &announced)) {
        FZ(ctorch_tensor_dim(&dim, t));
        FZ(ctorch_tensor_numel(&numel, t));
        FZ(ctorch_tensor_dtype(&d, t));
        FZ(ctorch_dtype_size(&item, d));
        if (dim != ndim || (uint64_t)numel != announced || item != width)
          fz::violation("tensor differs from the IDX header", "ctorch_data_idx_read", CTORCH_OK);
      } else if (plain) {
        fz::violation("read a file whose header is not IDX", "ctorch_data_idx_read", CTORCH_OK);
      }
      ctorch_tensor_free(t);
    } else if (t) {
      fz::violation("failure left a handle", "ctorch_data_idx_read", CTORCH_VALUE);
    }
    return 0;
  }
  const uint8_t *im = nullptr;
  size_t nim = in.take(&im, in.u16());
  File fi(im, nim, mode), fl(in.p, in.n, mode);
  fz::MemFile mi(fi.bytes.data(), fi.bytes.size()), ml(fl.bytes.data(), fl.bytes.size());
  ctorch_tensor images = nullptr, labels = nullptr;
  if (FZ(ctorch_data_mnist_read(&images, &labels, mi.path(), ml.path())) == CTORCH_OK) {
    int64_t si[8] = {0}, sl[8] = {0};
    FZ(ctorch_tensor_sizes(si, 8, images));
    FZ(ctorch_tensor_sizes(sl, 8, labels));
    if (si[0] != sl[0]) fz::violation("images and labels of different counts", "ctorch_data_mnist_read", CTORCH_OK);
    inspect(images, "ctorch_data_mnist_read");
    inspect(labels, "ctorch_data_mnist_read");
    ctorch_tensor_free(images);
    ctorch_tensor_free(labels);
  } else if (images || labels) {
    fz::violation("failure left a handle", "ctorch_data_mnist_read", CTORCH_VALUE);
  }
  return 0;
}
