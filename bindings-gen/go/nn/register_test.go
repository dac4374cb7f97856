package nn

// Registering a name again, as torch.nn.Module does: a parameter (buffer)
// of that name is replaced in its place; an attribute of another kind is
// refused (Python's KeyError).

import (
	"reflect"
	"testing"

	ctorch "github.com/ctorch/ctorch-go"
)

func TestRegisterAgainReplaces(t *testing.T) {
	m := ctorch.Must(NewCustom("Net", nil))
	defer m.Free()
	a := ctorch.Must(ctorch.FromFloat32([]float32{1}, 1))
	b := ctorch.Must(ctorch.FromFloat32([]float32{2, 3}, 2))
	c := ctorch.Must(ctorch.FromFloat32([]float32{4, 5, 6}, 3))
	defer a.Free()
	defer b.Free()
	defer c.Free()
	ctorch.Must0(m.RegisterParameter("a", a))
	ctorch.Must0(m.RegisterParameter("b", b))
	ctorch.Must0(m.RegisterParameter("a", c)) // torch: m.a is c, still first
	ctorch.Must0(m.RegisterBuffer("buf", a, true))
	sd := ctorch.Must(m.StateDict())
	var names []string
	var sizes [][]int64
	for _, e := range sd {
		names = append(names, e.Name)
		sizes = append(sizes, ctorch.Must(e.Tensor.Sizes()))
		e.Tensor.Free()
	}
	if !reflect.DeepEqual(names, []string{"a", "b", "buf"}) || !reflect.DeepEqual(sizes[0], []int64{3}) {
		t.Errorf("state dict %v of sizes %v; want a (3 elements), b, buf", names, sizes)
	}
	if err := m.RegisterParameter("buf", b); err == nil {
		t.Error("a parameter registered over a buffer")
	}
	if err := m.RegisterBuffer("a", b, true); err == nil {
		t.Error("a buffer registered over a parameter")
	}
}
