// A registry of live tensor handles cheap enough, it was hoped, for the
// per-call path (issue 36 item 7): tried, measured, and NOT wired into the
// library, because its cost per 1-element op took ctorch/C++ past the 1.03
// per-call target (shim/core/README.md, "Handle validation", has the
// numbers). Kept here, compiled into bench/handle_registry only, so that the
// measurement can be repeated. The commit that wired it in (register in
// new_handle, check in require_tensor/Borrowed/lists/generated Tensor?,
// release in ctorch_tensor_free and scope leaves, lent handles for callbacks,
// tests/handles/test_tensor_handles.c) is 7c9c340 on branch wt-registry.
#pragma once

#include <c10/macros/Macros.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ctorch {

// ---- the registry of live tensor handles (tensor_registry.cpp) ------------
// A multiset of TensorImpl pointers: how many live handles each has. Words of
// one fixed table, (pointer >> 3) << 20 | count, probed linearly from the
// pointer's hash; the inline parts below try the home slot only (where a
// pointer almost always is) and leave the rest to the *_slow functions.
namespace treg {
constexpr unsigned kBits = 18;  // 2^18 slots, 2 MiB of zero pages until used
constexpr size_t kSlots = size_t(1) << kBits;
constexpr unsigned kCountBits = 20;
constexpr uint64_t kCountMax = (uint64_t(1) << kCountBits) - 1;
constexpr unsigned kProbe = 32;  // a longer run of live slots: the overflow map
extern std::atomic<uint64_t> slots[kSlots];
// A pointer fits a word if 8-aligned and below 2^47 (user space on x86-64
// and aarch64 with 48-bit addresses); others go to the overflow map.
C10_ALWAYS_INLINE bool keyable(uintptr_t v) noexcept { return (v & 7) == 0 && (v >> 47) == 0; }
C10_ALWAYS_INLINE uint64_t make_word(uintptr_t v, uint64_t count) noexcept {
  return (uint64_t(v) >> 3) << kCountBits | count;
}
C10_ALWAYS_INLINE uintptr_t word_key(uint64_t w) noexcept { return uintptr_t(w >> kCountBits) << 3; }
C10_ALWAYS_INLINE uint64_t word_count(uint64_t w) noexcept { return w & kCountMax; }
C10_ALWAYS_INLINE size_t home_of(uintptr_t v) noexcept {
  return size_t((uint64_t(v) >> 4) * 0x9E3779B97F4A7C15ull >> (64 - kBits));
}
}  // namespace treg

bool tensor_live_slow(const void *p) noexcept;
// Never throws: if the overflow map cannot grow, p stays unregistered (its
// handle is then refused as not live, and its free frees nothing).
void tensor_register_slow(const void *p) noexcept;
bool tensor_release_slow(const void *p) noexcept;

// True if p is a live tensor handle. Reads the table only.
C10_ALWAYS_INLINE bool tensor_live(const void *p) noexcept {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  uint64_t w = treg::slots[treg::home_of(v)].load(std::memory_order_acquire);
  // word_key(w) == v also proves v keyable (its low 3 and high bits are 0).
  if (C10_LIKELY(treg::word_key(w) == v && treg::word_count(w) != 0)) return true;
  return tensor_live_slow(p);
}
// Records one more live handle of p.
C10_ALWAYS_INLINE void tensor_register(const void *p) noexcept {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  std::atomic<uint64_t> &s = treg::slots[treg::home_of(v)];
  uint64_t w = s.load(std::memory_order_relaxed);
  // The home slot empty (then p holds no slot: a run never has a gap), or
  // p's own with room: one compare-and-swap.
  uint64_t want = w == 0 ? treg::make_word(v, 1) : w + 1;
  if (C10_LIKELY((w == 0 || (treg::word_key(w) == v && treg::word_count(w) < treg::kCountMax)) && treg::keyable(v) &&
                 s.compare_exchange_strong(w, want, std::memory_order_acq_rel)))
    return;
  tensor_register_slow(p);
}
// Forgets one live handle of p; false if p had none (freed or foreign).
C10_ALWAYS_INLINE bool tensor_release(const void *p) noexcept {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  std::atomic<uint64_t> &s = treg::slots[treg::home_of(v)];
  uint64_t w = s.load(std::memory_order_relaxed);
  if (C10_LIKELY(treg::word_key(w) == v && treg::word_count(w) != 0 &&
                 s.compare_exchange_strong(w, w - 1, std::memory_order_acq_rel)))
    return true;
  return tensor_release_slow(p);
}

}  // namespace ctorch
