#!/bin/sh
# Installs the built ctorch into a scratch prefix, then builds examples/hello.c
# out of tree as a user would: through pkg-config and through CMake's
# find_package(ctorch). Usage: run.sh BUILD_DIR SOURCE_DIR CC
set -eu
build=$1 src=$2 cc=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pcdir=$(dirname "$(find "$tmp/prefix" -name ctorch.pc | head -n1)")
libdir=$(dirname "$pcdir")

echo "== pkg-config"
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs ctorch)
echo "flags: $flags"
tv=$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=torch_version ctorch)
echo "torch_version: $tv"
echo "$tv" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+$'
"$cc" -std=c99 -Wall -Wextra -Werror "$src/examples/hello.c" $flags -o "$tmp/hello_pc"
LD_LIBRARY_PATH="$libdir" "$tmp/hello_pc" > "$tmp/out_pc.txt"
grep -q "CTORCH_RUNTIME" "$tmp/out_pc.txt"
grep -q "must match the size" "$tmp/out_pc.txt"

echo "== cmake find_package(ctorch)"
mkdir -p "$tmp/consumer"
cat > "$tmp/consumer/CMakeLists.txt" <<CMK
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(ctorch REQUIRED)
add_executable(hello $src/examples/hello.c)
target_link_libraries(hello PRIVATE ctorch::ctorch)
CMK
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer/build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/consumer/build/hello" > "$tmp/out_cmake.txt"
grep -q "CTORCH_RUNTIME" "$tmp/out_cmake.txt"
if [ -e "$pcdir/ctorch-python.pc" ]; then
  echo "== the Python bridge: pkg-config ctorch-python, find_package(ctorch) + ctorch::python"
  pflags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs ctorch-python)
  echo "flags: $pflags"
  "$cc" -std=c99 -Wall -Wextra -Werror "$src/examples/python/hello_python.c" $pflags -o "$tmp/hello_py_pc"
  LD_LIBRARY_PATH="$libdir" "$tmp/hello_py_pc" > "$tmp/out_py_pc.txt"
  grep -q "sum 20" "$tmp/out_py_pc.txt"
  grep -q "ZeroDivisionError" "$tmp/out_py_pc.txt"
  mkdir -p "$tmp/pyconsumer"
  cat > "$tmp/pyconsumer/CMakeLists.txt" <<CMK
cmake_minimum_required(VERSION 3.18)
project(pyconsumer C)
find_package(ctorch REQUIRED)
add_executable(hello_python $src/examples/python/hello_python.c)
target_link_libraries(hello_python PRIVATE ctorch::python)
CMK
  cmake -S "$tmp/pyconsumer" -B "$tmp/pyconsumer/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
  cmake --build "$tmp/pyconsumer/build" >/dev/null
  LD_LIBRARY_PATH="$libdir" "$tmp/pyconsumer/build/hello_python" | grep -q "sum 20"
fi
echo "== Python package (share/ctorch/python)"
py=$(command -v python3 || true)
if [ -n "$py" ]; then
  # Without CTORCH_LIB the installed package loads the installed library.
  got=$(cd "$tmp" && env -u CTORCH_LIB PYTHONPATH="$tmp/prefix/share/ctorch/python" "$py" -c \
    "import ctorch; print(ctorch._rt.LIB_PATH, ctorch.add(ctorch.ones([1]), 1).item(), ctorch.from_torch.__module__)")
  echo "$got"
  case "$got" in "$tmp/prefix/"*" 2.0 ctorch.interop") ;; *) echo "the installed package did not load the installed library" >&2; exit 1 ;; esac
  [ ! -e "$tmp/prefix/share/ctorch/python/ctorch.py" ]
else
  echo "(no python3: not checked)"
fi
echo "installed ctorch works through pkg-config, CMake and Python"
