"""scikit-build-core dynamic-metadata provider (pyproject.toml): the wheel's
dependency on the torch release it is built against, read from the build
environment's torch: 2.15.0 gives dependencies = ["torch==2.15.*"].
libctorch's generated functions follow that torch's operator schemas, and its
SONAME names that major.minor (libctorch.so.0-torch2.15), so the wheel must
not be installed beside another torch. cmake/ctorch_wheel.cmake builds against
the same Python's torch (CTORCH_TORCH = the Python running the build).

requires-python is that torch's own (torch 2.15.0: >=3.11, the CPythons it has
wheels for), not ctorch's floor alone (3.9, the binding's own code): a wheel
that pip installs where its torch cannot be installed helps nobody."""
import json
import re
import subprocess
import sys

# torch's version and Requires-Python as the building Python sees them with
# -E: pip's build isolation hides the environment it installs into (the one
# whose torch an sdist is built against) through PYTHONPATH (docs/packages.md).
_ASK = ("import json; from importlib.metadata import metadata; m = metadata('torch'); "
        "print(json.dumps([m['Version'], m.get('Requires-Python') or '']))")


def torch_metadata():
    r = subprocess.run([sys.executable, "-E", "-c", _ASK], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(
            f"ctorch's wheel is built against the torch of the environment, and {sys.executable} has none "
            f"({r.stderr.strip().splitlines()[-1] if r.stderr.strip() else 'no torch'}): "
            "pip install torch first (or build where torch is installed: scripts/package wheel)")
    return json.loads(r.stdout)


def dynamic_metadata(settings, project):
    v, spec = torch_metadata()
    m = re.match(r"(\d+)\.(\d+)", v)
    if not m:
        raise RuntimeError(f"ctorch: cannot read torch's version {v!r}")
    return {"dependencies": [f"torch=={m.group(1)}.{m.group(2)}.*"], "requires-python": requires_python(spec)}


OWN_FLOOR = (3, 9)  # what the binding's Python code itself needs


def requires_python(spec):
    """torch's Requires-Python (spec) where it is at least ctorch's own
    floor, else ctorch's floor."""
    spec = spec.strip()
    m = re.fullmatch(r">=\s*(\d+)\.(\d+)(?:\.\d+)*", spec)
    if m and (int(m.group(1)), int(m.group(2))) >= OWN_FLOOR:
        return f">={m.group(1)}.{m.group(2)}"
    return ">=%d.%d" % OWN_FLOOR
