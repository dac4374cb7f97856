// The registry of live tensor handles (internal.h: tensor_live,
// tensor_register, tensor_release). A ctorch_tensor is one counted TensorImpl
// reference and several handles may be one pointer, so the registry is a
// multiset: pointer -> number of live handles.
//
// Every generated operator makes a handle and the caller frees it, and every
// tensor argument is checked, so this sits on the per-call path: the handle
// registry of the other types (handles.cpp: mutex + hash map per shard) cost
// 9-11% of a 1-element add. This one is a fixed open-addressing table of
// 64-bit words, (pointer >> 3) << 20 | count, read and changed only by atomic
// loads and compare-and-swaps (no lock), linear probing from the pointer's
// hash:
// - a slot, once given a key, keeps it while its count is above 0; at 0 it is
//   "dormant" and a later claim (of this or another pointer) may take it;
// - slots never go back to empty, so every slot with a key lies between its
//   home and the first empty slot after it: a scan stops there;
// - a pointer may hold more than one slot (two threads claiming it at once,
//   or a count at its 20-bit maximum): its handle count is the sum, which
//   every operation respects (find any slot with count > 0, add to any);
// - a run of kProbe full slots sends the claim to a locked overflow map,
//   which lookups read only when it is not empty.
// A check reads the table, never the memory behind the pointer, so a freed
// or foreign pointer is refused without touching it (ASan-clean).
#include "internal.h"

#include <mutex>
#include <unordered_map>

namespace ctorch {

namespace treg {
std::atomic<uint64_t> slots[kSlots];
}  // namespace treg

namespace {

using namespace treg;

struct Overflow {
  std::mutex mu;
  std::unordered_map<uintptr_t, uint64_t> counts;
};
// Never destroyed: handles are freed by static destructors of other
// libraries and bindings' last finalisers, after this library's statics.
Overflow &overflow() {
  static Overflow *o = new Overflow;
  return *o;
}
std::atomic<size_t> g_overflow_n{0};

inline size_t slot_at(size_t home, unsigned i) { return (home + i) & (kSlots - 1); }

bool overflow_has(uintptr_t v) noexcept {
  if (g_overflow_n.load(std::memory_order_acquire) == 0) return false;
  Overflow &o = overflow();
  std::lock_guard<std::mutex> g(o.mu);
  auto it = o.counts.find(v);
  return it != o.counts.end() && it->second > 0;
}

}  // namespace

bool tensor_live_slow(const void *p) noexcept {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  if (!keyable(v)) return overflow_has(v);
  size_t h = home_of(v);
  for (unsigned i = 0; i < kProbe; ++i) {
    uint64_t w = slots[slot_at(h, i)].load(std::memory_order_acquire);
    if (w == 0) break;
    if (word_key(w) == v && word_count(w) != 0) return true;
  }
  return overflow_has(v);
}

void tensor_register_slow(const void *p) noexcept {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  if (keyable(v)) {
    size_t h = home_of(v);
    const uint64_t one = make_word(v, 1);
    for (int attempt = 0; attempt < 64; ++attempt) {
      // Add to a slot of p's if there is one; else claim the first dormant
      // or empty slot of the run (all of p's slots lie before its first
      // empty one, so a scan that reaches it has seen them all).
      std::atomic<uint64_t> *cand = nullptr;
      uint64_t cand_w = 0;
      bool raced = false;
      for (unsigned i = 0; i < kProbe; ++i) {
        std::atomic<uint64_t> &s = slots[slot_at(h, i)];
        uint64_t w = s.load(std::memory_order_acquire);
        if (w != 0 && word_key(w) == v && word_count(w) < kCountMax) {
          if (s.compare_exchange_strong(w, w + 1, std::memory_order_acq_rel)) return;
          raced = true;  // changed under us: scan again
          break;
        }
        if (!cand && word_count(w) == 0) {
          cand = &s;
          cand_w = w;
        }
        if (w == 0) break;
      }
      if (raced) continue;
      if (!cand) break;  // kProbe slots all live: the overflow map
      if (cand->compare_exchange_strong(cand_w, one, std::memory_order_acq_rel)) return;
    }
  }
  Overflow &o = overflow();
  std::lock_guard<std::mutex> g(o.mu);
  try {
    ++o.counts[v];
  } catch (...) {
    return;  // out of memory: left unregistered (internal.h says what follows)
  }
  g_overflow_n.fetch_add(1, std::memory_order_release);
}

bool tensor_release_slow(const void *p) noexcept {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  if (keyable(v)) {
    size_t h = home_of(v);
    for (unsigned i = 0; i < kProbe; ++i) {
      std::atomic<uint64_t> &s = slots[slot_at(h, i)];
      uint64_t w = s.load(std::memory_order_acquire);
      while (w != 0 && word_key(w) == v && word_count(w) != 0) {
        if (s.compare_exchange_weak(w, w - 1, std::memory_order_acq_rel)) return true;
      }
      if (w == 0) break;
    }
  }
  if (g_overflow_n.load(std::memory_order_acquire) == 0) return false;
  Overflow &o = overflow();
  std::lock_guard<std::mutex> g(o.mu);
  auto it = o.counts.find(v);
  if (it == o.counts.end()) return false;
  if (--it->second == 0) o.counts.erase(it);
  g_overflow_n.fetch_sub(1, std::memory_order_release);
  return true;
}

}  // namespace ctorch
