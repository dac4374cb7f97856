#!/usr/bin/env python3
"""examples/classify_image.c against the same program in a binding
(examples/rust/classify_image.rs, examples/go/classify_image), on
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
import os
import subprocess
import sys

from twin_common import fresh, options, run, same_bytes, same_lines

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
# Exits 77 when torchvision cannot be imported (it makes the weights and the images).
from classify_vs_python import make_image, perturb, top5  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/optional_deps.py
from optional_deps import need  # noqa: E402

torchvision = need("torchvision", "it makes the weights and the images")
tvio = need("torchvision.io")
encode_jpeg, encode_png, write_file = tvio.encode_jpeg, tvio.encode_png, tvio.write_file


def run_apart(cmd, what, expect=0):
    """run with stderr apart (the failures' messages are checked there) and a
    time limit (a hung program fails the test, not only ctest's TIMEOUT)."""
    return run(cmd, what, expect, stderr=subprocess.PIPE, timeout=900)


def main():
    a, twin = options(__doc__, parts=2)
    a.work = os.path.abspath(a.work)  # the twin's wrapper may change directory
    path = fresh(a.work, "image.png", "image.jpg", "weights.pt")
    img = make_image()
    write_file(path["image.png"], encode_png(img))
    write_file(path["image.jpg"], encode_jpeg(img, quality=90))
    torch.manual_seed(0)
    torch.save(perturb(torchvision.models.resnet18(weights=None).state_dict()), path["weights.pt"])

    for image, antialias in (("image.png", 1), ("image.png", 0), ("image.jpg", 1)):
        args = ["--image", path[image], "--weights", path["weights.pt"], "--antialias", str(antialias),
                "--threads", "1"]
        out, logits = {}, fresh(a.work, "twin.txt", "c.txt")
        for who, cmd in (("twin", twin), ("c", [a.c])):
            out[who] = run_apart(cmd + args + ["--logits", logits[f"{who}.txt"]], f"the {who} program").stdout
        name = f"{image}, antialias {antialias}"
        # Every character, blank lines and the last newline included: split("\n") loses nothing.
        same_lines(out["twin"].split("\n"), out["c"].split("\n"),
                   f"{name}: the twin's output differs from classify_image.c's")
        nc = same_bytes(logits["twin.txt"], logits["c.txt"], f"{name}: the logits files differ").count(b"\n")
        if nc != 1000:
            sys.exit(f"FAIL: {name}: the logits files have {nc} lines, not 1000")
        classes = [int(r[0]) for r in top5(out["c"])]
        if len(set(classes)) != 5:
            sys.exit(f"FAIL: {name}: top 5 {classes} repeats a class")
        print(f"{name}: top 5 {classes}, the output and the 1,000 logits equal to classify_image.c's byte for byte")

    # Failures: exit status, and what stderr names.
    missing = os.path.join(a.work, "missing.png")
    for who, cmd in (("twin", twin), ("c", [a.c])):
        p = run_apart(cmd + ["--image", missing, "--weights", path["weights.pt"]],
                      f"the {who} program, a missing image", 1)
        if missing not in p.stderr:
            sys.exit(f"FAIL: the {who} program's error for a missing image does not name it: {p.stderr!r}")
        p = run_apart(cmd + ["--image", path["image.png"]], f"the {who} program without --weights", 2)
        if "usage" not in p.stderr:
            sys.exit(f"FAIL: the {who} program without --weights prints no usage: {p.stderr!r}")
    print("failures: a missing image exits 1 naming it, no --weights exits 2 with usage, in both programs")
    print("PASS")


if __name__ == "__main__":
    main()
