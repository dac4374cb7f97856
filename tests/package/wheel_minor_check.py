"""Run by run_wheel.sh (part 4) in a venv of another CPython minor than the
torch venv's, with the wheel installed: the binding loads its own library,
which finds libtorch in that venv's torch (TORCH_LIB_DIR, given) without
torch's Python (whose extension is for the other minor), and a forward and
backward give the values worked out by hand.
Usage: python wheel_minor_check.py TORCH_LIB_DIR"""
import os
import sys

import ctorch

torch_lib = os.path.realpath(sys.argv[1])
pkg = os.path.dirname(os.path.realpath(ctorch.__file__))
lib = os.path.realpath(ctorch._rt.LIB_PATH)
assert os.path.dirname(lib) == os.path.join(pkg, "lib"), f"the library {lib} is not the package's"
assert "torch" not in sys.modules, "import ctorch imported torch"
with open("/proc/self/maps") as f:
    cpu = {os.path.realpath(line.split(None, 5)[5].strip()) for line in f
           if line.rstrip().endswith("/libtorch_cpu.so")}
assert cpu == {os.path.join(torch_lib, "libtorch_cpu.so")}, f"libtorch_cpu.so from {cpu}, not {torch_lib}"
a = ctorch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
loss = (a @ a).relu().sum()  # a @ a = [[7, 10], [15, 22]]
loss.backward()  # d/da sum(a a) = J a^T + a^T J: row sums of a across, column sums down
print(f"CPython {sys.version.split()[0]}: sum(relu(a @ a)) = {loss.item()}, grad {a.grad.tolist()} "
      f"(libtorch {ctorch.torch_version} from {torch_lib})")
assert loss.item() == 54.0, loss.item()
assert a.grad.tolist() == [[7.0, 11.0], [9.0, 13.0]], a.grad.tolist()
