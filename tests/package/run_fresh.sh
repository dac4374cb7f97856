#!/usr/bin/env bash
# One package manager's one command on a machine where no libctorch is
# installed, only a libtorch (docs/packages.md): the package finds none and
# builds ctorch from the sources it carries against the libtorch it finds,
# then the first program of the binding's README runs.
#   npm:   `npm install ctorch-VERSION.tgz` in a fresh `npm init -y` project
#          (its install script builds into node_modules/ctorch/native/);
#   cargo: `cargo run` in a fresh `cargo new` project whose ctorch comes from
#          a local registry (a cargo directory source of the two .crate files;
#          ctorch-sys's build script builds into OUT_DIR);
#   go:    a fresh module that gets github.com/ctorch/ctorch-go through
#          GOPROXY=file://... (a local module proxy folder), then the one
#          setup command, `go run github.com/ctorch/ctorch-go/cmd/ctorch-setup`,
#          then `go build` (go env -w goes to a scratch GOENV);
#   pip:   `pip install --no-binary ctorch --find-links DIST ctorch` of the
#          sdist into a venv over TORCH_PYTHON's torch (build requirements
#          from PyPI): scikit-build-core builds against that torch.
# The libtorch: this build's. For the system's (Debian's) nothing is set; for
# a pip torch (TORCH_PYTHON is not the system's) its venv is the active one
# (VIRTUAL_ENV), the lookup's second step. The carried sources compile
# through ccache, so a warm cache leaves configure, the generator and the link.
# go also checks what the module holds (its go.mod, Version, LICENSE, cgo
# flags from pkg-config alone, no path of the build tree) and, given
# DATA_DIR's Fashion-MNIST, builds the module's LeNet-5 (cmd/lenet5) and
# trains it 30 steps: the one test of the packed Go module.
# Usage: run_fresh.sh npm|cargo|go|pip SOURCE_DIR BUILD_DIR VERSION TORCH_PYTHON [DATA_DIR]
set -uo pipefail
mode=$1 src=$2 build=$3 version=$4 torch_py=${5:-} data=${6:-}
skip() { echo "skipped: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then skip "$CTORCH_BINDING_SKIP"; fi
case "$mode" in
  npm) command -v npm >/dev/null || skip "npm is not installed" ;;
  cargo) command -v cargo >/dev/null || skip "cargo is not installed" ;;
  go) go=$(command -v go || true)
      [ -z "$go" ] && [ -x /usr/local/go/bin/go ] && go=/usr/local/go/bin/go
      [ -n "$go" ] || skip "no Go toolchain (go, /usr/local/go/bin/go)" ;;
  pip) [ -x "$torch_py" ] && "$torch_py" -c 'import torch' 2>/dev/null || skip "no Python with torch for this tree ('$torch_py')" ;;
  *) echo "usage: run_fresh.sh npm|cargo|go|pip ..."; exit 2 ;;
esac
unset CTORCH_LIB PKG_CONFIG_PATH LD_LIBRARY_PATH LIBTORCH CTORCH_TORCH VIRTUAL_ENV CONDA_PREFIX
if command -v pkg-config >/dev/null && pkg-config --exists ctorch; then
  skip "a ctorch is installed ($(pkg-config --variable=libdir ctorch)): the package would use it, not build"
fi
# The tree's Python may be the suite's zygote (tests/pyzygote/pyz), so ask it
# where it lives: Debian's Python (prefix /usr) means the system's libtorch,
# any other prefix is the environment whose torch the package must find.
prefix=
[ -n "$torch_py" ] && prefix=$("$torch_py" -c 'import sys; print(sys.prefix)' 2>/dev/null)
if [ -z "$prefix" ] || [ "$prefix" = /usr ]; then
  want="the system's libtorch"
else
  export VIRTUAL_ENV=$prefix
  want="the torch"
fi
# Everything is made inside the build folder, and ccache sees paths relative
# to the folder above the checkout, as the suite's builds do: the package's
# copy of the sources then compiles to the objects this tree compiled.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$(cd "$src" && pwd)")}
set -e
tmp=$(mktemp -d "$(cd "$build" && pwd)/fresh-$mode.XXXXXX")
export TMPDIR=$tmp  # pip unpacks the sdist there
# npm's and pip's caches are this run's own (or none): an install stores the
# package it installs there, and the user's caches are not this test's to
# write (cargo's: below; Go's build cache and ccache stay shared, warm).
export npm_config_cache=$tmp/npm-cache PIP_NO_CACHE_DIR=1
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
now() { date +%s; }

echo "== scripts/package $mode"
case "$mode" in cargo) kind=rust ;; pip) kind=sdist ;; *) kind=$mode ;; esac
CTORCH_PACKAGE_BUILD=$build CTORCH_WHEEL_TORCH=$torch_py "$src/scripts/package" --out "$tmp/dist" "$kind" \
  >"$tmp/package.log" 2>&1 || { cat "$tmp/package.log"; fail "scripts/package $kind"; }

# The build log must say what the lookup found: nothing installed, and which libtorch.
found_msg() {
  grep -m1 "no installed libctorch" "$1" || fail "no message saying what was found (above: $1)"
  grep -q "libtorch: $want" "$1" || { cat "$1"; fail "the build was not against $want"; }
  grep -q "missing: nothing" "$1" || fail "the message names something missing"
}

if [ "$mode" = npm ]; then
  mkdir "$tmp/proj" && cd "$tmp/proj"
  npm init -y >/dev/null
  t=$(now)
  if ! flock /tmp/ctorch-build.lock timeout 1500 npm install --foreground-scripts --no-audit --no-fund \
      "$tmp/dist/ctorch-$version.tgz" >"$tmp/npm.log" 2>&1; then
    tail -n 60 "$tmp/npm.log"
    if grep -Eq 'ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNREFUSED|ECONNRESET' "$tmp/npm.log"; then
      skip "the npm registry is unreachable (koffi comes from it)"
    fi
    fail "npm install"
  fi
  echo "npm install (ctorch built from its sources): $(( $(now) - t )) s"
  found_msg "$tmp/npm.log"
  "$src/tests/package/extract_block.sh" "$src/README.md" "**Node.js**" js |
    sed "0,/require('[^']*')/s//require('ctorch')/" >first.js
  where=$(node -p "require('ctorch').lib.path")
  echo "libctorch: $where"
  case "$where" in "$tmp/proj/node_modules/ctorch/native/lib/"*) ;; *) fail "not the library the install built" ;; esac
  node first.js | tee "$tmp/first.out"
  grep -q '\[ 2, 4 \], \[ 6, 8 \]' "$tmp/first.out" || fail "not the README's output"
  echo "npm install ctorch built libctorch and the README's first program runs"
  exit 0
fi

if [ "$mode" = go ]; then
  path=github.com/ctorch/ctorch-go
  zip=$tmp/dist/ctorch-go-$version.zip
  python3 -m zipfile -e "$zip" "$tmp/src"
  mod=$tmp/src/ctorch-go-$version
  [ "$(head -n1 "$mod/go.mod")" = "module $path" ] || fail "go.mod does not name the module $path"
  grep -qx "const Version = \"$version\"" "$mod/enums_gen.go" || fail "the module's Version is not $version"
  cmp -s "$mod/LICENSE" "$src/LICENSE" || fail "the module does not ship the project's LICENSE"
  for f in cgo_gen.go nn/cgo_gen.go; do
    grep -qx '// #cgo pkg-config: ctorch' "$mod/$f" || fail "$f does not take cgo's flags from pkg-config"
  done
  # (The Go files: the carried sources, native/src, are CMake's business.)
  if grep -rn --include='*.go' --exclude-dir=native -e "$(cd "$build" && pwd)" "$mod" ||
     grep -rn --include='*.go' --exclude-dir=native '#cgo' "$mod" | grep -e 'LDFLAGS' -e 'rpath'; then
    fail "the module names a build tree or link flags (above)"
  fi
  # A module proxy folder (the GOPROXY protocol's files) holding the module.
  at=$tmp/proxy/$path/@v
  mkdir -p "$at"
  python3 - "$zip" "$at/v$version.zip" "$path@v$version" <<'PY'
import sys, zipfile
src, dst, prefix = sys.argv[1:]
with zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zo:
    for i in zi.infolist():
        if not i.is_dir():
            zo.writestr(prefix + "/" + i.filename.split("/", 1)[1], zi.read(i))
PY
  python3 -c 'import sys, zipfile; sys.stdout.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode())' \
    "$at/v$version.zip" "$path@v$version/go.mod" >"$at/v$version.mod"
  echo "v$version" >"$at/list"
  echo "{\"Version\":\"v$version\",\"Time\":\"2026-01-01T00:00:00Z\"}" >"$at/v$version.info"
  export GOPROXY=file://$tmp/proxy GOSUMDB=off GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=1
  export GOPATH=$tmp/gopath GOENV=$tmp/goenv GOMODCACHE=$tmp/gopath/pkg/mod
  mkdir "$tmp/proj" && cd "$tmp/proj"
  "$go" mod init example.com/first 2>/dev/null
  # The Go README's first program (the top README points to it).
  "$src/tests/package/extract_block.sh" "$src/bindings-gen/go/README.md" "A first program" go >main.go
  "$go" get "$path@v$version" 2>&1 || fail "go get $path@v$version through GOPROXY=$GOPROXY"
  # The setup command builds into os.UserCacheDir(): a scratch one. Go's build
  # cache and ccache's live there too by default; they stay the user's (warm).
  export GOCACHE=$("$go" env GOCACHE) CCACHE_DIR=${CCACHE_DIR:-$(ccache -k cache_dir 2>/dev/null || echo "$HOME/.cache/ccache")}
  t=$(now)
  XDG_CACHE_HOME=$tmp/cache flock /tmp/ctorch-build.lock "$go" run "$path/cmd/ctorch-setup" >"$tmp/setup.log" 2>&1 ||
    { tail -n 60 "$tmp/setup.log"; fail "go run $path/cmd/ctorch-setup"; }
  echo "ctorch-setup (ctorch built from its sources): $(( $(now) - t )) s"
  tail -n 1 "$tmp/setup.log"
  found_msg "$tmp/setup.log"
  t=$(now)
  "$go" build -o first . || fail "go build after ctorch-setup"
  echo "go build: $(( $(now) - t )) s"
  if readelf -d first | grep -E 'RPATH|RUNPATH' | grep -F "$(cd "$build" && pwd)/lib"; then
    fail "the program has a run path into the build tree"
  fi
  ./first | tee "$tmp/first.out" || fail "the Go README's first program failed"
  grep -qx '\[7 10 15 22\] <nil>' "$tmp/first.out" || fail "the Go README's first program did not print mm's [7 10 15 22]"
  if [ -f "$data/train-images-idx3-ubyte.gz" ]; then
    echo "== LeNet-5: $path/cmd/lenet5 built in the fresh module, 30 steps"
    "$go" build -o lenet5 "$path/cmd/lenet5" || fail "go build $path/cmd/lenet5"
    CTORCH_FASHION_MNIST=$data ./lenet5 -steps 30 -min-accuracy 0.5 || fail "cmd/lenet5"
  else
    echo "LeNet-5 part skipped: no Fashion-MNIST in '$data' (package dataset-fashion-mnist)"
  fi
  echo "go get + ctorch-setup + go build built libctorch and the README's first program runs"
  exit 0
fi

if [ "$mode" = pip ]; then
  sdist=$tmp/dist/ctorch-$version.tar.gz
  [ -f "$sdist" ] || fail "no $(basename "$sdist")"
  # A local package index (pip's --find-links folders, --no-index): the sdist
  # and its build requirements (scikit-build-core, PyYAML and theirs,
  # downloaded from PyPI once into the build folder), as a private index
  # would serve them. (PyPI's own "ctorch" is another project.)
  reqs=$build/pip-build-requirements
  if ! ls "$reqs"/scikit_build_core-*.whl >/dev/null 2>&1; then
    "$torch_py" -m pip download -q --disable-pip-version-check --only-binary :all: -d "$reqs.tmp" \
      'scikit-build-core>=1.1' pyyaml >"$tmp/download.log" 2>&1 ||
      { cat "$tmp/download.log"; rm -rf "$reqs.tmp"; skip "PyPI is unreachable (the sdist's build requirements come from it)"; }
    rm -rf "$reqs" && mv "$reqs.tmp" "$reqs"
  fi
  # The venv over TORCH_PYTHON's torch: Debian's python3-torch through
  # --system-site-packages; a pip-installed torch through a .pth file (no
  # second copy of it).
  if [ "$prefix" = /usr ] || [ -z "$prefix" ]; then
    "$torch_py" -m venv --without-pip --system-site-packages "$tmp/venv"
  else
    "$torch_py" -m venv --without-pip "$tmp/venv"
    "$torch_py" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' \
      >"$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/torch-env.pth"
  fi
  export VIRTUAL_ENV=$tmp/venv CXX=c++ CC=cc CMAKE_BUILD_PARALLEL_LEVEL=${CTORCH_BUILD_JOBS:-$(nproc)}
  t=$(now)
  if ! flock /tmp/ctorch-build.lock "$torch_py" -m pip --python "$tmp/venv/bin/python" install -v \
      --disable-pip-version-check --no-index --find-links "$tmp/dist" --find-links "$reqs" --no-binary ctorch \
      ctorch >"$tmp/pip.log" 2>&1; then
    tail -n 60 "$tmp/pip.log"
    fail "pip install of the sdist"
  fi
  echo "pip install (the sdist built against the venv's torch): $(( $(now) - t )) s"
  grep -m1 "ctorch: libtorch" "$tmp/pip.log" || fail "the build did not say which libtorch it used"
  tv=$("$tmp/venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0].split("a")[0])')
  grep -q "ctorch: libtorch $tv" "$tmp/pip.log" || fail "the sdist was not built against the venv's torch $tv"
  cd "$tmp"
  "$src/tests/package/extract_block.sh" "$src/README.md" "**Python**" python >first.py
  "$tmp/venv/bin/python" first.py | tee "$tmp/first.out"
  grep -q '^30.0 \[\[2.0, 4.0\], \[6.0, 8.0\]\]' "$tmp/first.out" || fail "not the README's output"
  "$tmp/venv/bin/python" -c 'import ctorch, os; p = ctorch._rt.LIB_PATH; print(p); assert "site-packages/ctorch/lib" in p, p'
  echo "pip install --no-binary ctorch built the sdist against torch $tv and the README's first program runs"
  exit 0
fi

# cargo: a local registry of the two crates (a directory source replacing
# crates.io: the .crate files unpacked, each with its checksum file), with the
# one crate from crates.io they need (pkg-config, ctorch-sys's build
# dependency), as a user's mirror would hold it: taken from the user's cargo
# cache, or fetched into this test's temporary folder where it is not there.
user_cargo=${CARGO_HOME:-$HOME/.cargo}
add_crate() {  # FILE.crate: unpacked into the registry with its .cargo-checksum.json
  local name
  name=$(basename "$1" .crate)
  tar xzf "$1" -C "$tmp/registry"
  (cd "$tmp/registry/$name" && python3 -c '
import hashlib, json, os, sys
files = {}
for d, _, fs in os.walk("."):
    for f in fs:
        p = os.path.join(d, f)[2:]
        if p != ".cargo-checksum.json":
            files[p] = hashlib.sha256(open(p, "rb").read()).hexdigest()
json.dump({"files": files, "package": sys.argv[1]}, open(".cargo-checksum.json", "w"))' "$(sha256sum "$1" | cut -d' ' -f1)")
}
mkdir -p "$tmp/registry"
for c in ctorch-sys ctorch; do add_crate "$tmp/dist/$c-$version.crate"; done
pkgc=$(ls -v "$user_cargo"/registry/cache/*/pkg-config-0.3.*.crate 2>/dev/null | tail -n 1)
if [ -z "$pkgc" ]; then
  # Fetched into a cargo home of this test's, not the user's (read, never written).
  (mkdir "$tmp/fetch" && cd "$tmp/fetch" && cargo new --quiet --vcs none f && cd f &&
    echo 'pkg-config = "0.3"' >>Cargo.toml && CARGO_HOME=$tmp/fetch/home cargo fetch --quiet) >/dev/null 2>&1 ||
    skip "crates.io is unreachable (pkg-config, ctorch-sys's build dependency, comes from it)"
  pkgc=$(ls -v "$tmp"/fetch/home/registry/cache/*/pkg-config-0.3.*.crate | tail -n 1)
fi
add_crate "$pkgc"
export CARGO_HOME=$tmp/cargo-home CARGO_TARGET_DIR=$tmp/target
mkdir -p "$CARGO_HOME"
cat >"$CARGO_HOME/config.toml" <<TOML
[source.local-ctorch]
directory = "$tmp/registry"
[source.crates-io]
replace-with = "local-ctorch"
TOML
cargo new --quiet --vcs none "$tmp/proj"
cd "$tmp/proj"
echo "ctorch = \"=$version\"" >>Cargo.toml
"$src/tests/package/extract_block.sh" "$src/README.md" "**Rust**" rust >src/main.rs
t=$(now)
flock /tmp/ctorch-build.lock cargo run -vv >"$tmp/run.out" 2>"$tmp/cargo.log" || { tail -n 60 "$tmp/cargo.log"; fail "cargo run"; }
echo "cargo run (ctorch built from its sources): $(( $(now) - t )) s"
found_msg "$tmp/cargo.log"
cat "$tmp/run.out"
grep -qx '30 \[2.0, 4.0, 6.0, 8.0\]' "$tmp/run.out" || fail "not the README's output"
echo "cargo run with ctorch from a local registry built libctorch and the README's first program runs"
