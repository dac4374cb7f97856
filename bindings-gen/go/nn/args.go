package nn

// The constructor arguments of the typed constructors (kinds_gen.go) as the
// Python text ctorch_nn_new parses: a nil pointer or slice is an option left
// out (PyTorch's default applies), anything else is written as a literal;
// modules go by handle beside the text.

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	ctorch "github.com/ctorch/ctorch-go"
)

// parts: the text arguments; names/mods: the module-valued ones (the
// catalogue's type "Module"), which go by handle (ctorch_nn_new_with_modules).
type args struct {
	parts []string
	names []string
	mods  []*ctorch.NnModule
	err   error // the first argument that cannot be written (build returns it)
}

// add writes name=value unless v is nil (a nil pointer, slice or interface).
func (a *args) add(name string, v any) {
	if v == nil {
		return
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Slice {
		if rv.IsNil() {
			return
		}
		if rv.Kind() == reflect.Pointer {
			v = rv.Elem().Interface()
		}
	}
	text, err := literal(v)
	if err != nil {
		if a.err == nil {
			a.err = fmt.Errorf("nn: option %s: %w", name, err)
		}
		return
	}
	a.parts = append(a.parts, name+"="+text)
}

// union writes an int[N]|str option (Conv's padding): the list v or the
// string s ("same", "valid"); giving both is an error, neither leaves it out.
func (a *args) union(name string, v any, s string) {
	if s == "" {
		a.add(name, v)
		return
	}
	if rv := reflect.ValueOf(v); v != nil && !(rv.Kind() == reflect.Slice && rv.IsNil()) {
		if a.err == nil {
			a.err = fmt.Errorf("nn: option %s: give the list or the string, not both", name)
		}
		return
	}
	a.add(name, s)
}

func (a *args) String() string { return strings.Join(a.parts, ", ") }

// module passes m as the argument name by handle unless it is nil (the
// library copies or keeps it as torch.nn does: a stack's layer is
// deep-copied, its norm is m itself).
func (a *args) module(name string, m *Module) {
	if m != nil {
		a.names = append(a.names, name)
		a.mods = append(a.mods, m.m)
	}
}

// build makes the module of kind from the arguments added.
func (a *args) build(kind string) (*Module, error) {
	if a.err != nil {
		return nil, a.err
	}
	text := a.String()
	if len(a.mods) == 0 {
		return New(kind, text)
	}
	return wrap(ctorch.NnNewWithModules(kind, &text, a.names, a.mods))
}

// repeat: an int[N] given as one number (PyTorch repeats it N times).
func repeat(v []int64) any {
	if len(v) == 1 {
		return v[0]
	}
	return v
}

func literal(v any) (string, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return "True", nil
		}
		return "False", nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		switch {
		case math.IsNaN(x):
			return "nan", nil
		case math.IsInf(x, 1):
			return "inf", nil
		case math.IsInf(x, -1):
			return "-inf", nil
		}
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0" // a float argument stays a float
		}
		return s, nil
	case string:
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(x) + "'", nil
	case ctorch.DType:
		n, ok := dtypeNames[x]
		if !ok {
			return "", fmt.Errorf("no dtype %d", int32(x))
		}
		return "'" + n + "'", nil
	case []int64:
		return tuple(len(x), func(i int) string { s, _ := literal(x[i]); return s }), nil
	case []float64:
		return tuple(len(x), func(i int) string { s, _ := literal(x[i]); return s }), nil
	}
	// The generated options have only the types above; this is for a hand-made call.
	return "", fmt.Errorf("cannot pass a %T as a module option", v)
}

func tuple(n int, item func(int) string) string {
	s := make([]string, n)
	for i := range s {
		s[i] = item(i)
	}
	if n == 1 {
		return "(" + s[0] + ",)"
	}
	return "(" + strings.Join(s, ", ") + ")"
}
