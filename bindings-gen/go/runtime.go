// Package ctorch is the Go binding of libctorch, generated from api.json.
// This file is the hand-written runtime: errors, tensors and their
// lifetime, argument conversions for the generated ops_gen.go, and the Go
// face of the hand-written C API.
package ctorch

// #include <stdlib.h>
// #include "ctorch.h"
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// Error is a failed ctorch call: its status and the library's message.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e == nil {
		return "ctorch: <nil *Error>"
	}
	return fmt.Sprintf("%s: %s", StatusName(e.Status), e.Message)
}

func init() {
	// The main goroutine stays on the main OS thread (Go's rule for an init
	// that locks): libtorch keeps state per thread (grad mode, the OpenMP
	// thread count SetNumThreads sets), and a program whose calls wandered
	// between threads drifted from the same program in C (examples/go/vae:
	// 299.695892 against C's 299.695862 after 100 steps; locked, bit-identical).
	// Other goroutines are not locked: lock those that call ctorch yourself.
	runtime.LockOSThread()
	// Tickets: a goroutine may change OS threads between two cgo calls, so
	// the thread-local last error is not reliable from Go; the status of a
	// failed call carries a ticket naming its message in ctorch's log.
	if _, err := SetErrorTickets(true); err != nil {
		panic(err)
	}
	if err := checkIdentity(); err != nil {
		panic(err.Error())
	}
}

// checkIdentity is the load check every binding makes (docs/packages.md,
// "The load check"): the library refuses when a libtorch of another release
// is loaded beside it; its ctorch and libtorch versions must be those this
// package was generated for, then its ABI hash.
func checkIdentity() error {
	var got [3]string
	for i, ask := range []func() (string, error){VersionFn, TorchVersion, AbiHash} {
		s, err := ask()
		if err != nil {
			return fmt.Errorf("ctorch: %v", err)
		}
		got[i] = s
	}
	if got[0] != Version || got[1] != LibtorchVersion {
		return fmt.Errorf("ctorch: the loaded libctorch is %s built for libtorch %s; this package was generated for "+
			"libctorch %s built for libtorch %s (build against that library: pkg-config ctorch, see the module's README)",
			got[0], got[1], Version, LibtorchVersion)
	}
	if got[2] != ABIHash {
		return fmt.Errorf("ctorch: the loaded libctorch has ABI %s; this package was generated for %s", got[2], ABIHash)
	}
	return nil
}

// statusError is the error of a failed call: its message fetched through
// its ticket. Written here, not with the generated ErrorMessage, because
// the error path must not fail in turn (ErrorMessage's own failure would
// come back here).
func statusError(st C.ctorch_status) error {
	// The bit fields and the buffer rule come from api.json (capi_gen.go).
	code := Status(statusCode(st))
	ticket := statusTicket(st)
	msg := "(no message)"
	if ticket != 0 {
		buf := make([]byte, 512)
		var n C.size_t
		for {
			if C.ctorch_error_message(nil, &n, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), C.uint64_t(ticket)) != 0 {
				break
			}
			if need := int(n) + bufPlus_ctorch_error_message_buf; need > len(buf) {
				buf = make([]byte, need) // truncated: again with the size it reported
				continue
			}
			msg = string(buf[:n])
			break
		}
	}
	return &Error{Status: code, Message: callbackError(msg)}
}

func check(st C.ctorch_status) error {
	if st != 0 {
		return statusError(st)
	}
	return nil
}

// Tensor owns one ctorch_tensor handle. Free it when done (defer t.Free());
// a finalizer frees tensors that were forgotten.
type Tensor struct {
	h C.ctorch_tensor
}

func wrap(h C.ctorch_tensor) *Tensor {
	if h == nil {
		return nil
	}
	t := &Tensor{h: h}
	runtime.SetFinalizer(t, (*Tensor).Free)
	return t
}

// Free releases the handle now; the Tensor is unusable afterwards. Safe on nil and twice.
func (t *Tensor) Free() {
	if t == nil || t.h == nil {
		return
	}
	C.ctorch_tensor_free(t.h)
	t.h = nil
	runtime.SetFinalizer(t, nil)
}

func (t *Tensor) handle() C.ctorch_tensor {
	if t == nil {
		return nil
	}
	return t.h
}

// Scalar is a number of a definite kind (ctorch_scalar).
type Scalar struct {
	kind int32
	i    int64
	f    float64
	imag float64
}

// Int, Float, Bool and ComplexScalar build Scalars of that kind with the
// header's inline helpers (hfuncs_gen.go: ScalarInt, ...).
func Int(v int64) Scalar                { return ScalarInt(v) }
func Float(v float64) Scalar            { return ScalarFloat(v) }
func ComplexScalar(v complex128) Scalar { return ScalarComplex(real(v), imag(v)) }
func Bool(v bool) Scalar {
	if v {
		return ScalarBool(1)
	}
	return ScalarBool(0)
}

func (s Scalar) c() C.ctorch_scalar {
	var r C.ctorch_scalar
	r.kind = C.int32_t(s.kind)
	r.i = C.int64_t(s.i)
	r.f = C.double(s.f)
	r.imag = C.double(s.imag)
	return r
}

func scalarFromC(r C.ctorch_scalar) Scalar {
	return Scalar{kind: int32(r.kind), i: int64(r.i), f: float64(r.f), imag: float64(r.imag)}
}

// Value of the scalar as a Go number (int64, float64, bool or complex128).
func (s Scalar) Value() interface{} {
	switch ScalarKind(s.kind) {
	case ScalarKindInt:
		return s.i
	case ScalarKindBool:
		return s.i != 0
	case ScalarKindComplex:
		return complex(s.f, s.imag)
	}
	return s.f
}

// CPU is the CPU device (Device and Generator are generated: hfuncs_gen.go).
var CPU = Device{Type: DeviceTypeCpu, Index: -1}

// ---- conversions used by ops_gen.go -----------------------------------------

// Non-NULL pointers for empty lists: a length-0 list is PyTorch's [], not None.
var (
	emptyTensors [1]C.ctorch_tensor
	emptyI64     [1]C.int64_t
	emptyF64     [1]C.double
	emptyInt     [1]C.int
	emptyScalar  [1]C.ctorch_scalar
)

func tensorArray(ts []*Tensor, optional bool) (*C.ctorch_tensor, C.size_t) {
	if ts == nil && optional {
		return nil, 0
	}
	if len(ts) == 0 {
		return &emptyTensors[0], 0
	}
	a := make([]C.ctorch_tensor, len(ts))
	for i, t := range ts {
		a[i] = t.handle()
	}
	return &a[0], C.size_t(len(a))
}

func int64Array(v []int64) (*C.int64_t, C.size_t) {
	if v == nil {
		return nil, 0
	}
	if len(v) == 0 {
		return &emptyI64[0], 0
	}
	return (*C.int64_t)(unsafe.Pointer(&v[0])), C.size_t(len(v))
}

// int64Arrays: a list of int lists (api.json's array.element_length: shapes)
// as a C array of pointers, the lengths and the count, in C memory (cgo
// forbids handing C an array of Go pointers); call free when done.
func int64Arrays(v [][]int64) (**C.int64_t, *C.size_t, C.size_t, func()) {
	n := len(v)
	ptrs := (**C.int64_t)(C.malloc(C.size_t(n+1) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	lens := (*C.size_t)(C.malloc(C.size_t(n+1) * C.size_t(unsafe.Sizeof(C.size_t(0)))))
	ps, ls := unsafe.Slice(ptrs, n+1), unsafe.Slice(lens, n+1)
	for i, x := range v {
		ps[i] = (*C.int64_t)(C.malloc(C.size_t(len(x)+1) * 8))
		copy(unsafe.Slice((*int64)(unsafe.Pointer(ps[i])), len(x)), x)
		ls[i] = C.size_t(len(x))
	}
	return ptrs, lens, C.size_t(n), func() {
		for i := 0; i < n; i++ {
			C.free(unsafe.Pointer(ps[i]))
		}
		C.free(unsafe.Pointer(ptrs))
		C.free(unsafe.Pointer(lens))
	}
}

// wrapAll: tensors owning the NEW handles a call wrote into a caller's array (nil where NULL).
func wrapAll(hs []C.ctorch_tensor) []*Tensor {
	out := make([]*Tensor, len(hs))
	for i, h := range hs {
		out[i] = wrap(h)
	}
	return out
}

func float64Array(v []float64) (*C.double, C.size_t) {
	if v == nil {
		return nil, 0
	}
	if len(v) == 0 {
		return &emptyF64[0], 0
	}
	return (*C.double)(unsafe.Pointer(&v[0])), C.size_t(len(v))
}

func boolArray(v []bool) (*C.int, C.size_t) {
	if v == nil {
		return nil, 0
	}
	if len(v) == 0 {
		return &emptyInt[0], 0
	}
	a := make([]C.int, len(v))
	for i, b := range v {
		a[i] = cbool(b)
	}
	return &a[0], C.size_t(len(a))
}

func scalarArray(v []Scalar) (*C.ctorch_scalar, C.size_t) {
	if v == nil {
		return nil, 0
	}
	if len(v) == 0 {
		return &emptyScalar[0], 0
	}
	a := make([]C.ctorch_scalar, len(v))
	for i, s := range v {
		a[i] = s.c()
	}
	return &a[0], C.size_t(len(a))
}

func stringArray(v []string) (**C.char, C.size_t, func()) {
	if v == nil {
		return nil, 0, func() {}
	}
	// An empty, non-nil slice is a valid empty list: a non-NULL pointer (one
	// slot allocated) with length 0. Slicing the slot out of a zero-capacity
	// slice panicked here (70 functions, SaveDict among them).
	n := len(v)
	if n == 0 {
		n = 1
	}
	a := (*[1 << 28]*C.char)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))[:len(v):n]
	for i, s := range v {
		a[i] = C.CString(s)
	}
	p := (**C.char)(unsafe.Pointer(&a[:1][0]))
	return p, C.size_t(len(v)), func() {
		for _, c := range a {
			C.free(unsafe.Pointer(c))
		}
		C.free(unsafe.Pointer(p))
	}
}

func bytesArg(v []byte) (unsafe.Pointer, C.size_t) {
	if len(v) == 0 {
		return unsafe.Pointer(&emptyInt[0]), 0
	}
	return unsafe.Pointer(&v[0]), C.size_t(len(v))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func optInt64(p *int64) *C.int64_t {
	if p == nil {
		return nil
	}
	v := C.int64_t(*p)
	return &v
}

func optFloat64(p *float64) *C.double {
	if p == nil {
		return nil
	}
	v := C.double(*p)
	return &v
}

func optBool(p *bool) *C.int {
	if p == nil {
		return nil
	}
	v := cbool(*p)
	return &v
}

func optScalar(p *Scalar) *C.ctorch_scalar {
	if p == nil {
		return nil
	}
	v := p.c()
	return &v
}

func optDevice(p *Device) *C.ctorch_device {
	if p == nil {
		return nil
	}
	v := p.c()
	return &v
}

type cEnum interface {
	C.ctorch_dtype | C.ctorch_layout | C.ctorch_memory_format
}

func optEnum[E cEnum, G ~int32](p *G) *E {
	if p == nil {
		return nil
	}
	v := E(*p)
	return &v
}

func optCString(p *string) *C.char {
	if p == nil {
		return nil
	}
	return C.CString(*p)
}

func freeCString(s *C.char) {
	if s != nil {
		C.free(unsafe.Pointer(s))
	}
}

// Ptr returns a pointer to v, for optional arguments: ctorch.Ptr(int64(1)).
func Ptr[T any](v T) *T { return &v }

// sharedLen is the one C length of several slices (api.json length_of), some
// of which may be nil: that of the non-nil ones, which must agree, or C would
// read past the shorter one.
func sharedLen(fname string, names []string, given []bool, lens []int) (int, error) {
	n, seen, agree := 0, false, true
	var has []string
	for i := range names {
		if !given[i] {
			continue
		}
		if seen && lens[i] != n {
			agree = false
		}
		n, seen = lens[i], true
		has = append(has, fmt.Sprintf("%s has %d", names[i], lens[i]))
	}
	if !agree {
		return 0, fmt.Errorf("%s: %s entries; they share one length", fname, strings.Join(has, ", "))
	}
	return n, nil
}
