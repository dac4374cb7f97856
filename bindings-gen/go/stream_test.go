package ctorch

// torch.save bytes and NumPy files through io.Writer/io.Reader,
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

// A TorchScript module (traced here: x @ w) through WriteModule/ReadModule:
// the same bytes as the buffer form, the same forward after the trip, and
// bytes that are no module refused with an error.
func TestReadWriteModule(t *testing.T) {
	w, _ := FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	x, _ := FromFloat32([]float32{1, -1}, 1, 2)
	tr, err := TracerNew("XW")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	if err := tr.AddParameter("w", w); err != nil {
		t.Fatal(err)
	}
	if err := tr.Begin([]*Tensor{x}); err != nil {
		t.Fatal(err)
	}
	y, err := Mm(x, w)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tr.Finish([]*Tensor{y})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteModule(&b, m); err != nil {
		t.Fatal(err)
	}
	if want, _ := m.SaveToBuffer(); !bytes.Equal(b.Bytes(), want) {
		t.Fatal("WriteModule's bytes differ from SaveToBuffer's")
	}
	m2, err := ReadModule(&b, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m2.ForwardTensors([]*Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := got.Float32s(); !reflect.DeepEqual(v, []float32{-3, -3, -3}) {
		t.Fatalf("forward after the trip: %v", v)
	}
	if _, err := ReadModule(bytes.NewReader([]byte("PK\x03\x04 not a module")), nil, 0); err == nil {
		t.Fatal("garbage loaded")
	}
}
