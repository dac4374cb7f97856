"""ctorch from Python, through ctypes only (no compiled extension).

Exchanges tensors with PyTorch zero-copy through DLPack capsules:

    import torch, ctorch
    t = ctorch.from_torch(torch.arange(6.0))   # ctorch.Tensor sharing x's memory
    x = ctorch.to_torch(t)                     # torch.Tensor sharing t's memory

and reads/writes checkpoints with ctorch's C functions (torch.save format).
The library is found through $CTORCH_LIB (a path), else
ctypes.util.find_library("ctorch"), else "libctorch.so.0". torch is imported
only by the functions that need it.

Bool: torch 1.13's DLPack (0.6) has no bool code. ctorch exchanges bool
as code 6 (kDLBool of DLPack >= 0.8); this module passes it to and from
torch as a uint8 view of the same memory, so it stays zero-copy.
"""
import ctypes
import ctypes.util
import os

__all__ = ["CtorchError", "Tensor", "lib", "to_torch", "from_torch", "to_dlpack_capsule", "save", "load", "save_dict", "load_dict"]

# ---- the library ---------------------------------------------------------------


def _load_library():
    path = os.environ.get("CTORCH_LIB") or ctypes.util.find_library("ctorch") or "libctorch.so.0"
    return ctypes.CDLL(path)


lib = _load_library()

_c_tensor = ctypes.c_void_p
_p_tensor = ctypes.POINTER(ctypes.c_void_p)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DLDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DLDeleter)]

BOOL_CODE = 6  # CTORCH_DLPACK_BOOL_CODE
_KDL_UINT = 1

# ctorch_dtype values (stable ABI, see ctorch.h).
DTYPES = {
    1: "bool", 2: "uint8", 3: "int8", 4: "int16", 5: "int32", 6: "int64", 7: "float16", 8: "bfloat16",
    9: "float32", 10: "float64", 11: "complex32", 12: "complex64", 13: "complex128",
}

_sz = ctypes.c_size_t
_SIGNATURES = {
    "ctorch_last_error": ([], ctypes.c_char_p),
    "ctorch_status_name": ([ctypes.c_int], ctypes.c_char_p),
    "ctorch_tensor_free": ([_c_tensor], None),
    "ctorch_tensor_ref": ([_p_tensor, _c_tensor], ctypes.c_int),
    "ctorch_tensor_numel": ([ctypes.POINTER(ctypes.c_int64), _c_tensor], ctypes.c_int),
    "ctorch_tensor_dim": ([ctypes.POINTER(ctypes.c_int64), _c_tensor], ctypes.c_int),
    "ctorch_tensor_sizes": ([ctypes.POINTER(ctypes.c_int64), _sz, _c_tensor], ctypes.c_int),
    "ctorch_tensor_strides": ([ctypes.POINTER(ctypes.c_int64), _sz, _c_tensor], ctypes.c_int),
    "ctorch_tensor_dtype": ([ctypes.POINTER(ctypes.c_int), _c_tensor], ctypes.c_int),
    "ctorch_dtype_size": ([ctypes.POINTER(_sz), ctypes.c_int], ctypes.c_int),
    "ctorch_tensor_data_ptr": ([ctypes.POINTER(ctypes.c_void_p), _c_tensor], ctypes.c_int),
    "ctorch_tensor_requires_grad": ([ctypes.POINTER(ctypes.c_int), _c_tensor], ctypes.c_int),
    "ctorch_tensor_copy_to": ([ctypes.c_void_p, _sz, _c_tensor], ctypes.c_int),
    "ctorch_to_dlpack": ([ctypes.POINTER(ctypes.POINTER(DLManagedTensor)), _c_tensor], ctypes.c_int),
    "ctorch_from_dlpack": ([_p_tensor, ctypes.POINTER(DLManagedTensor)], ctypes.c_int),
    "ctorch_save": ([ctypes.c_char_p, _c_tensor], ctypes.c_int),
    "ctorch_load": ([_p_tensor, ctypes.c_char_p], ctypes.c_int),
    "ctorch_save_dict": ([ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), _p_tensor, _sz], ctypes.c_int),
    "ctorch_load_dict": ([ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p], ctypes.c_int),
    "ctorch_tensor_dict_size": ([ctypes.POINTER(_sz), ctypes.c_void_p], ctypes.c_int),
    "ctorch_tensor_dict_key": ([ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p, _sz], ctypes.c_int),
    "ctorch_tensor_dict_get": ([_p_tensor, ctypes.c_void_p, _sz], ctypes.c_int),
    "ctorch_tensor_dict_free": ([ctypes.c_void_p], None),
}
for _name, (_args, _res) in _SIGNATURES.items():
    _f = getattr(lib, _name)
    _f.argtypes = _args
    _f.restype = _res


class CtorchError(RuntimeError):
    """A ctorch call failed; .status is the ctorch_status, .name its name."""

    def __init__(self, status, message):
        self.status = status
        self.name = lib.ctorch_status_name(status).decode()
        super().__init__("%s: %s" % (self.name, message))


def _check(status):
    if status != 0:
        raise CtorchError(status, lib.ctorch_last_error().decode(errors="replace"))


# ---- tensors -----------------------------------------------------------------------


class Tensor:
    """Owns one ctorch_tensor handle; frees it when collected (or on free())."""

    __slots__ = ("_h", "__weakref__")

    def __init__(self, handle):
        if not handle:
            raise ValueError("NULL ctorch_tensor handle")
        self._h = handle

    @property
    def handle(self):
        """The borrowed C handle (an int), valid while this object lives."""
        if self._h is None:
            raise ValueError("tensor was freed")
        return self._h

    def free(self):
        h, self._h = self._h, None
        if h and lib is not None:
            lib.ctorch_tensor_free(h)

    def __del__(self):
        try:
            self.free()
        except Exception:  # interpreter shutdown
            pass

    def numel(self):
        n = ctypes.c_int64()
        _check(lib.ctorch_tensor_numel(ctypes.byref(n), self.handle))
        return n.value

    def dim(self):
        n = ctypes.c_int64()
        _check(lib.ctorch_tensor_dim(ctypes.byref(n), self.handle))
        return n.value

    @property
    def shape(self):
        d = self.dim()
        out = (ctypes.c_int64 * max(d, 1))()
        _check(lib.ctorch_tensor_sizes(out, d, self.handle))
        return tuple(out[:d])

    def strides(self):
        d = self.dim()
        out = (ctypes.c_int64 * max(d, 1))()
        _check(lib.ctorch_tensor_strides(out, d, self.handle))
        return tuple(out[:d])

    @property
    def dtype(self):
        """The dtype's name, e.g. "float32"."""
        d = ctypes.c_int()
        _check(lib.ctorch_tensor_dtype(ctypes.byref(d), self.handle))
        return DTYPES.get(d.value, str(d.value))

    def element_size(self):
        d = ctypes.c_int()
        _check(lib.ctorch_tensor_dtype(ctypes.byref(d), self.handle))
        n = ctypes.c_size_t()
        _check(lib.ctorch_dtype_size(ctypes.byref(n), d.value))
        return n.value

    def data_ptr(self):
        p = ctypes.c_void_p()
        _check(lib.ctorch_tensor_data_ptr(ctypes.byref(p), self.handle))
        return p.value or 0

    def requires_grad(self):
        r = ctypes.c_int()
        _check(lib.ctorch_tensor_requires_grad(ctypes.byref(r), self.handle))
        return bool(r.value)

    def tobytes(self):
        """The elements in row-major order (a copy, via ctorch_tensor_copy_to)."""
        n = self.numel() * self.element_size()
        buf = ctypes.create_string_buffer(max(n, 1))
        _check(lib.ctorch_tensor_copy_to(buf, n, self.handle))
        return buf.raw[:n]

    def __repr__(self):
        if self._h is None:
            return "ctorch.Tensor(freed)"
        return "ctorch.Tensor(shape=%s, dtype=%s)" % (self.shape, self.dtype)


def _handle(t):
    return t.handle if isinstance(t, Tensor) else t


# ---- DLPack capsules ----------------------------------------------------------------
# Own prototypes (not ctypes.pythonapi's shared attributes, which other code
# may reconfigure). PYFUNCTYPE keeps the GIL, as the C API requires.
_api = ctypes.pythonapi
_PyCapsule_New = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", _api))
_PyCapsule_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_PyCapsule_SetName = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_SetName", _api))
# The destructor gets the dying capsule as a raw pointer: wrapping it in a
# py_object would resurrect it (refcount 0 -> 1 -> 0, a second dealloc).
_PyCapsule_IsValid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_PyCapsule_GetPointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))

_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_CapsuleDestructor
def _capsule_destructor(capsule):
    # A consumer renames the capsule "used_dltensor" and owns the tensor; a
    # capsule still called "dltensor" was never consumed: free it here.
    if _PyCapsule_IsValid_raw(capsule, b"dltensor"):
        p = _PyCapsule_GetPointer_raw(capsule, b"dltensor")
        m = ctypes.cast(p, ctypes.POINTER(DLManagedTensor))
        if m.contents.deleter:
            m.contents.deleter(m)


_capsule_destructor_ptr = ctypes.cast(_capsule_destructor, ctypes.c_void_p)


# The exchange hot path avoids ctypes structure access and casts (each costs
# about a microsecond): raw addresses in, one byte poked for the bool code.
_to_dlpack_raw = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)(
    ("ctorch_to_dlpack", lib))
_from_dlpack_raw = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)(
    ("ctorch_from_dlpack", lib))
_CODE_OFFSET = DLManagedTensor.dl_tensor.offset + DLTensor.dtype.offset + DLDataType.code.offset
_u8_at = ctypes.c_uint8.from_address
_torch = None


def _torch_modules():
    global _torch
    if _torch is None:
        import torch
        import torch.utils.dlpack

        _torch = (torch, torch.utils.dlpack.from_dlpack, torch.utils.dlpack.to_dlpack)
    return _torch


def _export_capsule(t):
    m = ctypes.c_void_p()
    status = _to_dlpack_raw(ctypes.byref(m), _handle(t))
    if status:
        _check(status)
    code = _u8_at(m.value + _CODE_OFFSET)
    is_bool = code.value == BOOL_CODE
    if is_bool:
        code.value = _KDL_UINT
    cap = _PyCapsule_New(m.value, b"dltensor", _capsule_destructor_ptr)
    return cap, is_bool


def to_dlpack_capsule(t):
    """A "dltensor" PyCapsule exporting t (a Tensor or handle; borrowed) zero-copy.

    Bool tensors are announced as uint8 (torch 1.13 knows no bool code).
    An unconsumed capsule frees its DLManagedTensor when collected.
    """
    return _export_capsule(t)[0]


def to_torch(t):
    """torch.Tensor sharing the memory of t (a ctorch Tensor or handle; borrowed)."""
    torch, from_dlpack, _ = _torch_modules()
    cap, is_bool = _export_capsule(t)
    x = from_dlpack(cap)
    return x.view(torch.bool) if is_bool else x


def from_torch(x):
    """New ctorch Tensor sharing the memory of torch.Tensor x (no copy).

    The data stays alive until both x and the returned Tensor are gone.
    Autograd history is not carried over (like torch.utils.dlpack).
    """
    torch, _, to_dlpack = _torch_modules()
    is_bool = x.dtype is torch.bool
    src = x.detach() if x.requires_grad else x
    if is_bool:
        src = src.view(torch.uint8)
    cap = to_dlpack(src)
    m = _PyCapsule_GetPointer(cap, b"dltensor")
    if is_bool:
        _u8_at(m + _CODE_OFFSET).value = BOOL_CODE
    # Mark it consumed before the handover so no path frees it twice; undo on
    # failure, when torch's capsule destructor must still free it.
    _PyCapsule_SetName(cap, b"used_dltensor")
    out = ctypes.c_void_p()
    status = _from_dlpack_raw(ctypes.byref(out), m)
    if status:
        _PyCapsule_SetName(cap, b"dltensor")
        _check(status)
    return Tensor(out.value)


# ---- checkpoints -------------------------------------------------------------------


def _path(p):
    return os.fsencode(p)


def save(path, t):
    """torch.save-compatible file holding one tensor (atomic write)."""
    _check(lib.ctorch_save(_path(path), _handle(t)))


def load(path):
    """New Tensor from a file holding one tensor."""
    out = ctypes.c_void_p()
    _check(lib.ctorch_load(ctypes.byref(out), _path(path)))
    return Tensor(out.value)


def save_dict(path, tensors):
    """torch.save-compatible dict[str, Tensor] (a state dict) from a mapping name -> Tensor."""
    items = list(tensors.items())
    names = (ctypes.c_char_p * max(len(items), 1))(*[k.encode() for k, _ in items])
    handles = (ctypes.c_void_p * max(len(items), 1))(*[_handle(v) for _, v in items])
    _check(lib.ctorch_save_dict(_path(path), names, handles, len(items)))


def load_dict(path):
    """dict name -> new Tensor from a torch.save'd dict/OrderedDict of tensors."""
    d = ctypes.c_void_p()
    _check(lib.ctorch_load_dict(ctypes.byref(d), _path(path)))
    try:
        n = ctypes.c_size_t()
        _check(lib.ctorch_tensor_dict_size(ctypes.byref(n), d))
        out = {}
        for i in range(n.value):
            k = ctypes.c_char_p()
            _check(lib.ctorch_tensor_dict_key(ctypes.byref(k), d, i))
            h = ctypes.c_void_p()
            _check(lib.ctorch_tensor_dict_get(ctypes.byref(h), d, i))
            out[k.value.decode()] = Tensor(h.value)
        return out
    finally:
        lib.ctorch_tensor_dict_free(d)
