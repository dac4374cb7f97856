// DLPack import/export, zero-copy both ways.
//
// Not at::toDLPack/at::fromDLPack: libtorch 1.13 refuses bool, trusts its
// input blindly, and its fromDLPack arms the producer's deleter before the
// tensor exists (a failure half-way would call it and leave the caller with
// a dangling struct). Here the input is validated first and the deleter is
// armed only once the tensor has been built.
// First, so the installed header wins over any copy libtorch might pull in
// (same include guard); DLPACK_MAJOR_VERSION below must be the installed one.
#include <dlpack/dlpack.h>

#include "core/internal.h"
#include "core/materialize.h"

#include <ATen/Context.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/Storage.h>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace {

// DLPack 0.6 has no bool code; 6 is kDLBool from 0.8 on (and what torch >= 2 sends).
constexpr uint8_t kBoolCode = CTORCH_DLPACK_BOOL_CODE;

struct DtypeRow {
  uint8_t code;
  uint8_t bits;
  c10::ScalarType type;
};
const DtypeRow kDtypes[] = {
    {kDLInt, 8, c10::kChar},           {kDLInt, 16, c10::kShort},          {kDLInt, 32, c10::kInt},
    {kDLInt, 64, c10::kLong},          {kDLUInt, 8, c10::kByte},           {kDLFloat, 16, c10::kHalf},
    {kDLFloat, 32, c10::kFloat},       {kDLFloat, 64, c10::kDouble},       {kDLBfloat, 16, c10::kBFloat16},
    {kDLComplex, 32, c10::kComplexHalf}, {kDLComplex, 64, c10::kComplexFloat}, {kDLComplex, 128, c10::kComplexDouble},
    {kBoolCode, 8, c10::kBool},
    // Wider unsigned types where libtorch has them (compat.h); float8 has
    // DLPack codes only from DLPack 1.1, newer than the 0.6 we build with.
    // (elementSize is not constexpr in every libtorch: the cast says the
    // size_t fits, instead of a -Wnarrowing warning on 2.x.)
#define CTORCH_DL_UINT_ROW(ours, theirs) \
  {kDLUInt, static_cast<uint8_t>(c10::elementSize(c10::ScalarType::theirs) * 8), c10::ScalarType::theirs},
    CTORCH_COMPAT_DTYPES_2_3(CTORCH_DL_UINT_ROW)
#undef CTORCH_DL_UINT_ROW
};

DLDataType dl_dtype(c10::ScalarType t) {
  for (const auto &r : kDtypes)
    if (r.type == t) return DLDataType{r.code, r.bits, 1};
  ctorch::fail(CTORCH_TYPE, std::string("dtype ") + c10::toString(t) + " has no DLPack equivalent");
}

c10::ScalarType scalar_type(const DLDataType &d) {
  if (d.lanes != 1)
    ctorch::fail(CTORCH_TYPE, "argument 'src': dtype lanes " + std::to_string(d.lanes) + " (vector types are not supported)");
  for (const auto &r : kDtypes)
    if (r.code == d.code && r.bits == d.bits) return r.type;
  ctorch::fail(CTORCH_TYPE, "argument 'src': unsupported DLPack dtype code " + std::to_string(d.code) + " bits " +
                                std::to_string(d.bits));
}

DLDevice dl_device(const c10::Device &d) {
  if (d.is_cpu()) return DLDevice{kDLCPU, 0};
  if (d.is_cuda()) return DLDevice{kDLCUDA, d.index() < 0 ? 0 : d.index()};
  ctorch::fail(CTORCH_NOT_IMPLEMENTED, "device " + d.str() + " cannot be exported through DLPack");
}

c10::Device device_of(const DLDevice &d) {
  // DLDeviceType has no fixed underlying type: reading a value the producer
  // made up (found by fuzz_dlpack) as the enum is UB in C++. Read the int.
  static_assert(sizeof(d.device_type) == sizeof(int32_t), "DLDeviceType is int-sized");
  int32_t type;
  std::memcpy(&type, &d.device_type, sizeof type);
  switch (type) {
    case kDLCPU:
    case kDLCUDAHost:  // pinned host memory is ordinary CPU memory to libtorch
      return c10::Device(c10::kCPU);
    case kDLCUDA:
    case kDLCUDAManaged:
      if (!at::hasCUDA()) ctorch::fail(CTORCH_NOT_IMPLEMENTED, "argument 'src': a CUDA tensor, but CUDA is not available");
      if (d.device_id < 0 || d.device_id > 127) ctorch::fail_arg("src", "device_id " + std::to_string(d.device_id) + " out of range");
      return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(d.device_id));
    default:
      ctorch::fail(CTORCH_NOT_IMPLEMENTED, "argument 'src': DLPack device type " + std::to_string(type) +
                                               " is not supported");
  }
}

// Everything that can be wrong with a DLTensor, checked before any use.
// Returns the byte extent of the viewed memory (0 for no elements). Every
// count libtorch will hold as int64 (sizes, numel, contiguous strides,
// storage bytes) must fit in int64: libtorch multiplies them unchecked.
size_t validate(const DLTensor &t, c10::ScalarType st) {
  if (t.ndim < 0) ctorch::fail_arg("src", "dl_tensor.ndim is " + std::to_string(t.ndim) + " (negative)");
  if (t.ndim > 0 && !t.shape) ctorch::fail_arg("src", "dl_tensor.shape is NULL but ndim is " + std::to_string(t.ndim));
  const uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
  uint64_t numel = 1, dense = 1, span = 1;  // dense: product of max(size, 1); span: 1 + the largest element offset
  bool empty = false;
  for (int i = 0; i < t.ndim; ++i) {
    int64_t n = t.shape[i];
    if (n < 0) ctorch::fail_arg("src", "dl_tensor.shape[" + std::to_string(i) + "] is " + std::to_string(n) + " (negative)");
    if (n == 0) empty = true;
    uint64_t m = n ? static_cast<uint64_t>(n) : 1;
    if (dense > kMax / m) ctorch::fail_arg("src", "number of elements overflows int64");
    dense *= m;
  }
  numel = empty ? 0 : dense;
  if (t.strides) {
    for (int i = 0; i < t.ndim; ++i) {
      int64_t s = t.strides[i];
      if (s < 0)
        ctorch::fail_arg("src", "dl_tensor.strides[" + std::to_string(i) + "] is " + std::to_string(s) +
                                    " (negative strides are not supported by libtorch)");
      if (!empty && t.shape[i] > 1) {
        uint64_t step = static_cast<uint64_t>(t.shape[i] - 1);
        if (s && step > kMax / static_cast<uint64_t>(s)) ctorch::fail_arg("src", "strides overflow");
        uint64_t add = step * static_cast<uint64_t>(s);
        if (add > kMax - span) ctorch::fail_arg("src", "strides overflow");
        span += add;
      }
    }
  } else {
    span = numel;
  }
  if (empty) return 0;
  size_t item = c10::elementSize(st);
  if (span > kMax / item) ctorch::fail_arg("src", "byte size overflows");
  if (!t.data) ctorch::fail_arg("src", "dl_tensor.data is NULL but the tensor has " + std::to_string(numel) + " elements");
  return static_cast<size_t>(span * item);
}

// Holds the producer's struct until the storage dies. Armed only after the
// tensor is complete, so an exception while building it leaves src to the
// caller (the storage's destructor then just frees this holder).
template <class M>
struct Holder {
  M *src;
  std::atomic<bool> armed{false};
  static void release(void *p) {
    auto *h = static_cast<Holder *>(p);
    if (h->armed.load(std::memory_order_acquire) && h->src->deleter) h->src->deleter(h->src);
    delete h;
  }
};

template <class M>
at::Tensor import_tensor(M *src) {
  const DLTensor &t = src->dl_tensor;
  c10::ScalarType st = scalar_type(t.dtype);
  size_t nbytes = validate(t, st);
  c10::Device dev = device_of(t.device);
  // Strides given: used in place. Absent: computed into a small inline buffer.
  c10::SmallVector<int64_t, 8> contiguous;
  at::IntArrayRef sizes(t.shape, t.ndim), strides;
  if (t.strides) {
    strides = at::IntArrayRef(t.strides, t.ndim);
  } else {
    contiguous.resize(t.ndim);
    int64_t s = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      contiguous[i] = s;
      s *= std::max<int64_t>(sizes[i], 1);
    }
    strides = contiguous;
  }
  char *data = static_cast<char *>(t.data);
  if (data) data += t.byte_offset;
  // libtorch's kernels load elements with aligned (vector) instructions: a
  // complex128 view at an odd address crashed a copy. Elements must sit at
  // multiples of their size (what every real producer gives).
  if (data && nbytes && reinterpret_cast<uintptr_t>(data) % c10::elementSize(st))
    ctorch::fail_arg("src", "data + byte_offset is not aligned to the element size (" +
                                std::to_string(c10::elementSize(st)) + " bytes)");

  auto holder = std::make_unique<Holder<M>>();
  holder->src = src;
  c10::DataPtr ptr(data, holder.get(), &Holder<M>::release, dev);
  Holder<M> *h = holder.release();  // now owned by ptr
  // Resizable on the CPU: libtorch 1.13's resize_ changes the sizes before
  // failing on a fixed storage, leaving a tensor larger than its memory. A
  // resize reallocates instead (and the producer's memory is released then).
  c10::Storage storage(c10::Storage::use_byte_size_t(), nbytes, std::move(ptr),
                       dev.is_cpu() ? c10::GetCPUAllocator() : nullptr, /*resizable=*/dev.is_cpu());
  // Built directly, as at::from_blob does, rather than through empty()+set_():
  // two dispatcher round trips were half the cost of an exchange.
  auto opts = at::TensorOptions().dtype(st).device(dev);
  at::Tensor out = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), opts.computeDispatchKey(), opts.dtype());
  out.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides);
  h->armed.store(true, std::memory_order_release);
  return out;
}

// The exported struct owns one reference to the tensor plus its shape.
// A CPU storage's buffer, owned jointly by the storage and every export of
// it. A resize_ that grows a storage (through any tensor or view sharing
// it, or an op's out= argument) frees the old buffer, which a consumer of an
// export was still reading (heap-use-after-free, found by the in-process
// interpreter fuzzer: export, import, resize_ of a view). With the buffer
// shared, the storage drops its share and the consumer keeps the memory
// (and the values it held) until the export is released. CUDA buffers stay
// as they are: the caching allocator recognises its own DataPtrs
// (record_stream), so there a resize during an export remains the caller's
// to avoid, as in PyTorch.
using SharedBuffer = std::shared_ptr<c10::DataPtr>;

void release_shared(void *ctx) { delete static_cast<SharedBuffer *>(ctx); }

SharedBuffer share_buffer(c10::StorageImpl *si) {
  const c10::DataPtr &cur = static_cast<const c10::StorageImpl *>(si)->data_ptr();
  if (cur.get_deleter() == &release_shared) return *static_cast<SharedBuffer *>(cur.get_context());
  auto holder = std::make_unique<SharedBuffer>(std::make_shared<c10::DataPtr>());
  SharedBuffer buf = *holder;
  c10::DataPtr wrapped(cur.get(), holder.get(), &release_shared, cur.device());
  *buf = si->set_data_ptr(std::move(wrapped));
  holder.release();  // now owned by the storage's DataPtr
  return buf;
}

// Shape and strides are copied (inline for up to 6 dims) so that a later
// resize of the caller's tensor cannot change what the consumer sees.
// An export keeps the storage, never the tensor: a tensor carries its
// autograd graph, and that graph can reach the export's own import (y =
// from_dlpack(to_dlpack(x)) requiring grad, then x.add_(y): x's graph holds
// y, y's memory holds the export), a reference cycle that nothing frees
// (fuzz_interp under LeakSanitizer).
template <class M>
struct Export {
  c10::Storage storage;  // keeps non-CPU memory (and the allocator's record) alive
  SharedBuffer buffer;   // CPU: the exported memory, whatever happens to the storage
  c10::SmallVector<int64_t, 6> shape, strides;
  M managed{};
  static void deleter(M *self) {
    if (self) delete static_cast<Export *>(self->manager_ctx);
  }
};

template <class M>
M *export_tensor(ctorch_tensor h) {
  ctorch::require_tensor(h, "t");
  // A zero tensor has no memory to share: export zeros (a copy) instead.
  at::Tensor t = ctorch::materialize_zero(ctorch::own(h));
  if (t.layout() != c10::kStrided) ctorch::fail(CTORCH_NOT_IMPLEMENTED, "only strided (dense) tensors can be exported through DLPack");
  if (t.is_conj() || t.is_neg())
    ctorch::fail(CTORCH_VALUE, "tensor has its conjugate/negative bit set; resolve it (resolve_conj/resolve_neg) before exporting");
  DLDataType dt = dl_dtype(t.scalar_type());
  DLDevice dev = dl_device(t.device());
  // A failed resize_ in libtorch 1.13 can leave a negative size behind; no
  // consumer can use such a description.
  for (int64_t s : t.sizes())
    if (s < 0) ctorch::fail(CTORCH_VALUE, "tensor has a negative size " + std::to_string(s) + " (left by a failed resize_?)");
  auto e = std::make_unique<Export<M>>();
  e->shape.assign(t.sizes().begin(), t.sizes().end());
  e->strides.assign(t.strides().begin(), t.strides().end());
  DLTensor &d = e->managed.dl_tensor;
  d.data = t.numel() ? t.data_ptr() : nullptr;  // (2.x: materialises a copy-on-write storage first)
  e->storage = t.storage();
  if (d.data && t.device().is_cpu()) e->buffer = share_buffer(e->storage.unsafeGetStorageImpl());
  d.device = dev;
  d.ndim = static_cast<int>(t.dim());
  d.dtype = dt;
  d.shape = e->shape.data();
  d.strides = e->strides.data();
  d.byte_offset = 0;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = &Export<M>::deleter;
  return &e.release()->managed;
}

}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_to_dlpack(struct DLManagedTensor **out, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  *out = export_tensor<DLManagedTensor>(t);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_from_dlpack(ctorch_tensor *out, struct DLManagedTensor *src) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(src, "src");
  if (!src->deleter) ctorch::fail_arg("src", "deleter is NULL (ctorch must be able to release the producer's memory)");
  *out = ctorch::give(import_tensor(src));
  CTORCH_CATCH
}

#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
// DLPack >= 1.0: the versioned struct. Built only against such headers.
CTORCH_API ctorch_status ctorch_to_dlpack_versioned(struct DLManagedTensorVersioned **out, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  DLManagedTensorVersioned *m = export_tensor<DLManagedTensorVersioned>(t);
  m->version.major = DLPACK_MAJOR_VERSION;
  m->version.minor = DLPACK_MINOR_VERSION;
  m->flags = 0;
  *out = m;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_from_dlpack_versioned(ctorch_tensor *out, struct DLManagedTensorVersioned *src) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(src, "src");
  if (!src->deleter) ctorch::fail_arg("src", "deleter is NULL (ctorch must be able to release the producer's memory)");
  if (src->version.major != DLPACK_MAJOR_VERSION)
    ctorch::fail(CTORCH_VALUE, "argument 'src': DLPack major version " + std::to_string(src->version.major) +
                                   ", this build speaks " + std::to_string(DLPACK_MAJOR_VERSION));
  if (src->flags & DLPACK_FLAG_BITMASK_READ_ONLY)
    ctorch::fail(CTORCH_VALUE, "argument 'src': read-only DLPack tensors are not supported (libtorch tensors are writable)");
  *out = ctorch::give(import_tensor(src));
  CTORCH_CATCH
}
#else
// Built against DLPack < 1.0 (Debian's 0.6): the symbols exist so the ABI
// does not depend on the build machine, but they only report that.
CTORCH_API ctorch_status ctorch_to_dlpack_versioned(struct DLManagedTensorVersioned **out, ctorch_tensor t) {
  CTORCH_TRY
  if (out) *out = nullptr;
  ctorch::fail(CTORCH_NOT_IMPLEMENTED, "ctorch was built against DLPack " + std::to_string(DLPACK_VERSION) +
                                           ", which has no DLManagedTensorVersioned (needs >= 1.0)");
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_from_dlpack_versioned(ctorch_tensor *out, struct DLManagedTensorVersioned *src) {
  CTORCH_TRY
  if (out) *out = nullptr;
  ctorch::fail(CTORCH_NOT_IMPLEMENTED, "ctorch was built against DLPack " + std::to_string(DLPACK_VERSION) +
                                           ", which has no DLManagedTensorVersioned (needs >= 1.0)");
  CTORCH_CATCH
}
#endif

}  // extern "C"
