// The slots behind tensor handles (internal.h: tensor_live, tensor_make,
// tensor_release; the encoding is described there).
//
// Why slots and not a registry of TensorImpl pointers: every generated
// operator makes a handle, the caller frees it, and every tensor argument is
// checked, so this sits on the per-call path. A registry keyed by pointer
// needs an atomic read-modify-write to make a handle and another to free it,
// into a table spread over many cache lines; it cost +3% of a 1-element add
// (shim/core/README.md). Here making a handle pops the calling thread's own
// free list (plain loads and stores of a slot the thread just used), a check
// is one load of a slot that is usually in L1, and a free is one
// compare-and-swap on that slot. A generation per slot tells a freed handle
// from the next one made in its slot; it wraps after 65,535 reuses of one
// slot, the one case a stale handle is taken for a live one.
//
// The table is one address range reserved while the library loads: 4 GiB
// (512 M handles) or, where the address space is limited, the largest power
// of two down to 16 MiB. All of it is readable from the start (untouched
// pages read as zeros, which no handle matches, and cost no memory), so a
// check masks the value to the table's size instead of testing a bound; it
// is made writable 1 MiB at a time as slots are needed, and never unmapped.
// Slot 0 is never used (NULL reads it).
#include "core/internal.h"

#include <sys/mman.h>

#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace ctorch {
namespace tslot {

namespace {
alignas(8) char g_unreserved[8] = {};  // the table until it is reserved: one word, 0
}  // namespace
// Constant-initialised (no code runs): any static initialiser that makes a
// handle before reserve() finds a valid, empty table.
Table table = {g_unreserved, 0};
[[gnu::tls_model("initial-exec")]] __thread Cache cache{0, 0};

namespace {

constexpr uint64_t kChunk = uint64_t(1) << 20;  // bytes made writable at once
constexpr uint64_t kBatch = 256;                // slots moved between a thread and the pool
constexpr uint64_t kNewFree = uint64_t(1) << kGenShift;  // a new slot: free, generation 1

struct Pool {
  std::mutex mu;
  uint64_t size = 0;       // bytes reserved at table.base (0: none)
  uint64_t committed = 0;  // bytes writable
  uint64_t carved = 8;     // bytes made into slots (slot 0 unused)
  // Lists of free slots given back by threads: (first slot's offset, length).
  std::vector<std::pair<uint64_t, uint64_t>> lists;
};
// Never destroyed: handles are freed by other libraries' static destructors
// and by bindings' last finalisers, after this library's statics.
Pool &pool() {
  static Pool *p = new Pool;
  return *p;
}

// Reserves the table. Runs while the library loads, before any other thread
// can call it, so table is written before anything reads it.
bool reserve() {
  for (uint64_t size = uint64_t(1) << 32; size >= (uint64_t(1) << 24); size >>= 1) {
    void *m = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) continue;
    pool().size = size;
    table = {static_cast<char *>(m), (size - 1) & ~uint64_t(7)};
    return true;
  }
  return false;  // every make then throws std::bad_alloc
}
const bool g_reserved = reserve();

// Makes kBatch new slots into one free list; returns its head. p.mu held.
uint64_t carve(Pool &p) {
  const uint64_t want = p.carved + kBatch * 8;
  if (want > p.size) throw std::bad_alloc();  // no table, or 512 M live tensor handles
  if (want > p.committed) {
    const uint64_t grow = std::min(std::max(kChunk, want - p.committed), p.size - p.committed);
    if (mprotect(table.base + p.committed, grow, PROT_READ | PROT_WRITE) != 0) throw std::bad_alloc();
    p.committed += grow;
  }
  const uint64_t first = p.carved;
  for (uint64_t off = first; off < want; off += 8)
    slot_at(off).store(kNewFree | (off + 8 < want ? off + 8 : 0), std::memory_order_relaxed);
  p.carved = want;
  return first;
}

// A thread's list goes back to the pool when the thread ends.
thread_local bool t_exiting = false;
struct Reaper {
  ~Reaper() {
    t_exiting = true;
    if (cache.head == 0) return;
    Pool &p = pool();
    try {
      std::lock_guard<std::mutex> g(p.mu);
      p.lists.emplace_back(cache.head, cache.count);
    } catch (...) {
      // Out of memory: the thread's free slots are lost, not reused.
    }
    cache = {0, 0};
  }
};

}  // namespace

uint64_t refill() {
  (void)g_reserved;
  if (!t_exiting) {
    static thread_local Reaper reaper;  // constructed once per thread, here only
    (void)&reaper;
  }
  Pool &p = pool();
  std::lock_guard<std::mutex> g(p.mu);
  if (!p.lists.empty()) {
    auto [head, n] = p.lists.back();
    p.lists.pop_back();
    cache = {head, n};
  } else {
    cache = {carve(p), kBatch};
  }
  return cache.head;
}

void spill() noexcept {
  // Keeps the first kCacheMax - kBatch slots, gives the rest back as one list.
  const uint64_t keep = kCacheMax - kBatch;
  uint64_t last = cache.head;
  for (uint64_t i = 1; i < keep; ++i) last = slot_at(last).load(std::memory_order_relaxed) & kPtrMask;
  std::atomic<uint64_t> &cut = slot_at(last);
  const uint64_t w = cut.load(std::memory_order_relaxed);
  const uint64_t rest = w & kPtrMask;
  const uint64_t n = cache.count - keep;
  Pool &p = pool();
  try {
    std::lock_guard<std::mutex> g(p.mu);
    p.lists.emplace_back(rest, n);
  } catch (...) {
    return;  // out of memory: the list stays the thread's
  }
  cut.store(w & ~kPtrMask, std::memory_order_relaxed);  // the kept list ends here
  cache.count = keep;
}

}  // namespace tslot
}  // namespace ctorch
