// Exclusive handles (include/ctorch.h, "Sharing one handle between threads"):
// a handle whose every call changes its state (optimizer,
// LR scheduler, data loader) carries a `ctorch::Busy busy;` member, and each
// of its entry points holds it for the call with
//   ctorch::Exclusive hold(h.busy, "opt");
// A second thread's call meanwhile gets CTORCH_BUSY naming the function (the
// catch adds it) and the argument, and changes nothing: without this, two
// threads inside one optimizer's step corrupt its state maps (Python threads
// over ctypes, which releases the GIL, did). A call re-entered on
// the SAME thread (a step closure calling zero_grad, a scheduler's lambda
// reading the lr) passes: the holder is this thread's token. Cost: one
// compare-exchange on entry and one store on exit (docs/guarantees.md).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "internal.h"

namespace ctorch {

struct Busy {
  std::atomic<const void *> owner{nullptr};  // the holding thread's token, or NULL
  Busy() = default;
  // A copied handle (deep copy) starts free.
  Busy(const Busy &) noexcept {}
  Busy &operator=(const Busy &) noexcept { return *this; }
};

// An address unique to the calling thread while it lives.
inline const void *thread_token() noexcept {
  static thread_local char token;
  return &token;
}

// CTORCH_BUSY: "argument 'ARG': <what> is in use by another thread's call".
[[noreturn, gnu::cold, gnu::noinline]] void fail_busy(const char *arg, const void *handle);

class Exclusive {
 public:
  Exclusive(Busy &b, const char *arg, const void *handle = nullptr) {
    const void *me = thread_token(), *expected = nullptr;
    if (C10_LIKELY(b.owner.compare_exchange_strong(expected, me, std::memory_order_acquire))) {
      b_ = &b;
      return;
    }
    if (expected == me) return;  // re-entered on this thread: the outer call releases it
    fail_busy(arg, handle);
  }
  ~Exclusive() {
    if (b_) b_->owner.store(nullptr, std::memory_order_release);
  }
  Exclusive(const Exclusive &) = delete;
  Exclusive &operator=(const Exclusive &) = delete;

 private:
  Busy *b_ = nullptr;
};

// For a *_free: true when no call holds b, which it then holds (the free
// may go on: release_handle, then store nullptr in b.owner if the object
// holding b outlives the handle, as an optimizer kept by its schedulers
// does); otherwise records CTORCH_BUSY as the thread's last error for `fn`
// and returns false (the handle is not freed: freeing it under the running
// call would be a use after free). Call it BEFORE release_handle.
bool free_allowed(Busy &b, const char *fn, const void *handle) noexcept;

// Locks the gradient accumulator of each given leaf tensor that requires
// grad (the mutex libtorch's backward holds while AccumulateGrad writes
// .grad), in address order, until destroyed: a backward on another thread
// then waits instead of racing on the .grad pointer an optimizer step or a
// zero_grad reads and replaces (two threads assigning one intrusive_ptr is
// a double free). Never hold it around a call that may run
// a backward on this thread (a step closure): that backward would wait on
// itself. Creates the accumulator of a leaf that has none yet, so that a
// forward on another thread meanwhile finds this one (and its lock).
//
// keep (optional): where the caller keeps the accumulators alive between
// calls (an optimizer does): libtorch frees a leaf's accumulator with the
// graph that held it, so without a keeper each call made a new one (~130 ns
// per parameter, measured; with the keeper a lookup and the lock). Keeping
// them is what DDP does for its hooks: a forward finds and reuses it.
class GradLocks {
 public:
  explicit GradLocks(const std::vector<at::Tensor> &tensors, std::vector<std::shared_ptr<void>> *keep = nullptr);
  ~GradLocks();
  GradLocks(const GradLocks &) = delete;
  GradLocks &operator=(const GradLocks &) = delete;

 private:
  std::vector<std::shared_ptr<void>> nodes_;  // keep the accumulators (and their mutexes) alive
  std::vector<std::mutex *> locked_;
};

}  // namespace ctorch
