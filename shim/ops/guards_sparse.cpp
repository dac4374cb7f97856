// Guards of the sparse constructors and index converters (why each exists:
// guards_sparse.h).
#include "guards_util.h"

#include "core/internal.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>

namespace ctorch {
namespace guard {

using namespace util;

namespace {

// libtorch 2.x: its sparse constructors validate their indices inside the
// call while this process-wide flag is on (see compat.h); turned on, never
// off, so that a call on another thread cannot lose its check. 1.13 has no
// such flag: the caller validates.
bool libtorch_validates() {
#if CTORCH_COMPAT_SPARSE_INVARIANTS_FLAG
  if (!at::globalContext().checkSparseTensorInvariants()) at::globalContext().setCheckSparseTensorInvariants(true);
  return true;
#else
  return false;
#endif
}

void validate_coo(const at::Tensor &indices, const at::Tensor &values, Ints size,
                  c10::optional<bool> is_coalesced) {
#if CTORCH_COMPAT_SPARSE_INVARIANTS_FLAG
  at::_validate_sparse_coo_tensor_args(indices, values, size.ref(), is_coalesced);
#else
  (void)is_coalesced;
  at::_validate_sparse_coo_tensor_args(indices, values, size.ref());
#endif
}

}  // namespace

void _sparse_coo_tensor_unsafe(const at::Tensor &indices, const at::Tensor &values, Ints size,
                               c10::optional<at::ScalarType>, c10::optional<at::Layout>, c10::optional<at::Device>,
                               c10::optional<bool>) {
  validate_coo(indices, values, size, c10::nullopt);
}
void _sparse_coo_tensor_unsafe(const at::Tensor &indices, const at::Tensor &values, Ints size,
                               c10::optional<at::ScalarType>, c10::optional<at::Layout>, c10::optional<at::Device>,
                               c10::optional<bool>, c10::optional<bool> is_coalesced) {
  // Validated by hand on 2.x too: the dispatcher's kernel of this op (the
  // SymInt one) skips the flag check only the C++ wrapper makes (seen on
  // 2.15 with the flag on: index 7 for size 2 accepted).
  validate_coo(indices, values, size, is_coalesced);
}
void sparse_coo_tensor_indices(const at::Tensor &, const at::Tensor &, c10::optional<at::ScalarType>,
                               c10::optional<at::Layout>, c10::optional<at::Device>, c10::optional<bool>) {
  libtorch_validates();  // 1.13 validates the checked constructors itself
}
void sparse_coo_tensor_indices(const at::Tensor &, const at::Tensor &, c10::optional<at::ScalarType>,
                               c10::optional<at::Layout>, c10::optional<at::Device>, c10::optional<bool>,
                               c10::optional<bool>) {
  libtorch_validates();
}
void sparse_coo_tensor_indices_size(const at::Tensor &, const at::Tensor &, Ints, c10::optional<at::ScalarType>,
                                    c10::optional<at::Layout>, c10::optional<at::Device>, c10::optional<bool>) {
  libtorch_validates();
}
void sparse_coo_tensor_indices_size(const at::Tensor &, const at::Tensor &, Ints, c10::optional<at::ScalarType>,
                                    c10::optional<at::Layout>, c10::optional<at::Device>, c10::optional<bool>,
                                    c10::optional<bool>) {
  libtorch_validates();
}

namespace {
void with_dims(int64_t sparse_dim, int64_t dense_dim, Ints size, const at::Tensor &indices, const at::Tensor &values,
               c10::optional<bool> is_coalesced) {
  if (!indices.defined() || !values.defined()) return;  // libtorch refuses
  if (indices.dim() != 2 || indices.size(0) != sparse_dim)
    fail_arg("indices", "must be 2-d with sparse_dim (" + str(sparse_dim) + ") rows");
  if (values.dim() < 1 || values.dim() - 1 != dense_dim)
    fail_arg("values", "must have dense_dim + 1 (" + str(dense_dim + 1) + ") dimensions");
  validate_coo(indices, values, size, is_coalesced);
}
}  // namespace

void _sparse_coo_tensor_with_dims_and_tensors(int64_t sparse_dim, int64_t dense_dim, Ints size,
                                              const at::Tensor &indices, const at::Tensor &values,
                                              c10::optional<at::ScalarType>, c10::optional<at::Layout>,
                                              c10::optional<at::Device>, c10::optional<bool>) {
  with_dims(sparse_dim, dense_dim, size, indices, values, c10::nullopt);
}
void _sparse_coo_tensor_with_dims_and_tensors(int64_t sparse_dim, int64_t dense_dim, Ints size,
                                              const at::Tensor &indices, const at::Tensor &values,
                                              c10::optional<at::ScalarType>, c10::optional<at::Layout>,
                                              c10::optional<at::Device>, c10::optional<bool>,
                                              c10::optional<bool> is_coalesced) {
  with_dims(sparse_dim, dense_dim, size, indices, values, is_coalesced);
}

void _sparse_compressed_tensor_unsafe(const at::Tensor &ci, const at::Tensor &pi, const at::Tensor &values, Ints size,
                                      c10::optional<at::ScalarType>, c10::optional<at::Layout> layout,
                                      c10::optional<at::Device>, c10::optional<bool>) {
  // Without a layout libtorch refuses the call ("expected sparse compressed
  // tensor layout but got none"); a strided one is refused by the validator.
  if (!libtorch_validates() && layout) at::_validate_sparse_compressed_tensor_args(ci, pi, values, size.ref(), *layout);
}
#define CTORCH_GUARD_COMPRESSED_UNSAFE(KIND)                                                                        \
  void _sparse_##KIND##_tensor_unsafe(const at::Tensor &ci, const at::Tensor &pi, const at::Tensor &values,       \
                                      Ints size, c10::optional<at::ScalarType>, c10::optional<at::Layout>,        \
                                      c10::optional<at::Device>, c10::optional<bool>) {                           \
    if (!libtorch_validates()) at::_validate_sparse_##KIND##_tensor_args(ci, pi, values, size.ref());            \
  }
CTORCH_GUARD_COMPRESSED_UNSAFE(csr)
CTORCH_GUARD_COMPRESSED_UNSAFE(csc)
CTORCH_GUARD_COMPRESSED_UNSAFE(bsr)
CTORCH_GUARD_COMPRESSED_UNSAFE(bsc)
#undef CTORCH_GUARD_COMPRESSED_UNSAFE

#define CTORCH_GUARD_COMPRESSED_CHECKED(NAME)                                                                       \
  void NAME##_size(const at::Tensor &, const at::Tensor &, const at::Tensor &, Ints, c10::optional<at::ScalarType>, \
                   c10::optional<at::Layout>, c10::optional<at::Device>, c10::optional<bool>) {                    \
    libtorch_validates();                                                                                           \
  }                                                                                                                 \
  void NAME(const at::Tensor &, const at::Tensor &, const at::Tensor &, c10::optional<at::ScalarType>,              \
            c10::optional<at::Layout>, c10::optional<at::Device>, c10::optional<bool>) {                           \
    libtorch_validates();                                                                                           \
  }
CTORCH_GUARD_COMPRESSED_CHECKED(sparse_compressed_tensor_comp_plain_value)
CTORCH_GUARD_COMPRESSED_CHECKED(sparse_csr_tensor_crow_col_value)
CTORCH_GUARD_COMPRESSED_CHECKED(sparse_csc_tensor_ccol_row_value)
CTORCH_GUARD_COMPRESSED_CHECKED(sparse_bsr_tensor_crow_col_value)
CTORCH_GUARD_COMPRESSED_CHECKED(sparse_bsc_tensor_ccol_row_value)
#undef CTORCH_GUARD_COMPRESSED_CHECKED

void _convert_indices_from_coo_to_csr(const at::Tensor &self, int64_t size, bool) {
  if (!readable(self) || !at::isIntegralType(self.scalar_type(), /*includeBool=*/false)) return;  // libtorch's own
  if (!self.is_contiguous())
    fail_arg("self", "must be contiguous: the kernel reads it as a flat array, so other values than these would "
                     "index the output");
  double lo = 0, hi = 0;
  min_max(self, &lo, &hi);
  if (lo < -1 || hi > static_cast<double>(size))
    fail_arg("self", "values must be in [-1, size] (size " + str(size) + "), got [" +
                         str(static_cast<int64_t>(lo)) + ", " + str(static_cast<int64_t>(hi)) +
                         "]: the kernel writes the output at each value + 1");
}
void _convert_indices_from_coo_to_csr_out(const at::Tensor &self, int64_t size, bool out_int32, const at::Tensor &) {
  guard::_convert_indices_from_coo_to_csr(self, size, out_int32);  // qualified: ADL finds at::'s too
}

}  // namespace guard
}  // namespace ctorch
