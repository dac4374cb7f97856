// LeNet-5 on Fashion-MNIST, one epoch: examples/lenet5.c in Go, every error handled
// (Must/Catch, Scope). The same seed gives the C program's output and
// weights bit for bit (tests/bindings/go_lenet5_twin.py); the last line's
// accuracies are those of the saved weights loaded into a fresh model.
package main

import (
	"flag"
	"fmt"
	"log"
	"time"

	ct "github.com/ctorch/ctorch-go"
	"github.com/ctorch/ctorch-go/nn"
)

var (
	dataDir = flag.String("data", "/usr/share/datasets/fashion-mnist", "Fashion-MNIST's IDX files")
	seed    = flag.Uint64("seed", 1, "seed of the weights and the data order")
	save    = flag.String("save", "lenet5.pt", "where to write the trained weights")
)

// Named children: the state-dict keys of lenet5.c and lenet5.py (conv1.weight, ...).
var layers = [][3]string{{"conv1", "Conv2d", "1, 6, 5"}, {"relu1", "ReLU", ""}, {"pool1", "MaxPool2d", "2"},
	{"conv2", "Conv2d", "6, 16, 5"}, {"relu2", "ReLU", ""}, {"pool2", "MaxPool2d", "2"}, {"flatten", "Flatten", ""},
	{"fc1", "Linear", "256, 120"}, {"relu3", "ReLU", ""}, {"fc2", "Linear", "120, 84"}, {"relu4", "ReLU", ""},
	{"fc3", "Linear", "84, 10"}}

func lenet5() *nn.Module {
	net := ct.Must(nn.New("Sequential", ""))
	for _, l := range layers {
		ct.Must(net.RegisterModule(l[0], ct.Must(nn.New(l[1], l[2]))))
	}
	return net
}

// hits counts the rows whose label is among the k highest logits.
func hits(s *ct.Scope, logits, y *ct.Tensor, k int64) int64 {
	_, idx := s.T2(ct.Topk(logits, k, 1, true, true))
	return ct.Must(s.T(ct.Sum(s.T(ct.Eq_Tensor(idx, s.T(ct.Unsqueeze(y, 1)))), nil)).ItemInt64())
}

// evaluate gives net's accuracy and top-5 accuracy on test (s keeps the logits: no graph, 10 batches).
func evaluate(s *ct.Scope, net *nn.Module, test *ct.DataLoader) (acc, top5 float64) {
	var c [3]int64
	ct.Must0(ct.InferenceMode(func() error {
		for x, y := range test.Epoch(0) {
			logits := s.T(net.Forward(x))
			c = [3]int64{c[0] + hits(s, logits, y, 1), c[1] + hits(s, logits, y, 5), c[2] + ct.Must(y.Numel())}
		}
		return test.Err()
	}))
	return float64(c[0]) / float64(c[2]), float64(c[1]) / float64(c[2])
}

func run() (err error) {
	defer ct.Catch(&err)
	var s ct.Scope
	defer s.Free()
	trainImg, trainY := ct.Must2(ct.DataMnistReadDir(*dataDir, true))
	testImg, testY := ct.Must2(ct.DataMnistReadDir(*dataDir, false))
	scaled := func(img *ct.Tensor) *ct.Tensor {
		return s.T(ct.Div_Scalar(s.T(img.ToDtype(ct.DTypeFloat32)), ct.Float(255)))
	}
	// Standardised with the training set's mean and (unbiased) std, as lenet5.c.
	mean, std := s.T(ct.Mean(scaled(trainImg), nil)), s.T(ct.Std(scaled(trainImg), true))
	prep := func(img *ct.Tensor) *ct.Tensor {
		return s.T(ct.Reshape(s.T(ct.Div_Tensor(s.T(ct.Sub_Tensor(scaled(img), mean, ct.Int(1))), std)), []int64{-1, 1, 28, 28}))
	}
	train := ct.Must(ct.DataLoaderNew(prep(trainImg), trainY, 256, true, *seed, false))
	test := ct.Must(ct.DataLoaderNew(prep(testImg), testY, 1000, false, 0, false))
	ct.Must0(ct.ManualSeed(*seed))
	net := lenet5()
	opt := ct.Must(net.NewOptimizer(ct.OptimizerKindAdamw, nil)) // torch's defaults: lr 1e-3, weight decay 0.01
	fmt.Printf("LeNet-5 on Fashion-MNIST (%d training images), 1 epoch(s), batch 256, %d thread(s), seed %d\n",
		ct.Must(trainY.Numel()), ct.Must(ct.GetNumThreads()), *seed)
	t0, lossSum, correct, seen := time.Now(), 0.0, int64(0), int64(0)
	for x, y := range train.Epoch(0) {
		var s ct.Scope
		logits := s.T(net.Forward(x))
		loss := s.T(ct.CrossEntropyLossOpts(logits, y, nil))
		ct.Must0(opt.BackwardStep(loss))
		lossSum, seen = lossSum+ct.Must(loss.ItemDouble())*float64(ct.Must(y.Numel())), seen+ct.Must(y.Numel())
		ct.Must0(ct.NoGrad(func() error { correct += hits(&s, logits, y, 1); return nil }))
		ct.Must0(s.Free())
	}
	ct.Must0(train.Err())
	dt := time.Since(t0).Seconds()
	acc, top5 := evaluate(&s, net, test)
	fmt.Printf("epoch 1/1 loss=%.4f train_acc=%.4f test_acc=%.4f top5=%.4f images_per_s=%.1f time=%.1fs\n",
		lossSum/float64(seen), float64(correct)/float64(seen), acc, top5, float64(seen)/dt, dt)
	ct.Must0(net.Save(*save))
	fmt.Printf("saved weights to %s\n", *save)
	again := lenet5()
	ct.Must2(again.Load(*save, true))
	acc, top5 = evaluate(&s, again, test) // the reloaded weights: the last line must still be lenet5.c's
	fmt.Printf("test_accuracy=%.4f top5=%.4f images_per_s=%.1f\n", acc, top5, float64(seen)/dt)
	return nil
}

func main() {
	flag.Parse()
	if err := run(); err != nil {
		log.Fatal("lenet5: ", err)
	}
}
