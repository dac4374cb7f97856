// Trains a 784-128-10 MLP on Fashion-MNIST through the generated Go binding
// (ctorch's loader, autograd and Adam), one epoch, and checks the test
// accuracy. Exits 77 (skipped) without the data set.
package main

import (
	"fmt"
	"math"
	"os"
	"time"

	"ctorch"
)

const minAccuracy = 0.80

func must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	return v
}

func ok(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}

// prepare: uint8 images [N,28,28] -> standardised float32 [N,784].
func prepare(images *ctorch.Tensor) *ctorch.Tensor {
	f := must(images.ToDtype(ctorch.DTypeFloat32))
	defer f.Free()
	flat := must(ctorch.Reshape(f, []int64{-1, 784}))
	defer flat.Free()
	scaled := must(ctorch.Div_Scalar(flat, ctorch.Float(255)))
	defer scaled.Free()
	centred := must(ctorch.Sub_Scalar(scaled, ctorch.Float(0.2860), ctorch.Int(1)))
	defer centred.Free()
	return must(ctorch.Div_Scalar(centred, ctorch.Float(0.3530)))
}

func param(fanIn float64, shape ...int64) *ctorch.Tensor {
	t := must(ctorch.Empty_memory_format(shape, nil, nil, nil, nil, nil))
	b := 1 / math.Sqrt(fanIn)
	ok(ctorch.InitUniform_(t, -b, b))
	ok(t.SetRequiresGrad(true))
	return t
}

type mlp struct{ w1, b1, w2, b2 *ctorch.Tensor }

func (m mlp) forward(x *ctorch.Tensor) (*ctorch.Tensor, error) {
	h, err := ctorch.Linear(x, m.w1, m.b1)
	if err != nil {
		return nil, err
	}
	defer h.Free()
	r, err := ctorch.Relu(h)
	if err != nil {
		return nil, err
	}
	defer r.Free()
	return ctorch.Linear(r, m.w2, m.b2)
}

func main() {
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

	m := mlp{param(784, 128, 784), param(784, 128), param(128, 10, 128), param(128, 10)}
	params := []*ctorch.Tensor{m.w1, m.b1, m.w2, m.b2}
	adam := must(ctorch.OptimOptionsDefault(ctorch.OptimizerKindAdam))
	adam.Lr = 1e-3
	opt := must(ctorch.OptimizerNew(ctorch.OptimizerKindAdam, params, &adam))
	defer opt.Free()
	loader := must(ctorch.DataLoaderNew(xTrain, trLabels, 64, true, 1, false))
	defer loader.Free()
	ok(loader.StartEpoch(0))
	steps := 0
	var last float64
	for {
		more, x, y, err := loader.Next()
		ok(err)
		if !more {
			break
		}
		func() {
			defer x.Free()
			defer y.Free()
			logits := must(m.forward(x))
			defer logits.Free()
			loss := must(ctorch.CrossEntropyLoss(logits, y, nil, ctorch.ReductionMean, -100, 0.0))
			defer loss.Free()
			ok(opt.ZeroGrad(true))
			ok(loss.Backward(nil, false, false, nil))
			ok(opt.Step())
			last = must(loss.ItemDouble())
		}()
		steps++
	}
	trainS := time.Since(start).Seconds()

	var accuracy float64
	ok(ctorch.NoGrad(func() error {
		logits, err := m.forward(xTest)
		if err != nil {
			return err
		}
		defer logits.Free()
		pred := must(ctorch.Argmax(logits, ctorch.Ptr(int64(1)), false))
		defer pred.Free()
		hits := must(ctorch.Eq_Tensor(pred, teLabels))
		defer hits.Free()
		hf := must(hits.ToDtype(ctorch.DTypeFloat32))
		defer hf.Free()
		mean := must(ctorch.Mean(hf, nil))
		defer mean.Free()
		accuracy = must(mean.ItemDouble())
		return nil
	}))
	fmt.Printf("go binding: MLP 784-128-10, 1 epoch (%d steps of 64) in %.1f s, final loss %.4f, test accuracy %.2f%%\n",
		steps, trainS, last, accuracy*100)
	if accuracy < minAccuracy {
		fmt.Printf("FAIL: accuracy below %.0f%%\n", minAccuracy*100)
		os.Exit(1)
	}
}
