// The open scopes of one thread (grad-mode, stream and autocast scopes), and
// the rule every *_scope_leave follows: leaving ALWAYS releases the handle,
// whatever order the scopes are left in, so a binding whose destructors run
// in an order it does not control (Rust drops, a collector's finalizers)
// neither leaks a scope nor leaves a mode on.
//
// - Leaving the innermost open scope restores the state in force when it was
//   opened, then closes every scope below it that was already left.
// - Leaving a scope that is not the innermost marks it left and succeeds; its
//   state is restored once the scopes opened after it are left too, so after
//   all scopes are left, in any order, the thread is back where it started.
// - Leaving from another thread releases the handle too (it is marked left;
//   its own thread closes it at its next enter or leave of that kind), and
//   fails with CTORCH_RUNTIME, since the mode stays on in the owning thread
//   until then.
// S is the scope struct: `std::thread::id owner; std::atomic<bool> left;`,
// and its destructor restores the state (so `delete` closes it).
#pragma once

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "core/internal.h"

namespace ctorch {

template <class S>
class ScopeStack {
 public:
  // Reserves room so that push() cannot throw once the state is changed;
  // closes scopes other threads left.
  void before_enter() {
    drain();
    open_.reserve(open_.size() + 1);
  }
  void push(S *s) { open_.push_back(s); }

  // The shared *_leave: what = "stream " / "autocast " / "" for messages.
  void leave(S *scope, const char *what) {
    // Leaving releases the handle whatever follows: it leaves the registry
    // here, so a second leave, or one of a freed scope, is refused.
    constexpr HandleKind k = handle_info<S>::kind;
    if (!scope) fail_null("scope");
    if (!handle_take(scope, k)) fail_handle(scope, k, "scope");
    if (scope->owner != std::this_thread::get_id()) {
      scope->left.store(true, std::memory_order_release);
      fail(CTORCH_RUNTIME, std::string("argument 'scope': was opened on another thread; the handle is released, and "
                                       "the ") + what + "scope closes on its own thread at that thread's next " + what +
                               "scope enter or leave");
    }
    auto it = std::find(open_.begin(), open_.end(), scope);
    if (it == open_.end())
      fail(CTORCH_RUNTIME, std::string("argument 'scope': is not an open ") + what +
                               "scope of this thread (already left, or never opened)");
    scope->left.store(true, std::memory_order_relaxed);
    drain();
  }

 private:
  // Closes, innermost first, every scope at the top of the stack that was left.
  void drain() {
    while (!open_.empty() && open_.back()->left.load(std::memory_order_acquire)) {
      S *s = open_.back();
      open_.pop_back();
      delete s;  // the destructor restores the state in force when s opened
    }
  }
  std::vector<S *> open_;  // innermost last
};

}  // namespace ctorch
