package ctorch

// NewOptimizer's zero options are torch's defaults (the same
// steps as the V2 pair), loaders range with All/Epoch, Must/Catch.

import (
	"errors"
	"reflect"
	"testing"
)

// stepOnce makes w = [1, -2, 3] (requires grad), takes one step of opt on
// sum(w*w) and returns w's values.
func stepOnce(t *testing.T, mk func(params []*Tensor) (*Optimizer, error)) []float32 {
	t.Helper()
	w := Must(FromFloat32([]float32{1, -2, 3}, 3))
	defer w.Free()
	Must0(w.SetRequiresGrad(true))
	opt, err := mk([]*Tensor{w})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Free()
	var s Scope
	defer s.Free()
	loss := s.T(Sum(s.T(Mul_Tensor(w, w)), nil))
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	Must0(loss.Backward(nil, false, false, nil))
	Must0(opt.Step())
	return Must(w.Float32s())
}

func TestNewOptimizerZeroOptionsAreTorchDefaults(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatal(r)
		}
	}()
	for _, kind := range []OptimizerKind{OptimizerKindSgd, OptimizerKindAdam, OptimizerKindAdamw, OptimizerKindRmsprop} {
		lr := 0.1
		v2 := Must(OptimOptionsDefaultV2(kind))
		v2.Lr = lr
		want := stepOnce(t, func(p []*Tensor) (*Optimizer, error) { return OptimizerNewV2(kind, p, &v2) })
		got := stepOnce(t, func(p []*Tensor) (*Optimizer, error) {
			return NewOptimizer(kind, p, &OptimizerOptions{Lr: lr})
		})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("kind %d: NewOptimizer stepped to %v, the V2 pair to %v", kind, got, want)
		}
		// nil options: the kind's defaults, every field.
		opt := Must(NewOptimizer(kind, []*Tensor{Must(FromFloat32([]float32{1}, 1))}, nil))
		if g, d := Must(opt.GetOptionsV2(0)), Must(OptimOptionsDefaultV2(kind)); g != d {
			t.Errorf("kind %d: nil options gave %+v, defaults are %+v", kind, g, d)
		}
		opt.Free()
	}
	// A field set to 0 is 0, not the default (AdamW's weight decay is 0.01).
	v, err := (&OptimizerOptions{WeightDecay: Ptr(0.0), Amsgrad: Ptr(true)}).V2(OptimizerKindAdamw)
	if err != nil || v.WeightDecay != 0 || v.Amsgrad != 1 || v.Lr != 1e-3 {
		t.Errorf("AdamW with WeightDecay 0, Amsgrad: %+v, %v", v, err)
	}
}

func TestLoaderRange(t *testing.T) {
	data := Must(FromFloat32([]float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 10, 1))
	targets := Must(FromInt64([]int64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}, 10))
	defer data.Free()
	defer targets.Free()
	loader := Must(DataLoaderNew(data, targets, 4, false, 0, false))
	defer loader.Free()
	var seen []float32
	var sizes []int64
	for x, y := range loader.All() {
		xs, ys := Must(x.Float32s()), Must(y.Int64s())
		for i := range xs {
			if ys[i] != int64(xs[i])*10 {
				t.Errorf("batch pairs %v with %v", xs, ys)
			}
		}
		seen = append(seen, xs...)
		sizes = append(sizes, int64(len(xs)))
	}
	if err := loader.Err(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sizes, []int64{4, 4, 2}) || len(seen) != 10 {
		t.Errorf("batches of %v, values %v", sizes, seen)
	}
	// Epoch reshuffles as StartEpoch + Next do; break ends the loop early.
	sh := Must(DataLoaderNew(data, targets, 3, true, 7, false))
	defer sh.Free()
	var manual, ranged [][]float32
	Must0(sh.StartEpoch(2))
	for {
		ok, x, y, err := sh.Next()
		if err != nil || !ok {
			break
		}
		manual = append(manual, Must(x.Float32s()))
		x.Free()
		y.Free()
	}
	for x := range sh.Epoch(2) {
		ranged = append(ranged, Must(x.Float32s()))
	}
	if !reflect.DeepEqual(manual, ranged) || len(ranged) != 4 {
		t.Errorf("Epoch(2) gave %v; StartEpoch(2) + Next %v", ranged, manual)
	}
	n := 0
	for range sh.Epoch(3) {
		n++
		break
	}
	if n != 1 || sh.Err() != nil {
		t.Errorf("break: %d batches, err %v", n, sh.Err())
	}
}

func TestMustAndCatch(t *testing.T) {
	f := func() (err error) {
		defer Catch(&err)
		a := Must(FromFloat32([]float32{1, 2}, 2))
		b := Must(FromFloat32([]float32{1, 2, 3}, 3))
		Must(Mul_Tensor(a, b)) // shapes [2] and [3]: fails, Catch returns it
		t.Error("Must went on after an error")
		return nil
	}
	var ce *Error
	if err := f(); !errors.As(err, &ce) {
		t.Errorf("Catch gave %v, want the *Error of Mul_Tensor", err)
	}
	defer func() {
		if r := recover(); r != "not ours" {
			t.Errorf("Catch swallowed or changed another panic: %v", r)
		}
	}()
	func() {
		var err error
		defer Catch(&err)
		panic("not ours")
	}()
}
