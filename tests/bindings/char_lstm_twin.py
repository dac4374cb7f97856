#!/usr/bin/env python3
"""examples/char_lstm.c against the same program in another language
(examples/rust/char_lstm.rs, examples/go/char_lstm; issue 43), same seed
and options:

- the output line for line: the header, the loss at each reported step, the
  held-out loss, the sampled characters (byte for byte) and the last line,
  the throughput (chars_per_s) and the "saved ..." line (paths) aside;
- bit-identical weights: the state dicts both saved are equal byte for byte;
- the model learns: the final loss is below the first and the held-out loss
  below --max-val-loss.

The twin runs first: its exit 77 (no cargo or Go, crates.io unreachable, no
text) is this test's. Usage:
  char_lstm_twin.py --c CHAR_LSTM --work DIR [--max-val-loss L] -- TWIN_CMD... -- ARGS...
(ARGS go to both programs; --save is added here)
"""
import argparse
import itertools
import os
import re
import sys

from go_lenet5_twin import run  # runs a command; exit 77 passed on, a failure ends the test


def compared(out):
    """The lines both programs must print alike (no paths, no throughput, no build noise)."""
    return [re.sub(r" chars_per_s=\S+", "", ln) for ln in out.splitlines()
            if ln.strip() and not ln.startswith(("saved ", "go build"))]


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
    ap.add_argument("--max-val-loss", type=float, default=3.25)
    a = ap.parse_args(argv[:i])
    twin, args = argv[i + 1:j], argv[j + 1:]
    os.makedirs(a.work, exist_ok=True)
    pt = {k: os.path.join(a.work, f"{k}.pt") for k in ("twin", "c")}
    for p in pt.values():
        if os.path.exists(p):
            os.remove(p)
    out_twin = run(twin + args + ["--save", pt["twin"]], "the twin")
    out_c = run([a.c] + args + ["--save", pt["c"]], "char_lstm.c")
    print(out_twin.rstrip())
    lt, lc = compared(out_twin), compared(out_c)
    if lt != lc or len(lc) < 5:
        for x, y in itertools.zip_longest(lt, lc, fillvalue=""):
            print(f"{'  ' if x == y else '!='} twin: {x:<60} C: {y}")
        sys.exit("FAIL: the twin's output differs from char_lstm.c's")
    print(f"output: {len(lc)} lines equal to char_lstm.c's (the sample included)")
    with open(pt["twin"], "rb") as f1, open(pt["c"], "rb") as f2:
        wt, wc = f1.read(), f2.read()
    if wt != wc:
        sys.exit(f"FAIL: the saved weights differ from char_lstm.c's ({len(wt)} and {len(wc)} bytes)")
    print(f"weights: the state dicts are equal byte for byte ({len(wc)} bytes)")
    m = dict(re.findall(r"(\w+)=(\S+)", out_c.strip().splitlines()[-1]))
    first, last, val = float(m["initial_loss"]), float(m["final_loss"]), float(m["val_loss"])
    if not (last < first and val < a.max_val_loss):
        sys.exit(f"FAIL: did not learn: loss {first} -> {last}, held-out loss {val} (bound {a.max_val_loss})")
    print(f"PASS: learns: loss {first} -> {last}, held-out loss {val} < {a.max_val_loss}")


if __name__ == "__main__":
    main()
