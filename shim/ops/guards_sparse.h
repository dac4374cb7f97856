// Guards of the operators that build sparse tensors from caller-given
// indices, and of the index converters (guards_sparse.cpp). Included at the
// end of guards.h; the generator reads this file too (bindings-gen/
// generate.py follows guards.h's `#include "guards_*.h"`), so the rules of
// guards.h hold here: one declaration per line start, tagged [crash] or
// [pytorch] with the libtorch that fails and how.
//
// Sparse tensors trust their indices: every later read (to_dense, coalesce,
// arithmetic, printing) indexes memory with them. libtorch's checked
// constructors validate them (the _validate_sparse_*_tensor_args ops), its
// `_unsafe` twins never do, and libtorch 2.x validates even the checked ones
// only while the process-wide flag at::globalContext().
// checkSparseTensorInvariants() is on (Python's
// torch.sparse.check_sparse_tensor_invariants; off by default). Seen
// (re-run in Python on this machine): 1.13 and 2.15,
// _sparse_coo_tensor_unsafe / _sparse_csr_tensor_unsafe with inconsistent
// indices, then to_dense: SIGSEGV; 2.15, sparse_csr_tensor (sized or not)
// with crow_indices [0, 1000, 1]: SIGSEGV in to_dense; 2.15,
// sparse_coo_tensor with an index past size: to_dense writes out of bounds.
// The guards below make every such constructor validate as the checked twin
// does with check_invariants=True: on 2.x by turning that flag on (the
// libtorch code then validates inside the call, sized or not), on 1.13 by
// calling the _validate op for the `_unsafe` ones; the two COO constructors
// no flag covers (_sparse_coo_tensor_unsafe: 2.15's dispatcher kernel skips
// the flag; _sparse_coo_tensor_with_dims_and_tensors) are validated
// explicitly on every version.
#pragma once

namespace ctorch {
namespace guard {

// [crash][pytorch] COO from indices: indices in [0, size) per sparse
// dimension, values' shape matching, and (2.x) is_coalesced=true only for
// coalesced indices: _validate_sparse_coo_tensor_args, what
// torch.sparse_coo_tensor(..., check_invariants=True) runs.
void _sparse_coo_tensor_unsafe(const at::Tensor &indices, const at::Tensor &values, Ints size,
                               c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                               c10::optional<at::Device> device, c10::optional<bool> pin_memory);
void _sparse_coo_tensor_unsafe(const at::Tensor &indices, const at::Tensor &values, Ints size,
                               c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                               c10::optional<at::Device> device, c10::optional<bool> pin_memory,
                               c10::optional<bool> is_coalesced);
void sparse_coo_tensor_indices(const at::Tensor &indices, const at::Tensor &values,
                               c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                               c10::optional<at::Device> device, c10::optional<bool> pin_memory);
void sparse_coo_tensor_indices(const at::Tensor &indices, const at::Tensor &values,
                               c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                               c10::optional<at::Device> device, c10::optional<bool> pin_memory,
                               c10::optional<bool> is_coalesced);
void sparse_coo_tensor_indices_size(const at::Tensor &indices, const at::Tensor &values, Ints size,
                                    c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                                    c10::optional<at::Device> device, c10::optional<bool> pin_memory);
void sparse_coo_tensor_indices_size(const at::Tensor &indices, const at::Tensor &values, Ints size,
                                    c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                                    c10::optional<at::Device> device, c10::optional<bool> pin_memory,
                                    c10::optional<bool> is_coalesced);
// [crash] libtorch 1.13 and 2.x: takes indices and values as they are on
// every version (no flag covers it): validated like the above, and
// sparse_dim/dense_dim must be the indices' rows and values' dimensions
// past the first.
void _sparse_coo_tensor_with_dims_and_tensors(int64_t sparse_dim, int64_t dense_dim, Ints size,
                                              const at::Tensor &indices, const at::Tensor &values,
                                              c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                                              c10::optional<at::Device> device, c10::optional<bool> pin_memory);
void _sparse_coo_tensor_with_dims_and_tensors(int64_t sparse_dim, int64_t dense_dim, Ints size,
                                              const at::Tensor &indices, const at::Tensor &values,
                                              c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                                              c10::optional<at::Device> device, c10::optional<bool> pin_memory,
                                              c10::optional<bool> is_coalesced);

// [crash][pytorch] compressed (CSR, CSC, BSR, BSC) from indices: compressed
// indices non-decreasing from 0 to nnz, plain indices in range and sorted
// per row: _validate_sparse_{compressed,csr,csc,bsr,bsc}_tensor_args.
void _sparse_compressed_tensor_unsafe(const at::Tensor &compressed_indices, const at::Tensor &plain_indices,
                                      const at::Tensor &values, Ints size, c10::optional<at::ScalarType> dtype,
                                      c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                                      c10::optional<bool> pin_memory);
void _sparse_csr_tensor_unsafe(const at::Tensor &crow_indices, const at::Tensor &col_indices,
                               const at::Tensor &values, Ints size, c10::optional<at::ScalarType> dtype,
                               c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                               c10::optional<bool> pin_memory);
void _sparse_csc_tensor_unsafe(const at::Tensor &ccol_indices, const at::Tensor &row_indices,
                               const at::Tensor &values, Ints size, c10::optional<at::ScalarType> dtype,
                               c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                               c10::optional<bool> pin_memory);
void _sparse_bsr_tensor_unsafe(const at::Tensor &crow_indices, const at::Tensor &col_indices,
                               const at::Tensor &values, Ints size, c10::optional<at::ScalarType> dtype,
                               c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                               c10::optional<bool> pin_memory);
void _sparse_bsc_tensor_unsafe(const at::Tensor &ccol_indices, const at::Tensor &row_indices,
                               const at::Tensor &values, Ints size, c10::optional<at::ScalarType> dtype,
                               c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                               c10::optional<bool> pin_memory);
// The checked constructors: validated by libtorch 1.13 itself; on 2.x only
// with the flag, which these turn on.
void sparse_compressed_tensor_comp_plain_value_size(const at::Tensor &, const at::Tensor &, const at::Tensor &, Ints,
                                                    c10::optional<at::ScalarType>, c10::optional<at::Layout>,
                                                    c10::optional<at::Device>, c10::optional<bool>);
void sparse_csr_tensor_crow_col_value_size(const at::Tensor &, const at::Tensor &, const at::Tensor &, Ints,
                                           c10::optional<at::ScalarType>, c10::optional<at::Layout>,
                                           c10::optional<at::Device>, c10::optional<bool>);
void sparse_csc_tensor_ccol_row_value_size(const at::Tensor &, const at::Tensor &, const at::Tensor &, Ints,
                                           c10::optional<at::ScalarType>, c10::optional<at::Layout>,
                                           c10::optional<at::Device>, c10::optional<bool>);
void sparse_bsr_tensor_crow_col_value_size(const at::Tensor &, const at::Tensor &, const at::Tensor &, Ints,
                                           c10::optional<at::ScalarType>, c10::optional<at::Layout>,
                                           c10::optional<at::Device>, c10::optional<bool>);
void sparse_bsc_tensor_ccol_row_value_size(const at::Tensor &, const at::Tensor &, const at::Tensor &, Ints,
                                           c10::optional<at::ScalarType>, c10::optional<at::Layout>,
                                           c10::optional<at::Device>, c10::optional<bool>);
void sparse_compressed_tensor_comp_plain_value(const at::Tensor &, const at::Tensor &, const at::Tensor &,
                                               c10::optional<at::ScalarType>, c10::optional<at::Layout>,
                                               c10::optional<at::Device>, c10::optional<bool>);
void sparse_csr_tensor_crow_col_value(const at::Tensor &, const at::Tensor &, const at::Tensor &,
                                      c10::optional<at::ScalarType>, c10::optional<at::Layout>,
                                      c10::optional<at::Device>, c10::optional<bool>);
void sparse_csc_tensor_ccol_row_value(const at::Tensor &, const at::Tensor &, const at::Tensor &,
                                      c10::optional<at::ScalarType>, c10::optional<at::Layout>,
                                      c10::optional<at::Device>, c10::optional<bool>);
void sparse_bsr_tensor_crow_col_value(const at::Tensor &, const at::Tensor &, const at::Tensor &,
                                      c10::optional<at::ScalarType>, c10::optional<at::Layout>,
                                      c10::optional<at::Device>, c10::optional<bool>);
void sparse_bsc_tensor_ccol_row_value(const at::Tensor &, const at::Tensor &, const at::Tensor &,
                                      c10::optional<at::ScalarType>, c10::optional<at::Layout>,
                                      c10::optional<at::Device>, c10::optional<bool>);

// [crash] libtorch 1.13 and 2.15: _convert_indices_from_coo_to_csr writes
// out[v + 1] for the values v of self read as a flat array, into an output
// of size + 1: a value past size or below -1 writes out of bounds (SIGSEGV;
// the out= form corrupts the heap, "free(): invalid pointer"; Python's
// torch._convert_indices_from_coo_to_csr(torch.tensor([0, 1000000]), 3)
// aborts in realloc on 2.15). Refused: values outside [-1, size], and a
// non-contiguous self (read flat: other values than the given ones).
void _convert_indices_from_coo_to_csr(const at::Tensor &self, int64_t size, bool out_int32);
void _convert_indices_from_coo_to_csr_out(const at::Tensor &self, int64_t size, bool out_int32,
                                          const at::Tensor &out);

}  // namespace guard
}  // namespace ctorch
