"""Loads bytes that C's ctorch_module_save_to_buffer wrote with
torch.jit.load(io.BytesIO(...)), as a Python service would, and compares
forward(x) with refs.pt's "forward" (Python's own output of the module C
loaded and saved again). For tests/test_jit_load.c.

Usage: check_jit_bytes.py BYTES REFS. Exit 0 when they agree (to 1e-6);
else prints why and exits 1.
"""
import io
import sys
import warnings

import torch


def main(bytes_path, refs_path):
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.jit")
    with open(bytes_path, "rb") as f:
        data = f.read()
    m = torch.jit.load(io.BytesIO(data))
    refs = torch.load(refs_path)
    if m.training:
        print("the module came back in training mode (it was saved after eval())")
        return 1
    with torch.no_grad():
        got = m(refs["x"])
    diff = (got - refs["forward"]).abs().max().item()
    if got.shape != refs["forward"].shape or diff > 1e-6:
        print(f"forward differs: shape {tuple(got.shape)} vs {tuple(refs['forward'].shape)}, max |diff| {diff}")
        return 1
    # The exported methods travelled too (the code, not only the weights).
    s, _, ints, name = m.combine([refs["xs0"], refs["xs1"], refs["xs2"]], {"alpha": 0.5, "beta": 3.0}, 7, "abc", True)
    if ints != [3, 14] or name != "abc!" or not torch.equal(s, refs["combine_sum"]):
        print("combine differs from Python's")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
