"""Run by run_wheel.sh in a venv with the wheel installed (from a folder
outside the source tree): the binding loads the library inside its package
even with $CTORCH_LIB naming another, that library finds libtorch in the
torch package (TORCH_LIB_DIR, given), without importing torch's Python, and
after `import torch` both share one libtorch (a tensor's memory through
DLPack). Usage: python wheel_check.py VERSION TORCH_LIB_DIR"""
import os
import sys

version, torch_lib = sys.argv[1], os.path.realpath(sys.argv[2])
import ctorch  # noqa: E402

failures = []


def expect(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def mapped(name):
    """Paths of the loaded files called name (from /proc/self/maps)."""
    with open("/proc/self/maps") as f:
        return {os.path.realpath(line.split(None, 5)[5].strip()) for line in f
                if line.rstrip().endswith("/" + name)}


pkg = os.path.dirname(os.path.realpath(ctorch.__file__))
lib = os.path.realpath(ctorch._rt.LIB_PATH)
expect(ctorch.__version__ == version, f"ctorch.__version__ {ctorch.__version__} is the project's {version}")
expect(os.path.dirname(lib) == os.path.join(pkg, "lib"),
       f"the library {lib} is the package's own (CTORCH_LIB={os.environ.get('CTORCH_LIB')} ignored)")
expect("torch" not in sys.modules, "import ctorch did not import torch")
cpu = mapped("libtorch_cpu.so")
expect(cpu == {os.path.join(torch_lib, "libtorch_cpu.so")}, f"libtorch_cpu.so loaded from {cpu}, torch's is in {torch_lib}")
import torch  # noqa: E402
t = torch.zeros(3)
c = ctorch.from_torch(t)
c.add_(2.0)
expect(t.tolist() == [2.0, 2.0, 2.0], f"ctorch wrote into torch's tensor through DLPack: {t.tolist()}")
expect(len(mapped("libtorch_cpu.so")) == 1, "torch and ctorch share one libtorch_cpu.so")
sys.exit(1 if failures else 0)
