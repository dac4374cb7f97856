#!/usr/bin/env bash
# Runs the Go tests of the generated module in $1 (go test: the dtype checks
# of the typed accessors, the nil/zero sweep of every exported function and
# method, typed module options, loaders as range-over-func), with
# the packages given after it (default: . ./nn). cgo; no third-party modules,
# no network. Skipped (77) without a Go toolchain.
set -uo pipefail
mod=$1
shift
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(. ./nn)
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then echo "skipped: $CTORCH_BINDING_SKIP"; exit 77; fi
go=$(command -v go || true)
[ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
if [ -z "$go" ]; then echo "skipped: no Go toolchain (go, /usr/local/go/bin/go)"; exit 77; fi
export GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=1
cd "$mod" && exec "$go" test -count=1 -v "${pkgs[@]}"
