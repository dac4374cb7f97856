// compat.h - every difference between the libtorch versions ctorch builds
// against, in one place.
//
// Supported: Debian 12's libtorch 1.13.1 (headers say 1.13.0) up to PyTorch
// 2.15 (PyPI wheels, the libtorch zip, the GPU image's 2.11). Each shim below
// is one named function or constant with the versions it covers and the date
// it was written; code elsewhere calls the shim and never tests a version.
// When support for the oldest version is dropped, delete its branch here.
//
// Included by the hand-written shim (through internal.h) and by the generated
// wrappers (through ctorch_gen_support.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/SymIntArrayRef.h>
#ifdef CTORCH_COMPAT_OPTIM_STATE
#include <sstream>
#include <string>
#endif

// The libtorch version we compile against. 1.13's <torch/version.h> defines
// the macros itself; 2.x moved them to <torch/headeronly/version.h> and left a
// forwarding header (2026-11-22).
#if __has_include(<torch/headeronly/version.h>)
#include <torch/headeronly/version.h>
#else
#include <torch/version.h>
#endif

#define CTORCH_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace ctorch {
namespace compat {

// IntArrayRef -> SymIntArrayRef, checking that no value falls in SymInt's
// reserved (heap-pointer) range: a C caller's huge negative int must be an
// error, not a pointer. 1.13 spells the checking conversion
// c10::fromIntArrayRef; PyTorch #86235 (2.0) renamed it fromIntArrayRefSlow.
// (2026-11-22)
inline c10::SymIntArrayRef sym_int_array(at::IntArrayRef a) {
#if CTORCH_TORCH_AT_LEAST(2, 0)
  return c10::fromIntArrayRefSlow(a);
#else
  return c10::fromIntArrayRef(a);
#endif
}

// c10d: in 1.13 ProcessGroupGloo *is* a c10d::ProcessGroup. From 2.0 it is a
// c10d::Backend, and a ProcessGroup(store, rank, size) holds backends per
// device type (the (store, rank, size, options) constructor went in 2.6).
// Only dist.cpp includes the c10d headers, so it asks for this block.
// (2026-11-22)
// torch::optim::Optimizer::state() is keyed by the parameter's TensorImpl:
// in 1.13 by its address printed to a string (c10::guts::to_string, i.e.
// ostream << pointer), from 2.0 by the pointer itself (ska::flat_hash_map
// <void*, ...>). Picked by the map's key type, so it needs no version test.
// Only optim_state.cpp asks for this block. (2026-11-22)
#ifdef CTORCH_COMPAT_OPTIM_STATE
inline std::string optim_state_key_as(const at::Tensor &p, std::string *) {
  std::ostringstream os;
  os << static_cast<const void *>(p.unsafeGetTensorImpl());
  return os.str();
}
inline void *optim_state_key_as(const at::Tensor &p, void **) { return p.unsafeGetTensorImpl(); }
template <class StateMap>
typename StateMap::key_type optim_state_key(const StateMap &, const at::Tensor &p) {
  return optim_state_key_as(p, static_cast<typename StateMap::key_type *>(nullptr));
}
#endif  // CTORCH_COMPAT_OPTIM_STATE

#ifdef CTORCH_COMPAT_C10D
constexpr bool kGlooIsBackend = CTORCH_TORCH_AT_LEAST(2, 0);

template <class Gloo>
c10::intrusive_ptr<c10d::ProcessGroup> gloo_process_group(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                                          int size, c10::intrusive_ptr<Gloo> gloo) {
#if CTORCH_TORCH_AT_LEAST(2, 0)
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, gloo);
  pg->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  return pg;
#else
  (void)store, (void)rank, (void)size;
  return gloo;
#endif
}

// Python's init_process_group numbers a new group's collectives from 0 on
// every rank: 1.13 does it with ProcessGroup::setSequenceNumberForGroup(); in
// 2.x the call moved to the Backend and became a deprecated no-op (2.15), the
// backend numbering its collectives itself. (2026-11-22)
inline void start_sequence_numbers(c10d::ProcessGroup &pg) {
#if CTORCH_TORCH_AT_LEAST(2, 0)
  (void)pg;
#else
  pg.setSequenceNumberForGroup();
#endif
}
#endif  // CTORCH_COMPAT_C10D

}  // namespace compat
}  // namespace ctorch
