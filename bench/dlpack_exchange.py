"""DLPack exchange cost between ctorch and Python torch (numbers only, not a test).

Prints JSON. An "exchange" here is one round trip ctorch -> torch -> ctorch
through the ctorch package's interop module (ctypes + PyCapsule), checked
zero-copy each time. For scale it also times torch's own round trip
torch -> capsule -> torch, the floor any Python-side DLPack hand-over pays.

Usage: CTORCH_LIB=build/libctorch.so PYTHONPATH=build/bindings/python $CTORCH_TORCH_PYTHON \
       bench/dlpack_exchange.py [--quick]
"""
import json
import statistics
import sys
import time

import torch
import torch.utils.dlpack as tdl

import ctorch


def timed(fn, reps, rounds):
    per = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        per.append((time.perf_counter() - start) / reps * 1e6)
    return {"median": statistics.median(per), "min": min(per), "max": max(per)}


def case(numel, reps, rounds):
    src = torch.zeros(numel, dtype=torch.float32)
    t = ctorch.from_torch(src)
    ptr = t.data_ptr()

    # Zero-copy, checked once outside the timed loop: same memory throughout.
    if ctorch.from_torch(ctorch.to_torch(t)).data_ptr() != ptr:
        raise AssertionError("copy detected")

    def ctorch_round_trip():
        ctorch.from_torch(ctorch.to_torch(t))  # ctorch -> torch -> ctorch

    def torch_round_trip():
        tdl.from_dlpack(tdl.to_dlpack(src))

    # The two directions alone (each result dropped at once, so freeing it is counted too).
    def to_torch_only():
        ctorch.to_torch(t)

    def from_torch_only():
        ctorch.from_torch(src)

    return {"round_trip": timed(ctorch_round_trip, reps, rounds),
            "torch_round_trip": timed(torch_round_trip, reps, rounds),
            "to_torch": timed(to_torch_only, reps, rounds),
            "from_torch": timed(from_torch_only, reps, rounds)}


def main():
    quick = "--quick" in sys.argv
    torch.set_num_threads(1)
    reps, rounds = (200, 3) if quick else (20000, 7)
    small = case(1, reps, rounds)
    large = case(64 * 1024 * 1024, reps // 10, rounds)  # 256 MiB of float32
    detail = {}
    for size, r in (("small", small), ("large", large)):
        detail[f"dlpack_{size}"] = r["round_trip"]
        detail[f"torch_only_dlpack_{size}"] = r["torch_round_trip"]
        detail[f"dlpack_{size}_to_torch"] = r["to_torch"]
        detail[f"dlpack_{size}_from_torch"] = r["from_torch"]
    print(json.dumps({
        "dlpack_small_us": small["round_trip"]["median"],
        "dlpack_large_us": large["round_trip"]["median"],
        "detail": detail,
    }, indent=2))


if __name__ == "__main__":
    main()
