package ctorch

// A typed accessor refuses a tensor of another dtype (an int64
// tensor's bytes read as float32 were [1e-45 0 3e-45 0]); each constructor
// makes its own dtype.

import (
	"errors"
	"reflect"
	"testing"
	"unsafe"
)

type dtypeCase struct {
	name string
	dt   DType
	make func() (*Tensor, error)
	get  func(*Tensor) (any, error)
	want any // what make stored, as get returns it
}

func dtypeCases() []dtypeCase {
	return []dtypeCase{
		{"float32", DTypeFloat32, func() (*Tensor, error) { return FromFloat32([]float32{1, 2.5}, 2) },
			func(t *Tensor) (any, error) { return t.Float32s() }, []float32{1, 2.5}},
		{"float64", DTypeFloat64, func() (*Tensor, error) { return FromFloat64([]float64{1, -2.5}, 2) },
			func(t *Tensor) (any, error) { return t.Float64s() }, []float64{1, -2.5}},
		{"int64", DTypeInt64, func() (*Tensor, error) { return FromInt64([]int64{1, 2}, 2) },
			func(t *Tensor) (any, error) { return t.Int64s() }, []int64{1, 2}},
		{"int32", DTypeInt32, func() (*Tensor, error) { return FromInt32([]int32{1, -2}, 2) },
			func(t *Tensor) (any, error) { return t.Int32s() }, []int32{1, -2}},
		{"uint8", DTypeUint8, func() (*Tensor, error) { return FromUint8([]uint8{1, 255}, 2) },
			func(t *Tensor) (any, error) { return t.Uint8s() }, []uint8{1, 255}},
		{"bool", DTypeBool, func() (*Tensor, error) { return FromBool([]bool{true, false}, 2) },
			func(t *Tensor) (any, error) { return t.Bools() }, []bool{true, false}},
		{"int16", DTypeInt16, func() (*Tensor, error) { return FromSlice([]int16{1, -2}, 2) },
			func(t *Tensor) (any, error) { return ToSlice[int16](t) }, []int16{1, -2}},
		{"int8", DTypeInt8, func() (*Tensor, error) { return FromSlice([]int8{1, -2}, 2) },
			func(t *Tensor) (any, error) { return ToSlice[int8](t) }, []int8{1, -2}},
		{"complex64", DTypeComplex64, func() (*Tensor, error) { return FromSlice([]complex64{1 + 2i, 3}, 2) },
			func(t *Tensor) (any, error) { return ToSlice[complex64](t) }, []complex64{1 + 2i, 3}},
		{"complex128", DTypeComplex128, func() (*Tensor, error) { return FromSlice([]complex128{1 - 2i, 3}, 2) },
			func(t *Tensor) (any, error) { return ToSlice[complex128](t) }, []complex128{1 - 2i, 3}},
	}
}

func TestTypedAccessorsCheckTheDType(t *testing.T) {
	cases := dtypeCases()
	for _, mk := range cases {
		x, err := mk.make()
		if err != nil {
			t.Fatalf("%s: %v", mk.name, err)
		}
		if dt, err := x.Dtype(); err != nil || dt != mk.dt {
			t.Errorf("the %s constructor made dtype %d (%v), want %d", mk.name, dt, err, mk.dt)
		}
		for _, acc := range cases {
			v, err := acc.get(x)
			if acc.dt == mk.dt {
				if err != nil || !reflect.DeepEqual(v, mk.want) {
					t.Errorf("%s accessor on a %s tensor: %v, %v; want %v", acc.name, mk.name, v, err, mk.want)
				}
				continue
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Status != StatusType {
				t.Errorf("%s accessor on a %s tensor: %v, %v; want a StatusType error", acc.name, mk.name, v, err)
			}
			if rv := reflect.ValueOf(v); rv.Len() != 0 {
				t.Errorf("%s accessor on a %s tensor returned data %v beside the error", acc.name, mk.name, v)
			}
		}
		x.Free()
	}
	// The exact case, and its message.
	x, _ := FromInt64([]int64{1, 2}, 2)
	defer x.Free()
	if f, err := x.Float32s(); err == nil {
		t.Errorf("FromInt64(...).Float32s() = %v, nil; want an error", f)
	} else if want := "CTORCH_TYPE: ToSlice: the tensor's dtype is int64, not float32 (Go float32); convert it first"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	// A shape whose numel is not the data's length is refused by the library.
	if y, err := FromFloat32([]float32{1, 2, 3}, 2); err == nil {
		y.Free()
		t.Error("FromFloat32 of 3 values with shape [2]: no error")
	}
}

// Bool memory holding bytes other than 0/1 (view_dtype of
// uint8) is read as 0/1, never copied into Go bools as it is (a Go bool
// holding 5 is neither == true nor == false).
func TestBoolBytesReadAsZeroOrOne(t *testing.T) {
	u := Must(FromUint8([]uint8{5, 0, 255, 1}, 4))
	defer u.Free()
	b := Must(View_dtype(u, DTypeBool))
	defer b.Free()
	got, err := b.Bools()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, true, true} {
		if got[i] != want || *(*uint8)(unsafe.Pointer(&got[i])) > 1 {
			t.Errorf("element %d: %v (byte %d), want %v", i, got[i], *(*uint8)(unsafe.Pointer(&got[i])), want)
		}
	}
}
