#!/usr/bin/env bash
# go doc of the generated Go module shows every wrapper of a C function with
# the header's text for it (go_doc_check.py). Skipped (77)
# without a Go toolchain. Usage: run_go_doc.sh GO_MODULE API_JSON SOURCE_DIR
set -uo pipefail
mod=$1 api=$2 src=$3
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then echo "skipped: $CTORCH_BINDING_SKIP"; exit 77; fi
go=$(command -v go || true)
[ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
if [ -z "$go" ]; then echo "skipped: no Go toolchain (go, /usr/local/go/bin/go)"; exit 77; fi
export GO=$go GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=1
exec python3 "$src/tests/bindings/go_doc_check.py" "$api" "$mod" "$src"
