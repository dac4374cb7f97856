// Conversions between ctorch's own enums/values and c10's. ctorch's numbering
// is ABI; c10's is not, so every crossing goes through these tables.
#include "internal.h"

#include <string>

namespace ctorch {
namespace {

struct DtypeRow {
  ctorch_dtype ours;
  c10::ScalarType theirs;
};
const DtypeRow kDtypes[] = {
    {CTORCH_BOOL, c10::ScalarType::Bool},           {CTORCH_UINT8, c10::ScalarType::Byte},
    {CTORCH_INT8, c10::ScalarType::Char},           {CTORCH_INT16, c10::ScalarType::Short},
    {CTORCH_INT32, c10::ScalarType::Int},           {CTORCH_INT64, c10::ScalarType::Long},
    {CTORCH_FLOAT16, c10::ScalarType::Half},        {CTORCH_BFLOAT16, c10::ScalarType::BFloat16},
    {CTORCH_FLOAT32, c10::ScalarType::Float},       {CTORCH_FLOAT64, c10::ScalarType::Double},
    {CTORCH_COMPLEX32, c10::ScalarType::ComplexHalf}, {CTORCH_COMPLEX64, c10::ScalarType::ComplexFloat},
    {CTORCH_COMPLEX128, c10::ScalarType::ComplexDouble}, {CTORCH_QINT8, c10::ScalarType::QInt8},
    {CTORCH_QUINT8, c10::ScalarType::QUInt8},       {CTORCH_QINT32, c10::ScalarType::QInt32},
    {CTORCH_QUINT4X2, c10::ScalarType::QUInt4x2},   {CTORCH_QUINT2X4, c10::ScalarType::QUInt2x4},
#define CTORCH_DTYPE_ROW(ours, theirs) {ours, c10::ScalarType::theirs},
    CTORCH_COMPAT_NEWER_DTYPES(CTORCH_DTYPE_ROW)
#undef CTORCH_DTYPE_ROW
};

struct DeviceRow {
  ctorch_device_type ours;
  c10::DeviceType theirs;
};
const DeviceRow kDevices[] = {
    {CTORCH_DEVICE_CPU, c10::DeviceType::CPU}, {CTORCH_DEVICE_CUDA, c10::DeviceType::CUDA},
    {CTORCH_DEVICE_META, c10::DeviceType::Meta}, {CTORCH_DEVICE_MPS, c10::DeviceType::MPS},
    {CTORCH_DEVICE_XPU, c10::DeviceType::XPU}, {CTORCH_DEVICE_HIP, c10::DeviceType::HIP},
};

struct LayoutRow {
  ctorch_layout ours;
  c10::Layout theirs;
};
const LayoutRow kLayouts[] = {
    {CTORCH_LAYOUT_STRIDED, c10::kStrided},       {CTORCH_LAYOUT_SPARSE_COO, c10::kSparse},
    {CTORCH_LAYOUT_SPARSE_CSR, c10::kSparseCsr},  {CTORCH_LAYOUT_SPARSE_CSC, c10::kSparseCsc},
    {CTORCH_LAYOUT_SPARSE_BSR, c10::kSparseBsr},  {CTORCH_LAYOUT_SPARSE_BSC, c10::kSparseBsc},
    {CTORCH_LAYOUT_MKLDNN, c10::kMkldnn},
};

[[noreturn]] void bad_enum(const char *arg, const char *type, long long v) {
  fail_arg(arg, std::string("invalid ") + type + " value " + std::to_string(v));
}

}  // namespace

c10::ScalarType to_scalar_type(int dtype, const char *arg) {
  for (const auto &r : kDtypes)
    if (r.ours == dtype) return r.theirs;
  for (const auto &n : compat::kNewerDtypes)
    if (n.ctorch_value == dtype)
      fail(CTORCH_NOT_IMPLEMENTED, std::string("argument '") + arg + "': dtype " + n.name + " needs libtorch >= " +
                                       n.since + " (this ctorch was built against " + TORCH_VERSION + ")");
  bad_enum(arg, "ctorch_dtype", dtype);
}

ctorch_dtype from_scalar_type(c10::ScalarType t) {
  for (const auto &r : kDtypes)
    if (r.theirs == t) return r.ours;
  fail(CTORCH_NOT_IMPLEMENTED, std::string("dtype ") + c10::toString(t) + " has no ctorch_dtype");
}

c10::Device to_device(const ctorch_device &d, const char *arg) {
  for (const auto &r : kDevices) {
    if (r.ours != d.type) continue;
    if (d.index < -1 || d.index > 127) fail_arg(arg, "device index " + std::to_string(d.index) + " out of range");
    return c10::Device(r.theirs, static_cast<c10::DeviceIndex>(d.index));
  }
  bad_enum(arg, "ctorch_device_type", d.type);
}

ctorch_device from_device(const c10::Device &d) {
  for (const auto &r : kDevices)
    if (r.theirs == d.type()) return ctorch_device{r.ours, d.index()};
  fail(CTORCH_NOT_IMPLEMENTED, "device " + d.str() + " has no ctorch_device_type");
}

c10::Layout to_layout(int layout, const char *arg) {
  for (const auto &r : kLayouts)
    if (r.ours == layout) return r.theirs;
  bad_enum(arg, "ctorch_layout", layout);
}

ctorch_layout from_layout(c10::Layout l) {
  for (const auto &r : kLayouts)
    if (r.theirs == l) return r.ours;
  fail(CTORCH_NOT_IMPLEMENTED, "layout has no ctorch_layout");
}

c10::MemoryFormat to_memory_format(int mf, const char *arg) {
  switch (mf) {
    case CTORCH_MEMORY_CONTIGUOUS: return c10::MemoryFormat::Contiguous;
    case CTORCH_MEMORY_PRESERVE: return c10::MemoryFormat::Preserve;
    case CTORCH_MEMORY_CHANNELS_LAST: return c10::MemoryFormat::ChannelsLast;
    case CTORCH_MEMORY_CHANNELS_LAST_3D: return c10::MemoryFormat::ChannelsLast3d;
  }
  bad_enum(arg, "ctorch_memory_format", mf);
}

void fail_scalar(const char *arg, const ctorch_scalar &s) {
  if (s.reserved != 0) fail_arg(arg, "ctorch_scalar.reserved must be 0, got " + std::to_string(s.reserved));
  bad_enum(arg, "ctorch_scalar_kind", s.kind);
}

ctorch_scalar from_scalar(const c10::Scalar &s) {
  ctorch_scalar r{CTORCH_SCALAR_FLOAT, 0, 0, 0.0, 0.0};
  if (s.isBoolean()) {
    r.kind = CTORCH_SCALAR_BOOL;
    r.i = s.toBool() ? 1 : 0;
  } else if (s.isIntegral(false)) {
    r.kind = CTORCH_SCALAR_INT;
    r.i = s.toLong();
  } else if (s.isComplex()) {
    auto c = s.toComplexDouble();
    r.kind = CTORCH_SCALAR_COMPLEX;
    r.f = c.real();
    r.imag = c.imag();
  } else {
    r.f = s.toDouble();
  }
  return r;
}

std::vector<at::Tensor> tensor_list(const ctorch_tensor *p, size_t n, const char *arg) {
  require_list(p, n, arg);
  std::vector<at::Tensor> v;
  v.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    c10::TensorImpl *q;  // one check per element: NULL, freed and foreign alike
    if (!tensor_get(p[i], q)) fail_tensor_element(p[i], arg, i);
    v.emplace_back(TensorImplPtr::reclaim_copy(q));
  }
  return v;
}

c10::List<c10::optional<at::Tensor>> opt_tensor_list(const ctorch_tensor *p, size_t n, const char *arg) {
  require_list(p, n, arg);
  c10::List<c10::optional<at::Tensor>> l;
  l.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    c10::TensorImpl *q;
    if (!p[i]) {
      l.push_back(c10::nullopt);
    } else {
      if (!tensor_get(p[i], q)) fail_tensor_element(p[i], arg, i);
      l.push_back(at::Tensor(TensorImplPtr::reclaim_copy(q)));
    }
  }
  return l;
}

}  // namespace ctorch
