module github.com/ctorch/ctorch-go

go 1.23
