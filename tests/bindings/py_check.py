"""What the Python binding's checks against PyTorch share (py_nn_test.py,
py_shortcuts_test.py, py_seeds_ints_test.py): they run in one process with
the torch whose libtorch ctorch was built against, so

- torch_or_skip(): that torch, or exit 77 (skipped) where this Python has
  none or the tree says the binding cannot run here (CTORCH_BINDING_SKIP,
  e.g. a sanitizer build), before ctorch is imported;
- expect(cond, what): a failed check is printed and counted, and the script
  goes on to the next one, so one run reports every difference;
- finish(what): one summary line, exit 1 when any check failed.
"""
import os
import sys

failures = []


def torch_or_skip():
    try:
        import torch
    except ImportError:
        print("skipped: this Python has no torch")
        sys.exit(77)
    if os.environ.get("CTORCH_BINDING_SKIP"):
        print(f"skipped: {os.environ['CTORCH_BINDING_SKIP']}")
        sys.exit(77)
    return torch


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def finish(what):
    print(f"{what}: {'all checks passed' if not failures else f'{len(failures)} failed'}")
    sys.exit(1 if failures else 0)
