#!/usr/bin/env python3
"""lenet5.c and lenet5.py, run for a few steps with the same seed, must agree:
same initial weights and data order, so (near-)identical metrics; and the
weights the C program saves must load into the Python model and give the same
test accuracy there; and the two programs' trained weights must be close (the
C network is made of ctorch's modules, initialised as torch.nn's: on one
libtorch they come out bit-identical).

--train-images N --test-images M: both programs read the first N training
and M test images only (fashion_subset.py; 0: all), the same equality on a
fraction of the data. The Python runs are forked from this
interpreter, which has imported torch (tests/pyfork.py)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))  # tests/pyfork.py
sys.path.insert(0, HERE)
import torch  # noqa: E402,F401  (imported once, here: the Python runs are forked from this process)
from fashion_subset import subset  # noqa: E402
from pyfork import run_script  # noqa: E402

LAST = re.compile(r"^test_accuracy=([0-9.]+) top5=([0-9.]+) images_per_s=([0-9.]+)$")
EPOCH = re.compile(r"loss=([0-9.]+) train_acc=([0-9.]+)")


def run(cmd):
    if cmd[0] == sys.executable:
        p = run_script(cmd[1], cmd[2:], text=True, timeout=500)
    else:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=500)
    if p.returncode != 0:
        sys.exit(f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    lines = p.stdout.strip().splitlines()
    m = LAST.match(lines[-1])
    if not m:
        sys.exit(f"{cmd}: last line is not machine-readable: {lines[-1]!r}")
    epochs = [EPOCH.search(l) for l in lines if l.startswith("epoch ") and "train_acc=" in l]
    return [float(x) for x in m.groups()], [(float(e.group(1)), float(e.group(2))) for e in epochs]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lenet5", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=20, help="steps per epoch (2 epochs)")
    ap.add_argument("--train-images", type=int, default=0)
    ap.add_argument("--test-images", type=int, default=0)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        data = a.data
        if a.train_images or a.test_images:
            data = subset(a.data, os.path.join(d, "data"), a.train_images or 60000, a.test_images or 10000)
        common = ["--epochs", "2", "--steps", str(a.steps), "--seed", "3", "--threads", "2", "--data", data]
        weights = os.path.join(d, "c.pt")
        (c_acc, c_top5, c_ips), c_epochs = run([a.lenet5, *common, "--save", weights])
        py_weights = os.path.join(d, "py.pt")
        (p_acc, p_top5, p_ips), p_epochs = run([sys.executable, a.script, *common, "--save", py_weights])
        print(f"C: acc {c_acc} top5 {c_top5} {c_ips} img/s; Python: acc {p_acc} top5 {p_top5} {p_ips} img/s")
        assert len(c_epochs) == len(p_epochs) == 2, (c_epochs, p_epochs)
        for (cl, ca), (pl, pa) in zip(c_epochs, p_epochs):
            assert abs(cl - pl) < 0.01 and abs(ca - pa) < 0.01, (c_epochs, p_epochs)
        assert abs(c_acc - p_acc) < 0.01 and abs(c_top5 - p_top5) < 0.01, (c_acc, p_acc, c_top5, p_top5)
        # 2 x 20 steps of AdamW take Fashion-MNIST well past chance (10%):
        # about 0.62 on the first 2,000 test images (80 steps: 0.70)
        assert c_acc > 0.5, c_acc
        (l_acc, l_top5, _), _ = run([sys.executable, a.script, "--epochs", "0", "--data", data, "--load", weights])
        assert l_acc == c_acc and l_top5 == c_top5, (l_acc, c_acc, l_top5, c_top5)
        c_sd, p_sd = torch.load(weights), torch.load(py_weights)
        assert list(c_sd) == list(p_sd), (list(c_sd), list(p_sd))
        diff = max((c_sd[k] - p_sd[k]).abs().max().item() for k in c_sd)
        print(f"trained weights: {len(c_sd)} tensors, C and Python {diff:.3g} apart")
        assert diff < 1e-3, diff
    print("ok")


if __name__ == "__main__":
    main()
