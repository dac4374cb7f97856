// Threads: the state libtorch keeps per OS thread (grad, autocast and stream
// scopes, a profiler session, a trace, a CUDA graph capture) is begun by one
// call and ended by another, which must run on the same thread. A goroutine
// may change OS threads between two cgo calls, so the generated wrappers of
// the functions api.json marks with thread_state lock the goroutine to its
// thread from a successful begin to the end, as runtime.LockOSThread does
// (the locks nest: a goroutine that locked itself stays locked).
package ctorch

// #include <pthread.h>
// #include <stdint.h>
// static uintptr_t ctorch_go_thread(void) { return (uintptr_t)pthread_self(); }
import "C"

import (
	"runtime"
	"sync/atomic"
)

// threadPin is a handle's hold on the OS thread whose state it began: the
// thread's id, 0 when it holds none. Atomic: a handle used from two
// goroutines at once is refused by the library, never a torn pin.
type threadPin struct{ thread atomic.Uintptr }

// lockThread locks the calling goroutine to its OS thread before a call that
// begins per-thread state and returns the thread's id; unlockThread undoes it
// when the call fails.
func lockThread() uintptr {
	runtime.LockOSThread()
	return uintptr(C.ctorch_go_thread())
}

func unlockThread() { runtime.UnlockOSThread() }

// hold records that the handle's state lives on thread id (locked by lockThread).
func (p *threadPin) hold(id uintptr) { p.thread.Store(id) }

// release ends the hold when its state has ended, from the goroutine that
// holds it: only that goroutine runs on the thread, so an end called from
// another one (which the library refuses) or from a finalizer unlocks
// nothing. A goroutine that exits still locked takes its thread with it.
func (p *threadPin) release() {
	id := p.thread.Load()
	if id != 0 && id == uintptr(C.ctorch_go_thread()) && p.thread.CompareAndSwap(id, 0) {
		runtime.UnlockOSThread()
	}
}

// currentThread is the calling goroutine's OS thread now (for tests).
func currentThread() uintptr { return uintptr(C.ctorch_go_thread()) }
