#!/usr/bin/env python3
"""Where does int8-dynamic's second engine pay (shim/infer/precision.cpp,
kInt8LargeRows)? quantized::linear_dynamic, the op ctorch's int8-dynamic
Linear calls, at BERT-base's three shapes (768 -> 768, 768 -> 3072,
3072 -> 768) and a range of row counts, with the weight prepacked on each
quantized engine this torch has (x86 = fbgemm's kernels in 2.x, onednn).
Activations in the full u8 range (reduce_range off, as ctorch on a CPU with
VNNI). Each engine's time per call is the median of interleaved rounds (one
call of each engine after the other, so load hits both alike); the ratio is
onednn's time over the first engine's.

Usage: int8_engines.py [--threads 1,2] [--rows 16,32,...] [--rounds 41]
Each thread count runs in its own process with OMP_NUM_THREADS set before
torch starts. Prints one line per point and, with --json FILE, writes them.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SHAPES = [(768, 768), (768, 3072), (3072, 768)]


def point(threads, rows, rounds):
    import torch
    torch.manual_seed(0)
    engines = [e for e in ("x86", "fbgemm", "onednn") if e in torch.backends.quantized.supported_engines]
    first = engines[0]
    engines = [first] + (["onednn"] if "onednn" in engines and first != "onednn" else [])
    out = []
    for k, n in SHAPES:
        w = torch.randn(n, k) * 0.05
        b = torch.randn(n) * 0.05
        qw = torch.quantize_per_tensor(w, w.abs().max().item() / 127, 0, torch.qint8)
        packed = {}
        for e in engines:
            torch.backends.quantized.engine = e
            packed[e] = torch.ops.quantized.linear_prepack(qw, b)
        for m in rows:
            x = torch.randn(m, k)
            ts = {e: [] for e in engines}
            for e in engines:  # warm-up: oneDNN makes its primitive at the first call
                torch.backends.quantized.engine = e
                torch.ops.quantized.linear_dynamic(x, packed[e], False)
            for _ in range(rounds):
                for e in engines:
                    torch.backends.quantized.engine = e
                    t = time.perf_counter()
                    torch.ops.quantized.linear_dynamic(x, packed[e], False)
                    ts[e].append(time.perf_counter() - t)
            med = {e: statistics.median(v) * 1e3 for e, v in ts.items()}
            row = dict(threads=threads, k=k, n=n, rows=m, **{f"{e}_ms": round(v, 4) for e, v in med.items()})
            if "onednn" in med and first != "onednn":
                row["onednn_over_first"] = round(med["onednn"] / med[first], 3)
            out.append(row)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rows", default="16,32,64,128,256,512,1024")
    ap.add_argument("--rounds", type=int, default=41)
    ap.add_argument("--json")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    rows = [int(r) for r in a.rows.split(",")]
    if a.child:
        import torch
        torch.set_num_threads(a.child)
        print(json.dumps(point(a.child, rows, a.rounds)))
        return
    allrows = []
    for t in [int(x) for x in a.threads.split(",")]:
        env = dict(os.environ, OMP_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t))
        res = subprocess.run([sys.executable, __file__, "--child", str(t), "--rows", a.rows, "--rounds",
                              str(a.rounds)], env=env, check=True, capture_output=True, text=True)
        got = json.loads(res.stdout.strip().splitlines()[-1])
        for r in got:
            print(" ".join(f"{k}={v}" for k, v in r.items()), flush=True)
        allrows += got
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(allrows, f, indent=1)


if __name__ == "__main__":
    main()
