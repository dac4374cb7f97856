#!/bin/sh
# Runs a test command only when what it needs is there; otherwise prints
# "skipped: <why>" and exits 77, which ctest counts as skipped (never as
# passed). Usage: run_if.sh [--python PY] [--dir DIR] -- COMMAND [ARG...]
#   --python PY  PY must be set (the Python whose torch matches this libtorch)
#   --dir DIR    DIR must exist (e.g. the Fashion-MNIST data)
while [ $# -gt 0 ]; do
  case "$1" in
    --python)
      if [ -z "$2" ]; then
        echo "skipped: no Python whose torch matches this libtorch (configure with CTORCH_TORCH_PYTHON)"
        exit 77
      fi
      shift 2 ;;
    --dir)
      if [ ! -d "$2" ]; then
        echo "skipped: $2 is missing"
        exit 77
      fi
      shift 2 ;;
    --) shift; break ;;
    *) echo "run_if.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
exec "$@"
