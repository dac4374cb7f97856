// examples/classify_image.c in Go, every error handled (Must/Catch, Scope): one
// image through torchvision's eval transforms and a ResNet-18 loaded from a
// state dict Python saved, printing the C program's lines bit for bit
// (tests/bindings/classify_image_twin.py). The BasicBlocks are ModuleDicts
// (torchvision's state-dict keys); their forward is Go.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	ct "github.com/ctorch/ctorch-go"
	"github.com/ctorch/ctorch-go/nn"
)

var (
	image     = flag.String("image", "", "the image (JPEG or PNG)")
	weights   = flag.String("weights", "", "torchvision resnet18's state dict (torch.save)")
	antialias = flag.Int("antialias", 1, "Resize's antialias: 1 as torchvision >= 0.17, 0 as 0.14")
	threads   = flag.Int("threads", 0, "intra-op threads (0: libtorch's default)")
	logitsOut = flag.String("logits", "", "where to write the 1,000 logits, one per line")
)

func conv(cin, cout, k, stride, pad int64) *nn.Module {
	return ct.Must(nn.New("Conv2d", fmt.Sprintf("%d, %d, %d, %d, %d, bias=False", cin, cout, k, stride, pad)))
}

func bn(c int64) *nn.Module { return ct.Must(nn.New("BatchNorm2d", fmt.Sprint(c))) }

// resnet18 has torchvision's parameters and buffers (layers without any are ops in forward).
func resnet18() *nn.Module {
	net := ct.Must(nn.New("ModuleDict", ""))
	ct.Must(net.RegisterModule("conv1", conv(3, 64, 7, 2, 3)))
	ct.Must(net.RegisterModule("bn1", bn(64)))
	cin := int64(64)
	for l, cout := range []int64{64, 128, 256, 512} {
		layer := ct.Must(nn.New("Sequential", ""))
		for range 2 {
			stride := cout / cin // 2 where the channels double: the first block of layer2..4
			block := ct.Must(nn.New("ModuleDict", ""))
			ct.Must(block.RegisterModule("conv1", conv(cin, cout, 3, stride, 1)))
			ct.Must(block.RegisterModule("bn1", bn(cout)))
			ct.Must(block.RegisterModule("conv2", conv(cout, cout, 3, 1, 1)))
			ct.Must(block.RegisterModule("bn2", bn(cout)))
			if cin != cout {
				ct.Must(block.RegisterModule("downsample", ct.Must(nn.Sequential(conv(cin, cout, 1, stride, 0), bn(cout)))))
			}
			ct.Must0(layer.Append(block))
			cin = cout
		}
		ct.Must(net.RegisterModule(fmt.Sprintf("layer%d", l+1), layer))
	}
	ct.Must(net.RegisterModule("fc", ct.Must(nn.New("Linear", "512, 1000"))))
	return net
}

// forward is resnet18's; a BasicBlock is relu(bn2(conv2(relu(bn1(conv1(x))))) + downsample(x) or x).
func forward(s *ct.Scope, net *nn.Module, x *ct.Tensor) *ct.Tensor {
	f := func(path string, x *ct.Tensor) *ct.Tensor { return s.T(net.ForwardChild(path, x)) }
	x = s.T(ct.Relu(f("bn1", f("conv1", x))))
	x = s.T(ct.MaxPool2d(x, []int64{3, 3}, []int64{2, 2}, []int64{1, 1}, []int64{1, 1}, false))
	for l := 1; l <= 4; l++ {
		for b := range 2 {
			p := fmt.Sprintf("layer%d.%d.", l, b)
			y := f(p+"bn2", f(p+"conv2", s.T(ct.Relu(f(p+"bn1", f(p+"conv1", x))))))
			if l > 1 && b == 0 {
				x = f(p+"downsample", x)
			}
			x = s.T(ct.Relu(s.T(ct.Add_Tensor(y, x, ct.Int(1)))))
		}
	}
	return f("fc", s.T(ct.Flatten_using_ints(s.T(ct.AdaptiveAvgPool2d(x, []int64{1, 1})), 1, -1)))
}

func run() (err error) {
	defer ct.Catch(&err)
	var s ct.Scope
	defer s.Free()
	if *threads > 0 {
		ct.Must0(ct.SetNumThreads(*threads))
	}
	img := s.T(ct.ImageRead(*image, ct.ImageReadModeRgb))
	// The decoder's pixels stay channels last (as read_image keeps them): the resize rounds alike.
	batch := s.T(ct.Contiguous(s.T(ct.Unsqueeze(img, 0)), ct.MemoryFormatChannelsLast))
	mean, std := s.T(ct.FromFloat64([]float64{0.485, 0.456, 0.406}, 3)), s.T(ct.FromFloat64([]float64{0.229, 0.224, 0.225}, 3))
	tf := ct.Must(ct.TransformCompose([]*ct.Transform{
		ct.Must(ct.TransformResize([]int64{256}, ct.InterpolationBilinear, 0, *antialias != 0)),
		ct.Must(ct.TransformCenterCrop(224, 224)),
		ct.Must(ct.TransformConvertImageDtype(ct.DTypeFloat32)),
		ct.Must(ct.TransformNormalize(mean, std))}))
	x := s.T(tf.Apply(batch, nil))
	ct.Must0(s.Err())
	net := resnet18()
	ct.Must2(net.Load(*weights, true))
	ct.Must0(net.Eval())
	var logits, probs, idx *ct.Tensor
	ct.Must0(ct.InferenceMode(func() error {
		logits = forward(&s, net, x)
		probs = s.T(ct.Softmax_int(logits, 1, nil))
		_, idx = s.T2(ct.Topk(probs, 5, 1, true, true))
		return s.Err()
	}))
	l, p, top, shape := ct.Must(logits.Float32s()), ct.Must(probs.Float32s()), ct.Must(idx.Int64s()), ct.Must(img.Sizes())
	fmt.Printf("resnet18 on %s (%dx%d), antialias %d\n", *image, shape[1], shape[2], *antialias)
	for rank, c := range top {
		fmt.Printf("rank=%d class=%d prob=%.9g logit=%.9g\n", rank+1, c, float64(p[c]), float64(l[c]))
	}
	if *logitsOut != "" {
		var b strings.Builder
		for _, v := range l {
			fmt.Fprintf(&b, "%.9g\n", float64(v))
		}
		ct.Must0(os.WriteFile(*logitsOut, []byte(b.String()), 0o644))
	}
	return nil
}

func main() {
	flag.Parse()
	if *image == "" || *weights == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: classify_image --image PATH --weights PATH [--antialias 0|1] [--threads T] [--logits PATH]")
		os.Exit(2)
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "classify_image:", err)
		os.Exit(1)
	}
}
