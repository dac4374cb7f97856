package ctorch

// The Go face of the hand-written C API that the generated wrappers
// (hfuncs_gen.go: every header function, typed) leave to the language:
// tensors from and to typed Go slices, the Stringer, and grad mode on one OS
// thread.

// #include <stdlib.h>
// #include "ctorch.h"
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

func asBytes[T any](data []T) []byte {
	if len(data) == 0 {
		return []byte{}
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), len(data)*int(unsafe.Sizeof(z)))
}

// Element is a Go element type with a torch dtype: what FromSlice and
// ToSlice take. (Go has no float16/bfloat16: convert such tensors with ToOp
// or the generated casts first.)
type Element interface {
	float32 | float64 | int | int64 | int32 | int16 | int8 | uint8 | bool | complex64 | complex128
}

// DTypeOf is the dtype of T's elements.
func DTypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return DTypeFloat32
	case float64:
		return DTypeFloat64
	case int64:
		return DTypeInt64
	case int: // Go's int: int64 where it has 64 bits
		if unsafe.Sizeof(z) == 8 {
			return DTypeInt64
		}
		return DTypeInt32
	case int32:
		return DTypeInt32
	case int16:
		return DTypeInt16
	case int8:
		return DTypeInt8
	case uint8:
		return DTypeUint8
	case bool:
		return DTypeBool
	case complex64:
		return DTypeComplex64
	}
	return DTypeComplex128
}

// FromSlice copies data into a new CPU tensor of T's dtype and the given
// shape; none is a 1-dim tensor of len(data), as torch.tensor(list) makes,
// and an empty non-nil shape (FromSlice(data, []int64{}...)) a 0-dim one.
// The library refuses a shape whose numel is not len(data).
func FromSlice[T Element](data []T, shape ...int64) (*Tensor, error) {
	if shape == nil {
		shape = []int64{int64(len(data))}
	}
	t, err := TensorFromData(asBytes(data), shape, DTypeOf[T]())
	runtime.KeepAlive(data)
	return t, err
}

// ToSlice copies t's elements (row-major) into a new []T. It fails, copying
// nothing, unless t's dtype is T's: the bytes of an int64 tensor are not
// float32s (convert with t.ToDtype-style ops first).
func ToSlice[T Element](t *Tensor) ([]T, error) {
	want := DTypeOf[T]()
	got, err := t.Dtype()
	if err != nil {
		return nil, err
	}
	if got != want {
		return nil, &Error{Status: StatusType, Message: fmt.Sprintf(
			"ToSlice: the tensor's dtype is %s, not %s (Go %T); convert it first", dtypeName(got), dtypeName(want), *new(T))}
	}
	b, err := t.CopyTo()
	if err != nil {
		return nil, err
	}
	var z T
	out := make([]T, len(b)/int(unsafe.Sizeof(z)))
	copy(asBytes(out), b)
	return out, nil
}

func dtypeName(d DType) string {
	if n, ok := dtypeNames[d]; ok {
		return n
	}
	return fmt.Sprintf("dtype %d", int32(d))
}

// String is torch's name of the dtype: "torch.float32" (fmt prints it so;
// %d still prints the number).
func (d DType) String() string {
	if n, ok := dtypeNames[d]; ok {
		return "torch." + n
	}
	return fmt.Sprintf("DType(%d)", int32(d))
}

var deviceTypeNames = map[DeviceType]string{DeviceTypeCpu: "cpu", DeviceTypeCuda: "cuda", DeviceTypeMeta: "meta",
	DeviceTypeMps: "mps", DeviceTypeXpu: "xpu", DeviceTypeHip: "hip"}

// String is torch's name of the device type: "cpu", "cuda".
func (t DeviceType) String() string {
	if n, ok := deviceTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("DeviceType(%d)", int32(t))
}

// String is str(torch.device): "cpu", "cuda:0"; no index when Index is -1
// (the current device).
func (d Device) String() string {
	if d.Index < 0 {
		return d.Type.String()
	}
	return fmt.Sprintf("%s:%d", d.Type, d.Index)
}

// The typed pairs of FromSlice and ToSlice (shapes as FromSlice's): each
// accessor fails on a tensor of another dtype.

// FromFloat32 copies data into a new float32 tensor of the given shape.
func FromFloat32(data []float32, shape ...int64) (*Tensor, error) { return FromSlice(data, shape...) }

// FromFloat64 copies data into a new float64 tensor of the given shape.
func FromFloat64(data []float64, shape ...int64) (*Tensor, error) { return FromSlice(data, shape...) }

// FromInt64 copies data into a new int64 tensor of the given shape.
func FromInt64(data []int64, shape ...int64) (*Tensor, error) { return FromSlice(data, shape...) }

// FromInt copies data (Go ints) into a new int64 tensor of the given shape
// (int32 where Go's int has 32 bits).
func FromInt(data []int, shape ...int64) (*Tensor, error) { return FromSlice(data, shape...) }

// FromInt32 copies data into a new int32 tensor of the given shape.
func FromInt32(data []int32, shape ...int64) (*Tensor, error) { return FromSlice(data, shape...) }

// FromUint8 copies data into a new uint8 tensor of the given shape.
func FromUint8(data []uint8, shape ...int64) (*Tensor, error) { return FromSlice(data, shape...) }

// FromBool copies data into a new bool tensor of the given shape.
func FromBool(data []bool, shape ...int64) (*Tensor, error) { return FromSlice(data, shape...) }

// Float32s copies the elements of a float32 tensor; an error for any other dtype.
func (t *Tensor) Float32s() ([]float32, error) { return ToSlice[float32](t) }

// Float64s copies the elements of a float64 tensor; an error for any other dtype.
func (t *Tensor) Float64s() ([]float64, error) { return ToSlice[float64](t) }

// Int64s copies the elements of an int64 tensor; an error for any other dtype.
func (t *Tensor) Int64s() ([]int64, error) { return ToSlice[int64](t) }

// Ints copies the elements of an int64 tensor as Go ints; an error for any other dtype.
func (t *Tensor) Ints() ([]int, error) { return ToSlice[int](t) }

// Int32s copies the elements of an int32 tensor; an error for any other dtype.
func (t *Tensor) Int32s() ([]int32, error) { return ToSlice[int32](t) }

// Uint8s copies the elements of a uint8 tensor; an error for any other dtype.
func (t *Tensor) Uint8s() ([]uint8, error) { return ToSlice[uint8](t) }

// Bools copies the elements of a bool tensor; an error for any other dtype.
func (t *Tensor) Bools() ([]bool, error) { return ToSlice[bool](t) }

// String renders the tensor as Python's str(tensor) does (summarised
// beyond SetPrintOptions' threshold); libtorch's printing for what that
// format does not cover (sparse, quantized).
func (t *Tensor) String() string {
	o := currentPrintOptions()
	s, err := t.Format(o.Precision, o.Threshold, o.EdgeItems, o.LineWidth, o.SciMode)
	if err != nil {
		if s, err = t.ToString(); err != nil {
			return "Tensor(?)"
		}
	}
	return s
}

// NoGrad runs fn with gradient recording off on this OS thread (the
// goroutine is locked to it meanwhile: grad mode is thread-local).
func NoGrad(fn func() error) error { return inAutogradScope(AutogradScopeKindNoGrad, fn) }

// InferenceMode runs fn as under torch.inference_mode() (no graph, no
// version counters), on this OS thread as NoGrad.
func InferenceMode(fn func() error) error { return inAutogradScope(AutogradScopeKindInferenceMode, fn) }

func inAutogradScope(kind AutogradScopeKind, fn func() error) (ferr error) {
	if fn == nil {
		return &Error{Status: StatusInvalidArgument, Message: "NoGrad/InferenceMode: fn is nil"}
	}
	// (AutogradScopeEnter keeps the goroutine on its OS thread until Leave: thread.go)
	s, err := AutogradScopeEnter(kind)
	if err != nil {
		return err
	}
	// Left even when fn panics (ctorch.Must inside it, recovered by a Catch outside).
	defer func() {
		if err := s.Leave(); err != nil && ferr == nil {
			ferr = err
		}
	}()
	return fn()
}

// Handle is t's borrowed ctorch_tensor handle, for cgo code in other packages
// (ctorch/nn); valid while t lives and is not freed.
func (t *Tensor) Handle() unsafe.Pointer { return unsafe.Pointer(t.handle()) }

// AdoptTensor makes a Tensor own a NEW ctorch_tensor handle that a C call made
// outside this package returned (nil for NULL).
func AdoptTensor(h unsafe.Pointer) *Tensor { return wrap(C.ctorch_tensor(h)) }

// Handle is m's borrowed ctorch_nn_module handle (as Tensor.Handle).
func (m *NnModule) Handle() unsafe.Pointer { return unsafe.Pointer(m.handle()) }

// AdoptNnModule makes an NnModule own a NEW ctorch_nn_module handle (as AdoptTensor).
func AdoptNnModule(h unsafe.Pointer) *NnModule { return wrapNnModule(C.ctorch_nn_module(h)) }

// StatusError is the error of a failed C call made outside this package
// (ctorch/nn's cgo calls): st is the raw status the function returned.
func StatusError(st int32) error { return statusError(C.ctorch_status(st)) }

// Scope collects the tensors a computation makes and its first error, so
// that an expression of several ops reads as one (Node's ct.scope, C's
// handle scopes):
//
//	var s ctorch.Scope
//	defer s.Free()
//	y := s.T(ctorch.Relu(s.T(ctorch.Mm(a, b))))
//	if err := s.Err(); err != nil { ... }
//
// T records what an op returned; after a failure the ops that follow get
// nil tensors, which every call refuses without running (the first error
// stays). Free frees every recorded tensor except those passed to Keep.
// Not safe for concurrent use.
type Scope struct {
	made []*Tensor
	err  error
}

// T records t (NEW, owned by the scope from now on) and err; it returns t.
func (s *Scope) T(t *Tensor, err error) *Tensor {
	if s == nil { // a nil scope records nothing
		return t
	}
	if err != nil && s.err == nil {
		s.err = err
	}
	if t != nil {
		s.made = append(s.made, t)
	}
	return t
}

// Ts is T for ops returning several tensors (ForwardN, Chunk, ...).
func (s *Scope) Ts(ts []*Tensor, err error) []*Tensor {
	for _, t := range ts {
		s.T(t, nil)
	}
	s.T(nil, err)
	return ts
}

// T2 is T for ops returning two tensors (Topk, Max_dim, ...).
func (s *Scope) T2(a, b *Tensor, err error) (*Tensor, *Tensor) {
	s.T(a, err)
	return a, s.T(b, nil)
}

// Keep takes t out of the scope: Free leaves it to the caller.
func (s *Scope) Keep(t *Tensor) *Tensor {
	if s == nil {
		return t
	}
	for i, m := range s.made {
		if m == t {
			s.made = append(s.made[:i], s.made[i+1:]...)
			break
		}
	}
	return t
}

// Err is the first error any recorded call returned.
func (s *Scope) Err() error {
	if s == nil {
		return nil
	}
	return s.err
}

// Free frees the recorded tensors (safe to call twice) and returns Err.
func (s *Scope) Free() error {
	if s == nil {
		return nil
	}
	for _, t := range s.made {
		t.Free()
	}
	s.made = nil
	return s.err
}
