// Package nn is torch.nn for Go: every built-in module kind of libctorch
// (New("Linear", "784, 128"), or the typed constructors of kinds_gen.go,
// generated from api.json's "nn_modules": NewLinear(784, 128,
// &LinearOptions{Bias: ctorch.Ptr(false)})), the containers, and modules whose
// forward is Go code (NewCustom). Every module is a ctorch_nn_module
// underneath (include/ctorch.h, "Modules"): state dicts, train/eval, To,
// ZeroGrad, String (Python's repr) and parameters are the C library's, so a
// model built here has the same names, values and behaviour as the same
// model built from C, Python or Node.
package nn

// #include <stdlib.h>
// #include <stdint.h>
// #include <pthread.h>
// #include "ctorch.h"
// extern ctorch_status ctorchGoNnForward(void *, ctorch_nn_module, ctorch_tensor *, size_t, char *, ctorch_tensor *, size_t, size_t *);
// extern void ctorchGoNnRelease(void *);
// static ctorch_status go_nn_custom_new(ctorch_nn_module *out, const char *name, uintptr_t key) {
//   return ctorch_nn_custom_new(out, name, (ctorch_nn_forward_fn)ctorchGoNnForward, (void *)key, ctorchGoNnRelease);
// }
// static uintptr_t go_nn_thread(void) { return (uintptr_t)pthread_self(); }
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"

	ctorch "github.com/ctorch/ctorch-go"
)

// Module is one ctorch_nn_module handle. Free it when done; a finalizer
// frees forgotten built-in modules (a custom module's forward function is
// held by the library until the module's last reference goes: Free it).
type Module struct {
	m *ctorch.NnModule
}

// ForwardFunc computes a custom module's forward: inputs (nil = None) and
// the keyword arguments as Python text ("" for none). The returned tensors
// are the caller's.
type ForwardFunc func(inputs []*ctorch.Tensor, kwargs string) ([]*ctorch.Tensor, error)

// NamedTensor is one entry of a state dict or of NamedParameters, in Python's order.
type NamedTensor struct {
	Name   string
	Tensor *ctorch.Tensor
}

func wrap(m *ctorch.NnModule, err error) (*Module, error) {
	if err != nil {
		return nil, err
	}
	return &Module{m: m}, nil
}

// New makes a built-in module of torch.nn's class `kind` from its
// constructor's arguments written as in Python: New("Conv2d", "1, 6, 5, padding=2").
func New(kind, args string) (*Module, error) { return wrap(ctorch.NnNew(kind, &args)) }

// NnModule is the generated handle type underneath (its methods are every ctorch_nn_module_* function).
func (m *Module) NnModule() *ctorch.NnModule { return m.h() }

// h is the handle underneath, nil for a nil Module: every method then gets
// the library's error for a NULL module rather than a Go panic.
func (m *Module) h() *ctorch.NnModule {
	if m == nil {
		return nil
	}
	return m.m
}

// Free drops this handle's reference (children stay alive while a parent holds them); safe twice.
func (m *Module) Free() { m.h().Free() }

// Forward runs the module on inputs and returns its first output (model(x)).
func (m *Module) Forward(inputs ...*ctorch.Tensor) (*ctorch.Tensor, error) {
	outs, err := m.ForwardN(inputs, "")
	if err != nil {
		return nil, err
	}
	if len(outs) == 0 {
		return nil, errors.New("nn: forward returned nothing")
	}
	for _, o := range outs[1:] {
		o.Free()
	}
	return outs[0], nil
}

// pending holds the Go error a custom forward returned, per OS thread, for
// the ForwardN that made the C call on that thread (locked to it meanwhile).
var pending sync.Map

// ForwardN runs the module with several inputs (nil = None; LSTM: input,
// h_0, c_0) and keyword arguments as Python text ("need_weights=False"), and
// returns every output (nil where Python returns None). The goroutine stays
// on its OS thread meanwhile, where a custom forward leaves its Go error.
func (m *Module) ForwardN(inputs []*ctorch.Tensor, kwargs string) ([]*ctorch.Tensor, error) {
	var kw *string
	if kwargs != "" {
		kw = &kwargs
	}
	runtime.LockOSThread()
	outs, err := m.h().ForwardN(inputs, kw)
	goErr, _ := pending.LoadAndDelete(uintptr(C.go_nn_thread()))
	runtime.UnlockOSThread()
	if err != nil && goErr != nil {
		return nil, fmt.Errorf("%w (%v)", goErr.(error), err)
	}
	return outs, err
}

// ---- custom modules ------------------------------------------------------------------------

// NewCustom makes a module whose forward is fwd (nil: a module that only
// holds parameters and children), shown as typeName by String. Register its
// children and parameters in Python's attribute order: the state dict's.
func NewCustom(typeName string, fwd ForwardFunc) (*Module, error) {
	name := C.CString(typeName)
	defer C.free(unsafe.Pointer(name))
	key := cgo.NewHandle(fwd)
	var out C.ctorch_nn_module
	if st := C.go_nn_custom_new(&out, name, C.uintptr_t(key)); st != 0 {
		key.Delete()
		return nil, ctorch.StatusError(int32(st))
	}
	return &Module{m: ctorch.AdoptNnModule(unsafe.Pointer(out))}, nil
}

//export ctorchGoNnRelease
func ctorchGoNnRelease(key unsafe.Pointer) { cgo.Handle(uintptr(key)).Delete() }

// goForward runs on the goroutine that called into C (cgo's rule), which
// ForwardN keeps on its OS thread: a Go error is left in pending for it.
func goForward(key uintptr, in []C.ctorch_tensor, kwargs string, out []C.ctorch_tensor) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("nn: custom forward panicked: %v", r)
		}
	}()
	fwd, _ := cgo.Handle(key).Value().(ForwardFunc)
	if fwd == nil {
		return 0, errors.New("nn: this custom module has no forward")
	}
	ins := make([]*ctorch.Tensor, len(in))
	for i, h := range in {
		if h != nil {
			borrowed := ctorch.AdoptTensor(unsafe.Pointer(h))
			runtime.SetFinalizer(borrowed, nil) // the caller's handle: never freed here
			ref, err := borrowed.Ref()          // a tensor of our own
			if err != nil {
				return 0, err
			}
			ins[i] = ref
			defer ref.Free()
		}
	}
	res, err := fwd(ins, kwargs)
	if err != nil {
		return 0, err
	}
	if len(res) > len(out) {
		return 0, fmt.Errorf("nn: custom forward returned %d tensors; the caller takes %d", len(res), len(out))
	}
	for i, t := range res {
		if t == nil {
			continue
		}
		ref, err := t.Ref() // a NEW handle whose ownership passes to ctorch
		if err != nil {
			return 0, err
		}
		out[i] = C.ctorch_tensor(ref.Handle())
		runtime.SetFinalizer(ref, nil)
	}
	return len(res), nil
}

//export ctorchGoNnForward
func ctorchGoNnForward(key unsafe.Pointer, self C.ctorch_nn_module, inputs *C.ctorch_tensor, nIn C.size_t,
	kwargs *C.char, outputs *C.ctorch_tensor, maxOut C.size_t, nOut *C.size_t) C.ctorch_status {
	in := unsafe.Slice(inputs, int(nIn))
	out := unsafe.Slice(outputs, int(maxOut))
	n, err := goForward(uintptr(key), in, C.GoString(kwargs), out)
	if err != nil {
		pending.Store(uintptr(C.go_nn_thread()), err)
		var ce *ctorch.Error
		if errors.As(err, &ce) {
			return C.ctorch_status(ce.Status)
		}
		return C.ctorch_status(ctorch.StatusRuntime)
	}
	*nOut = C.size_t(n)
	return 0
}

// RegisterModule registers child under name (Python's self.name = child) and returns it.
func (m *Module) RegisterModule(name string, child *Module) (*Module, error) {
	return child, m.h().RegisterModule(name, child.h())
}

// RegisterParameter registers t (shared, not copied; requires_grad set) as a parameter.
func (m *Module) RegisterParameter(name string, t *ctorch.Tensor) error {
	return m.h().RegisterParameter(name, t)
}

// RegisterBuffer registers t as a buffer; persistent ones are in the state dict.
func (m *Module) RegisterBuffer(name string, t *ctorch.Tensor, persistent bool) error {
	return m.h().RegisterBuffer(name, t, persistent)
}

// ---- containers ----------------------------------------------------------------------------

// Sequential makes nn.Sequential(modules...): children "0", "1", ...
func Sequential(modules ...*Module) (*Module, error) {
	return container("Sequential", modules)
}

func container(kind string, modules []*Module) (*Module, error) {
	s, err := New(kind, "")
	if err != nil {
		return nil, err
	}
	for _, c := range modules {
		if err := s.Append(c); err != nil {
			s.Free()
			return nil, err
		}
	}
	return s, nil
}

// ModuleList makes nn.ModuleList(modules...) (holds modules; no forward).
func ModuleList(modules ...*Module) (*Module, error) {
	return container("ModuleList", modules)
}

// Append adds child to a Sequential or ModuleList under the next index.
func (m *Module) Append(child *Module) error { return m.h().Append(child.h()) }

// ---- what every module can do ----------------------------------------------------------------

func readDict(d *ctorch.TensorDict, err error) ([]NamedTensor, error) {
	if err != nil {
		return nil, err
	}
	defer d.Free()
	n, err := d.Size()
	if err != nil {
		return nil, err
	}
	out := make([]NamedTensor, n)
	for i := range out {
		if out[i].Name, err = d.Key(i); err == nil {
			out[i].Tensor, err = d.Get(i)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// NamedParameters lists the parameters, recursively, with Python's dotted names.
func (m *Module) NamedParameters() ([]NamedTensor, error) { return readDict(m.h().NamedParameters(true)) }

// NamedBuffers lists the buffers, recursively, with Python's dotted names.
func (m *Module) NamedBuffers() ([]NamedTensor, error) { return readDict(m.h().NamedBuffers(true)) }

// Parameters lists the parameters in Python's order: what ctorch.OptimizerNew takes.
func (m *Module) Parameters() ([]*ctorch.Tensor, error) { return m.h().Parameters() }

// NewOptimizer is torch.optim.X(model.parameters(), ...) in one statement: a
// NEW optimizer over every parameter, recursive, in Python's order
// (ctorch_optimizer_new_from_module_v2); opts nil or zero fields = the kind's
// defaults: model.NewOptimizer(ctorch.OptimizerKindAdamw, &ctorch.OptimizerOptions{Lr: 1e-3}).
func (m *Module) NewOptimizer(kind ctorch.OptimizerKind, opts *ctorch.OptimizerOptions) (*ctorch.Optimizer, error) {
	v, err := opts.V2(kind)
	if err != nil {
		return nil, err
	}
	return ctorch.OptimizerNewFromModuleV2(kind, m.h(), &v)
}

// Optimizer is NewOptimizer with the full C struct (fill it with
// ctorch.OptimOptionsDefaultV2 first).
//
// Deprecated: use NewOptimizer, whose zero options are torch's defaults.
func (m *Module) Optimizer(kind ctorch.OptimizerKind, options *ctorch.OptimOptionsV2) (*ctorch.Optimizer, error) {
	return ctorch.OptimizerNewFromModuleV2(kind, m.h(), options)
}

// ClipGradNorm is torch.nn.utils.clip_grad_norm_(model.parameters(), ...): the
// gradients scaled in place; returns their total norm before clipping.
func (m *Module) ClipGradNorm(maxNorm, normType float64, errorIfNonfinite bool) (float64, error) {
	return m.h().ClipGradNorm_(maxNorm, normType, errorIfNonfinite)
}

// ClipGradValue is torch.nn.utils.clip_grad_value_(model.parameters(), v).
func (m *Module) ClipGradValue(clipValue float64) error { return m.h().ClipGradValue_(clipValue) }

// ForwardChild runs the submodule at a dotted path ("fc1", "layers.0") on one
// input and returns its first output (ctorch_nn_module_forward_child).
func (m *Module) ForwardChild(path string, input *ctorch.Tensor) (*ctorch.Tensor, error) {
	return m.h().ForwardChild(path, input)
}

// StateDict is Python's state_dict(): parameters and persistent buffers, in its order and with its keys.
func (m *Module) StateDict() ([]NamedTensor, error) { return readDict(m.h().StateDict()) }

// LoadStateDict copies sd into the module as Python's load_state_dict; strict
// fails on missing, unexpected or mis-shaped keys, else they are reported.
func (m *Module) LoadStateDict(sd []NamedTensor, strict bool) (missing, unexpected []string, err error) {
	d, err := ctorch.TensorDictNew()
	if err != nil {
		return nil, nil, err
	}
	defer d.Free()
	for _, e := range sd {
		if err := d.Set(e.Name, e.Tensor); err != nil {
			return nil, nil, err
		}
	}
	return m.loadDict(d, strict)
}

// Save writes the state dict to path as torch.save(model.state_dict(), path)
// does (a file Python's torch.load and Load read).
func (m *Module) Save(path string) error {
	d, err := m.h().StateDict()
	if err != nil {
		return err
	}
	defer d.Free()
	return ctorch.TensorDictSave(path, d)
}

// Load is model.load_state_dict(torch.load(path)), with LoadStateDict's report.
func (m *Module) Load(path string, strict bool) (missing, unexpected []string, err error) {
	d, err := ctorch.LoadDict(path)
	if err != nil {
		return nil, nil, err
	}
	defer d.Free()
	return m.loadDict(d, strict)
}

func (m *Module) loadDict(d *ctorch.TensorDict, strict bool) (missing, unexpected []string, err error) {
	report, err := m.h().LoadStateDict(d, strict)
	if err != nil {
		return nil, nil, err
	}
	for _, line := range strings.Split(report, "\n") {
		if kind, key, ok := strings.Cut(line, ": "); ok {
			if kind == "missing" {
				missing = append(missing, key)
			} else {
				unexpected = append(unexpected, key)
			}
		}
	}
	return missing, unexpected, nil
}

// Train sets training mode recursively (train()).
func (m *Module) Train() error { return m.h().Train(true) }

// Eval sets evaluation mode recursively (eval()).
func (m *Module) Eval() error { return m.h().Train(false) }

// IsTraining says whether the module is in training mode.
func (m *Module) IsTraining() (bool, error) {
	return m.h().IsTraining()
}

// To moves and/or casts the parameters and buffers in place (nil: keep).
// Take new handles (Parameters) and make optimizers after it.
func (m *Module) To(device *ctorch.Device, dtype *ctorch.DType) error {
	d := -1
	if dtype != nil {
		d = int(*dtype)
	}
	return m.h().To(device, d)
}

// RequiresGrad sets requires_grad on every parameter (false freezes the module).
func (m *Module) RequiresGrad(on bool) error { return m.h().RequiresGrad(on) }

// ZeroGrad drops every parameter's gradient (PyTorch 2's zero_grad(set_to_none=True)).
func (m *Module) ZeroGrad() error { return m.h().ZeroGrad(true) }

// NumParameters counts the parameter elements (onlyTrainable: those requiring grad).
func (m *Module) NumParameters(onlyTrainable bool) (int64, error) {
	return m.h().NumParameters(onlyTrainable)
}

// String is Python's repr(module).
func (m *Module) String() string {
	s, err := m.h().Repr()
	if err != nil {
		return fmt.Sprintf("<nn.Module: %v>", err)
	}
	return s
}

// Clone is copy.deepcopy(module).
func (m *Module) Clone() (*Module, error) { return wrap(m.h().Clone()) }

// Get is the submodule at a dotted path ("0", "encoder.layers.0"); Free it when done.
func (m *Module) Get(path string) (*Module, error) { return wrap(m.h().Get(path)) }

// Tensor is the parameter or buffer at a dotted path ("0.weight"), sharing the module's storage.
func (m *Module) Tensor(name string) (*ctorch.Tensor, error) { return m.h().Tensor(name) }

// ShapeCheck gives the output shape of every submodule for inputs of these
// shapes without computing (meta tensors), or an error naming the first
// module whose input does not fit.
func (m *Module) ShapeCheck(shapes ...[]int64) (string, error) { return m.h().ShapeCheck(shapes) }
