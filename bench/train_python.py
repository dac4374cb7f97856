"""Training throughput through Python torch; same definitions as train_cpp.cpp.
Usage: $CTORCH_TORCH_PYTHON train_python.py lenet|tiny STEPS [THREADS [none]]  (default 2 for lenet, 1 for tiny;
       none: set the gradients to None each step instead of zeroing them)
Prints two rates: over the whole timed run, and at the median step."""
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# The network of examples/lenet5.py, as train_ctorch.c uses lenet5_model.h.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from lenet5 import LeNet5  # noqa: E402


def timed(step, warm, steps, per):
    for _ in range(warm):
        step()
    dt = []
    now = time.perf_counter
    t0 = now()
    for _ in range(steps):
        ts = now()
        step()
        dt.append(now() - ts)
    total = now() - t0
    return per * steps / total, per / statistics.median(dt)


def lenet(steps, threads=2, set_to_none=False):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    net = LeNet5()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    x = torch.randn(256, 1, 28, 28)
    y = torch.randint(0, 10, (256,))

    def step():
        opt.zero_grad(set_to_none=set_to_none)
        F.cross_entropy(net(x), y).backward()
        opt.step()

    return timed(step, 5, steps, 256.0)


def tiny(steps, threads=1, set_to_none=False):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    l1, l2 = nn.Linear(4, 64), nn.Linear(64, 2)
    opt = torch.optim.SGD(list(l1.parameters()) + list(l2.parameters()), lr=0.01)
    x, y = torch.randn(1, 4), torch.randn(1, 2)

    def step():
        opt.zero_grad(set_to_none=set_to_none)
        F.mse_loss(l2(torch.tanh(l1(x))), y).backward()
        opt.step()

    return timed(step, 200, steps, 1.0)


if __name__ == "__main__":
    which, steps = sys.argv[1], int(sys.argv[2])
    extra = ([int(sys.argv[3])] if len(sys.argv) > 3 else []) + ([True] if sys.argv[4:] == ["none"] else [])
    print("%.3f %.3f" % (lenet(steps, *extra) if which == "lenet" else tiny(steps, *extra)))
