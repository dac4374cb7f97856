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
#include "core/internal.h"

#include <c10/util/flat_hash_map.h>

#include <cstdint>
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
  uint64_t id;
  ska::flat_hash_map<ctorch_tensor, size_t> held;  // handle -> records (1)
  size_t count = 0;                                // sum of held's values
};

std::atomic<uint64_t> g_next_scope_id{1};

// Drops every reference the scope recorded.
void release(Scope &s) noexcept {
  for (auto &rec : s.held)
    for (size_t k = 0; k < rec.second; ++k)
      if (c10::TensorImpl *p = ctorch::tensor_release(rec.first)) TensorImplPtr::reclaim(p);
  s.held.clear();
  s.count = 0;
}

// This thread's open scopes, innermost last.
struct ThreadScopes {
  std::vector<Scope> open;

  // Leaves open[i] and every scope opened after it, innermost first. Each
  // scope is taken off the stack before its references are dropped: a
  // freed tensor can run user code (a from_blob release callback, a custom
  // function's release) that calls ctorch on this thread, and that code
  // must see a consistent stack.
  void leave_from(size_t i) noexcept {
    while (open.size() > i) {
      Scope s = std::move(open.back());
      open.pop_back();
      ctorch::handle_scopes_open.fetch_sub(1, std::memory_order_relaxed);
      release(s);
    }
  }
  ~ThreadScopes();
};

// The thread's scopes once it opened one, NULL before and after its exit.
// A plain pointer (constant-initialised, no guard) for the record/forget
// paths, which run on every thread while any thread has a scope open; and
// a destructor that may already have run when a late thread-exit
// destructor frees a tensor.
thread_local ThreadScopes *t_scopes = nullptr;

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

}  // namespace

namespace ctorch {

void scope_record(ctorch_tensor p) noexcept {
  ThreadScopes *ts = t_scopes;
  if (!ts || ts->open.empty()) return;  // a scope open on another thread
  Scope &s = ts->open.back();
  try {
    ++s.held[p];
    ++s.count;
  } catch (...) {
    // Out of memory growing the table: the handle stays the caller's, as
    // without a scope (a leak at worst, never a double free): the wrappers
    // give handles out last so nothing can fail after.
  }
}

void scope_forget(ctorch_tensor p) noexcept {
  ThreadScopes *ts = t_scopes;
  if (!ts) return;
  for (auto it = ts->open.rbegin(); it != ts->open.rend(); ++it) {
    auto f = it->held.find(p);
    if (f == it->held.end()) continue;
    if (--f->second == 0) it->held.erase(f);
    --it->count;
    return;
  }
}

}  // namespace ctorch

extern "C" {

CTORCH_API ctorch_status ctorch_handle_scope_enter(ctorch_handle_scope *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  *out = nullptr;
  ThreadScopes &ts = this_thread_scopes();
  ts.open.emplace_back();  // the only step that can fail: nothing changed yet
  Scope &s = ts.open.back();
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
  if (!ts) return CTORCH_OK;
  ctorch_tensor p = t;
  for (size_t i = ts->open.size(); i-- > 0;) {
    Scope &s = ts->open[i];
    auto f = s.held.find(p);
    if (f == s.held.end()) continue;
    // The enclosing scope's record first: the only step that can fail
    // (allocation), and then nothing has moved.
    if (i > 0) {
      Scope &outer = ts->open[i - 1];
      ++outer.held[p];
      ++outer.count;
    }
    if (--f->second == 0) s.held.erase(f);
    --s.count;
    return CTORCH_OK;
  }
  CTORCH_CATCH
}

CTORCH_API ctorch_status ctorch_handle_scope_size(size_t *out) {
  CTORCH_TRY
  ctorch::require_out(out, "out");
  ThreadScopes *ts = t_scopes;
  *out = ts && !ts->open.empty() ? ts->open.back().count : 0;
  CTORCH_CATCH
}

}  // extern "C"
