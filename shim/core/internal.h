// Private C++ helpers shared by the hand-written core and the generated
// wrappers. Kept small: every generated translation unit includes it, so
// anything heavy here multiplies build time.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/Generator.h>
#include <ATen/core/List.h>
#include <c10/core/Scalar.h>
#include <c10/util/Optional.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "compat/compat.h"
#include "ctorch.h"

namespace ctorch {

// ---- the registry of live handles (handles.cpp) ---------------------------
// Every handle type except ctorch_tensor (see below) is recorded, by pointer
// value and type, from the end of its construction to the start of its
// destruction. An entry point checks its handles against it before it reads
// them (check_handle, or require_ptr, which calls it for handle types), so a
// handle freed BEFORE the call, a pointer ctorch never returned, or a handle
// of another type gets INVALID_ARGUMENT naming the argument without a byte of
// the pointed-to memory being read. It cannot make safe a handle that another
// thread frees DURING the call: the caller must not free a handle in use.
//
// ctorch_tensor is checked without it: a tensor handle is a slot number and a
// generation (tensor_live below, tensor_slots.cpp), because every generated
// operator makes, checks and frees tensor handles (shim/core/README.md has
// the per-call cost).
enum class HandleKind : uint8_t {
  none = 0,
  tensor_list, generator, autograd_scope, autograd_ctx, optimizer, lr_scheduler,
  summary_writer, transform, data_loader, dataset, tensor_dict, module, value, nn_module, store,
  process_group, work, tracer, aoti_package, stream, event, stream_scope, cuda_graph,
  autocast_scope, grad_scaler, early_stopping, profiler, op, lm_model, lm_session, lm_sampler, lm_stream,
  lm_detokenizer, ddp,
};
// The kind of each handle struct (none: not a registered handle type).
template <class S>
struct handle_info {
  static constexpr HandleKind kind = HandleKind::none;
};
#define CTORCH_HANDLE_TYPE(NAME)                                    \
  template <>                                                      \
  struct handle_info<ctorch_##NAME##_s> {                          \
    static constexpr HandleKind kind = HandleKind::NAME;            \
  };
CTORCH_HANDLE_TYPE(tensor_list)
CTORCH_HANDLE_TYPE(generator)
CTORCH_HANDLE_TYPE(autograd_scope)
CTORCH_HANDLE_TYPE(autograd_ctx)
CTORCH_HANDLE_TYPE(optimizer)
CTORCH_HANDLE_TYPE(lr_scheduler)
CTORCH_HANDLE_TYPE(summary_writer)
CTORCH_HANDLE_TYPE(transform)
CTORCH_HANDLE_TYPE(data_loader)
CTORCH_HANDLE_TYPE(dataset)
CTORCH_HANDLE_TYPE(tensor_dict)
CTORCH_HANDLE_TYPE(module)
CTORCH_HANDLE_TYPE(value)
CTORCH_HANDLE_TYPE(nn_module)
CTORCH_HANDLE_TYPE(store)
CTORCH_HANDLE_TYPE(process_group)
CTORCH_HANDLE_TYPE(work)
CTORCH_HANDLE_TYPE(tracer)
CTORCH_HANDLE_TYPE(aoti_package)
CTORCH_HANDLE_TYPE(stream)
CTORCH_HANDLE_TYPE(event)
CTORCH_HANDLE_TYPE(stream_scope)
CTORCH_HANDLE_TYPE(cuda_graph)
CTORCH_HANDLE_TYPE(autocast_scope)
CTORCH_HANDLE_TYPE(grad_scaler)
CTORCH_HANDLE_TYPE(early_stopping)
CTORCH_HANDLE_TYPE(profiler)
CTORCH_HANDLE_TYPE(op)
CTORCH_HANDLE_TYPE(lm_model)
CTORCH_HANDLE_TYPE(lm_session)
CTORCH_HANDLE_TYPE(lm_sampler)
CTORCH_HANDLE_TYPE(lm_stream)
CTORCH_HANDLE_TYPE(lm_detokenizer)
CTORCH_HANDLE_TYPE(ddp)
#undef CTORCH_HANDLE_TYPE

[[noreturn, gnu::cold, gnu::noinline]] void fail_null(const char *arg);

// Records p as a live handle of kind k (throws bad_alloc only).
void handle_add(const void *p, HandleKind k);
// Forgets p if it is recorded as kind k.
void handle_remove(const void *p, HandleKind k) noexcept;
// Forgets p and returns true if it was recorded as kind k; false otherwise.
// One of two threads freeing the same handle at once gets true.
bool handle_take(const void *p, HandleKind k) noexcept;
// The kind p is recorded as, or none.
HandleKind handle_kind_of(const void *p) noexcept;
// INVALID_ARGUMENT naming `arg`: p is not a live handle of kind `want`.
[[noreturn, gnu::cold, gnu::noinline]] void fail_handle(const void *p, HandleKind want, const char *arg);
// A *_free given a pointer that is not a live handle of its type: recorded
// as the thread's last error (and in the failure log); the free does nothing.
[[gnu::cold, gnu::noinline]] void bad_free(const void *p, HandleKind want, const char *fn) noexcept;

// Throws INVALID_ARGUMENT naming `arg` unless h is a live handle of its type.
template <class S>
inline void check_handle(S *h, const char *arg) {
  constexpr HandleKind k = handle_info<std::remove_cv_t<S>>::kind;
  static_assert(k != HandleKind::none, "not a registered handle type");
  if (C10_UNLIKELY(!h)) fail_null(arg);
  if (C10_UNLIKELY(handle_kind_of(h) != k)) fail_handle(h, k, arg);
}

// For a *_free: true if h is a live handle of its type, which is now
// forgotten (the caller deletes it); false for NULL (quietly) and for a
// freed, foreign or wrong-type pointer (recorded by bad_free).
template <class S>
inline bool release_handle(S *h, const char *fn) noexcept {
  constexpr HandleKind k = handle_info<std::remove_cv_t<S>>::kind;
  if (!h) return false;
  if (handle_take(h, k)) return true;
  bad_free(h, k, fn);
  return false;
}

// The last member of every handle struct: `ctorch::Live<S> live{this};`.
// Being last, it registers the handle once every other member is built and
// forgets it before any is destroyed. It stores its offset in S so that a
// copy (or move) of S registers the copy's own address.
template <class S>
class Live {
 public:
  explicit Live(S *owner)
      : off_(reinterpret_cast<const char *>(this) - reinterpret_cast<const char *>(owner)) {
    handle_add(owner_addr(), handle_info<S>::kind);
  }
  Live(const Live &o) : off_(o.off_) { handle_add(owner_addr(), handle_info<S>::kind); }
  Live &operator=(const Live &) noexcept { return *this; }  // the address does not change
  ~Live() { handle_remove(owner_addr(), handle_info<S>::kind); }

 private:
  const void *owner_addr() const noexcept { return reinterpret_cast<const char *>(this) - off_; }
  std::ptrdiff_t off_;
};

}  // namespace ctorch

// A list handle: owned tensors. Defined here so the generator and the core
// agree on it.
struct ctorch_tensor_list_s {
  std::vector<at::Tensor> items;
  ctorch::Live<ctorch_tensor_list_s> live{this};
};
struct ctorch_generator_s {
  at::Generator gen;
  ctorch::Live<ctorch_generator_s> live{this};
};

namespace ctorch {

using TensorImplPtr = c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

// An error carrying its own status; thrown by argument checks inside a
// CTORCH_TRY block. `what()` must not name the function: the catch adds it.
class StatusError : public std::exception {
 public:
  StatusError(ctorch_status status, std::string msg) : status_(status), msg_(std::move(msg)) {}
  const char *what() const noexcept override { return msg_.c_str(); }
  ctorch_status status() const noexcept { return status_; }

 private:
  ctorch_status status_;
  std::string msg_;
};

[[noreturn]] void fail(ctorch_status status, const std::string &msg);
// "argument 'NAME': MSG" with INVALID_ARGUMENT.
[[noreturn]] void fail_arg(const char *arg, const std::string &msg);

// The failure paths of the inline checks below, kept cold and out of line: a
// throw with its std::string inside an inline check made GCC keep the check
// itself out of line, costing every generated wrapper several calls per call.
[[noreturn, gnu::cold, gnu::noinline]] void fail_null(const char *arg);
[[noreturn, gnu::cold, gnu::noinline]] void fail_null_handle(const char *arg);
[[noreturn, gnu::cold, gnu::noinline]] void fail_null_out(const char *arg);
[[noreturn, gnu::cold, gnu::noinline]] void fail_null_list(const char *arg, size_t len);
// A ctorch_scalar with a bad kind, or a nonzero `reserved` field.
[[noreturn, gnu::cold, gnu::noinline]] void fail_scalar(const char *arg, const ctorch_scalar &s);

// Records the exception in flight as this thread's last error, prefixed by
// `fn`, and returns its status. Call only from a catch block.
ctorch_status translate_exception(const char *fn) noexcept;
// Records an error without an exception (for early argument checks).
ctorch_status set_error(const char *fn, ctorch_status status, const std::string &msg) noexcept;

// ---- handles -------------------------------------------------------------

// ---- tensor handles: slots (tensor_slots.cpp) ----------------------------
// A ctorch_tensor is not a pointer but a generation and a slot's offset:
//   handle = generation << 48 | index << 3       (generation 1..65535)
// The slot, one 64-bit word of a table reserved at load, holds
//   live:  generation << 48 | TensorImpl pointer (one counted reference) | 1
//   free:  next generation << 48 | next free slot's offset
//   never used: 0
// Freeing a handle bumps its slot's generation, so a freed handle, a handle
// of another type (a pointer: generation 0), or any value ctorch never
// returned is refused by one read of the table, never by reading the memory
// the value may point to. The whole table is readable (pages not yet used
// read as zeros, which no handle matches), so no bound is checked: the
// offset is the value masked to the table's size. Handles are made from a
// per-thread list of free slots, and checks, makes and frees are plain
// loads and stores: no atomic read-modify-write, no lock.
namespace tslot {
constexpr unsigned kGenShift = 48;
constexpr uint64_t kPtrMask = (uint64_t(1) << kGenShift) - 1;
constexpr uint64_t kTagMask = ~kPtrMask | 1;  // generation and the live bit
struct Table {
  char *base;     // the table (before it is reserved: one word reading 0)
  uint64_t mask;  // its size - 1, without the low 3 bits (0 before)
};
// Set once, while the library loads. Hidden: read directly, not via the GOT.
[[gnu::visibility("hidden")]] extern Table table;
C10_ALWAYS_INLINE std::atomic<uint64_t> &slot_at(uint64_t off) noexcept {
  return *reinterpret_cast<std::atomic<uint64_t> *>(table.base + off);
}
// The calling thread's free slots: a list threaded through the slots' words.
struct Cache {
  uint64_t head;   // offset of the first free slot, 0 = empty
  uint64_t count;  // slots on the list
};
// __thread, not thread_local: no wrapper call (the type is trivial); the
// initial-exec model: a %fs-relative access, not a __tls_get_addr call.
[[gnu::visibility("hidden"), gnu::tls_model("initial-exec")]] extern __thread Cache cache;
// Refills the thread's list (from the shared pool, or new slots); throws
// std::bad_alloc when no slot can be had.
[[gnu::noinline]] uint64_t refill();
// Gives part of a long list back to the shared pool.
[[gnu::noinline]] void spill() noexcept;
constexpr uint64_t kCacheMax = 512;
// True if v is a live handle whose slot word is w: w live, and v nothing
// but w's generation and the offset. v's bits outside the offset (its
// generation, and its low 3 bits, which a handle never sets) plus one must
// equal w's generation and live bit. An XOR test would let the 1 come from
// v instead of w: 0x1, 0x9, 0x10001 (generation 0, low bit set) would match
// a never-used slot (word 0) and be taken for a tensor at address 0. The
// sum cannot: it has the live bit only where v's low bit is clear, and it
// is never 0 or a free slot's tag (v's offset bits are masked to 0, so the
// carry from +1 stops at bit 3).
C10_ALWAYS_INLINE bool matches(uint64_t v, uint64_t w) noexcept {
  return (v & ~table.mask) + 1 == (w & kTagMask);
}
}  // namespace tslot

// If h is a live tensor handle, sets p to its TensorImpl and returns true;
// false for NULL, a freed handle, another type's handle or any other value.
C10_ALWAYS_INLINE bool tensor_get(const void *h, c10::TensorImpl *&p) noexcept {
  const uint64_t v = reinterpret_cast<uintptr_t>(h);
  const uint64_t w = tslot::slot_at(v & tslot::table.mask).load(std::memory_order_acquire);
  p = reinterpret_cast<c10::TensorImpl *>(w & tslot::kPtrMask & ~uint64_t(1));
  return tslot::matches(v, w);
}
// The TensorImpl of live handle h, or NULL.
C10_ALWAYS_INLINE c10::TensorImpl *tensor_live(const void *h) noexcept {
  c10::TensorImpl *p;
  return tensor_get(h, p) ? p : nullptr;
}
// A new handle holding p (the caller's reference, now the handle's).
C10_ALWAYS_INLINE ctorch_tensor tensor_make(c10::TensorImpl *p) {
  tslot::Cache &c = tslot::cache;
  uint64_t off = c.head;
  if (C10_UNLIKELY(off == 0)) off = tslot::refill();
  std::atomic<uint64_t> &s = tslot::slot_at(off);
  const uint64_t w = s.load(std::memory_order_relaxed);
  c.head = w & tslot::kPtrMask;
  --c.count;
  const uint64_t gen = w & ~tslot::kPtrMask;
  s.store(gen | reinterpret_cast<uintptr_t>(p) | 1, std::memory_order_release);
  return reinterpret_cast<ctorch_tensor>(gen | off);
}
// Frees handle h's slot and returns the reference it held; NULL (nothing
// done) if h is not a live handle.
C10_ALWAYS_INLINE c10::TensorImpl *tensor_release(const void *h) noexcept {
  const uint64_t v = reinterpret_cast<uintptr_t>(h);
  const uint64_t off = v & tslot::table.mask;
  std::atomic<uint64_t> &s = tslot::slot_at(off);
  const uint64_t w = s.load(std::memory_order_relaxed);
  if (C10_UNLIKELY(!tslot::matches(v, w))) return nullptr;
  tslot::Cache &c = tslot::cache;
  uint64_t gen = (w >> tslot::kGenShift) + 1;
  gen += gen >> 16;  // 65535 wraps to 1: generation 0 is never a handle's
  // A plain store, not a compare-and-swap (which costs 1% of a 1-element
  // add): two threads freeing one handle at the same instant is a race in
  // the caller that this does not catch (shim/core/README.md).
  s.store(gen << tslot::kGenShift | c.head, std::memory_order_release);
  c.head = off;
  if (C10_UNLIKELY(++c.count > tslot::kCacheMax)) tslot::spill();
  return reinterpret_cast<c10::TensorImpl *>(w & tslot::kPtrMask & ~uint64_t(1));
}

// INVALID_ARGUMENT naming `arg` (or element i of list `arg`): h is not a live
// tensor handle (freed, foreign, or another type's handle).
[[noreturn, gnu::cold, gnu::noinline]] void fail_tensor(const void *h, const char *arg);
[[noreturn, gnu::cold, gnu::noinline]] void fail_tensor_element(const void *h, const char *arg, size_t i);

// Views a borrowed handle as an at::Tensor without touching the reference
// count (no atomics on the hot path). NULL becomes the undefined tensor.
class Borrowed {
 public:
  // at::Tensor is exactly one TensorImpl pointer; writing it directly skips
  // Tensor's converting constructor (out of line, with a null check that
  // throws) and the intrusive_ptr temporary it would leave to destroy.
  // NULL allowed (the undefined tensor); INVALID_ARGUMENT naming `arg` if h
  // is not a live tensor handle.
  C10_ALWAYS_INLINE explicit Borrowed(ctorch_tensor h, const char *arg = "tensor") {
    c10::TensorImpl *p = c10::UndefinedTensorImpl::singleton();
    if (h && C10_UNLIKELY(!tensor_get(h, p))) fail_tensor(h, arg);
    set(p);
  }
  // NULL refused too (require_tensor and Borrowed in one: generated wrappers).
  struct required_t {};
  C10_ALWAYS_INLINE Borrowed(ctorch_tensor h, const char *arg, required_t) {
    c10::TensorImpl *p;
    if (C10_UNLIKELY(!tensor_get(h, p))) fail_tensor(h, arg);
    set(p);
  }
  ~Borrowed() { t_.unsafeReleaseTensorImpl(); }
  Borrowed(const Borrowed &) = delete;
  Borrowed &operator=(const Borrowed &) = delete;
  at::Tensor &get() noexcept { return t_; }
  const at::Tensor &get() const noexcept { return t_; }
  operator at::Tensor &() noexcept { return t_; }
  operator const at::Tensor &() const noexcept { return t_; }
  const at::Tensor *operator->() const noexcept { return &t_; }
  at::Tensor *operator->() noexcept { return &t_; }

 private:
  C10_ALWAYS_INLINE void set(c10::TensorImpl *p) noexcept {
    static_assert(sizeof(at::Tensor) == sizeof(p), "at::Tensor is one TensorImpl pointer");
    std::memcpy(static_cast<void *>(&t_), &p, sizeof p);
  }
  union {
    at::Tensor t_;
  };
};

// ---- handle scopes (handle_scope.cpp) ------------------------------------
// Every new tensor handle passes through new_handle() (give, give_result)
// and every handle ctorch takes back through take() (ctorch_tensor_free,
// callbacks' outputs), so that an open ctorch_handle_scope records and
// forgets them.
//
// The number of handle scopes open in the process, all threads together.
// It is what every new handle reads: with no scope open anywhere, scopes
// cost one load of this global (written only by scope enter/leave, so it
// stays cached) and a branch predicted not taken. A thread-local counter
// would be exact per thread but, in a shared library, each read is a call
// to __tls_get_addr; the per-thread check is in scope_record instead,
// reached only while some thread has a scope open. Hidden: read directly,
// not through the GOT.
[[gnu::visibility("hidden")]] extern std::atomic<uint32_t> handle_scopes_open;
// Records handle h in the calling thread's innermost scope, if it has one.
[[gnu::noinline]] void scope_record(ctorch_tensor h) noexcept;
// Forgets the record of h (innermost scope first), if a scope of the calling
// thread holds one.
[[gnu::noinline]] void scope_forget(ctorch_tensor h) noexcept;

// The handle for a reference the caller now owns. Throws std::bad_alloc
// (the reference then still the caller's) only when no slot can be had.
C10_ALWAYS_INLINE ctorch_tensor new_handle(c10::TensorImpl *p) {
  ctorch_tensor h = tensor_make(p);
  if (C10_UNLIKELY(handle_scopes_open.load(std::memory_order_relaxed) != 0)) scope_record(h);
  return h;
}

// ctorch_tensor_free given a freed or foreign pointer: recorded as the
// thread's last error; nothing is freed.
[[gnu::cold, gnu::noinline]] void bad_tensor_free(const void *h, const char *fn) noexcept;

// Gives up handle h (its slot freed): forgets the record a scope made of
// it, so that leaving the scope does not free it a second time, and returns
// its reference. NULL for a freed or foreign h (nothing done).
C10_ALWAYS_INLINE c10::TensorImpl *untrack(ctorch_tensor h) noexcept {
  c10::TensorImpl *p = tensor_release(h);
  if (C10_UNLIKELY(p && handle_scopes_open.load(std::memory_order_relaxed) != 0)) scope_forget(h);
  return p;
}
// Adopts the reference of a NEW handle the caller gives up (what a callback
// wrote into its outputs); INVALID_ARGUMENT naming `arg` if h is not a live
// tensor handle.
inline at::Tensor take(ctorch_tensor h, const char *arg = "output") {
  if (!h) return at::Tensor();
  c10::TensorImpl *p = untrack(h);
  if (C10_UNLIKELY(!p)) fail_tensor(h, arg);
  return at::Tensor(TensorImplPtr::reclaim(p));
}

// Transfers one reference of `t` to a new handle (NULL if undefined). On
// std::bad_alloc (no slot), t keeps its reference.
inline ctorch_tensor give(at::Tensor &&t) {
  if (!t.defined()) return nullptr;
  ctorch_tensor h = new_handle(t.unsafeGetTensorImpl());
  (void)t.unsafeReleaseTensorImpl();
  return h;
}
inline ctorch_tensor give(const at::Tensor &t) { return give(at::Tensor(t)); }

// give(make()) without the moved-from temporary: make's at::Tensor is built in
// place (C++17 guaranteed elision) and never destroyed, its one reference
// becoming the handle. Generated wrappers return through this; it saves an
// out-of-line intrusive_ptr::reset_ per call.
template <class F>
C10_ALWAYS_INLINE ctorch_tensor give_result(F &&make) {
  union Slot {
    at::Tensor t;
    Slot() {}
    ~Slot() {}
  } slot;
  new (&slot.t) at::Tensor(make());
  c10::TensorImpl *p = slot.t.unsafeGetTensorImpl();
  if (p == c10::UndefinedTensorImpl::singleton()) return nullptr;
  try {
    return new_handle(p);
  } catch (...) {
    slot.t.~Tensor();  // no slot: the result is dropped, the error reported
    throw;
  }
}

// Handles lent to a callback for its duration: each holds a reference of its
// own and is freed when this is destroyed, unless the callback freed it
// first (a freed handle's slot refuses a second free, so either is safe).
class Lent {
 public:
  Lent() = default;
  Lent(const Lent &) = delete;
  Lent &operator=(const Lent &) = delete;
  ~Lent() {
    for (ctorch_tensor h : lent_)
      if (c10::TensorImpl *p = tensor_release(h)) TensorImplPtr::reclaim(p);
  }
  // The handle for t (NULL if undefined), live while this lives.
  ctorch_tensor operator()(const at::Tensor &t) {
    if (!t.defined()) return nullptr;
    lent_.reserve(lent_.size() + 1);  // may throw: before the handle
    at::Tensor ref(t);
    ctorch_tensor h = tensor_make(ref.unsafeGetTensorImpl());
    (void)ref.unsafeReleaseTensorImpl();  // now the handle's
    lent_.push_back(h);
    return h;
  }

 private:
  std::vector<ctorch_tensor> lent_;
};

// Borrowed handle -> owned at::Tensor (one new reference), e.g. to store it.
inline at::Tensor own(ctorch_tensor h, const char *arg = "tensor") { return Borrowed(h, arg).get(); }

// Throws INVALID_ARGUMENT if a required tensor handle is NULL or not a live
// tensor handle (freed, foreign, or another type's handle), found without
// reading the memory it points to.
C10_ALWAYS_INLINE void require_tensor(ctorch_tensor h, const char *arg) {
  c10::TensorImpl *p;
  if (C10_UNLIKELY(!tensor_get(h, p))) fail_tensor(h, arg);
}
// Any other required pointer: a non-tensor handle (checked against the
// registry: live and of its type), a string, a callback (NULL only).
template <class P>
C10_ALWAYS_INLINE void require_ptr(P p, const char *arg) {
  if constexpr (std::is_pointer_v<P> &&
                handle_info<std::remove_cv_t<std::remove_pointer_t<P>>>::kind != HandleKind::none) {
    check_handle(p, arg);
  } else {
    if (C10_UNLIKELY(!p)) fail_null(arg);
  }
}
template <class T>
C10_ALWAYS_INLINE void require_out(T *p, const char *arg) {
  if (C10_UNLIKELY(!p)) fail_null_out(arg);
}
// A list argument: ptr may be NULL only when len is 0.
template <class T>
C10_ALWAYS_INLINE void require_list(const T *p, size_t len, const char *arg) {
  if (C10_UNLIKELY(!p && len)) fail_null_list(arg, len);
}

// Borrowed handles -> owned tensors for Tensor[] arguments (NULL rejected).
std::vector<at::Tensor> tensor_list(const ctorch_tensor *p, size_t n, const char *arg);
// For Tensor?[] arguments (NULL entries = none).
c10::List<c10::optional<at::Tensor>> opt_tensor_list(const ctorch_tensor *p, size_t n, const char *arg);

// Generator? arguments: NULL = the default generator.
inline c10::optional<at::Generator> opt_generator(ctorch_generator g) {
  if (!g) return c10::nullopt;
  check_handle(g, "generator");
  return g->gen;
}

// New list handle owning `v`.
inline ctorch_tensor_list give_list(std::vector<at::Tensor> &&v) {
  return new ctorch_tensor_list_s{std::move(v)};
}

// ---- enums and values (validate, then convert; throw StatusError) ---------

c10::ScalarType to_scalar_type(int dtype, const char *arg);
ctorch_dtype from_scalar_type(c10::ScalarType t);
c10::Device to_device(const ctorch_device &d, const char *arg);
ctorch_device from_device(const c10::Device &d);
c10::Layout to_layout(int layout, const char *arg);
ctorch_layout from_layout(c10::Layout l);
c10::MemoryFormat to_memory_format(int mf, const char *arg);
C10_ALWAYS_INLINE c10::Scalar to_scalar(const ctorch_scalar &s, const char *arg) {
  // `reserved` must be 0 (the header says so): checked, so that it can be
  // given a meaning later without old callers' garbage being read as one.
  if (C10_LIKELY(s.reserved == 0)) {
    switch (s.kind) {
      case CTORCH_SCALAR_FLOAT: return c10::Scalar(s.f);
      case CTORCH_SCALAR_INT: return c10::Scalar(static_cast<int64_t>(s.i));
      case CTORCH_SCALAR_BOOL: return c10::Scalar(s.i != 0);
      case CTORCH_SCALAR_COMPLEX: return c10::Scalar(c10::complex<double>(s.f, s.imag));
    }
  }
  fail_scalar(arg, s);
}
ctorch_scalar from_scalar(const c10::Scalar &s);

}  // namespace ctorch

// Every entry point body is wrapped so that no exception escapes:
//   CTORCH_TRY ... CTORCH_CATCH
// Success falls through to `return CTORCH_OK`.
#define CTORCH_TRY try {
#define CTORCH_CATCH                                   \
  }                                                    \
  catch (...) {                                        \
    return ::ctorch::translate_exception(__func__);    \
  }                                                    \
  return CTORCH_OK;

// The two commonest entry-point shapes, shared by the core and autograd:
// a getter `NAME(OUT_T *out, ctorch_tensor t)` writing EXPR, and a transform
// `NAME(ctorch_tensor *out, ctorch_tensor t EXTRA_PARAMS)` returning a new
// handle to EXPR. Both see the borrowed input as `const at::Tensor &x`.
#define CTORCH_GETTER(NAME, OUT_T, EXPR)                         \
  CTORCH_API ctorch_status NAME(OUT_T *out, ctorch_tensor t) {   \
    CTORCH_TRY                                                   \
    ::ctorch::require_out(out, "out");                           \
    ::ctorch::require_tensor(t, "t");                            \
    ::ctorch::Borrowed b(t);                                     \
    const at::Tensor &x = b.get();                               \
    *out = (EXPR);                                               \
    CTORCH_CATCH                                                 \
  }
#define CTORCH_TRANSFORM(NAME, EXTRA_PARAMS, EXPR)                                  \
  CTORCH_API ctorch_status NAME(ctorch_tensor *out, ctorch_tensor t EXTRA_PARAMS) { \
    CTORCH_TRY                                                                      \
    ::ctorch::require_out(out, "out");                                              \
    *out = nullptr;                                                                 \
    ::ctorch::require_tensor(t, "t");                                               \
    ::ctorch::Borrowed b(t);                                                        \
    const at::Tensor &x = b.get();                                                  \
    *out = ::ctorch::give(EXPR);                                                    \
    CTORCH_CATCH                                                                    \
  }
#define CTORCH_COMMA ,
