// Command apicheck exercises the header functions generated from api.json
// (hfuncs_gen.go): outputs returned, caller buffers sized by buffer_size
// (a "query" and a "reported" rule), handle types with their functions as
// methods, a scope released by Leave whatever the status, the inline
// helpers and the mirrored structs. Prints "N passed, 0 failed".
package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	ctorch "github.com/ctorch/ctorch-go"
)

var passed, failed int

func expect(name string, ok bool, got ...interface{}) {
	if ok {
		passed++
		return
	}
	failed++
	fmt.Println("FAIL", name, fmt.Sprint(got...))
}

func main() {
	t, err := ctorch.FromInt64([]int64{0, 1, 2, 3, 4, 5}, 2, 3)
	expect("FromInt64", err == nil, err)
	d, _ := t.Dim()
	expect("Dim", d == 2, d)
	s, _ := t.Sizes() // "query": ctorch_tensor_dim elements
	expect("Sizes", reflect.DeepEqual(s, []int64{2, 3}), s)
	st, _ := t.Strides()
	expect("Strides", reflect.DeepEqual(st, []int64{3, 1}), st)
	b, _ := t.CopyTo() // numel * dtype_size bytes
	expect("CopyTo", len(b) == 48, len(b))
	v, _ := t.Int64s()
	expect("Int64s", reflect.DeepEqual(v, []int64{0, 1, 2, 3, 4, 5}), v)
	c, _ := t.IsContiguous()
	expect("IsContiguous", c, c)
	dt, _ := t.Dtype()
	expect("Dtype", dt == ctorch.DTypeInt64, dt)
	// Python's str(t) (ctorch_tensor_format).
	expect("String", t.String() == "tensor([[0, 1, 2],\n        [3, 4, 5]])", t.String())

	// An error: its message comes back through the ticket (the "reported" rule sizes the buffer).
	_, err = t.ItemDouble()
	var ce *ctorch.Error
	expect("error", errors.As(err, &ce) && ce.Status != 0 && strings.Contains(ce.Message, "ctorch_tensor_item_double"), err)

	sc, err := ctorch.AutogradScopeEnter(ctorch.AutogradScopeKind(0))
	expect("AutogradScopeEnter", err == nil, err)
	on, _ := ctorch.AutogradIsGradEnabled()
	expect("grad off", !on, on)
	expect("Leave", sc.Leave() == nil)
	on, _ = ctorch.AutogradIsGradEnabled()
	expect("grad on again", on, on)

	// api.json length_from: names, values and texts share n.
	hpDir, err := os.MkdirTemp("", "ctorch_go_hparams_")
	expect("MkdirTemp", err == nil, err)
	tb, err := ctorch.SummaryWriterNew(hpDir, nil)
	expect("SummaryWriterNew", err == nil, err)
	err = tb.AddHparams([]string{"a", "b"}, []float64{1}, nil, nil, nil, nil)
	expect("AddHparams refuses lengths that differ", err != nil && strings.Contains(err.Error(), "share one length"), err)
	expect("AddHparams", tb.AddHparams([]string{"a"}, []float64{1}, nil, nil, nil, nil) == nil)
	tb.Free()
	expect("the writer's folder removed", os.RemoveAll(hpDir) == nil)

	// api.json length_of: slices sharing one C length must agree, or C would
	// read past the shorter one (names and tensors, metadata keys and values).
	lenDir, err := os.MkdirTemp("", "ctorch_go_lengths_")
	expect("MkdirTemp", err == nil, err)
	lx, _ := ctorch.FromFloat32([]float32{1, 2}, 2)
	ly, _ := ctorch.FromFloat32([]float32{3, 4, 5}, 3)
	stPath := lenDir + "/t.safetensors"
	for i, call := range []func() error{
		func() error {
			return ctorch.SafetensorsSave(stPath, []string{"t"}, []*ctorch.Tensor{lx}, []string{"k1", "k2"}, []string{"v1"})
		},
		func() error { return ctorch.SafetensorsSave(stPath, []string{"a"}, []*ctorch.Tensor{lx, ly}, nil, nil) },
		func() error {
			return ctorch.SafetensorsSave(stPath, []string{"a", "b"}, []*ctorch.Tensor{lx}, nil, nil)
		},
		func() error { return ctorch.SaveDict(lenDir+"/t.pt", []string{"a"}, []*ctorch.Tensor{lx, ly}) },
	} {
		err := call()
		expect(fmt.Sprintf("lengths that differ refused (case %d)", i), err != nil && strings.Contains(err.Error(), "they share one length"), err)
	}
	left, _ := os.ReadDir(lenDir)
	expect("nothing written", len(left) == 0, left)
	expect("SafetensorsSave", ctorch.SafetensorsSave(stPath, []string{"a", "b"}, []*ctorch.Tensor{lx, ly}, []string{"k"}, []string{"v"}) == nil)
	left, _ = os.ReadDir(lenDir)
	expect("the file written", len(left) == 1, left)
	lx.Free()
	ly.Free()
	expect("the folder removed", os.RemoveAll(lenDir) == nil)

	w, _ := ctorch.FromFloat32([]float32{1, 2, 3}, 3)
	expect("SetRequiresGrad", w.SetRequiresGrad(true) == nil)
	opts, err := ctorch.OptimOptionsDefault(ctorch.OptimizerKindSgd)
	expect("OptimOptionsDefault", err == nil && opts.Lr > 0, opts)
	opt, err := ctorch.OptimizerNew(ctorch.OptimizerKindSgd, []*ctorch.Tensor{w}, &opts)
	expect("OptimizerNew", err == nil, err)
	n, _ := opt.NumParamGroups()
	expect("NumParamGroups", n == 1, n)
	expect("SetLr", opt.SetLr(0, 0.25) == nil)
	lr, _ := opt.GetLr(0)
	expect("GetLr", lr == 0.25, lr)
	opt.Free()

	one := ctorch.ScalarInt(1) // the header's inline helper, through cgo
	r, err := ctorch.Add_Tensor(w, w, one)
	expect("Add_Tensor", err == nil, err)
	f, _ := r.Float32s()
	expect("Float32s", reflect.DeepEqual(f, []float32{2, 4, 6}), f)
	dev, _ := w.Device()
	expect("Device", dev.Type == ctorch.DeviceTypeCpu, dev)
	expect("DeviceCpu", ctorch.DeviceCpu().Type == ctorch.DeviceTypeCpu)

	// Scope: records an expression's tensors and its first error.
	var sc2 ctorch.Scope
	sum := sc2.T(ctorch.Sum(sc2.T(ctorch.Mul_Tensor(w, w)), nil))
	sv, _ := sum.ItemDouble()
	expect("Scope", sc2.Err() == nil && sv == 14, sc2.Err(), sv)
	kept := sc2.Keep(sc2.T(ctorch.Relu(w)))
	bad := sc2.T(ctorch.Mm(w, w))    // 1-D: refused
	after := sc2.T(ctorch.Relu(bad)) // nil input: refused too; the first error stays
	expect("Scope first error", bad == nil && after == nil && sc2.Err() != nil &&
		strings.Contains(sc2.Err().Error(), "mm"), sc2.Err())
	expect("Scope.Free", sc2.Free() != nil && sum.Handle() == nil && kept.Handle() != nil)
	kept.Free()
	expect("InferenceMode", ctorch.InferenceMode(func() error {
		on, _ := ctorch.AutogradIsGradEnabled()
		if on {
			return errors.New("grad on under InferenceMode")
		}
		return nil
	}) == nil)

	nnChecks()
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
