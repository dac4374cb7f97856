#!/usr/bin/env python3
"""examples/dqn.c checked against gymnasium and against its Python twin.

  dqn_vs_python.py dynamics --c BIN --steps N [--seed S]
    The C program's CartPole (dqn --dynamics N) replayed in gymnasium's
    CartPole-v1: each reset's initial state is set as env.unwrapped.state,
    then the C program's actions are stepped; the float64 state, the float32
    observation, terminated and the reward must equal gymnasium's exactly
    (the largest difference is printed; each step starts from the C program's
    previous state). The C program's 500-step truncation
    must be gymnasium's registered max_episode_steps. Without gymnasium:
    skipped (exit 77).

  dqn_vs_python.py twins --c BIN --script PY -- ARGS...
    Both programs with the same ARGS: the same return in every episode and
    the same summary (times aside); the saved Q-networks have the same keys,
    and their largest difference is printed (0 when training was
    bit-identical, which is required with --exact); with --learn R the mean
    return of the last 10 episodes is at least R (a random policy gets ~22).
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/pyfork.py
from pyfork import run_script  # noqa: E402


def run(cmd):
    """cmd's output lines; a Python script under this interpreter runs in a
    child forked from this one (pyfork.py: no second `import torch`)."""
    if cmd[0] == sys.executable:
        p = run_script(cmd[1], cmd[2:], timeout=600)
    else:
        p = subprocess.run(cmd, capture_output=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"{cmd} failed ({p.returncode}):\n{p.stdout.decode()}\n{p.stderr.decode()}")
    return p.stdout.decode().splitlines()


def dynamics(a):
    try:
        import gymnasium as gym
        import numpy as np
    except ImportError as e:
        print(f"skipped: gymnasium is not installed for {sys.executable} ({e}); scripts/deps --test installs it")
        sys.exit(77)
    lines = run([a.c, "--dynamics", str(a.steps), "--seed", str(a.seed)])
    spec = gym.spec("CartPole-v1")
    if spec.max_episode_steps != 500:
        sys.exit(f"gymnasium's CartPole-v1 truncates at {spec.max_episode_steps} steps, the C program at 500")
    env = gym.make("CartPole-v1").unwrapped
    env.reset(seed=0)
    worst_state = worst_obs = 0.0
    steps = resets = 0
    thetas = []
    for line in lines:
        f = line.split()
        if f[0] == "reset":
            env.reset()
            state = np.array([float(v) for v in f[1:5]], dtype=np.float64)
            resets += 1
            continue
        # every step from the C program's previous state: one step's error, not an episode's
        env.state = state
        thetas.append(state[2])
        action, state = int(f[1]), np.array([float(v) for v in f[2:6]])
        c_term, c_trunc = bool(int(f[6])), bool(int(f[7]))
        obs, reward, term, trunc, _ = env.step(action)
        worst_state = max(worst_state, float(np.abs(env.state - state).max()))
        worst_obs = max(worst_obs, float(np.abs(obs - state.astype(np.float32)).max()))
        if term != c_term or reward != 1.0 or (c_trunc and term):
            sys.exit(f"step {steps}: C terminated={c_term} truncated={c_trunc}, gymnasium terminated={term} "
                     f"reward={reward}")
        steps += 1
    print(f"{steps} steps, {resets} episodes (gymnasium {gym.__version__}, numpy {np.__version__}): largest "
          f"difference of the float64 state {worst_state:.3g}, of the float32 observation {worst_obs:.3g}")
    # The C program calls the C library's cos and sin (as Python's math module does);
    # gymnasium calls numpy's, which numpy 1.x computes with its own SIMD code on
    # AVX-512 machines (a few ulp off the C library's; numpy 2.x calls the C library).
    # Equal functions must give equal states; else one step may differ by rounding.
    same_trig = all(np.cos(t) == math.cos(t) and np.sin(t) == math.sin(t) for t in thetas)
    tol = 0.0 if same_trig else 1e-12
    if not same_trig:
        print(f"numpy's cos/sin differ from the C library's here: tolerance {tol} per step")
    if steps != a.steps or worst_state > tol or worst_obs > (0.0 if same_trig else 1e-6):
        sys.exit("the C program's CartPole differs from gymnasium's")
    print("ok")


def twins(a):
    with tempfile.TemporaryDirectory() as d:
        c_pt, p_pt = os.path.join(d, "c.pt"), os.path.join(d, "py.pt")
        c = run([a.c, *a.args, "--save", c_pt])
        p = run([sys.executable, a.script, *a.args, "--save", p_pt])
        c_ret = [l.split()[3] for l in c if l.startswith("episode ")]
        p_ret = [l.split()[3] for l in p if l.startswith("episode ")]
        print(f"C:      {c[-1]}\nPython: {p[-1]}")
        print(f"returns (C):      {' '.join(c_ret)}\nreturns (Python): {' '.join(p_ret)}")
        if not c_ret or c_ret != p_ret:
            sys.exit("the episode returns differ")
        last = [int(r) for r in c_ret[-10:]]
        if sum(last) / len(last) < a.learn:
            sys.exit(f"did not learn: mean return of the last 10 episodes {sum(last) / len(last)} < {a.learn}")
        strip = lambda l: {kv.split("=")[0]: kv for kv in l.split() if not kv.startswith(("seconds=", "steps_per_s="))}
        if strip(c[-1]) != strip(p[-1]):
            sys.exit("the summaries differ")
        c_sd, p_sd = torch.load(c_pt), torch.load(p_pt)
        if list(c_sd) != list(p_sd):
            sys.exit(f"state-dict keys differ: C {list(c_sd)}, Python {list(p_sd)}")
        diff = max((c_sd[k].double() - p_sd[k].double()).abs().max().item() for k in c_sd)
        print(f"Q-networks after training: {len(c_sd)} tensors, C and Python {diff:.3g} apart")
        if a.exact and diff != 0:
            sys.exit("--exact: the trained weights are not bit-identical")
        if a.exact and [l for l in c if l.startswith("episode ")] != [l for l in p if l.startswith("episode ")]:
            sys.exit("--exact: the episode lines (returns, losses) differ")
    print("ok")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["dynamics", "twins"])
    ap.add_argument("--c", required=True)
    ap.add_argument("--script")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--learn", type=float, default=0, help="twins: the least mean return of the last 10 episodes")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    a.args = argv[cut + 1:]  # the programs' own options
    dynamics(a) if a.mode == "dynamics" else twins(a)


if __name__ == "__main__":
    main()
