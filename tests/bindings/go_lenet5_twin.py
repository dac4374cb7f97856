#!/usr/bin/env python3
"""examples/lenet5.c against examples/go/lenet5 (the same program in Go,
issue 43), same seed, one epoch on Fashion-MNIST:

- the output line for line (header, the epoch's loss and accuracies, the
  last line), throughput and time aside, and the C program's progress lines
  (throughput-bearing; the Go program prints none);
- bit-identical weights: the state dicts both saved are equal byte for
  byte; the Go program's last line is computed from its saved weights
  loaded into a fresh model, so the reload is checked by the comparison;
- the model learns: test accuracy at least --min-accuracy;
- with --readme README --program MAIN_GO: the README's Go block that opens
  with MAIN_GO's first line is MAIN_GO, verbatim (the Go README shows the
  tested program; a .rs program: the README's Rust block, as the ctorch crate's).

The Go program runs first: its exit 77 (no Go, no data) is this test's.
Usage: go_lenet5_twin.py --c LENET5 --work DIR [--min-accuracy A] [--readme R --program P]
                         -- TWIN_CMD... -- ARGS...
"""
import argparse
import os
import re
import subprocess
import sys


def run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode == 77:
        print(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else f"skipped: {what}")
        sys.exit(77)
    if p.returncode != 0:
        print(p.stdout)
        sys.exit(f"FAIL: {what} exited with {p.returncode}")
    return p.stdout


def compared(out):
    keep = []
    for ln in out.splitlines():
        if not ln.strip() or ln.startswith(("saved ", "go build")) or re.match(r"epoch \d+/\d+ batch ", ln):
            continue
        keep.append(re.sub(r" (images_per_s|time)=\S+", "", ln))
    return keep


def main():
    argv = sys.argv[1:]
    try:
        i = argv.index("--")
        j = argv.index("--", i + 1)
    except ValueError:
        sys.exit(__doc__)
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--min-accuracy", type=float, default=0.70)
    ap.add_argument("--readme")
    ap.add_argument("--program")
    a = ap.parse_args(argv[:i])
    if a.readme:
        prog = open(a.program, encoding="utf-8").read()
        fence = {".rs": "rust", ".js": "js"}.get(os.path.splitext(a.program)[1], "go")  # the program's language
        blocks = re.findall(rf"^```{fence}\n(.*?)^```$", open(a.readme, encoding="utf-8").read(), re.M | re.S)
        shown = [b for b in blocks if b.split("\n", 1)[0] == prog.split("\n", 1)[0]]
        if shown != [prog]:
            sys.exit(f"FAIL: {a.readme} does not show {a.program} verbatim ({len(shown)} block(s) open like it)")
        print(f"{a.readme} shows {a.program} verbatim")
    twin, args = argv[i + 1:j], argv[j + 1:]
    os.makedirs(a.work, exist_ok=True)
    pt = {k: os.path.join(a.work, f"{k}.pt") for k in ("twin", "c")}
    for p in pt.values():
        if os.path.exists(p):
            os.remove(p)
    out_twin = run(twin + args + ["--save", pt["twin"]], "the Go program")
    out_c = run([a.c] + args + ["--save", pt["c"], "--logdir", ""], "lenet5.c")
    print(out_twin.rstrip())
    lt, lc = compared(out_twin), compared(out_c)
    if lt != lc or len(lc) < 3:
        for x, y in zip(lt + [""] * len(lc), lc + [""] * len(lt)):
            print(f"{'  ' if x == y else '!='} Go: {x:<60} C: {y}")
        sys.exit("FAIL: the Go program's output differs from lenet5.c's")
    print(f"output: {len(lc)} lines equal to lenet5.c's")
    with open(pt["twin"], "rb") as f1, open(pt["c"], "rb") as f2:
        wt, wc = f1.read(), f2.read()
    if wt != wc:
        sys.exit(f"FAIL: the saved weights differ from lenet5.c's ({len(wt)} and {len(wc)} bytes)")
    print(f"weights: {len(wc)} bytes, equal to lenet5.c's")
    acc = float(re.search(r"^test_accuracy=(\S+)", out_c, re.M).group(1))
    if acc < a.min_accuracy:
        sys.exit(f"FAIL: test accuracy {acc} < {a.min_accuracy}")
    print(f"PASS: test accuracy {acc} (the reloaded weights' in Go)")


if __name__ == "__main__":
    main()
