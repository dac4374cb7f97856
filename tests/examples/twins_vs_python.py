#!/usr/bin/env python3
"""A C example against its Python twin (examples/char_lstm.c and .py,
examples/transformer.c and .py), run with the same seed and options:

- the same initial loss to 1e-6 (ctorch_nn_new draws torch.nn's initial
  weights, so the first forward is the same computation);
- every final metric of the machine-readable last line (key=value ...; the
  *_per_s throughputs aside) within --tol of each other;
- the model learns: --learn "METRIC<BOUND" (or >) holds for the C program;
- the state dict the C program saves has the Python model's keys in its
  order, loads into it with strict=True (the twin's --load) and, evaluated
  there (--steps 0), gives the C program's --eval metric to 1e-5.

Prints each program's last line and how far apart the trained weights are
(0 when the runs are bit-identical; then the whole outputs are compared too).

With --train-images N --test-images M both programs read the first N
training and M test images of ARGS' --data folder only (a copy in a
temporary folder: tests/train/fashion_subset.py), the same comparison on
less data. The Python runs are forked from this interpreter,
which has imported torch (tests/pyfork.py).

Usage: twins_vs_python.py --c BIN --script PY --eval METRIC --learn 'METRIC<BOUND'
                          [--train-images N --test-images M] -- ARGS...
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/pyfork.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
from fashion_subset import add_options, subset_args  # noqa: E402
from pyfork import run_script  # noqa: E402


def run(cmd):
    """Runs cmd (a Python script under this interpreter in a child forked
    from this one: pyfork.py) and returns its last line's metrics, its
    output and that line; its exit 77 is this test's."""
    if cmd[0] == sys.executable:
        p = run_script(cmd[1], cmd[2:], timeout=300)
    else:
        p = subprocess.run(cmd, capture_output=True, timeout=300)
    out = p.stdout.decode("utf-8", "replace")
    if p.returncode == 77:
        print(f"{cmd[0]}: skipped: {p.stderr.decode()}")
        sys.exit(77)
    if p.returncode != 0:
        sys.exit(f"{cmd} failed ({p.returncode}):\n{out}\n{p.stderr.decode()}")
    last = out.strip().splitlines()[-1]
    metrics = dict(kv.split("=", 1) for kv in last.split())
    return {k: float(v) for k, v in metrics.items()}, out, last


def comparable(out):
    """The output without the header line (which names the language) and throughputs."""
    lines = out.strip().splitlines()[1:]
    return [re.sub(r"\S+_per_s=\S+", "", l) for l in lines if not l.startswith("saved weights")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--eval", required=True, help="the metric the twin recomputes from the C weights")
    ap.add_argument("--learn", required=True, help="METRIC<BOUND or METRIC>BOUND: what the C run must reach")
    ap.add_argument("--tol", type=float, default=2e-3)
    add_options(ap)
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        a.args = subset_args(a.args, os.path.join(d, "data"), a.train_images, a.test_images)
        c_pt, p_pt = os.path.join(d, "c.pt"), os.path.join(d, "py.pt")
        c, c_out, c_last = run([a.c, *a.args, "--save", c_pt])
        p, p_out, p_last = run([sys.executable, a.script, *a.args, "--save", p_pt])
        # The twin evaluates C's weights (--steps 0), forked (pyfork.py)
        # before this process computes with torch.
        steps = a.args.index("--steps") if "--steps" in a.args else None
        args0 = list(a.args)
        if steps is not None:
            del args0[steps:steps + 2]
        l, _, l_last = run([sys.executable, a.script, *args0, "--steps", "0", "--load", c_pt])
        print(f"C:      {c_last}\nPython: {p_last}")
        if abs(c["initial_loss"] - p["initial_loss"]) > 1e-6:
            sys.exit(f"initial losses differ: C {c['initial_loss']} Python {p['initial_loss']}")
        for k in c:
            if not k.endswith("_per_s") and abs(c[k] - p[k]) > a.tol * max(1.0, abs(p[k])):
                sys.exit(f"{k}: C {c[k]} Python {p[k]} (tolerance {a.tol})\nC:\n{c_out}\nPython:\n{p_out}")
        op = "<" if "<" in a.learn else ">"
        metric, bound = a.learn.split(op)
        if not (c[metric] < float(bound) if op == "<" else c[metric] > float(bound)):
            sys.exit(f"did not learn: {metric}={c[metric]}, bound {bound}\n{c_out}")
        c_sd, p_sd = torch.load(c_pt), torch.load(p_pt)
        if list(c_sd) != list(p_sd):
            sys.exit(f"state-dict keys differ:\nC: {list(c_sd)}\nPython: {list(p_sd)}")
        diff = max((c_sd[k].double() - p_sd[k].double()).abs().max().item() for k in c_sd)
        print(f"trained weights: {len(c_sd)} tensors, C and Python {diff:.3g} apart")
        if diff == 0:
            if comparable(c_out) != comparable(p_out):
                sys.exit(f"bit-identical weights but different outputs:\nC:\n{c_out}\nPython:\n{p_out}")
            print("bit-identical: same weights and the same output line for line")
        print(f"Python from C's weights: {l_last}")
        if abs(l[a.eval] - c[a.eval]) > 1e-5 * max(1.0, abs(c[a.eval])):
            sys.exit(f"{a.eval} of C's weights in Python: {l[a.eval]}, in C: {c[a.eval]}")
    print("ok")


if __name__ == "__main__":
    main()
