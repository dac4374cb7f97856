#!/usr/bin/env bash
# Builds the generated Go module in $1 (cgo; no third-party modules, no
# network) and runs one of its programs (./cmd/lenet5, the LeNet-5 training, unless
# $3 names another), written to $2, with the arguments after $3.
# Skipped (77) without a Go toolchain.
set -uo pipefail
mod=$1 exe=$2 cmd=${3:-./cmd/lenet5}
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then echo "skipped: $CTORCH_BINDING_SKIP"; exit 77; fi
go=$(command -v go || true)
[ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
if [ -z "$go" ]; then echo "skipped: no Go toolchain (go, /usr/local/go/bin/go)"; exit 77; fi
export GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=1
start=$(date +%s)
(cd "$mod" && "$go" build -o "$exe" "$cmd") || { echo "FAIL: go build"; exit 1; }
echo "go build: $(( $(date +%s) - start )) s"
exec "$exe" "${@:4}"
