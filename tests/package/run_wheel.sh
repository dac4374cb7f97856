#!/usr/bin/env bash
# The Python wheel in fresh venvs, as a user gets it: builds it (scripts/package
# wheel, against TORCH_PYTHON's torch: the one this tree is built against),
# checks what it holds (the binding, one libctorch whose RUNPATH is
# $ORIGIN/../../torch/lib, Requires-Dist torch==X.Y.*, no path of this
# machine), then `pip install --no-index` it into
#   1. a venv without torch: refused (torch==X.Y.* cannot be satisfied);
#   2. a fresh venv holding PyPI's torch (wheel_env.py: hard links to the files
#      pip installed for TORCH_PYTHON, torch and its requirements): the
#      library found beside the binding and libtorch in that venv's torch
#      (wheel_check.py), a torch of another release refused at import, the
#      README's first Python program, the binding README's, an AOTInductor
#      package compiled by that torch without linking libtorch loaded and
#      run (tests/python/test_py_aoti.py: 15 s with inductor warm, 100 s cold), and a short
#      LeNet-5 training with ctorch.nn modules
#      (tests/bindings/py_train.py, 30 steps);
#   3. the venv of 1 with TORCH_PYTHON's site-packages added by a .pth file
#      (torch in another folder of sys.path): the binding loads libtorch
#      from there;
#   4. a venv of another CPython minor than TORCH_PYTHON's (the wheel is
#      py3-none: ctypes, no extension), found among python3.X on PATH and
#      pyenv's versions, with torch's files linked in as in 2 (its C++
#      libraries, which ctorch uses, are the same for every Python; its own
#      extension, for TORCH_PYTHON's minor, is not imported): the binding
#      loads and trains a step. Skipped, saying so, where there is none.
# Usage: run_wheel.sh SOURCE_DIR TORCH_PYTHON VERSION DATA_DIR [AOTI_DIR]
# AOTI_DIR: where test_py_aoti.py keeps its compiled package (the python_aoti
# test's folder: compiled once per tree, stamped with the torch version); a
# fresh temporary folder without it.
set -uo pipefail
src=$1 torch_py=$2 version=$3 data=$4 aoti_dir=${5:-}
skip() { echo "skipped: $*"; exit 77; }
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then skip "$CTORCH_BINDING_SKIP"; fi
[ -x "$torch_py" ] || skip "no Python with PyPI's torch for this tree ('$torch_py')"
torch_mm=$("$torch_py" -c 'import re; from importlib.metadata import version; print(re.match(r"\d+\.\d+", version("torch")).group(0))') ||
  skip "$torch_py has no torch installed by pip"
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
took() { printf '(%.1f s)\n' "$(echo "$(now) - $1" | bc)"; }
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1  # the user's pip cache untouched
# The venvs are made without pip (ensurepip takes seconds); TORCH_PYTHON's
# pip installs into them (pip --python).
pip_in() { local v=$1; shift; "$torch_py" -m pip --python "$v/bin/python" "$@"; }

echo "== scripts/package wheel (against $torch_py: torch $torch_mm)"
t=$(now)
if ! CTORCH_WHEEL_TORCH=$torch_py "$src/scripts/package" --out "$tmp/dist" wheel >"$tmp/package.log" 2>&1; then
  cat "$tmp/package.log"
  grep -q "could not install scikit-build-core" "$tmp/package.log" && skip "PyPI is unreachable (scikit-build-core comes from it)"
  exit 1
fi
grep 'wheel built in' "$tmp/package.log"
took "$t"
whl=$(ls "$tmp"/dist/ctorch-"$version"-py3-none-linux_x86_64.whl) ||
  { echo "FAIL: no py3-none wheel (ctypes only: one wheel for every CPython 3): $(ls "$tmp/dist")"; exit 1; }
echo "$(basename "$whl"): $(stat -c %s "$whl") bytes"
mkdir "$tmp/whl" && (cd "$tmp/whl" && python3 -m zipfile -e "$whl" .)
grep -qx 'Tag: py3-none-linux_x86_64' "$tmp"/whl/ctorch-"$version".dist-info/WHEEL ||
  { echo "FAIL: WHEEL's tags are not py3-none-linux_x86_64:"; cat "$tmp"/whl/*.dist-info/WHEEL; exit 1; }
soname=$(cd "$tmp/whl/ctorch/lib" && ls)
for f in ctorch/__init__.py ctorch/_capi.py ctorch/_ops.py ctorch/_installed.py ctorch/lib/libctorch.so.0-torch$torch_mm; do
  [ -f "$tmp/whl/$f" ] || { echo "FAIL: the wheel lacks $f (its lib/: $soname)"; exit 1; }
done
[ "$soname" = "libctorch.so.0-torch$torch_mm" ] || { echo "FAIL: ctorch/lib holds '$soname', not one library"; exit 1; }
runpath=$(readelf -d "$tmp/whl/ctorch/lib/$soname" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
[ "$runpath" = '$ORIGIN/../../torch/lib' ] || { echo "FAIL: the library's RUNPATH is '$runpath'"; exit 1; }
grep -qx "License-Expression: BSD-3-Clause" "$tmp"/whl/ctorch-"$version".dist-info/METADATA &&
  cmp -s "$tmp"/whl/ctorch-"$version".dist-info/licenses/LICENSE "$src/LICENSE" ||
  { echo "FAIL: the wheel does not name BSD-3-Clause and ship the project's LICENSE:"; ls -R "$tmp"/whl/*.dist-info; exit 1; }
grep -qx "Requires-Dist: torch==$torch_mm.\*" "$tmp"/whl/ctorch-"$version".dist-info/METADATA ||
  { echo "FAIL: METADATA does not require torch==$torch_mm.*:"; cat "$tmp"/whl/*.dist-info/METADATA; exit 1; }
# The CPython floor is torch's (2.15.0: >=3.11), not a lower one pip would
# accept and torch's wheels would not.
py_floor=$("$torch_py" -c 'from importlib.metadata import metadata; print(metadata("torch")["Requires-Python"] or "")' |
  sed -n 's/^>= *\([0-9]*\.[0-9]*\).*/\1/p')
grep -qx "Requires-Python: >=${py_floor:-3.9}" "$tmp"/whl/ctorch-"$version".dist-info/METADATA ||
  { echo "FAIL: METADATA's Requires-Python is not torch's >=$py_floor:"; grep Requires-Python "$tmp"/whl/*.dist-info/METADATA; exit 1; }
torch_site=$("$torch_py" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')
# (The Python files and the metadata: what decides where things load from.)
if grep -rlF --include='*.py' --include=METADATA --include=RECORD -e "$src" -e "$torch_site" -e build-wheel "$tmp/whl"; then
  echo "FAIL: the files above name a path of this machine ($src, $torch_site)"; exit 1
fi
echo "the wheel holds the binding and one library (RUNPATH $runpath), requires torch==$torch_mm.*, names no local path"

echo "== 1. a venv without torch"
t=$(now)
base_py=$("$torch_py" -c 'import sys; print(sys._base_executable)')
"$base_py" -m venv --without-pip "$tmp/bare"
if pip_in "$tmp/bare" install --no-index "$whl" >"$tmp/bare.log" 2>&1; then
  echo "FAIL: the wheel installed where there is no torch"; exit 1
fi
grep -F "torch==$torch_mm.*" "$tmp/bare.log"
took "$t"

echo "== 2. a fresh venv with PyPI's torch: pip install $(basename "$whl")"
t=$(now)
"$base_py" -m venv --without-pip "$tmp/venv"
py=$tmp/venv/bin/python
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$torch_py" "$src/tests/package/wheel_env.py" "$site"
took "$t"
t=$(now)
pip_in "$tmp/venv" install -q --no-index "$whl"
pip_in "$tmp/venv" check
took "$t"
cd "$tmp"  # no source tree on sys.path
run_ex() {  # FILE HEADING: runs the first python block under HEADING (with whatever follows it on stdin)
  { "$src/tests/package/extract_block.sh" "$1" "$2" python; cat; } >"$tmp/ex.py"
  CTORCH_LIB=/nonexistent/libctorch.so "$py" "$tmp/ex.py"
}
t=$(now)
CTORCH_LIB=/nonexistent/libctorch.so "$py" "$src/tests/package/wheel_check.py" "$version" "$site/torch/lib"
echo "-- an AOTInductor package from the wheel (tests/python/test_py_aoti.py: compiled without linking libtorch)"
rc=0
CTORCH_LIB=/nonexistent/libctorch.so CTORCH_AOTI_PY_DIR=${aoti_dir:-$tmp/aoti} "$py" "$src/tests/python/test_py_aoti.py" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 77 ] || { echo "FAIL: the AOTInductor package did not load from the wheel"; exit 1; }
echo "-- another torch release first on sys.path (a torch-9.9.0 dist-info): import refused"
mkdir -p "$tmp/fake/torch-9.9.0.dist-info"
printf 'Metadata-Version: 2.1\nName: torch\nVersion: 9.9.0\n' >"$tmp/fake/torch-9.9.0.dist-info/METADATA"
if PYTHONPATH=$tmp/fake "$py" -c 'import ctorch' >"$tmp/fake.log" 2>&1; then echo "FAIL: imported beside torch 9.9.0"; exit 1; fi
grep -F "built for torch $torch_mm, and this Python has torch 9.9.0" "$tmp/fake.log"
echo "-- README.md's first Python program"
out=$(run_ex "$src/README.md" "**Python**" </dev/null)
echo "$out"
[ "$out" = "30.0 [[2.0, 4.0], [6.0, 8.0]]" ] || { echo "FAIL: not a.grad = 2a"; exit 1; }
echo "-- bindings-gen/python/README.md's first program (loss of a zero weight: ln 10)"
out=$(echo 'print(f"{loss.item():.4f} {w.grad.shape}")' | run_ex "$src/bindings-gen/python/README.md" "# ctorch for Python")
echo "$out"
[ "$out" = "2.3026 (10, 784)" ] || { echo "FAIL: not ln(10) and w's shape"; exit 1; }
took "$t"
if [ -f "$data/train-images-idx3-ubyte.gz" ]; then
  t=$(now)
  CTORCH_TRAIN_STEPS=30 CTORCH_TRAIN_MIN_ACCURACY=0.3 CTORCH_TEST_THREADS=2 CTORCH_FASHION_MNIST=$data \
    "$py" "$src/tests/bindings/py_train.py"
  took "$t"
else
  echo "LeNet-5 part skipped: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
fi

echo "== 3. torch in another folder of sys.path (the venv of 1 over $torch_site)"
t=$(now)
echo "$torch_site" >"$("$tmp/bare/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/torch-env.pth"
# (--no-deps: 1 and 2 checked the requirement; here the venv's own older
# setuptools would shadow the one torch requires.)
pip_in "$tmp/bare" install -q --no-index --no-deps "$whl"
py=$tmp/bare/bin/python
CTORCH_LIB=/nonexistent/libctorch.so "$py" "$src/tests/package/wheel_check.py" "$version" "$torch_site/torch/lib"
took "$t"

echo "== 4. another CPython minor"
# The first CPython of requires-python (torch's floor) of another minor that runs, newest
# torch supports first: a pyenv shim of a version not selected fails and
# pyenv's own copy of it is tried.
torch_pyver=$("$torch_py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
cands=()
proot=$(pyenv root 2>/dev/null) || proot=/nonexistent
for m in 12 13 10 14 9; do
  c=$(command -v "python3.$m" 2>/dev/null) && cands+=("$c")
  for c in "$proot"/versions/3.$m.*/bin/python3; do [ -x "$c" ] && cands+=("$c"); done
done
other= other_v=
for c in "${cands[@]}"; do
  v=$(FLOOR=${py_floor:-3.9} "$c" -c 'import os, sys, venv; f = tuple(map(int, os.environ["FLOOR"].split("."))); sys.exit(1) if sys.version_info < f else print("%d.%d" % sys.version_info[:2])' \
      2>/dev/null) || continue
  [ "$v" != "$torch_pyver" ] && { other=$c other_v=$v; break; }
done
if [ -z "$other" ]; then
  echo "part 4 skipped: no CPython ${py_floor:-3.9}+ other than $torch_pyver found (python3.X on PATH, pyenv versions)"
else
  t=$(now)
  echo "-- CPython $other_v ($other)"
  "$other" -m venv --without-pip "$tmp/minor"
  py=$tmp/minor/bin/python
  site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$torch_py" "$src/tests/package/wheel_env.py" "$site"
  # (--no-deps: torch's requirements were resolved for $torch_pyver's markers;
  # 1 and 2 checked the wheel's own.)
  pip_in "$tmp/minor" install -q --no-index --no-deps "$whl"
  CTORCH_LIB=/nonexistent/libctorch.so "$py" "$src/tests/package/wheel_minor_check.py" "$site/torch/lib"
  took "$t"
fi
echo "the wheel installs into fresh venvs${other_v:+ (CPython $torch_pyver and $other_v)}, requires torch==$torch_mm.*, and finds its library and libtorch"
