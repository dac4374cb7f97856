#!/usr/bin/env python3
"""Why examples/generate.c takes --head-t (docs/inference-benchmarks.md, GPT-2):
the one-row products of GPT-2 decoding, through torch's BLAS (MKL in PyPI's
wheels), at 1 and 2 intra-op threads. One new token is a row times every
weight: the tied LM head [50257, 768] (154 MB) and, per layer, the Conv1D
weights [768, 2304], [768, 768], [768, 3072], [3072, 768] (340 MB for 12).

- head: linear(x, W) and mv(W, x) (W row-major: MKL's slow layout for one row),
  x @ W^T from a contiguous [768, 50257] copy (mm, matmul, mv of the transposed
  view), and that copy as 2 column blocks [2, 768, 25129] through bmm;
- layers (12 distinct sets, so they stream from memory as in decoding): addmm
  against baddbmm over 2 column blocks; bit equality of the two is printed.

MKL runs a 1-row GEMM on one thread whatever the thread count (MKL_VERBOSE
reports NThr:2, the time does not move); its batched GEMM (SGEMM_BATCH, which
bmm calls) gives each matrix its thread. ms per product (median of 20), GB/s of
weight read, max |difference| against linear / addmm.

Usage: gemv_probe.py [THREADS ...]   (default 1 2; each in its own process
with OMP_NUM_THREADS and MKL_NUM_THREADS set, before torch starts)
"""
import os
import statistics
import subprocess
import sys
import time


def bench(f, n=20):
    f()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def probe(threads):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    V, E = 50257, 768
    W = torch.randn(V, E) * 0.02
    WT = W.t().contiguous()
    H = (V + 1) // 2
    WT2 = torch.cat([WT, torch.zeros(E, 2 * H - V)], 1).view(E, 2, H).permute(1, 0, 2).contiguous()
    x = torch.randn(1, E)
    ref = F.linear(x, W)
    head = {"linear(x, W)": lambda: F.linear(x, W),
            "mv(W, x)": lambda: torch.mv(W, x[0]).view(1, V),
            "mm(x, W^T copy)": lambda: torch.mm(x, WT),
            "matmul(x [1,1,E], W^T copy)": lambda: torch.matmul(x.view(1, 1, E), WT).view(1, V),
            "mv(W^T copy .t(), x)": lambda: torch.mv(WT.t(), x[0]).view(1, V),
            "bmm(x x2, 2 column blocks)": lambda: torch.bmm(x.expand(2, 1, E), WT2).permute(1, 0, 2)
            .reshape(1, 2 * H)[:, :V]}
    for name, f in head.items():
        ms = bench(f)
        d = (f() - ref).abs().max().item()
        print(f"threads {threads} head {name:30s} {ms:6.2f} ms {W.numel() * 4 / ms / 1e6:5.1f} GB/s "
              f"max|diff| {d:.1e}", flush=True)
    del W, WT, WT2
    shapes = [(E, 3 * E), (E, E), (E, 4 * E), (4 * E, E)]
    ws = [[(torch.randn(k, n) * 0.02, torch.randn(n)) for k, n in shapes] for _ in range(12)]
    blocks = [[(w.view(w.shape[0], 2, -1).permute(1, 0, 2).contiguous(), b.view(2, 1, -1)) for w, b in layer]
              for layer in ws]
    xs = {E: torch.randn(1, E), 4 * E: torch.randn(1, 4 * E)}
    total = sum(k * n * 4 for k, n in shapes) * 12
    ms = bench(lambda: [torch.addmm(b, xs[w.shape[0]], w) for layer in ws for w, b in layer])
    ms2 = bench(lambda: [torch.baddbmm(b, xs[w.shape[1]].expand(2, 1, -1), w) for layer in blocks for w, b in layer])
    w, b = ws[0][2]
    w2, b2 = blocks[0][2]
    same = torch.equal(torch.addmm(b, xs[E], w), torch.baddbmm(b2, xs[E].expand(2, 1, E), w2).permute(1, 0, 2)
                       .reshape(1, -1))
    print(f"threads {threads} layers addmm {ms:6.2f} ms {total / ms / 1e6:5.1f} GB/s; baddbmm 2 blocks "
          f"{ms2:6.2f} ms {total / ms2 / 1e6:5.1f} GB/s; bit-identical {same}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--in-process":
        probe(int(sys.argv[2]))
    else:
        for t in sys.argv[1:] or ["1", "2"]:
            env = dict(os.environ, OMP_NUM_THREADS=t, MKL_NUM_THREADS=t)
            subprocess.run([sys.executable, os.path.abspath(__file__), "--in-process", t], env=env, check=True)
