#!/usr/bin/env bash
# The Go bad-input sweep: go_sweep_gen.py writes a program
# calling every checked operator of the Go package generated in MODULE with
# bad values (nil, empty and bad slices of every kind, bad enums, devices,
# dtypes, scalars, tensors), each new result read back (densified, coalesced,
# added, every element, printed); it is built in WORK (its own module,
# requiring the generated one by a replace, as a user's program would) and
# run by rust_sweep.py, which restarts it past any operator that kills the
# process and fails on each such crash. Skipped (77) without a Go toolchain.
# Usage: run_go_sweep.sh MODULE API_JSON WORK [rust_sweep.py options]
set -uo pipefail
mod=$1 api=$2 work=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then echo "skipped: $CTORCH_BINDING_SKIP"; exit 77; fi
go=$(command -v go || true)
[ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
if [ -z "$go" ]; then echo "skipped: no Go toolchain (go, /usr/local/go/bin/go)"; exit 77; fi
export GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=1
mkdir -p "$work" || exit 1
python3 "$here/go_sweep_gen.py" "$api" "$work/main.go" || exit 1
cat >"$work/go.mod" <<MOD
module ctorch-go-sweep

go 1.23

require github.com/ctorch/ctorch-go v0.0.0

replace github.com/ctorch/ctorch-go => $mod
MOD
t=$(date +%s)
(cd "$work" && "$go" build -o sweep .) || { echo "FAIL: go build of the sweep"; exit 1; }
echo "go build: $(( $(date +%s) - t )) s"
exec python3 "$here/rust_sweep.py" "$work/sweep" --lang go "$@"
