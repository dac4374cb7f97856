"""The Python side of bench/peers/run's per-call rows: the cases of
bench/peers/ops.cpp (same names, tensors and calls per loop), each loop as
tight as a Python user writes it (bench/python_ops.py's make_loop).
Usage: $CTORCH_TORCH_PYTHON ops.py ITERS ROUNDS; prints {"op_<case>_python": {...}} (ns per call)."""
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from python_ops import make_loop, time_loop  # noqa: E402


def main():
    iters, rounds = int(sys.argv[1]), int(sys.argv[2])
    torch.set_num_threads(1)
    a, b, m, n = torch.ones(1), torch.ones(1), torch.ones(1, 1), torch.ones(1, 1)
    s, t = torch.ones(64, 64), torch.ones(64, 64)
    cases = {
        "add_1": (make_loop(torch.add, a, b), iters),
        "mul_1": (make_loop(torch.mul, a, b), iters),
        "relu_1": (make_loop(torch.relu, a), iters),
        "matmul_1": (make_loop(torch.matmul, m, n), iters),
        "add_64x64": (make_loop(torch.add, s, t), iters // 2),
        "mul_64x64": (make_loop(torch.mul, s, t), iters // 2),
        "relu_64x64": (make_loop(torch.relu, s), iters // 2),
        "matmul_64x64": (make_loop(torch.matmul, s, t), iters // 20),
    }
    for fn, k in cases.values():
        time_loop(fn, k // 10 + 1)
    samples = {k: [] for k in cases}
    for _ in range(rounds):
        for k, (fn, c) in cases.items():
            samples[k].append(time_loop(fn, c))
    print(json.dumps({f"op_{k}_python": {"median": statistics.median(v), "min": min(v), "max": max(v)}
                      for k, v in samples.items()}, indent=2))


if __name__ == "__main__":
    main()
