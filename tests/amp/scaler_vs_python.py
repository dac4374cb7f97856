"""ctorch's grad scaler against Python's torch.amp.GradScaler, state by state.

Runs the same iterations through tests/amp/scaler_trace (C, ctorch) and
through GradScaler + SGD (Python), and compares after every update: the scale,
the growth tracker, whether an inf/NaN was found, whether the optimizer
stepped, and the parameters. On the CPU where GradScaler supports it (torch
2.3+: torch.amp.GradScaler("cpu")), and on CUDA where a device is there.
Exits 77 ("skipped: why") when neither can run (torch 1.13 without CUDA: its
only GradScaler is torch.cuda.amp's, which disables itself without CUDA).

Usage: scaler_vs_python.py --trace PATH/scaler_trace
"""
import argparse
import math
import subprocess
import sys

import torch

# (unscale_first, new_scale, x): the loss is sum(p * x), so the scaled
# gradient is scale * x. Growth every 3 good steps, backoff on inf/NaN,
# one manual scale, explicit unscale_ before step on some.
ITERATIONS = [
    (0, 0, (1.0, 2.0, -1.0)),
    (0, 0, (0.5, 0.5, 0.5)),
    (1, 0, (1.0, -1.0, 2.0)),      # third good step: the scale grows
    (0, 0, (math.inf, 1.0, 1.0)),  # skipped, backoff
    (0, 0, (1.0, math.nan, 1.0)),  # skipped, backoff
    (0, 0, (-1.0, 0.25, 3.0)),
    (1, 0, (2.0, 2.0, 2.0)),
    (0, 512.0, (1.0, 1.0, 1.0)),   # manual scale; the tracker is kept
    (0, 0, (0.0, 0.0, 1.0)),       # third good step since the backoff: grows
    (1, 0, (-math.inf, 0.0, 0.0)),
    (0, 0, (3.0, 1.0, 0.5)),
]


def python_trace(device):
    scaler = torch.amp.GradScaler(device, init_scale=1024.0, growth_factor=4.0,
                                  backoff_factor=0.25, growth_interval=3)
    p = torch.zeros(3, device=device, requires_grad=True)
    opt = torch.optim.SGD([p], lr=0.5)
    rows = []
    for unscale_first, new_scale, x in ITERATIONS:
        opt.zero_grad(set_to_none=True)
        loss = (p * torch.tensor(x, device=device)).sum()
        scaler.scale(loss).backward()
        if unscale_first:
            scaler.unscale_(opt)
        before = p.detach().clone()
        scaler.step(opt)
        found = int(sum(v.item() for v in scaler._found_inf_per_device(opt).values()) != 0)
        stepped = int(not found)
        assert stepped or torch.equal(before, p.detach()), "a skipped step changed p"
        scaler.update(new_scale if new_scale > 0 else None)
        rows.append((scaler.get_scale(), scaler._get_growth_tracker(), found, stepped, *p.detach().cpu().tolist()))
    return rows


def c_trace(trace, device):
    lines = "".join(f"{u} {s} {x[0]} {x[1]} {x[2]}\n" for u, s, x in ITERATIONS)
    out = subprocess.run([trace, device], input=lines, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        sys.exit(f"scaler_trace {device} failed ({out.returncode}): {out.stderr}")
    rows = []
    for line in out.stdout.splitlines():
        f = line.split()
        rows.append((float(f[0]), int(f[1]), int(f[2]), int(f[3]), *map(float, f[4:])))
    return rows


def same(a, b):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", required=True)
    args = ap.parse_args()
    devices = []
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        devices.append("cpu")
    if torch.cuda.is_available():
        devices.append("cuda")
    if not devices:
        print(f"skipped: torch {torch.__version__} has no CPU GradScaler and no CUDA device is visible")
        return 77
    for device in devices:
        py, c = python_trace(device), c_trace(args.trace, device)
        if len(py) != len(c):
            sys.exit(f"{device}: {len(c)} rows from C, {len(py)} from Python")
        for i, (rp, rc) in enumerate(zip(py, c)):
            if not all(same(x, y) for x, y in zip(rp, rc)):
                sys.exit(f"{device}: iteration {i}: Python {rp} != ctorch {rc}")
        print(f"{device}: {len(py)} iterations, state identical (last: scale {py[-1][0]}, tracker {py[-1][1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
