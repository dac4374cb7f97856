"""Runs clip_dump (ctorch_clip_grad_norm_ / ctorch_clip_grad_value_ on seeded
parameters and gradients) and the same scenarios with the installed torch's
torch.nn.utils.clip_grad_norm_ / clip_grad_value_, and requires the returned
total norm and every clipped gradient element to be bit-identical.

Usage: clip_vs_torch.py PATH/TO/clip_dump"""
import math
import subprocess
import sys

import torch
from torch.nn.utils import clip_grad_norm_, clip_grad_value_

SHAPES = [(3, 4), (5,), (2, 3, 4), (2, 2), (7,)]
INF = math.inf
# name: by_value, f64, nparams, poison, error_if_nonfinite, max_norm (or clip value), norm_type, scale
SCENARIOS = [
    ("l2_clips", 0, 0, 5, 0, 0, 1.0, 2.0, 1.0),
    ("l2_no_clip", 0, 0, 5, 0, 0, 100.0, 2.0, 1.0),
    ("l1", 0, 0, 5, 0, 0, 2.0, 1.0, 1.0),
    ("inf", 0, 0, 5, 0, 0, 0.5, INF, 1.0),
    ("inf_one_grad", 0, 0, 1, 0, 0, 0.5, INF, 1.0),
    ("minus_inf", 0, 0, 5, 0, 0, 0.05, -INF, 1.0),
    ("p_half", 0, 0, 5, 0, 0, 3.0, 0.5, 1.0),
    ("p3_f64", 0, 1, 5, 0, 0, 1.0, 3.0, 10.0),
    ("large_scale", 0, 0, 5, 0, 0, 1.0, 2.0, 1e18),
    ("nonfinite_scaled", 0, 0, 5, 1, 0, 1.0, 2.0, 1.0),
    ("nonfinite_error", 0, 0, 5, 1, 1, 1.0, 2.0, 1.0),
    ("value", 1, 0, 5, 0, 0, 0.5, 0, 1.0),
    ("value_f64", 1, 1, 5, 0, 0, 0.1, 0, 3.0),
]


def python_side(k, sc):
    name, by_value, f64, nparams, poison, err, max_norm, norm_type, scale = sc
    dt = torch.float64 if f64 else torch.float32
    torch.manual_seed(100 + k)
    ps = []
    for i in range(nparams):
        p = torch.randn(SHAPES[i], dtype=dt).requires_grad_()
        ps.append(p)
        if i == 3:
            continue
        g = torch.randn(SHAPES[i], dtype=dt).mul(scale)
        if poison and i == 1:
            g.fill_(INF)
        p.grad = g
    status, total = "ok", -1.0
    if by_value:
        clip_grad_value_(ps, max_norm)
    else:
        try:
            total = float(clip_grad_norm_(ps, max_norm, norm_type, error_if_nonfinite=bool(err)))
        except RuntimeError:
            status, total = "CTORCH_VALUE", 0.0
    grads = {i: [float(v) for v in p.grad.double().flatten()] for i, p in enumerate(ps) if p.grad is not None}
    return status, total, grads


def same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


def main():
    out = subprocess.run([sys.argv[1]], check=True, text=True, stdout=subprocess.PIPE).stdout
    blocks, cur = {}, None
    for line in out.splitlines():
        f = line.split()
        if f[0] == "SCENARIO":
            cur = blocks[f[1]] = {"status": f[2], "total": float.fromhex(f[3]), "grads": {}}
        elif f[0] == "G":
            cur["grads"][int(f[1])] = [float.fromhex(v) for v in f[2:]]
    bad = 0
    for k, sc in enumerate(SCENARIOS):
        name = sc[0]
        status, total, grads = python_side(k, sc)
        c = blocks.get(name)
        if c is None:
            print(f"{name}: missing from clip_dump's output")
            bad += 1
            continue
        problems = []
        if c["status"] != status:
            problems.append(f"status {c['status']} vs Python {status}")
        if not sc[1] and not same(c["total"], total) and status == "ok":
            problems.append(f"total norm {c['total']!r} vs Python {total!r}")
        if sorted(c["grads"]) != sorted(grads):
            problems.append(f"gradients of parameters {sorted(c['grads'])} vs Python {sorted(grads)}")
        for i in grads:
            d = [j for j, (a, b) in enumerate(zip(c["grads"].get(i, []), grads[i])) if not same(a, b)]
            if d:
                problems.append(f"parameter {i}: {len(d)} elements differ, first {d[0]}: "
                                f"{c['grads'][i][d[0]]!r} vs {grads[i][d[0]]!r}")
        print(f"{name}: {'ok' if not problems else '; '.join(problems)}")
        bad += bool(problems)
    print(f"torch {torch.__version__}: {len(SCENARIOS) - bad} of {len(SCENARIOS)} scenarios bit-identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
