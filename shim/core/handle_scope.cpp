// Handle scopes (ctorch_handle_scope_*, contract in ctorch.h): while a scope
// is open on a thread, every new tensor handle ctorch gives out on that
// thread is recorded in the innermost one, and leaving it frees what is
// still recorded.
//
// The hooks are in internal.h: new_handle() (inside give()/give_result(),
// so every generated wrapper and every hand-written out-parameter records)
// and take() (ctorch_tensor_free and every place ctorch adopts a handle a
// callback made, which forget one record). With no scope open in the
// process they cost one load of handle_scopes_open and a branch; only this
// file touches thread-local state.
//
// A scope records handles (slot and generation, never reused while live), so
// two handles of one tensor are two records, and freeing a handle made
// outside any scope never forgets another's record. Leaving frees each
// recorded handle still live (tensor_release refuses a freed one).
//
// Cost per handle while a scope is open (docs/benchmarks.md, "Handle
// registry and scopes"): a record is an append to the scope's array and one
// store into a side table (where[slot] = scope depth and index), and
// forgetting one (ctorch_tensor_free) is one load from that table and a
// compare, so neither hashes nor allocates per handle. A hash map of
// handles per scope made an add inside a scope cost ~6% more than one
// outside, and one whose result a leave freed ~20% more.
#include "core/internal.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>
#include <utility>
#include <vector>

namespace ctorch {

std::atomic<uint32_t> handle_scopes_open{0};

}  // namespace ctorch

namespace {

using ctorch::TensorImplPtr;

struct Scope {
  // The handle the caller holds is this id, not an address: ids are never
  // reused, so a scope handle that was left already, or that another
  // thread opened, is recognised as such without dereferencing anything
  // (a freed address could come back as a new scope's).
  uint64_t id = 0;
  std::vector<ctorch_tensor> recs;  // recorded handles; NULL = forgotten
  size_t dead = 0;                  // NULL entries in recs
};

// where[slot]: the scope depth (bits 40..) and index in its recs of the
// record of the handle in that slot, written by the thread that recorded
// it. Stale entries are harmless: a record is trusted only if the entry it
// names holds exactly that handle (slot and generation). One 8-byte word per
// tensor slot, reserved (not committed) like the slot table itself, the
// first time a scope is entered.
constexpr unsigned kDepthShift = 40;
constexpr uint64_t kIndexMask = (uint64_t(1) << kDepthShift) - 1;

std::atomic<uint64_t> *where_table() {
  static std::atomic<uint64_t> *w = [] {
    const size_t bytes = ctorch::tslot::table.mask + 8;
    void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return m == MAP_FAILED ? nullptr : static_cast<std::atomic<uint64_t> *>(m);
  }();
  if (!w) throw std::bad_alloc();
  return w;
}

inline size_t slot_index(ctorch_tensor h) noexcept {
  return static_cast<size_t>((reinterpret_cast<uintptr_t>(h) & ctorch::tslot::table.mask) >> 3);
}

// This thread's open scopes, innermost last.
struct ThreadScopes {
  std::vector<Scope> open;
  std::vector<ctorch_tensor> spare;  // a left scope's array, reused by the next enter
  std::atomic<uint64_t> *where = nullptr;

  void note(ctorch_tensor h, size_t depth, size_t i) noexcept {
    where[slot_index(h)].store(uint64_t(depth) << kDepthShift | i, std::memory_order_relaxed);
  }
  // The depth and index of h's record in this thread's scopes; false if
  // there is none.
  bool locate(ctorch_tensor h, size_t &depth, size_t &i) const noexcept {
    const uint64_t w = where[slot_index(h)].load(std::memory_order_relaxed);
    depth = static_cast<size_t>(w >> kDepthShift);
    i = static_cast<size_t>(w & kIndexMask);
    return depth < open.size() && i < open[depth].recs.size() && open[depth].recs[i] == h;
  }
  // Forgets record i of scope `depth`: NULL in place, trailing NULLs
  // dropped, and the array compacted once it is mostly NULLs (handles freed
  // out of order inside a long scope), so it stays proportional to the
  // handles the scope still holds.
  void drop(size_t depth, size_t i) noexcept {
    Scope &s = open[depth];
    s.recs[i] = nullptr;
    ++s.dead;
    while (!s.recs.empty() && !s.recs.back()) {
      s.recs.pop_back();
      --s.dead;
    }
    if (s.dead > 64 && s.dead * 2 > s.recs.size()) {
      size_t j = 0;
      for (ctorch_tensor h : s.recs)
        if (h) {
          s.recs[j] = h;
          note(h, depth, j++);
        }
      s.recs.resize(j);
      s.dead = 0;
    }
  }

  // Leaves open[i] and every scope opened after it, innermost first. Each
  // scope is taken off the stack before its references are dropped: a
  // freed tensor can run user code (a from_blob release callback, a custom
  // function's release) that calls ctorch on this thread, and that code
  // must see a consistent stack.
  void leave_from(size_t i) noexcept {
    while (open.size() > i) {
      std::vector<ctorch_tensor> recs = std::move(open.back().recs);
      open.pop_back();
      ctorch::handle_scopes_open.fetch_sub(1, std::memory_order_relaxed);
      for (ctorch_tensor h : recs)
        if (h)
          if (c10::TensorImpl *p = ctorch::tensor_release(h)) TensorImplPtr::reclaim(p);
      recs.clear();
      // Keep one array (up to 64 Ki records) for the next enter: entering
      // and leaving a scope per step then allocates nothing.
      if (recs.capacity() > spare.capacity() && recs.capacity() <= (size_t(1) << 16)) spare.swap(recs);
    }
  }
  ~ThreadScopes();
};

// The thread's scopes once it opened one, NULL before and after its exit.
// A plain pointer (constant-initialised, no guard; initial-exec: a
// %fs-relative load, not a __tls_get_addr call) for the record/forget
// paths, which run on every thread while any thread has a scope open; and
// a destructor that may already have run when a late thread-exit
// destructor frees a tensor.
[[gnu::tls_model("initial-exec")]] __thread ThreadScopes *t_scopes = nullptr;

ThreadScopes::~ThreadScopes() {
  // A thread that ends with scopes open leaves them, as if it had called
  // leave on the outermost: its handles are freed, not leaked.
  t_scopes = nullptr;
  leave_from(0);
}

ThreadScopes &this_thread_scopes() {
  static thread_local ThreadScopes scopes;
  t_scopes = &scopes;
  return scopes;
}

ctorch_handle_scope handle_of(uint64_t id) { return reinterpret_cast<ctorch_handle_scope>(static_cast<uintptr_t>(id)); }

std::atomic<uint64_t> g_next_scope_id{1};

}  // namespace

namespace ctorch {

void scope_record(ctorch_tensor p) noexcept {
  ThreadScopes *ts = t_scopes;
  if (!ts || ts->open.empty()) return;  // a scope open on another thread
  Scope &s = ts->open.back();
  try {
    s.recs.push_back(p);
  } catch (...) {
    // Out of memory growing the array: the handle stays the caller's, as
    // without a scope (a leak at worst, never a double free): the wrappers
    // give handles out last so nothing can fail after.
    return;
  }
  ts->note(p, ts->open.size() - 1, s.recs.size() - 1);
}

void scope_forget(ctorch_tensor p) noexcept {
  ThreadScopes *ts = t_scopes;
  size_t depth, i;
  if (!ts || ts->open.empty() || !ts->locate(p, depth, i)) return;
  ts->drop(depth, i);
}

}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_handle_scope_enter(ctorch_handle_scope *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ThreadScopes &ts = this_thread_scopes();
  if (!ts.where) ts.where = where_table();
  ts.open.emplace_back();  // the steps that can fail: nothing changed yet
  Scope &s = ts.open.back();
  s.recs = std::move(ts.spare);
  ts.spare = std::vector<ctorch_tensor>();
  s.id = g_next_scope_id.fetch_add(1, std::memory_order_relaxed);
  // Relaxed is enough: a thread only needs to see its own scopes, and its
  // own increment is ordered before its own next give().
  ctorch::handle_scopes_open.fetch_add(1, std::memory_order_relaxed);
  *out = handle_of(s.id);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_handle_scope_leave(ctorch_handle_scope scope) {
  CTORCH_TRY
  ctorch::require_ptr(scope, "scope");
  ThreadScopes *ts = t_scopes;
  const uint64_t id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(scope));
  size_t i = 0;
  const size_t n = ts ? ts->open.size() : 0;
  while (i < n && ts->open[i].id != id) ++i;
  if (i == n)
    ctorch::fail_arg("scope", "is not a handle scope open on this thread (left already, or opened on another "
                              "thread); nothing was freed");
  ts->leave_from(i);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_handle_scope_keep(ctorch_tensor t) {
  CTORCH_TRY
  ctorch::require_tensor(t, "t");
  ThreadScopes *ts = t_scopes;
  size_t depth, i;
  if (!ts || ts->open.empty() || !ts->locate(t, depth, i)) return CTORCH_OK;
  // The enclosing scope's record first: the only step that can fail
  // (allocation), and then nothing has moved.
  if (depth > 0) {
    Scope &outer = ts->open[depth - 1];
    outer.recs.push_back(t);
    ts->note(t, depth - 1, outer.recs.size() - 1);
  }
  ts->drop(depth, i);
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_handle_scope_size(size_t *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ThreadScopes *ts = t_scopes;
  *out = ts && !ts->open.empty() ? ts->open.back().recs.size() - ts->open.back().dead : 0;
  CTORCH_CATCH
}

}  // extern "C"
