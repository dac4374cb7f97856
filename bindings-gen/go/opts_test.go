package ctorch

// An operator's Opts form with nil options is the full call with
// torch's defaults, bit for bit; a set field replaces one default.

import (
	"reflect"
	"testing"
)

func TestOpsOptionsDefaults(t *testing.T) {
	var err error
	defer Catch(&err)
	defer func() {
		if err != nil {
			t.Fatal(err)
		}
	}()
	var s Scope
	defer s.Free()
	same := func(what string, a, b *Tensor) {
		t.Helper()
		x, y := Must(a.Float32s()), Must(b.Float32s())
		if !reflect.DeepEqual(x, y) || len(x) == 0 {
			t.Errorf("%s: %v != %v", what, x, y)
		}
	}
	logits := s.T(FromFloat32([]float32{0.5, -1, 2, 0.25, 3, -0.5}, 2, 3))
	y := s.T(FromInt64([]int64{2, 0}, 2))
	same("CrossEntropyLossOpts(nil)",
		s.T(CrossEntropyLossOpts(logits, y, nil)), s.T(CrossEntropyLoss(logits, y, nil, ReductionMean, -100, 0)))
	same("CrossEntropyLossOpts(LabelSmoothing 0.1)",
		s.T(CrossEntropyLossOpts(logits, y, &CrossEntropyLossOptions{LabelSmoothing: Ptr(0.1)})),
		s.T(CrossEntropyLoss(logits, y, nil, ReductionMean, -100, 0.1)))
	same("CrossEntropyLossOpts(Reduction none)",
		s.T(CrossEntropyLossOpts(logits, y, &CrossEntropyLossOptions{Reduction: Ptr[Reduction](ReductionNone)})),
		s.T(CrossEntropyLoss(logits, y, nil, ReductionNone, -100, 0)))
	same("Add_TensorOpts (alpha=1)", s.T(Add_TensorOpts(logits, logits, nil)), s.T(Add_Tensor(logits, logits, Int(1))))
	same("LeakyReluOpts (negative_slope=0.01)", s.T(LeakyReluOpts(logits, nil)), s.T(LeakyRelu(logits, Float(0.01))))
	// max_pool2d's stride=[] means "the kernel size": an 8x8 input pools to 4x4.
	img := s.T(FromFloat32(make([]float32, 64), 1, 1, 8, 8))
	p := s.T(MaxPool2dOpts(img, []int64{2}, nil))
	if sz := Must(p.Sizes()); !reflect.DeepEqual(sz, []int64{1, 1, 4, 4}) {
		t.Errorf("MaxPool2dOpts(kernel 2): %v", sz)
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
}
