module example.com/ctorch-examples/lenet5

go 1.23

require github.com/ctorch/ctorch-go v0.2.0

// The binding a ctorch build generates (scripts/build -> build/); point it at
// an installed copy (scripts/package go) or drop it once the module is published.
replace github.com/ctorch/ctorch-go => ../../../build/bindings/go
