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
// Not `#pragma once`: the base below is guarded once per translation unit,
// and each opt-in section (a file defines CTORCH_COMPAT_<NAME> before it
// includes this header, for the version-dependent code that needs headers
// only that file has) has its own guard. A unity build puts several files in
// one translation unit, so this header is re-read with more sections asked
// for; each is compiled the first time it is asked for.
#ifndef CTORCH_COMPAT_H_BASE
#define CTORCH_COMPAT_H_BASE

#include <ATen/core/Tensor.h>
#include <c10/core/SymIntArrayRef.h>
#include <sstream>

#include <cstdlib>
#include <string>

// The libtorch version we compile against. 1.13's <torch/version.h> defines
// the macros itself; 2.x moved them to <torch/headeronly/version.h> and left a
// forwarding header.
#if __has_include(<torch/headeronly/version.h>)
#include <torch/headeronly/version.h>
#else
#include <torch/version.h>
#endif

#define CTORCH_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// torch.optim.lr_scheduler's state_dict() keys (measured on
// 1.13.1 and 2.15.0): 1.13 stores `verbose` after last_epoch and, in
// ReduceLROnPlateau, its attributes in another order without `_last_lr`
// and `default_min_lr`; 2.x stores `_is_initial` after `_step_count`,
// CyclicLR's `use_beta1` and OneCycleLR's `_anneal_func_type` (1.13: a
// bound method, which is code). Used by optim/schedules_state.cpp.
#define CTORCH_COMPAT_SCHED_STATE_1_13 (!CTORCH_TORCH_AT_LEAST(2, 0))

// c10::Error's C++ backtrace (measured on this
// project's machine): libtorch 1.13 symbolises one in the constructor of
// every c10::Error (backtrace() and dladdr over libtorch_cpu's symbols:
// 13.7 ms per failing call, whether anyone reads it or not); 2.x captures
// the frames and symbolises them only when what() is asked (0.07 ms per
// failing call without what(), 23.5 ms with it). ctorch asks for the text
// only in ctorch_last_error_backtrace(), and on 1.13 installs a stack-trace
// fetcher that captures the frames and leaves their symbols to that call
// (errors/errors.cpp).
#define CTORCH_COMPAT_EAGER_ERROR_BACKTRACE (!CTORCH_TORCH_AT_LEAST(2, 0))

// fractional_max_pool{2,3}d's random_samples: 1.13 reads it as a flat
// [N, C, k] array whatever its strides (a non-contiguous one pools other
// windows, a strided view is read past its memory); 2.x pools with its
// contiguous copy. Measured on 1.13.1 and 2.15.0; 2.0 is where
// pytorch#89992 rewrote the samples' handling (its shape check, which the
// guard mirrors). Used by ops/guards_pool.cpp (contiguity refused only on 1.13).
#define CTORCH_COMPAT_FRACTIONAL_SAMPLES_FLAT (!CTORCH_TORCH_AT_LEAST(2, 0))

// Sparse constructors from indices: libtorch 2.x
// validates the indices of every one of them (sparse_coo_tensor,
// sparse_csr_tensor, ..., and their _unsafe twins) only while the
// process-wide at::globalContext().checkSparseTensorInvariants() is on (off
// by default: 2.15's sparse_csr_tensor with bad crow_indices, then to_dense,
// is a SIGSEGV); 1.13 has no such flag, validates its checked constructors
// always and its _unsafe ones never. shim/ops/guards_sparse.cpp turns the
// flag on where it exists and validates by hand where not.
#define CTORCH_COMPAT_SPARSE_INVARIANTS_FLAG CTORCH_TORCH_AT_LEAST(2, 0)

// batch norm's out= forms with a non-contiguous input (measured on
// 2.15.0): native_batch_norm.out,
// _native_batch_norm_legit.out / .no_stats_out and _batch_norm_with_update.out
// return garbage statistics in training mode and a permuted output for a
// channels-last input; 1.13 has no CPU kernel for native_batch_norm.out and
// lacks the others. Which 2.x first had it is not known: on for every 2.x
// (shim/ops/guards_norm.cpp refuses such inputs; contiguous ones pass).
#define CTORCH_COMPAT_BATCH_NORM_OUT_NONCONTIGUOUS CTORCH_TORCH_AT_LEAST(2, 0)

// Python's str(tensor) (torch/_tensor_str.py; core/tensor_format.cpp follows
// it), read in 1.13.1 and 2.15.0: 1.13's _Formatter measures the
// column width in the automatically chosen form (scientific or not) and only
// then applies set_printoptions(sci_mode=...), so a forced mode pads to the
// other form's width; 2.15 applies it first. 1.13 fails on edgeitems=0 for a
// summarised matrix (and prints every item of a vector); 2.15 prints "[...]"
// with a size= suffix. Where between the two each changed was not pinned:
// taken as 2.0.
#define CTORCH_COMPAT_PRINT_SCI_WIDTH_AUTO (!CTORCH_TORCH_AT_LEAST(2, 0))
#define CTORCH_COMPAT_PRINT_EDGEITEMS_ZERO CTORCH_TORCH_AT_LEAST(2, 0)


// Element types newer than 1.13: X(ctorch enumerator, c10::ScalarType
// member, "libtorch version that added it"). Only those the libtorch being
// built has expand into the conversion tables; the rest are named by
// kNewerDtypes so a call gets NOT_IMPLEMENTED with the version, not
// "invalid value". Float8 e5m2/e4m3fn: PyTorch 2.1; the fnuz pair: 2.2;
// UInt16/32/64: 2.3; Float8_e8m0fnu: 2.7.
#if CTORCH_TORCH_AT_LEAST(2, 1)
#define CTORCH_COMPAT_DTYPES_2_1(X) X(CTORCH_FLOAT8_E5M2, Float8_e5m2) X(CTORCH_FLOAT8_E4M3FN, Float8_e4m3fn)
#else
#define CTORCH_COMPAT_DTYPES_2_1(X)
#endif
#if CTORCH_TORCH_AT_LEAST(2, 2)
#define CTORCH_COMPAT_DTYPES_2_2(X) X(CTORCH_FLOAT8_E5M2FNUZ, Float8_e5m2fnuz) X(CTORCH_FLOAT8_E4M3FNUZ, Float8_e4m3fnuz)
#else
#define CTORCH_COMPAT_DTYPES_2_2(X)
#endif
#if CTORCH_TORCH_AT_LEAST(2, 3)
#define CTORCH_COMPAT_DTYPES_2_3(X) X(CTORCH_UINT16, UInt16) X(CTORCH_UINT32, UInt32) X(CTORCH_UINT64, UInt64)
#else
#define CTORCH_COMPAT_DTYPES_2_3(X)
#endif
#if CTORCH_TORCH_AT_LEAST(2, 7)
#define CTORCH_COMPAT_DTYPES_2_7(X) X(CTORCH_FLOAT8_E8M0FNU, Float8_e8m0fnu)
#else
#define CTORCH_COMPAT_DTYPES_2_7(X)
#endif
#define CTORCH_COMPAT_NEWER_DTYPES(X) \
  CTORCH_COMPAT_DTYPES_2_1(X) CTORCH_COMPAT_DTYPES_2_2(X) CTORCH_COMPAT_DTYPES_2_3(X) CTORCH_COMPAT_DTYPES_2_7(X)

namespace ctorch {
namespace compat {

// Every element type newer than 1.13 with the version that added it (see
// CTORCH_COMPAT_NEWER_DTYPES); ints so this header needs no ctorch.h.
struct NewerDtype {
  int ctorch_value;
  const char *name;
  const char *since;
};
constexpr NewerDtype kNewerDtypes[] = {
    {19, "CTORCH_UINT16", "2.3"},          {20, "CTORCH_UINT32", "2.3"},
    {21, "CTORCH_UINT64", "2.3"},          {22, "CTORCH_FLOAT8_E5M2", "2.1"},
    {23, "CTORCH_FLOAT8_E4M3FN", "2.1"},   {24, "CTORCH_FLOAT8_E5M2FNUZ", "2.2"},
    {25, "CTORCH_FLOAT8_E4M3FNUZ", "2.2"}, {26, "CTORCH_FLOAT8_E8M0FNU", "2.7"},
};

// IntArrayRef -> SymIntArrayRef, checking that no value falls in SymInt's
// reserved (heap-pointer) range: a C caller's huge negative int must be an
// error, not a pointer. 1.13 spells the checking conversion
// c10::fromIntArrayRef; PyTorch #86235 (2.0) renamed it fromIntArrayRefSlow.
inline c10::SymIntArrayRef sym_int_array(at::IntArrayRef a) {
#if CTORCH_TORCH_AT_LEAST(2, 0)
  return c10::fromIntArrayRefSlow(a);
#else
  return c10::fromIntArrayRef(a);
#endif
}

// c10d: in 1.13 ProcessGroupGloo *is* a c10d::ProcessGroup. From 2.0 it is a
// c10d::Backend that a ProcessGroup holds per device type (the entry
// "c10d group holder" below: how that group is made changed in 2.6).
// Only the dist*.cpp files include the c10d headers (ProcessGroup, Store,
// PrefixStore: see dist_internal.h), so they ask for this block.
// torch::optim::Optimizer::state() is keyed by the parameter's TensorImpl:
// in 1.13 by its address printed to a string (c10::guts::to_string, i.e.
// ostream << pointer), from 2.0 by the pointer itself (ska::flat_hash_map
// <void*, ...>). Picked by the map's key type, so it needs no version test.
// Only optim_state.cpp asks for this block.


// AOTInductor model packages (.pt2, torch._inductor.aoti_compile_and_package):
// libtorch's loader torch::inductor::AOTIModelPackageLoader and its header
// <torch/csrc/inductor/aoti_package/model_package_loader.h> exist from 2.6;
// 1.13 has no AOTInductor. aoti.cpp compiles its loader half only where this
// is 1; elsewhere every ctorch_aoti_* call returns CTORCH_NOT_IMPLEMENTED, so
// the exported symbols are the same on every libtorch.
#define CTORCH_COMPAT_HAS_AOTI_PACKAGE_LOADER CTORCH_TORCH_AT_LEAST(2, 6)
// Native memory accounting (memory.cpp asks for this block). A wrapping
// CPU allocator: c10::Allocator::allocate is const up to 2.2 and non-const
// from 2.3, which also made copy_data a pure virtual the wrapper forwards.
// CUDA's live bytes (entry "memory"): c10's device-generic
// c10::getDeviceAllocator and its DeviceAllocator::getDeviceStats exist from
// 2.9 (headers of 2.8.0 (no such function), 2.9.1, 2.10.0, 2.11.0 and
// 2.15.0 read), and need no CUDA header. Before 2.9 the caller's fallback
// counts them: memory.cpp passes the CUDA backend's statistics, which fail
// with CTORCH_NOT_IMPLEMENTED where this build has no CUDA backend.

}  // namespace compat
}  // namespace ctorch
#endif  // CTORCH_COMPAT_H_BASE

#if defined(CTORCH_COMPAT_OPTIM_STATE) && !defined(CTORCH_COMPAT_OPTIM_STATE_DONE)
#define CTORCH_COMPAT_OPTIM_STATE_DONE
namespace ctorch {
namespace compat {
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
}  // namespace compat
}  // namespace ctorch
#endif  // CTORCH_COMPAT_OPTIM_STATE

// c10d group holder (the Gloo and NCCL blocks below use it): the
// ProcessGroup that holds a 2.x backend for one device type, made as
// Python's _new_process_group_helper of the same release makes it. 2.6 on:
// ProcessGroup(store, rank, size), then setBackend and
// setDefaultBackend(type). 2.0 to 2.5: ProcessGroup(store, rank, size,
// Options(name)), whose backend name fixes the default backend type, and no
// setDefaultBackend. (Headers of 2.4.1, 2.5.1, 2.6.0, 2.7.1, 2.8.0, 2.9.1,
// 2.10.0, 2.11.0 and 2.15.0 read; 2.4.1, 2.8.0, 2.11.0 and 2.15.0 built.)
#if (defined(CTORCH_COMPAT_C10D) || defined(CTORCH_COMPAT_NCCL)) && !defined(CTORCH_COMPAT_PG_HOLDER_DONE) && \
    CTORCH_TORCH_AT_LEAST(2, 0)
#define CTORCH_COMPAT_PG_HOLDER_DONE
namespace ctorch {
namespace compat {
inline c10::intrusive_ptr<c10d::ProcessGroup> process_group_holding(
    const c10::intrusive_ptr<c10d::Store> &store, int rank, int size, c10::DeviceType device,
    c10d::ProcessGroup::BackendType type, const char *name, const c10::intrusive_ptr<c10d::Backend> &backend) {
#if CTORCH_TORCH_AT_LEAST(2, 6)
  (void)name;
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  pg->setBackend(device, type, backend);
  pg->setDefaultBackend(type);
#else
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size,
                                                    c10::make_intrusive<c10d::ProcessGroup::Options>(name));
  pg->setBackend(device, type, backend);
#endif
  return pg;
}
}  // namespace compat
}  // namespace ctorch
#endif  // c10d group holder

#if defined(CTORCH_COMPAT_C10D) && !defined(CTORCH_COMPAT_C10D_DONE)
#define CTORCH_COMPAT_C10D_DONE
namespace ctorch {
namespace compat {
constexpr bool kGlooIsBackend = CTORCH_TORCH_AT_LEAST(2, 0);

template <class Gloo>
c10::intrusive_ptr<c10d::ProcessGroup> gloo_process_group(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                                          int size, c10::intrusive_ptr<Gloo> gloo) {
#if CTORCH_TORCH_AT_LEAST(2, 0)
  return process_group_holding(store, rank, size, c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO,
                               "gloo", gloo);
#else
  (void)store, (void)rank, (void)size;
  return gloo;
#endif
}

// How torch.distributed's init_process_group of this version lays a Gloo
// group out in the store it is given: 1.13 gives the backend
// PrefixStore("<n>") (keys "<n>/..."); 2.x gives it PrefixStore("cpu/") over
// PrefixStore("<n>/") (keys "<n>//cpu//...", one PrefixStore per device
// type). n = the groups the process made before. ctorch ranks must do the
// same to meet Python ranks' Gloo keys. (1.13.1 and 2.15.0 checked on a
// FileStore; 2.0 to 2.10 not checked)
constexpr bool kGlooKeysPerDevice = CTORCH_TORCH_AT_LEAST(2, 0);
inline c10::intrusive_ptr<c10d::Store> gloo_group_store(const c10::intrusive_ptr<c10d::Store> &store, int n) {
#if CTORCH_TORCH_AT_LEAST(2, 0)
  auto group = c10::make_intrusive<c10d::PrefixStore>(std::to_string(n) + "/", store);
  return c10::make_intrusive<c10d::PrefixStore>("cpu/", group);
#else
  return c10::make_intrusive<c10d::PrefixStore>(std::to_string(n), store);
#endif
}

// The NCCL twin of gloo_group_store, one level up: the store of the group
// itself, to which nccl_process_group (CTORCH_COMPAT_NCCL block) adds 2.x's
// device level "cuda/", giving Python's keys "<n>//cuda//..." (1.13:
// "<n>/..."). Passing gloo_group_store's there would give "<n>//cpu//cuda//".
// (Read from 2.15's distributed_c10d.py; untested: no GPU)
inline c10::intrusive_ptr<c10d::Store> nccl_group_store(const c10::intrusive_ptr<c10d::Store> &store, int n) {
#if CTORCH_TORCH_AT_LEAST(2, 0)
  return c10::make_intrusive<c10d::PrefixStore>(std::to_string(n) + "/", store);
#else
  return c10::make_intrusive<c10d::PrefixStore>(std::to_string(n), store);
#endif
}

// The store-based barrier init_process_group runs after making a group.
// 1.13: always; every rank adds 1 to "store_based_barrier_key:<n+1>" and
// polls the count. 2.x: only when TORCH_DIST_INIT_BARRIER=1 (off by
// default since PyTorch 2.1); the key is "store_based_barrier_key:<n>" and
// the rank that completes the count sets "<key>:last_worker", which the
// others wait for. A C rank that waits where Python does not hangs the
// group. (1.13.1 and 2.15.0 sources; 2.0 to 2.10 not checked)
enum class InitBarrier { None, Count, LastWorker };
inline InitBarrier init_barrier() {
#if CTORCH_TORCH_AT_LEAST(2, 0)
  const char *v = std::getenv("TORCH_DIST_INIT_BARRIER");  // Python reads int(os.getenv(..., "0"))
  return v && std::strtol(v, nullptr, 10) == 1 ? InitBarrier::LastWorker : InitBarrier::None;
#else
  return InitBarrier::Count;
#endif
}

// The group's sequence numbers. 1.13: init_process_group has rank 0 draw
// the first number and share it through the store (SEQ_NUM_STORE_KEY),
// which the others wait for. 2.15: numbers start at 0 on every rank and
// setSequenceNumberForGroup is a deprecated no-op that warns; Python no
// longer calls it.
inline void start_sequence_numbers(c10d::ProcessGroup &pg) {
#if CTORCH_TORCH_AT_LEAST(2, 0)
  (void)pg;
#else
  pg.setSequenceNumberForGroup();
#endif
}

// TCPStore's wire protocol: from 2.1 (PyTorch #107607, August 2023) a
// client opens every connection with a VALIDATE query and a PING, which a
// 1.x server does not know (it drops the connection) and without which a
// 2.x server ignores the client (a 1.13 client then blocks for ever).
// dist_wire.cpp tells the two servers apart. (1.13.1 and 2.15.0 measured.)
constexpr bool kStoreWireValidates = CTORCH_TORCH_AT_LEAST(2, 1);

// The prefix before the keys of a group on the TCPStore torchrun's agent
// hosts (TORCHELASTIC_USE_AGENT_STORE=True), given TORCHELASTIC_RESTART_COUNT.
// The agent keeps one store for the whole job, so the keys of an attempt
// outlive its workers. 1.13's env:// puts each attempt under
// "/worker/attempt_<n>". 2.x's puts none, reasoning that the agent makes a
// new store for every attempt, but 2.15's agent keeps its store (static and
// c10d rendezvous alike): a restarted group of Python ranks reads the Gloo
// addresses of the dead attempt and fails ("Gloo connectFullMesh failed ...
// Connection refused", measured). ctorch ranks of 2.x use Python's keys in
// the first attempt, so a group can mix C and Python ranks, and 1.13's
// prefix from the first restart on. (1.13.1 and 2.15.0 sources; the 2.15
// failure measured with Python ranks under torchrun 2.15)
inline std::string agent_store_prefix(int restart_count) {
  const std::string attempt = "/worker/attempt_" + std::to_string(restart_count);
#if CTORCH_TORCH_AT_LEAST(2, 0)
  return restart_count > 0 ? attempt : "";
#else
  return attempt;
#endif
}
}  // namespace compat
}  // namespace ctorch
#endif  // CTORCH_COMPAT_C10D

#if defined(CTORCH_COMPAT_MEMORY) && !defined(CTORCH_COMPAT_MEMORY_DONE)
#define CTORCH_COMPAT_MEMORY_DONE
#if CTORCH_TORCH_AT_LEAST(2, 9)
#include <c10/core/CachingDeviceAllocator.h>
#endif
namespace ctorch {
namespace compat {
#if CTORCH_TORCH_AT_LEAST(2, 3)
#define CTORCH_COMPAT_ALLOCATE_CONST
#define CTORCH_COMPAT_ALLOCATOR_COPY_DATA(base) \
  void copy_data(void *dest, const void *src, std::size_t count) const override { base->copy_data(dest, src, count); }
#else
#define CTORCH_COMPAT_ALLOCATE_CONST const
#define CTORCH_COMPAT_ALLOCATOR_COPY_DATA(base)
#endif
// fallback(device) -> int64_t: the live bytes of one CUDA device, for
// libtorch < 2.9.
template <class Fallback>
int64_t cuda_allocated_bytes(int n_devices, Fallback fallback) {
  int64_t total = 0;
#if CTORCH_TORCH_AT_LEAST(2, 9)
  (void)fallback;
  auto *a = c10::getDeviceAllocator(c10::DeviceType::CUDA);
  for (int i = 0; i < n_devices; ++i) total += a->getDeviceStats(static_cast<c10::DeviceIndex>(i)).allocated_bytes[0].current;
#else
  for (int i = 0; i < n_devices; ++i) total += fallback(i);
#endif
  return total;
}
}  // namespace compat
}  // namespace ctorch
#endif  // CTORCH_COMPAT_MEMORY

// ---- GPU and mixed precision -------------------------------------------------
// Each block is compiled only by the file that defines its macro before
// including internal.h: their headers are heavy, and this header is part of
// every generated shard.

#if defined(CTORCH_COMPAT_EVENTS) && !defined(CTORCH_COMPAT_EVENTS_DONE)  // stream.cpp
#define CTORCH_COMPAT_EVENTS_DONE
#include <c10/core/Event.h>
#include <thread>
namespace ctorch {
namespace compat {

// c10::Event::synchronize and ::elapsedTime (device-generic, through the
// registered guard) are in 2.11 and 2.15 (checked) but not in 1.13 (checked);
// they came with torch.Event, 2.4 assumed. 1.13 has only query(), so
// synchronising polls it (yielding), and timing is refused: 1.13's generic
// events cannot be timed.
inline void event_synchronize(const c10::Event &e) {
#if CTORCH_TORCH_AT_LEAST(2, 4)
  e.synchronize();
#else
  while (!e.query()) std::this_thread::yield();
#endif
}

inline double event_elapsed_ms(const c10::Event &start, const c10::Event &end) {
#if CTORCH_TORCH_AT_LEAST(2, 4)
  return start.elapsedTime(end);
#else
  (void)start, (void)end;
  TORCH_CHECK_NOT_IMPLEMENTED(false, "elapsed time needs libtorch >= 2.4: libtorch ", TORCH_VERSION_MAJOR, ".",
                              TORCH_VERSION_MINOR, "'s device-generic events cannot be timed");
#endif
}

}  // namespace compat
}  // namespace ctorch
#endif  // CTORCH_COMPAT_EVENTS

#if defined(CTORCH_COMPAT_CUDA_INIT) && !defined(CTORCH_COMPAT_CUDA_INIT_DONE)  // device.cpp
#define CTORCH_COMPAT_CUDA_INIT_DONE
#include <ATen/Context.h>
#include <type_traits>
namespace ctorch {
namespace compat {

// libtorch's lazy CUDA initialisation (what torch.cuda's _lazy_init does:
// the caching allocator's per-device tables, the peer-access cache). The
// allocator's statistics, peak reset and emptyCache read those tables and
// fail with "Invalid device argument" before it ran. 1.13 up to 2.5 spell it
// Context::lazyInitCUDA(); 2.6 added lazyInitDevice(kCUDA) and made
// lazyInitCUDA a deprecated (warning) alias (2.15 checked). Picked by
// whether Context has lazyInitDevice, so it needs no version test.
template <class C>
auto lazy_init_cuda_impl(C &ctx, int) -> decltype(ctx.lazyInitDevice(c10::DeviceType::CUDA), void()) {
  ctx.lazyInitDevice(c10::DeviceType::CUDA);
}
template <class C>
void lazy_init_cuda_impl(C &ctx, long) {
  ctx.lazyInitCUDA();
}
inline void lazy_init_cuda() { lazy_init_cuda_impl(at::globalContext(), 0); }

}  // namespace compat
}  // namespace ctorch
#endif  // CTORCH_COMPAT_CUDA_INIT

#if defined(CTORCH_COMPAT_AUTOCAST) && !defined(CTORCH_COMPAT_AUTOCAST_DONE)  // amp.cpp
#define CTORCH_COMPAT_AUTOCAST_DONE
#include <ATen/autocast_mode.h>
namespace ctorch {
namespace compat {

// Autocast state per device type. 2.4 made it device-generic
// (is_autocast_enabled(DeviceType), get/set_autocast_dtype(DeviceType));
// 1.13 has one function per backend: set_enabled/is_enabled and
// *_autocast_gpu_dtype for CUDA, *_cpu_enabled and *_autocast_cpu_dtype for
// CPU (2.15 keeps those, deprecated, warning on every call).
inline bool autocast_enabled(c10::DeviceType d) {
#if CTORCH_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(d);
#else
  return d == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}
inline void set_autocast_enabled(c10::DeviceType d, bool on) {
#if CTORCH_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(d, on);
#else
  if (d == c10::DeviceType::CUDA) at::autocast::set_enabled(on);
  else at::autocast::set_cpu_enabled(on);
#endif
}
inline at::ScalarType autocast_dtype(c10::DeviceType d) {
#if CTORCH_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(d);
#else
  return d == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}
// 1.13's CPU setter refuses anything but BFloat16 (c10::Error); 2.x accepts
// Half too.
inline void set_autocast_dtype(c10::DeviceType d, at::ScalarType t) {
#if CTORCH_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(d, t);
#else
  if (d == c10::DeviceType::CUDA) at::autocast::set_autocast_gpu_dtype(t);
  else at::autocast::set_autocast_cpu_dtype(t);
#endif
}

}  // namespace compat
}  // namespace ctorch
#endif  // CTORCH_COMPAT_AUTOCAST

#if defined(CTORCH_COMPAT_NCCL) && !defined(CTORCH_COMPAT_NCCL_DONE)  // cuda_backend/with_cuda.cpp, after ProcessGroupNCCL.hpp
#define CTORCH_COMPAT_NCCL_DONE
namespace ctorch {
namespace compat {

// As gloo_process_group, for NCCL: in 1.13 ProcessGroupNCCL is a
// c10d::ProcessGroup; from 2.0 it is a c10d::Backend that a ProcessGroup
// holds for CUDA tensors, on the group's store prefixed "cuda/" as Python's
// _new_process_group_helper does (2.15, checked).
inline c10::intrusive_ptr<c10d::ProcessGroup> nccl_process_group(
    const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
    const c10::intrusive_ptr<c10d::ProcessGroupNCCL::Options> &options) {
#if CTORCH_TORCH_AT_LEAST(2, 0)
  // The same argument as Python's PrefixStore(f"{device}/", ...), so the same keys.
  auto backend_store = c10::make_intrusive<c10d::PrefixStore>("cuda/", store);
  auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(backend_store, rank, size, options);
  return process_group_holding(store, rank, size, c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL,
                               "nccl", nccl);
#else
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
#endif
}

}  // namespace compat
}  // namespace ctorch
#endif  // CTORCH_COMPAT_NCCL

#if defined(CTORCH_COMPAT_CLIP_GRAD) && !defined(CTORCH_COMPAT_CLIP_GRAD_DONE)
#define CTORCH_COMPAT_CLIP_GRAD_DONE
#include <ATen/ATen.h>
namespace ctorch {
namespace compat {
// torch.nn.utils.clip_grad_norm_'s total norm, op for op as the Python of
// the installed version computes it, so clipped gradients are bit-identical.
// grads: non-empty, defined. 1.13: torch.norm of each grad
// (abs().max() for inf), stacked on the first grad's device, then
// torch.norm (torch.max for inf; the single norm itself for one grad).
// 2.x (_get_total_norm): torch._foreach_norm per (device, dtype) group,
// groups in order of first appearance (Python's dict order is its C++
// grouping's; one group, the usual case, has no order to differ in), then
// torch.linalg.vector_norm of the stacked norms.
inline at::Tensor clip_grad_total_norm(const std::vector<at::Tensor> &grads, double p) {
  const c10::Device first = grads[0].device();
  std::vector<at::Tensor> norms;
#if CTORCH_TORCH_AT_LEAST(2, 0)
  std::vector<std::pair<std::pair<c10::Device, c10::ScalarType>, std::vector<at::Tensor>>> groups;
  for (const auto &g : grads) {
    auto key = std::make_pair(g.device(), g.scalar_type());
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto &e) { return e.first == key; });
    if (it == groups.end()) groups.push_back({key, {g}});
    else it->second.push_back(g);
  }
  for (auto &grp : groups)
    for (auto &n : at::_foreach_norm(grp.second, p)) norms.push_back(n.to(first));
  return at::linalg_vector_norm(at::stack(norms), p);
#else
  const bool inf = std::isinf(p) && p > 0;
  for (const auto &g : grads) norms.push_back((inf ? g.detach().abs().max() : at::norm(g.detach(), p)).to(first));
  if (inf) return norms.size() == 1 ? norms[0] : at::max(at::stack(norms));
  return at::norm(at::stack(norms), p);
#endif
}
}  // namespace compat
}  // namespace ctorch
#endif  // CTORCH_COMPAT_CLIP_GRAD

// Python's torch.optim single-tensor (foreach=False) updates, which ctorch's
// NAdam, RAdam, Adamax, Adadelta and LBFGS follow op for op (shim/optim/
// optim_py*.cpp), as written in 1.13.1 and in 2.15.0, the two versions
// tested bit for bit (the changes came in between; 2.0-2.14 take 2.15's
// rules untested).
//  - kOptimLerpExpAvg: NAdam, RAdam, Adamax update exp_avg with
//    exp_avg.lerp_(grad, 1 - beta1) (1.13: mul_(beta1).add_(grad, alpha=1 - beta1)).
//  - kNadamMuNextFromValue: NAdam's mu_product_next = mu_product.item() * mu_next
//    in double (1.13: mu_product * mu * mu_next as float32 tensors, mu twice).
//  - kOptimDecoupledWeightDecay: NAdam and RAdam take decoupled_weight_decay
//    (1.13 has no such option).
//  - kAdamaxMaximum: Adamax's exp_inf = maximum(exp_inf * beta2, |grad| + eps)
//    (1.13: amax over the two stacked; the same values).
//  - kLbfgsLineSearchBudget: LBFGS's strong-Wolfe search may make
//    max_eval - (evaluations so far) evaluations (1.13: 25 each time).
// CTORCH_COMPAT_OPTIM_FOREACH: torch.optim's
// multi-tensor (_multi_tensor_<kind>) and fused functions as 2.x writes them:
// exp_avg by _foreach_lerp_, coupled weight decay out of place
// (_foreach_add), Adamax by _foreach_maximum_, Adagrad's lr factor in Python
// floats, Adadelta's params after acc_delta; and the CPU fused kernels
// _fused_adam_/_fused_adamw_/_fused_sgd_/_fused_adagrad_. 1.13 decays the
// grads in place (_foreach_add_ on p.grad), has no _foreach_lerp_, computes
// Adagrad's -lr/(1+(step-1)*lr_decay) with float32 step tensors, and has only
// _fused_adam_, for CUDA. Used with #if (the 2.x functions do not exist in 1.13).
#if defined(CTORCH_COMPAT_OPTIM_FOREACH) && !defined(CTORCH_COMPAT_OPTIM_FOREACH_DONE)
#define CTORCH_COMPAT_OPTIM_FOREACH_DONE
#define CTORCH_FOREACH_2X CTORCH_TORCH_AT_LEAST(2, 0)
#endif  // CTORCH_COMPAT_OPTIM_FOREACH

#if defined(CTORCH_COMPAT_OPTIM_PY) && !defined(CTORCH_COMPAT_OPTIM_PY_DONE)
#define CTORCH_COMPAT_OPTIM_PY_DONE
namespace ctorch {
namespace compat {
constexpr bool kOptimLerpExpAvg = CTORCH_TORCH_AT_LEAST(2, 0);
constexpr bool kNadamMuNextFromValue = CTORCH_TORCH_AT_LEAST(2, 0);
constexpr bool kOptimDecoupledWeightDecay = CTORCH_TORCH_AT_LEAST(2, 0);
constexpr bool kAdamaxMaximum = CTORCH_TORCH_AT_LEAST(2, 0);
constexpr bool kLbfgsLineSearchBudget = CTORCH_TORCH_AT_LEAST(2, 0);
}  // namespace compat
}  // namespace ctorch
#endif  // CTORCH_COMPAT_OPTIM_PY

// A leaf's gradient accumulator (core/exclusive.cpp
// locks it): torch::autograd::impl::grad_accumulator returns a
// std::shared_ptr<Node> in 1.13 and a c10::intrusive_ptr<Node> in 2.x (2.15).
// Opt-in: define CTORCH_COMPAT_AUTOGRAD_NODE after including
// <torch/csrc/autograd/variable.h>.
#if defined(CTORCH_COMPAT_AUTOGRAD_NODE) && !defined(CTORCH_COMPAT_AUTOGRAD_NODE_DONE)
#define CTORCH_COMPAT_AUTOGRAD_NODE_DONE
#include <utility>
namespace ctorch {
namespace compat {
using NodePtr = decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor &>()));
}  // namespace compat
}  // namespace ctorch
#endif  // CTORCH_COMPAT_AUTOGRAD_NODE
