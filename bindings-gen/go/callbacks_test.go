package ctorch

// Go functions as the library's callbacks (LambdaLR, MultiplicativeLR,
// StepClosure), waiting for busy handles (SetBusyTimeout), Go ints as
// tensors and torch's names for dtypes and devices.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// twoGroups is SGD over two parameters in two groups, lr 0.1 and 0.05.
func twoGroups(t *testing.T) (*Optimizer, func()) {
	a, b := Must(FromFloat32([]float32{1}, 1)), Must(FromFloat32([]float32{2}, 1))
	opt := Must(NewOptimizer(OptimizerKindSgd, []*Tensor{a}, &OptimizerOptions{Lr: 0.1}))
	o := Must(OptimOptionsDefaultV2(OptimizerKindSgd))
	o.Lr = 0.05
	Must0(opt.AddParamGroupV2([]*Tensor{b}, &o))
	return opt, func() { opt.Free(); a.Free(); b.Free() }
}

// The lambdas of go_lr_lambda.py, written the same way in Python.
var (
	lambdaA = func(e int64) float64 { return 1 / float64(e+1) }
	lambdaB = func(e int64) float64 { return 1 - float64(0.05*float64(e)) } // (the conversion rounds: no FMA)
	multA   = func(e int64) float64 {
		if e%3 == 0 {
			return 0.5
		}
		return 0.95
	}
)

// lrSequences gives, for each schedule of go_lr_lambda.py, both groups' lrs
// after creation and after each of 10 steps.
func lrSequences(t *testing.T) map[string][][]float64 {
	out := map[string][][]float64{}
	for _, c := range []struct {
		name string
		mk   func(*Optimizer) (*LrScheduler, error)
	}{
		{"lambda", func(o *Optimizer) (*LrScheduler, error) { return NewLambdaLR(o, lambdaA) }},
		{"lambda_per_group", func(o *Optimizer) (*LrScheduler, error) { return NewLambdaLR(o, lambdaA, lambdaB) }},
		{"multiplicative", func(o *Optimizer) (*LrScheduler, error) { return NewMultiplicativeLR(o, multA) }},
	} {
		opt, free := twoGroups(t)
		s, err := c.mk(opt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for i := 0; i <= 10; i++ {
			if i > 0 {
				Must0(opt.Step())
				Must0(s.Step())
			}
			out[c.name] = append(out[c.name], []float64{Must(opt.GetLr(0)), Must(opt.GetLr(1))})
			if l := Must(s.GetLastLr(1)); l != Must(opt.GetLr(1)) {
				t.Errorf("%s: GetLastLr %v, the optimizer's lr %v", c.name, l, Must(opt.GetLr(1)))
			}
		}
		s.Free()
		free()
	}
	return out
}

// TestLambdaLRMatchesTorch compares the sequences with PyTorch's, which
// tests/bindings/go_lr_lambda.py writes to $CTORCH_GO_TORCH_LRS (the ctest
// fixture binding_go_lr_lambda_torch); skipped without them.
func TestLambdaLRMatchesTorch(t *testing.T) {
	path := os.Getenv("CTORCH_GO_TORCH_LRS")
	if path == "" {
		t.Skip("CTORCH_GO_TORCH_LRS unset: no PyTorch sequences to compare with")
	}
	text, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s is missing (binding_go_lr_lambda_torch, which writes it, was skipped)", path)
	}
	var want map[string][][]float64
	if err := errors.Join(err, json.Unmarshal(text, &want)); err != nil {
		t.Fatal(err)
	}
	got := lrSequences(t)
	if len(want) != len(got) {
		t.Fatalf("PyTorch gave %d schedules, Go %d", len(want), len(got))
	}
	for name, w := range want {
		if !reflect.DeepEqual(got[name], w) { // the same float operations: bit for bit
			t.Errorf("%s: Go %v\nPyTorch %v", name, got[name], w)
		}
	}
}

func TestLambdaLRErrors(t *testing.T) {
	opt, free := twoGroups(t)
	defer free()
	// A panic at epoch 3: that step fails with the panic's text, the lrs stay.
	s := Must(NewLambdaLR(opt, func(e int64) float64 {
		if e == 3 {
			panic("no factor for epoch 3")
		}
		return 1
	}))
	defer s.Free()
	Must0(s.Step())
	Must0(s.Step())
	err := s.Step()
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusRuntime || !strings.Contains(e.Message, "no factor for epoch 3") ||
		!strings.Contains(e.Message, "epoch 3") {
		t.Errorf("panicking lambda: %v", err)
	}
	if lr := Must(opt.GetLr(0)); lr != 0.1 {
		t.Errorf("lr %v after the failed step, want 0.1", lr)
	}
	// A Must inside the lambda: its error's status.
	_, want := FromFloat32([]float32{1, 2}, 3) // 2 values for 3 elements
	bad := Must(NewMultiplicativeLR(opt, func(int64) float64 {
		Must(FromFloat32([]float32{1, 2}, 3))
		return 1
	}))
	defer bad.Free()
	if err := bad.Step(); want == nil || !errors.As(err, &e) || e.Status != want.(*Error).Status {
		t.Errorf("Must in a lambda: %v (the call's own error: %v)", err, want)
	}
	// Python: "Expected 2 lr_lambdas, but got 3".
	if _, err := NewLambdaLR(opt, lambdaA, lambdaA, lambdaA); !errors.As(err, &e) || e.Status != StatusValue {
		t.Errorf("3 lambdas for 2 groups: %v", err)
	}
	for _, fns := range [][]func(int64) float64{nil, {nil}} {
		if _, err := NewLambdaLR(opt, fns...); !errors.As(err, &e) || e.Status != StatusInvalidArgument {
			t.Errorf("lambdas %v: %v", fns, err)
		}
	}
	if _, err := NewLambdaLR(nil, lambdaA); err == nil {
		t.Error("nil optimizer accepted")
	}
}

func TestStepClosure(t *testing.T) {
	w := Must(FromFloat32([]float32{1, -2}, 2))
	defer w.Free()
	Must0(w.SetRequiresGrad(true))
	opt := Must(NewOptimizer(OptimizerKindSgd, []*Tensor{w}, &OptimizerOptions{Lr: 0.5}))
	defer opt.Free()
	loss := func() (float64, error) {
		var s Scope
		defer s.Free()
		Must0(opt.ZeroGrad(true)) // the held optimizer, from its own closure
		l := s.T(Sum(s.T(Mul_Tensor(w, w)), nil))
		Must0(l.Backward(nil, false, false, nil))
		return l.ItemDouble()
	}
	if v, err := opt.StepClosure(loss); err != nil || v != 5 {
		t.Fatalf("StepClosure: %v, %v; want 5", v, err)
	}
	if got := Must(w.Float32s()); !reflect.DeepEqual(got, []float32{0, 0}) { // w - 0.5 * 2w
		t.Errorf("w %v after the step, want [0 0]", got)
	}
	var e *Error
	if _, err := opt.StepClosure(func() (float64, error) { panic("closure boom") }); err == nil ||
		!strings.Contains(err.Error(), "closure boom") {
		t.Errorf("panicking closure: %v", err)
	}
	sentinel := &Error{Status: StatusValue, Message: "mine"}
	if _, err := opt.StepClosure(func() (float64, error) { return 0, sentinel }); !errors.Is(err, sentinel) ||
		!errors.As(err, &e) || e.Status != StatusValue {
		t.Errorf("failing closure: %v", err)
	}
	if _, err := opt.StepClosure(nil); !errors.As(err, &e) || e.Status != StatusInvalidArgument {
		t.Errorf("nil closure: %v", err)
	}
	// LBFGS evaluates the loss several times: StepClosure with the forward
	// inside converges; BackwardStep's second evaluation is refused.
	Must0(InitOnes_(w))
	lb := Must(NewOptimizer(OptimizerKindLbfgs, []*Tensor{w}, nil))
	defer lb.Free()
	if _, err := lb.StepClosure(loss); err != nil {
		t.Fatalf("LBFGS StepClosure: %v", err)
	}
	if l := Must(loss()); l > 1e-6 {
		t.Errorf("LBFGS left sum(w*w) at %v", l)
	}
	Must0(InitOnes_(w)) // away from the minimum, where LBFGS stops after one evaluation
	l := Must(Sum(Must(Mul_Tensor(w, w)), nil))
	defer l.Free()
	if err := lb.BackwardStep(l); !errors.As(err, &e) || e.Status != StatusInvalidArgument ||
		!strings.Contains(e.Message, "StepClosure") {
		t.Errorf("LBFGS BackwardStep: %v", err)
	}
}

// trainShared trains w (4 floats) with SGD, lr 1, on the 100 batches of one
// loader, from `goroutines` goroutines sharing the loader and the optimizer,
// each step one StepClosure on sum(w * x): every step subtracts its batch's
// column sums, exact in float32 in any order. It returns the steps taken
// and the final w.
func trainShared(t *testing.T, goroutines int) (int64, []float32) {
	data := make([]float32, 200*4)
	for i := range data {
		data[i] = float32(i%7 - 3)
	}
	x := Must(FromFloat32(data, 200, 4))
	defer x.Free()
	loader := Must(DataLoaderNew(x, nil, 2, true, 5, false))
	defer loader.Free()
	w := Must(FromFloat32([]float32{0.5, -1, 2, 100}, 4))
	defer w.Free()
	Must0(w.SetRequiresGrad(true))
	opt := Must(NewOptimizer(OptimizerKindSgd, []*Tensor{w}, &OptimizerOptions{Lr: 1}))
	defer opt.Free()
	Must0(loader.StartEpoch(0))
	var steps int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				has, b, _, err := loader.Next()
				if err != nil || !has {
					if err != nil {
						t.Errorf("Next: %v", err)
					}
					return
				}
				_, err = opt.StepClosure(func() (float64, error) {
					var s Scope
					defer s.Free()
					if err := opt.ZeroGrad(true); err != nil {
						return 0, err
					}
					l := s.T(Sum(s.T(Mul_Tensor(w, b)), nil))
					if s.Err() != nil {
						return 0, s.Err()
					}
					return 0, l.Backward(nil, false, false, nil)
				})
				b.Free()
				if err != nil {
					t.Errorf("step: %v", err)
					return
				}
				mu.Lock()
				steps++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return steps, Must(w.Float32s())
}

// With SetBusyTimeout, 8 goroutines sharing one loader and one optimizer
// take every batch and apply every step: the serial run's count and weights.
func TestBusyTimeoutAppliesEveryStep(t *testing.T) {
	if prev := SetBusyTimeout(10 * time.Second); prev != 0 {
		t.Errorf("default busy timeout %v, want 0", prev)
	}
	defer SetBusyTimeout(0)
	n1, w1 := trainShared(t, 1)
	n8, w8 := trainShared(t, 8)
	if n1 != 100 || n8 != 100 {
		t.Errorf("steps: %d serial, %d from 8 goroutines; the epoch has 100 batches", n1, n8)
	}
	if !reflect.DeepEqual(w1, w8) {
		t.Errorf("weights: %v serial, %v from 8 goroutines", w1, w8)
	}
	if SetBusyTimeout(-time.Second) != 10*time.Second || SetBusyTimeout(0) != 0 {
		t.Error("SetBusyTimeout: a negative timeout is 0")
	}
}

func TestIntSlices(t *testing.T) {
	a := Must(FromInt([]int{1, -2, 3, 1 << 40}, 2, 2))
	defer a.Free()
	if d := Must(a.Dtype()); d != DTypeInt64 {
		t.Errorf("FromInt made %v", d)
	}
	if got := Must(a.Ints()); !reflect.DeepEqual(got, []int{1, -2, 3, 1 << 40}) {
		t.Errorf("Ints: %v", got)
	}
	if got := Must(a.Int64s()); !reflect.DeepEqual(got, []int64{1, -2, 3, 1 << 40}) {
		t.Errorf("Int64s: %v", got)
	}
	g := Must(FromSlice([]int{7})) // no shape: 1-dim, as torch.tensor([7])
	defer g.Free()
	if s := Must(g.Sizes()); !reflect.DeepEqual(s, []int64{1}) {
		t.Errorf("FromSlice([]int{7}) has shape %v, want [1]", s)
	}
	z := Must(FromSlice([]int{7}, []int64{}...)) // an empty shape: 0-dim, as torch.tensor(7)
	defer z.Free()
	if s := Must(z.Sizes()); len(s) != 0 {
		t.Errorf("FromSlice([]int{7}, []int64{}...) has shape %v, want []", s)
	}
	if got := Must(ToSlice[int](g)); !reflect.DeepEqual(got, []int{7}) {
		t.Errorf("ToSlice[int]: %v", got)
	}
	f := Must(FromFloat32([]float32{1}, 1))
	defer f.Free()
	var e *Error
	if _, err := f.Ints(); !errors.As(err, &e) || e.Status != StatusType {
		t.Errorf("Ints of a float32 tensor: %v", err)
	}
}

func TestDTypeAndDeviceNames(t *testing.T) {
	for _, c := range []struct {
		v    fmt.Stringer
		want string
	}{
		{DTypeFloat32, "torch.float32"}, {DTypeInt64, "torch.int64"}, {DTypeBool, "torch.bool"},
		{DTypeBfloat16, "torch.bfloat16"}, {DType(0), "DType(0)"},
		{CPU, "cpu"}, {Device{DeviceTypeCuda, 0}, "cuda:0"}, {Device{DeviceTypeCuda, -1}, "cuda"},
		{Device{DeviceTypeMeta, -1}, "meta"}, {DeviceTypeMps, "mps"}, {DeviceType(42), "DeviceType(42)"},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("%#v prints %q, want %q", c.v, got, c.want)
		}
	}
	x := Must(FromFloat64([]float64{1}, 1))
	defer x.Free()
	if got := fmt.Sprint(Must(x.Dtype()), " ", Must(x.Device())); got != "torch.float64 cpu" {
		t.Errorf("a tensor's dtype and device print as %q", got)
	}
}
