#!/usr/bin/env python3
"""The first N training and M test images of Fashion-MNIST as a data folder of
their own (the four IDX files, gzip'd as the originals, so every reader that
takes the original folder takes this one): the training-equality tests
(C against Python, a binding against C) prove the same equality on a quarter
of the data in a quarter of the time. Only the images used are
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


def subset_args(args, dst, n_train, n_test):
    """args (a program's arguments) with --data DIR's folder replaced by the
    first n_train training and n_test test images of it, written to dst
    (0 or None: all of that split); args unchanged when both are 0 or DIR
    lacks the data (the program's own skip then names it)."""
    args, n_train, n_test = list(args), int(n_train or 0), int(n_test or 0)  # "0" from twin_common.options
    if (n_train or n_test) and "--data" in args[:-1]:
        i = args.index("--data") + 1
        if available(args[i]):
            args[i] = subset(args[i], dst, n_train or 60000, n_test or 10000)
    return args


def add_options(ap):
    """--train-images N --test-images M on an argparse parser (0: all)."""
    ap.add_argument("--train-images", type=int, default=0, help="read the first N training images only")
    ap.add_argument("--test-images", type=int, default=0, help="read the first M test images only")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    print(subset(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
