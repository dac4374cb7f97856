#!/usr/bin/env bash
# Builds a Go program of examples/go/ (its own module, as a user's: it
# requires github.com/ctorch/ctorch-go) against the Go module a build
# generated, and runs it with the remaining arguments.
# Usage: run_go_example.sh EXAMPLE_DIR GENERATED_MODULE WORK_DIR [ARGS...]
# The example's go.mod is copied into WORK_DIR and its replace pointed at
# GENERATED_MODULE (no network: GOPROXY=off). Skipped (77) without a Go toolchain.
set -uo pipefail
src=$1 mod=$2 work=$3
shift 3
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then echo "skipped: $CTORCH_BINDING_SKIP"; exit 77; fi
go=$(command -v go || true)
[ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
if [ -z "$go" ]; then echo "skipped: no Go toolchain (go, /usr/local/go/bin/go)"; exit 77; fi
export GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=1
mkdir -p "$work" && cp "$src"/*.go "$src"/go.mod "$work"/ || exit 1
(cd "$work" && "$go" mod edit -replace="github.com/ctorch/ctorch-go=$mod" &&
  "$go" build -o prog .) >&2 || { echo "FAIL: go build of $src"; exit 1; }
exec "$work/prog" "$@"
