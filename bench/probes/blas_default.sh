#!/usr/bin/env bash
# What the libblas.so.3 alternative does to Debian's libtorch:
# the same programs with the reference BLAS (netlib, what a fresh Debian 12
# has) and with OpenBLAS (what scripts/deps installs: the OpenMP build),
# alternating, in one run. Each program finds the BLAS under test first
# through LD_LIBRARY_PATH (libtorch needs libblas.so.3 and liblapack.so.3 by
# those names), so the system's alternative is left as it is: no root, and
# nothing changes for other processes. Needs libblas3, liblapack3 and
# libopenblas0-openmp. The method and a run's figures: docs/inference-benchmarks.md.
# Usage: bench/probes/blas_default.sh [BUILD_DIR=build] [ROUNDS=2]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build} rounds=${2:-2}
netlib=/usr/lib/x86_64-linux-gnu/blas/libblas.so.3
openblas=/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3
py=$(sed -n 's/^CTORCH_TORCH_PYTHON:[A-Z]*=//p' "$build/CMakeCache.txt")
for f in "$netlib" "$openblas" "$build/examples/lenet5"; do
  [ -e "$f" ] || { echo "blas_default: $f is missing (apt-get install libblas3 libopenblas0-openmp; build lenet5)" >&2; exit 2; }
done
mm() {  # GFLOP/s of a 128x768x3072 float matmul (BERT-base's FFN shape), 1 thread
  "$py" - <<'EOF'
import time, torch
torch.set_num_threads(1)
a, b = torch.randn(128, 768), torch.randn(768, 3072)
for _ in range(2): a @ b
best = 1e9
for _ in range(5):
    t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)
print(f"{2 * 128 * 768 * 3072 / best / 1e9:.1f}")
EOF
}
demo() {  # the demo's epoch (examples/lenet5 as scripts/demo runs it): test accuracy and img/s
  "$build/examples/lenet5" --epochs 1 --logdir '' --save "$build/blas_default_lenet5.pt" 2>&1 | sed -n 's/^test_accuracy=/test_accuracy=/p'
}
base_ldp=${LD_LIBRARY_PATH:-}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for name in netlib openblas; do
    dirs=$(dirname "$netlib"):$(dirname "$netlib")/../lapack
    [ $name = openblas ] && dirs=$(dirname "$openblas")
    export LD_LIBRARY_PATH=$dirs${base_ldp:+:$base_ldp}
    echo "round $r $name: matmul $(mm) GFLOP/s; demo $(demo)"
  done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
