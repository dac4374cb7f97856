#!/usr/bin/env python3
"""examples/classify_image.c against its twin examples/classify_image.py
(torchvision.io + torchvision.transforms + torchvision.models.resnet18):

- a synthetic RGB image made here from a seed (300x401: Resize(256) really
  resizes, CenterCrop crops both sides), written as PNG and as JPEG
  (quality 90) with torchvision.io's encoders;
- the twin makes resnet18(weights=None) from seed 0 and saves its state dict
  (torch.save); the C program loads it and must print the same lines;
- then every BatchNorm's weight, bias, running mean and variance are moved
  off their initial 1/0/0/1 (which would hide a norm loaded into the wrong
  place) and the fc bias too, saved again, and both programs run on the PNG
  and on the JPEG;
- required: the same top-5 classes, and the 1,000 logits (printed %.9g, the
  float32 exactly) within --tol (default 0: bit-identical), the max abs
  difference printed. A JPEG is held to that only where the twin's
  torchvision decodes with the same libjpeg file as libctorch (Debian's
  torchvision 0.14.1); a torchvision that bundles its own (PyPI's) gets the
  same-top-5 requirement and its difference printed.
Resize's antialias is this torchvision's default (True from 0.17, False in
0.14), passed to the C program. One intra-op thread on both sides.

Exit 77 ("skipped: why") when torchvision cannot be imported. The twin's
three runs are forked from this interpreter, which has imported torch and
torchvision (tests/pyfork.py; 3 s of CPU a run with torch 2.x); this process
keeps one intra-op thread, so no OpenMP team exists when it forks.

Usage: classify_vs_python.py --c BIN --script examples/classify_image.py [--tol T]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import torch

try:
    import torchvision
    from torchvision import transforms as T
    from torchvision.io import ImageReadMode, encode_jpeg, encode_png, read_image, write_file
except Exception as e:  # noqa: BLE001 (a torchvision built for another torch may fail in many ways)
    print(f"skipped: torchvision cannot be imported with torch {torch.__version__} ({type(e).__name__}: {e})")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/pyfork.py
from pyfork import run_script  # noqa: E402



def make_image(h=300, w=401):
    """Smooth colour waves plus seeded noise: uint8 [3, h, w]."""
    g = torch.Generator().manual_seed(38)
    y = torch.arange(h, dtype=torch.float64)[:, None]
    x = torch.arange(w, dtype=torch.float64)[None, :]
    img = torch.stack([torch.sin(x / 17 + y / 29), torch.cos(x / 23 - y / 11), torch.sin((x + y) / 31)]) * 90 + 128
    img = img + torch.randint(-25, 26, (3, h, w), generator=g)
    return img.round().clamp(0, 255).to(torch.uint8)


def perturb(state):
    """The state dict with BatchNorm's affine and running statistics and fc's bias off their defaults."""
    g = torch.Generator().manual_seed(7)
    out = {}
    for k, v in state.items():
        v = v.clone()
        if k.endswith("running_var"):
            v = torch.rand(v.shape, generator=g) * 1.5 + 0.5
        elif k.endswith(("running_mean", "bias")):
            v = torch.randn(v.shape, generator=g) * 0.1
        elif k.endswith("weight") and v.dim() == 1:  # BatchNorm's gamma
            v = torch.rand(v.shape, generator=g) + 0.5
        out[k] = v
    return out


def run(cmd):
    if cmd[0] == sys.executable:
        p = run_script(cmd[1], cmd[2:], text=True, timeout=120)
    else:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p.stdout


def top5(out):
    """[(class, prob text, logit text)] from the rank= lines."""
    rows = re.findall(r"^rank=\d+ class=(\d+) prob=(\S+) logit=(\S+)$", out, re.M)
    if len(rows) != 5:
        sys.exit(f"expected 5 rank= lines, got:\n{out}")
    return rows


def libjpeg_files():
    """The libjpeg files mapped into this process (after torchvision decoded a JPEG)."""
    with open("/proc/self/maps") as f:
        return {os.path.realpath(line.split()[-1]) for line in f if "libjpeg" in line}


def libctorch_jpeg(binary):
    """The libjpeg file the C program loads (ldd), or None."""
    p = subprocess.run(["ldd", binary], capture_output=True, text=True)
    m = re.search(r"libjpeg\S* => (\S+)", p.stdout)
    return os.path.realpath(m.group(1)) if m else None


def compare(name, c_out, p_out, c_logits, p_logits):
    """Prints the comparison; returns (same top 5, max abs logit difference, bit-identical)."""
    c_top, p_top = top5(c_out), top5(p_out)
    with open(c_logits) as f:
        c_text = f.read().split()
    with open(p_logits) as f:
        p_text = f.read().split()
    if len(c_text) != 1000 or len(p_text) != 1000:
        sys.exit(f"{name}: expected 1000 logits, C wrote {len(c_text)}, Python {len(p_text)}")
    diff = max(abs(float(a) - float(b)) for a, b in zip(c_text, p_text))
    exact = c_text == p_text and c_top == p_top
    same_top = [r[0] for r in c_top] == [r[0] for r in p_top]
    print(f"{name}: top-5 C {[int(r[0]) for r in c_top]} Python {[int(r[0]) for r in p_top]}; "
          f"logits max abs difference {diff:.3g}{' (bit-identical, probabilities too)' if exact else ''}")
    return same_top, diff, exact


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--tol", type=float, default=0.0)
    a = ap.parse_args()
    torch.set_num_threads(1)  # before any computation: the twin's runs are forked from here
    antialias = int(T.Resize(8).antialias is True)  # None (0.14), "warn" (0.15-0.16) or True (0.17+)
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, Resize antialias {antialias}")
    failures = []

    with tempfile.TemporaryDirectory() as d:
        path = {k: os.path.join(d, k) for k in ("image.png", "image.jpg", "seed.pt", "moved.pt", "c.txt", "py.txt")}
        img = make_image()
        write_file(path["image.png"], encode_png(img))
        write_file(path["image.jpg"], encode_jpeg(img, quality=90))
        read_image(path["image.jpg"], ImageReadMode.RGB)
        same_jpeg = libctorch_jpeg(a.c) in libjpeg_files()
        print(f"libjpeg: torchvision {sorted(libjpeg_files())}, libctorch {libctorch_jpeg(a.c)}")

        def both(name, image, weights, py_args):
            # Python first: in the first case it writes the weights the C program reads.
            p_out = run([sys.executable, a.script, "--image", image, *py_args, "--threads", "1",
                         "--logits", path["py.txt"]])
            c_out = run([a.c, "--image", image, "--weights", weights, "--antialias", str(antialias),
                         "--threads", "1", "--logits", path["c.txt"]])
            return compare(name, c_out, p_out, path["c.txt"], path["py.txt"])

        # The twin's own seeded weights, then the moved ones on both images.
        cases = [("png, seeded weights", path["image.png"], path["seed.pt"], ["--seed", "0", "--save", path["seed.pt"]],
                  True)]
        for ext, strict in (("png", True), ("jpg", same_jpeg)):
            cases.append((f"{ext}, moved weights", path["image." + ext], path["moved.pt"],
                          ["--weights", path["moved.pt"]], strict))
        for name, image, weights, py_args, strict in cases:
            if weights == path["moved.pt"] and not os.path.exists(weights):
                torch.save(perturb(torch.load(path["seed.pt"])), weights)
            same_top, diff, exact = both(name, image, weights, py_args)
            if not same_top:
                failures.append(f"{name}: the top-5 classes differ")
            if strict and not diff <= a.tol:
                failures.append(f"{name}: logits {diff:.3g} apart, tolerance {a.tol}")
            elif strict and a.tol == 0 and not exact:
                failures.append(f"{name}: equal logits but different rank= lines")
            if not strict:
                print(f"  ({name}: torchvision decodes JPEG with another libjpeg: the top 5 required, the logits "
                      f"reported)")
        # Failures: a missing image is named, a missing --weights gets usage (2).
        missing = os.path.join(d, "missing.png")
        p = subprocess.run([a.c, "--image", missing, "--weights", path["moved.pt"]], capture_output=True, text=True)
        if p.returncode != 1 or missing not in p.stderr:
            failures.append(f"a missing image: exit {p.returncode}, stderr {p.stderr!r}")
        p = subprocess.run([a.c, "--image", path["image.png"]], capture_output=True, text=True)
        if p.returncode != 2 or "usage" not in p.stderr:
            failures.append(f"no --weights: exit {p.returncode}, stderr {p.stderr!r}")
    for f in failures:
        print("FAIL", f)
    if failures:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
