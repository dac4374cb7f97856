#!/usr/bin/env python3
"""examples/classify_image.c against the same program in a binding
(examples/rust/classify_image.rs, examples/go/classify_image; issue 43), on
the same inputs, bit for bit:

- classify_vs_python.py's synthetic 300x401 image as PNG and as JPEG (quality
  90), and torchvision's resnet18(weights=None) from seed 0 with every
  BatchNorm statistic and affine and the fc bias moved off their defaults
  (perturb), saved with torch.save;
- both programs with --threads 1 on the PNG with --antialias 1 and 0 and on
  the JPEG: the printed lines (header and top 5) and the 1,000 logits file
  must be equal byte for byte (%.9g: the float32s exactly);
- the top 5 must not be one class repeated (a check that the ranking is real);
- the twin's failures as the C program's: a missing image exits 1 naming the
  path on stderr, a missing --weights exits 2 with a usage line.

The twin runs first: its exit 77 (no cargo/crates.io, no Go) is this test's,
and so is torchvision missing (classify_vs_python's own skip).
Usage: classify_image_twin.py --c CLASSIFY_IMAGE --work DIR -- TWIN_CMD...
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
# Exits 77 when torchvision cannot be imported (it makes the weights and the images).
from classify_vs_python import make_image, perturb, top5  # noqa: E402

import torch  # noqa: E402
import torchvision  # noqa: E402
from torchvision.io import encode_jpeg, encode_png, write_file  # noqa: E402


def run(cmd, what, expect=0):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)
    if p.returncode == 77 and expect == 0:
        lines = (p.stdout + p.stderr).strip().splitlines()
        print(lines[-1] if lines else f"skipped: {what}")
        sys.exit(77)
    if p.returncode != expect:
        print(p.stdout, p.stderr)
        sys.exit(f"FAIL: {what} exited with {p.returncode}, expected {expect}")
    return p


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit(__doc__)
    i = argv.index("--")
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args(argv[:i])
    twin = argv[i + 1:]
    a.work = os.path.abspath(a.work)  # the twin's wrapper may change directory
    os.makedirs(a.work, exist_ok=True)
    path = {k: os.path.join(a.work, k) for k in ("image.png", "image.jpg", "weights.pt", "twin.txt", "c.txt")}
    img = make_image()
    write_file(path["image.png"], encode_png(img))
    write_file(path["image.jpg"], encode_jpeg(img, quality=90))
    torch.manual_seed(0)
    torch.save(perturb(torchvision.models.resnet18(weights=None).state_dict()), path["weights.pt"])

    for image, antialias in (("image.png", 1), ("image.png", 0), ("image.jpg", 1)):
        args = ["--image", path[image], "--weights", path["weights.pt"], "--antialias", str(antialias),
                "--threads", "1"]
        out = {}
        for who, cmd in (("twin", twin), ("c", [a.c])):
            if os.path.exists(path[f"{who}.txt"]):
                os.remove(path[f"{who}.txt"])
            out[who] = run(cmd + args + ["--logits", path[f"{who}.txt"]], f"the {who} program").stdout
        name = f"{image}, antialias {antialias}"
        if out["twin"] != out["c"]:
            print(f"twin:\n{out['twin']}\nC:\n{out['c']}")
            sys.exit(f"FAIL: {name}: the twin's output differs from classify_image.c's")
        with open(path["twin.txt"], "rb") as f1, open(path["c.txt"], "rb") as f2:
            lt, lc = f1.read(), f2.read()
        nt, nc = lt.count(b"\n"), lc.count(b"\n")
        if lt != lc or nc != 1000:
            sys.exit(f"FAIL: {name}: the logits files differ or are short ({nt} and {nc} lines)")
        classes = [int(r[0]) for r in top5(out["c"])]
        if len(set(classes)) != 5:
            sys.exit(f"FAIL: {name}: top 5 {classes} repeats a class")
        print(f"{name}: top 5 {classes}, the output and the 1,000 logits equal to classify_image.c's byte for byte")

    # Failures: exit status, and what stderr names.
    missing = os.path.join(a.work, "missing.png")
    for who, cmd in (("twin", twin), ("c", [a.c])):
        p = run(cmd + ["--image", missing, "--weights", path["weights.pt"]], f"the {who} program, a missing image", 1)
        if missing not in p.stderr:
            sys.exit(f"FAIL: the {who} program's error for a missing image does not name it: {p.stderr!r}")
        p = run(cmd + ["--image", path["image.png"]], f"the {who} program without --weights", 2)
        if "usage" not in p.stderr:
            sys.exit(f"FAIL: the {who} program without --weights prints no usage: {p.stderr!r}")
    print("failures: a missing image exits 1 naming it, no --weights exits 2 with usage, in both programs")
    print("PASS")


if __name__ == "__main__":
    main()
