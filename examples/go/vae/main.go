// A variational autoencoder on Fashion-MNIST in Go with the ctorch binding's
// classes (ctorch/nn modules, ctorch.Optimizer, ctorch.DataLoader,
// ctorch.Scope): examples/vae.c and examples/vae.py written as a Go user
// would. From the same seed: the same weights, batches, eps draws and losses
// as the C program, bit for bit (tests/bindings/vae_twins.py checks it on
// both libtorch versions), the same test loss (z = mu) and the same 8x8 grid
// of samples (z ~ N(0, 1) from a generator seeded with -seed), written as a
// grey PNG with Go's image/png.
//
//	go run . [-steps K] [-batch B] [-seed S] [-threads T] [-data DIR] [-test-images N]
//	         [-samples PNG] [-save PATH] [-load PATH]
//
// The last line: initial_loss=<nats/image> final_loss=<nats/image> test_loss=<nats/image> images_per_s=<n>
package main

import (
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"time"

	ctorch "github.com/ctorch/ctorch-go"
	"github.com/ctorch/ctorch-go/nn"
)

const latent, grid = 20, 8

var (
	steps      = flag.Int("steps", 4690, "training steps (4690: 10 epochs of 128)")
	batch      = flag.Int64("batch", 128, "batch size")
	seed       = flag.Uint64("seed", 1, "seed of the weights, the data order, the draws and the samples")
	threads    = flag.Int("threads", 0, "intra-op threads (0: libtorch's default)")
	dataDir    = flag.String("data", "/usr/share/datasets/fashion-mnist", "Fashion-MNIST's IDX files")
	testImages = flag.Int64("test-images", 0, "evaluate on the first N test images (0: all)")
	samples    = flag.String("samples", "vae_samples.png", "the grid of samples ('' = none)")
	save       = flag.String("save", "", "write the trained state dict here")
	load       = flag.String("load", "", "start from this state dict")
)

func ok(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "vae:", err)
		os.Exit(1)
	}
}

func must[T any](v T, err error) T {
	ok(err)
	return v
}

// VAE holds its five layers as children, in vae.py's order (the order of the
// random draws and of the state-dict keys fc1.weight, fc1.bias, ...).
type VAE struct {
	*nn.Module
	fc1, fc21, fc22, fc3, fc4 *nn.Module
}

func NewVAE() *VAE {
	v := &VAE{Module: must(nn.NewCustom("VAE", nil))}
	for _, l := range []struct {
		name    string
		dst     **nn.Module
		in, out int64
	}{{"fc1", &v.fc1, 784, 400}, {"fc21", &v.fc21, 400, latent}, {"fc22", &v.fc22, 400, latent},
		{"fc3", &v.fc3, latent, 400}, {"fc4", &v.fc4, 400, 784}} {
		*l.dst = must(v.RegisterModule(l.name, must(nn.NewLinear(l.in, l.out, nil))))
	}
	return v
}

// The methods below record what they make in s, which frees it.

func (v *VAE) encode(s *ctorch.Scope, x *ctorch.Tensor) (mu, logvar *ctorch.Tensor) {
	h := s.T(ctorch.Relu(s.T(v.fc1.Forward(x))))
	return s.T(v.fc21.Forward(h)), s.T(v.fc22.Forward(h))
}

func (v *VAE) decode(s *ctorch.Scope, z *ctorch.Tensor) *ctorch.Tensor {
	h := s.T(ctorch.Relu(s.T(v.fc3.Forward(z))))
	return s.T(ctorch.Sigmoid(s.T(v.fc4.Forward(h))))
}

// z = mu + eps * std, std = exp(0.5 * logvar), eps = randn_like(std).
func reparameterize(s *ctorch.Scope, mu, logvar *ctorch.Tensor) *ctorch.Tensor {
	std := s.T(ctorch.Exp(s.T(ctorch.Mul_Scalar(logvar, ctorch.Float(0.5)))))
	eps := s.T(ctorch.RandnLike(std, nil, nil, nil, nil, nil))
	return s.T(ctorch.Add_Tensor(mu, s.T(ctorch.Mul_Tensor(eps, std)), ctorch.Int(1)))
}

// BCE(sum) + KLD, KLD = -0.5 * sum(1 + logvar - mu^2 - exp(logvar)): vae.py's loss_function.
func lossFunction(s *ctorch.Scope, recon, x, mu, logvar *ctorch.Tensor) *ctorch.Tensor {
	one := ctorch.Int(1)
	bce := s.T(ctorch.BinaryCrossEntropy(recon, x, nil, ctorch.ReductionSum))
	kld := s.T(ctorch.Add_Scalar(logvar, one, one))
	kld = s.T(ctorch.Sub_Tensor(kld, s.T(ctorch.Pow_Tensor_Scalar(mu, ctorch.Int(2))), one))
	kld = s.T(ctorch.Sub_Tensor(kld, s.T(ctorch.Exp(logvar)), one))
	kld = s.T(ctorch.Mul_Scalar(s.T(ctorch.Sum(kld, nil)), ctorch.Float(-0.5)))
	return s.T(ctorch.Add_Tensor(bce, kld, one))
}

// sampleGrid: 64 decoded draws as a [240, 240] grey picture of white-framed
// 28x28 tiles, rounded as torchvision's save_image (x * 255 + 0.5, clamped).
func (v *VAE) sampleGrid(s *ctorch.Scope, seed uint64) *ctorch.Tensor {
	g := must(ctorch.GeneratorNew(ctorch.DeviceCpu(), seed))
	defer g.Free()
	z := s.T(ctorch.Randn_generator([]int64{grid * grid, latent}, g, nil, nil, nil, nil))
	x := s.T(ctorch.Reshape(v.decode(s, z), []int64{grid * grid, 28, 28}))
	x = s.T(ctorch.ConstantPadNd(x, []int64{1, 1, 1, 1}, ctorch.Float(1)))
	x = s.T(ctorch.Permute(s.T(ctorch.Reshape(x, []int64{grid, grid, 30, 30})), []int64{0, 2, 1, 3}))
	x = s.T(ctorch.Reshape(x, []int64{grid * 30, grid * 30}))
	x = s.T(ctorch.Add_Scalar(s.T(ctorch.Mul_Scalar(x, ctorch.Float(255))), ctorch.Float(0.5), ctorch.Int(1)))
	lo, hi := ctorch.Int(0), ctorch.Int(255)
	return s.T(s.T(ctorch.Clamp(x, &lo, &hi)).ToDtype(ctorch.DTypeUint8))
}

func writePNG(path string, grey *ctorch.Tensor) error {
	hw := must(grey.Sizes())
	img := image.NewGray(image.Rect(0, 0, int(hw[1]), int(hw[0])))
	img.Pix = must(grey.CopyTo())
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err = png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// images of one split as float [N, 784] in [0, 1] (the first n of them if n > 0).
func images(train bool, n int64) *ctorch.Tensor {
	var s ctorch.Scope
	defer s.Free()
	x, labels, err := ctorch.DataMnistReadDir(*dataDir, train)
	ok(err)
	labels.Free()
	s.T(x, nil)
	if n > 0 && n < must(x.Sizes())[0] {
		x = s.T(ctorch.Narrow(x, 0, 0, n))
	}
	x = s.T(ctorch.Div_Scalar(s.T(x.ToDtype(ctorch.DTypeFloat32)), ctorch.Float(255)))
	x = s.T(ctorch.Reshape(x, []int64{-1, 784}))
	ok(s.Err())
	return s.Keep(x)
}

func main() {
	flag.Parse()
	if _, err := os.Stat(*dataDir + "/train-images-idx3-ubyte.gz"); err != nil {
		fmt.Printf("skipped: Fashion-MNIST not found in %s (package dataset-fashion-mnist)\n", *dataDir)
		os.Exit(77)
	}
	if *threads > 0 {
		ok(ctorch.SetNumThreads(*threads))
	}
	trainX, testX := images(true, 0), images(false, *testImages)
	loader := must(ctorch.DataLoaderNew(trainX, nil, *batch, true, *seed, false)) // keeps its own reference
	defer loader.Free()
	trainX.Free()

	ok(ctorch.ManualSeed(*seed))
	v := NewVAE()
	defer v.Free()
	if *load != "" {
		_, _, err := v.Load(*load, true)
		ok(err)
	}
	opts := must(ctorch.OptimOptionsDefault(ctorch.OptimizerKindAdam)) // lr 1e-3, betas (0.9, 0.999)
	opt := must(ctorch.OptimizerNew(ctorch.OptimizerKindAdam, must(v.Parameters()), &opts))
	defer opt.Free()
	fmt.Printf("VAE (784-400-%d) on Fashion-MNIST, %d steps, batch %d, %d thread(s), seed %d [go]\n",
		latent, *steps, *batch, must(ctorch.GetNumThreads()), *seed)

	var first, last float64
	var seen int64
	epoch := uint64(0)
	ok(loader.StartEpoch(epoch))
	start := time.Now()
	for step := 1; step <= *steps; step++ {
		more, x, _, err := loader.Next()
		if ok(err); !more { // a new epoch: the next permutation, as vae.py's
			epoch++
			ok(loader.StartEpoch(epoch))
			_, x, _, err = loader.Next()
			ok(err)
		}
		var s ctorch.Scope
		s.T(x, nil)
		ok(opt.ZeroGrad(true))
		mu, logvar := v.encode(&s, x)
		loss := lossFunction(&s, v.decode(&s, reparameterize(&s, mu, logvar)), x, mu, logvar)
		ok(s.Err())
		ok(loss.Backward(nil, false, false, nil))
		ok(opt.Step())
		rows := must(x.Sizes())[0]
		last = must(loss.ItemDouble()) / float64(rows) // the per-image loss, as the classic example prints it
		seen += rows
		s.Free()
		if step == 1 {
			first = last
		}
		if step == 1 || step%50 == 0 || step == *steps {
			fmt.Printf("step %d/%d loss %.6f\n", step, *steps, last)
		}
	}
	dt := time.Since(start).Seconds()

	var testLoss float64
	ok(ctorch.InferenceMode(func() error { // the test loss with z = mu, and the grid of samples
		var s ctorch.Scope
		defer s.Free()
		mu, logvar := v.encode(&s, testX)
		loss := lossFunction(&s, v.decode(&s, mu), testX, mu, logvar)
		if s.Err() == nil {
			testLoss = must(loss.ItemDouble()) / float64(must(testX.Sizes())[0])
			fmt.Printf("test loss %.6f (%d images, z = mu)\n", testLoss, must(testX.Sizes())[0])
		}
		if g := v.sampleGrid(&s, *seed); s.Err() == nil && *samples != "" {
			ok(writePNG(*samples, g))
			fmt.Printf("saved samples to %s\n", *samples)
		}
		return s.Err()
	}))
	if *save != "" {
		ok(v.Save(*save)) // torch.save(model.state_dict(), path)
		fmt.Printf("saved weights to %s\n", *save)
	}
	perS := 0.0
	if *steps > 0 {
		perS = float64(seen) / dt
	}
	fmt.Printf("initial_loss=%.9g final_loss=%.9g test_loss=%.9g images_per_s=%.1f\n", first, last, testLoss, perS)
	testX.Free()
}
