// bench/bindings, Go: per-call add on 1 element (freed at once) and an MLP
// training step through the generated binding. Prints JSON.
// Usage: bench ITERS STEPS
package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	ctorch "github.com/ctorch/ctorch-go"
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func bestOf(n int, fn func(int), iters int) float64 {
	best := math.Inf(1)
	for r := 0; r < n; r++ {
		t0 := time.Now()
		fn(iters)
		best = math.Min(best, float64(time.Since(t0).Nanoseconds())/float64(iters))
	}
	return best
}

func param(fan float64, shape ...int64) *ctorch.Tensor {
	t := must(ctorch.Empty_memory_format(shape, nil, nil, nil, nil, nil))
	if err := ctorch.InitUniform_(t, -1/math.Sqrt(fan), 1/math.Sqrt(fan)); err != nil {
		panic(err)
	}
	if err := t.SetRequiresGrad(true); err != nil {
		panic(err)
	}
	return t
}

func main() {
	iters, _ := strconv.Atoi(os.Args[1])
	steps, _ := strconv.Atoi(os.Args[2])
	_ = ctorch.SetNumThreads(1)
	_ = ctorch.ManualSeed(0)
	a := must(ctorch.FromFloat32([]float32{1}, 1))
	one := ctorch.Int(1)
	addNs := bestOf(5, func(n int) {
		for i := 0; i < n; i++ {
			r := must(ctorch.Add_Tensor(a, a, one))
			r.Free()
		}
	}, iters)
	w1, b1, w2, b2 := param(784, 128, 784), param(784, 128), param(128, 10, 128), param(128, 10)
	x := must(ctorch.Randn([]int64{64, 784}, nil, nil, nil, nil))
	y := must(ctorch.Randint(10, []int64{64}, ctorch.Ptr(ctorch.DTypeInt64), nil, nil, nil))
	o := must(ctorch.OptimOptionsDefault(ctorch.OptimizerKindAdam))
	o.Lr = 1e-3
	opt := must(ctorch.OptimizerNew(ctorch.OptimizerKindAdam, []*ctorch.Tensor{w1, b1, w2, b2}, &o))
	stepUs := bestOf(3, func(n int) {
		for i := 0; i < n; i++ {
			h := must(ctorch.Linear(x, w1, b1))
			hr := must(ctorch.Relu(h))
			logits := must(ctorch.Linear(hr, w2, b2))
			loss := must(ctorch.CrossEntropyLoss(logits, y, nil, ctorch.ReductionMean, -100, 0))
			_ = opt.ZeroGrad(true)
			if err := loss.Backward(nil, false, false, nil); err != nil {
				panic(err)
			}
			_ = opt.Step()
			h.Free()
			hr.Free()
			logits.Free()
			loss.Free()
		}
	}, steps) / 1000
	fmt.Printf("{\"binding\": \"go\", \"add_ns\": %.1f, \"train_step_us\": %.1f}\n", addNs, stepUs)
}
