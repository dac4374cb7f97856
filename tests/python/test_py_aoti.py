"""An AOTInductor package loaded and run from Python through ctorch:
ctorch.capi.aoti_package_load("model.pt2", None) failed with
"undefined symbol: aoti_torch_dtype_float32" because ctypes loaded libctorch
RTLD_LOCAL: a model library compiled without linking libtorch
(inductor_configs aot_inductor.link_libtorch=False, a standalone model: its
only NEEDED are the C/C++ runtime's) finds libtorch's aoti_torch_* shim
functions only in the global scope, where a C program linked against
libctorch has them. The binding now loads the library RTLD_GLOBAL
(_rt._DLOPEN_MODE). (A model linked against libtorch, inductor's default,
resolves them through its own NEEDED and loads either way.)

The package (a Linear + tanh, and a second output, so both tensor arrays of
the run are exercised) is compiled by this Python's torch into
CTORCH_AOTI_PY_DIR by tests/models/make_aoti_package.py --standalone (kept
between runs, and copied from the user's cache on a fresh clone: its
docstring says when). The load runs in a child process that imports ctorch and not torch,
as a user's program may: an `import torch` would load libtorch globally and
hide the bug. A second child loads the library the former way (RTLD_LOCAL)
and must fail with the undefined symbol: the check that this test sees what
it fixes.

Skipped (77) where libtorch has no AOTInductor loader (before 2.6: Debian's
1.13), saying so. Run by ctest with CTORCH_TORCH_PYTHON, CTORCH_LIB and
PYTHONPATH set.
"""
import os
import subprocess
import sys
import tempfile

import ctorch

if not ctorch.capi.aoti_available():
    print(f"skipped: libtorch {ctorch.torch_version} has no AOTInductor package loader (2.6 or newer has)")
    sys.exit(77)

OUT = os.environ.get("CTORCH_AOTI_PY_DIR") or tempfile.mkdtemp(prefix="ctorch_aoti_py_")

# The package's maker, shared with the C tests (its --standalone variant).
MAKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "make_aoti_package.py")

CHILD = r"""
import os, struct, sys
local = sys.argv[2] == "local"
if local:
    os.RTLD_GLOBAL = 0  # the binding's former dlopen mode: RTLD_LOCAL (ctypes adds RTLD_NOW)
import ctorch
assert "torch" not in sys.modules, "the child must not import torch"
d = sys.argv[1]

def floats(name, shape):
    with open(os.path.join(d, name), "rb") as f:
        return ctorch.from_buffer(f.read(), shape, ctorch.float32)

try:
    pkg = ctorch.capi.aoti_package_load(os.path.join(d, "mlp.pt2"), None)
except ctorch.CtorchError as e:
    print("LOAD FAILED:", e)
    sys.exit(3)
if local:
    print("LOADED with RTLD_LOCAL")
    sys.exit(0)
outs = ctorch.capi.aoti_package_run(pkg, [floats("x.bin", [2, 4]), floats("b.bin", [3])])
want = [floats("y0.bin", [2, 3]), floats("y1.bin", [2, 8])]
assert len(outs) == 2, len(outs)
diff = max((o - w).abs().max().item() for o, w in zip(outs, want))
print(f"outputs {[o.shape for o in outs]}, max |aoti - eager| = {diff:.3g}")
assert [o.shape for o in outs] == [(2, 3), (2, 8)]
assert diff < 1e-5, diff
print("metadata ctorch_test =", ctorch.capi.aoti_package_metadata_find(pkg, "ctorch_test"))
assert ctorch.capi.aoti_package_metadata_find(pkg, "ctorch_test") == "py_aoti"
pkg.dispose()
"""


def child(mode):
    return subprocess.run([sys.executable, "-c", CHILD, OUT, mode], capture_output=True, text=True, timeout=300)


def main():
    os.makedirs(OUT, exist_ok=True)
    r = subprocess.run([sys.executable, MAKER, OUT, "--standalone"], capture_output=True, text=True, timeout=900)
    print(r.stdout.strip())
    if r.returncode:
        print(r.stderr[-4000:])
        sys.exit("FAIL: could not make the package")
    r = child("global")
    print(r.stdout.strip())
    if r.returncode:
        print(r.stderr[-4000:])
        sys.exit("FAIL: the package did not load and run from Python (library loaded RTLD_GLOBAL)")
    r = child("local")
    print("control, RTLD_LOCAL:", r.stdout.strip())
    if r.returncode != 3 or "undefined symbol" not in r.stdout:
        print(r.stderr[-4000:])
        sys.exit("FAIL: with RTLD_LOCAL the load was expected to fail with an undefined symbol (the bug this "
                 "test guards): this test no longer shows that RTLD_GLOBAL is needed")
    print("an AOTInductor package loads and runs from Python through ctorch, equal to eager")


main()
