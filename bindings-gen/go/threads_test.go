package ctorch

// Goroutines sharing exclusive handles without a
// lock get errors (StatusBusy), never a crash; an empty, non-nil []string is
// an empty list, not a panic.

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// busyOnly fails t unless err is nil or a StatusBusy error.
func busyOnly(t *testing.T, what string, err error, busy *int64, mu *sync.Mutex) {
	if err == nil {
		return
	}
	var e *Error
	if errors.As(err, &e) && e.Status == StatusBusy {
		mu.Lock()
		*busy++
		mu.Unlock()
		return
	}
	t.Errorf("%s: %v (only nil or StatusBusy allowed)", what, err)
}

// 8 goroutines train one parameter through one optimizer and its scheduler
// and read one loader, with no lock of their own (this crashed 3
// of 18 runs).
func TestGoroutinesShareExclusiveHandles(t *testing.T) {
	w := Must(FromFloat32(make([]float32, 64), 64))
	x := Must(FromFloat32(make([]float32, 64), 64))
	defer w.Free()
	defer x.Free()
	Must0(w.SetRequiresGrad(true))
	opt := Must(NewOptimizer(OptimizerKindSgd, []*Tensor{w}, &OptimizerOptions{Lr: 0.01}))
	defer opt.Free()
	sched := Must(LrSchedulerStepLr(opt, 10, 0.9))
	defer sched.Free()
	data := Must(FromFloat32(make([]float32, 400), 400, 1))
	defer data.Free()
	loader := Must(DataLoaderNew(data, nil, 4, false, 0, false))
	defer loader.Free()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var busy, batches int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				var s Scope
				loss := s.T(Sum(s.T(Mul_Tensor(w, x)), nil))
				if s.Err() == nil {
					busyOnly(t, "backward", loss.Backward(nil, false, false, nil), &busy, &mu)
				} else {
					t.Errorf("forward: %v", s.Err())
				}
				s.Free()
				busyOnly(t, "Step", opt.Step(), &busy, &mu)
				busyOnly(t, "ZeroGrad", opt.ZeroGrad(i%2 == 0), &busy, &mu)
				busyOnly(t, "scheduler Step", sched.Step(), &busy, &mu)
				has, b, _, err := loader.Next()
				busyOnly(t, "loader Next", err, &busy, &mu)
				if has {
					mu.Lock()
					batches++
					mu.Unlock()
					b.Free()
				}
			}
		}(g)
	}
	wg.Wait()
	if batches > 100 {
		t.Errorf("%d batches from a 100-batch epoch", batches)
	}
	t.Logf("%d calls got StatusBusy", busy)
}

func TestEmptyStringSlices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.pt")
	// No entries: an empty checkpoint, as torch.save({}) (this panicked).
	if err := SaveDict(path, []string{}, []*Tensor{}); err != nil {
		t.Fatalf("SaveDict with no entries: %v", err)
	}
	d, err := LoadDict(path)
	if err != nil {
		t.Fatalf("LoadDict of the empty checkpoint: %v", err)
	}
	d.Free()
	os.Remove(path)
}
