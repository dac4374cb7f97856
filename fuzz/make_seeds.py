#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz harnesses (run once; the output is kept
in the repository under fuzz/corpus/, then grown and minimised by scripts/fuzz).
Needs a Python with torch (the build's CTORCH_TORCH_PYTHON)."""
import collections
import io
import os
import random
import struct
import sys
import zipfile

import torch

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
rng = random.Random(7)


def write(harness, name, data):
    d = os.path.join(out, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def saved(obj):
    b = io.BytesIO()
    torch.save(obj, b)
    return b.getvalue()


def records(zbytes):
    z = zipfile.ZipFile(io.BytesIO(zbytes))
    return {n.split("/", 1)[1]: z.read(n) for n in z.namelist()}


# --- checkpoint: raw files (first byte even) and pickle + storage (odd) ---
lin = torch.nn.Linear(3, 2)
objs = {
    "tensor_f32": torch.arange(6, dtype=torch.float32).reshape(2, 3),
    "tensor_t": torch.arange(6, dtype=torch.float64).reshape(2, 3).t(),
    "state_dict": lin.state_dict(),
    "dict_mixed": {"a": torch.tensor([1, 2, 3]), "b": torch.tensor([True, False]), "c": torch.tensor(2.5, dtype=torch.float16)},
    "param": torch.nn.Parameter(torch.ones(2, 2)),
    "empty": torch.zeros(0, 3),
}
for name, obj in objs.items():
    z = saved(obj)
    write("checkpoint", "raw_" + name, b"\x00" + z)
    r = records(z)
    pkl = r["data.pkl"]
    storage = r.get("data/0", b"")
    write("checkpoint", "pkl_" + name, b"\x01" + struct.pack("<H", len(pkl)) + pkl + storage)

# --- torchscript: raw archive (first byte even), or code/data/constants parts (odd) ---


class M(torch.nn.Module):
    # No submodules: all its code sits in code/__torch__.py, the one code
    # record the "parts" mode of the harness writes.
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2, 2))
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        return torch.relu(x @ self.w) * self.scale


for name, mod in {"scripted": torch.jit.script(M()), "traced": torch.jit.trace(M(), torch.ones(1, 2))}.items():
    b = io.BytesIO()
    torch.jit.save(mod, b)
    z = b.getvalue()
    write("torchscript", "raw_" + name, b"\x00" + z)
    r = records(z)
    code = r.get("code/__torch__.py", b"")
    parts = [code, r.get("data.pkl", b""), r.get("constants.pkl", b"")]
    write("torchscript", "parts_" + name, b"\x01" + b"".join(struct.pack("<H", len(p)) + p for p in parts) + r.get("data/0", b""))

# --- interpreter and DLPack: random programs / descriptions ---
for i in range(24):
    write("interp", "rand_%02d" % i, bytes(rng.randrange(256) for _ in range(rng.choice([32, 96, 200]))))
for i in range(12):
    write("dlpack", "rand_%02d" % i, bytes(rng.randrange(256) for _ in range(48)))
print("seeds written under", out)
