#!/usr/bin/env bash
# The npm package in a fresh project, as a user gets it: packs the build's
# generated Node package (scripts/package npm), installs the tarball into a
# new `npm init -y` project (koffi from the registry), and runs the README's
# first Node program plus a short LeNet-5 training with ct.nn's module
# classes, finding libctorch each way the package looks for it: CTORCH_LIB,
# pkg-config (a prefix made by `cmake --install`), the bare SONAME.
# Usage: run_npm.sh SOURCE_DIR BUILD_DIR VERSION DATA_DIR
set -uo pipefail
src=$1 build=$2 version=$3 data=$4
skip() { echo "skipped: $*"; exit 77; }
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then skip "$CTORCH_BINDING_SKIP"; fi
command -v node >/dev/null || skip "node is not installed"
command -v npm >/dev/null || skip "npm is not installed"
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# npm's cache is this run's own: installing a tarball stores it in the cache,
# and the user's (~/.npm) is not this test's to add this build's ctorch to.
export npm_config_cache=$tmp/npm-cache
lib=$(readlink -f "$build/libctorch.so")

echo "== scripts/package npm"
CTORCH_PACKAGE_BUILD=$build "$src/scripts/package" --out "$tmp/dist" npm
tgz=$tmp/dist/ctorch-$version.tgz
tar tzf "$tgz" | sort >"$tmp/files.txt"
cat "$tmp/files.txt"
for f in index.js errors.js tensor.js convert.js serialize.js training.js capi.js ops.js api.js nn.js nn_classes.js \
  promise.js input.js index.d.ts package.json LICENSE; do
  grep -qx "package/$f" "$tmp/files.txt" || { echo "FAIL: the tarball lacks $f"; exit 1; }
done
if grep -q build_config "$tmp/files.txt"; then echo "FAIL: the tarball names a build tree (build_config.json)"; exit 1; fi

echo "== a fresh project: npm init -y && npm install $(basename "$tgz")"
mkdir "$tmp/proj"
cd "$tmp/proj"
npm init -y >/dev/null
# (CTORCH_LIB: the install script finds this build's library and builds
# none; run_fresh.sh installs where no libctorch is.)
if ! CTORCH_LIB=$lib timeout 300 npm install --no-audit --no-fund "$tgz" >"$tmp/npm.log" 2>&1; then
  cat "$tmp/npm.log"
  if grep -Eq 'ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNREFUSED|ECONNRESET' "$tmp/npm.log"; then
    skip "the npm registry is unreachable (koffi comes from it)"
  fi
  exit 1
fi
got=$(node -p "require('ctorch/package.json').version")
[ "$got" = "$version" ] || { echo "FAIL: installed version $got, the project's is $version"; exit 1; }
"$src/tests/package/extract_block.sh" "$src/README.md" "**Node.js**" js |
  sed "0,/require('[^']*')/s//require('ctorch')/" >first.js
cat first.js
first() {  # runs the README's program: a.grad = 2a
  node first.js | tee "$tmp/first.out"
  grep -q '\[ 2, 4 \], \[ 6, 8 \]' "$tmp/first.out"
}
where() { node -p "require('ctorch').lib.path"; }
unset LD_LIBRARY_PATH PKG_CONFIG_PATH

echo "== found by CTORCH_LIB"
export CTORCH_LIB=$lib
[ "$(where)" = "$lib" ]
first
if [ -f "$data/train-images-idx3-ubyte.gz" ]; then
  cp "$src/tests/package/lenet5_short.js" .  # require('ctorch') resolves from the project
  OMP_NUM_THREADS=2 node lenet5_short.js "$data"
else
  echo "LeNet-5 part skipped: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
fi
unset CTORCH_LIB

echo "== found by pkg-config (a prefix made by cmake --install)"
for c in runtime dev; do cmake --install "$build" --prefix "$tmp/prefix" --component $c >/dev/null; done
pc=$(dirname "$(find "$tmp/prefix" -name ctorch.pc | head -n1)")
got=$(PKG_CONFIG_PATH=$pc where)
echo "$got"
case "$got" in "$tmp/prefix/"*) ;; *) echo "FAIL: not the prefix's library"; exit 1 ;; esac
PKG_CONFIG_PATH=$pc first

echo "== found by the SONAME (the system's loader)"
if pkg-config --exists ctorch 2>/dev/null; then
  echo "(part skipped: the system has a ctorch.pc, which comes before the bare SONAME)"
else
  soname=$(node -p "require('ctorch/capi').SONAME")
  got=$(LD_LIBRARY_PATH=$(dirname "$pc") where)
  [ "$got" = "$soname" ] || { echo "FAIL: looked up $got, not $soname"; exit 1; }
  LD_LIBRARY_PATH=$(dirname "$pc") first
fi
echo "the npm package installs into a fresh project and finds libctorch"
