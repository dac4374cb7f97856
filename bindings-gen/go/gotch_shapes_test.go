package ctorch_test

// Tests of gotch (github.com/sugarme/gotch, ts/ and nn/) written with this
// package as a gotch user would write them: tensors from Go slices, LambdaLR
// and MultiplicativeLR, a small training loop. Each keeps its gotch twin's
// shape and name after "TestGotch"; the learning-rate ones expect PyTorch's
// values (gotch's own expectations differ from PyTorch's by a float rounding
// and an epoch).

import (
	"log"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	ct "github.com/ctorch/ctorch-go"
	"github.com/ctorch/ctorch-go/nn"
)

func TestGotchInplaceAssign(t *testing.T) {
	tensor := ct.Must(ct.FromInt([]int{3, 1, 4, 1, 5}))

	ct.Must(ct.Add__Scalar(tensor, ct.Int(1), ct.Int(1)))
	ct.Must(ct.Mul__Scalar(tensor, ct.Int(2)))
	ct.Must(ct.Sub__Scalar(tensor, ct.Int(1), ct.Int(1)))

	want := []int{7, 3, 9, 3, 11}
	got := ct.Must(tensor.Ints())

	if !reflect.DeepEqual(want, got) {
		t.Errorf("Expected tensor values: %v\n", want)
		t.Errorf("Got tensor values: %v\n", got)
	}
}

func TestGotchOnehot(t *testing.T) {
	xs := ct.Must(ct.FromInt([]int{0, 1, 2, 3}, 2, 2))
	onehot := ct.Must(ct.Must(ct.OneHot(xs, 4)).ToDtype(ct.DTypeFloat64))

	want := []float64{1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0}
	got := ct.Must(onehot.Float64s())

	if !reflect.DeepEqual(want, got) {
		t.Errorf("Expected onehot tensor values: %v\n", want)
		t.Errorf("Got onehot tensor values: %v\n", got)
	}
}

func TestGotchOfSlice(t *testing.T) {
	data := []int{1, 2, 3, 4, 5}
	x := ct.Must(ct.FromInt(data))

	want := ct.DTypeInt64
	got := ct.Must(x.Dtype())

	if !reflect.DeepEqual(want, got) {
		t.Errorf("Expected dtype: %v\n", want)
		t.Errorf("Got dtype: %v\n", got)
	}
}

func TestGotchLambdaLR(t *testing.T) {
	vs := []*ct.Tensor{ct.Must(ct.FromFloat32([]float32{0}))}
	opt := ct.Must(ct.NewOptimizer(ct.OptimizerKindAdam, vs, &ct.OptimizerOptions{Lr: 0.001}))

	ld1 := func(epoch int64) float64 {
		return float64(epoch / 30)
	}

	s := ct.Must(ct.NewLambdaLR(opt, ld1))

	for epoch := 0; epoch < 100; epoch++ {
		s.Step()
		want := 0.001 * float64((epoch+1)/30) // initial lr * ld1(epoch + 1)
		got := ct.Must(opt.GetLr(0))
		if got != want {
			t.Errorf("Epoch %d: Want %v - Got %v", epoch, want, got)
		}
	}
}

func TestGotchMultiplicativeLR(t *testing.T) {
	vs := []*ct.Tensor{ct.Must(ct.FromFloat32([]float32{0}))}
	opt := ct.Must(ct.NewOptimizer(ct.OptimizerKindAdam, vs, &ct.OptimizerOptions{Lr: 1}))

	ld1 := func(epoch int64) float64 {
		e := float64(epoch)
		return math.Pow(2, e) // 2 ** epoch
	}

	s := ct.Must(ct.NewMultiplicativeLR(opt, ld1))

	wants := []float64{
		2,     // 2^1 * 1 = 2
		8,     // 2^2 * 2 = 8
		64,    // 2^3 * 8 = 64
		1024,  // 2^4 * 64 = 1024
		32768, // 2^5 *1024 = 32768
	}
	for epoch := 0; epoch < 5; epoch++ {
		s.Step()
		want := wants[epoch]
		got := ct.Must(opt.GetLr(0))
		if got != want {
			t.Errorf("Epoch %d: Want %v - Got %v", epoch, want, got)
		}
	}
}

func TestGotchOptimizer(t *testing.T) {
	x := ct.Must(ct.View(ct.Must(ct.Arange_startOpts(ct.Float(1), ct.Float(15), nil)), []int64{-1, 1}))
	// y = x * 0.42 + 1.337
	y := ct.Must(ct.Add_Scalar(ct.Must(ct.Mul_Scalar(x, ct.Float(0.42))), ct.Float(1.337), ct.Int(1)))

	model := ct.Must(nn.NewLinear(1, 1, nil))
	for _, p := range ct.Must(model.Parameters()) {
		ct.Must0(ct.InitZeros_(p))
	}

	lr := 1e-2
	opt := ct.Must(model.NewOptimizer(ct.OptimizerKindSgd, &ct.OptimizerOptions{Lr: lr}))

	initialLoss := ct.Must(ct.Must(ct.MseLossOpts(ct.Must(model.Forward(x)), y, nil)).ItemDouble())
	wantLoss := float64(1.0)
	if initialLoss < wantLoss {
		t.Errorf("Expect initial loss > %v, got %v", wantLoss, initialLoss)
	}

	// Optimization loop
	for i := 0; i < 50; i++ {
		logits := ct.Must(model.Forward(x))
		loss := ct.Must(ct.MseLossOpts(logits, y, nil))
		if i%10 == 0 {
			t.Logf("Loss: %.3f\n", ct.Must(loss.ItemDouble()))
		}

		opt.BackwardStep(loss)
		loss.Free()
	}

	loss := ct.Must(ct.MseLossOpts(ct.Must(model.Forward(x)), y, nil))
	opt.BackwardStep(loss)

	loss = ct.Must(ct.MseLossOpts(ct.Must(model.Forward(x)), y, nil))
	finalLoss := ct.Must(loss.ItemDouble())
	t.Logf("Final loss: %v\n", finalLoss)

	if finalLoss > 0.25 {
		t.Errorf("Expect initial loss < 0.25, got %v", finalLoss)
	}
}

func TestGotchTextData_NewTextData(t *testing.T) {
	// Create text file to test
	filename := filepath.Join(t.TempDir(), "test.txt")

	// txt := `héllo`
	txt := "h\xC3\xA9llo"
	err := os.WriteFile(filename, []byte(txt), 0644)
	if err != nil {
		log.Fatal(err)
	}

	textData, err := ct.NewTextData(filename)
	if err != nil {
		log.Fatal(err)
	}

	wantData := []int64{0, 1, 2, 3, 3, 4}
	gotData := ct.Must(textData.Data.Int64s())

	if !reflect.DeepEqual(wantData, gotData) {
		t.Errorf("Want data: %v\n", wantData)
		t.Errorf("Got data: %v\n", gotData)
	}

	wantLabelLen := int64(5)
	gotLabelLen := textData.Labels()

	if !reflect.DeepEqual(wantLabelLen, gotLabelLen) {
		t.Errorf("Want label len: %v\n", wantLabelLen)
		t.Errorf("Got label len: %v\n", gotLabelLen)
	}

	wantChar := rune(195)
	gotChar := rune(textData.Vocab[1])

	if !reflect.DeepEqual(wantChar, gotChar) {
		t.Errorf("Want Char: %q\n", wantChar)
		t.Errorf("Got Char: %q\n", gotChar)
	}
}

func TestGotchTextDataIter(t *testing.T) {
	filename := filepath.Join(t.TempDir(), "test.txt")

	txt := "01234567890123456789"
	// txt := `hello world`
	err := os.WriteFile(filename, []byte(txt), 0644)
	if err != nil {
		log.Fatal(err)
	}

	textData, err := ct.NewTextData(filename)
	if err != nil {
		log.Fatal(err)
	}

	iter := ct.Must(textData.Loader(2, 5, 0)) // (seqLen, batchSize, seed)

	for xs := range iter.Epoch(0) {
		col1 := ct.Must(ct.Narrow(xs, 1, 0, 1)) // first column
		col1Fmod := ct.Must(ct.Fmod_Scalar(col1, ct.Int(10)))

		col2 := ct.Must(ct.Narrow(xs, 1, 1, 1))

		pow := ct.Must(ct.Pow_Tensor_Scalar(ct.Must(ct.Sub_Tensor(col1Fmod, col2, ct.Int(1))), ct.Int(2)))
		sum := ct.Must(ct.Sum(pow, ct.Ptr(ct.DTypeFloat32)))

		// Will pass if there's no panic
		vals := ct.Must(sum.Float32s())
		t.Logf("sum: %v\n", vals)
	}
	if iter.Err() != nil {
		t.Error(iter.Err())
	}
}
