package ctorch

// No exported function or method of package ctorch panics on nil
// or zero values; each returns an error (or does nothing, as Free).

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ctorch/ctorch-go/internal/zerocall"
)

func TestExportsListed(t *testing.T) { zerocall.CheckComplete(t, ".", exportedFuncs, exportedTypes) }

// An operator api.json marks unsafe (ops_json.unsafe) exists only as
// Unchecked<Name>; its ordinary name (and Opts form) does not.
func TestUnsafeOperatorsOnlyUnchecked(t *testing.T) {
	if _, ok := exportedFuncs["UncheckedXRemoveBatchDim"]; !ok { // killed the process on a bool tensor
		t.Error("UncheckedXRemoveBatchDim missing")
	}
	n := 0
	for name := range exportedFuncs {
		if plain, ok := strings.CutPrefix(name, "Unchecked"); ok {
			n++
			if _, dup := exportedFuncs[plain]; dup {
				t.Errorf("%s: an unsafe operator under its ordinary name", plain)
			}
		}
	}
	if n == 0 {
		t.Error("no Unchecked operator")
	}
}

func TestNilAndZeroValuesDoNotPanic(t *testing.T) {
	// Global settings the sweep changes (it calls the setters with 0): read
	// them by setting and setting back, restore them after.
	px, _ := ImageSetMaxPixels(1)
	ImageSetMaxPixels(px)
	ll, _ := SetLoadLimit(1)
	SetLoadLimit(ll)
	mp, _ := NnSetMaxParameters(1)
	NnSetMaxParameters(mp)
	nt, _ := GetNumThreads()
	wd, _ := os.Getwd()
	if err := os.Chdir(t.TempDir()); err != nil { // what a zero path might create lands there
		t.Fatal(err)
	}
	defer func() {
		os.Chdir(wd)
		SetErrorTickets(true)
		ImageSetMaxPixels(px)
		SetLoadLimit(ll)
		NnSetMaxParameters(mp)
		SetNumThreads(nt)
	}()
	nf, nm := zerocall.Sweep(t, exportedFuncs, exportedTypes, nil)
	fmt.Printf("nil/zero sweep of package ctorch: %d functions, %d methods (on a nil and a zero receiver)\n", nf, nm)
	if nf < 2000 || nm < 200 {
		t.Errorf("the sweep called only %d functions and %d methods", nf, nm)
	}
}

// The cases a nil argument reaches, and that a nil handle is an error, not a success.
func TestNilHandlesAreErrors(t *testing.T) {
	var tn *Tensor
	tn.Free()
	if _, err := tn.Float32s(); err == nil {
		t.Error("Float32s on a nil tensor: no error")
	}
	var m *NnModule
	m.Free()
	if err := m.Train(true); err == nil {
		t.Error("Train on a nil module: no error")
	}
	var l *DataLoader
	for range l.All() {
		t.Error("a nil loader yielded a batch")
	}
	if l.Err() == nil {
		t.Error("Err of a nil loader: nil")
	}
	var s *Scope
	if s.T(nil, nil) != nil || s.Free() != nil {
		t.Error("a nil Scope is not a no-op")
	}
	// The generic functions, which reflection cannot list, with zero values.
	if x, err := FromSlice[float32](nil, []int64{}...); err == nil { // a 0-dim tensor, whose one value is missing
		t.Errorf("FromSlice(nil, []int64{}...) = %v, nil; want an error", x)
	}
	if x, err := FromSlice[float32](nil); err != nil || !reflect.DeepEqual(Must(x.Sizes()), []int64{0}) {
		t.Errorf("FromSlice(nil): %v, %v; want a 1-dim empty tensor (no shape: len(data))", x, err)
	} else {
		x.Free()
	}
	if x, err := FromSlice[float32](nil, 0); err != nil || Must(x.Numel()) != 0 {
		t.Errorf("FromSlice(nil, 0): %v, %v; want an empty tensor", x, err)
	} else {
		x.Free()
	}
	if v, err := ToSlice[int64](nil); err == nil {
		t.Errorf("ToSlice(nil tensor) = %v, nil", v)
	}
	if DTypeOf[bool]() != DTypeBool || *Ptr(0) != 0 || Must(0, nil) != 0 {
		t.Error("DTypeOf, Ptr or Must on zero values")
	}
	if a, b := Must2(0, "", nil); a != 0 || b != "" {
		t.Error("Must2 on zero values")
	}
}
