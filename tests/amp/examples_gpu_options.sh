#!/bin/sh
# The examples' --device/--amp options (docs/gpu.md), short runs:
#  - CPU autocast (bf16) trains and evaluates: lenet5 and the ResNet;
#  - --device cuda either trains (a GPU is there) or is refused at once with
#    exit status 2 and ctorch's message naming the device (none is there);
#    it never crashes or half-runs.
# Usage: examples_gpu_options.sh LENET5 RESNET DATA_DIR
set -u
lenet5=$1 resnet=$2 data=$3
fail() { echo "FAIL: $*"; exit 1; }
out=$("$lenet5" --data "$data" --steps 3 --amp bf16 --save '' 2>&1) || fail "lenet5 --amp bf16 on the CPU: $out"
echo "$out" | grep -q '^test_accuracy=' || fail "lenet5 --amp bf16: no result line: $out"
echo "$out" | grep -q '\[cpu, bf16\]' || fail "lenet5 --amp bf16: header does not say cpu, bf16: $out"
out=$("$resnet" --data "$data" --width 4 --batch 32 --steps 3 --test-images 200 --amp bf16 --threads 1 2>&1) ||
  fail "resnet --amp bf16 on the CPU: $out"
echo "$out" | grep -q '^test_accuracy=' || fail "resnet: no result line: $out"
check_cuda() { # PROG ARGS...
  prog=$1
  shift
  out=$("$prog" "$@" --device cuda --amp bf16 2>&1)
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "$out" | grep -q '^test_accuracy=' || fail "$prog --device cuda: no result line: $out"
    echo "$(basename "$prog") --device cuda: trained on the GPU"
  elif [ $rc -eq 2 ]; then
    echo "$out" | grep -q 'cuda:0 is not available' || fail "$prog --device cuda: refused without naming the device: $out"
    echo "$(basename "$prog") --device cuda: refused cleanly ($out)"
  else
    fail "$prog --device cuda: exit status $rc: $out"
  fi
}
check_cuda "$lenet5" --data "$data" --steps 2 --save ''
check_cuda "$resnet" --data "$data" --steps 2 --width 4 --batch 32 --test-images 100
out=$("$lenet5" --data "$data" --amp fp64 2>&1); [ $? -eq 2 ] || fail "lenet5 --amp fp64 accepted: $out"
echo "examples: --device/--amp OK"
