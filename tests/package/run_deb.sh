#!/usr/bin/env bash
# The Debian packages in a Debian root, as a user gets them: builds them
# (scripts/package deb, lintian included), installs them with
# `apt-get install ./*.deb`, builds the README's first C program with
# `pkg-config ctorch` and with CMake's find_package(ctorch) from /usr (no path
# into a build tree, no LD_LIBRARY_PATH), the Python bridge's hello program,
# a short LeNet-5 training with modules (examples/lenet5.c) when the
# Fashion-MNIST data is there, then purges the packages (also on failure).
# Runs only as root with apt-get (else skipped) and only where no ctorch
# package is installed yet (it would replace the user's).
# Usage: run_deb.sh SOURCE_DIR CC VERSION DATA_DIR
set -uo pipefail
src=$1 cc=$2 version=$3 data=$4
skip() { echo "skipped: $*"; exit 77; }
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then skip "$CTORCH_BINDING_SKIP"; fi
[ "$(id -u)" = 0 ] || skip "not root (apt-get install of the packages needs it)"
for t in apt-get dpkg dpkg-query cmake pkg-config readelf; do
  command -v "$t" >/dev/null || skip "$t is not installed"
done
if dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' 'libctorch*' 2>/dev/null | grep -q ' ii'; then
  skip "ctorch packages are installed already (this test would replace and then remove them)"
fi
set -e
tmp=$(mktemp -d)
names=()
cleanup() {
  rc=$?
  # Those of ours dpkg knows (a failed install may have left some half-installed).
  local present
  present=$( ((${#names[@]})) && dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${names[@]}" 2>/dev/null |
    awk '$2 != "un" && $2 != "pn" { print $1 }') || true
  if [ -n "$present" ]; then
    echo "== apt-get remove --purge" $present
    DEBIAN_FRONTEND=noninteractive apt-get remove --purge -y -qq -o DPkg::Lock::Timeout=300 $present >"$tmp/remove.log" 2>&1 ||
      { cat "$tmp/remove.log"; rc=1; }
    if dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${names[@]}" 2>/dev/null | grep -q ' ii'; then
      echo "FAIL: packages still installed after the purge"; rc=1
    fi
  fi
  rm -rf "$tmp"
  exit $rc
}
trap cleanup EXIT

echo "== scripts/package deb"
t0=$(date +%s)
"$src/scripts/package" --out "$tmp/dist" deb
echo "(packages built in $(($(date +%s) - t0)) s)"
debs=()
for f in "$tmp"/dist/*.deb; do debs+=("$(dpkg-deb -f "$f" Package)"); done
echo "packages: ${debs[*]}"
[ "$(dpkg-deb -f "$tmp"/dist/libctorch-dev_*.deb Version)" = "$version-1" ]
# Debian's libtorch calls BLAS through the libblas.so.3 alternative: the
# runtime package must bring an optimised one, or the reference BLAS serves it.
rt_deps=$(dpkg-deb -f "$(ls "$tmp"/dist/libctorch[0-9]*.deb | head -1)" Depends)
echo "runtime Depends: $rt_deps"
case "$rt_deps" in *libopenblas0*) ;; *) echo "FAIL: the runtime package does not depend on OpenBLAS"; exit 1 ;; esac

echo "== apt-get install ./*.deb"
names=("${debs[@]}")  # from here on, the trap purges them
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends \
  "$tmp"/dist/*.deb >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
libdir=$(pkg-config --variable=libdir ctorch)
echo "libdir: $libdir"
case "$libdir" in /usr/lib/*) ;; *) echo "FAIL: ctorch.pc's libdir is not under /usr/lib"; exit 1 ;; esac
soname=$(readelf -d "$libdir/libctorch.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "SONAME: $soname"
for l in "$libdir"/libctorch*.so.*-torch*; do
  if readelf -d "$l" | grep -Eq '\((RPATH|RUNPATH)\)'; then echo "FAIL: $l has an RPATH"; exit 1; fi
done
[ "$(pkg-config --modversion ctorch)" = "$version" ]
for p in "${debs[@]}"; do  # each names the licence, LICENSE's text in full
  grep -q "^License: BSD-3-Clause$" "/usr/share/doc/$p/copyright" && grep -q "EVEN IF ADVISED OF THE POSSIBILITY" "/usr/share/doc/$p/copyright" ||
    { echo "FAIL: /usr/share/doc/$p/copyright does not carry LICENSE"; exit 1; }
done

cd "$tmp"
# Nothing from a build tree: no LD_LIBRARY_PATH, no CTORCH_LIB, no PKG_CONFIG_PATH.
unset LD_LIBRARY_PATH CTORCH_LIB PKG_CONFIG_PATH CMAKE_PREFIX_PATH
"$src/tests/package/extract_block.sh" "$src/README.md" "## A first program in C" c >first.c
check_first() {  # the README's first program prints a*a
  "$1" >"$1.out"
  cat "$1.out"
  grep -q '36' "$1.out" && grep -q 'Float' "$1.out"
}
echo "== README's first C program: pkg-config ctorch"
"$cc" -std=c99 -Wall -Werror first.c $(pkg-config --cflags --libs ctorch) -o first_pc
check_first ./first_pc

echo "== README's first C program: find_package(ctorch) from /usr"
mkdir consumer
cp first.c consumer/
cat >consumer/CMakeLists.txt <<'CMK'
cmake_minimum_required(VERSION 3.18)
project(first C)
find_package(ctorch REQUIRED)
message(STATUS "ctorch ${ctorch_VERSION} at ${ctorch_DIR}, libtorch ${ctorch_TORCH_VERSION}")
add_executable(first first.c)
target_link_libraries(first PRIVATE ctorch::ctorch)
CMK
cmake -S consumer -B consumer/build >consumer.log 2>&1 || { cat consumer.log; exit 1; }
grep "ctorch $version at /usr/lib" consumer.log
cmake --build consumer/build >>consumer.log 2>&1 || { cat consumer.log; exit 1; }
check_first consumer/build/first

if pkg-config --exists ctorch-python; then
  echo "== the Python bridge: pkg-config ctorch-python"
  "$cc" -std=c99 -Wall -Werror "$src/examples/python/hello_python.c" $(pkg-config --cflags --libs ctorch-python) -o hello_python
  ./hello_python | tee hello_python.out
  grep -q "sum 20" hello_python.out
fi

echo "== LeNet-5 with modules (examples/lenet5.c), 20 steps"
if [ -f "$data/train-images-idx3-ubyte.gz" ]; then
  "$cc" -O2 -I"$src/examples" "$src/examples/lenet5.c" $(pkg-config --cflags --libs ctorch) -lm -o lenet5
  ./lenet5 --epochs 1 --steps 20 --threads 2 --data "$data" --save '' --logdir '' | tee lenet5.out
  acc=$(sed -n 's/^test_accuracy=\([0-9.]*\).*/\1/p' lenet5.out)
  awk -v a="$acc" 'BEGIN { exit !(a > 0.3) }' || { echo "FAIL: test accuracy $acc after 20 steps (want > 0.3)"; exit 1; }
else
  echo "LeNet-5 part skipped: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
fi
echo "the Debian packages install, build and run from /usr"
