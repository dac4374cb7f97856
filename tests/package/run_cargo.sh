#!/usr/bin/env bash
# The Rust crates in a fresh cargo project, as a user gets them: packs the
# build's generated crates (scripts/package rust), unpacks the two .crate
# files, and builds a new `cargo new` project depending on them by path
# (ctorch-sys found by ctorch through [patch.crates-io], as once published;
# the pkg-config crate from crates.io), linking libctorch through pkg-config
# at a prefix made by `cmake --install` (never the build tree). Then:
#   first: runs the README's first Rust program and checks its output;
#          a short LeNet-5 training with the nn builders (lenet5.rs);
#   nn:    every case of tests/nn/cases through the generated builders
#          (nn_dump.rs + cases_gen.rs from rust_cases.py), judged against
#          torch.nn by tests/nn/nn_vs_torch.py, as it judges the C library.
# CARGO_TARGET_DIR is BUILD_DIR/rust-package-target, so a rerun is warm.
# Usage: run_cargo.sh first|nn SOURCE_DIR BUILD_DIR VERSION DATA_DIR PYTHON
set -uo pipefail
mode=$1 src=$2 build=$3 version=$4 data=$5 py=$6
skip() { echo "skipped: $*"; exit 77; }
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then skip "$CTORCH_BINDING_SKIP"; fi
command -v cargo >/dev/null || skip "cargo is not installed"
command -v pkg-config >/dev/null || skip "pkg-config is not installed (the ctorch-sys crate links through it)"
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CARGO_TARGET_DIR=$build/rust-package-target

echo "== scripts/package rust"
CTORCH_PACKAGE_BUILD=$build "$src/scripts/package" --out "$tmp/dist" rust
mkdir "$tmp/crates"
for c in ctorch-sys ctorch; do
  f=$tmp/dist/$c-$version.crate
  [ -f "$f" ] || { echo "FAIL: no $c-$version.crate"; exit 1; }
  tar xzf "$f" -C "$tmp/crates"
  cmp -s "$tmp/crates/$c-$version/LICENSE" "$src/LICENSE" || { echo "FAIL: $c-$version.crate does not ship the project's LICENSE"; exit 1; }
  grep -qx 'license = "BSD-3-Clause"' "$tmp/crates/$c-$version/Cargo.toml" || { echo "FAIL: $c's Cargo.toml does not name BSD-3-Clause"; exit 1; }
done
if grep -rq "$build" "$tmp/crates"; then echo "FAIL: a crate names the build tree"; exit 1; fi

echo "== an installed prefix (cmake --install), found by pkg-config"
for c in runtime dev; do cmake --install "$build" --prefix "$tmp/prefix" --component $c >/dev/null; done
pc=$(dirname "$(find "$tmp/prefix" -name ctorch.pc | head -n1)")
export PKG_CONFIG_PATH=$pc LD_LIBRARY_PATH=$(dirname "$pc")

echo "== a fresh project: cargo new, ctorch by path"
cd "$tmp"
cargo new --quiet --vcs none proj
cd proj
cat >>Cargo.toml <<TOML
ctorch = { path = "$tmp/crates/ctorch-$version" }

[patch.crates-io]
ctorch-sys = { path = "$tmp/crates/ctorch-sys-$version" }
TOML
build() {  # cargo build under the project's build lock (2 shared cores); skips when crates.io is unreachable
  # (The time printed is the compile's own, from when the lock was taken.)
  if ! flock /tmp/ctorch-build.lock sh -c 't=$(date +%s); cargo build --quiet "$@"; rc=$?; echo "cargo build $*: $(($(date +%s) - t)) s" >&2; exit $rc' \
      sh "$@" >"$tmp/cargo.log" 2>&1; then
    cat "$tmp/cargo.log"
    if grep -Eq 'failed to (download|query|get|fetch|load source)|Couldn.t resolve host|network failure|spurious network' "$tmp/cargo.log"; then
      skip "crates.io is unreachable (the pkg-config crate comes from it)"
    fi
    exit 1
  fi
  cat "$tmp/cargo.log"
  echo "(CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
}

if [ "$mode" = first ]; then
  "$src/tests/package/extract_block.sh" "$src/README.md" "**Rust**" rust >src/main.rs
  cat src/main.rs
  mkdir -p src/bin
  cp "$src/tests/package/rust/lenet5.rs" src/bin/lenet5.rs
  build --bins
  echo "== the README's first program"
  "$CARGO_TARGET_DIR/debug/proj" | tee "$tmp/first.out"
  grep -qx '30 \[2.0, 4.0, 6.0, 8.0\]' "$tmp/first.out" || { echo "FAIL: not the README's output"; exit 1; }
  if [ -f "$data/train-images-idx3-ubyte.gz" ]; then
    OMP_NUM_THREADS=2 "$CARGO_TARGET_DIR/debug/lenet5" "$data"
  else
    echo "LeNet-5 part skipped: no Fashion-MNIST in $data (package dataset-fashion-mnist)"
  fi
  echo "the Rust crates install into a fresh project and run"
else
  "$py" -c 'import torch, safetensors' 2>/dev/null || skip "$py has no torch or safetensors (the judge of the module cases)"
  mkdir -p src/bin/nn_dump
  cp "$src/tests/package/rust/nn_dump.rs" src/bin/nn_dump/main.rs
  python3 "$src/tests/package/rust/rust_cases.py" "$build/api.json" src/bin/nn_dump/cases_gen.rs \
    "$src"/tests/nn/cases/layers.txt "$src"/tests/nn/cases/seq.txt
  build --bin nn_dump
  OMP_NUM_THREADS=1 "$py" "$src/tests/nn/nn_vs_torch.py" "$CARGO_TARGET_DIR/debug/nn_dump" "$tmp/work" \
    "$src"/tests/nn/cases/layers.txt "$src"/tests/nn/cases/seq.txt
fi
