#!/usr/bin/env python3
"""examples/vae.c against the same program written with a binding's classes
(examples/node/vae.js, examples/go/vae), same seed and options:

- the output line for line (the per-image loss at steps 1, 50, 100, ..., the
  test loss, the last line's losses to 9 significant digits; the header, the
  "saved ..." lines and the throughput aside);
- bit-identical weights: the state dicts both saved (torch.save's format,
  written by the same ctorch function) are equal byte for byte;
- the PNG of samples: the same pixels (each file decoded, whatever filters
  and compression its writer chose);
- the model learns: the loss falls and the test loss is below --max-test-loss.

The binding's program runs first: its exit 77 (no node/koffi, no Go, no
data) is this test's. Usage:
  vae_twins.py --c VAE --work DIR [--max-test-loss L] [--train-images N --test-images M]
               -- TWIN_CMD... -- ARGS...
(ARGS go to both programs; --samples and --save are added here;
--train-images/--test-images: both read the first N and M images of ARGS'
--data only, a copy under --work: tests/train/fashion_subset.py)
"""
import os
import sys

from twin_common import fresh, kept, learns, options, run, same_bytes, same_lines

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from vae_vs_python import png_decode  # noqa: E402  (decodes any 8-bit PNG: every filter)
from fashion_subset import subset_args  # noqa: E402  (twins_vs_python put tests/train on the path)


def compared(out):
    """The lines both programs must print alike (no header, paths or throughput)."""
    return kept(out, (r"VAE \(", "saved ", "go build"), r" images_per_s=\S+")


def main():
    a, twin, args = options(__doc__, max_test_loss=350.0, train_images="0", test_images="0")
    args = subset_args(args, os.path.join(a.work, "data"), a.train_images, a.test_images)
    f = fresh(a.work, "twin.png", "twin.pt", "c.png", "c.pt")

    out_twin = run(twin + args + ["--samples", f["twin.png"], "--save", f["twin.pt"]], "the twin").stdout
    out_c = run([a.c] + args + ["--samples", f["c.png"], "--save", f["c.pt"], "--logdir", ""], "vae.c").stdout
    print(out_twin.rstrip())
    lc = compared(out_c)
    same_lines(compared(out_twin), lc, "the twin's output differs from vae.c's")
    print(f"output: {len(lc)} lines equal to vae.c's")

    wc = same_bytes(f["twin.pt"], f["c.pt"], "the saved weights differ from vae.c's")
    print(f"weights: the state dicts are equal byte for byte ({len(wc)} bytes)")

    with open(f["twin.png"], "rb") as f1, open(f["c.png"], "rb") as f2:
        pt, pc = png_decode(f1.read()), png_decode(f2.read())
    if pt != pc:
        sys.exit(f"FAIL: the samples differ from vae.c's (w, h, channels {pt[:3]} and {pc[:3]})")
    print(f"samples: {pc[0]}x{pc[1]} pixels equal to vae.c's")

    print(learns(out_c, "test_loss", "test loss", a.max_test_loss))


if __name__ == "__main__":
    main()
