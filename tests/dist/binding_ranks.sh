#!/usr/bin/env bash
# A binding's data-parallel program on 2 ranks under torchrun (scripts/ddp):
#   rust: tests/bindings/rust_dist_train.rs (ctorch::dist), built by
#         tests/bindings/run_rust.sh in the binding tests' cargo project
#         directory (WORK/target, shared with binding_rust_*: warm when they ran);
#   java: tests/dist/DistTrain.java (org.ctorch.Distributed), run by the JDK's
#         source launcher on the classes tests/bindings/run_java.sh compiled
#         (build/bindings/java/target/classes, shared with binding_java_*).
# The program is built (or found up to date) once before torchrun starts, so
# the ranks do not race to build it and the group's rendezvous timeout does
# not include a build. Skipped (77) where cargo/pkg-config, a JDK 22+ and
# Maven, or torchrun ($CTORCH_TORCHRUN) are missing, as the binding's own
# tests skip.
# The first argument is the binding's runner, which names the language (and
# gives the test the cargo or java cost label, tests/labels.cmake).
# Usage: binding_ranks.sh .../run_rust.sh SOURCE_DIR BINDINGS_RUST_DIR LIBCTORCH API_JSON WORK
#        binding_ranks.sh .../run_java.sh SOURCE_DIR BINDINGS_JAVA_DIR LIBCTORCH
set -uo pipefail
runner=$1 src=$2
lang=$(basename "$runner" .sh)
lang=${lang#run_}
skip() { echo "skipped: $*"; exit 77; }
if [ -n "${CTORCH_BINDING_SKIP:-}" ]; then skip "$CTORCH_BINDING_SKIP"; fi
read -r -a torchrun <<< "${CTORCH_TORCHRUN:-torchrun}"
command -v "${torchrun[0]}" >/dev/null || skip "no torchrun (${CTORCH_TORCHRUN:-torchrun})"
export OMP_NUM_THREADS=1
ddp=("$src/scripts/ddp" -n 2 -t 120 --)
t0=$(date +%s)
built() {  # built STATUS: stop on a skip or failure of the build step, else say how long it took
  [ "$1" = 77 ] && exit 77
  [ "$1" = 0 ] || { echo "FAIL: building the $lang program"; exit 1; }
  echo "$lang program ready in $(($(date +%s) - t0)) s"
}
case $lang in
rust)
  crates=$3 lib=$4 api=$5 work=$6
  "$runner" program "$src" "$crates" "$lib" "$api" "$work" rust_dist_train --build-only
  built $?
  export LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  prog=("$work/target/debug/rust-program-rust_dist_train")
  ;;
java)
  pkg=$3 lib=$4
  "$runner" example "$pkg" "$lib" "$src/tests/dist/DistTrain.java" --build-only
  built $?
  jdk=$("$runner" env "$pkg" "$lib" | sed -n 's/^JAVA_HOME=//p')
  export CTORCH_LIB=$lib
  prog=("$jdk/bin/java" --enable-native-access=ALL-UNNAMED -XX:TieredStopAtLevel=1 -cp "$pkg/target/classes"
        "$src/tests/dist/DistTrain.java")
  ;;
*)
  echo "usage: binding_ranks.sh .../run_rust.sh|.../run_java.sh SOURCE_DIR ..." >&2
  exit 2
  ;;
esac
t1=$(date +%s)
"${ddp[@]}" "${prog[@]}" || { echo "FAIL: the $lang ranks under torchrun"; exit 1; }
echo "ok: 2 $lang ranks under torchrun in $(($(date +%s) - t1)) s"
