"""Hand-written Tensor properties and conversions, tensor creation and
library-wide settings (installed on ctorch.Tensor / exported by __init__)."""
import array as _pyarray
import struct as _struct

from . import _api, _capi, _ops, _rt
from . import interop as _interop
from ._rt import Device, Tensor
from ._dispatch import E as _E
import builtins as _b

bool_, uint8, int8, int16, int32, int64 = (_E[k] for k in ("CTORCH_BOOL", "CTORCH_UINT8", "CTORCH_INT8",
                                                           "CTORCH_INT16", "CTORCH_INT32", "CTORCH_INT64"))
float16, float32, float64, complex64, complex128 = (_E[k] for k in ("CTORCH_FLOAT16", "CTORCH_FLOAT32",
                                                                    "CTORCH_FLOAT64", "CTORCH_COMPLEX64",
                                                                    "CTORCH_COMPLEX128"))

_FMT = {"CTORCH_BOOL": "?", "CTORCH_UINT8": "B", "CTORCH_INT8": "b", "CTORCH_INT16": "h", "CTORCH_INT32": "i",
        "CTORCH_INT64": "q", "CTORCH_FLOAT32": "f", "CTORCH_FLOAT64": "d", "CTORCH_FLOAT16": "e"}
_FMT_OF = {_E[k]: v for k, v in _FMT.items()}


# The C functions themselves are generated (_api, from api.json); what is
# written here is the Python face: properties, PyTorch's names and defaults,
# conversions to Python values.
_dim = _api.tensor_dim
_shape = _api.tensor_sizes
_strides = _api.tensor_strides
_dtype = _api.tensor_dtype
_bytes = _api.tensor_copy_to


def _size(self, d=None):
    s = _shape(self)
    return s if d is None else s[d]


def _tolist(self):
    fmt = _FMT_OF.get(_dtype(self))
    if fmt is None:
        return _tolist(self.to(float64 if _dtype(self) != complex64 else complex128)) \
            if _dtype(self) not in (complex64, complex128) else _complex_list(self)
    shape = _shape(self)
    raw = _bytes(self)
    flat = list(_struct.unpack(f"<{len(raw) // _struct.calcsize(fmt)}{fmt}", raw)) if raw else []

    def nest(off, dims):
        if not dims:
            return flat[off]
        step = 1
        for d in dims[1:]:
            step *= d
        return [nest(off + i * step, dims[1:]) for i in range(dims[0])]
    return nest(0, list(shape)) if shape else flat[0]


def _complex_list(self):
    raw = _bytes(self.to(complex128))
    vals = _struct.unpack(f"<{len(raw) // 8}d", raw)
    flat = [complex(vals[i], vals[i + 1]) for i in range(0, len(vals), 2)]
    return flat if len(_shape(self)) == 1 else flat


def _item(self):
    """The value of a one-element tensor as the Python number of its dtype."""
    dt = _dtype(self)
    if dt == bool_:
        return _api.tensor_item_bool(self)
    if dt in (int8, uint8, int16, int32, int64):
        return _api.tensor_item_int64(self)
    if dt in (complex64, complex128):
        return _complex_list(self.reshape([1]))[0]
    return _api.tensor_item_double(self)


# torch.set_printoptions' state for repr/str (None: PyTorch's default).
_PRINT = {"precision": None, "threshold": None, "edgeitems": None, "linewidth": None, "sci_mode": None}
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, float("inf"), 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """torch.set_printoptions: how repr/str print tensors (Python's format,
    ctorch_tensor_format). threshold=math.inf prints everything."""
    if profile is not None:
        _PRINT["precision"], _PRINT["threshold"], _PRINT["edgeitems"], _PRINT["linewidth"] = _PROFILES[profile]
    for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                 ("linewidth", linewidth)):
        if v is not None:
            _PRINT[k] = v
    _PRINT["sci_mode"] = sci_mode


def _print_arg(k):
    v = _PRINT[k]
    if v is None:
        return -1
    return 2**63 - 1 if v == float("inf") else int(v)


def _repr(self):
    if not self._h:
        return "ctorch.Tensor(<disposed>)"
    sci = _PRINT["sci_mode"]
    try:
        return _api.tensor_format(self, _print_arg("precision"), _print_arg("threshold"), _print_arg("edgeitems"),
                                  _print_arg("linewidth"), -1 if sci is None else int(bool(sci)))
    except _rt.CtorchError:  # sparse and quantized tensors: libtorch's own printing
        return _api.tensor_to_string(self)


def _to(self, *args, dtype=None, device=None):
    """t.to(dtype) / t.to(device) / t.to(device, dtype)."""
    for a in args:
        if isinstance(a, _rt.dtype):
            dtype = a
        elif isinstance(a, str) and isinstance(getattr(_ctorch(), a, None), _rt.dtype):
            raise TypeError(f"to(): {a!r} is a dtype's name, not a device: pass ctorch.{a}")
        else:
            device = a
    _dtype_arg(dtype, "to")
    t = self
    if device is not None:
        t = _api.tensor_to_device(t, device)
    if dtype is not None:
        t = _api.tensor_to_dtype(t, dtype)
    return t


def _requires_grad_(self, v=True):
    _api.tensor_set_requires_grad(self, v)
    return self


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    if retain_graph is None:
        retain_graph = create_graph  # PyTorch's default
    _api.tensor_backward(self, gradient, retain_graph, create_graph, inputs or None)


def _grad_fn(self):
    return _api.tensor_grad_fn_name(self) or None


# The dtypes NumPy has (what _numpy_refusal lets through; the array's own
# type comes from the DLPack export, interop.numpy_view).
_NP_DTYPES = {bool_, uint8, int8, int16, int32, int64, float16, float32, float64, complex64, complex128}


def _numpy_refusal(self, force=False):
    """None if NumPy may share this tensor's memory, else (exception type,
    message) as torch's Tensor.numpy() words them."""
    dt = _dtype(self)
    if dt not in _NP_DTYPES:
        name = str(dt).rpartition(".")[2]
        name = {"bfloat16": "BFloat16", "complex32": "ComplexHalf"}.get(name, name)  # torch's ScalarType names
        return TypeError, (f"Got unsupported ScalarType {name}: NumPy has no such type (convert with t.float() or "
                           "t.to(dtype) first)")
    if _api.tensor_layout(self) != _E["CTORCH_LAYOUT_STRIDED"]:
        return TypeError, f"can't convert a {_api.tensor_layout(self)} tensor to numpy (use t.to_dense() first)"
    if force:
        return None
    dev = _api.tensor_device(self)
    if dev.type != "cpu":
        return TypeError, (f"can't convert {dev.type} device type tensor to numpy. Use Tensor.cpu() to copy the "
                           "tensor to host memory first.")
    if _api.tensor_requires_grad(self):
        return RuntimeError, "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
    if _ops.is_conj(self):
        return RuntimeError, ("Can't call numpy() on Tensor that has conjugate bit set. Use "
                              "tensor.resolve_conj().numpy() instead.")
    if _ops.is_neg(self):
        return RuntimeError, ("Can't call numpy() on Tensor that has negative bit set. Use "
                              "tensor.resolve_neg().numpy() instead.")
    return None


def _view(self):
    """np.asarray over this tensor's memory, or torch's refusal: one export
    through DLPack (interop.numpy_view) does the work of the dtype, device,
    layout, conj/neg checks and of reading sizes, strides and the data
    pointer; the refusal's wording is worked out only when it fails."""
    import numpy as np
    if _api.tensor_requires_grad(self):
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
    v = _interop.numpy_view(self)
    if v is None:
        why = _numpy_refusal(self) or (TypeError, "ctorch cannot give NumPy this tensor (DLPack export refused)")
        raise why[0](why[1])
    return np.asarray(v)


def _numpy(self, force=False):
    """A NumPy array sharing this CPU tensor's memory (as torch's
    Tensor.numpy(): writes through either are seen by the other). Refused,
    as torch refuses, for a tensor on another device, one that requires
    grad, or one with the conjugate/negative bit set; force=True copies what
    must be copied (detached, resolved, on the CPU) instead."""
    if force:
        why = _numpy_refusal(self, force)
        if why:
            raise why[0](why[1])
        t = _api.tensor_detach(self)
        if _api.tensor_device(t).type != "cpu":
            t = _to(t, device="cpu")
        return _view(_ops.resolve_neg(_ops.resolve_conj(t)))
    return _view(self)


def _array(self, dtype=None, copy=None):
    """NumPy's protocol: np.asarray(t) / np.array(t). The array has the
    tensor's dtype and shares its memory (any strides) unless a copy is asked
    (copy=True, np.array's default) or a dtype conversion needs one; refusals
    as numpy()."""
    import numpy as np
    a = _view(self)
    if dtype is not None and np.dtype(dtype) != a.dtype:
        if copy is False:
            raise ValueError(f"converting {_dtype(self)} to {np.dtype(dtype)} needs a copy (copy=False)")
        return a.astype(dtype)
    return a.copy() if copy else a


def _getitem(self, idx):
    """Basic indexing: ints, slices, None, Ellipsis, and a Tensor index."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    t = self
    dim = 0
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    for i in idx:
        if i is Ellipsis:
            dim += _dim(t) - dim - (n_real - dim if n_real > dim else 0)
            n_real = 0
        elif i is None:
            t = _ops.unsqueeze(t, dim)
            dim += 1
        elif isinstance(i, _b.int):
            t = _ops.select(t, dim, i)
        elif isinstance(i, slice):
            start, stop, step = i.start, i.stop, i.step if i.step is not None else 1
            t = _ops.slice(t, dim, start, stop, step)
            dim += 1
        elif isinstance(i, Tensor):
            t = _ops.index(t, [None] * dim + [i])
            dim += 1
        else:
            raise TypeError(f"unsupported index {i!r}")
    return t


def _setitem(self, idx, value):
    target = _getitem(self, idx)
    if isinstance(value, Tensor):
        target.copy_(value)
    else:
        target.fill_(value)


for _name, _fn in {
        "dim": _dim, "size": _size, "stride": lambda self, d=None: _strides(self) if d is None else _strides(self)[d],
        "tolist": _tolist, "item": _item, "__repr__": _repr, "__str__": _repr, "to": _to, "numpy": _numpy,
        "__array__": _array,
        "backward": _backward, "detach": _api.tensor_detach, "requires_grad_": _requires_grad_,
        "numel": _api.tensor_numel, "element_size": lambda self: _api.dtype_size(_dtype(self)),
        "tobytes": _bytes, "is_contiguous": _api.tensor_is_contiguous, "data_ptr": _api.tensor_data_ptr,
        "retain_grad": _api.tensor_retain_grad,
        "__len__": lambda self: _shape(self)[0],
        "__iter__": lambda self: (self[i] for i in range(_shape(self)[0])),
        "__getitem__": _getitem, "__setitem__": _setitem,
        "__bool__": lambda self: _b.bool(_item(self)), "__float__": lambda self: _b.float(_item(self)),
        "__int__": lambda self: _b.int(_item(self)), "__index__": lambda self: _b.int(_item(self)),
        "cpu": lambda self: _to(self, device="cpu"), "float": lambda self: _to(self, float32),
        "double": lambda self: _to(self, float64), "long": lambda self: _to(self, int64),
        "bool": lambda self: _to(self, bool_), "int": lambda self: _to(self, int32),
}.items():
    setattr(Tensor, _name, _fn)
for _name, _prop in {
        "shape": property(_shape), "dtype": property(_dtype), "device": property(_api.tensor_device),
        "ndim": property(_dim), "requires_grad": property(_api.tensor_requires_grad, _api.tensor_set_requires_grad),
        "grad": property(_api.tensor_grad, _api.tensor_set_grad), "is_leaf": property(_api.tensor_is_leaf),
        "grad_fn": property(_grad_fn), "T": property(lambda self: _ops.permute(self, list(range(_dim(self)))[::-1])),
        "layout": property(_api.tensor_layout), "data": property(_api.tensor_detach),
}.items():
    setattr(Tensor, _name, _prop)


# ---- tensor creation -------------------------------------------------------------------


def _flatten(data):
    if isinstance(data, range):
        data = list(data)
    if isinstance(data, (list, tuple)):
        if not data:
            return [], [0]
        parts = [_flatten(x) for x in data]
        shape = parts[0][1]
        flat = []
        for p, s in parts:
            if s != shape:
                raise ValueError("ragged nested sequence")
            flat.extend(p)
        return flat, [len(data)] + shape
    if isinstance(data, Tensor):
        return _flatten(data.tolist())
    if isinstance(data, (bytearray, memoryview, _pyarray.array)):
        # Sequences of Python numbers, as torch.tensor reads them (the element
        # type decides the dtype as for a list: array('f') -> float32).
        return _flatten(memoryview(data).tolist())
    if isinstance(data, (bytes, str)) or not isinstance(data, (_b.int, _b.float, _b.complex)) and \
            not hasattr(data, "__index__") and not hasattr(data, "__float__"):
        raise TypeError(f"tensor(): invalid data type '{type(data).__name__}' (a number, a nested list or "
                        "tuple of numbers, a range, a buffer such as array.array or memoryview, a Tensor or "
                        "a NumPy array)")
    return [data], []


def from_buffer(buf, shape, dtype):
    """A new CPU tensor holding a copy of the bytes of buf (any buffer-protocol object)."""
    return _api.tensor_from_data(buf, list(shape), _dtype_arg(dtype, "from_buffer"))


def _dtype_arg(dt, fn):
    """dt if it is a ctorch dtype (or None); else a TypeError naming what was given."""
    if dt is None or isinstance(dt, _rt.dtype):
        return dt
    hint = f" (ctorch.{dt})" if isinstance(dt, str) and isinstance(getattr(_ctorch(), dt, None), _rt.dtype) else ""
    raise TypeError(f"{fn}(): argument 'dtype' must be a ctorch.dtype{hint}, not {type(dt).__name__} {dt!r}")


def _ctorch():
    import ctorch
    return ctorch


# NumPy dtypes ctorch takes (by NumPy's name), and the integer ranges tensor() checks values against.
_NP_NAMES = {"bool": bool_, "uint8": uint8, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
             "float16": float16, "float32": float32, "float64": float64, "complex64": complex64,
             "complex128": complex128}
_INT_RANGE = {uint8: (0, 255), int8: (-128, 127), int16: (-1 << 15, (1 << 15) - 1),
              int32: (-1 << 31, (1 << 31) - 1), int64: (-1 << 63, (1 << 63) - 1)}


def _from_numpy_array(data):
    import numpy as np
    arr = np.ascontiguousarray(data)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))  # big-endian data: copied to the machine's order
    dt = _NP_NAMES.get(arr.dtype.name)
    if dt is None:
        raise TypeError(f"can't convert np.ndarray of type numpy.{arr.dtype.name}. The only supported types are: "
                        f"{', '.join(_NP_NAMES)}")
    return from_buffer(arr.tobytes(), arr.shape, dt)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor from a number, a nested list, tuple or range, a buffer
    (array.array, memoryview, bytearray), a Tensor or a numpy array (copied)."""
    _dtype_arg(dtype, "tensor")
    if hasattr(data, "__array_interface__") and hasattr(data, "dtype"):
        t = _from_numpy_array(data)
    else:
        flat, shape = _flatten(data)
        if dtype is None:
            if flat and all(isinstance(x, _b.bool) for x in flat):
                dt = bool_
            elif all(isinstance(x, _b.int) for x in flat) and flat:
                dt = int64
            elif any(isinstance(x, complex) for x in flat):
                dt = complex64
            else:
                dt = float32
        else:
            dt = dtype
        if dt in (complex64, complex128):
            vals = [v for x in flat for v in (complex(x).real, complex(x).imag)]
            t = from_buffer(_struct.pack(f"<{len(vals)}d", *vals), shape, complex128)
        else:
            fmt = _FMT_OF.get(dt, "d")
            if fmt in "fe":
                fmt = "d"  # built as float64, then rounded by libtorch as torch rounds (1e300 -> inf, not an error)
            conv = _b.bool if fmt == "?" else (_b.int if fmt in "BbhiqQ" else _b.float)
            vals = [conv(x) for x in flat]
            rng = _INT_RANGE.get(dt)
            if rng and vals and not (rng[0] <= min(vals) and max(vals) <= rng[1]):
                bad = next(v for v in vals if not rng[0] <= v <= rng[1])
                raise RuntimeError(f"tensor(): value {bad} cannot be converted to type {str(dt)[7:]} without "
                                   "overflow")
            t = from_buffer(_struct.pack(f"<{len(flat)}{fmt}", *vals), shape,
                            dt if fmt != "d" else float64)
        dtype = dtype or dt
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


manual_seed = _api.manual_seed
set_num_threads = _api.set_num_threads
get_num_threads = _api.get_num_threads


def memory_bytes(device_type="cpu"):
    """Bytes held by live tensor storages on that kind of device (ctorch_memory_bytes),
    after releasing the handles of collected tensors (see _rt.flush_frees)."""
    _rt.flush_frees()
    return _api.memory_bytes(_capi.DEVICE_TYPES[device_type])


def device(spec, index=None):
    return Device(spec, index)


class Generator(_api.Generator):
    """A random number generator (ctorch_generator); its methods are the
    generated ctorch_generator_* functions."""
    _is_generator = True

    def __init__(self, device="cpu", seed=0):
        self._h = _api.generator_new(device, seed)._take()

    def manual_seed(self, seed):
        _api.generator_set_seed(self, seed)
        return self
