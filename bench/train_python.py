"""Training throughput through Python torch; same definitions as train_cpp.cpp.
Usage: /usr/bin/python3 train_python.py lenet|tiny STEPS
Prints two rates: over the whole timed run, and at the median step."""
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


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


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(256, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def lenet(steps):
    torch.set_num_threads(2)
    torch.manual_seed(0)
    net = LeNet()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    x = torch.randn(256, 1, 28, 28)
    y = torch.randint(0, 10, (256,))

    def step():
        opt.zero_grad(set_to_none=False)
        F.cross_entropy(net(x), y).backward()
        opt.step()

    return timed(step, 5, steps, 256.0)


def tiny(steps):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    l1, l2 = nn.Linear(4, 64), nn.Linear(64, 2)
    opt = torch.optim.SGD(list(l1.parameters()) + list(l2.parameters()), lr=0.01)
    x, y = torch.randn(1, 4), torch.randn(1, 2)

    def step():
        opt.zero_grad(set_to_none=False)
        F.mse_loss(l2(torch.tanh(l1(x))), y).backward()
        opt.step()

    return timed(step, 200, steps, 1.0)


if __name__ == "__main__":
    which, steps = sys.argv[1], int(sys.argv[2])
    print("%.3f %.3f" % (lenet(steps) if which == "lenet" else tiny(steps)))
