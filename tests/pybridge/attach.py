"""The bridge attached to a running Python: libctorch_python loaded by
ctypes into this interpreter (which has imported torch) starts in attach
mode, runs code in this very interpreter, and takes one of its tensors
without a copy.

Usage: attach.py LIBCTORCH_PYTHON LIBCTORCH
"""
import ctypes
import sys

import torch

P = ctypes.c_void_p


def main():
    bridge = ctypes.CDLL(sys.argv[1])  # CDLL: the GIL is released during calls
    core = ctypes.CDLL(sys.argv[2])
    bridge.ctorch_py_last_error.restype = ctypes.c_char_p
    started = ctypes.c_int(-1)
    rc = bridge.ctorch_py_start(ctypes.byref(started), None)
    assert rc == 0, bridge.ctorch_py_last_error()
    assert started.value == 0, "attached, not started"

    ns = P()
    src = b"import sys, torch\nmain = sys.modules['__main__']\nmain.seen = True\nmain.value = torch.arange(6.0)\n"
    bridge.ctorch_py_exec.argtypes = [ctypes.POINTER(P), ctypes.c_char_p, ctypes.c_char_p]
    assert bridge.ctorch_py_exec(ctypes.byref(ns), src, b"attached") == 0, bridge.ctorch_py_last_error()
    main = sys.modules["__main__"]
    assert main.seen is True  # the code ran in this interpreter

    value, t, ptr = P(), P(), P()
    bridge.ctorch_py_getattr.argtypes = [ctypes.POINTER(P), P, ctypes.c_char_p]
    bridge.ctorch_py_to_tensor.argtypes = [ctypes.POINTER(P), P]
    core.ctorch_tensor_data_ptr.argtypes = [ctypes.POINTER(P), P]
    assert bridge.ctorch_py_getattr(ctypes.byref(value), ns, b"main.value") == 0, bridge.ctorch_py_last_error()
    assert bridge.ctorch_py_to_tensor(ctypes.byref(t), value) == 0, bridge.ctorch_py_last_error()
    assert core.ctorch_tensor_data_ptr(ctypes.byref(ptr), t) == 0
    assert ptr.value == main.value.data_ptr(), (ptr.value, main.value.data_ptr())

    # A Python exception raised by code the bridge runs comes back as a status.
    bad = P()
    rc = bridge.ctorch_py_exec(ctypes.byref(bad), b"raise KeyError('nope')", b"bad")
    assert rc == 2, rc  # CTORCH_INDEX
    assert b"KeyError" in bridge.ctorch_py_last_error()

    core.ctorch_tensor_free.argtypes = [P]
    bridge.ctorch_py_object_free.argtypes = [P]
    core.ctorch_tensor_free(t)
    bridge.ctorch_py_object_free(value)
    bridge.ctorch_py_object_free(ns)
    print(f"attached to {sys.executable} (torch {torch.__version__}): exec, zero-copy tensor, exception status")


if __name__ == "__main__":
    main()
