#!/usr/bin/env bash
# The Go module in a fresh module, as a user gets it: packs the build's module
# (scripts/package go: ctorch-go-VERSION.zip), unzips it, installs the build
# into a scratch prefix (cmake --install) for pkg-config, and in a new module
# (`go mod init`, require + replace the unzipped folder) builds the Go README's
# first Go program with an empty Go build cache (the time is printed), runs it,
# then builds the module's own LeNet-5 program (cmd/lenet5, the one
# binding_go_train runs) by its import path and trains it briefly.
# cgo's flags come from `pkg-config ctorch` of that prefix: nothing may name
# the build tree. The module needs nothing from the network (GOPROXY=off).
# Usage: run_go.sh SOURCE_DIR BUILD_DIR VERSION DATA_DIR
set -uo pipefail
src=$1 build=$2 version=$3 data=$4
path=github.com/ctorch/ctorch-go
skip() { echo "skipped: $*"; exit 77; }
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then skip "$CTORCH_BINDING_SKIP"; fi
go=$(command -v go || true)
[ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
[ -n "$go" ] || skip "no Go toolchain (go, /usr/local/go/bin/go)"
command -v pkg-config >/dev/null || skip "pkg-config is not installed (cgo reads ctorch's flags from it)"
command -v python3 >/dev/null || skip "python3 is not installed (scripts/package's generator)"
set -e
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
build=$(cd "$build" && pwd)
fail() { echo "FAIL: $*"; exit 1; }

echo "== scripts/package go"
CTORCH_PACKAGE_BUILD=$build "$src/scripts/package" --out "$tmp/dist" go
zip=$tmp/dist/ctorch-go-$version.zip
[ -f "$zip" ] || fail "no $(basename "$zip")"
python3 -m zipfile -e "$zip" "$tmp/src"
mod=$tmp/src/ctorch-go-$version
[ "$(head -n1 "$mod/go.mod")" = "module $path" ] || fail "go.mod does not name the module $path"
grep -qx "const Version = \"$version\"" "$mod/enums_gen.go" || fail "the module's Version is not $version"
cmp -s "$mod/LICENSE" "$src/LICENSE" || fail "the module does not ship the project's LICENSE"
for f in cgo_gen.go nn/cgo_gen.go; do
  grep -qx '// #cgo pkg-config: ctorch' "$mod/$f" || fail "$f does not take cgo's flags from pkg-config"
done
# (The Go files: the carried sources, native/src, are CMake's business.)
if grep -rn --include='*.go' --exclude-dir=native -e "$build" "$mod" ||
   grep -rn --include='*.go' --exclude-dir=native '#cgo' "$mod" | grep -e 'LDFLAGS' -e 'rpath'; then
  fail "the module names a build tree or link flags (above)"
fi

echo "== a prefix made by cmake --install"
for c in runtime dev; do cmake --install "$build" --prefix "$tmp/prefix" --component $c >/dev/null; done
pc=$(dirname "$(find "$tmp/prefix" -name ctorch.pc | head -n1)")
libdir=$(dirname "$pc")
unset LD_LIBRARY_PATH CTORCH_LIB
export PKG_CONFIG_PATH=$pc
echo "pkg-config ctorch: $(pkg-config --cflags --libs ctorch)"

echo "== a fresh module: go mod init, require + replace $path"
# (A smoke on a second libtorch keeps the user's Go build cache: the standard
# library comes from it; the module's cgo code compiles anew either way.)
gocache=$tmp/gocache
[ -n "${CTORCH_PACKAGE_SMOKE:-}" ] && gocache=$("$go" env GOCACHE)
export GOCACHE=$gocache GOPATH=$tmp/gopath GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=1
mkdir "$tmp/first"
cd "$tmp/first"
"$go" mod init example.com/first 2>/dev/null
"$go" mod edit -require="$path@v$version" -replace="$path=$mod"
"$src/tests/package/extract_block.sh" "$src/bindings-gen/go/README.md" "A first program" go >main.go
grep -q "\"$path\"" main.go || fail "the Go README's first program does not import $path"
start=$(date +%s.%N)
"$go" build -o first . || fail "go build of the Go README's first program"
printf 'first go build (GOCACHE %s): %.1f s\n' "$([ -n "${CTORCH_PACKAGE_SMOKE:-}" ] && echo shared || echo empty)" "$(echo "$(date +%s.%N) - $start" | bc)"
if readelf -d first | grep -E 'RPATH|RUNPATH' | grep -F "$build"; then fail "the program has a run path into the build tree"; fi
# (not `ldd | grep -q`: grep -q ends the writer early, which pipefail counts as a failure)
loaded=$(LD_LIBRARY_PATH=$libdir ldd first | grep libctorch)
echo "$loaded"
case "$loaded" in *"=> $libdir/"*) ;; *) fail "the program does not load the prefix's libctorch" ;; esac
LD_LIBRARY_PATH=$libdir ./first | tee "$tmp/first.out"
grep -qx '\[7 10 15 22\] <nil>' "$tmp/first.out" || fail "the Go README's first program did not print mm's [7 10 15 22]"

echo "== LeNet-5: $path/cmd/lenet5 built from the fresh module, 30 steps"
if [ -n "${CTORCH_PACKAGE_SMOKE:-}" ]; then
  echo "LeNet-5 part left out: a smoke on this libtorch (tests/package/CMakeLists.txt); in full on the system's"
elif [ -f "$data/train-images-idx3-ubyte.gz" ]; then
  start=$(date +%s.%N)
  "$go" build -o lenet5 "$path/cmd/lenet5" || fail "go build $path/cmd/lenet5"
  printf 'go build of cmd/lenet5 (ctorch cached, nn new): %.1f s\n' "$(echo "$(date +%s.%N) - $start" | bc)"
  LD_LIBRARY_PATH=$libdir CTORCH_FASHION_MNIST=$data ./lenet5 -steps 30 -min-accuracy 0.5
else
  echo "LeNet-5 part skipped: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
fi
echo "the Go module builds in a fresh module through pkg-config and runs"
