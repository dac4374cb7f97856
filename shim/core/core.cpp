// Hand-written core: library queries, tensor creation from C memory, data
// and metadata access, conversions, printing.
#include "internal.h"
#include "api_identity.h"  // ctorch::require_matching_torch
#include "cuda_backend.h"  // ctorch::new_generator, ctorch::cuda_device
#include "materialize.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/Formatting.h>
#include <ATen/ops/clone.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/zeros.h>
#include <c10/core/CPUAllocator.h>
#include <torch/csrc/api/include/torch/version.h>

#include <cstdlib>
#include <memory>
#include <sstream>

using ctorch::Borrowed;

namespace {

#define CTORCH_STR2(x) #x
#define CTORCH_STR(x) CTORCH_STR2(x)
const char kVersion[] =
    CTORCH_STR(CTORCH_VERSION_MAJOR) "." CTORCH_STR(CTORCH_VERSION_MINOR) "." CTORCH_STR(CTORCH_VERSION_PATCH);

// numel * itemsize with overflow checks; throws INVALID_ARGUMENT.
size_t checked_nbytes(const int64_t *sizes, size_t ndim, size_t itemsize, const char *arg) {
  uint64_t n = 1;
  for (size_t i = 0; i < ndim; ++i) {
    if (sizes[i] < 0) ctorch::fail_arg(arg, "size " + std::to_string(sizes[i]) + " at dimension " + std::to_string(i) + " is negative");
    if (sizes[i] && n > static_cast<uint64_t>(INT64_MAX) / static_cast<uint64_t>(sizes[i])) ctorch::fail_arg(arg, "number of elements overflows int64");
    n *= static_cast<uint64_t>(sizes[i]);
  }
  // libtorch holds numel and byte sizes as int64 and multiplies them unchecked.
  if (n > static_cast<uint64_t>(INT64_MAX) / itemsize) ctorch::fail_arg(arg, "byte size overflows int64");
  return static_cast<size_t>(n * itemsize);
}

// Raw memory has no scale/zero point: a quantized dtype over it makes a
// tensor without a quantizer, on which libtorch asserts or (printing a
// from_blob one) dereferences NULL. Quantize a float tensor instead.
void reject_quantized(c10::ScalarType st, const char *arg) {
  if (c10::isQIntType(st))
    ctorch::fail(CTORCH_TYPE, std::string("argument '") + arg + "': quantized dtype " + c10::toString(st) +
                                  " cannot be built from raw memory (it needs a scale and zero point); create a float "
                                  "tensor and quantize it (ctorch_quantize_per_tensor)");
}

}  // namespace

// A zero tensor (_efficientzerotensor: the ZeroTensor dispatch key) has sizes
// but no memory; its data pointer is NULL. Exported (DLPack), copied out or
// saved, it would hand a consumer NULL for N elements: materialise it.
at::Tensor ctorch::materialize_zero(const at::Tensor &t) {
  if (!t.defined() || !t._is_zerotensor()) return t;
  return at::zeros(t.sizes(), t.options());
}

namespace {
// A bool tensor whose bytes may be other than 0 and 1 (view_dtype of uint8;
// see ctorch_tensor_copy_to) as one holding 0 and 1: item<T>() of the raw
// byte 5 would give 5.0.
at::Tensor normal_bool(const at::Tensor &x) { return x.scalar_type() == at::kBool ? x.view(at::kByte).ne(0) : x; }
}  // namespace

extern "C" {

CTORCH_API ctorch_status ctorch_version(const char **out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ctorch::require_matching_torch();
  *out = kVersion;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_torch_version(const char **out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ctorch::require_matching_torch();
  *out = TORCH_VERSION;
  CTORCH_CATCH
}

CTORCH_API void ctorch_string_free(char *s) { std::free(s); }

CTORCH_API ctorch_status ctorch_manual_seed(uint64_t seed) {
  CTORCH_TRY
  at::manual_seed(seed);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_get_num_threads(int *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = at::get_num_threads();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_set_num_threads(int n) {
  CTORCH_TRY
  if (n < 1) ctorch::fail_arg("n", "must be >= 1, got " + std::to_string(n));
  at::set_num_threads(n);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_get_num_interop_threads(int *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = at::get_num_interop_threads();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_set_num_interop_threads(int n) {
  CTORCH_TRY
  if (n < 1) ctorch::fail_arg("n", "must be >= 1, got " + std::to_string(n));
  at::set_num_interop_threads(n);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_is_available(int *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = at::hasCUDA() ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_cuda_device_count(int *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = at::hasCUDA() ? static_cast<int>(at::getNumGPUs()) : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_dtype_size(size_t *out, ctorch_dtype dtype) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = c10::elementSize(ctorch::to_scalar_type(dtype, "dtype"));
  CTORCH_CATCH
}

// ---- tensors ---------------------------------------------------------------

CTORCH_API void ctorch_tensor_free(ctorch_tensor t) {
  if (!t) return;
  // A freed or foreign pointer frees nothing (recorded as the last error).
  c10::TensorImpl *p = ctorch::untrack(t);
  if (C10_UNLIKELY(!p)) return ctorch::bad_tensor_free(t, __func__);
  ctorch::TensorImplPtr::reclaim(p);  // drops the reference
}

CTORCH_API ctorch_status ctorch_tensor_ref(ctorch_tensor *out, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_tensor(t, "t");
  *out = ctorch::give(ctorch::own(t));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_is_same(int *out, ctorch_tensor a, ctorch_tensor b) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = 0;
  ctorch::Borrowed ta(a, "a", ctorch::Borrowed::required_t{});
  ctorch::Borrowed tb(b, "b", ctorch::Borrowed::required_t{});
  *out = ta->is_same(tb.get()) ? 1 : 0;
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_from_data(ctorch_tensor *out, const void *data, size_t nbytes,
                                                 const int64_t *sizes, size_t ndim, ctorch_dtype dtype) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_list(sizes, ndim, "sizes");
  auto st = ctorch::to_scalar_type(dtype, "dtype");
  reject_quantized(st, "dtype");
  size_t want = checked_nbytes(sizes, ndim, c10::elementSize(st), "sizes");
  if (nbytes != want)
    ctorch::fail_arg("nbytes", std::to_string(nbytes) + " does not match sizes and dtype (" + std::to_string(want) + " bytes)");
  if (!data && want) ctorch::fail_arg("data", "is NULL");
  at::Tensor t = at::empty(c10::IntArrayRef(sizes, ndim), at::TensorOptions().dtype(st));
  if (want) std::memcpy(t.data_ptr(), data, want);
  *out = ctorch::give(std::move(t));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_from_blob(ctorch_tensor *out, void *data, const int64_t *sizes,
                                                 const int64_t *strides, size_t ndim, ctorch_dtype dtype,
                                                 ctorch_device device, void (*release)(void *ctx), void *ctx) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_list(sizes, ndim, "sizes");
  auto st = ctorch::to_scalar_type(dtype, "dtype");
  reject_quantized(st, "dtype");
  auto dev = ctorch::to_device(device, "device");
  size_t bytes = checked_nbytes(sizes, ndim, c10::elementSize(st), "sizes");
  if (!data && bytes) ctorch::fail_arg("data", "is NULL");
  // libtorch's kernels load elements with aligned (vector) instructions:
  // a misaligned view crashes inside them (seen for complex128).
  if (bytes && reinterpret_cast<uintptr_t>(data) % c10::elementSize(st))
    ctorch::fail_arg("data", "is not aligned to the element size (" + std::to_string(c10::elementSize(st)) + " bytes)");
  // libtorch 1.13 computes the storage size inside a noexcept function, so a
  // bad stride there aborts the process: check them here first.
  if (strides) {
    uint64_t extent = 0;
    // Every stride, also those after a 0 size (an empty tensor kept a
    // negative stride; found by the in-process interpreter fuzzer).
    for (size_t i = 0; i < ndim; ++i)
      if (strides[i] < 0)
        ctorch::fail_arg("strides", "stride " + std::to_string(strides[i]) + " at dimension " + std::to_string(i) + " is negative");
    for (size_t i = 0; i < ndim; ++i) {
      if (sizes[i] == 0) { extent = 0; break; }
      uint64_t span = static_cast<uint64_t>(sizes[i] - 1);
      if (strides[i] && span > (UINT64_MAX / 2 - extent) / static_cast<uint64_t>(strides[i]))
        ctorch::fail_arg("strides", "storage extent overflows");
      extent += span * static_cast<uint64_t>(strides[i]);
    }
    if (extent > static_cast<uint64_t>(INT64_MAX) / c10::elementSize(st)) ctorch::fail_arg("strides", "storage extent overflows");
  }
  auto opts = at::TensorOptions().dtype(st).device(dev);
  at::IntArrayRef sz(sizes, ndim);
  // at::from_blob may build the storage (and so own the deleter) and still
  // fail afterwards; the header promises release is not called on failure,
  // so the deleter only fires once armed after success.
  struct BlobOwner {
    void (*release)(void *);
    void *ctx;
    bool armed;
  };
  auto guard = std::make_unique<BlobOwner>(BlobOwner{release, ctx, false});
  BlobOwner *owner = guard.get();
  auto deleter = [owner](void *) {
    if (!owner->armed) return;  // failure path: the guard frees owner
    if (owner->release) owner->release(owner->ctx);
    delete owner;
  };
  at::Tensor t = strides ? at::from_blob(data, sz, at::IntArrayRef(strides, ndim), deleter, opts)
                         : at::from_blob(data, sz, deleter, opts);
  owner->armed = true;
  guard.release();
  // libtorch 1.13's resize_ changes the sizes before it fails on a storage
  // that is not resizable, leaving a tensor larger than its memory (the next
  // write overruns the caller's buffer). A resizable CPU storage reallocates
  // instead (the caller's memory is then released, as for any last reference).
  if (dev.is_cpu()) {
    c10::StorageImpl *si = t.storage().unsafeGetStorageImpl();
    si->set_allocator(c10::GetCPUAllocator());
    si->set_resizable(true);
  }
  *out = ctorch::give(std::move(t));
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_copy_to(void *dst, size_t dst_bytes, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_tensor(t, "t");
  Borrowed b(t);
  const at::Tensor &x = b.get();
  // quint4x2 / quint2x4 pack 2 or 4 elements per byte (element_size() says
  // 1): numel bytes would read past their storage (heap overflow found by
  // the interpreter fuzzer).
  if (x.scalar_type() == at::kQUInt4x2 || x.scalar_type() == at::kQUInt2x4)
    ctorch::fail(CTORCH_TYPE, std::string("argument 't': ") + c10::toString(x.scalar_type()) +
                                  " packs several elements per byte; copy_to copies numel * element size bytes"
                                  " (dequantize it first)");
  size_t need = static_cast<size_t>(x.numel()) * x.element_size();
  if (dst_bytes < need)
    ctorch::fail_arg("dst_bytes", std::to_string(dst_bytes) + " is smaller than the tensor's " + std::to_string(need) + " bytes");
  if (!dst && need) ctorch::fail_arg("dst", "is NULL");
  if (!need) return CTORCH_OK;
  at::Tensor c = x.device().is_cpu() ? x : x.to(at::kCPU);
  // Conjugate/negative views hold unresolved data: copy the values they show.
  c = ctorch::materialize_zero(c).resolve_conj().resolve_neg().contiguous();
  // The bytes read lie inside the storage, whatever the dtype claims.
  const c10::Storage &st = c.storage();
  if (!st.data() || st.nbytes() / c.element_size() < static_cast<size_t>(c.storage_offset()) + c.numel())
    ctorch::fail(CTORCH_RUNTIME, "argument 't': its storage holds " + std::to_string(st.nbytes()) + " bytes, fewer than its " +
                                     std::to_string(need) + " bytes of elements");
  if (c.scalar_type() == at::kBool) {
    // A bool tensor's bytes need not be 0 or 1 (view_dtype of uint8 as bool
    // keeps 5 and 255): every binding reads them as its language's
    // bool, where another byte is undefined behaviour (Rust: `v == true` and
    // `!v` both true). Written as 0/1, never copied as they are.
    const unsigned char *s = static_cast<const unsigned char *>(c.data_ptr());
    unsigned char *d = static_cast<unsigned char *>(dst);
    for (size_t i = 0; i < need; ++i) d[i] = s[i] != 0;
  } else {
    std::memcpy(dst, c.data_ptr(), need);
  }
  CTORCH_CATCH
}

CTORCH_GETTER(ctorch_tensor_dim, int64_t, x.dim())
CTORCH_GETTER(ctorch_tensor_numel, int64_t, x.numel())
CTORCH_GETTER(ctorch_tensor_dtype, ctorch_dtype, ctorch::from_scalar_type(x.scalar_type()))
CTORCH_GETTER(ctorch_tensor_device, ctorch_device, ctorch::from_device(x.device()))
CTORCH_GETTER(ctorch_tensor_layout, ctorch_layout, ctorch::from_layout(x.layout()))
CTORCH_GETTER(ctorch_tensor_is_contiguous, int, x.is_contiguous() ? 1 : 0)
CTORCH_API ctorch_status ctorch_tensor_data_ptr(void **out, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_tensor(t, "t");
  Borrowed b(t);
  const at::Tensor &x = b.get();
  if (!x.numel()) return CTORCH_OK;
  // Zero tensors and meta tensors have elements but no memory: a caller
  // reading through NULL would crash.
  if (x._is_zerotensor())
    ctorch::fail(CTORCH_VALUE, "argument 't': a zero tensor (_efficientzerotensor) has no memory; clone or copy it out");
  // Checked on the storage before data_ptr(): TensorImpl::data() adds the
  // storage offset to the storage's pointer, which is undefined behaviour on
  // a NULL one (a meta tensor's select/narrow view; UBSan in fuzz_interp).
  if (x.is_meta() || (x.has_storage() && x.storage().data() == nullptr))
    ctorch::fail(CTORCH_VALUE, "argument 't': the tensor has no memory (device " + x.device().str() + ")");
  void *p = x.data_ptr();
  if (!p) ctorch::fail(CTORCH_VALUE, "argument 't': the tensor has no memory (device " + x.device().str() + ")");
  *out = p;
  CTORCH_CATCH
}
CTORCH_GETTER(ctorch_tensor_requires_grad, int, x.requires_grad() ? 1 : 0)
CTORCH_GETTER(ctorch_tensor_item_double, double, normal_bool(x).item<double>())
CTORCH_GETTER(ctorch_tensor_item_int64, int64_t, normal_bool(x).item<int64_t>())
CTORCH_GETTER(ctorch_tensor_item_bool, int, normal_bool(x).item<bool>() ? 1 : 0)

static ctorch_status copy_dims(const char *fn, int64_t *out, size_t cap, ctorch_tensor t, bool strides) {
  try {
    ctorch::require_out(out, "out");
    ctorch::require_tensor(t, "t");
    Borrowed b(t);
    const at::Tensor &x = b.get();
    size_t d = static_cast<size_t>(x.dim());
    if (cap < d) ctorch::fail_arg("cap", std::to_string(cap) + " is smaller than dim() = " + std::to_string(d));
    auto v = strides ? x.strides() : x.sizes();
    for (size_t i = 0; i < d; ++i) out[i] = v[i];
  } catch (...) {
    return ctorch::translate_exception(fn);
  }
  return CTORCH_OK;
}

CTORCH_API ctorch_status ctorch_tensor_sizes(int64_t *out, size_t cap, ctorch_tensor t) {
  return copy_dims(__func__, out, cap, t, false);
}
CTORCH_API ctorch_status ctorch_tensor_strides(int64_t *out, size_t cap, ctorch_tensor t) {
  return copy_dims(__func__, out, cap, t, true);
}

CTORCH_TRANSFORM(ctorch_tensor_to_dtype, CTORCH_COMMA ctorch_dtype dtype,
                 x.to(ctorch::to_scalar_type(dtype, "dtype")))
CTORCH_TRANSFORM(ctorch_tensor_to_device, CTORCH_COMMA ctorch_device device,
                 x.to(ctorch::to_device(device, "device")))
CTORCH_TRANSFORM(ctorch_tensor_clone, , at::clone(x))
CTORCH_TRANSFORM(ctorch_tensor_contiguous, , x.contiguous())

CTORCH_API ctorch_status ctorch_tensor_to_string(char **out, ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_tensor(t, "t");
  Borrowed b(t);
  std::ostringstream os;
  os << b.get();
  std::string s = os.str();
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  *out = p;
  CTORCH_CATCH
}

// ---- lists -------------------------------------------------------------------

CTORCH_API ctorch_status ctorch_tensor_list_size(size_t *out, ctorch_tensor_list list) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ctorch::require_ptr(list, "list");
  *out = list->items.size();
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_tensor_list_get(ctorch_tensor *out, ctorch_tensor_list list, size_t i) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ctorch::require_ptr(list, "list");
  if (i >= list->items.size())
    ctorch::fail(CTORCH_INDEX, "index " + std::to_string(i) + " out of range for list of size " + std::to_string(list->items.size()));
  *out = ctorch::give(list->items[i]);
  CTORCH_CATCH
}

CTORCH_API void ctorch_tensor_list_free(ctorch_tensor_list list) {
  if (ctorch::release_handle(list, __func__)) delete list;
}

// ---- generators --------------------------------------------------------------

CTORCH_API ctorch_status ctorch_generator_new(ctorch_generator *out, ctorch_device device, uint64_t seed) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  auto dev = ctorch::to_device(device, "device");
  if (dev.is_cuda()) dev = ctorch::cuda_device(device, "device", "a CUDA generator");  // NOT_IMPLEMENTED without CUDA
  *out = new ctorch_generator_s{ctorch::new_generator(dev, seed)};
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_generator_set_seed(ctorch_generator g, uint64_t seed) {
  CTORCH_TRY
  ctorch::require_ptr(g, "g");
  std::lock_guard<std::mutex> lock(g->gen.mutex());
  g->gen.set_current_seed(seed);
  CTORCH_CATCH
}

CTORCH_API void ctorch_generator_free(ctorch_generator g) {
  if (ctorch::release_handle(g, __func__)) delete g;
}

}  // extern "C"
