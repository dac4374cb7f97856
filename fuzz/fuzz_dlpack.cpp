// Harness (b3): bytes read as a DLManagedTensor description for
// ctorch_from_dlpack: ndim (possibly negative or large), raw dtype
// code/bits/lanes, raw device type/id, shape and strides (NULL or from the
// bytes: zero, negative, huge), byte_offset. The data pointer is a real
// 4 KiB buffer. When the harness's own bounds computation shows the view
// fits in that buffer, the imported tensor is read and computed on (ASan
// checks ctorch's copies); otherwise it is only inspected and freed, since
// no importer can know the producer's buffer size.
// Ownership contract checked: on success the deleter runs exactly once
// (when the last reference goes), on failure never.
#include "fuzz_util.h"

#include <dlpack/dlpack.h>

#include <vector>

namespace {

int g_deleted = 0;
void deleter(DLManagedTensor *) { ++g_deleted; }

constexpr size_t kBuf = 4096;

// 1 + the largest byte offset reachable, or SIZE_MAX if it does not fit.
size_t reach(const DLTensor &t, size_t item) {
  uint64_t span = 0;
  for (int i = 0; i < t.ndim; ++i) {
    int64_t n = t.shape[i];
    if (n == 0) return 0;
    if (n < 0 || n > (1 << 20)) return SIZE_MAX;
    int64_t s = 1;
    if (t.strides) {
      s = t.strides[i];
    } else {
      for (int j = i + 1; j < t.ndim; ++j) {
        if (t.shape[j] <= 0 || t.shape[j] > (1 << 20)) return SIZE_MAX;
        s *= t.shape[j];
        if (s > (1 << 20)) return SIZE_MAX;
      }
    }
    if (s < 0 || s > (1 << 20)) return SIZE_MAX;
    span += (uint64_t)(n - 1) * (uint64_t)s;
  }
  uint64_t bytes = (span + 1) * item + t.byte_offset;
  return bytes > kBuf ? SIZE_MAX : (size_t)bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz::init_once();
  fz::Bytes in{data, size};
  static unsigned char *buf = static_cast<unsigned char *>(std::calloc(1, kBuf));
  DLManagedTensor m{};
  uint8_t flags = in.u8();
  int ndim = (int8_t)in.u8();
  if (ndim > 8) ndim = 8;  // the struct must describe real arrays up to ndim
  std::vector<int64_t> shape(ndim > 0 ? ndim : 0), strides(ndim > 0 ? ndim : 0);
  for (auto &s : shape) s = (flags & 0x40) ? (int64_t)in.u64() : (int64_t)(in.u8() % 8) - (in.u8() % 16 == 0);
  for (auto &s : strides) s = (flags & 0x80) ? (int64_t)in.u64() : (int64_t)(in.u8() % 16) - (in.u8() % 16 == 0);
  m.dl_tensor.ndim = ndim;
  m.dl_tensor.shape = (flags & 1) && ndim > 0 ? nullptr : shape.data();
  m.dl_tensor.strides = (flags & 2) ? strides.data() : nullptr;
  m.dl_tensor.dtype.code = in.u8() % 8;
  m.dl_tensor.dtype.bits = (uint8_t)(8u << (in.u8() % 5));
  if (flags & 4) m.dl_tensor.dtype.bits = in.u8();
  m.dl_tensor.dtype.lanes = (flags & 8) ? in.u16() : 1;
  {
    int32_t type = (flags & 0x10) ? (int32_t)in.u8() : (int32_t)kDLCPU;  // any value a C producer might send
    std::memcpy(&m.dl_tensor.device.device_type, &type, sizeof type);
  }
  m.dl_tensor.device.device_id = (flags & 0x10) ? (int32_t)in.u32() : 0;
  m.dl_tensor.byte_offset = in.u8() % 64;
  m.dl_tensor.data = (flags & 0x20) && in.u8() % 4 == 0 ? nullptr : buf;
  m.deleter = in.u8() % 32 == 0 ? nullptr : deleter;
  std::memset(buf, in.u8(), kBuf);

  g_deleted = 0;
  ctorch_tensor t = nullptr;
  ctorch_status st = FZ(ctorch_from_dlpack(in.u8() % 64 ? &t : nullptr, in.u8() % 64 ? &m : nullptr));
  if (st != CTORCH_OK) {
    if (t) fz::violation("failure left a handle", "ctorch_from_dlpack", st);
    if (g_deleted) fz::violation("deleter called on failure", "ctorch_from_dlpack", st);
    return 0;
  }
  if (!m.dl_tensor.shape && ndim > 0) fz::violation("accepted NULL shape", "ctorch_from_dlpack", st);
  ctorch_dtype d;
  size_t item = 1;
  FZ(ctorch_tensor_dtype(&d, t));
  FZ(ctorch_dtype_size(&item, d));
  int64_t dims = -1, n = 0;
  FZ(ctorch_tensor_dim(&dims, t));
  FZ(ctorch_tensor_numel(&n, t));
  if (dims != ndim) fz::violation("dim() differs from ndim", "ctorch_from_dlpack", st);
  size_t r = m.dl_tensor.data ? reach(m.dl_tensor, item) : SIZE_MAX;
  if (r != SIZE_MAX && n <= 4096) {  // the view lies inside buf: read it
    std::vector<unsigned char> out((size_t)n * item + 1);
    FZ(ctorch_tensor_copy_to(out.data(), out.size(), t));
    ctorch_tensor c = nullptr;
    if (FZ(ctorch_tensor_clone(&c, t)) == CTORCH_OK) ctorch_tensor_free(c);
    DLManagedTensor *back = nullptr;
    if (FZ(ctorch_to_dlpack(&back, t)) == CTORCH_OK) back->deleter(back);
  }
  if (g_deleted) fz::violation("deleter called while the tensor lives", "ctorch_from_dlpack", st);
  ctorch_tensor_free(t);
  if (g_deleted != 1) fz::violation("deleter not called exactly once", "ctorch_tensor_free", st);
  return 0;
}
