"""examples/resnet.c against its twin examples/resnet.py: a short run of each
from the same seed must print the same losses and test accuracy (same
initialisation, data order, batch norm and SGD), within float tolerance; the
state dict the C program saves (its modules' keys) must load into resnet.py's
ResNet with strict=True and be close to the one resnet.py saves.

Both programs read the first 2,048 training images (the 640 the 20 steps
draw come from them) and the 300 test images they evaluate, not all 70,000
(tests/train/fashion_subset.py). The Python twin runs in a child
forked from this interpreter, which has imported torch (tests/pyfork.py).

Usage: resnet_vs_python.py --resnet PATH --script examples/resnet.py --data DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))  # tests/pyfork.py
sys.path.insert(0, os.path.join(HERE, "..", "train"))
from fashion_subset import subset_args  # noqa: E402
from pyfork import run_script  # noqa: E402

ARGS = ["--width", "4", "--batch", "32", "--steps", "20", "--test-images", "300", "--threads", "1", "--seed", "3"]
SUBSET = (2048, 300)  # training and test images read


def run(cmd):
    if cmd[0] == sys.executable:
        out = run_script(cmd[1], cmd[2:], text=True, timeout=600)
    else:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr}")
    losses = [float(m) for m in re.findall(r"batch \d+/\d+ loss ([0-9.]+)", out.stdout)]
    acc = float(re.search(r"^test_accuracy=([0-9.]+)", out.stdout, re.M).group(1))
    return losses, acc, out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--resnet", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    d = tempfile.mkdtemp()
    c_pt, p_pt = os.path.join(d, "c.pt"), os.path.join(d, "py.pt")
    data = subset_args(["--data", a.data], os.path.join(d, "data"), *SUBSET)
    c_loss, c_acc, c_out = run([a.resnet, *data, "--save", c_pt] + ARGS)
    p_loss, p_acc, p_out = run([sys.executable, a.script, *data, "--save", p_pt] + ARGS)
    if not c_loss or len(c_loss) != len(p_loss):
        sys.exit(f"loss lines differ:\nC:\n{c_out}\nPython:\n{p_out}")
    for i, (x, y) in enumerate(zip(c_loss, p_loss)):
        if abs(x - y) > 2e-3 * max(1.0, abs(y)):
            sys.exit(f"loss {i}: C {x} vs Python {y}\nC:\n{c_out}\nPython:\n{p_out}")
    if abs(c_acc - p_acc) > 0.01:
        sys.exit(f"test accuracy: C {c_acc} vs Python {p_acc}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.script)))
    from resnet import ResNet  # noqa: E402
    c_sd, p_sd = torch.load(c_pt), torch.load(p_pt)
    ResNet(int(ARGS[ARGS.index("--width") + 1])).load_state_dict(c_sd, strict=True)
    if list(c_sd) != list(p_sd):
        sys.exit(f"state-dict keys differ:\nC: {list(c_sd)}\nPython: {list(p_sd)}")
    diff = max((c_sd[k].double() - p_sd[k].double()).abs().max().item() for k in c_sd)
    shutil.rmtree(d)
    if diff > 1e-3:
        sys.exit(f"trained weights differ by {diff}")
    print(f"resnet C and Python agree: losses {c_loss} vs {p_loss}, accuracy {c_acc} vs {p_acc}, "
          f"{len(c_sd)} state-dict entries loaded strictly, weights {diff:.3g} apart")


if __name__ == "__main__":
    main()
