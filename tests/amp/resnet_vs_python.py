"""examples/resnet.c against its twin examples/resnet.py: a short run of each
from the same seed must print the same losses and test accuracy (same
initialisation, data order, batch norm and SGD), within float tolerance.

Usage: resnet_vs_python.py --resnet PATH --script examples/resnet.py --data DIR
"""
import argparse
import re
import subprocess
import sys

ARGS = ["--width", "4", "--batch", "32", "--steps", "20", "--test-images", "300", "--threads", "1", "--seed", "3"]


def run(cmd):
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
    c_loss, c_acc, c_out = run([a.resnet, "--data", a.data] + ARGS)
    p_loss, p_acc, p_out = run([sys.executable, a.script, "--data", a.data] + ARGS)
    if not c_loss or len(c_loss) != len(p_loss):
        sys.exit(f"loss lines differ:\nC:\n{c_out}\nPython:\n{p_out}")
    for i, (x, y) in enumerate(zip(c_loss, p_loss)):
        if abs(x - y) > 2e-3 * max(1.0, abs(y)):
            sys.exit(f"loss {i}: C {x} vs Python {y}\nC:\n{c_out}\nPython:\n{p_out}")
    if abs(c_acc - p_acc) > 0.01:
        sys.exit(f"test accuracy: C {c_acc} vs Python {p_acc}")
    print(f"resnet C and Python agree: losses {c_loss} vs {p_loss}, accuracy {c_acc} vs {p_acc}")


if __name__ == "__main__":
    main()
