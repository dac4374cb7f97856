package nn

// No exported function or method of package nn panics on nil or
// zero values; options are typed (Conv's padding: a list or a string).

import (
	"fmt"
	"reflect"
	"testing"

	ctorch "github.com/ctorch/ctorch-go"
	"github.com/ctorch/ctorch-go/internal/zerocall"
)

func TestExportsListed(t *testing.T) { zerocall.CheckComplete(t, ".", exportedFuncs, exportedTypes) }

func TestNilAndZeroValuesDoNotPanic(t *testing.T) {
	nf, nm := zerocall.Sweep(t, exportedFuncs, exportedTypes, nil)
	fmt.Printf("nil/zero sweep of package nn: %d functions, %d methods (on a nil and a zero receiver)\n", nf, nm)
	if nf < 50 || nm < 25 {
		t.Errorf("the sweep called only %d functions and %d methods", nf, nm)
	}
	var m *Module
	m.Free()
	if err := m.Train(); err == nil {
		t.Error("Train on a nil Module: no error")
	}
	if s, err := Sequential(nil); err == nil {
		t.Errorf("Sequential(nil) = %v, nil; want an error", s)
	}
}

func TestConvPaddingIsTyped(t *testing.T) {
	x, _ := ctorch.FromFloat32(make([]float32, 1*1*8*8), 1, 1, 8, 8)
	defer x.Free()
	for _, c := range []struct {
		opts *Conv2dOptions
		want []int64
	}{
		{nil, []int64{1, 6, 4, 4}},
		{&Conv2dOptions{Padding: []int64{2}}, []int64{1, 6, 8, 8}},
		{&Conv2dOptions{PaddingString: "same"}, []int64{1, 6, 8, 8}},
		{&Conv2dOptions{PaddingString: "valid"}, []int64{1, 6, 4, 4}},
	} {
		conv, err := NewConv2d(1, 6, []int64{5}, c.opts)
		if err != nil {
			t.Fatalf("%+v: %v", c.opts, err)
		}
		y, err := conv.Forward(x)
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := y.Sizes(); !reflect.DeepEqual(s, c.want) {
			t.Errorf("%+v: output %v, want %v", c.opts, s, c.want)
		}
		y.Free()
		conv.Free()
	}
	if conv, err := NewConv2d(1, 6, []int64{5}, &Conv2dOptions{Padding: []int64{1}, PaddingString: "same"}); err == nil {
		conv.Free()
		t.Error("padding given as a list and a string: no error")
	}
}
