// Package dist trains past one process: torch.distributed's vocabulary over
// ctorch's process groups (c10d's Gloo; NCCL where ctorch is built with it)
// for programs that torchrun starts or that meet at a TCPStore, over the C
// API's ctorch_dist_* functions (include/ctorch.h, "Distributed";
// docs/distributed.md).
//
//	g, err := dist.InitProcessGroup(nil) // torchrun's environment (env://)
//	defer g.Destroy()
//	t, _ := ctorch.FromSlice([]float32{float32(g.Rank() + 1)}, 1)
//	err = g.AllReduce(t, dist.Sum) // the sum over the ranks, in place
//	...
//	err = g.AverageGradients(params) // after Backward, before the optimizer's step
//
// Where Python's torch.distributed keeps a default group, a Go program holds
// the *Group that InitProcessGroup returns and calls its methods. The wire is
// c10d's own, so ranks of this package, of ctorch's C API, of its Python
// binding and of PyTorch of the same generation share a group. What differs
// from torch.distributed: Avg works on Gloo (a Sum, then a division); Recv
// needs its src; AverageGradients and BroadcastParameters are ctorch's
// bucketed data-parallel helpers, and DistributedDataParallel is
// torch.nn.parallel's, over c10d's own Reducer. Every failure is a returned error (the C
// function's message); every method is safe on a nil or destroyed Group.
package dist

import (
	"errors"
	"fmt"
	"time"

	ctorch "github.com/ctorch/ctorch-go"
)

// ReduceOp is torch.distributed.ReduceOp (ctorch_reduce_op).
type ReduceOp = ctorch.ReduceOp

// The reductions.
const (
	Sum     = ctorch.ReduceOpSum
	Avg     = ctorch.ReduceOpAvg
	Product = ctorch.ReduceOpProduct
	Min     = ctorch.ReduceOpMin
	Max     = ctorch.ReduceOpMax
)

var errNoGroup = errors.New("dist: nil or destroyed Group")

// millis is a timeout for the C API: 0 (its default) for 0, an error for a negative one.
func millis(what string, d time.Duration) (int64, error) {
	if d < 0 {
		return 0, fmt.Errorf("dist: %s: negative timeout %v", what, d)
	}
	if d == 0 {
		return 0, nil
	}
	return max(1, d.Milliseconds()), nil
}

// TCPStore is torch.distributed.TCPStore: a key-value store that ranks meet
// at. The master serves it; port 0 lets the OS pick one (see Port).
type TCPStore struct{ s *ctorch.Store }

// NewTCPStore connects to host:port (and serves it when isMaster).
// worldSize < 1: unknown; timeout 0: the C default (300 s).
func NewTCPStore(host string, port, worldSize int, isMaster bool, timeout time.Duration) (*TCPStore, error) {
	ms, err := millis("NewTCPStore", timeout)
	if err != nil {
		return nil, err
	}
	if worldSize < 1 {
		worldSize = -1
	}
	s, err := ctorch.StoreTcpNew(host, port, worldSize, isMaster, ms)
	if err != nil {
		return nil, err
	}
	return &TCPStore{s}, nil
}

// Port is the store's TCP port.
func (s *TCPStore) Port() (int, error) {
	if s == nil {
		return 0, errors.New("dist: nil TCPStore")
	}
	return s.s.Port()
}

// Close drops this handle (groups made on the store keep theirs).
func (s *TCPStore) Close() {
	if s != nil {
		s.s.Free()
	}
}

// Options are init_process_group's keywords; the zero value (or nil) is
// Gloo from torchrun's environment with torch's 30-minute timeout.
type Options struct {
	Backend string        // "gloo" (default) or "nccl"
	Timeout time.Duration // the rendezvous and every collective (0: 30 minutes)
	// Store, Rank and WorldSize: meet at this store instead of torchrun's
	// environment (Gloo only).
	Store           *TCPStore
	Rank, WorldSize int
	// BucketCapMB: AverageGradients' bucket size (0: 25, DistributedDataParallel's).
	BucketCapMB float64
}

// Group is a process group (c10d's). Its rank, size and backend are read
// once, when it is made.
type Group struct {
	pg                    *ctorch.ProcessGroup
	rank, size, localRank int
	backend               string
	bucketBytes           int
}

// InitProcessGroup is init_process_group: a group from torchrun's
// environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), or at
// opts.Store with opts.Rank and opts.WorldSize. It returns when every rank
// joined.
func InitProcessGroup(opts *Options) (*Group, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	ms, err := millis("InitProcessGroup", o.Timeout)
	if err != nil {
		return nil, err
	}
	if o.BucketCapMB < 0 {
		return nil, fmt.Errorf("dist: InitProcessGroup: negative BucketCapMB %v", o.BucketCapMB)
	}
	g := &Group{localRank: -1, bucketBytes: int(o.BucketCapMB * (1 << 20))}
	if o.Store == nil {
		var backend *string
		if o.Backend != "" {
			backend = &o.Backend
		}
		g.pg, g.localRank, err = ctorch.DistInitFromEnv(backend, ms)
	} else {
		if o.Backend != "" && o.Backend != "gloo" {
			return nil, fmt.Errorf("dist: InitProcessGroup: backend %q with a Store: only \"gloo\"", o.Backend)
		}
		if o.Rank < 0 || o.WorldSize < 1 || o.Rank >= o.WorldSize {
			return nil, fmt.Errorf("dist: InitProcessGroup: Rank %d of WorldSize %d with a Store", o.Rank, o.WorldSize)
		}
		g.pg, err = ctorch.ProcessGroupNewGloo(o.Store.s, o.Rank, o.WorldSize, ms)
	}
	if err == nil {
		g.rank, err = g.pg.Rank()
	}
	if err == nil {
		g.size, err = g.pg.Size()
	}
	if err == nil {
		g.backend, err = g.pg.Backend()
	}
	if err != nil {
		g.pg.Free()
		return nil, err
	}
	return g, nil
}

// Rank is this process's rank in the group (-1 for a nil Group).
func (g *Group) Rank() int {
	if g == nil {
		return -1
	}
	return g.rank
}

// WorldSize is the number of ranks (0 for a nil Group).
func (g *Group) WorldSize() int {
	if g == nil {
		return 0
	}
	return g.size
}

// LocalRank is LOCAL_RANK as torchrun set it (-1 when unset or the group came from a store).
func (g *Group) LocalRank() int {
	if g == nil {
		return -1
	}
	return g.localRank
}

// Backend is "gloo" or "nccl" ("" for a nil Group).
func (g *Group) Backend() string {
	if g == nil {
		return ""
	}
	return g.backend
}

func (g *Group) h() (*ctorch.ProcessGroup, error) {
	if g == nil || g.pg == nil {
		return nil, errNoGroup
	}
	return g.pg, nil
}

// Destroy is destroy_process_group: it shuts the group down (queued work
// first, bounded by the group's timeout) and frees it. Again: no-op.
func (g *Group) Destroy() error {
	if g == nil || g.pg == nil {
		return nil
	}
	err := g.pg.Destroy()
	g.pg.Free()
	g.pg = nil
	return err
}

// AllReduce: in place, t = op over every rank's t.
func (g *Group) AllReduce(t *ctorch.Tensor, op ReduceOp) error {
	pg, err := g.h()
	if err != nil {
		return err
	}
	return ctorch.DistAllReduce(pg, t, op)
}

// Broadcast: in place, every rank's t = rank src's.
func (g *Group) Broadcast(t *ctorch.Tensor, src int) error {
	pg, err := g.h()
	if err != nil {
		return err
	}
	return ctorch.DistBroadcast(pg, t, src)
}

// AllGather: out[i] = rank i's t (len(out) = WorldSize, written in place).
func (g *Group) AllGather(out []*ctorch.Tensor, t *ctorch.Tensor) error {
	pg, err := g.h()
	if err != nil {
		return err
	}
	return ctorch.DistAllGather(pg, out, t)
}

// Gather: on rank dst, out[i] = rank i's t; the other ranks pass nil.
func (g *Group) Gather(t *ctorch.Tensor, out []*ctorch.Tensor, dst int) error {
	pg, err := g.h()
	if err != nil {
		return err
	}
	return ctorch.DistGather(pg, out, t, dst)
}

// Scatter: t = rank src's in[Rank()]; the other ranks pass nil.
func (g *Group) Scatter(t *ctorch.Tensor, in []*ctorch.Tensor, src int) error {
	pg, err := g.h()
	if err != nil {
		return err
	}
	return ctorch.DistScatter(pg, t, in, src)
}

// Reduce: in place on rank dst, t = op over every rank's t (the others' t are scratch afterwards).
func (g *Group) Reduce(t *ctorch.Tensor, dst int, op ReduceOp) error {
	pg, err := g.h()
	if err != nil {
		return err
	}
	return ctorch.DistReduce(pg, t, op, dst)
}

// ReduceScatter: out = op over every rank's in[Rank()].
func (g *Group) ReduceScatter(out *ctorch.Tensor, in []*ctorch.Tensor, op ReduceOp) error {
	pg, err := g.h()
	if err != nil {
		return err
	}
	return ctorch.DistReduceScatter(pg, out, in, op)
}

// Send sends t to rank dst; a Recv with the same tag takes it.
func (g *Group) Send(t *ctorch.Tensor, dst, tag int) error {
	pg, err := g.h()
	if err != nil {
		return err
	}
	return ctorch.DistSend(pg, t, dst, tag)
}

// Recv receives into t what rank src sends with the same tag.
func (g *Group) Recv(t *ctorch.Tensor, src, tag int) error {
	pg, err := g.h()
	if err != nil {
		return err
	}
	return ctorch.DistRecv(pg, t, src, tag)
}

// Barrier returns when every rank reached it.
func (g *Group) Barrier() error {
	pg, err := g.h()
	if err != nil {
		return err
	}
	return ctorch.DistBarrier(pg)
}

// Work is a collective started by an ...Async method (async_op=True): its
// tensors hold their results once Wait returned nil.
type Work struct{ w *ctorch.Work }

// Wait blocks until the collective finished, at most timeout (0: the
// group's); after a timeout it may be waited for again. It frees nothing:
// Free does.
func (w *Work) Wait(timeout time.Duration) error {
	if w == nil {
		return errors.New("dist: nil Work")
	}
	ms, err := millis("Work.Wait", timeout)
	if err != nil {
		return err
	}
	return w.w.Wait(ms)
}

// IsCompleted says whether the collective finished (successfully or not); it never blocks.
func (w *Work) IsCompleted() (bool, error) {
	if w == nil {
		return false, errors.New("dist: nil Work")
	}
	return w.w.IsCompleted()
}

// Free releases the handle; a pending collective goes on (its tensors kept alive).
func (w *Work) Free() {
	if w != nil {
		w.w.Free()
	}
}

func work(w *ctorch.Work, err error) (*Work, error) {
	if err != nil {
		return nil, err
	}
	return &Work{w}, nil
}

// AllReduceAsync starts AllReduce.
func (g *Group) AllReduceAsync(t *ctorch.Tensor, op ReduceOp) (*Work, error) {
	pg, err := g.h()
	if err != nil {
		return nil, err
	}
	return work(ctorch.DistAllReduceAsync(pg, t, op))
}

// BroadcastAsync starts Broadcast.
func (g *Group) BroadcastAsync(t *ctorch.Tensor, src int) (*Work, error) {
	pg, err := g.h()
	if err != nil {
		return nil, err
	}
	return work(ctorch.DistBroadcastAsync(pg, t, src))
}

// AllGatherAsync starts AllGather.
func (g *Group) AllGatherAsync(out []*ctorch.Tensor, t *ctorch.Tensor) (*Work, error) {
	pg, err := g.h()
	if err != nil {
		return nil, err
	}
	return work(ctorch.DistAllGatherAsync(pg, out, t))
}

// BarrierAsync starts Barrier.
func (g *Group) BarrierAsync() (*Work, error) {
	pg, err := g.h()
	if err != nil {
		return nil, err
	}
	return work(ctorch.DistBarrierAsync(pg))
}

// AverageGradients averages each parameter's gradient over the group, in
// buckets of Options.BucketCapMB (as DistributedDataParallel's): call it
// after Backward and before the optimizer's step. A parameter without a
// gradient gets zeros first, so that every rank issues the same collectives.
// params: a module's Parameters(), in the same order on every rank.
func (g *Group) AverageGradients(params []*ctorch.Tensor) error {
	pg, err := g.h()
	if err != nil {
		return err
	}
	return ctorch.DistAverageGradients(pg, params, g.bucketBytes)
}

// BroadcastParameters copies rank src's parameter values to every rank
// (before training, so that all ranks start equal).
func (g *Group) BroadcastParameters(params []*ctorch.Tensor, src int) error {
	pg, err := g.h()
	if err != nil {
		return err
	}
	return ctorch.DistBroadcastParameters(pg, params, src)
}
