// One rank of a data-parallel training in Go (package dist), started by
// torchrun (scripts/ddp -n 2): a collective sanity check (AllReduce of
// rank + 1 over 2 ranks is 3; the Async form; Send/Recv; a refused call is
// a returned error and the group goes on), then 20 SGD steps of a 2-layer
// MLP, each rank on its half of a fixed global batch with AverageGradients
// after Backward. Both ranks must end with bit-identical parameters
// (AllGather), and rank 0 then trains the same model alone on the whole
// batch: the parameters must agree within 1e-5. The same model, from the same
// initial parameters on the same data, trained through
// dist.DistributedDataParallel (gradients averaged by c10d's Reducer during
// Backward) must end bit-identical to the AverageGradients run (2 ranks: both
// divide by 2 exactly), with at least one bucket; and one step of gradient
// accumulation (the first micro-batch under NoSync) must leave the local
// gradient after the NoSync backward and, after the synchronised one, the
// average of the two micro-batches' synchronised gradients.
package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	ctorch "github.com/ctorch/ctorch-go"
	"github.com/ctorch/ctorch-go/dist"
	"github.com/ctorch/ctorch-go/nn"
)

const (
	steps = 20
	batch = 16
	lr    = 0.1
)

var rank = -1

func must[T any](v T, err error) T {
	ok(err)
	return v
}

func ok(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "FAIL (rank %d): %s\n", rank, fmt.Sprintf(format, a...))
	os.Exit(1)
}

// The same initial weights on every rank and in the reference.
func makeModel() *nn.Module {
	ok(ctorch.ManualSeed(0))
	return must(nn.Sequential(must(nn.NewLinear(4, 8, nil)), must(nn.NewTanh()), must(nn.NewLinear(8, 2, nil))))
}

// One SGD step per iteration on (x, y); AverageGradients between backward and step when g is set.
func train(model *nn.Module, x, y *ctorch.Tensor, g *dist.Group) {
	trainWith(model, plain(model), x, y, g)
}

// forwardFn is a model's call on one input.
type forwardFn func(*ctorch.Tensor) (*ctorch.Tensor, error)

// plain is model's own forward, without a wrapper.
func plain(model *nn.Module) forwardFn {
	return func(x *ctorch.Tensor) (*ctorch.Tensor, error) { return model.Forward(x) }
}

// train with forward as the model's call (a DistributedDataParallel's Forward).
func trainWith(model *nn.Module, forward forwardFn, x, y *ctorch.Tensor,
	g *dist.Group) {
	params := must(model.Parameters())
	opt := must(ctorch.NewOptimizer(ctorch.OptimizerKindSgd, params, &ctorch.OptimizerOptions{Lr: lr}))
	defer opt.Free()
	for range steps {
		_, err := opt.StepClosure(func() (float64, error) {
			if err := opt.ZeroGrad(true); err != nil {
				return 0, err
			}
			out, err := forward(x)
			if err != nil {
				return 0, err
			}
			defer out.Free()
			loss, err := ctorch.MseLoss(out, y, ctorch.ReductionMean)
			if err != nil {
				return 0, err
			}
			defer loss.Free()
			if err := loss.Backward(nil, false, false, nil); err != nil {
				return 0, err
			}
			if g != nil {
				return 0, g.AverageGradients(params)
			}
			return 0, nil
		})
		ok(err)
	}
}

// Every parameter's values, in order, as one float32 slice.
func flat(model *nn.Module) []float32 {
	var out []float32
	for _, p := range must(model.Parameters()) {
		out = append(out, must(p.Float32s())...)
	}
	return out
}

func scalar(v float32) *ctorch.Tensor { return must(ctorch.FromSlice([]float32{v}, 1)) }

func main() {
	g, err := dist.InitProcessGroup(&dist.Options{Backend: "gloo", Timeout: time.Minute})
	ok(err)
	rank = g.Rank()
	if g.WorldSize() != 2 || g.Backend() != "gloo" {
		fail("world size %d, backend %q: expected 2, gloo", g.WorldSize(), g.Backend())
	}

	// Collectives.
	t := scalar(float32(rank + 1))
	ok(g.AllReduce(t, dist.Sum))
	if v := must(t.Float32s())[0]; v != 3 {
		fail("AllReduce(rank + 1) = %v, expected 3", v)
	}
	m := scalar(float32(rank + 1))
	w := must(g.AllReduceAsync(m, dist.Max))
	ok(w.Wait(0))
	w.Free()
	if v := must(m.Float32s())[0]; v != 2 {
		fail("AllReduceAsync(rank + 1, Max) = %v, expected 2", v)
	}
	b := scalar(float32(rank*10 + 7))
	ok(g.Broadcast(b, 1))
	if v := must(b.Float32s())[0]; v != 17 {
		fail("Broadcast from 1 = %v, expected 17", v)
	}
	if rank == 0 {
		ok(g.Send(must(ctorch.FromSlice([]float32{5, 6}, 2)), 1, 3))
	} else {
		p := must(ctorch.FromSlice([]float32{0, 0}, 2))
		ok(g.Recv(p, 0, 3))
		if v := must(p.Float32s()); v[0] != 5 || v[1] != 6 {
			fail("Recv got %v", v)
		}
	}
	// A refused call returns the C function's error; the group stays usable.
	if err := g.Broadcast(b, 2); err == nil || !strings.Contains(err.Error(), "ctorch_dist_broadcast") {
		fail("Broadcast from rank 2 gave %v, expected an error naming ctorch_dist_broadcast", err)
	}
	ok(g.Barrier())

	// Data-parallel training: each rank its half of the global batch.
	ok(ctorch.ManualSeed(1))
	x := must(ctorch.Randn([]int64{batch, 4}, nil, nil, nil, nil))
	y := must(ctorch.Randn([]int64{batch, 2}, nil, nil, nil, nil))
	model := makeModel()
	ok(g.BroadcastParameters(must(model.Parameters()), 0))
	start := time.Now()
	half := int64(batch / 2)
	train(model, must(ctorch.Narrow(x, 0, int64(rank)*half, half)), must(ctorch.Narrow(y, 0, int64(rank)*half, half)), g)
	mine := flat(model)
	gathered := []*ctorch.Tensor{
		must(ctorch.Zeros([]int64{int64(len(mine))}, nil, nil, nil, nil)),
		must(ctorch.Zeros([]int64{int64(len(mine))}, nil, nil, nil, nil)),
	}
	ok(g.AllGather(gathered, must(ctorch.FromSlice(mine, int64(len(mine))))))
	r0, r1 := must(gathered[0].Float32s()), must(gathered[1].Float32s())
	for i := range mine {
		if math.Float32bits(r0[i]) != math.Float32bits(r1[i]) {
			fail("parameter element %d differs between the ranks: %v, %v", i, r0[i], r1[i])
		}
	}
	if rank == 0 {
		alone := makeModel()
		train(alone, x, y, nil)
		maxDiff := 0.0
		for i, v := range flat(alone) {
			maxDiff = math.Max(maxDiff, math.Abs(float64(v)-float64(mine[i])))
		}
		if !(maxDiff <= 1e-5) {
			fail("2 ranks vs one process on the whole batch: max |diff| %g > 1e-5", maxDiff)
		}
		fmt.Printf("rank 0: %d steps on 2 ranks, %d parameters bit-identical across ranks, "+
			"max |diff| to one process %.2e (%d ms)\n", steps, len(mine), maxDiff, time.Since(start).Milliseconds())
	}
	checkDDP(g, mine, x, y)
	ok(g.Barrier())
	ok(g.Destroy())
	if err := g.Barrier(); err == nil {
		fail("Barrier after Destroy gave no error")
	}
	var none *dist.Group
	if err := none.AllReduce(t, dist.Sum); err == nil {
		fail("AllReduce on a nil Group gave no error")
	}
	fmt.Printf("rank %d: ok\n", rank)
}

// Each parameter's gradient, in order, as one float32 slice (zeros for none).
func grads(model *nn.Module) []float32 {
	var out []float32
	for _, p := range must(model.Parameters()) {
		g := must(p.Grad())
		if g == nil {
			out = append(out, make([]float32, len(must(p.Float32s())))...)
			continue
		}
		out = append(out, must(g.Float32s())...)
	}
	return out
}

// backward of the mean squared error of forward(x) against y.
func backward(forward forwardFn, x, y *ctorch.Tensor) {
	out := must(forward(x))
	defer out.Free()
	loss := must(ctorch.MseLoss(out, y, ctorch.ReductionMean))
	defer loss.Free()
	ok(loss.Backward(nil, false, false, nil))
}

// The DistributedDataParallel wrapper against the AverageGradients run (avg:
// its final parameters) on the same model, data and initial parameters.
func checkDDP(g *dist.Group, avg []float32, x, y *ctorch.Tensor) {
	half := int64(batch / 2)
	xs, ys := must(ctorch.Narrow(x, 0, int64(rank)*half, half)), must(ctorch.Narrow(y, 0, int64(rank)*half, half))
	model := makeModel()
	ddp := must(dist.NewDistributedDataParallel(g, model, nil))
	defer ddp.Close()
	trainWith(model, ddp.Forward, xs, ys, nil)
	got := flat(model)
	for i := range avg {
		if math.Float32bits(got[i]) != math.Float32bits(avg[i]) {
			fail("DistributedDataParallel: parameter element %d is %v, AverageGradients gave %v", i, got[i], avg[i])
		}
	}
	buckets := must(ddp.BucketCount())
	if buckets < 1 {
		fail("DistributedDataParallel: %d buckets", buckets)
	}
	seen := 0
	for b := range buckets {
		seen += len(must(ddp.BucketIndices(b)))
	}
	if n := len(must(model.Parameters())); seen != n {
		fail("DistributedDataParallel: the buckets hold %d parameters, the model %d", seen, n)
	}

	// Gradient accumulation: two micro-batches of this rank's rows, the first under NoSync.
	quarter := half / 2
	x1, y1 := must(ctorch.Narrow(xs, 0, 0, quarter)), must(ctorch.Narrow(ys, 0, 0, quarter))
	x2, y2 := must(ctorch.Narrow(xs, 0, quarter, quarter)), must(ctorch.Narrow(ys, 0, quarter, quarter))
	ok(model.ZeroGrad())
	backward(plain(model), x1, y1) // the local gradient, no wrapper
	local := grads(model)
	var synced1, synced2 []float32
	for i, xy := range [][2]*ctorch.Tensor{{x1, y1}, {x2, y2}} {
		ok(model.ZeroGrad())
		backward(ddp.Forward, xy[0], xy[1])
		if i == 0 {
			synced1 = grads(model)
		} else {
			synced2 = grads(model)
		}
	}
	ok(model.ZeroGrad())
	ok(ddp.NoSync(func() error {
		backward(ddp.Forward, x1, y1)
		return nil
	}))
	for i, v := range grads(model) {
		if math.Float32bits(v) != math.Float32bits(local[i]) {
			fail("under NoSync: gradient element %d is %v, the local gradient %v", i, v, local[i])
		}
	}
	backward(ddp.Forward, x2, y2)
	maxDiff := 0.0
	for i, v := range grads(model) {
		maxDiff = math.Max(maxDiff, math.Abs(float64(v)-float64(synced1[i]+synced2[i])))
	}
	if !(maxDiff <= 1e-6) {
		fail("the accumulated gradient vs the sum of the two micro-batches' synchronised gradients: max |diff| %g > 1e-6", maxDiff)
	}
	if slicesEqual(local, synced1) {
		fail("the synchronised gradient equals the local one: nothing was averaged")
	}
	ddp.Close()
	ddp.Close() // idempotent
	if _, err := ddp.Forward(x1); err == nil {
		fail("Forward on a closed DistributedDataParallel gave no error")
	}
	if rank == 0 {
		fmt.Printf("rank 0: DistributedDataParallel: %d steps bit-identical to AverageGradients, buckets: %d, "+
			"accumulation under NoSync max |diff| %.2e\n", steps, buckets, maxDiff)
	}
}

func slicesEqual(a, b []float32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}
