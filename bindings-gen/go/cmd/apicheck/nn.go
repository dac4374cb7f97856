package main

// The module classes of ctorch/nn: typed constructors with options, several
// inputs and outputs (LSTM), state dicts strict and not, a Go forward inside
// a C container and its error coming back out, repr, modules as constructor
// arguments (TransformerEncoder).

import (
	"errors"
	"os"
	"reflect"
	"strings"

	ctorch "github.com/ctorch/ctorch-go"
	"github.com/ctorch/ctorch-go/nn"
)

func nnChecks() {
	lin, err := nn.NewLinear(4, 2, &nn.LinearOptions{Bias: ctorch.Ptr(false)})
	expect("NewLinear", err == nil, err)
	expect("Linear.String", lin.String() == "Linear(in_features=4, out_features=2, bias=False)", lin.String())
	_, err = nn.New("Linear", "4, 2, biass=False")
	expect("New: unknown option", err != nil && strings.Contains(err.Error(), "biass"), err)
	seq, err := nn.Sequential(lin, must(nn.NewTanh()))
	expect("Sequential", err == nil, err)
	sd, _ := seq.StateDict()
	expect("StateDict keys", len(sd) == 1 && sd[0].Name == "0.weight", sd)
	missing, unexpected, err := seq.LoadStateDict(append(sd, nn.NamedTensor{Name: "x", Tensor: sd[0].Tensor}), false)
	expect("LoadStateDict non-strict", err == nil && len(missing) == 0 && len(unexpected) == 1 && unexpected[0] == "x",
		missing, unexpected, err)
	_, _, err = seq.LoadStateDict(nil, true)
	expect("LoadStateDict strict", err != nil && strings.Contains(err.Error(), "0.weight"), err)
	// Save / Load: torch.save(state_dict) and load_state_dict(torch.load(path)).
	path := os.TempDir() + "/ctorch_go_apicheck.pt"
	expect("Save", seq.Save(path) == nil)
	seq2, _ := nn.Sequential(must(nn.NewLinear(4, 2, &nn.LinearOptions{Bias: ctorch.Ptr(false)})))
	missing, unexpected, err = seq2.Load(path, true)
	w1, _ := sd[0].Tensor.Float32s()
	sd2, _ := seq2.StateDict()
	w2, _ := sd2[0].Tensor.Float32s()
	expect("Load", err == nil && len(missing)+len(unexpected) == 0 && reflect.DeepEqual(w1, w2), err, w1, w2)
	_, _, err = seq2.Load(path+".absent", true)
	expect("Load: no file", err != nil, err)
	os.Remove(path)

	x, _ := ctorch.FromFloat32([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 2, 4)
	boom := errors.New("boom in Go")
	calls := 0
	custom, err := nn.NewCustom("Scale", func(in []*ctorch.Tensor, _ string) ([]*ctorch.Tensor, error) {
		if calls++; calls > 1 {
			return nil, boom
		}
		y, err := ctorch.Mul_Scalar(in[0], ctorch.Float(2))
		return []*ctorch.Tensor{y}, err
	})
	expect("NewCustom", err == nil, err)
	outer, _ := nn.Sequential(custom, seq)
	keys, _ := outer.StateDict()
	expect("custom in Sequential: keys", len(keys) == 1 && keys[0].Name == "1.0.weight", keys)
	y, err := outer.Forward(x)
	expect("custom forward through C", err == nil && y != nil, err)
	_, err = outer.Forward(x)
	expect("custom forward error", errors.Is(err, boom), err)
	custom.Free()

	mlp, _ := nn.Sequential(must(nn.NewFlatten(nil)), must(nn.NewLinear(784, 10, nil)))
	shapes, err := mlp.ShapeCheck([]int64{3, 1, 28, 28})
	expect("ShapeCheck", err == nil && strings.Contains(shapes, "1: [3, 10]"), shapes, err)
	_, err = mlp.ShapeCheck([]int64{3, 1, 20, 28})
	expect("ShapeCheck misfit", err != nil && strings.Contains(err.Error(), "(Linear)"), err)

	lstm, _ := nn.NewLSTM(4, 3, nil)
	seqIn, _ := ctorch.FromFloat32(make([]float32, 5*2*4), 5, 2, 4)
	outs, err := lstm.ForwardN([]*ctorch.Tensor{seqIn, nil, nil}, "")
	expect("LSTM ForwardN", err == nil && len(outs) == 3, len(outs), err)
	n, _ := lstm.NumParameters(false)
	expect("NumParameters", n == 4*(3*4+3*3+3+3), n)
	expect("Eval", lstm.Eval() == nil)
	tr, _ := lstm.IsTraining()
	expect("IsTraining", !tr)
	f64 := ctorch.DTypeFloat64
	expect("To", lstm.To(nil, &f64) == nil)
	ps, _ := lstm.Parameters()
	dt, _ := ps[0].Dtype()
	expect("To float64", dt == ctorch.DTypeFloat64, dt)
	stackChecks()
	shortcutChecks()
}

// stackChecks: module-valued constructor arguments go by handle
// (ctorch_nn_new_with_modules); the layer is deep-copied per stack entry,
// the norm is the caller's own module.
func stackChecks() {
	layer := must(nn.NewTransformerEncoderLayer(8, 2, &nn.TransformerEncoderLayerOptions{
		DimFeedforward: ctorch.Ptr[int64](16), Dropout: ctorch.Ptr(0.0)}))
	norm := must(nn.NewLayerNorm([]int64{8}, nil))
	enc, err := nn.NewTransformerEncoder(layer, 2, &nn.TransformerEncoderOptions{Norm: norm})
	expect("NewTransformerEncoder", err == nil, err)
	sd, _ := enc.StateDict()
	n := len(sd)
	expect("TransformerEncoder keys", n > 2 && sd[0].Name == "layers.0.self_attn.in_proj_weight" &&
		sd[n-2].Name == "norm.weight" && sd[n-1].Name == "norm.bias", sd)
	w, _ := norm.Tensor("weight")
	sc, _ := ctorch.AutogradScopeEnter(ctorch.AutogradScopeKind(0)) // no_grad: w is a leaf needing grad
	_, err = ctorch.Fill__Scalar(w, ctorch.Float(2))
	expect("Leave", sc.Leave() == nil)
	sd, _ = enc.StateDict()
	low, _ := ctorch.Min(sd[n-2].Tensor)
	v, _ := low.ItemDouble()
	expect("the norm passed is shared", err == nil && v == 2, v, err)
	dec, err := nn.NewTransformerDecoder(must(nn.NewTransformerDecoderLayer(8, 2, nil)), 1,
		&nn.TransformerDecoderOptions{Norm: must(nn.NewLayerNorm([]int64{8}, nil))})
	expect("NewTransformerDecoder", err == nil, err)
	sd, _ = dec.StateDict()
	expect("TransformerDecoder keys", len(sd) > 2 && sd[len(sd)-1].Name == "norm.bias", sd)
	_, err = nn.NewTransformerEncoder(must(nn.NewLinear(8, 8, nil)), 2, nil)
	expect("a Linear as encoder_layer is refused", err != nil && strings.Contains(err.Error(), "encoder_layer"), err)
}

func must(m *nn.Module, err error) *nn.Module {
	if err != nil {
		panic(err)
	}
	return m
}
