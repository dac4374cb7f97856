#!/usr/bin/env python3
"""examples/dqn.c against the same program written with a binding's classes
(examples/node/dqn.js), same seed and options:

- the output line for line: every episode's return, mean, step count and
  loss (6 decimals), and the last line (the timings aside);
- bit-identical Q-networks: the state dicts both saved (torch.save's format,
  written by the same ctorch function) are equal byte for byte;
- the agent learns: the mean return of the last 10 episodes is at least
  --learn (random actions average about 22).

The binding's program runs first: its exit 77 (no node/koffi) is this test's.
Usage: dqn_twins.py --c DQN --work DIR [--learn R] -- TWIN_CMD... -- ARGS...
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vae_twins import run  # noqa: E402  (runs a program; its 77 is ours)


def compared(out):
    return [re.sub(r" seconds=.*", "", ln) for ln in out.splitlines()
            if ln.strip() and not ln.startswith(("DQN on", "saved "))]


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
    ap.add_argument("--learn", type=float, default=100.0)
    a = ap.parse_args(argv[:i])
    twin, args = argv[i + 1:j], argv[j + 1:]
    os.makedirs(a.work, exist_ok=True)
    pt = {k: os.path.join(a.work, f"{k}.pt") for k in ("twin", "c")}
    for p in pt.values():
        if os.path.exists(p):
            os.remove(p)
    out_twin = run(twin + args + ["--save", pt["twin"]], "the twin")
    out_c = run([a.c] + args + ["--save", pt["c"]], "dqn.c")
    print(out_twin.rstrip().splitlines()[-1])
    lt, lc = compared(out_twin), compared(out_c)
    if lt != lc:
        for x, y in zip(lt + [""] * len(lc), lc + [""] * len(lt)):
            print(f"{'  ' if x == y else '!='} twin: {x:<60} C: {y}")
        sys.exit("FAIL: the twin's output differs from dqn.c's")
    returns = [int(m) for m in re.findall(r"^episode \d+ return (\d+)", out_c, re.M)]
    print(f"output: {len(lc)} lines equal to dqn.c's ({len(returns)} episodes, the same returns)")
    with open(pt["twin"], "rb") as f1, open(pt["c"], "rb") as f2:
        if f1.read() != f2.read():
            sys.exit("FAIL: the Q-network's saved weights differ from dqn.c's")
    print("weights: the Q-networks' state dicts are equal byte for byte")
    last10 = sum(returns[-10:]) / max(1, len(returns[-10:]))
    if last10 < a.learn:
        sys.exit(f"FAIL: the mean return of the last 10 episodes is {last10} (< {a.learn})")
    print(f"learns: the last 10 episodes' mean return is {last10} (>= {a.learn})")


if __name__ == "__main__":
    main()
