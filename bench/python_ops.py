"""Per-call cost of the same ops through Python torch (run with the build's CTORCH_TORCH_PYTHON).
Prints one JSON object: median/min/max ns per op, same ops and rounds as bench_ops."""
import json
import statistics
import sys
import time

import torch


def time_loop(loop, iters):
    t0 = time.perf_counter()
    loop(iters)
    return (time.perf_counter() - t0) * 1e9 / iters


# Each loop is as tight as a Python user could write it (op bound to a local,
# a plain call per iteration), so Python's number is not inflated by the harness.
def make_loop(op, x, y=None, d0=None, d1=None):
    if d0 is not None:
        def loop(n):
            for _ in range(n):
                op(x, d0, d1)
    elif y is not None:
        def loop(n):
            for _ in range(n):
                op(x, y)
    else:
        def loop(n):
            for _ in range(n):
                op(x)
    return loop


def main():
    quick = "--quick" in sys.argv
    iters = 20000 if quick else 400000
    mm_iters = 3 if quick else 10
    rounds = 3 if quick else 15
    torch.set_num_threads(1)
    a, b = torch.ones(1), torch.ones(1)
    a2 = torch.ones(1, 1)
    ma, mb = torch.ones(1024, 1024), torch.ones(1024, 1024)
    cases = {
        "add": (make_loop(torch.add, a, b), iters),
        "mul": (make_loop(torch.mul, a, b), iters),
        "relu": (make_loop(torch.relu, a), iters),
        "transpose": (make_loop(torch.transpose, a2, d0=0, d1=1), iters),
        "matmul1024": (make_loop(torch.matmul, ma, mb), mm_iters),
    }
    for fn, n in cases.values():
        time_loop(fn, n // 10 + 1)
    samples = {k: [] for k in cases}
    for _ in range(rounds):
        for k, (fn, n) in cases.items():
            samples[k].append(time_loop(fn, n))
    out = {}
    for k, v in samples.items():
        out[f"op_{k}_python"] = {"median": statistics.median(v), "min": min(v), "max": max(v)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
