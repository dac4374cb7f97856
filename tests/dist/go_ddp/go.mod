module example.com/ctorch-tests/go_ddp

go 1.23

require github.com/ctorch/ctorch-go v0.2.0

// tests/dist/node_go_ranks.sh points this at the module the build generated.
replace github.com/ctorch/ctorch-go => ../../../build/bindings/go
