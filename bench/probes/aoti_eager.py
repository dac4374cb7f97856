#!/usr/bin/env python3
"""The model of tests/models/make_aoti_package.py in Python: eager forward
time, and the same package loaded and run by Python's own AOTI loader, for
comparison with bench/probes/aoti_run (C). Run with the Python whose torch made the
package (CTORCH_TORCH_PYTHON).

    aoti_eager.py PACKAGE [RUNS]"""
import statistics
import sys
import time

import torch



def per_call_us(f, runs):
    for _ in range(100):
        f()
    rounds = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(runs // 7):
            f()
        rounds.append((time.perf_counter() - t0) * 1e6 / (runs // 7))
    return statistics.median(rounds)


def main():
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 7000
    torch.set_num_threads(1)
    torch.manual_seed(0)
    fc1, fc2 = torch.nn.Linear(4, 8), torch.nn.Linear(8, 3)
    x, b = torch.randn(2, 4), torch.randn(3)

    def eager():
        with torch.no_grad():
            h = torch.tanh(fc1(x))
            return fc2(h) + b, h

    t0 = time.perf_counter()
    compiled = torch._inductor.aoti_load_package(path)
    load_ms = (time.perf_counter() - t0) * 1e3
    diff = max((a - e).abs().max().item() for a, e in zip(compiled(x, b), eager()))
    print(f"torch {torch.__version__}: eager {per_call_us(eager, runs):.2f} us/call, "
          f"python aoti {per_call_us(lambda: compiled(x, b), runs):.2f} us/call, "
          f"python aoti load {load_ms:.1f} ms, max |aoti - eager| {diff:.3g}")


main()
