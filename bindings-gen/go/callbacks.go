package ctorch

// The C functions that take a callback, with Go functions as the callbacks:
// LambdaLR and MultiplicativeLR (ctorch_lr_scheduler_lambda) and
// Optimizer.StepClosure (ctorch_optimizer_step_closure). cgo runs a callback
// on the goroutine that made the C call; a panic inside it is recovered there
// and becomes the C call's error, so it never unwinds through C.

// #include <stdint.h>
// #include "ctorch.h"
// extern ctorch_status ctorchGoLrLambda(void *, int64_t, size_t, double *);
// extern ctorch_status ctorchGoStepClosure(void *, double *);
// static ctorch_status go_lr_lambda(ctorch_lr_scheduler *out, ctorch_optimizer opt, ctorch_lr_schedule kind,
//                                   uintptr_t key) {
//   return ctorch_lr_scheduler_lambda(out, opt, kind, ctorchGoLrLambda, (void *)key);
// }
// static ctorch_status go_step_closure(double *loss, ctorch_optimizer opt, uintptr_t key) {
//   return ctorch_optimizer_step_closure(loss, opt, ctorchGoStepClosure, (void *)key);
// }
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"
)

// callbackStatus is the status a callback returns for err: the ctorch
// status it carries, else RUNTIME.
func callbackStatus(err error) C.ctorch_status {
	var ce *Error
	if errors.As(err, &ce) && ce.Status != StatusOk {
		return C.ctorch_status(ce.Status)
	}
	return C.ctorch_status(StatusRuntime)
}

// recovered turns a panic inside a callback into an error (nil when none).
func recovered(what string, r any) error {
	if r == nil {
		return nil
	}
	if m, ok := r.(mustError); ok { // a Must inside the callback: its error as it is
		return m.err
	}
	return fmt.Errorf("%s panicked: %v", what, r)
}

// ---- LambdaLR, MultiplicativeLR ---------------------------------------------------------

// lrLambdas is what a lambda scheduler's callback calls: one function for
// every group, or one per group (Python's lr_lambda or its list).
type lrLambdas []func(epoch int64) float64

// callbackErrs holds a failed lr lambda's Go error, per OS thread, for the
// error of the scheduler call that ran it on that thread (statusError adds
// it to the library's message, which names the callback, epoch and group).
var callbackErrs sync.Map

//export ctorchGoLrLambda
func ctorchGoLrLambda(key unsafe.Pointer, epoch C.int64_t, group C.size_t, factor *C.double) (st C.ctorch_status) {
	defer func() {
		if err := recovered("the lr lambda", recover()); err != nil {
			callbackErrs.Store(currentThread(), err.Error())
			st = callbackStatus(err)
		}
	}()
	fns := cgo.Handle(uintptr(key)).Value().(lrLambdas)
	fn := fns[0]
	if len(fns) > 1 {
		if int(group) >= len(fns) {
			panic(fmt.Sprintf("%d lr lambdas for group %d", len(fns), group))
		}
		fn = fns[group]
	}
	*factor = C.double(fn(int64(epoch)))
	return 0
}

// callbackError adds to msg the Go error a callback left on this thread for
// the failed call, if the library's message names a callback.
func callbackError(msg string) string {
	if !strings.Contains(msg, "callback") {
		return msg
	}
	if e, ok := callbackErrs.LoadAndDelete(currentThread()); ok {
		return msg + " (" + e.(string) + ")"
	}
	return msg
}

// NewLambdaLR is torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda): each
// group's lr is its initial lr times fn(epoch). Give one function for every
// group or one per group (Python's list of lambdas). Making it performs the
// initial step (epoch 0), which calls fn. A function that panics fails the
// step that called it (the error names the epoch, the group and the panic;
// the lrs stay as they were); it is never called after the scheduler is gone.
// The functions live as long as the process: schedulers built on this one
// (LrSchedulerSequential, LrSchedulerChained) may call them after Free.
func NewLambdaLR(opt *Optimizer, fn ...func(epoch int64) float64) (*LrScheduler, error) {
	return newLambdaScheduler("NewLambdaLR", opt, LrScheduleLambda, fn)
}

// NewMultiplicativeLR is torch.optim.lr_scheduler.MultiplicativeLR(opt,
// lr_lambda): from epoch 1, each step multiplies each group's lr by
// fn(epoch). Functions and errors as NewLambdaLR.
func NewMultiplicativeLR(opt *Optimizer, fn ...func(epoch int64) float64) (*LrScheduler, error) {
	return newLambdaScheduler("NewMultiplicativeLR", opt, LrScheduleMultiplicative, fn)
}

func newLambdaScheduler(name string, opt *Optimizer, kind LrSchedule, fns []func(int64) float64) (*LrScheduler, error) {
	if len(fns) == 0 {
		return nil, &Error{Status: StatusInvalidArgument, Message: name + ": fn: no function given"}
	}
	for i, f := range fns {
		if f == nil {
			return nil, &Error{Status: StatusInvalidArgument, Message: fmt.Sprintf("%s: fn[%d] is nil", name, i)}
		}
	}
	if len(fns) > 1 {
		n, err := opt.NumParamGroups()
		if err != nil {
			return nil, err
		}
		if n != len(fns) { // Python: "Expected 2 lr_lambdas, but got 3"
			return nil, &Error{Status: StatusValue, Message: fmt.Sprintf(
				"%s: fn: %d functions for an optimizer of %d parameter groups (one, or one per group)", name, len(fns), n)}
		}
	}
	// Never deleted: the library keeps calling it through every scheduler
	// built on this one and has no hook to say when the last one goes.
	key := cgo.NewHandle(lrLambdas(fns))
	var out C.ctorch_lr_scheduler
	runtime.LockOSThread() // the initial step's callback error is left on this thread
	st := C.go_lr_lambda(&out, opt.handle(), C.ctorch_lr_schedule(kind), C.uintptr_t(key))
	for w := (busyWait{}); w.again(st); {
		st = C.go_lr_lambda(&out, opt.handle(), C.ctorch_lr_schedule(kind), C.uintptr_t(key))
	}
	var err error
	if st != 0 {
		err = statusError(st)
	}
	runtime.UnlockOSThread()
	runtime.KeepAlive(opt)
	if err != nil {
		key.Delete()
		return nil, err
	}
	return wrapLrScheduler(out), nil
}

// ---- step(closure) ----------------------------------------------------------------------

type stepClosure struct {
	fn  func() (float64, error)
	err error
}

//export ctorchGoStepClosure
func ctorchGoStepClosure(key unsafe.Pointer, loss *C.double) (st C.ctorch_status) {
	c := cgo.Handle(uintptr(key)).Value().(*stepClosure)
	defer func() {
		if err := recovered("the step closure", recover()); err != nil {
			c.err, st = err, callbackStatus(err)
		}
	}()
	v, err := c.fn()
	if err != nil {
		c.err = err
		return callbackStatus(err)
	}
	*loss = C.double(v)
	return 0
}

// StepClosure is Python's optimizer.step(closure): fn zeroes the grads,
// computes the loss, calls backward and returns the loss's value; LBFGS
// calls it as often as its options say, the other kinds once before the
// update. It returns the loss of fn's first call. The optimizer is held
// for the whole call, fn included: other goroutines' calls on it get
// StatusBusy (or wait, with SetBusyTimeout) until it returns, so a whole
// training step written inside fn is one step, never interleaved with
// another goroutine's. fn may call this optimizer's own methods (ZeroGrad).
// An error or panic in fn stops the step (LBFGS may be part way through an
// iteration; the other kinds are unchanged) and is returned.
func (o *Optimizer) StepClosure(fn func() (float64, error)) (float64, error) {
	if fn == nil {
		return 0, &Error{Status: StatusInvalidArgument, Message: "Optimizer.StepClosure: fn is nil"}
	}
	c := &stepClosure{fn: fn}
	key := cgo.NewHandle(c)
	defer key.Delete()
	var loss C.double
	st := C.go_step_closure(&loss, o.handle(), C.uintptr_t(key))
	for w := (busyWait{}); w.again(st); {
		st = C.go_step_closure(&loss, o.handle(), C.uintptr_t(key))
	}
	runtime.KeepAlive(o)
	if st != 0 {
		err := statusError(st)
		if c.err != nil {
			return 0, fmt.Errorf("%w (%w)", c.err, err)
		}
		return 0, err
	}
	return float64(loss), nil
}
