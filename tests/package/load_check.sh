#!/usr/bin/env bash
# The load check (docs/packages.md, "The load check"), as each binding meets it:
#   libtorch: a libctorch beside a libtorch of another release refuses. The
#     other release is simulated: fake_torch_version.cpp, preloaded, reports
#     it (real pairs differ in C++ symbols, and libtorch's file names carry no
#     version a loader could tell apart). C (ctorch_torch_version's status and
#     the line printed at load), Python, Node, and the Go and Rust programs
#     this build's binding tests left behind: each must fail naming both
#     versions, and must load without the preload.
#   libctorch: this build's Python binding given the libctorch of a build
#     against the other generation of libtorch (build*/ beside this one, or
#     CTORCH_OTHER_LIB) refuses, naming both libtorch versions.
# A part whose tool or artifact is missing says "skipped"; with every part
# skipped the test exits 77.
# Usage: load_check.sh SOURCE_DIR BUILD_DIR TORCH_VERSION CXX
set -uo pipefail
src=$1 build=$2 torch=$3 cxx=$4
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then echo "skipped: $CTORCH_BINDING_SKIP"; exit 77; fi
build=$(cd "$build" && pwd)
lib=$build/libctorch.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ran=0 failed=0
fail() { echo "FAIL: $*"; failed=1; }
skip() { echo "skipped part: $*"; }
# The other generation's version: what the preload reports.
case "$torch" in 1.*) other=2.15.0 ;; *) other=1.13.1 ;; esac
export CTORCH_TEST_LOADED_TORCH=$other
"$cxx" -shared -fPIC -O1 -o "$tmp/fake_torch.so" "$src/tests/package/fake_torch_version.cpp" || { echo "FAIL: compile"; exit 1; }
pre=$tmp/fake_torch.so

# expect NAME OUTPUT_FILE: the output names both versions (the library's refusal).
expect() {
  ran=1
  if grep -q "built for libtorch $torch" "$2" && grep -q "libtorch loaded in this process is $other" "$2"; then
    echo "ok: $1 refused, naming libtorch $torch and $other"
  else
    cat "$2"; fail "$1 did not refuse naming both libtorch versions"
  fi
}

echo "== C: ctorch_torch_version's status and the line at load"
cat >"$tmp/c.c" <<'C'
#include <stdio.h>
#include "ctorch.h"
int main(void) {
  const char *v = NULL;
  ctorch_status st = ctorch_torch_version(&v);
  printf("status %d: %s\n", (int)st, st ? ctorch_last_error() : v);
  return st == CTORCH_OK ? 0 : 3;
}
C
if cc -std=c99 -I"$src/include" -I"$build/generated" -I"$build/include" "$tmp/c.c" -L"$build" -lctorch \
     -Wl,-rpath,"$build" -o "$tmp/c" 2>"$tmp/cc.log"; then
  "$tmp/c" >"$tmp/c.ok" 2>&1 || { cat "$tmp/c.ok"; fail "C: without the preload"; }
  rc=0; LD_PRELOAD=$pre "$tmp/c" >"$tmp/c.out" 2>&1 || rc=$?
  [ "$rc" = 3 ] || fail "C: exit $rc, want 3 (a failing status)"
  expect C "$tmp/c.out"
  [ "$(grep -c "libtorch loaded in this process is $other" "$tmp/c.out")" = 2 ] ||
    fail "C: not once at load and once from the status"
else
  cat "$tmp/cc.log"; fail "C: compile"
fi

echo "== Python: import ctorch"
py=$(command -v python3 || true)
if [ -n "$py" ] && [ -d "$build/bindings/python/ctorch" ]; then
  PYTHONPATH=$build/bindings/python CTORCH_LIB=$lib "$py" -c 'import ctorch' >"$tmp/py.ok" 2>&1 ||
    { cat "$tmp/py.ok"; fail "Python: without the preload"; }
  LD_PRELOAD=$pre PYTHONPATH=$build/bindings/python CTORCH_LIB=$lib "$py" -c 'import ctorch' >"$tmp/py.out" 2>&1 &&
    fail "Python: imported"
  grep -q ImportError "$tmp/py.out" || { cat "$tmp/py.out"; fail "Python: not an ImportError"; }
  expect Python "$tmp/py.out"
else
  skip "Python: no python3 or no generated binding"
fi

echo "== Node: require('ctorch')"
if command -v node >/dev/null && [ -f "$build/bindings/node/node_modules/koffi/package.json" ]; then
  CTORCH_LIB=$lib node -e "require('$build/bindings/node')" >"$tmp/node.ok" 2>&1 ||
    { cat "$tmp/node.ok"; fail "Node: without the preload"; }
  LD_PRELOAD=$pre CTORCH_LIB=$lib node -e "require('$build/bindings/node')" >"$tmp/node.out" 2>&1 &&
    fail "Node: loaded"
  expect Node "$tmp/node.out"
else
  skip "Node: no node, or koffi not installed in the build's package (binding_node_api installs it)"
fi

# Go and Rust link libctorch at build time: the programs the binding tests
# built (binding_go_train, package_rust) are run again with the preload.
echo "== Go: the binding's init"
if [ -x "$build/go-lenet5" ]; then
  LD_LIBRARY_PATH=$build LD_PRELOAD=$pre "$build/go-lenet5" -steps 1 >"$tmp/go.out" 2>&1 && fail "Go: ran"
  expect Go "$tmp/go.out"
else
  skip "Go: no $build/go-lenet5 (binding_go_train builds it)"
fi
echo "== Rust: the crate's check at the first call"
if [ -x "$build/rust-package-target/debug/proj" ]; then
  LD_LIBRARY_PATH=$build LD_PRELOAD=$pre "$build/rust-package-target/debug/proj" >"$tmp/rust.out" 2>&1 && fail "Rust: ran"
  expect Rust "$tmp/rust.out"
else
  skip "Rust: no $build/rust-package-target/debug/proj (package_rust builds it)"
fi

echo "== a binding beside the libctorch of another libtorch"
unset CTORCH_TEST_LOADED_TORCH
olib=${CTORCH_OTHER_LIB:-}
if [ -z "$olib" ]; then
  for f in "$src"/build*/libctorch.so "$(dirname "$build")"/build*/libctorch.so; do
    [ -f "$f" ] || continue
    # (Not a sanitizer build's: it loads only after its runtime, GCC's
    # libasan or clang's libclang_rt.asan.)
    readelf -d "$f" 2>/dev/null | grep -Eq '(lib|clang_rt\.)(a|t|ub)san' && continue
    v=$(sed -n 's/.*"torch_version": *"\([^"]*\)".*/\1/p' "$(dirname "$f")/api.json" 2>/dev/null | head -n1)
    if [ -n "$v" ] && [ "${v%%.*}" != "${torch%%.*}" ]; then olib=$f; break; fi
  done
fi
if [ -n "$olib" ] && [ -n "$py" ] && [ -d "$build/bindings/python/ctorch" ]; then
  ran=1
  PYTHONPATH=$build/bindings/python CTORCH_LIB=$olib "$py" -c 'import ctorch' >"$tmp/other.out" 2>&1 &&
    fail "Python: imported beside $olib"
  cat "$tmp/other.out" | tail -n 1
  grep -Eq "built for libtorch [0-9][^;]*; this binding was generated for libctorch [^ ]* built for libtorch $torch" \
    "$tmp/other.out" && ! grep -q "built for libtorch $torch;" "$tmp/other.out" ||
    fail "the refusal does not name both libtorch versions"
else
  skip "no libctorch of the other libtorch generation found (build*/ beside this build, or CTORCH_OTHER_LIB)"
fi

((failed)) && exit 1
((ran)) || { echo "skipped: no part could run"; exit 77; }
echo "the load check refuses mismatched pairs in every binding that ran"
