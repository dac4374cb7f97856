#!/usr/bin/env python3
"""examples/vae.c against the same program written with a binding's classes
(examples/node/vae.js, examples/go/vae), same seed and options:

- the output line for line (the per-image loss at steps 1, 50, 100, ..., the
  test loss, the last line's losses to 9 significant digits; the header, the
  "saved ..." lines and the throughput aside);
- bit-identical weights: the state dicts both saved (torch.save's format,
  written by the same ctorch function) are equal byte for byte;
- the PNG of samples: the same pixels (each file decoded, whatever filters
  and compression its writer chose);
- the model learns: the loss falls and the test loss is below --max-test-loss.

The binding's program runs first: its exit 77 (no node/koffi, no Go, no
data) is this test's. Usage:
  vae_twins.py --c VAE --work DIR [--max-test-loss L] -- TWIN_CMD... -- ARGS...
(ARGS go to both programs; --samples and --save are added here)
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from vae_vs_python import png_decode  # noqa: E402  (decodes any 8-bit PNG: every filter)


def run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode == 77:
        print(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else f"skipped: {what}")
        sys.exit(77)
    if p.returncode != 0:
        print(p.stdout)
        sys.exit(f"FAIL: {what} exited with {p.returncode}")
    return p.stdout


def compared(out):
    """The lines both programs must print alike (no header, paths or throughput)."""
    keep = [re.sub(r" images_per_s=\S+", "", ln) for ln in out.splitlines()
            if ln.strip() and not ln.startswith(("VAE (", "saved ", "go build"))]
    return keep


def main():
    argv = sys.argv[1:]
    try:
        i = argv.index("--")
        j = argv.index("--", i + 1)
    except ValueError:
        sys.exit(__doc__)
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--max-test-loss", type=float, default=350.0)
    a = ap.parse_args(argv[:i])
    twin, args = argv[i + 1:j], argv[j + 1:]
    os.makedirs(a.work, exist_ok=True)
    files = {k: {e: os.path.join(a.work, f"{k}.{e}") for e in ("png", "pt")} for k in ("twin", "c")}
    for f in files.values():
        for path in f.values():
            if os.path.exists(path):
                os.remove(path)

    out_twin = run(twin + args + ["--samples", files["twin"]["png"], "--save", files["twin"]["pt"]], "the twin")
    out_c = run([a.c] + args + ["--samples", files["c"]["png"], "--save", files["c"]["pt"], "--logdir", ""], "vae.c")
    print(out_twin.rstrip())
    lt, lc = compared(out_twin), compared(out_c)
    if lt != lc:
        for x, y in zip(lt + [""] * len(lc), lc + [""] * len(lt)):
            print(f"{'  ' if x == y else '!='} twin: {x:<60} C: {y}")
        sys.exit("FAIL: the twin's output differs from vae.c's")
    print(f"output: {len(lc)} lines equal to vae.c's")

    with open(files["twin"]["pt"], "rb") as f1, open(files["c"]["pt"], "rb") as f2:
        wt, wc = f1.read(), f2.read()
    if wt != wc:
        sys.exit(f"FAIL: the saved weights differ from vae.c's ({len(wt)} and {len(wc)} bytes)")
    print(f"weights: the state dicts are equal byte for byte ({len(wc)} bytes)")

    with open(files["twin"]["png"], "rb") as f1, open(files["c"]["png"], "rb") as f2:
        pt, pc = png_decode(f1.read()), png_decode(f2.read())
    if pt != pc:
        sys.exit(f"FAIL: the samples differ from vae.c's (w, h, channels {pt[:3]} and {pc[:3]})")
    print(f"samples: {pc[0]}x{pc[1]} pixels equal to vae.c's")

    m = dict(re.findall(r"(\w+)=(\S+)", out_c.strip().splitlines()[-1]))
    first, last, test = float(m["initial_loss"]), float(m["final_loss"]), float(m["test_loss"])
    if not (last < first and test < a.max_test_loss):
        sys.exit(f"FAIL: did not learn: loss {first} -> {last}, test loss {test} (bound {a.max_test_loss})")
    print(f"learns: loss {first} -> {last}, test loss {test} < {a.max_test_loss}")


if __name__ == "__main__":
    main()
