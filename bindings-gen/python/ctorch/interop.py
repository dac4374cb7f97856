"""Interop: DLPack exchange with PyTorch (zero-copy) and checkpoints in
torch.save's format (ctorch_save / ctorch_load / ctorch_save_dict /
ctorch_load_dict). Same behaviour as the repository's python/ctorch.py."""
import ctypes
import os

from . import _capi
from ._rt import Tensor, check, lib, wrap, byref, c_void_p, tensor_array

BOOL_CODE = 6  # CTORCH_DLPACK_BOOL_CODE (api.json "macros")
_KDL_UINT = 1
# Offset of dl_tensor.dtype.code in a DLManagedTensor (DLPack's ABI: data
# pointer, DLDevice {int32, int32}, int32 ndim, then DLDataType {code, ...}).
_CODE_OFFSET = 20

_api = ctypes.pythonapi
_PyCapsule_New = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", _api))
_PyCapsule_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_PyCapsule_SetName = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_SetName", _api))
# The destructor gets the dying capsule as a raw pointer (a py_object would resurrect it).
_PyCapsule_IsValid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_PyCapsule_GetPointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# offsetof(DLManagedTensor, deleter): DLTensor is 48 bytes, then manager_ctx.
_DELETER_OFFSET = 56


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule):
    # A consumer renames the capsule "used_dltensor"; one still called
    # "dltensor" was never consumed: free its tensor here.
    if _PyCapsule_IsValid_raw(capsule, b"dltensor"):
        p = _PyCapsule_GetPointer_raw(capsule, b"dltensor")
        fn = ctypes.c_void_p.from_address(p + _DELETER_OFFSET).value
        if fn:
            _Deleter(fn)(p)


_capsule_destructor_ptr = ctypes.cast(_capsule_destructor, ctypes.c_void_p)
_u8_at = ctypes.c_uint8.from_address


def _export(t):
    m = c_void_p()
    check(lib.ctorch_to_dlpack(byref(m), t._h))
    code = _u8_at(m.value + _CODE_OFFSET)
    is_bool = code.value == BOOL_CODE
    if is_bool:
        code.value = _KDL_UINT  # torch 1.13 knows no bool code: a uint8 view of the same bytes
    return _PyCapsule_New(m.value, b"dltensor", _capsule_destructor_ptr), is_bool


def to_dlpack_capsule(t):
    """A "dltensor" PyCapsule exporting t zero-copy (bool announced as uint8)."""
    return _export(t)[0]


def to_torch(t):
    """torch.Tensor sharing t's memory."""
    import torch
    import torch.utils.dlpack
    cap, is_bool = _export(t)
    x = torch.utils.dlpack.from_dlpack(cap)
    return x.view(torch.bool) if is_bool else x


def from_torch(x):
    """New ctorch Tensor sharing the memory of torch.Tensor x (no copy, no autograd history)."""
    import torch
    import torch.utils.dlpack
    is_bool = x.dtype is torch.bool
    src = x.detach() if x.requires_grad else x
    if is_bool:
        src = src.view(torch.uint8)
    cap = torch.utils.dlpack.to_dlpack(src)
    m = _PyCapsule_GetPointer(cap, b"dltensor")
    if is_bool:
        _u8_at(m + _CODE_OFFSET).value = BOOL_CODE
    _PyCapsule_SetName(cap, b"used_dltensor")
    out = c_void_p()
    st = lib.ctorch_from_dlpack(byref(out), m)
    if st:
        _PyCapsule_SetName(cap, b"dltensor")
        check(st)
    return wrap(out.value)


Tensor.__dlpack__ = lambda self, stream=None: to_dlpack_capsule(self)
Tensor.__dlpack_device__ = lambda self: (1, 0)


def save(t, path):
    check(lib.ctorch_save(os.fsencode(path), t._h))


def load(path):
    h = c_void_p()
    check(lib.ctorch_load(byref(h), os.fsencode(path)))
    return wrap(h.value)


def save_dict(d, path):
    """Saves {name: Tensor} as a state dict torch.load reads."""
    names = list(d)
    arr, n = tensor_array([d[k] for k in names])
    keys = (ctypes.c_char_p * max(n, 1))(*[k.encode() for k in names])
    check(lib.ctorch_save_dict(os.fsencode(path), keys, arr, n))


def load_dict(path):
    """{name: Tensor} from a torch.save'd state dict, in file order."""
    h = c_void_p()
    check(lib.ctorch_load_dict(byref(h), os.fsencode(path)))
    try:
        n = ctypes.c_size_t()
        check(lib.ctorch_tensor_dict_size(byref(n), h.value))
        out = {}
        for i in range(n.value):
            k = ctypes.c_char_p()
            check(lib.ctorch_tensor_dict_key(byref(k), h.value, i))
            t = c_void_p()
            check(lib.ctorch_tensor_dict_get(byref(t), h.value, i))
            out[k.value.decode()] = wrap(t.value)
        return out
    finally:
        lib.ctorch_tensor_dict_free(h.value)
