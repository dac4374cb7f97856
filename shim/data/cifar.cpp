// CIFAR-10 / CIFAR-100 binary files ("data_batch_1.bin", "train.bin"):
// fixed-size records of label byte(s) then 3072 image bytes (CHW, 32x32).
#include "data/data.h"

#include "files/files.h"

#include <ATen/ops/empty.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace ctorch {
namespace data {

namespace {

constexpr int64_t kImageBytes = 3 * 32 * 32;

const char *kind_name(int kind) { return kind == CTORCH_DATA_CIFAR10 ? "CIFAR-10" : "CIFAR-100"; }

}  // namespace

void check_cifar_kind(int kind, const char *arg) {
  if (kind != CTORCH_DATA_CIFAR10 && kind != CTORCH_DATA_CIFAR100_FINE && kind != CTORCH_DATA_CIFAR100_COARSE)
    fail_arg(arg, "is not a ctorch_data_cifar_kind (0, 1 or 2), got " + std::to_string(kind));
}

void read_cifar(at::Tensor *images, at::Tensor *labels, const std::string &path, int kind) {
  const int64_t nlab = kind == CTORCH_DATA_CIFAR10 ? 1 : 2;
  const int64_t rec = nlab + kImageBytes;
  ReadFile file(path.c_str());  // CTORCH_IO naming the path when missing or not a regular file
  const uint64_t size = file.size();
  auto bad = [&](const std::string &why) {
    fail(CTORCH_VALUE, "'" + path + "' is not a valid " + kind_name(kind) + " file: " + why);
  };
  if (size == 0) bad("it is empty (0 records)");
  if (size % rec != 0)
    bad("its " + std::to_string(size) + " bytes are not a whole number of " + std::to_string(rec) +
        "-byte records (record " + std::to_string(size / rec) + " is truncated: " + std::to_string(size % rec) +
        " of " + std::to_string(rec) + " bytes)");
  const int64_t n = static_cast<int64_t>(size / rec);
  LoadBudget("'" + path + "'", 0).charge_data(size);  // the caller's ctorch_set_load_limit
  at::Tensor im = at::empty({n, 3, 32, 32}, at::TensorOptions().dtype(at::kByte));
  at::Tensor lb = at::empty({n}, at::TensorOptions().dtype(at::kLong));
  auto *ip = im.data_ptr<uint8_t>();
  auto *lp = lb.data_ptr<int64_t>();
  // Records in chunks of 1024.
  const int64_t chunk = 1024;
  std::vector<unsigned char> buf(static_cast<size_t>(chunk * rec));
  const int64_t limits[2] = {kind == CTORCH_DATA_CIFAR10 ? 10 : 20, 100};
  for (int64_t r0 = 0; r0 < n; r0 += chunk) {
    const int64_t m = std::min(chunk, n - r0);
    size_t want = static_cast<size_t>(m * rec), got = 0;
    while (got < want) {
      ssize_t k = ::read(file.fd(), buf.data() + got, want - got);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) fail(CTORCH_IO, "read error on '" + path + "': " + std::strerror(errno));
      if (k == 0) bad("truncated while reading (record " + std::to_string(r0 + int64_t(got) / rec) + ")");
      got += static_cast<size_t>(k);
    }
    for (int64_t r = 0; r < m; ++r) {
      const unsigned char *p = buf.data() + r * rec;
      for (int64_t j = 0; j < nlab; ++j) {
        // CIFAR-10: [label 0..9]; CIFAR-100: [coarse 0..19, fine 0..99].
        const int64_t limit = kind == CTORCH_DATA_CIFAR10 ? 10 : limits[j];
        if (p[j] >= limit)
          bad("record " + std::to_string(r0 + r) + " has " +
              (kind == CTORCH_DATA_CIFAR10 ? "label " : j == 0 ? "coarse label " : "fine label ") +
              std::to_string(p[j]) + ", outside 0.." + std::to_string(limit - 1));
      }
      lp[r0 + r] = kind == CTORCH_DATA_CIFAR100_FINE ? p[1] : p[0];
      std::memcpy(ip + (r0 + r) * kImageBytes, p + nlab, kImageBytes);
    }
  }
  *images = std::move(im);
  *labels = std::move(lb);
}

}  // namespace data
}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_data_cifar_read(ctorch_tensor *images, ctorch_tensor *labels, const char *path,
                                                ctorch_data_cifar_kind kind) {
  CTORCH_TRY
  ctorch::require_out(images, "images");
  ctorch::require_out(labels, "labels");
  *images = nullptr;
  *labels = nullptr;
  ctorch::require_ptr(path, "path");
  ctorch::data::check_cifar_kind(kind, "kind");
  at::Tensor im, lb;
  ctorch::data::read_cifar(&im, &lb, path, kind);
  *images = ctorch::give(std::move(im));
  *labels = ctorch::give(std::move(lb));
  CTORCH_CATCH
}

}  // extern "C"
