"""examples/custom_kernel.c's CPU path against PyTorch's composed expression.

Usage: custom_kernel_vs_torch.py --c PATH/TO/custom_kernel [--seed S] [--rows R] [--cols C] [--beta B]

custom_kernel cpu runs the custom autograd function swish(x) = x * sigmoid(beta x)
(its forward and backward are the user's kernel, here the C build of it) in
the graph loss = sum(swish(x.t()) * w) in float32 and float64, checks its own
gradient by central differences, and prints x, w, y, x.grad and the loss as
hex floats. This script builds the same graph from torch's ops
(h * torch.sigmoid(beta * h)) on the same x and w and compares:
  float64: y and the loss within 1e-15 relative; x.grad within rtol 1e-15,
  atol 1e-15 * max|grad| (see float32 for why not bit-identical);
  float32: y within 3 ulp (rtol 3.6e-7, atol 1e-30); x.grad within
  rtol 1e-6, atol 1e-6 * max|grad|: the fused derivative
  g * (s + beta x s (1 - s)) and autograd's chain (mul, sigmoid, mul
  backward) round differently, most where the derivative crosses zero;
  the loss within 1e-6 (float32) or 1e-15 (float64) of sum(|y * w|), the
  scale of its rounding (the sum cancels).
x starts with edge values (signed zeros, +-30, +-90 where exp overflows in
float32, +-1e-30): y must match those exactly, including the sign of zero.
Prints the largest differences it saw.
"""
import argparse
import math
import subprocess
import sys

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--c", required=True)
ap.add_argument("--seed", default="7")
ap.add_argument("--rows", default="24")
ap.add_argument("--cols", default="17")
ap.add_argument("--beta", default="1.5")
a = ap.parse_args()

torch.set_num_threads(1)
r = subprocess.run([a.c, "cpu", "--seed", a.seed, "--rows", a.rows, "--cols", a.cols, "--beta", a.beta],
                   capture_output=True, text=True, timeout=300)
sys.stderr.write(r.stderr)
if r.returncode != 0:
    raise SystemExit(f"custom_kernel cpu failed ({r.returncode})")

data = {}
for line in r.stdout.splitlines():
    parts = line.split()
    if parts[0] == "beta":
        beta = float.fromhex(parts[1])
    elif parts[0] == "shape":
        rows, cols = int(parts[1]), int(parts[2])
    elif parts[1] == "loss":
        data[(parts[0], "loss")] = float.fromhex(parts[2])
    else:
        data[(parts[0], parts[1])] = [float.fromhex(v) for v in parts[2:]]
assert beta == float(a.beta), (beta, a.beta)
failures = []


def compare(name, got, want, rtol, atol, exact_first=0):
    got = torch.tensor(got, dtype=torch.float64)
    want = want.detach().to(torch.float64).reshape(-1)
    if got.shape != want.shape:
        failures.append(f"{name}: {tuple(got.shape)} values, expected {tuple(want.shape)}")
        return
    diff = (got - want).abs()
    worst = (diff / (want.abs() * rtol + atol)).max().item()
    print(f"{name}: max |diff| {diff.max().item():.3g}, max |diff|/|ref| "
          f"{(diff / want.abs().clamp_min(1e-300)).max().item():.3g}, worst/tolerance {worst:.3g}")
    if not worst <= 1:
        failures.append(f"{name}: beyond rtol {rtol} atol {atol} (worst/tolerance {worst:.3g})")
    for i in range(exact_first):
        if math.copysign(1, got[i].item()) != math.copysign(1, want[i].item()) or got[i].item() != want[i].item():
            failures.append(f"{name}[{i}]: {got[i].item()!r} != torch's {want[i].item()!r}")


x64 = torch.tensor(data[("in", "x")], dtype=torch.float64).reshape(rows, cols)
w64 = torch.tensor(data[("in", "w")], dtype=torch.float64).reshape(cols, rows)
for tag, dtype in (("f32", torch.float32), ("f64", torch.float64)):
    x = x64.to(dtype).requires_grad_()
    w = w64.to(dtype)
    h = x.t()
    y = h * torch.sigmoid(beta * h)
    loss = (y * w).sum()
    loss.backward()
    # The edge values sit at the start of x, i.e. down y's first column
    # (y = swish(x.t()) is printed in y's own row-major order).
    edges_y = y.t().reshape(-1)[:8]
    y_c = torch.tensor(data[(tag, "y")], dtype=torch.float64).reshape(cols, rows).t().reshape(-1)[:8]
    for i in range(8):
        gv, wv = y_c[i].item(), edges_y[i].item()
        if gv != wv or math.copysign(1, gv) != math.copysign(1, wv):
            failures.append(f"{tag} y at x={x64.reshape(-1)[i].item()!r}: {gv!r} != torch's {wv!r}")
    if dtype == torch.float64:
        compare(f"{tag} y", data[(tag, "y")], y, 1e-15, 1e-300)
        compare(f"{tag} grad", data[(tag, "grad")], x.grad, 1e-15, 1e-15 * x.grad.abs().max().item())
        lt = 1e-15
    else:
        compare(f"{tag} y", data[(tag, "y")], y, 3.6e-7, 1e-30)
        compare(f"{tag} grad", data[(tag, "grad")], x.grad, 1e-6, 1e-6 * x.grad.abs().max().item())
        lt = 1e-6
    lc, lp = data[(tag, "loss")], loss.item()
    print(f"{tag} loss: C {lc!r}, torch {lp!r}")
    if not abs(lc - lp) <= lt * (y * w).abs().sum().item():
        failures.append(f"{tag} loss {lc!r} != torch's {lp!r}")

print(f"torch {torch.__version__}")
if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("custom_kernel matches torch's composed expression")
