// Write exclusivity per storage (include/ctorch.h, "Threads"): a call that
// writes a tensor (an in-place or out= argument, Tensor(a!) in the schema, or
// a hand-written function that writes tensor data) holds the tensor's storage
// for the call with
//   ctorch::WriteHold hold(tensor, "self");
// and a second thread's call writing the same storage meanwhile gets
// CTORCH_BUSY naming the function (the catch adds it) and the argument, and
// changes nothing. Handles that alias one storage (a shallow clone, a view,
// detach, alias) are distinct handles, so the handle-level check of
// exclusive.h cannot see that two of them write one buffer; without this two
// threads adding into aliases lose updates. Reads are not held (the contract
// says what a read during a write sees).
//
// The held storages are an exact set: the storage's address is the key (no
// striping that could make two storages collide into a spurious BUSY). The
// fast path is a table of slots indexed by a hash of the address: one
// compare-exchange to take an empty slot, one load to see that the overflow
// list is empty, one store to release. A slot already holding ANOTHER storage
// sends the call to a mutex-guarded overflow list (rare: it takes two threads
// writing at the same instant into storages whose addresses hash alike). A
// writer of the slot and a writer of the overflow list each publish their
// key and then look at the other place (sequentially consistent), so two
// writers of one storage always see each other (both may get BUSY; neither
// goes on unseen). No call waits for another call (the overflow list's mutex
// is held only to scan or change the list), so nothing waits forever.
//
// A storage held by the calling thread itself (an op whose two written
// arguments share a storage, a user callback inside a call that holds it)
// passes: the outer hold releases it.
#pragma once

#include <c10/core/TensorImpl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "exclusive.h"

namespace ctorch {

namespace storage_write {

// Everything here is inline (no .cpp): the slow paths are small, and a
// header-only hold needs nothing linked beside the code that includes it.
struct Slot {
  std::atomic<const void *> key{nullptr};    // the held storage's identity, or NULL
  std::atomic<const void *> owner{nullptr};  // its holder's thread_token()
};
constexpr size_t kSlots = 1024;
inline Slot slots[kSlots];
inline std::atomic<size_t> overflow_count{0};  // entries in the overflow list
inline char overflow_tag;                      // a hold's slot pointer for "an overflow entry"

struct Entry {
  const void *key;
  const void *owner;
};
inline std::mutex overflow_mutex;
inline std::vector<Entry> overflow;  // guarded by overflow_mutex; as long as the writers colliding at once

// The identity of what a write to t writes: its StorageImpl, shared by every
// view and alias of it; a tensor without storage (sparse, opaque) is its own.
inline const void *key_of(const c10::TensorImpl *t) noexcept {
  const void *s = t->unsafe_storage().unsafeGetStorageImpl();
  return s ? s : t;
}

inline Slot &slot_of(const void *key) noexcept {
  uint64_t h = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(key)) * 0x9E3779B97F4A7C15ull;
  return slots[h >> 54];  // the top 10 bits: kSlots == 1024
}

[[noreturn, gnu::cold, gnu::noinline]] inline void fail_storage_busy(const char *arg, const void *key) {
  char addr[32];
  std::snprintf(addr, sizeof addr, "%p", key);
  throw StatusError(CTORCH_BUSY, std::string("argument '") + arg + "': its storage " + addr +
                                     " is being written by another thread's call (tensors that share a storage, "
                                     "such as views, aliases and shallow clones, are written by one call at a "
                                     "time: include/ctorch.h, \"Threads\"); nothing was done");
}

// The holder of key in the overflow list, or nullptr. Call under the mutex.
inline const Entry *find(const void *key) noexcept {
  for (const Entry &e : overflow)
    if (e.key == key) return &e;
  return nullptr;
}

// The slow path of a hold: taken is the slot this call holds already (the
// overflow list was not empty), or nullptr (the slot was held). Returns what
// the hold must release at its end: a slot, &overflow_tag (an overflow
// entry), or nullptr (nothing: an outer call of this thread holds key); or
// throws CTORCH_BUSY.
[[gnu::noinline]] inline Slot *acquire_slow(Slot *taken, const void *key, const char *arg) {
  const void *me = thread_token();
  std::unique_lock<std::mutex> lock(overflow_mutex);
  if (taken) {
    // This call holds the slot, but a writer that found the slot taken by
    // another storage may hold this one in the overflow list.
    const Entry *e = find(key);
    if (!e) return taken;
    const void *holder = e->owner;
    taken->owner.store(nullptr, std::memory_order_relaxed);
    taken->key.store(nullptr, std::memory_order_release);
    if (holder == me) return nullptr;
    fail_storage_busy(arg, key);
  }
  if (const Entry *e = find(key)) {
    if (e->owner == me) return nullptr;
    fail_storage_busy(arg, key);
  }
  Slot &s = slot_of(key);
  const void *expected = nullptr;
  if (s.key.compare_exchange_strong(expected, key, std::memory_order_seq_cst)) {
    // Freed meanwhile; the list (under the mutex) has no entry for key.
    s.owner.store(me, std::memory_order_relaxed);
    return &s;
  }
  if (expected == key) {
    if (s.owner.load(std::memory_order_relaxed) == me) return nullptr;
    fail_storage_busy(arg, key);
  }
  // The slot holds another storage: an overflow entry, published before the
  // slot is read again, so a writer of key that takes the slot after that
  // read sees the count and finds this entry.
  overflow.push_back({key, me});
  overflow_count.fetch_add(1, std::memory_order_seq_cst);
  if (s.key.load(std::memory_order_seq_cst) == key) {
    overflow.pop_back();
    overflow_count.fetch_sub(1, std::memory_order_seq_cst);
    fail_storage_busy(arg, key);
  }
  return reinterpret_cast<Slot *>(&overflow_tag);
}

[[gnu::noinline]] inline void release_overflow(const void *key) noexcept {
  std::lock_guard<std::mutex> lock(overflow_mutex);
  for (size_t i = 0; i < overflow.size(); ++i) {
    if (overflow[i].key == key) {
      overflow[i] = overflow.back();
      overflow.pop_back();
      overflow_count.fetch_sub(1, std::memory_order_seq_cst);
      return;
    }
  }
}

}  // namespace storage_write

class WriteHold {
 public:
  WriteHold() noexcept = default;
  WriteHold(const at::Tensor &t, const char *arg) { hold(t, arg); }
  C10_ALWAYS_INLINE ~WriteHold() { release(); }
  WriteHold(WriteHold &&o) noexcept : slot_(o.slot_), key_(o.key_) { o.slot_ = nullptr; }
  WriteHold(const WriteHold &) = delete;
  WriteHold &operator=(const WriteHold &) = delete;
  WriteHold &operator=(WriteHold &&) = delete;

  C10_ALWAYS_INLINE void hold(const at::Tensor &t, const char *arg) {
    const c10::TensorImpl *impl = t.unsafeGetTensorImpl();
    if (!t.defined()) return;  // nothing to write; the call refuses it itself
    key_ = storage_write::key_of(impl);
    storage_write::Slot &s = storage_write::slot_of(key_);
    const void *expected = nullptr;
    if (C10_LIKELY(s.key.compare_exchange_strong(expected, key_, std::memory_order_seq_cst))) {
      s.owner.store(thread_token(), std::memory_order_relaxed);
      if (C10_LIKELY(storage_write::overflow_count.load(std::memory_order_seq_cst) == 0)) {
        slot_ = &s;
        return;
      }
      slot_ = storage_write::acquire_slow(&s, key_, arg);
      return;
    }
    slot_ = storage_write::acquire_slow(nullptr, key_, arg);
  }

 private:
  C10_ALWAYS_INLINE void release() noexcept {
    if (!slot_) return;
    if (C10_UNLIKELY(reinterpret_cast<void *>(slot_) == &storage_write::overflow_tag)) {
      storage_write::release_overflow(key_);
    } else {
      slot_->owner.store(nullptr, std::memory_order_relaxed);
      slot_->key.store(nullptr, std::memory_order_release);
    }
    slot_ = nullptr;
  }
  storage_write::Slot *slot_ = nullptr;
  const void *key_ = nullptr;
};

// Every tensor of a written list (Tensor(a!)[]): the storages held, in order.
class WriteHolds {
 public:
  WriteHolds(const std::vector<at::Tensor> &ts, const char *arg) {
    holds_.reserve(ts.size());
    for (const at::Tensor &t : ts) holds_.emplace_back(t, arg);
  }
  WriteHolds(const WriteHolds &) = delete;
  WriteHolds &operator=(const WriteHolds &) = delete;

 private:
  std::vector<WriteHold> holds_;
};

}  // namespace ctorch
