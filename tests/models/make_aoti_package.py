"""Makes the AOTInductor package tests/models/test_aoti.c loads, and the eager
outputs it compares with; with --standalone, the one tests/python/test_py_aoti.py
loads from Python.

    make_aoti_package.py OUTDIR [--standalone]

Writes OUTDIR/mlp.pt2 (model "model", CPU), OUTDIR/{x,b}.bin (the inputs) and
OUTDIR/{y0,y1}.bin (the eager outputs), raw little-endian float32. The model is
as small as a useful test allows: inductor compiles C++ at export time (about
15 s with a warm inductor cache on 2 cores, a minute or two cold). The package
is linked against libtorch (inductor's default) and carries the metadata
ctorch_test=two_in_two_out; with --standalone it is not
(aot_inductor.link_libtorch=False: its library finds libtorch's aoti_torch_*
functions only in the global scope) and carries ctorch_test=py_aoti.

Inductor's precompiled headers are off (aot_inductor.precompile_headers): their
key hashes the preprocessed header, whose line markers name a fresh temporary
folder, so every process wrote two new ones (about 300 MB, in
$TMPDIR/torchinductor_$USER/precompiled_headers, never removed: 7.3 GB after
two days of test runs, and a CI run that failed for a full disk) and used them
once; without them the compile took 16.5 s instead of 27.6.

OUTDIR/stamp records the torch version, this script's hash and the variant;
when they match, the files already there are kept (a re-run of the test in
the same build skips the compile). The same files are kept in the user's
cache too, ${CTORCH_CACHE:-~/.cache/ctorch}/aoti-test/KEY/ with KEY the hash
of the stamp and this CPU's flags (inductor compiles for the CPU it runs on),
so the other tests that load this model, and fresh clones, copy them instead
of compiling again (12-20 s per test on 2.x). What the tests
check, loading and running the package, is done every time."""
import hashlib
import os
import shutil
import sys
import tempfile
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
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["--standalone"]):
        sys.exit("usage: make_aoti_package.py OUTDIR [--standalone]")
    out, standalone = sys.argv[1], sys.argv[2:] == ["--standalone"]
    os.makedirs(out, exist_ok=True)
    with open(__file__, "rb") as f:
        variant = "standalone" if standalone else "linked"
        stamp = f"{torch.__version__} {hashlib.sha256(f.read()).hexdigest()} {variant}\n"
    files = [os.path.join(out, n) for n in ("mlp.pt2", "x.bin", "b.bin", "y0.bin", "y1.bin")]
    try:
        with open(os.path.join(out, "stamp")) as f:
            if f.read() == stamp and all(os.path.exists(p) for p in files):
                print(f"torch {torch.__version__}: reusing {files[0]} (same torch, same script)")
                return
        os.remove(os.path.join(out, "stamp"))  # rewritten last, once every file is complete
    except OSError:
        pass
    cached = cache_dir(stamp)
    if all(os.path.exists(os.path.join(cached, os.path.basename(p))) for p in files):
        for p in files:
            shutil.copyfile(os.path.join(cached, os.path.basename(p)), p)
        with open(os.path.join(out, "stamp"), "w") as f:
            f.write(stamp)
        print(f"torch {torch.__version__}: copied {files[0]} from {cached} (same torch, script and CPU)")
        return
    torch.manual_seed(0)
    model = TwoInTwoOut().eval()
    x, b = torch.randn(2, 4), torch.randn(3)
    t0 = time.monotonic()
    with torch.no_grad():
        ep = torch.export.export(model, (x, b))
        y0, y1 = model(x, b)
    path = torch._inductor.aoti_compile_and_package(
        ep, package_path=os.path.join(out, "mlp.pt2"),
        inductor_configs=configs(standalone))
    for name, t in (("x", x), ("b", b), ("y0", y0), ("y1", y1)):
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(bytes(t.detach().contiguous().view(torch.uint8).flatten().tolist()))
    with open(os.path.join(out, "stamp"), "w") as f:
        f.write(stamp)
    print(f"torch {torch.__version__}: exported and compiled {path} in {time.monotonic() - t0:.1f} s")
    keep(files, cached)


def configs(standalone):
    """Inductor's options for the package (the module docstring says why)."""
    c = {"aot_inductor.metadata": {"ctorch_test": "py_aoti" if standalone else "two_in_two_out"},
         "aot_inductor.precompile_headers": False}
    if standalone:
        c["aot_inductor.link_libtorch"] = False
    return c


def cache_dir(stamp):
    """This model's folder in the user's cache (made by keep)."""
    root = os.environ.get("CTORCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ctorch")
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l for l in f if l.startswith("flags")), "")
    except OSError:
        pass
    key = hashlib.sha256((stamp + flags).encode()).hexdigest()[:20]
    return os.path.join(root, "aoti-test", key)


def keep(files, cached):
    """Copies the files into the cache as one rename, so that a test running
    beside this one sees all of them or none."""
    try:
        os.makedirs(os.path.dirname(cached), exist_ok=True)
        tmp = tempfile.mkdtemp(dir=os.path.dirname(cached))
        for p in files:
            shutil.copyfile(p, os.path.join(tmp, os.path.basename(p)))
        try:
            os.rename(tmp, cached)
        except OSError:  # another test kept them first
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as e:
        print(f"(not kept in the cache: {e})")


main()
