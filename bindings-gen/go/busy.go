package ctorch

// Waiting for a busy handle. The library refuses a call on an exclusive
// handle (optimizer, scheduler, loader, grad scaler, process group, work)
// that another thread is using with StatusBusy, having done nothing; so a
// refused call can simply be made again. SetBusyTimeout turns that into a
// wait, as SQLite's busy timeout does for a locked database. The generated
// wrappers of the functions that take an exclusive handle retry through
// busyWait.again; a call that succeeds pays one comparison.

// #include "ctorch.h"
import "C"

import (
	"runtime"
	"sync/atomic"
	"time"
)

var busyTimeout atomic.Int64 // nanoseconds; 0: StatusBusy at once

// SetBusyTimeout sets how long a call on an exclusive handle that another
// goroutine is using waits for it before returning StatusBusy, for the whole
// process; it returns the previous setting. 0 (the default) returns
// StatusBusy at once. With a timeout, goroutines sharing one loader each get
// the next batch and goroutines sharing one optimizer take turns, call by
// call. A call on a handle that its holder waits for in turn (a loader's
// transform function calling that loader) waits the full timeout and then
// returns StatusBusy, so keep the timeout finite.
func SetBusyTimeout(d time.Duration) time.Duration {
	if d < 0 {
		d = 0
	}
	return time.Duration(busyTimeout.Swap(int64(d)))
}

// busyWait is one call's wait: again reports whether the call should be
// made again, having waited, because it returned StatusBusy and the timeout
// has not run out. It yields first, then sleeps 10 us doubling up to 1 ms.
type busyWait struct {
	deadline time.Time
	tries    int
}

func (w *busyWait) again(st C.ctorch_status) bool {
	if st == 0 || Status(statusCode(st)) != StatusBusy {
		return false
	}
	d := busyTimeout.Load()
	if d <= 0 {
		return false
	}
	now := time.Now()
	if w.tries == 0 {
		w.deadline = now.Add(time.Duration(d))
	} else if !now.Before(w.deadline) {
		return false
	}
	w.tries++
	if w.tries <= 4 {
		runtime.Gosched()
	} else {
		time.Sleep(min(10*time.Microsecond<<min(w.tries-5, 7), time.Millisecond))
	}
	return true
}
