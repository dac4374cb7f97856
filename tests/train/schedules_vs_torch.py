"""Runs schedules_dump (ctorch's schedules, step by step) and the same
scenarios with the installed torch.optim.lr_scheduler, and compares every
learning rate and momentum to 1e-12 (relative).

Then the schedulers' states (ctorch_lr_scheduler_save_state_dict /
_load_state_dict): at step steps/2 of every scenario,
- ctorch's file, read with torch.load(weights_only=True) (plain
  torch.load on torch 1.13, whose weights_only loader reads no float), equals the
  installed torch's scheduler.state_dict() at that step: the same keys in
  the same order, the same values;
- Python's scheduler, made afresh and given ctorch's file with
  load_state_dict, continues with the lrs of the uninterrupted run;
- ctorch's scheduler, made afresh and given Python's file, does too.

Usage: schedules_vs_torch.py PATH/TO/schedules_dump"""
import copy
import os
import subprocess
import sys
import tempfile

import torch
from torch.optim import lr_scheduler as L

OLD = torch.__version__.startswith("1.")
METRICS = [1.0, 0.9, 0.91, 0.905, 0.9, 0.95, 0.85, 0.86, 0.87, 0.88, 0.84, 0.845, 0.85, 0.86, 0.87, 0.7]
# Attributes that are code, not data: torch 1.13 keeps a weak method
# (CyclicLR) and a bound method (OneCycleLR) in the state, which pickle
# cannot store; ctorch leaves them out (Python keeps its own on load).
CODE = ("_scale_fn_ref", "anneal_func")


def opt(kind="sgd"):
    p = [torch.ones(1, requires_grad=True), torch.ones(1, requires_grad=True)]
    groups = [{"params": [p[0]]}, {"params": [p[1]], "lr": 0.05}]
    if kind == "adam":
        return torch.optim.Adam(groups, lr=0.1)
    return torch.optim.SGD(groups, lr=0.1, momentum=0.9)


def row(o):
    g = o.param_groups[0]
    m = g["momentum"] if "momentum" in g and g["momentum"] != 0 else g["betas"][0] if "betas" in g else 0.0
    return [float(o.param_groups[0]["lr"]), float(o.param_groups[1]["lr"]), float(m)]


def pair(make0, make1, milestone):
    def build(o):
        s0, s1 = make0(o), make1(o)
        return L.SequentialLR(o, [s0, s1], milestones=[milestone]) if milestone else L.ChainedScheduler([s0, s1])
    return build


def plateau(o):
    return L.ReduceLROnPlateau(o, patience=2, factor=0.5, cooldown=1, threshold=0.01, min_lr=0.004)


# name: (build(optimizer) -> scheduler, steps, optimizer kind, stepped with a metric)
SCENARIOS = {
    "step": (lambda o: L.StepLR(o, step_size=3, gamma=0.5), 20),
    "multistep": (lambda o: L.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3), 12),
    "constant": (lambda o: L.ConstantLR(o, factor=0.4, total_iters=4), 8),
    "constant_default": (lambda o: L.ConstantLR(o), 8),
    "linear": (lambda o: L.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6), 10),
    "exponential": (lambda o: L.ExponentialLR(o, gamma=0.93), 15),
    "polynomial": (lambda o: L.PolynomialLR(o, total_iters=7, power=2.0), 10),
    "cosine": (lambda o: L.CosineAnnealingLR(o, T_max=5, eta_min=0.001), 25),
    "warm_restarts": (lambda o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.0005), 30),
    "cyclic_triangular2": (lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4, step_size_down=3,
                                                mode="triangular2"), 30),
    "cyclic_exp_range": (lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range",
                                              gamma=0.97), 30),
    "one_cycle": (lambda o: L.OneCycleLR(o, max_lr=0.2, total_steps=30, pct_start=0.25), 29),
    "one_cycle_adam_three_phase": (lambda o: L.OneCycleLR(o, max_lr=0.2, total_steps=25, three_phase=True,
                                                          anneal_strategy="linear"), 24, "adam"),
    "lambda": (lambda o: L.LambdaLR(o, [lambda e: 1 / (1.0 + e), lambda e: 2 / (1.0 + e)]), 8),
    "multiplicative": (lambda o: L.MultiplicativeLR(o, [lambda e: 0.95, lambda e: 0.9]), 8),
    "plateau": (plateau, 16, "sgd", True),
    "sequential": (pair(lambda o: L.ConstantLR(o, factor=0.5, total_iters=3),
                        lambda o: L.ExponentialLR(o, gamma=0.9), 4), 15),
    "warmup_cosine": (pair(lambda o: L.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=5),
                           lambda o: L.CosineAnnealingLR(o, T_max=10), 5), 20),
    "chained": (pair(lambda o: L.ConstantLR(o, factor=0.3, total_iters=5),
                     lambda o: L.ExponentialLR(o, gamma=0.95), 0), 15),
}


def data_only(state):
    """A state dict without the attributes that are code (see CODE), nested ones too."""
    out = {k: v for k, v in state.items() if k not in CODE}
    if "_schedulers" in out:
        out["_schedulers"] = [data_only(s) for s in out["_schedulers"]]
    return copy.deepcopy(out)


def drive(build, steps, kind="sgd", metric=False, resume=None):
    """Rows of (lr0, lr1, momentum) for steps 0..steps, the state and lrs at
    step steps // 2; with resume=(state, lrs), starts there from that state."""
    o = opt(kind)
    s = build(o)
    k, first, out, state, lrs = steps // 2, 0, [], None, None
    if resume is not None:
        s.load_state_dict(resume[0])
        for g, lr in zip(o.param_groups, resume[1]):
            g["lr"] = lr
        first = k
    for i in range(first, steps + 1):
        out.append(row(o))
        if i == k:
            state, lrs = data_only(s.state_dict()), [g["lr"] for g in o.param_groups]
        if i < steps:
            s.step(METRICS[i]) if metric else s.step()
    return out, state, lrs


def run_dump(exe, *args):
    got = {}
    out = subprocess.run([exe, *args], check=True, stdout=subprocess.PIPE, text=True).stdout
    for line in out.splitlines():
        name, step, *vals = line.split()
        got.setdefault(name, []).append((int(step), [float(v) for v in vals]))
    return got


def compare_rows(name, got, want, first, skip_first_momentum=False):
    """got: [(step, row)] from ctorch; want: torch's rows for steps first.."""
    bad = 0
    if [s for s, _ in got] != list(range(first, first + len(want))):
        print(f"{name}: ctorch printed steps {[s for s, _ in got]}, torch {first}..{first + len(want) - 1}")
        return 1
    for (step, a), b in zip(got, want):
        for what, x, y in zip(("lr0", "lr1", "momentum"), a, b):
            if what == "momentum" and skip_first_momentum and step == first:
                continue  # set by the fresh scheduler; the next step sets it from the state
            if abs(x - y) > 1e-12 * max(1.0, abs(y)):
                print(f"{name} step {step} {what}: ctorch {x!r} torch {y!r}")
                bad += 1
    return bad


def same(a, b, where):
    """Differences between a state read from ctorch's file (a) and torch's (b)."""
    if isinstance(b, dict):
        if not isinstance(a, dict):
            return [f"{where}: {type(a).__name__}, torch a {type(b).__name__}"]
        if type(b).__name__ == "Counter":
            return [] if dict(a) == dict(b) and type(a).__name__ == "Counter" else [f"{where}: {a!r} != {b!r}"]
        if list(a) != list(b):
            return [f"{where}: keys {list(a)}, torch {list(b)}"]
        return [d for k in b for d in same(a[k], b[k], f"{where}.{k}")]
    if isinstance(b, (list, tuple)):
        if not isinstance(a, (list, tuple)) or len(a) != len(b):
            return [f"{where}: {a!r}, torch {b!r}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in same(x, y, f"{where}[{i}]")]
    if isinstance(b, bool) or isinstance(a, bool) or b is None or isinstance(b, str):
        return [] if a == b and type(a) is type(b) else [f"{where}: {a!r}, torch {b!r}"]
    if isinstance(b, (int, float)) and isinstance(a, (int, float)):
        if a == b or abs(a - b) <= 1e-12 * max(1.0, abs(b)):
            return []
    return [f"{where}: {a!r}, torch {b!r}"]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    exe = sys.argv[1]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        got = run_dump(exe, "save", tmp)
        want, n_states = {}, 0
        for name, (build, steps, *rest) in SCENARIOS.items():
            kind, metric = (rest + ["sgd", False][len(rest):])[:2]
            rows, state, lrs = drive(build, steps, kind, metric)
            want[name] = rows
            bad += compare_rows(name, got.get(name, []), rows, 0)
            # ctorch's file against torch's state_dict at the same step. torch
            # 1.13's weights_only loader reads no float (pickle's BINFLOAT), so
            # no scheduler state at all, its own included: plain torch.load there.
            c_file = os.path.join(tmp, f"c_{name}.pt")
            c_state = torch.load(c_file, weights_only=not OLD)
            diffs = same(c_state, state, name)
            for d in diffs:
                print(f"state {d}")
            bad += len(diffs)
            n_states += 1
            # Python continues from ctorch's file.
            rows2, _, _ = drive(build, steps, kind, metric, resume=(c_state, lrs))
            for i, (a, b) in enumerate(zip(rows2, rows[steps // 2:])):
                for j, what in enumerate(("lr0", "lr1", "momentum")):
                    if what == "momentum" and i == 0:
                        continue
                    if abs(a[j] - b[j]) > 1e-12 * max(1.0, abs(b[j])):
                        print(f"{name} resumed in torch from ctorch's state, step {steps // 2 + i} {what}: "
                              f"{a[j]!r}, uninterrupted {b[j]!r}")
                        bad += 1
            torch.save(state, os.path.join(tmp, f"py_{name}.pt"))
            with open(os.path.join(tmp, f"py_{name}.lrs"), "w") as f:
                f.write(" ".join(repr(float(x)) for x in lrs) + "\n")
        # ctorch continues from Python's files.
        resumed = run_dump(exe, "resume", tmp)
        for name, (build, steps, *rest) in SCENARIOS.items():
            bad += compare_rows(name + " (ctorch from torch's state)", resumed.get(name, []), want[name][steps // 2:],
                                steps // 2, True)
    n = sum(len(r) for r in want.values())
    print(f"{len(want)} schedules, {n} steps compared with torch {torch.__version__}; {n_states} states compared "
          f"key by key and continued both ways: {bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
