// Package zerocall is the tests' sweep of a package's exported API (issue
// 43): every exported function, and every method of every exported type on
// a nil and on a zero receiver, called with zero arguments under recover.
// A panic fails the test; an error return is the expected outcome. The
// lists come from exports_gen_test.go (written by bindings-gen's
// emit_go_exports.py from the package's sources) and are checked against
// go/ast here, so a function the generator's scan missed fails the test too.
package zerocall

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// Declared lists the exported non-generic functions and types that the
// package's non-test sources in dir declare (go/ast).
func Declared(dir string) (funcs, types []string, err error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil && d.Name.IsExported() && d.Type.TypeParams == nil {
						funcs = append(funcs, d.Name.Name)
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						ts, ok := s.(*ast.TypeSpec)
						if !ok || !ts.Name.IsExported() || ts.TypeParams != nil || ts.Assign.IsValid() {
							continue
						}
						if _, iface := ts.Type.(*ast.InterfaceType); iface {
							continue
						}
						types = append(types, ts.Name.Name)
					}
				}
			}
		}
	}
	sort.Strings(funcs)
	sort.Strings(types)
	return funcs, types, nil
}

// CheckComplete fails t unless the generated lists name exactly what dir declares.
func CheckComplete(t *testing.T, dir string, funcs map[string]any, types map[string]reflect.Type) {
	t.Helper()
	df, dt, err := Declared(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range df {
		if _, ok := funcs[n]; !ok {
			t.Errorf("exported function %s is missing from exports_gen_test.go", n)
		}
	}
	for _, n := range dt {
		if _, ok := types[n]; !ok {
			t.Errorf("exported type %s is missing from exports_gen_test.go", n)
		}
	}
	if len(df) != len(funcs) || len(dt) != len(types) {
		t.Errorf("exports_gen_test.go lists %d functions and %d types; the sources declare %d and %d",
			len(funcs), len(types), len(df), len(dt))
	}
}

// call runs fn(args...) and reports a panic; what it returns is freed.
func call(fn reflect.Value, args []reflect.Value) (p any) {
	defer func() { p = recover() }()
	var outs []reflect.Value
	if fn.Type().IsVariadic() {
		outs = fn.CallSlice(args)
	} else {
		outs = fn.Call(args)
	}
	for _, o := range outs {
		free(o)
	}
	return nil
}

func free(v reflect.Value) {
	if !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			free(v.Index(i))
		}
		return
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
	default:
		return
	}
	switch x := v.Interface().(type) {
	case interface{ Free() }:
		x.Free()
	case interface{ Free() error }:
		_ = x.Free()
	}
}

func zeros(ft reflect.Type, from int) []reflect.Value {
	args := make([]reflect.Value, 0, ft.NumIn())
	for i := from; i < ft.NumIn(); i++ {
		args = append(args, reflect.Zero(ft.In(i)))
	}
	return args
}

// empties is zeros with every slice argument an empty, non-nil slice (a
// nil one is Go's "none", an empty one "[]": both must be errors or
// results, never panics; an empty []string once panicked in 70
// functions). ok is false when fn takes no slice.
func empties(ft reflect.Type, from int) (args []reflect.Value, ok bool) {
	args = zeros(ft, from)
	for i := range args {
		if t := ft.In(from + i); t.Kind() == reflect.Slice && !(ft.IsVariadic() && from+i == ft.NumIn()-1) {
			args[i] = reflect.MakeSlice(t, 0, 0)
			ok = true
		}
	}
	return args, ok
}

// Sweep calls every function and method with zero values, and again with
// empty non-nil slices where it takes slices; it fails t on each panic and
// returns how many functions and methods it called.
func Sweep(t *testing.T, funcs map[string]any, types map[string]reflect.Type, skip map[string]string) (nFuncs, nMethods int) {
	t.Helper()
	names := make([]string, 0, len(funcs))
	for n := range funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := skip[n]; ok {
			continue
		}
		fn := reflect.ValueOf(funcs[n])
		if p := call(fn, zeros(fn.Type(), 0)); p != nil {
			t.Errorf("%s(zero values) panicked: %v", n, p)
		}
		if args, ok := empties(fn.Type(), 0); ok {
			if p := call(fn, args); p != nil {
				t.Errorf("%s(empty non-nil slices) panicked: %v", n, p)
			}
		}
		nFuncs++
	}
	tnames := make([]string, 0, len(types))
	for n := range types {
		tnames = append(tnames, n)
	}
	sort.Strings(tnames)
	for _, tn := range tnames {
		typ := types[tn]
		pt := reflect.PointerTo(typ)
		for i := 0; i < pt.NumMethod(); i++ {
			m := pt.Method(i)
			full := fmt.Sprintf("(*%s).%s", tn, m.Name)
			if _, ok := skip[full]; ok {
				continue
			}
			nMethods++
			args := zeros(m.Type, 1)
			if _, byValue := typ.MethodByName(m.Name); byValue {
				// A value method: the zero value (a nil pointer is Go's own panic, not the library's).
				if p := call(m.Func, append([]reflect.Value{reflect.New(typ)}, args...)); p != nil {
					t.Errorf("%s on a zero %s panicked: %v", full, tn, p)
				}
				continue
			}
			if p := call(m.Func, append([]reflect.Value{reflect.Zero(pt)}, args...)); p != nil {
				t.Errorf("%s on a nil receiver panicked: %v", full, p)
			}
			if p := call(m.Func, append([]reflect.Value{reflect.New(typ)}, args...)); p != nil {
				t.Errorf("%s on a zero receiver panicked: %v", full, p)
			}
			if eargs, ok := empties(m.Type, 1); ok {
				if p := call(m.Func, append([]reflect.Value{reflect.New(typ)}, eargs...)); p != nil {
					t.Errorf("%s with empty non-nil slices panicked: %v", full, p)
				}
			}
		}
	}
	return nFuncs, nMethods
}
