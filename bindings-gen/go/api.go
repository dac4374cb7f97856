package ctorch

// The Go face of the hand-written C API: tensors from Go memory and back,
// metadata, autograd, optimizers, data loading, library settings.

// #include <stdlib.h>
// #include "ctorch.h"
import "C"

import (
	"runtime"
	"unsafe"
)

func shapeArgs(shape []int64) (*C.int64_t, C.size_t) {
	if len(shape) == 0 {
		return nil, 0
	}
	return (*C.int64_t)(unsafe.Pointer(&shape[0])), C.size_t(len(shape))
}

func fromData(p unsafe.Pointer, nbytes int, shape []int64, dt DType) (*Tensor, error) {
	var h C.ctorch_tensor
	sp, n := shapeArgs(shape)
	if err := check(C.ctorch_tensor_from_data(&h, p, C.size_t(nbytes), sp, n, C.ctorch_dtype(dt))); err != nil {
		return nil, err
	}
	return wrap(h), nil
}

// FromFloat32 copies data into a new float32 tensor of the given shape.
func FromFloat32(data []float32, shape ...int64) (*Tensor, error) {
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	t, err := fromData(p, 4*len(data), shape, DTypeFloat32)
	runtime.KeepAlive(data)
	return t, err
}

// FromInt64 copies data into a new int64 tensor of the given shape.
func FromInt64(data []int64, shape ...int64) (*Tensor, error) {
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	t, err := fromData(p, 8*len(data), shape, DTypeInt64)
	runtime.KeepAlive(data)
	return t, err
}

// Dim is the number of dimensions.
func (t *Tensor) Dim() (int, error) {
	var n C.int64_t
	err := check(C.ctorch_tensor_dim(&n, t.handle()))
	return int(n), err
}

// Shape is the tensor's sizes.
func (t *Tensor) Shape() ([]int64, error) {
	d, err := bufLen_ctorch_tensor_sizes_out(t.handle()) // api.json's buffer_size
	if err != nil {
		return nil, err
	}
	s := make([]int64, d+1)
	err = check(C.ctorch_tensor_sizes((*C.int64_t)(unsafe.Pointer(&s[0])), C.size_t(d), t.handle()))
	return s[:d], err
}

// Numel is the number of elements.
func (t *Tensor) Numel() (int64, error) {
	var n C.int64_t
	err := check(C.ctorch_tensor_numel(&n, t.handle()))
	return int64(n), err
}

// DType is the element type.
func (t *Tensor) DType() (DType, error) {
	var d C.ctorch_dtype
	err := check(C.ctorch_tensor_dtype(&d, t.handle()))
	return DType(d), err
}

// Float32s copies the elements (row-major) of a float32 tensor.
func (t *Tensor) Float32s() ([]float32, error) {
	n, err := t.Numel()
	if err != nil {
		return nil, err
	}
	out := make([]float32, n+1)
	err = check(C.ctorch_tensor_copy_to(unsafe.Pointer(&out[0]), C.size_t(4*n), t.handle()))
	return out[:n], err
}

// Int64s copies the elements of an int64 tensor.
func (t *Tensor) Int64s() ([]int64, error) {
	n, err := t.Numel()
	if err != nil {
		return nil, err
	}
	out := make([]int64, n+1)
	err = check(C.ctorch_tensor_copy_to(unsafe.Pointer(&out[0]), C.size_t(8*n), t.handle()))
	return out[:n], err
}

// Item is the value of a one-element tensor as float64.
func (t *Tensor) Item() (float64, error) {
	var v C.double
	err := check(C.ctorch_tensor_item_double(&v, t.handle()))
	return float64(v), err
}

// String renders the tensor as libtorch prints it.
func (t *Tensor) String() string {
	var s *C.char
	if C.ctorch_tensor_to_string(&s, t.handle()) != 0 {
		return "Tensor(?)"
	}
	defer C.ctorch_string_free(s)
	return C.GoString(s)
}

// SetRequiresGrad turns autograd recording on or off for a leaf.
func (t *Tensor) SetRequiresGrad(on bool) error {
	return check(C.ctorch_tensor_set_requires_grad(t.handle(), cbool(on)))
}

// Grad is t's accumulated gradient (nil if none); Free it.
func (t *Tensor) Grad() (*Tensor, error) {
	var h C.ctorch_tensor
	err := check(C.ctorch_tensor_grad(&h, t.handle()))
	return wrap(h), err
}

// Backward accumulates gradients of a one-element tensor into the leaves.
func (t *Tensor) Backward() error {
	return check(C.ctorch_tensor_backward(t.handle(), nil, 0, 0, nil, 0))
}

// To converts to another dtype (a new tensor).
func (t *Tensor) To(dt DType) (*Tensor, error) {
	var h C.ctorch_tensor
	err := check(C.ctorch_tensor_to_dtype(&h, t.handle(), C.ctorch_dtype(dt)))
	return wrap(h), err
}

// ManualSeed seeds every default generator.
func ManualSeed(seed uint64) error { return check(C.ctorch_manual_seed(C.uint64_t(seed))) }

// SetNumThreads sets libtorch's intra-op threads.
func SetNumThreads(n int) error { return check(C.ctorch_set_num_threads(C.int(n))) }

// MemoryBytes is the native memory held by live tensor storages on CPU.
func MemoryBytes() (int64, error) {
	var v C.int64_t
	err := check(C.ctorch_memory_bytes(&v, C.ctorch_device_type(DeviceTypeCpu)))
	return int64(v), err
}

// NoGrad runs fn with gradient recording off on this OS thread (the
// goroutine is locked to it meanwhile: grad mode is thread-local).
func NoGrad(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var s C.ctorch_autograd_scope
	if err := check(C.ctorch_autograd_scope_enter(&s, C.ctorch_autograd_scope_kind(AutogradScopeKind(0)))); err != nil {
		return err
	}
	ferr := fn()
	if err := check(C.ctorch_autograd_scope_leave(s)); err != nil && ferr == nil {
		ferr = err
	}
	return ferr
}

// OptimOptions are the hyper-parameters of ctorch_optim_options.
type OptimOptions struct {
	LR, WeightDecay, Momentum, Dampening float64
	Nesterov, AMSGrad, Centered          bool
	Beta1, Beta2, Eps, Alpha, LRDecay    float64
	InitialAccumulatorValue              float64
}

// DefaultOptimOptions are PyTorch's defaults for kind.
func DefaultOptimOptions(kind OptimizerKind) (OptimOptions, error) {
	var o C.ctorch_optim_options
	if err := check(C.ctorch_optim_options_default(&o, C.ctorch_optimizer_kind(kind))); err != nil {
		return OptimOptions{}, err
	}
	return OptimOptions{LR: float64(o.lr), WeightDecay: float64(o.weight_decay), Momentum: float64(o.momentum),
		Dampening: float64(o.dampening), Nesterov: o.nesterov != 0, AMSGrad: o.amsgrad != 0, Centered: o.centered != 0,
		Beta1: float64(o.beta1), Beta2: float64(o.beta2), Eps: float64(o.eps), Alpha: float64(o.alpha),
		LRDecay: float64(o.lr_decay), InitialAccumulatorValue: float64(o.initial_accumulator_value)}, nil
}

func (o OptimOptions) c() C.ctorch_optim_options {
	return C.ctorch_optim_options{lr: C.double(o.LR), weight_decay: C.double(o.WeightDecay), momentum: C.double(o.Momentum),
		dampening: C.double(o.Dampening), nesterov: cbool(o.Nesterov), amsgrad: cbool(o.AMSGrad), centered: cbool(o.Centered),
		beta1: C.double(o.Beta1), beta2: C.double(o.Beta2), eps: C.double(o.Eps), alpha: C.double(o.Alpha),
		lr_decay: C.double(o.LRDecay), initial_accumulator_value: C.double(o.InitialAccumulatorValue)}
}

// Optimizer updates parameters with one of torch.optim's rules. Free it when done.
type Optimizer struct{ h C.ctorch_optimizer }

// NewOptimizer makes an optimizer over params with options (nil: PyTorch's defaults).
func NewOptimizer(kind OptimizerKind, params []*Tensor, options *OptimOptions) (*Optimizer, error) {
	p, n := tensorArray(params, false)
	var h C.ctorch_optimizer
	var co *C.ctorch_optim_options
	if options != nil {
		v := options.c()
		co = &v
	}
	err := check(C.ctorch_optimizer_new(&h, C.ctorch_optimizer_kind(kind), p, n, co))
	runtime.KeepAlive(params)
	if err != nil {
		return nil, err
	}
	return &Optimizer{h: h}, nil
}

// Step applies one update.
func (o *Optimizer) Step() error { return check(C.ctorch_optimizer_step(o.h)) }

// ZeroGrad clears the parameters' gradients.
func (o *Optimizer) ZeroGrad() error { return check(C.ctorch_optimizer_zero_grad(o.h, 1)) }

// Free releases the optimizer.
func (o *Optimizer) Free() {
	if o != nil && o.h != nil {
		C.ctorch_optimizer_free(o.h)
		o.h = nil
	}
}

// ReadMNIST reads an MNIST-style directory: images uint8 [N,28,28], labels int64 [N].
func ReadMNIST(dir string, train bool) (*Tensor, *Tensor, error) {
	cs := C.CString(dir)
	defer C.free(unsafe.Pointer(cs))
	var a, b C.ctorch_tensor
	if err := check(C.ctorch_data_mnist_read_dir(&a, &b, cs, cbool(train))); err != nil {
		return nil, nil, err
	}
	return wrap(a), wrap(b), nil
}

// DataLoader iterates over batches along dimension 0 (ctorch_data_loader).
type DataLoader struct{ h C.ctorch_data_loader }

// NewDataLoader batches data and targets (targets may be nil).
func NewDataLoader(data, targets *Tensor, batchSize int64, shuffle bool, seed uint64, dropLast bool) (*DataLoader, error) {
	var h C.ctorch_data_loader
	err := check(C.ctorch_data_loader_new(&h, data.handle(), targets.handle(), C.int64_t(batchSize), cbool(shuffle),
		C.uint64_t(seed), cbool(dropLast)))
	if err != nil {
		return nil, err
	}
	return &DataLoader{h: h}, nil
}

// StartEpoch rewinds (and reshuffles) for epoch e.
func (l *DataLoader) StartEpoch(e uint64) error { return check(C.ctorch_data_loader_start_epoch(l.h, C.uint64_t(e))) }

// Next returns the next batch, or ok = false at the end of the epoch.
func (l *DataLoader) Next() (x, y *Tensor, ok bool, err error) {
	var has C.int
	var a, b C.ctorch_tensor
	if err = check(C.ctorch_data_loader_next(&has, &a, &b, l.h)); err != nil || has == 0 {
		return nil, nil, false, err
	}
	return wrap(a), wrap(b), true, nil
}

// Free releases the loader.
func (l *DataLoader) Free() {
	if l != nil && l.h != nil {
		C.ctorch_data_loader_free(l.h)
		l.h = nil
	}
}

// InitUniform_ fills t with U(a, b) in place, recording no graph.
func InitUniform_(t *Tensor, a, b float64) error {
	return check(C.ctorch_init_uniform_(t.handle(), C.double(a), C.double(b)))
}
