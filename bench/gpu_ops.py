"""Per-call cost of the CUDA ops of gpu_ops.cpp through Python torch (1-element
add/mul/relu, 64x64 matmul; every timed loop between two synchronisations).
Prints one JSON object; without CUDA: "skipped: no CUDA device", exit 77."""
import json
import statistics
import sys
import time

import torch


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 77
    quick = "--quick" in sys.argv
    iters = 2000 if quick else 20000
    rounds = 3 if quick else 11
    a, b = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
    ma, mb = torch.ones(64, 64, device="cuda"), torch.ones(64, 64, device="cuda")

    def loop2(op, x, y):
        def run(n):
            for _ in range(n):
                op(x, y)
        return run

    def loop1(op, x):
        def run(n):
            for _ in range(n):
                op(x)
        return run

    cases = {"add": loop2(torch.add, a, b), "mul": loop2(torch.mul, a, b), "relu": loop1(torch.relu, a),
             "mm64": loop2(torch.matmul, ma, mb)}

    def synced(run, n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        run(n)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e9 / n

    for run in cases.values():
        synced(run, iters // 10 + 1)
    samples = {k: [] for k in cases}
    for _ in range(rounds):
        for k, run in cases.items():
            samples[k].append(synced(run, iters))
    print(json.dumps({f"cuda_{k}_python": {"median": statistics.median(v), "min": min(v), "max": max(v)}
                      for k, v in samples.items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
