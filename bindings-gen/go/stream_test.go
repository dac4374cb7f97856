package ctorch

// Issue 51: torch.save bytes and NumPy files through io.Writer/io.Reader,
// and String() as Python's str(tensor) (summarised: one line, not 11,001).

import (
	"bytes"
	"reflect"
	"testing"
)

func TestReadWriteTensorAndNpy(t *testing.T) {
	x, err := FromFloat32([]float32{1, 2.5, -3, 4}, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		write func(*bytes.Buffer) error
		read  func(*bytes.Buffer) (*Tensor, error)
	}{
		{"torch.save", func(b *bytes.Buffer) error { return WriteTensor(b, x) }, func(b *bytes.Buffer) (*Tensor, error) { return ReadTensor(b) }},
		{"npy", func(b *bytes.Buffer) error { return WriteNpy(b, x) }, func(b *bytes.Buffer) (*Tensor, error) { return ReadNpy(b) }},
	} {
		var b bytes.Buffer
		if err := c.write(&b); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		y, err := c.read(&b)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, _ := y.Float32s()
		if !reflect.DeepEqual(got, []float32{1, 2.5, -3, 4}) {
			t.Fatalf("%s: got %v", c.name, got)
		}
	}
	if _, err := ReadTensor(bytes.NewReader([]byte("PK\x03\x04 not a checkpoint"))); err == nil {
		t.Fatal("garbage loaded")
	}
}

func TestStringIsPythonsSummary(t *testing.T) {
	data := make([]int64, 11000)
	for i := range data {
		data[i] = int64(i)
	}
	x, err := FromInt64(data, 11000)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := x.String(), "tensor([    0,     1,     2,  ..., 10997, 10998, 10999])"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	SetPrintOptions(PrintOptions{Precision: 2, Threshold: -1, EdgeItems: -1, LineWidth: -1, SciMode: -1})
	defer SetPrintOptions(PrintOptions{-1, -1, -1, -1, -1})
	y, _ := FromFloat64([]float64{1.125, 2}, 2)
	if got, want := y.String(), "tensor([1.12, 2.00], dtype=torch.float64)"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}
