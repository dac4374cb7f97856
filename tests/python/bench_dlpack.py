"""Times one DLPack exchange ctorch -> torch -> ctorch (not a test; numbers only).

Usage: CTORCH_LIB=build/libctorch.so PYTHONPATH=python /usr/bin/python3 tests/python/bench_dlpack.py
"""
import time

import torch

import ctorch


def bench(numel, reps):
    t = ctorch.from_torch(torch.zeros(numel, dtype=torch.float32))
    ptr = t.data_ptr()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(reps):
            x = ctorch.to_torch(t)      # ctorch -> torch
            u = ctorch.from_torch(x)    # torch -> ctorch
            assert u.data_ptr() == ptr  # zero-copy: same memory throughout
            del x, u
        best = min(best, (time.perf_counter() - start) / reps)
    return best


if __name__ == "__main__":
    torch.set_num_threads(1)
    for label, numel, reps in (("1 element", 1, 20000), ("256 MiB", 64 * 1024 * 1024, 2000)):
        print("%-10s ctorch->torch->ctorch: %7.2f us per round trip (best of 5)" % (label, bench(numel, reps) * 1e6))
