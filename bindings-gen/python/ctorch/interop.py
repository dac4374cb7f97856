"""Interop: DLPack exchange with PyTorch (zero-copy), checkpoints in
torch.save's format, and raw handles. Everything here is re-exported at the
top level (ctorch.from_torch, ctorch.save, ...).

    import torch, ctorch
    t = ctorch.from_torch(torch.arange(6.0))   # ctorch.Tensor sharing the memory
    x = ctorch.to_torch(t)                     # torch.Tensor sharing the memory
    ctorch.save(t, "t.pt"); ctorch.load("t.pt")

This module is also what the repository's former hand-written module
python/ctorch.py became (docs/interop-tensors.md, "Python"): the same functions, with
the same behaviour. Differences for its callers: save/save_dict take
torch.save's order (object, path) and still accept the old (path, object);
Tensor.free() is Tensor.dispose(); a handle a C call returned is adopted with
from_handle(h) instead of Tensor(h); Tensor.dtype is a ctorch.dtype
(ctorch.float32, whose str() ends in the old name), requires_grad is a
property and strides() is stride(), as in PyTorch; CtorchError.name is
.status_name.

Bool: torch 1.13's DLPack (0.6) has no bool code. ctorch exchanges bool as
code 6 (kDLBool of DLPack >= 0.8); to_torch/from_torch pass it to and from
torch as a uint8 view of the same memory, so it stays zero-copy. torch is
imported only by the functions that need it.
"""
import ctypes
import os
import sys
from collections import OrderedDict
from collections.abc import Mapping

from . import _api as _gen
from ._rt import Tensor, CtorchError, check, wrap, byref, c_void_p, raw_function

__all__ = ["from_torch", "to_torch", "to_dlpack_capsule", "from_dlpack", "from_handle", "save", "load", "save_dict", "load_dict",
           "save_safetensors", "load_safetensors"]

# ---- DLPack structs (DLPack's ABI, the same in 0.6 and 1.x) ---------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


BOOL_CODE = 6  # CTORCH_DLPACK_BOOL_CODE
_KDL_UINT = 1
# Where the hot path reads and writes: dl_tensor.dtype.code, and the deleter.
_CODE_OFFSET = DLManagedTensor.dl_tensor.offset + DLTensor.dtype.offset + DLDataType.code.offset
_DELETER_OFFSET = DLManagedTensor.deleter.offset

# ---- capsules -----------------------------------------------------------------------------
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
_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule):
    # A consumer renames the capsule "used_dltensor" and owns the tensor; a
    # capsule still called "dltensor" was never consumed: free it here.
    if _PyCapsule_IsValid_raw(capsule, b"dltensor"):
        p = _PyCapsule_GetPointer_raw(capsule, b"dltensor")
        fn = ctypes.c_void_p.from_address(p + _DELETER_OFFSET).value
        if fn:
            _Deleter(fn)(p)


_capsule_destructor_ptr = ctypes.cast(_capsule_destructor, ctypes.c_void_p).value
_PyCapsule_GetDestructor = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(("PyCapsule_GetDestructor", _api))


def _torch_capsule_destructor(to_dlpack, empty):
    """torch's own destructor of "dltensor" capsules (C: frees the tensor of
    a capsule still named "dltensor", nothing once a consumer renamed it),
    the same rule as _capsule_destructor. The capsules _export makes use it
    once torch is loaded: that saves a Python callback (a ctypes callback:
    GIL, frame, argument conversion) each time a consumed capsule dies.
    None if torch gives none."""
    return _PyCapsule_GetDestructor(to_dlpack(empty(0))) or None




def _capsule_fields():
    """Offsets of a PyCapsule's pointer and name fields inside the object
    (CPython's PyCapsule: PyObject_HEAD, pointer, name, ...), found on a
    capsule made for the purpose; None where they are not found (another
    interpreter or layout: from_torch then calls the C API instead)."""
    try:
        name = b"ctorch.probe"
        name_at = ctypes.cast(ctypes.c_char_p(name), ctypes.c_void_p).value
        ptr = 0x5EED0C7042C0
        cap = _PyCapsule_New(ptr, name, None)
        words = (ctypes.c_void_p * (sys.getsizeof(cap) // ctypes.sizeof(ctypes.c_void_p))).from_address(id(cap))
        i = [w for w in words].index(ptr)
        if words[i + 1] == name_at and _PyCapsule_GetPointer(cap, name) == ptr:
            return i * ctypes.sizeof(ctypes.c_void_p), (i + 1) * ctypes.sizeof(ctypes.c_void_p)
    except (ValueError, IndexError, TypeError, AttributeError):
        pass
    return None


_CAPSULE_FIELDS = _capsule_fields()
_USED_NAME = b"used_dltensor"  # lives as long as the module: capsules renamed in place point to it
_USED_NAME_AT = ctypes.cast(ctypes.c_char_p(_USED_NAME), ctypes.c_void_p).value

# The hot path: raw addresses in, one byte read (and poked for bool), no
# ctypes structure access and no argtypes conversions (each costs a good
# fraction of a microsecond): the C functions without argtypes, handles as
# c_void_p, the capsule's fields read and renamed in place.
_to_dlpack = raw_function("ctorch_to_dlpack")
_from_dlpack = raw_function("ctorch_from_dlpack")
_u8_at = ctypes.c_uint8.from_address
_vp_at = ctypes.c_void_p.from_address
_new = object.__new__
_torch = None


def _torch_modules():
    global _torch, _destructor
    if _torch is None:
        import torch
        import torch.utils.dlpack

        to_dlpack = torch.utils.dlpack.to_dlpack
        _destructor = _torch_capsule_destructor(to_dlpack, torch.empty) or _capsule_destructor_ptr
        # The converter torch.utils.dlpack.from_dlpack ends in for a capsule
        # (1.13 and 2.x): called directly it skips that function's Python
        # (a hasattr that fails, i.e. an AttributeError raised and caught,
        # and on 2.x argument checks), about a third of a hand-over's cost.
        from_dlpack = getattr(torch._C, "_from_dlpack", None) or torch.utils.dlpack.from_dlpack
        _torch = (torch.bool, torch.uint8, from_dlpack, to_dlpack, _knows_bool(torch, from_dlpack))
    return _torch


def _knows_bool(torch, from_dlpack):
    """Whether this torch reads DLPack's bool code (2.x; 1.13 does not):
    then bool tensors cross as they are, without the uint8 view and without
    touching the dtype byte. Asked of a capsule ctorch made: a torch that
    refuses the code leaves it unconsumed, and its destructor frees it."""
    from . import _api
    from ._dispatch import E
    t = _api.tensor_from_data(b"\x01", [1], E["CTORCH_BOOL"])
    m = c_void_p()
    check(_to_dlpack(byref(m), t._h))
    cap = _PyCapsule_New(m, b"dltensor", _capsule_destructor_ptr)
    try:
        ok = from_dlpack(cap).dtype is torch.bool
    except Exception:  # noqa: BLE001 (any refusal means: no)
        ok = False
    del cap  # dies here, with no exception pending, so its destructor can free it
    return ok


_destructor = _capsule_destructor_ptr  # torch's once torch is loaded (_torch_modules)


def _handle(t):
    """The handle (a c_void_p) of a Tensor, or of a raw handle (an int) as python/ctorch.py accepted."""
    try:
        return t._h
    except AttributeError:
        if isinstance(t, int) and t:
            return c_void_p(t)
        raise TypeError(f"expected a ctorch.Tensor, got {type(t).__name__}") from None


def _export(t):
    m = c_void_p()
    st = _to_dlpack(byref(m), _handle(t))
    if st:
        check(st)
    p = m.value
    code = _u8_at(p + _CODE_OFFSET)
    if code.value == BOOL_CODE:
        code.value = _KDL_UINT  # torch 1.13 knows no bool code: a uint8 view of the same bytes
        return _PyCapsule_New(p, b"dltensor", _destructor), True
    return _PyCapsule_New(p, b"dltensor", _destructor), False


def to_dlpack_capsule(t):
    """A "dltensor" PyCapsule exporting t (a Tensor or handle; borrowed) zero-copy.

    Bool tensors are announced as uint8 (torch 1.13 knows no bool code). An
    unconsumed capsule frees its DLManagedTensor when collected."""
    return _export(t)[0]


def to_torch(t):
    """torch.Tensor sharing the memory of t (a ctorch Tensor or handle; borrowed)."""
    t_bool, _, from_dlpack, _, native_bool = _torch or _torch_modules()
    if native_bool:  # bool crosses as bool: nothing to read or change in the struct
        m = c_void_p()
        st = _to_dlpack(byref(m), _handle(t))
        if st:
            check(st)
        return from_dlpack(_PyCapsule_New(m, b"dltensor", _destructor))
    cap, is_bool = _export(t)
    x = from_dlpack(cap)
    return x.view(t_bool) if is_bool else x


def from_torch(x):
    """New ctorch Tensor sharing the memory of torch.Tensor x (no copy).

    The data stays alive until both x and the returned Tensor are gone.
    Autograd history is not carried over (like torch.utils.dlpack)."""
    t_bool, t_uint8, _, to_dlpack, native_bool = _torch or _torch_modules()
    is_bool = not native_bool and x.dtype is t_bool
    src = x.detach() if x.requires_grad else x
    if is_bool:
        src = src.view(t_uint8)
    cap = to_dlpack(src)
    out = c_void_p()
    if _CAPSULE_FIELDS:
        # torch just made cap, named "dltensor": its pointer field, as a
        # c_void_p view passed as it is, and its name field, set in place.
        m = _vp_at(id(cap) + _CAPSULE_FIELDS[0])
        if is_bool:
            _u8_at(m.value + _CODE_OFFSET).value = BOOL_CODE
        name = _vp_at(id(cap) + _CAPSULE_FIELDS[1])
        was = name.value
        # Marked consumed before the handover so no path frees it twice;
        # undone on failure, when torch's capsule destructor must free it.
        name.value = _USED_NAME_AT
        st = _from_dlpack(byref(out), m)
        if st:
            name.value = was
            check(st)
    else:
        m = _PyCapsule_GetPointer(cap, b"dltensor")
        if is_bool:
            _u8_at(m + _CODE_OFFSET).value = BOOL_CODE
        _PyCapsule_SetName(cap, _USED_NAME)
        st = _from_dlpack(byref(out), c_void_p(m))
        if st:
            _PyCapsule_SetName(cap, b"dltensor")
            check(st)
    t = _new(Tensor)
    t._h = out  # the c_void_p itself is the handle (see _rt.Tensor)
    return t


def from_handle(h):
    """A new Tensor that owns handle h (an int or c_void_p a C call returned:
    it is freed with the Tensor). None for NULL."""
    if isinstance(h, c_void_p):
        h = h.value
    return wrap(h)


# ---- NumPy's array interface over an export ----------------------------------------------
# (DLPack code, bits) -> NumPy typestr (little-endian: ctorch's platforms
# are). bfloat16 (code 4) and what else NumPy lacks are absent.
_NP_TYPESTR = {(0, 8): "|i1", (0, 16): "<i2", (0, 32): "<i4", (0, 64): "<i8", (1, 8): "|u1", (1, 16): "<u2",
               (1, 32): "<u4", (1, 64): "<u8", (2, 16): "<f2", (2, 32): "<f4", (2, 64): "<f8", (5, 64): "<c8",
               (5, 128): "<c16", (BOOL_CODE, 8): "|b1"}
# An empty tensor's data pointer is NULL, which NumPy refuses (it then falls
# back to an object array): a valid address of no use instead, never read.
_EMPTY = ctypes.create_string_buffer(16)
_EMPTY_AT = ctypes.addressof(_EMPTY)


class _NumpyView:
    """What np.asarray(t) views (the array's .base): NumPy's
    __array_interface__ over a DLManagedTensor ctorch exported, which holds
    a reference to t's storage until this object dies (then its deleter
    runs), so the array outlives t, even t.dispose()."""
    __slots__ = ("__array_interface__", "_m")

    def __del__(self):
        m = self._m
        if m:
            _Deleter(_vp_at(m + _DELETER_OFFSET).value)(m)


def numpy_view(t):
    """A _NumpyView of CPU tensor t (no copy), or None when ctorch refuses
    to export it (conj/neg bit, a device, a layout) or NumPy has no such
    type: one C call instead of one per property."""
    m = c_void_p()
    if _to_dlpack(byref(m), t._h):
        return None
    v = _new(_NumpyView)
    v._m = p = m.value  # from here on v frees the export, whatever follows
    dl = DLTensor.from_address(p)
    typ = _NP_TYPESTR.get((dl.dtype.code, dl.dtype.bits))
    if typ is None or dl.device.device_type != 1:
        return None
    n, size = dl.ndim, dl.dtype.bits // 8
    shape = tuple(dl.shape[:n])
    v.__array_interface__ = {"version": 3, "shape": shape, "typestr": typ,
                             "data": (((dl.data or 0) + dl.byte_offset) or _EMPTY_AT, False),
                             "strides": tuple(x * size for x in dl.strides[:n]) if dl.strides else None}
    return v


# DLPack's device types (DLDeviceType) of the devices ctorch exports.
_DL_DEVICE = {"cpu": 1, "cuda": 2}


def _dlpack_device(self):
    """(DLPack device type, index): (1, 0) for the CPU, (2, i) for cuda:i."""
    from . import _api
    d = _api.tensor_device(self)
    if d.type not in _DL_DEVICE:
        raise BufferError(f"__dlpack_device__: DLPack exchange covers CPU and CUDA tensors, not {d.type}")
    return _DL_DEVICE[d.type], max(d.index, 0)


def _dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """The array API's DLPack export (np.from_dlpack(t), torch.from_dlpack(t)):
    a legacy "dltensor" capsule sharing t's memory (bool as DLPack's bool,
    code 6), whatever max_version asks (the standard lets a producer answer
    the legacy form). stream: the consumer's CUDA stream; ctorch does not
    order its CUDA work on another stream here, so synchronise before
    handing over CUDA tensors. copy=True exports a copy; dl_device other
    than this tensor's -> BufferError."""
    if dl_device is not None and tuple(dl_device) != _dlpack_device(self):
        raise BufferError(f"__dlpack__: the tensor is on {_dlpack_device(self)}, dl_device {tuple(dl_device)} asked "
                          "(move it with .to() first)")
    t = self.clone() if copy else self
    m = c_void_p()
    st = _to_dlpack(byref(m), _handle(t))
    if st:
        check(st)
    return _PyCapsule_New(m, b"dltensor", _capsule_destructor_ptr)


Tensor.__dlpack__ = _dlpack
Tensor.__dlpack_device__ = _dlpack_device


def from_dlpack(obj):
    """New ctorch Tensor sharing the memory of obj (no copy), as
    torch.from_dlpack: anything with __dlpack__ (a torch.Tensor, a NumPy
    array, a ctorch.Tensor, CuPy, JAX ...) or a "dltensor" capsule (consumed).
    A torch.Tensor goes through from_torch (bool too, on torch 1.13). The
    producer's refusals pass through (NumPy refuses read-only arrays with
    BufferError); ctorch's (an unknown dtype code, a device it cannot use)
    raise CtorchError and leave the capsule to its producer's destructor."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return from_torch(obj)
    if type(obj).__name__ == "PyCapsule":
        cap = obj
    elif hasattr(obj, "__dlpack__"):
        cap = obj.__dlpack__()
    else:
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ (torch.Tensor, numpy.ndarray, ...) or a "
                        f"DLPack capsule, got {type(obj).__name__}")
    m = _PyCapsule_GetPointer(cap, b"dltensor")  # ValueError for a capsule of another name (used or versioned)
    _PyCapsule_SetName(cap, _USED_NAME)  # ctorch owns it from here on, if the import succeeds
    out = c_void_p()
    st = _from_dlpack(byref(out), c_void_p(m))
    if st:
        _PyCapsule_SetName(cap, b"dltensor")  # still the producer's: its destructor frees it
        check(st)
    t = _new(Tensor)
    t._h = out
    return t

# ---- safetensors (the generated functions) --------------------------------------------------


def save_safetensors(d, path, metadata=None):
    """Writes a mapping {name: Tensor} as a safetensors file (byte-identical to
    safetensors.torch.save_file's for at most one metadata entry)."""
    names = list(d)
    meta = dict(metadata or {})
    _gen.safetensors_save(path, names, [d[k] for k in names], list(meta), list(meta.values()))


def load_safetensors(path, metadata=False):
    """{name: Tensor} from a safetensors file (CPU tensors share the file's
    mapping); with metadata=True, ({name: Tensor}, {key: value})."""
    d = _gen.safetensors_load(path, None)
    try:
        out = {d.key(i): d.get(i) for i in range(d.size())}
        if not metadata:
            return out
        n = _gen.tensor_dict_metadata_size(d)
        return out, {_gen.tensor_dict_metadata_key(d, i): _gen.tensor_dict_metadata_value(d, i) for i in range(n)}
    finally:
        d.dispose()


# ---- checkpoints --------------------------------------------------------------------------


def _is_path(p):
    return isinstance(p, (str, bytes, os.PathLike))


class _Borrowed:
    """A raw handle (an int a C call returned) lent to a generated function."""
    __slots__ = ("_h",)

    def __init__(self, h):
        self._h = h


def _obj(t):
    return t if hasattr(t, "_h") else _Borrowed(_handle(t))


_SAVE_TAKES = ("ctorch.save takes what torch.save takes for weights: a Tensor, or a mapping of str -> Tensor "
               "(a state dict: model.state_dict(), a dict or OrderedDict; torch.Tensor and NumPy values are "
               "taken too)")


def _state_dict_items(d):
    """(names, tensors) of a state dict, values converted zero-copy where
    they are not ctorch Tensors; TypeError naming what is accepted otherwise."""
    names, tensors = [], []
    for k, v in d.items():
        if not isinstance(k, str):
            raise TypeError(f"{_SAVE_TAKES}; this one has a key of type {type(k).__name__} ({k!r})")
        if not isinstance(v, Tensor):
            if not hasattr(v, "__dlpack__"):
                raise TypeError(f"{_SAVE_TAKES}; entry {k!r} is of type {type(v).__name__} (an optimizer's "
                                "state: ctorch.capi.optimizer_save(opt, path); other objects: torch.save)")
            v = from_dlpack(v)
        names.append(k)
        tensors.append(v)
    return names, tensors


def _is_file(f):
    return hasattr(f, "write") or hasattr(f, "read")


def _dict_handle(names, tensors):
    d = _gen.tensor_dict_new()
    for k, t in zip(names, tensors):
        d.set(k, t)
    return d


def save(obj, path):
    """torch.save for weights: writes a Tensor, or a state dict (a mapping of
    str -> Tensor, e.g. model.state_dict()), in torch.save's zip format with
    only what torch.load(weights_only=True) allows (atomic write). path may
    be a writable file object (io.BytesIO, an open file), as torch.save
    takes: the same bytes are written to it. Anything else -> TypeError
    saying what is taken. save(path, obj), python/ctorch.py's order, is
    accepted too."""
    if (_is_path(obj) or _is_file(obj)) and not (_is_path(path) or _is_file(path)):
        obj, path = path, obj
    if hasattr(path, "write"):
        if isinstance(obj, Mapping):
            d = _dict_handle(*_state_dict_items(obj))
            try:
                path.write(_gen.tensor_dict_save_to_buffer(d))
            finally:
                d.dispose()
            return
        if isinstance(obj, Tensor) or isinstance(obj, int):
            path.write(_gen.save_to_buffer(_obj(obj)))
        elif hasattr(obj, "__dlpack__"):
            path.write(_gen.save_to_buffer(from_dlpack(obj)))
        else:
            raise TypeError(f"{_SAVE_TAKES}; got {type(obj).__name__}")
        return
    if isinstance(obj, Mapping):
        names, tensors = _state_dict_items(obj)
        _gen.save_dict(path, names, tensors)
    elif isinstance(obj, Tensor) or isinstance(obj, int):
        _gen.save(path, _obj(obj))
    elif hasattr(obj, "__dlpack__"):
        _gen.save(path, from_dlpack(obj))
    else:
        raise TypeError(f"{_SAVE_TAKES}; got {type(obj).__name__}")


def load(path):
    """torch.load for weights: what torch.save (or ctorch.save) wrote of a
    tensor, or of a dict/OrderedDict of str -> tensor (a state dict, given
    back as an OrderedDict in file order, as model.state_dict() is), with
    the tensors on the CPU. path may be a readable file object (read to its
    end), as torch.load takes (bytes stay a path, as before). Other contents
    -> CtorchError (TYPE); the reader runs no pickled code."""
    if hasattr(path, "read"):
        data = bytes(path.read())
        try:
            return _gen.load_from_buffer(data)
        except CtorchError as e:
            if e.status_name != "CTORCH_TYPE":
                raise
        d = _gen.load_dict_from_buffer(data)
        try:
            return OrderedDict((d.key(i), d.get(i)) for i in range(d.size()))
        finally:
            d.dispose()
    try:
        return _gen.load(path)
    except CtorchError as e:
        if e.status_name != "CTORCH_TYPE":
            raise
    return OrderedDict(_load_dict_items(path))


# ---- TorchScript modules --------------------------------------------------------------------


def jit_save(m, f):
    """torch.jit.save(m, f) for a TorchScript module (ctorch.capi.Module, as
    ctorch.jit.load returns): f is a path or a writable file object
    (io.BytesIO, an open file); the bytes are those torch.jit.load reads."""
    if hasattr(f, "write"):
        f.write(_gen.module_save_to_buffer(m))
    else:
        _gen.module_save(m, f)


def jit_load(f, map_location=None, flags=0):
    """torch.jit.load(f, map_location): a TorchScript module (ctorch.capi.Module)
    from a path, bytes or a readable file object (read to its end), with
    every check ctorch_module_load makes before any of its code runs.
    flags: an OR of the CTORCH_MODULE_LOAD_ALLOW_* bits (0, the default, for
    files from strangers: code that touches files or other processes, loops
    at load time or uses built-in classes is refused with CtorchError)."""
    if hasattr(f, "read"):
        f = f.read()
    if isinstance(f, (bytes, bytearray, memoryview)):
        return _gen.module_load_from_buffer(bytes(f), map_location, flags)
    return _gen.module_load_ex(f, map_location, flags)


# ---- NumPy files ----------------------------------------------------------------------------


def save_npy(t, file):
    """numpy.save(file, t): the same bytes; file is a path or a writable file object."""
    if hasattr(file, "write"):
        file.write(_gen.npy_save_to_buffer(_obj(t)))
    else:
        _gen.npy_save(file, _obj(t))


def load_npy(file):
    """A Tensor from a .npy file (path, readable file object or bytes), as numpy.load reads it."""
    if hasattr(file, "read"):
        file = file.read()
    if isinstance(file, (bytes, bytearray, memoryview)):
        return _gen.npy_load_from_buffer(bytes(file))
    return _gen.npy_load(file)


def save_npz(file, *args, **tensors):
    """numpy.savez(file, *args, **tensors): arrays named arr_0, arr_1, ... and by keyword."""
    named = {f"arr_{i}": a for i, a in enumerate(args)}
    named.update(tensors)
    d = _dict_handle(list(named), [_obj(v) for v in named.values()])
    try:
        if hasattr(file, "write"):
            file.write(_gen.npz_save_to_buffer(d))
        else:
            _gen.npz_save(file, d)
    finally:
        d.dispose()


def load_npz(file):
    """{name: Tensor} from a .npz archive (numpy.savez or savez_compressed), in archive order."""
    if hasattr(file, "read"):
        file = file.read()
    d = _gen.npz_load_from_buffer(bytes(file)) if isinstance(file, (bytes, bytearray, memoryview)) else _gen.npz_load(file)
    try:
        return {d.key(i): d.get(i) for i in range(d.size())}
    finally:
        d.dispose()


def save_dict(d, path):
    """Saves a mapping {name: Tensor} as a state dict torch.load reads.
    save_dict(path, d), python/ctorch.py's order, is accepted too."""
    if _is_path(d) and not _is_path(path):
        d, path = path, d
    if not isinstance(d, Mapping):
        raise TypeError(f"save_dict takes a mapping of str -> Tensor (a state dict), got {type(d).__name__}")
    names, tensors = _state_dict_items(d)
    _gen.save_dict(path, names, tensors)


def _load_dict_items(path):
    d = _gen.load_dict(path)
    try:
        return [(d.key(i), d.get(i)) for i in range(d.size())]
    finally:
        d.dispose()


def load_dict(path):
    """{name: Tensor} from a torch.save'd dict/OrderedDict of tensors, in file order."""
    return dict(_load_dict_items(path))
