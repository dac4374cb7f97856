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
import re
import sys

from twin_common import fresh, kept, options, run, same_bytes, same_lines


def compared(out):
    """The lines both programs must print alike (no header, paths or timings)."""
    return kept(out, ("DQN on", "saved "), r" seconds=.*")


def main():
    a, twin, args = options(__doc__, learn=100.0)
    pt = fresh(a.work, "twin.pt", "c.pt")
    out_twin = run(twin + args + ["--save", pt["twin.pt"]], "the twin").stdout
    out_c = run([a.c] + args + ["--save", pt["c.pt"]], "dqn.c").stdout
    print(out_twin.rstrip().splitlines()[-1])
    lc = compared(out_c)
    same_lines(compared(out_twin), lc, "the twin's output differs from dqn.c's")
    returns = [int(m) for m in re.findall(r"^episode \d+ return (\d+)", out_c, re.M)]
    print(f"output: {len(lc)} lines equal to dqn.c's ({len(returns)} episodes, the same returns)")
    same_bytes(pt["twin.pt"], pt["c.pt"], "the Q-network's saved weights differ from dqn.c's")
    print("weights: the Q-networks' state dicts are equal byte for byte")
    last10 = sum(returns[-10:]) / max(1, len(returns[-10:]))
    if last10 < a.learn:
        sys.exit(f"FAIL: the mean return of the last 10 episodes is {last10} (< {a.learn})")
    print(f"learns: the last 10 episodes' mean return is {last10} (>= {a.learn})")


if __name__ == "__main__":
    main()
