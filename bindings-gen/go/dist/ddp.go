package dist

import (
	"errors"
	"fmt"
	"sync"

	ctorch "github.com/ctorch/ctorch-go"
	"github.com/ctorch/ctorch-go/nn"
)

// DDPOptions are torch.nn.parallel.DistributedDataParallel's keywords; the
// zero value (or nil) is its defaults.
type DDPOptions struct {
	// BucketCapMB caps the buckets (bucket_cap_mb; 0: DDP's 25). As in
	// DDP, the buckets rebuilt after the first iteration start with one of
	// 1 MiB.
	BucketCapMB float64
	// FindUnusedParameters: parameters the forward did not use are marked
	// ready rather than waited for (find_unused_parameters=True).
	FindUnusedParameters bool
	// GradientAsBucketView: each .grad is a view into its bucket, with no
	// copy back (gradient_as_bucket_view=True).
	GradientAsBucketView bool
	// NoBroadcastBuffers: buffers are not copied from rank 0 before each
	// forward (broadcast_buffers=False).
	NoBroadcastBuffers bool
}

// ctorch_ddp_new's flags (include/ctorch.h, CTORCH_DDP_*; the values are part of the ABI).
const (
	ddpFindUnusedParameters = 1 // CTORCH_DDP_FIND_UNUSED_PARAMETERS
	ddpGradientAsBucketView = 2 // CTORCH_DDP_GRADIENT_AS_BUCKET_VIEW
	ddpNoBroadcastBuffers   = 4 // CTORCH_DDP_NO_BROADCAST_BUFFERS
)

// flags is opts as ctorch_ddp_new's bucket_cap_bytes and flags.
func (o *DDPOptions) flags(fn string) (int, uint32, error) {
	if o == nil {
		return 0, 0, nil
	}
	if !(o.BucketCapMB >= 0) {
		return 0, 0, fmt.Errorf("dist: %s: BucketCapMB %v is not a size", fn, o.BucketCapMB)
	}
	var f uint32
	if o.FindUnusedParameters {
		f |= ddpFindUnusedParameters
	}
	if o.GradientAsBucketView {
		f |= ddpGradientAsBucketView
	}
	if o.NoBroadcastBuffers {
		f |= ddpNoBroadcastBuffers
	}
	return int(o.BucketCapMB * (1 << 20)), f, nil
}

// DistributedDataParallel is torch.nn.parallel.DistributedDataParallel over
// c10d's own Reducer (ctorch_ddp_*): the parameters are put in buckets whose
// all-reduce starts during Backward, as each bucket's gradients become
// ready, so that when Backward returns every .grad holds the group's
// average. Between a Forward and the end of its Backward the group must not
// be used by other calls. Construction is collective (every rank makes one,
// over the same shapes) and copies rank 0's parameters and buffers to every
// rank. The wrapper holds its module, group and parameters, so they live at
// least as long as it; Close frees it (idempotent), the module and group
// stay. Methods on a nil or closed wrapper return an error.
type DistributedDataParallel struct {
	mu     sync.Mutex // guards sync against NoSync calls from several goroutines
	ddp    *ctorch.Ddp
	group  *Group
	module *nn.Module       // nil for a wrapper made over parameters
	keep   []*ctorch.Tensor // the parameters and buffers of NewDistributedDataParallelParams
	sync   bool
}

var errNoDDP = errors.New("dist: nil or closed DistributedDataParallel")

// NewDistributedDataParallel wraps module (DistributedDataParallel(module,
// process_group=g, ...)); opts nil is DDP's defaults. The Reducer covers the
// module's parameters that require grad, in NamedParameters order.
func NewDistributedDataParallel(g *Group, module *nn.Module, opts *DDPOptions) (*DistributedDataParallel, error) {
	pg, err := g.h()
	if err != nil {
		return nil, err
	}
	if module == nil {
		return nil, errors.New("dist: NewDistributedDataParallel: nil module")
	}
	bytes, flags, err := opts.flags("NewDistributedDataParallel")
	if err != nil {
		return nil, err
	}
	d, err := ctorch.DdpNew(pg, module.NnModule(), bytes, flags)
	if err != nil {
		return nil, err
	}
	return &DistributedDataParallel{ddp: d, group: g, module: module, sync: true}, nil
}

// NewDistributedDataParallelParams is NewDistributedDataParallel over
// parameters (leaf tensors that require grad) and buffers (may be nil) of a
// model the package does not own, such as a TorchScript module's: its
// forward then goes through PreForward, your own call, and PostForward.
func NewDistributedDataParallelParams(g *Group, params, buffers []*ctorch.Tensor,
	opts *DDPOptions) (*DistributedDataParallel, error) {
	pg, err := g.h()
	if err != nil {
		return nil, err
	}
	bytes, flags, err := opts.flags("NewDistributedDataParallelParams")
	if err != nil {
		return nil, err
	}
	d, err := ctorch.DdpNewParams(pg, params, buffers, bytes, flags)
	if err != nil {
		return nil, err
	}
	keep := append(append([]*ctorch.Tensor{}, params...), buffers...)
	return &DistributedDataParallel{ddp: d, group: g, keep: keep, sync: true}, nil
}

func (d *DistributedDataParallel) h() (*ctorch.Ddp, error) {
	if d == nil || d.ddp == nil {
		return nil, errNoDDP
	}
	return d.ddp, nil
}

// Forward is DDP's forward on a wrapper made by NewDistributedDataParallel:
// PreForward, the module's Forward(x), PostForward on its output.
func (d *DistributedDataParallel) Forward(x *ctorch.Tensor) (*ctorch.Tensor, error) {
	h, err := d.h()
	if err != nil {
		return nil, err
	}
	return h.Forward(x)
}

// PreForward is what DDP does before the module's forward: the buckets'
// rebuild after the first iteration, preparing the Reducer, and (unless
// NoBroadcastBuffers) copying rank 0's buffers. Collective.
func (d *DistributedDataParallel) PreForward() error {
	h, err := d.h()
	if err != nil {
		return err
	}
	return h.PreForward()
}

// PostForward is what DDP does after the module's forward: it arms the
// Reducer for the coming Backward; with FindUnusedParameters it walks the
// graph from outputs to find the parameters the forward did not use.
func (d *DistributedDataParallel) PostForward(outputs ...*ctorch.Tensor) error {
	h, err := d.h()
	if err != nil {
		return err
	}
	return h.PostForward(outputs)
}

// NoSync is DDP's no_sync(): the backwards of the forwards that fn runs only
// accumulate .grad locally, with no communication; the first synchronised
// backward after it averages what accumulated. The previous state comes
// back when fn returns or panics, so NoSync calls nest.
func (d *DistributedDataParallel) NoSync(fn func() error) error {
	h, err := d.h()
	if err != nil {
		return err
	}
	d.mu.Lock()
	prev := d.sync
	if err := h.SetRequireSync(0); err != nil {
		d.mu.Unlock()
		return err
	}
	d.sync = false
	d.mu.Unlock()
	restore := func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.sync = prev
		if prev {
			return h.SetRequireSync(1)
		}
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			_ = restore()
			panic(p)
		}
	}()
	err = fn()
	if rerr := restore(); err == nil {
		err = rerr
	}
	return err
}

// BucketCount is the number of buckets the Reducer has now: 1 until the
// rebuild after the first iteration.
func (d *DistributedDataParallel) BucketCount() (int, error) {
	h, err := d.h()
	if err != nil {
		return 0, err
	}
	return h.BucketCount()
}

// BucketIndices are bucket i's parameters, as indices into the wrapper's
// parameters (the module's that require grad, in NamedParameters order, or
// the params given), in the bucket's order; bucket 0 is reduced first.
func (d *DistributedDataParallel) BucketIndices(i int) ([]int64, error) {
	h, err := d.h()
	if err != nil {
		return nil, err
	}
	if i < 0 {
		return nil, fmt.Errorf("dist: DistributedDataParallel.BucketIndices: negative bucket %d", i)
	}
	t, err := h.BucketIndices(i)
	if err != nil {
		return nil, err
	}
	defer t.Free()
	return t.Int64s()
}

// Module is the wrapped module (nil for a wrapper made over parameters).
func (d *DistributedDataParallel) Module() *nn.Module {
	if d == nil {
		return nil
	}
	return d.module
}

// Close frees the wrapper; the module and the group stay. Again: no-op.
func (d *DistributedDataParallel) Close() {
	if d == nil || d.ddp == nil {
		return
	}
	d.ddp.Free()
	d.ddp, d.group, d.module, d.keep = nil, nil, nil, nil
}
