"""The one way a Python-run test imports an optional reference package
(safetensors, tensorboard, onnxruntime, scikit-learn, torchvision,
transformers, numpy, ...): need("safetensors.torch") returns the module, or,
when this Python lacks it (a user's own venv through CTORCH_TORCH), prints
"skipped: <why>" and exits 77, which ctest reports as skipped (SKIP_RETURN_CODE
77, tests/run_if.sh), never as passed and never as a ModuleNotFoundError.

A test imports this file from the tests folder:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from optional_deps import need
    safetensors_torch = need("safetensors.torch")
tests/optional_deps_check.py runs every test that calls need() with each
package it needs hidden, and fails unless each reports itself skipped.
"""
import importlib
import sys

# PyPI names of the import names that differ, for the message.
PIP_NAMES = {"sklearn": "scikit-learn", "PIL": "pillow", "onnxruntime": "onnxruntime"}

# Import names the check treats as optional (what need() is for).
OPTIONAL = ("safetensors", "tensorboard", "onnxruntime", "onnx", "sklearn", "torchvision", "transformers", "numpy",
            "PIL", "scipy")


def need(module, why=""):
    """module (dotted) imported, or a visible skip (exit 77) naming the
    package, this Python and the error."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = module.split(".")[0]
        pip = PIP_NAMES.get(top, top)
        print(f"skipped: {sys.executable} has no {pip} ({type(e).__name__}: {e}); "
              f"{why + '; ' if why else ''}install it with pip install {pip} (scripts/deps and scripts/torch-env do)")
        sys.stdout.flush()
        sys.exit(77)
