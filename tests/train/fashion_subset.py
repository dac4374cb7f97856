#!/usr/bin/env python3
"""The first N training and M test images of Fashion-MNIST as a data folder of
their own (the four IDX files, gzip'd as the originals, so every reader that
takes the original folder takes this one): the training-equality tests
(C against Python, a binding against C) prove the same equality on a quarter
of the data in a quarter of the time (issue 52). Only the images used are
decompressed.

  fashion_subset.py SRC DST N_TRAIN N_TEST   (or subset() from Python)
"""
import gzip
import os
import struct
import sys

FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "t10k": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def _open(src, base):
    p = os.path.join(src, base)
    return gzip.open(p + ".gz", "rb") if os.path.exists(p + ".gz") else open(p, "rb")


def _head(src, base, n, dst):
    """Copies base's IDX header (its first dimension set to n) and its first n items."""
    with _open(src, base) as f:
        magic = f.read(4)
        ndim = magic[3]
        dims = list(struct.unpack(f">{ndim}I", f.read(4 * ndim)))
        if dims[0] < n:
            sys.exit(f"fashion_subset: {base} holds {dims[0]} items, {n} asked for")
        item = 1
        for d in dims[1:]:
            item *= d
        body = f.read(n * item)  # ubyte data: one byte an element
    dims[0] = n
    # compresslevel 1: the copy is written once per test and read twice
    with gzip.open(os.path.join(dst, base + ".gz"), "wb", compresslevel=1) as g:
        g.write(magic + struct.pack(f">{ndim}I", *dims) + body)


def subset(src, dst, n_train, n_test):
    """Writes the subset into dst (made if missing) and returns dst."""
    os.makedirs(dst, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        for base in FILES[prefix]:
            _head(src, base, n, dst)
    return dst


def available(src):
    """Whether src holds the data set (else the tests skip, as with the original)."""
    return all(os.path.exists(os.path.join(src, b + ".gz")) or os.path.exists(os.path.join(src, b))
               for bs in FILES.values() for b in bs)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    print(subset(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
