package main

// The module shortcuts through ctorch/nn: an optimizer and
// gradient clipping made from a Module step its parameters exactly as the
// same calls over Parameters() do; ForwardChild equals the child's Forward;
// and their refusals.

import (
	"strings"

	ctorch "github.com/ctorch/ctorch-go"
	"github.com/ctorch/ctorch-go/nn"
)

func shortcutNet(seed uint64) *nn.Module {
	_ = ctorch.ManualSeed(seed)
	return must(nn.Sequential(must(nn.NewLinear(6, 16, nil)), must(nn.NewTanh()), must(nn.NewLinear(16, 3, nil))))
}

func shortcutChecks() {
	a, b := shortcutNet(4), shortcutNet(4)
	_ = ctorch.ManualSeed(9)
	x, _ := ctorch.Randn([]int64{32, 6}, nil, nil, nil, nil)
	opts, _ := ctorch.OptimOptionsDefaultV2(ctorch.OptimizerKindAdam)
	opts.Lr = 0.05
	oa, err := a.Optimizer(ctorch.OptimizerKindAdam, &opts)
	expect("Module.Optimizer", err == nil, err)
	pb, _ := b.Parameters()
	ob, _ := ctorch.OptimizerNewV2(ctorch.OptimizerKindAdam, pb, &opts)
	for step := 0; step < 3; step++ {
		var norms [2]float64
		for i, m := range []*nn.Module{a, b} {
			o := []*ctorch.Optimizer{oa, ob}[i]
			y, _ := m.Forward(x)
			sq, _ := ctorch.Mul_Tensor(y, y)
			loss, _ := ctorch.Sum(sq, nil)
			_ = o.ZeroGrad(true)
			_ = loss.Backward(nil, false, false, nil)
			if i == 0 {
				norms[i], err = m.ClipGradNorm(0.5, 2, false)
				expect("ClipGradNorm", err == nil && m.ClipGradValue(0.02) == nil, err)
			} else {
				norms[i], _ = ctorch.ClipGradNorm_(pb, 0.5, 2, false)
				_ = ctorch.ClipGradValue_(pb, 0.02)
			}
			_ = o.Step()
		}
		expect("clip norms equal", norms[0] == norms[1] && norms[0] > 0.5, norms)
	}
	pa, _ := a.Parameters()
	for i := range pa {
		eq, _ := ctorch.Equal(pa[i], pb[i])
		expect("Module.Optimizer steps equal the list's", eq, i)
	}
	h1, err := a.ForwardChild("0", x)
	first, _ := a.Get("0")
	h2, _ := first.Forward(x)
	eq, _ := ctorch.Equal(h1, h2)
	expect("ForwardChild", err == nil && eq, err)
	_, err = a.ForwardChild("7", x)
	expect("ForwardChild: no such child", err != nil && strings.Contains(err.Error(), "'7'"), err)
	_, err = must(nn.NewReLU(nil)).Optimizer(ctorch.OptimizerKindSgd, nil)
	expect("Optimizer of a module without parameters", err != nil && strings.Contains(err.Error(), "no parameters"), err)
}
