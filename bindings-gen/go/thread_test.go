package ctorch

// A trace, a profiler session and the grad, autocast and stream scopes live
// on the OS thread that began them (libtorch keeps them per thread): the
// begin keeps the goroutine on its thread until the end (thread.go). `go
// test` runs each test on a goroutine that no one locked, which is how the
// trace of TestReadWriteModule once finished on another thread
// (CTORCH_RUNTIME "the trace records on the thread that began it").

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// stays reports whether the goroutine is still on thread id after giving the
// scheduler many chances to move it (sleeps, with busy goroutines beside).
func stays(id uintptr) bool {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 2*runtime.GOMAXPROCS(0); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	ok := true
	for i := 0; i < 100 && ok; i++ {
		time.Sleep(100 * time.Microsecond)
		ok = currentThread() == id
	}
	close(stop)
	wg.Wait()
	return ok
}

func TestTraceStaysOnItsThread(t *testing.T) {
	done := make(chan error)
	go func() { // a goroutine no one locked, as a test's or a server's
		done <- func() error {
			x, _ := FromFloat32([]float32{1, -2}, 1, 2)
			tr, err := TracerNew("Relu")
			if err != nil {
				return err
			}
			defer tr.Free()
			if err := tr.Begin([]*Tensor{x}); err != nil {
				return err
			}
			id := currentThread()
			if tr.pin.thread.Load() != id {
				return errors.New("Begin did not record its thread")
			}
			if !stays(id) {
				return errors.New("the goroutine left the thread of its trace")
			}
			y, err := Relu(x)
			if err != nil {
				return err
			}
			// Refused on its arguments: the trace records on, the goroutine stays.
			var ce *Error
			if _, err := tr.Finish([]*Tensor{nil}); !errors.As(err, &ce) || ce.Status != StatusInvalidArgument {
				return errors.New("Finish of a nil output: want INVALID_ARGUMENT, got " + errString(err))
			}
			if tr.pin.thread.Load() != id || !stays(id) {
				return errors.New("a refused Finish let the goroutine go")
			}
			m, err := tr.Finish([]*Tensor{y})
			if err != nil {
				return err
			}
			defer m.Free()
			if tr.pin.thread.Load() != 0 {
				return errors.New("Finish kept the thread")
			}
			return nil
		}()
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// An end called from another goroutine is refused by the library and
// releases nothing; the goroutine that began it ends it.
func TestEndFromAnotherGoroutine(t *testing.T) {
	begun, other, done := make(chan *Tracer), make(chan struct{}), make(chan error)
	go func() {
		tr, _ := TracerNew("Empty")
		if err := tr.Begin(nil); err != nil {
			done <- err
			return
		}
		begun <- tr
		<-other
		if tr.pin.thread.Load() == 0 {
			done <- errors.New("another goroutine's Abandon released the thread")
			return
		}
		done <- tr.Abandon()
		if tr.pin.thread.Load() != 0 {
			t.Error("Abandon on the trace's goroutine kept the thread")
		}
		tr.Free()
	}()
	tr := <-begun
	var ce *Error
	if err := tr.Abandon(); !errors.As(err, &ce) || ce.Status != StatusRuntime {
		t.Errorf("Abandon from another goroutine: want RUNTIME, got %v", err)
	}
	close(other)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestScopesStayOnTheirThread(t *testing.T) {
	done := make(chan error)
	go func() {
		done <- func() error {
			s, err := AutogradScopeEnter(AutogradScopeKindNoGrad)
			if err != nil {
				return err
			}
			id := currentThread()
			if !stays(id) {
				return errors.New("the goroutine left the thread of its scope")
			}
			if on, _ := AutogradIsGradEnabled(); on {
				return errors.New("grad mode is on inside a NoGrad scope")
			}
			if err := s.Leave(); err != nil {
				return err
			}
			if s.pin.thread.Load() != 0 {
				return errors.New("Leave kept the thread")
			}
			p, err := ProfilerStart(false)
			if err != nil {
				return err
			}
			defer p.Free()
			if !stays(currentThread()) {
				return errors.New("the goroutine left the thread of its profiler")
			}
			return p.Stop()
		}()
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
