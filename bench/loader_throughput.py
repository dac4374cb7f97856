#!/usr/bin/env python3
"""Loader throughput: one pipeline in ctorch and in
torch.utils.data.DataLoader, both with 2 workers: Fashion-MNIST training
images, per item ToTensor + Normalize (uint8 [28, 28] -> float [1, 28, 28],
/255, -0.2860, /0.3530), shuffled batches of 64 (drop_last), the LeNet-5
input. ctorch: bench/loader_throughput (a host-defined dataset whose C
callback runs on the loader's worker threads); Python: a Dataset whose
__getitem__ runs in DataLoader's worker processes. Each rep times BATCHES
batches from the start of an epoch (worker start-up included, on both
sides); one warm-up rep each; sides interleaved. Prints one JSON object:
images/s per side (median, min, max) and ctorch/python.

    bench/loader_throughput.py --build-dir BUILD [--data DIR] [--quick]
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def read_idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        b = f.read()
    nd = b[3]
    dims = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(b, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


class Fashion(Dataset):
    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i].unsqueeze(0).float().div(255).sub(0.2860).div(0.3530), self.labels[i]


def python_rate(ds, batches, epoch):
    g = torch.Generator().manual_seed(epoch)
    dl = DataLoader(ds, batch_size=64, shuffle=True, drop_last=True, num_workers=2, generator=g)
    t0 = time.perf_counter()
    n = 0
    for b, (x, y) in enumerate(dl):
        n += x.shape[0]
        if b + 1 == batches:
            break
    rate = n / (time.perf_counter() - t0)
    del dl
    return rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    batches, reps = (5, 1) if a.quick else (600, 5)
    prog = os.path.join(a.build_dir, "bench", "loader_throughput")
    images = torch.from_numpy(read_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz")).copy())
    labels = torch.from_numpy(read_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz")).astype(np.int64))
    ds = Fashion(images, labels)
    python_rate(ds, batches, 0)  # warm-up
    c, p = [], []
    for r in range(reps):
        out = subprocess.run([prog, a.data, "2", str(batches), "1"], check=True, text=True,
                             stdout=subprocess.PIPE).stdout
        c.extend(json.loads(out)["img_s"])
        p.append(python_rate(ds, batches, r + 1))

    def mmm(xs):
        return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}
    res = {"torch_version": torch.__version__, "batches_per_rep": batches, "reps": reps, "workers": 2,
           "loader_ctorch_img_s": mmm(c), "loader_python_img_s": mmm(p),
           "ratio_loader_ctorch_over_python": statistics.median(c) / statistics.median(p)}
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    sys.exit(main())
