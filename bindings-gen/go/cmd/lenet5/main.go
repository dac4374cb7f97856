// Trains LeNet-5 (examples/lenet5.py's architecture) on Fashion-MNIST with
// the Go binding's module classes (ctorch/nn: a custom module holding Conv2d
// and Linear children), 2 epochs of AdamW at batch 256, and checks the test
// accuracy, that the loss fell, that the state-dict keys are Python's, and
// that a C container (Sequential) runs the Go forward through its callback.
// Exits 77 (skipped) without the data set.
// Usage: lenet5 [-steps N -min-accuracy A] (a short run: tests/package/run_fresh.sh
// builds it from a fresh module that requires this one)
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	ctorch "github.com/ctorch/ctorch-go"
	"github.com/ctorch/ctorch-go/nn"
)

const epochs = 2

var (
	maxSteps    = flag.Int("steps", 0, "stop after this many steps (0: train the 2 epochs)")
	minAccuracy = flag.Float64("min-accuracy", 0.80, "the test accuracy to reach")
)

func must[T any](v T, err error) T {
	ok(err)
	return v
}

func ok(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}

type op func(*ctorch.Tensor) (*ctorch.Tensor, error)

// chain applies ops in order to x (borrowed), freeing every intermediate.
func chain(x *ctorch.Tensor, ops ...op) (*ctorch.Tensor, error) {
	cur := x
	for _, f := range ops {
		next, err := f(cur)
		if cur != x {
			cur.Free()
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

func call(m *nn.Module) op {
	return func(t *ctorch.Tensor) (*ctorch.Tensor, error) { return m.Forward(t) }
}

func pool(t *ctorch.Tensor) (*ctorch.Tensor, error) {
	return ctorch.MaxPool2d(t, []int64{2}, []int64{}, []int64{0}, []int64{1}, false) // F.max_pool2d(t, 2)
}

func flatten(t *ctorch.Tensor) (*ctorch.Tensor, error) { return ctorch.Flatten_using_ints(t, 1, -1) }

// LeNet5 is a module whose forward is Go code; its children are registered
// in Python's attribute order, so its state dict has Python's keys.
type LeNet5 struct {
	*nn.Module
	conv1, conv2, fc1, fc2, fc3 *nn.Module
}

func NewLeNet5() (*LeNet5, error) {
	l := &LeNet5{}
	var err error
	l.Module, err = nn.NewCustom("LeNet5", func(in []*ctorch.Tensor, _ string) ([]*ctorch.Tensor, error) {
		y, err := l.Forward(in[0])
		return []*ctorch.Tensor{y}, err
	})
	if err != nil {
		return nil, err
	}
	children := []struct {
		name string
		dst  **nn.Module
		make func() (*nn.Module, error)
	}{
		{"conv1", &l.conv1, func() (*nn.Module, error) { return nn.NewConv2d(1, 6, []int64{5}, nil) }},
		{"conv2", &l.conv2, func() (*nn.Module, error) { return nn.NewConv2d(6, 16, []int64{5}, nil) }},
		{"fc1", &l.fc1, func() (*nn.Module, error) { return nn.NewLinear(256, 120, nil) }},
		{"fc2", &l.fc2, func() (*nn.Module, error) { return nn.NewLinear(120, 84, nil) }},
		{"fc3", &l.fc3, func() (*nn.Module, error) { return nn.NewLinear(84, 10, nil) }},
	}
	for _, c := range children {
		m, err := c.make()
		if err == nil {
			*c.dst, err = l.RegisterModule(c.name, m)
		}
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Forward is F.relu/max_pool2d between the layers, as examples/lenet5.py.
func (l *LeNet5) Forward(x *ctorch.Tensor) (*ctorch.Tensor, error) {
	return chain(x, call(l.conv1), ctorch.Relu, pool, call(l.conv2), ctorch.Relu, pool, flatten,
		call(l.fc1), ctorch.Relu, call(l.fc2), ctorch.Relu, call(l.fc3))
}

// prepare: uint8 images [N,28,28] -> standardised float32 [N,1,28,28].
func prepare(images *ctorch.Tensor) *ctorch.Tensor {
	return must(chain(images,
		func(t *ctorch.Tensor) (*ctorch.Tensor, error) { return t.ToDtype(ctorch.DTypeFloat32) },
		func(t *ctorch.Tensor) (*ctorch.Tensor, error) { return ctorch.Reshape(t, []int64{-1, 1, 28, 28}) },
		func(t *ctorch.Tensor) (*ctorch.Tensor, error) { return ctorch.Div_Scalar(t, ctorch.Float(255)) },
		func(t *ctorch.Tensor) (*ctorch.Tensor, error) {
			return ctorch.Sub_Scalar(t, ctorch.Float(0.2860), ctorch.Int(1))
		},
		func(t *ctorch.Tensor) (*ctorch.Tensor, error) { return ctorch.Div_Scalar(t, ctorch.Float(0.3530)) }))
}

func accuracy(model *nn.Module, x, y *ctorch.Tensor) (acc float64) {
	ok(ctorch.NoGrad(func() error {
		mean, err := chain(must(model.Forward(x)),
			func(t *ctorch.Tensor) (*ctorch.Tensor, error) {
				defer t.Free()
				return ctorch.Argmax(t, ctorch.Ptr(int64(1)), false)
			},
			func(t *ctorch.Tensor) (*ctorch.Tensor, error) { return ctorch.Eq_Tensor(t, y) },
			func(t *ctorch.Tensor) (*ctorch.Tensor, error) { return t.ToDtype(ctorch.DTypeFloat32) },
			func(t *ctorch.Tensor) (*ctorch.Tensor, error) { return ctorch.Mean(t, nil) })
		if err == nil {
			defer mean.Free()
			acc, err = mean.ItemDouble()
		}
		return err
	}))
	return acc
}

func main() {
	flag.Parse()
	dir := os.Getenv("CTORCH_FASHION_MNIST")
	if dir == "" {
		dir = "/usr/share/datasets/fashion-mnist"
	}
	if _, err := os.Stat(dir + "/train-images-idx3-ubyte.gz"); err != nil {
		fmt.Printf("skipped: Fashion-MNIST not found in %s (package dataset-fashion-mnist)\n", dir)
		os.Exit(77)
	}
	ok(ctorch.ManualSeed(0))
	ok(ctorch.SetNumThreads(1))
	start := time.Now()
	trImages, trLabels, err := ctorch.DataMnistReadDir(dir, true)
	ok(err)
	teImages, teLabels, err := ctorch.DataMnistReadDir(dir, false)
	ok(err)
	xTrain, xTest := prepare(trImages), prepare(teImages)
	trImages.Free()
	teImages.Free()

	model := must(NewLeNet5())
	defer model.Free() // the forward closure is held by the library until then
	var keys []string
	for _, e := range must(model.StateDict()) {
		keys = append(keys, e.Name)
		e.Tensor.Free()
	}
	want := "conv1.weight conv1.bias conv2.weight conv2.bias fc1.weight fc1.bias fc2.weight fc2.bias fc3.weight fc3.bias"
	if got := strings.Join(keys, " "); got != want {
		ok(fmt.Errorf("state_dict keys %q, Python's are %q", got, want))
	}
	if n := must(model.NumParameters(false)); n != 44426 {
		ok(fmt.Errorf("%d parameters, Python's LeNet-5 has 44426", n))
	}

	opts := must(ctorch.OptimOptionsDefault(ctorch.OptimizerKindAdamw))
	opts.Lr = 2e-3
	opt := must(ctorch.OptimizerNew(ctorch.OptimizerKindAdamw, must(model.Parameters()), &opts))
	defer opt.Free()
	loader := must(ctorch.DataLoaderNew(xTrain, trLabels, 256, true, 1, false))
	defer loader.Free()
	steps := 0
	var first, last float64
	for e := 0; e < epochs && (*maxSteps == 0 || steps < *maxSteps); e++ {
		ok(loader.StartEpoch(uint64(e)))
		for {
			if *maxSteps > 0 && steps == *maxSteps {
				break
			}
			more, x, y, err := loader.Next()
			ok(err)
			if !more {
				break
			}
			logits := must(model.Forward(x))
			loss := must(ctorch.CrossEntropyLoss(logits, y, nil, ctorch.ReductionMean, -100, 0.0))
			ok(opt.ZeroGrad(true))
			ok(loss.Backward(nil, false, false, nil))
			ok(opt.Step())
			last = must(loss.ItemDouble())
			if steps == 0 {
				first = last
			}
			for _, t := range []*ctorch.Tensor{x, y, logits, loss} {
				t.Free()
			}
			steps++
		}
	}
	trainS := time.Since(start).Seconds()

	// Evaluated through a C container: Sequential's forward calls the Go forward back.
	ok(model.Eval())
	seq := must(nn.Sequential(model.Module))
	defer seq.Free()
	acc := accuracy(seq, xTest, teLabels)
	fmt.Printf("go binding: LeNet-5 (ctorch/nn modules), %d steps of 256 in %.1f s, loss %.4f -> %.4f, "+
		"test accuracy %.2f%%\n", steps, trainS, first, last, acc*100)
	if !(last < first) || acc < *minAccuracy {
		fmt.Printf("FAIL: the loss did not fall or the accuracy is below %.0f%%\n", *minAccuracy*100)
		os.Exit(1)
	}
}
