#!/usr/bin/env bash
# The Rust crates of this build (build/bindings/rust) in small cargo projects
# under WORK (kept, with CARGO_TARGET_DIR=WORK/target, so a rerun is warm),
# linked to this build's libctorch through a pkg-config file written here.
#   compile_fail: a call of an operator api.json marks unsafe, and of
#                 Tensor::from_raw_checked, without `unsafe` must not compile
#                 (error E0133); the same calls inside `unsafe {}` must.
#   sweep:        every safe operator with bad arguments (rust_sweep_gen.py,
#                 rust_sweep.py): no crash.
#   doc:          cargo doc of the crates warns of nothing (missing docs on) and
#                 shows every item with the header's text (rust_doc_check.py).
#   doctest:      cargo test --doc of the ctorch crate (feature ndarray): every
#                 example of its docs and the README's rustdoc blocks runs.
#   reach:        the hand-written wrappers of the header functions the
#                 generator does not reach (ctorch/src/extra.rs), each called
#                 and asserted (rust_reach_test.rs), panicking closures
#                 included; then rust_reach.py's count.
#   example NAME: builds examples/rust/NAME.rs (dev profile) and runs it with
#                 the remaining arguments.
#   program NAME: the same for tests/bindings/NAME.rs (a test program).
# Skipped (77) without cargo or pkg-config, or when crates.io (the pkg-config
# crate) cannot be reached. The modes share CARGO_TARGET_DIR (cargo locks it
# itself, so ctest -j runs them side by side); each keeps its own cargo.log.
# Usage: run_rust.sh MODE SOURCE_DIR BINDINGS_RUST_DIR LIBCTORCH API_JSON WORK [ARGS...]
set -uo pipefail
mode=$1 src=$2 crates=$3 lib=$4 api=$5 work=$6
shift 6
skip() { echo "skipped: $*"; exit 77; }
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then skip "$CTORCH_BINDING_SKIP"; fi
command -v cargo >/dev/null || skip "cargo is not installed"
command -v pkg-config >/dev/null || skip "pkg-config is not installed (ctorch-sys links through it)"
set -e
mkdir -p "$work/pc"
libdir=$(dirname "$lib")
cat >"$work/pc/ctorch.pc" <<PC
libdir=$libdir
includedir=$src/include
Name: ctorch
Description: this build's libctorch (tests/bindings/run_rust.sh)
Version: 0.0.0
Libs: -L\${libdir} -lctorch
Cflags: -I\${includedir}
PC
export PKG_CONFIG_PATH=$work/pc LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CARGO_TARGET_DIR=$work/target CARGO_BUILD_JOBS=1

# Every project asks for the same crates and features (ctorch with its ndarray
# feature, ndarray as ctorch takes it), so the shared target directory builds
# each of them once for all modes (cargo hashes features into the artifact).
project() {  # project NAME: WORK/NAME with a Cargo.toml depending on the crates by path
  mkdir -p "$work/$1/src"
  cat >"$work/$1/Cargo.toml" <<TOML
[package]
name = "$1"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
ctorch = { path = "$crates/ctorch", features = ["ndarray"] }
ndarray = { version = "0.17", default-features = false }

[workspace]
TOML
  cd "$work/$1"
}

cargo_run() {  # cargo SUBCOMMAND..., its log in the project's own cargo.log
  cargo "$@" >cargo.log 2>&1
}
network_skip() {
  if grep -Eq 'failed to (download|query|get|fetch|load source)|Couldn.t resolve host|network failure|spurious network' \
      cargo.log; then
    skip "crates.io is unreachable (the pkg-config crate comes from it)"
  fi
}

case $mode in
compile_fail)
  project rust-compile-fail
  # Each case: a statement that needs `unsafe`. Inside `unsafe {}` it must
  # compile (so the failure below is the missing unsafe, nothing else).
  cases=(
    'let _ = ctorch::ops::_cummax_helper(&x, &x, &x, 0);'
    'let _ = ctorch::Tensor::from_raw_checked(std::ptr::null_mut());'
    'let _ = ctorch::nn::Module::from_raw(std::ptr::null_mut());'
    'let _ = ctorch::DlPack::from_raw(std::ptr::null_mut());'
    'let _ = ctorch::Tensor::from_blob(std::ptr::null_mut(), &[0], None, ctorch::DType::FLOAT32, ctorch::Device::CPU, None, std::ptr::null_mut());'
  )
  for c in "${cases[@]}"; do
    for wrap in yes no; do
      body=$c
      [ $wrap = yes ] && body="unsafe { $c }"
      printf 'fn main() {\n    let x = ctorch::Tensor::from_slice(&[1f32; 6], &[2, 3]).unwrap();\n    %s\n    drop(x);\n}\n' \
        "$body" >src/main.rs
      if cargo_run check --quiet; then
        [ $wrap = yes ] || { cat src/main.rs; echo "FAIL: compiled without unsafe: $c"; exit 1; }
        echo "ok: compiles inside unsafe {}: $c"
      else
        network_skip
        if [ $wrap = yes ]; then cat cargo.log; echo "FAIL: does not compile even inside unsafe {}: $c"; exit 1; fi
        grep -q 'error\[E0133\]' cargo.log || { cat cargo.log; echo "FAIL: not E0133: $c"; exit 1; }
        echo "ok: refused without unsafe (E0133): $c"
      fi
    done
  done
  ;;
sweep)
  project rust-sweep
  python3 "$src/tests/bindings/rust_sweep_gen.py" "$api" src/main.rs
  t=$(date +%s)
  cargo_run build --quiet || { network_skip; cat cargo.log; echo "FAIL: cargo build"; exit 1; }
  echo "cargo build: $(($(date +%s) - t)) s"
  exec python3 "$src/tests/bindings/rust_sweep.py" "$CARGO_TARGET_DIR/debug/rust-sweep" "$@"
  ;;
doc)
  # cargo doc of both crates: no warning (missing docs included), then every
  # item's page carries the C header's text for it (rust_doc_check.py).
  project rust-doc
  printf 'fn main() {}\n' >src/main.rs
  RUSTDOCFLAGS="-W missing_docs" cargo_run doc --quiet -p ctorch -p ctorch-sys --no-deps ||
    { network_skip; cat cargo.log; echo "FAIL: cargo doc"; exit 1; }
  if grep -E '^(warning|error)' cargo.log; then cat cargo.log; echo "FAIL: cargo doc warns"; exit 1; fi
  echo "cargo doc: no warnings (missing_docs on)"
  exec python3 "$src/tests/bindings/rust_doc_check.py" "$api" "$CARGO_TARGET_DIR/doc" "$src"
  ;;
doctest)
  # The ctorch crate's doc tests (its examples and the README's blocks marked
  # rustdoc, src/readme_doctests.rs), with the ndarray feature, run as a
  # dependency of this project so they reuse the crates the other modes built.
  # Every example runs: one marked no_run (compiled only) fails this test.
  project rust-doctest
  printf 'fn main() {}\n' >src/main.rs
  t=$(date +%s)
  if ! cargo_run test --doc -p ctorch; then
    network_skip
    cat cargo.log
    echo "FAIL: cargo test --doc"
    exit 1
  fi
  grep -E '^test |^test result|Finished|Compiling' cargo.log
  echo "cargo test --doc: $(($(date +%s) - t)) s"
  if grep -E '^test .* - compile \.\.\.' cargo.log; then
    echo "FAIL: the doc tests above are compiled only (no_run): make them run"
    exit 1
  fi
  n=$(grep -Ec '^test .* \.\.\. ok$' cargo.log || true)
  need=${CTORCH_RUST_DOCTESTS_MIN:-12}
  [ "$n" -ge "$need" ] || { echo "FAIL: $n doc tests passed, expected at least $need"; exit 1; }
  grep -q 'readme_doctests.rs - readme_doctests::ReadmeLine' cargo.log ||
    { echo "FAIL: the README's rustdoc blocks did not run"; exit 1; }
  grep -q 'nd.rs - nd ' cargo.log || { echo "FAIL: the ndarray examples did not run"; exit 1; }
  if [ -n "${CTORCH_LM_MODEL:-}" ]; then echo "the README's chat program ran with $CTORCH_LM_MODEL"
  else echo "the README's chat program had no model (${CTORCH_LM_MODEL_ABSENT:-CTORCH_LM_MODEL is not set}): it returned at once"; fi
  echo "ok: $n doc tests ran and passed"
  ;;
reach)
  project rust-reach
  cp "$src/tests/bindings/rust_reach_test.rs" src/main.rs
  cargo_run build --quiet || { network_skip; cat cargo.log; echo "FAIL: cargo build"; exit 1; }
  "$CARGO_TARGET_DIR/debug/rust-reach"
  exec python3 "$src/tests/bindings/rust_reach.py" "$api" "$crates/ctorch/src" --list
  ;;
example|program)
  name=$1
  shift
  project "rust-$mode-$name"
  if [ "$mode" = example ]; then cp "$src/examples/rust/$name.rs" src/main.rs; else cp "$src/tests/bindings/$name.rs" src/main.rs; fi
  # The dev profile, as sweep, reach and compile_fail build: the ctorch crate
  # (thousands of generated wrappers) then compiles once per build tree for
  # all of them, not a second time optimised (205 s under load) for code whose
  # work is done inside libctorch.
  cargo_run build --quiet || { network_skip; cat cargo.log; echo "FAIL: cargo build"; exit 1; }
  exec "$CARGO_TARGET_DIR/debug/rust-$mode-$name" "$@"
  ;;
*)
  echo "usage: run_rust.sh compile_fail|sweep|doc|doctest|reach|example|program ..." >&2
  exit 2
  ;;
esac
