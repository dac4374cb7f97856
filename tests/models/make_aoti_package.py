"""Makes the AOTInductor package tests/models/test_aoti.c loads, and the eager
outputs it compares with.

    make_aoti_package.py OUTDIR

Writes OUTDIR/mlp.pt2 (model "model", CPU), OUTDIR/{x,b}.bin (the inputs) and
OUTDIR/{y0,y1}.bin (the eager outputs), raw little-endian float32. The model is
as small as a useful test allows: inductor compiles C++ at export time (about
20 s with a warm inductor cache on 2 cores, a minute or two cold). OUTDIR/stamp
records the torch version and this script's hash; when they match, the files
already there are kept (a re-run of the test in the same build skips the
compile)."""
import hashlib
import os
import sys
import time

import torch


class TwoInTwoOut(torch.nn.Module):
    """(fc2(tanh(fc1(x))) + b, tanh(fc1(x))): two inputs and two outputs, so
    that both tensor arrays of ctorch_aoti_package_run are exercised."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x, b):
        h = torch.tanh(self.fc1(x))
        return self.fc2(h) + b, h


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(__file__, "rb") as f:
        stamp = f"{torch.__version__} {hashlib.sha256(f.read()).hexdigest()}\n"
    files = [os.path.join(out, n) for n in ("mlp.pt2", "x.bin", "b.bin", "y0.bin", "y1.bin")]
    try:
        with open(os.path.join(out, "stamp")) as f:
            if f.read() == stamp and all(os.path.exists(p) for p in files):
                print(f"torch {torch.__version__}: reusing {files[0]} (same torch, same script)")
                return
        os.remove(os.path.join(out, "stamp"))  # rewritten last, once every file is complete
    except OSError:
        pass
    torch.manual_seed(0)
    model = TwoInTwoOut().eval()
    x, b = torch.randn(2, 4), torch.randn(3)
    t0 = time.monotonic()
    with torch.no_grad():
        ep = torch.export.export(model, (x, b))
        y0, y1 = model(x, b)
    path = torch._inductor.aoti_compile_and_package(
        ep, package_path=os.path.join(out, "mlp.pt2"),
        inductor_configs={"aot_inductor.metadata": {"ctorch_test": "two_in_two_out"}})
    for name, t in (("x", x), ("b", b), ("y0", y0), ("y1", y1)):
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(bytes(t.detach().contiguous().view(torch.uint8).flatten().tolist()))
    with open(os.path.join(out, "stamp"), "w") as f:
        f.write(stamp)
    print(f"torch {torch.__version__}: exported and compiled {path} in {time.monotonic() - t0:.1f} s")


main()
