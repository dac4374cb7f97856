#!/usr/bin/env python3
"""ctorch's data pipeline against the installed torch (1.13.1 or 2.x):

- ctorch_data_distributed_indices against torch.utils.data.DistributedSampler
  (set_epoch) over a grid of lengths, world sizes, ranks, seeds, epochs,
  shuffle and drop_last: the same index lists;
- a ctorch loader over a host-defined dataset (item i = i), with 0 and 2
  workers, against torch.utils.data.DataLoader over the same items, with
  DistributedSampler or (not distributed) the randperm order of
  ctorch_data_epoch_seed: the same batches;
- ctorch_data_cifar_read against the format as numpy reads it, on files
  numpy writes (CIFAR-10, CIFAR-100 fine and coarse), and on truncated and
  lying files (CTORCH_VALUE naming the file and the record).

    loader_vs_torch.py LOADER_DUMP
"""
import os
import subprocess
import sys
import tempfile

import torch
from torch.utils.data import DataLoader, DistributedSampler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/optional_deps.py
from optional_deps import need  # noqa: E402

np = need("numpy")

DUMP = sys.argv[1]
failures = 0


def fail(msg):
    global failures
    failures += 1
    if failures <= 20:
        print("FAIL", msg)


def run(mode, lines):
    out = subprocess.run([DUMP, mode], input="".join(l + "\n" for l in lines), text=True, check=True,
                         stdout=subprocess.PIPE).stdout
    res = out.split("\n")[: len(lines)]
    assert len(res) == len(lines), (mode, len(res), len(lines))
    return res


def epoch_seed(seed, epoch):
    return (seed * 1000003 + epoch) % 2 ** 64


# ---- DistributedSampler -------------------------------------------------
queries, want = [], []
for n in (0, 1, 2, 5, 10, 17, 64):
    for world in (1, 2, 3, 4, 7):
        for rank in range(world):
            for shuffle in (0, 1):
                for seed in (0, 7, 2 ** 40):
                    for epoch in (0, 3):
                        for drop in (0, 1):
                            s = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=bool(shuffle),
                                                   seed=seed, drop_last=bool(drop))
                            s.set_epoch(epoch)
                            queries.append(f"{n} {rank} {world} {shuffle} {seed} {epoch} {drop}")
                            want.append(" ".join(str(i) for i in s))
got = run("dist", queries)
for q, g, w in zip(queries, got, want):
    if g != w:
        fail(f"dist {q}: ctorch [{g}] torch [{w}]")
print(f"DistributedSampler: {len(queries)} cases compared")


# ---- loader batches -----------------------------------------------------
def torch_batches(n, batch, shuffle, seed, epoch, drop_last, rank, world, dist_drop):
    if world > 0:
        sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=bool(shuffle), seed=seed,
                                     drop_last=bool(dist_drop))
        sampler.set_epoch(epoch)
    elif shuffle:
        g = torch.Generator().manual_seed(epoch_seed(seed, epoch))
        sampler = torch.randperm(n, generator=g).tolist()
    else:
        sampler = list(range(n))
    dl = DataLoader(list(range(n)), batch_size=batch, sampler=sampler, drop_last=bool(drop_last), num_workers=0)
    return " | ".join(" ".join(str(int(i)) for i in b) for b in dl)


queries, want = [], []
for n in (1, 7, 20, 33):
    for batch in (1, 4, 8):
        for shuffle in (0, 1):
            for seed, epoch in ((0, 0), (5, 2), (2 ** 40, 1)):
                for drop_last in (0, 1):
                    for workers in (0, 2):
                        for rank, world, dd in ((0, 0, 0), (0, 1, 0), (1, 3, 0), (2, 3, 1)):
                            queries.append(f"{n} {batch} {shuffle} {seed} {epoch} {drop_last} {workers} {rank} "
                                           f"{world} {dd}")
                            want.append(torch_batches(n, batch, shuffle, seed, epoch, drop_last, rank, world, dd))
got = run("loader", queries)
for q, g, w in zip(queries, got, want):
    if g.strip() != w:
        fail(f"loader {q}: ctorch [{g}] torch [{w}]")
print(f"DataLoader batches: {len(queries)} cases compared")

# ---- CIFAR files --------------------------------------------------------
rng = np.random.default_rng(22)
with tempfile.TemporaryDirectory() as d:
    def cifar(name, records, kind):
        path = os.path.join(d, name)
        records.tofile(path)
        out = subprocess.run([DUMP, "cifar", path, str(kind), os.path.join(d, "out")], text=True, check=True,
                             stdout=subprocess.PIPE).stdout.strip()
        return path, out

    for kind, nlab, limits in ((0, 1, (10,)), (1, 2, (20, 100)), (2, 2, (20, 100))):
        n = 37
        rec = np.zeros((n, nlab + 3072), dtype=np.uint8)
        for j, lim in enumerate(limits):
            rec[:, j] = rng.integers(0, lim, n)
        rec[:, nlab:] = rng.integers(0, 256, (n, 3072))
        path, out = cifar(f"k{kind}.bin", rec, kind)
        if out != f"OK {n}":
            fail(f"cifar kind {kind}: {out}")
            continue
        images = np.fromfile(os.path.join(d, "out.img"), dtype=np.uint8).reshape(n, 3, 32, 32)
        labels = np.fromfile(os.path.join(d, "out.lbl"), dtype=np.int64)
        want_images = rec[:, nlab:].reshape(n, 3, 32, 32)  # torchvision: .reshape(-1, 3, 32, 32)
        want_labels = rec[:, 1 if kind == 1 else 0].astype(np.int64)
        if not np.array_equal(images, want_images):
            fail(f"cifar kind {kind}: images differ")
        if not np.array_equal(labels, want_labels):
            fail(f"cifar kind {kind}: labels differ")
        # as a tensor the way torchvision's CIFAR10 holds it, HWC after transpose
        t = torch.from_numpy(images.copy())
        if not torch.equal(t.permute(0, 2, 3, 1), torch.from_numpy(want_images.transpose(0, 2, 3, 1).copy())):
            fail(f"cifar kind {kind}: HWC view differs")
        # truncated: the last record cut short
        path, out = cifar(f"t{kind}.bin", rec.reshape(-1)[:-5], kind)
        if not (out.startswith("ERR CTORCH_VALUE") and path in out and f"record {n - 1} is truncated" in out):
            fail(f"truncated cifar kind {kind}: {out}")
        # lying: a label out of range in record 11
        bad = rec.copy()
        bad[11, 0] = limits[0]
        path, out = cifar(f"l{kind}.bin", bad, kind)
        if not (out.startswith("ERR CTORCH_VALUE") and path in out and "record 11 has" in out):
            fail(f"lying cifar kind {kind}: {out}")
    out = subprocess.run([DUMP, "cifar", os.path.join(d, "nope.bin"), "0", os.path.join(d, "out")], text=True,
                         check=True, stdout=subprocess.PIPE).stdout
    if not out.startswith("ERR CTORCH_IO"):
        fail(f"missing cifar file: {out}")
print("CIFAR files: compared")

print(f"torch {torch.__version__}: {failures} failures")
sys.exit(1 if failures else 0)
