"""Runs schedules_dump (ctorch's schedules, step by step) and the same
scenarios with the installed torch.optim.lr_scheduler, and compares every
learning rate and momentum to 1e-12 (relative).

Usage: schedules_vs_torch.py PATH/TO/schedules_dump"""
import subprocess
import sys

import torch
from torch.optim import lr_scheduler as L


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


def simple(make, steps, kind="sgd"):
    o = opt(kind)
    s = make(o)
    out = []
    for i in range(steps + 1):
        out.append(row(o))
        if i < steps:
            s.step()
    return out


def pair(make0, make1, milestone, steps):
    o = opt()
    s0, s1 = make0(o), make1(o)
    top = L.SequentialLR(o, [s0, s1], milestones=[milestone]) if milestone else L.ChainedScheduler([s0, s1])
    out = []
    for i in range(steps + 1):
        out.append(row(o))
        if i < steps:
            top.step()
    return out


def plateau():
    metrics = [1.0, 0.9, 0.91, 0.905, 0.9, 0.95, 0.85, 0.86, 0.87, 0.88, 0.84, 0.845, 0.85, 0.86, 0.87, 0.7]
    o = opt()
    s = L.ReduceLROnPlateau(o, patience=2, factor=0.5, cooldown=1, threshold=0.01, min_lr=0.004)
    out = []
    for i in range(17):
        out.append(row(o))
        if i < 16:
            s.step(metrics[i])
    return out


def scenarios():
    return {
        "step": simple(lambda o: L.StepLR(o, step_size=3, gamma=0.5), 20),
        "multistep": simple(lambda o: L.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3), 12),
        "constant": simple(lambda o: L.ConstantLR(o, factor=0.4, total_iters=4), 8),
        "constant_default": simple(lambda o: L.ConstantLR(o), 8),
        "linear": simple(lambda o: L.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6), 10),
        "exponential": simple(lambda o: L.ExponentialLR(o, gamma=0.93), 15),
        "polynomial": simple(lambda o: L.PolynomialLR(o, total_iters=7, power=2.0), 10),
        "cosine": simple(lambda o: L.CosineAnnealingLR(o, T_max=5, eta_min=0.001), 25),
        "warm_restarts": simple(lambda o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.0005), 30),
        "cyclic_triangular2": simple(lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4,
                                                          step_size_down=3, mode="triangular2"), 30),
        "cyclic_exp_range": simple(lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5,
                                                        mode="exp_range", gamma=0.97), 30),
        "one_cycle": simple(lambda o: L.OneCycleLR(o, max_lr=0.2, total_steps=30, pct_start=0.25), 29),
        "one_cycle_adam_three_phase": simple(lambda o: L.OneCycleLR(o, max_lr=0.2, total_steps=25, three_phase=True,
                                                                    anneal_strategy="linear"), 24, "adam"),
        "lambda": simple(lambda o: L.LambdaLR(o, [lambda e: 1 / (1.0 + e), lambda e: 2 / (1.0 + e)]), 8),
        "multiplicative": simple(lambda o: L.MultiplicativeLR(o, [lambda e: 0.95, lambda e: 0.9]), 8),
        "plateau": plateau(),
        "sequential": pair(lambda o: L.ConstantLR(o, factor=0.5, total_iters=3),
                           lambda o: L.ExponentialLR(o, gamma=0.9), 4, 15),
        "warmup_cosine": pair(lambda o: L.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=5),
                              lambda o: L.CosineAnnealingLR(o, T_max=10), 5, 20),
        "chained": pair(lambda o: L.ConstantLR(o, factor=0.3, total_iters=5),
                        lambda o: L.ExponentialLR(o, gamma=0.95), 0, 15),
    }


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    got = {}
    out = subprocess.run([sys.argv[1]], check=True, stdout=subprocess.PIPE, text=True).stdout
    for line in out.splitlines():
        name, step, *vals = line.split()
        got.setdefault(name, []).append([float(v) for v in vals])
    want = scenarios()
    bad = 0
    for name, rows in want.items():
        if name not in got or len(got[name]) != len(rows):
            print(f"{name}: ctorch printed {len(got.get(name, []))} steps, torch {len(rows)}")
            bad += 1
            continue
        for i, (a, b) in enumerate(zip(got[name], rows)):
            for what, x, y in zip(("lr0", "lr1", "momentum"), a, b):
                if abs(x - y) > 1e-12 * max(1.0, abs(y)):
                    print(f"{name} step {i} {what}: ctorch {x!r} torch {y!r}")
                    bad += 1
    n = sum(len(r) for r in want.values())
    print(f"{len(want)} schedules, {n} steps compared with torch {torch.__version__}: {bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
