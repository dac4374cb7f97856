#!/usr/bin/env python3
"""examples/lenet5.c against examples/go/lenet5 (the same program in Go),
same seed, one epoch on Fashion-MNIST:

- the output line for line (header, the epoch's loss and accuracies, the
  last line), throughput and time aside, and the C program's progress lines
  (throughput-bearing; the Go program prints none);
- bit-identical weights: the state dicts both saved are equal byte for
  byte; the Go program's last line is computed from its saved weights
  loaded into a fresh model, so the reload is checked by the comparison;
- the model learns: test accuracy at least --min-accuracy;
- with --train-images N --test-images M both programs read the first N
  training and M test images only (a folder the script writes under --work,
  tests/train/fashion_subset.py, in place of ARGS' --data): the same
  equality on a quarter of the data;
- with --readme README --program MAIN_GO: the README's Go block that opens
  with MAIN_GO's first line is MAIN_GO, verbatim (the Go README shows the
  tested program; a .rs program: the README's Rust block, as the ctorch crate's).

The Go program runs first: its exit 77 (no Go, no data) is this test's.
Usage: go_lenet5_twin.py --c LENET5 --work DIR [--min-accuracy A] [--readme R --program P]
                         [--train-images N --test-images M] -- TWIN_CMD... -- ARGS...
"""
import os
import re
import sys

from twin_common import fresh, kept, options, run, same_bytes, same_lines

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
from fashion_subset import subset_args  # noqa: E402


def compared(out):
    """The lines both programs must print alike (no paths, throughput, time,
    build noise or C's progress lines)."""
    return kept(out, ("saved ", "go build", r"epoch \d+/\d+ batch "), r" (images_per_s|time)=\S+")


def main():
    a, twin, args = options(__doc__, min_accuracy=0.70, readme=None, program=None, train_images="0",
                            test_images="0")
    args = subset_args(args, os.path.join(a.work, "data"), a.train_images, a.test_images)
    if a.readme:
        prog = open(a.program, encoding="utf-8").read()
        fence = {".rs": "rust", ".js": "js"}.get(os.path.splitext(a.program)[1], "go")  # the program's language
        blocks = re.findall(rf"^```{fence}\n(.*?)^```$", open(a.readme, encoding="utf-8").read(), re.M | re.S)
        shown = [b for b in blocks if b.split("\n", 1)[0] == prog.split("\n", 1)[0]]
        if shown != [prog]:
            sys.exit(f"FAIL: {a.readme} does not show {a.program} verbatim ({len(shown)} block(s) open like it)")
        print(f"{a.readme} shows {a.program} verbatim")
    pt = fresh(a.work, "twin.pt", "c.pt")
    out_twin = run(twin + args + ["--save", pt["twin.pt"]], "the Go program").stdout
    out_c = run([a.c] + args + ["--save", pt["c.pt"], "--logdir", ""], "lenet5.c").stdout
    print(out_twin.rstrip())
    lc = compared(out_c)
    same_lines(compared(out_twin), lc, "the Go program's output differs from lenet5.c's", "Go", min_lines=3)
    print(f"output: {len(lc)} lines equal to lenet5.c's")
    wc = same_bytes(pt["twin.pt"], pt["c.pt"], "the saved weights differ from lenet5.c's")
    print(f"weights: {len(wc)} bytes, equal to lenet5.c's")
    acc = float(re.search(r"^test_accuracy=(\S+)", out_c, re.M).group(1))
    if acc < a.min_accuracy:
        sys.exit(f"FAIL: test accuracy {acc} < {a.min_accuracy}")
    print(f"PASS: test accuracy {acc} (the reloaded weights' in Go)")


if __name__ == "__main__":
    main()
