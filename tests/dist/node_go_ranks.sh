#!/usr/bin/env bash
# 2 ranks of a Node or Go data-parallel training under torchrun (scripts/ddp
# -n 2, whose torchrun is $CTORCH_TORCHRUN):
#   node_go_ranks.sh node PKG PROGRAM.js   the generated Node package in PKG
#   node_go_ranks.sh go MODULE WORK_DIR    tests/dist/go_ddp against the generated
#                                          Go module, built once into WORK_DIR
# The program is made ready (koffi installed, the Go program built) before
# torchrun starts, so that the ranks do not race for it and the group's
# rendezvous timeout does not include a build. Skipped (77) without node/npm
# or a Go toolchain (run_node.sh's and run_go_example.sh's rules).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
lang=$1 pkg=$(cd "$2" && pwd) arg=$3
start=$(date +%s.%N)
case "$lang" in
node)
  # run_node.sh installs koffi into PKG once (or says why it is skipped).
  "$repo/tests/bindings/run_node.sh" "$pkg" -e 0 || exit $?
  export CTORCH_NODE_PKG=$pkg
  rank_cmd=(node "$arg")
  ;;
go)
  if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then echo "skipped: $CTORCH_BINDING_SKIP"; exit 77; fi
  go=$(command -v go || true)
  [ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
  if [ -z "$go" ]; then echo "skipped: no Go toolchain (go, /usr/local/go/bin/go)"; exit 77; fi
  export GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=1
  mkdir -p "$arg" && cp "$here"/go_ddp/*.go "$here"/go_ddp/go.mod "$arg"/ || exit 1
  (cd "$arg" && "$go" mod edit -replace="github.com/ctorch/ctorch-go=$pkg" && "$go" build -o prog .) >&2 ||
    { echo "FAIL: go build of tests/dist/go_ddp"; exit 1; }
  rank_cmd=("$arg/prog")
  ;;
*) echo "usage: node_go_ranks.sh node|go PKG PROGRAM|WORK_DIR" >&2; exit 2 ;;
esac
ready=$(date +%s.%N)
"$repo/scripts/ddp" -n 2 -t 120 -- "${rank_cmd[@]}"
status=$?
end=$(date +%s.%N)
awk -v l="$lang" -v s="$start" -v r="$ready" -v e="$end" \
  'BEGIN { printf "node_go_ranks.sh %s: ready in %.1f s, torchrun with 2 ranks %.1f s\n", l, r - s, e - r }'
exit "$status"
