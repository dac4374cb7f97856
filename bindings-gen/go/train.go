package ctorch

// The short forms of a training program: an optimizer in one
// statement, loaders a for loop ranges over, and Must/Catch for code that
// would rather not check every call's error.

import (
	"errors"
	"iter"
)

// OptimizerOptions are an optimizer's hyper-parameters; the zero value (or
// nil) is torch.optim's defaults for the kind, and each field set replaces
// one. Lr: 0 is the kind's default (a learning rate of 0 trains nothing);
// every other field is a pointer, nil = default (ctorch.Ptr(0.0) is a real
// 0: AdamW's weight decay defaults to 0.01). Fields a kind does not use are
// ignored, as Python ignores them.
type OptimizerOptions struct {
	Lr                      float64
	WeightDecay             *float64
	Momentum                *float64
	Dampening               *float64
	Nesterov                *bool
	Amsgrad                 *bool
	Centered                *bool
	Beta1, Beta2            *float64 // betas=(Beta1, Beta2)
	Eps                     *float64
	Alpha                   *float64
	LrDecay                 *float64
	InitialAccumulatorValue *float64
	MomentumDecay           *float64
	DecoupledWeightDecay    *bool
	Rho                     *float64
	MaxIter, MaxEval        *int64
	ToleranceGrad           *float64
	ToleranceChange         *float64
	HistorySize             *int64
	LineSearch              *LineSearch
}

// V2 is the full C struct: the kind's defaults (ctorch_optim_options_default_v2)
// with the fields o sets.
func (o *OptimizerOptions) V2(kind OptimizerKind) (OptimOptionsV2, error) {
	v, err := OptimOptionsDefaultV2(kind)
	if err != nil || o == nil {
		return v, err
	}
	if o.Lr != 0 {
		v.Lr = o.Lr
	}
	setF := func(dst *float64, src *float64) {
		if src != nil {
			*dst = *src
		}
	}
	setB := func(dst *int, src *bool) {
		if src != nil {
			*dst = int(cbool(*src))
		}
	}
	setI := func(dst *int64, src *int64) {
		if src != nil {
			*dst = *src
		}
	}
	setF(&v.WeightDecay, o.WeightDecay)
	setF(&v.Momentum, o.Momentum)
	setF(&v.Dampening, o.Dampening)
	setB(&v.Nesterov, o.Nesterov)
	setB(&v.Amsgrad, o.Amsgrad)
	setB(&v.Centered, o.Centered)
	setF(&v.Beta1, o.Beta1)
	setF(&v.Beta2, o.Beta2)
	setF(&v.Eps, o.Eps)
	setF(&v.Alpha, o.Alpha)
	setF(&v.LrDecay, o.LrDecay)
	setF(&v.InitialAccumulatorValue, o.InitialAccumulatorValue)
	setF(&v.MomentumDecay, o.MomentumDecay)
	setB(&v.DecoupledWeightDecay, o.DecoupledWeightDecay)
	setF(&v.Rho, o.Rho)
	setI(&v.MaxIter, o.MaxIter)
	setI(&v.MaxEval, o.MaxEval)
	setF(&v.ToleranceGrad, o.ToleranceGrad)
	setF(&v.ToleranceChange, o.ToleranceChange)
	setI(&v.HistorySize, o.HistorySize)
	if o.LineSearch != nil {
		v.LineSearch = int(*o.LineSearch)
	}
	return v, nil
}

// NewOptimizer is torch.optim.<kind>(params, ...) in one statement:
//
//	opt, err := ctorch.NewOptimizer(ctorch.OptimizerKindAdamw, params, &ctorch.OptimizerOptions{Lr: 1e-3})
//
// (nn.Module.NewOptimizer takes a model's parameters). It replaces the
// OptimOptionsDefaultV2 + OptimizerNewV2 pair.
func NewOptimizer(kind OptimizerKind, params []*Tensor, opts *OptimizerOptions) (*Optimizer, error) {
	v, err := opts.V2(kind)
	if err != nil {
		return nil, err
	}
	return OptimizerNewV2(kind, params, &v)
}

// BackwardStep is one optimizer step on loss: ZeroGrad(true) (PyTorch 2's
// set_to_none), loss.Backward, Step (gotch's BackwardStep), made as one
// StepClosure: the optimizer is held from the ZeroGrad to the update, so
// another goroutine's step on it never mixes its gradients into this one.
// LBFGS, which evaluates the loss several times per step, needs StepClosure
// with a closure that also runs the forward (here its second evaluation
// fails, after its first update).
func (o *Optimizer) BackwardStep(loss *Tensor) error {
	calls := 0
	_, err := o.StepClosure(func() (float64, error) {
		if calls++; calls > 1 {
			return 0, &Error{Status: StatusInvalidArgument, Message: "Optimizer.BackwardStep: the optimizer " +
				"evaluates the loss again (LBFGS): use StepClosure with a closure that runs the forward"}
		}
		if err := o.ZeroGrad(true); err != nil {
			return 0, err
		}
		return 0, loss.Backward(nil, false, false, nil)
	})
	return err
}

// All ranges over the batches left in the current epoch (all of them after
// StartEpoch):
//
//	for x, y := range loader.All() { ... }
//	if err := loader.Err(); err != nil { ... }
//
// y is nil for a loader without targets. Both tensors are freed when the
// loop body returns: keep one beyond it with Ref or Clone. A failed Next ends
// the loop and is what Err returns; each All starts with Err nil.
func (l *DataLoader) All() iter.Seq2[*Tensor, *Tensor] {
	return func(yield func(*Tensor, *Tensor) bool) {
		if l == nil {
			return
		}
		l.err = nil
		for {
			ok, x, y, err := l.Next()
			if err != nil || !ok {
				l.err = err
				return
			}
			more := yield(x, y)
			x.Free()
			y.Free()
			if !more {
				return
			}
		}
	}
}

// Epoch is All after StartEpoch(epoch): the epoch's batches, reshuffled by
// (seed, epoch) when the loader shuffles.
func (l *DataLoader) Epoch(epoch uint64) iter.Seq2[*Tensor, *Tensor] {
	return func(yield func(*Tensor, *Tensor) bool) {
		if l == nil {
			return
		}
		if err := l.StartEpoch(epoch); err != nil {
			l.err = err
			return
		}
		l.All()(yield)
	}
}

// Err is the error that ended the last All or Epoch loop early (nil when it
// ran to the end of the epoch or the body broke out).
func (l *DataLoader) Err() error {
	if l == nil {
		return errors.New("ctorch: DataLoader.Err: nil loader")
	}
	return l.err
}

// mustError carries a Must failure to Catch.
type mustError struct{ err error }

// Must returns v, or panics with err for Catch to turn back into an error:
//
//	func step(x, y *ctorch.Tensor) (err error) {
//		defer ctorch.Catch(&err)
//		out := ctorch.Must(model.Forward(x))
//		defer out.Free()
//		...
//	}
//
// The trade-off against Scope: see the README ("Errors in longer code").
func Must[T any](v T, err error) T {
	if err != nil {
		panic(mustError{err})
	}
	return v
}

// Must2 is Must for calls that return two values and an error (DataMnistReadDir, Topk).
func Must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(mustError{err})
	}
	return a, b
}

// Must0 is Must for calls that return only an error (Backward, Step).
func Must0(err error) {
	if err != nil {
		panic(mustError{err})
	}
}

// Catch, deferred, stores into *errp the error a Must or Must0 panicked
// with in this function (or anything it called); other panics go on.
func Catch(errp *error) {
	if r := recover(); r != nil {
		m, ok := r.(mustError)
		if !ok {
			panic(r)
		}
		if errp != nil {
			*errp = m.err
		}
	}
}
