"""Loads a module traced from C (tests/models/test_trace.c) with Python's
torch.jit.load and checks it against outputs computed op by op in C.

    trace_check.py MODULE NAME KEYS CASE...
    CASE = IN.bin:d0,d1,...=OUT.bin:d0,d1,...   (raw little-endian float32)

NAME is the expected original_name, KEYS the comma-separated state_dict keys
in order. Exits non-zero (with the reason) on any mismatch."""
import sys

import torch


def raw(spec):
    path, shape = spec.split(":")
    with open(path, "rb") as f:
        data = bytearray(f.read())
    return torch.frombuffer(data, dtype=torch.float32).reshape([int(d) for d in shape.split(",")])


def main():
    path, name, keys = sys.argv[1:4]
    m = torch.jit.load(path)
    if m.original_name != name:
        sys.exit(f"original_name {m.original_name!r}, wanted {name!r}")
    got_keys = list(m.state_dict().keys())
    if got_keys != keys.split(","):
        sys.exit(f"state_dict keys {got_keys}, wanted {keys}")
    m.eval()  # the traced module has nn.Module's training flag, submodules included
    if m.training or any(sub.training for sub in m.modules()):
        sys.exit("eval() left a module training")
    worst = 0.0
    for case in sys.argv[4:]:
        x_spec, y_spec = case.split("=")
        x, y = raw(x_spec), raw(y_spec)
        with torch.no_grad():
            out = m(x)
        if out.shape != y.shape:
            sys.exit(f"output shape {tuple(out.shape)}, wanted {tuple(y.shape)}")
        worst = max(worst, (out - y).abs().max().item())
    print(f"torch {torch.__version__}: {len(sys.argv) - 4} cases, max |python - c| = {worst:.3g}")
    if worst > 1e-5:
        sys.exit("outputs differ")


main()
