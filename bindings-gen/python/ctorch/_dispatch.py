"""Overload resolution for the generated operator functions, and the enum
objects the generated defaults refer to. A name with several overloads
(add: add.Tensor, add.Scalar, add.out) is called through a dispatcher that
tries them in api.json's order ("overload_groups": Tensor before Scalar, as
PyTorch's argument parser does) and calls the first whose parameters accept
the given arguments by type."""
from . import _capi
from ._rt import Device, Enum, Tensor, dtype, layout, memory_format, c_int32, byref

# Enum objects by C name (CTORCH_INT64 -> ctorch.int64) for the generated defaults.
_MEMFMT_NAMES = {"CONTIGUOUS": "contiguous_format", "PRESERVE": "preserve_format",
                 "CHANNELS_LAST": "channels_last", "CHANNELS_LAST_3D": "channels_last_3d"}
E = {}
DTYPES = {}
for _n, _v in _capi.ENUMS["ctorch_dtype"].items():
    E[_n] = DTYPES[_v] = dtype(_v, _n[len("CTORCH_"):].lower())
for _n, _v in _capi.ENUMS["ctorch_layout"].items():
    E[_n] = layout(_v, _n[len("CTORCH_LAYOUT_"):].lower())
for _n, _v in _capi.ENUMS["ctorch_memory_format"].items():
    E[_n] = memory_format(_v, _MEMFMT_NAMES.get(_n[len("CTORCH_MEMORY_"):], _n.lower()))
LAYOUTS = {int(v): v for k, v in E.items() if isinstance(v, layout)}


def _common_prefix(names):
    p = names[0]
    for n in names[1:]:
        while not n.startswith(p):
            p = p[:-1]
    return p[: p.rfind("_") + 1]


# Enums of schema ints, by the Python names PyTorch uses ("mean", "bilinear", ...).
ENUM_NAMES = {}
for _e in ("ctorch_reduction", "ctorch_grid_sampler_interpolation", "ctorch_grid_sampler_padding",
           "ctorch_embedding_bag_mode"):
    _vals = _capi.ENUMS[_e]
    _pre = _common_prefix(list(_vals))
    ENUM_NAMES[_e] = {k[len(_pre):].lower(): v for k, v in _vals.items()}


def i32_o(x):
    return None if x is None else byref(c_int32(int(x)))


def bad_tensor(fn, *xs):
    for x in xs:
        if not isinstance(x, Tensor):
            raise TypeError(f"{fn}: expected a ctorch.Tensor, got {type(x).__name__}")


_BASE = {
    "Tensor": lambda v: isinstance(v, Tensor),
    "Scalar": lambda v: isinstance(v, (int, float, complex)),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "SymInt": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "Dimname": lambda v: isinstance(v, str),
    "ScalarType": lambda v: isinstance(v, dtype),
    "Layout": lambda v: isinstance(v, layout),
    "MemoryFormat": lambda v: isinstance(v, memory_format),
    "Device": lambda v: isinstance(v, (str, Device)),
    "Generator": lambda v: getattr(v, "_is_generator", False),
}


def accepts(kind, v):
    if kind.endswith("?"):
        if v is None:
            return True
        kind = kind[:-1]
    if kind.endswith("[]"):
        elem = kind[:-2]
        if elem in ("int", "SymInt", "float", "bool") and _BASE[elem](v):
            return True  # a lone value stands for the list (int[2] stride=1)
        if not isinstance(v, (list, tuple)):
            return False
        return all(accepts(elem, x) for x in v)
    return _BASE[kind](v)


def _binds(sig, args, kwargs):
    pos = [p for p in sig if not p[3]]
    if len(args) > len(pos):
        return False
    names = {p[0] for p in sig}
    for k in kwargs:
        if k not in names:
            return False
    for i, p in enumerate(pos):
        if i < len(args):
            if p[0] in kwargs or not accepts(p[1], args[i]):
                return False
        elif p[0] in kwargs:
            if not accepts(p[1], kwargs[p[0]]):
                return False
        elif not p[2]:
            return False
    for p in sig:
        if p[3]:
            if p[0] in kwargs:
                if not accepts(p[1], kwargs[p[0]]):
                    return False
            elif not p[2]:
                return False
    return True


def _factory(sig):
    """An overload taking TensorOptions (dtype, layout, device, pin_memory): a
    factory, which PyTorch's Python also lets take requires_grad=."""
    return {"layout", "pin_memory"} <= {p[0] for p in sig}


def dispatch(name, group, args, kwargs):
    grad = None
    if "requires_grad" in kwargs:
        kwargs = dict(kwargs)
        grad = kwargs.pop("requires_grad")
    for fn, sig in group:
        if (grad is None or _factory(sig)) and _binds(sig, args, kwargs):
            out = fn(*args, **kwargs)
            if grad:
                out.requires_grad_(True)
            return out
    if grad is not None:
        kwargs = dict(kwargs, requires_grad=grad)
    sigs = "\n  ".join(fn.__doc__ for fn, _ in group)
    got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    raise TypeError(f"{name}(): no overload accepts ({got}); the overloads are:\n  {sigs}")


# dtypes and layouts come back from the generated header wrappers as ctorch's enum objects.
from . import _rt as _rt_mod  # noqa: E402
_rt_mod.ENUM_OUT["ctorch_dtype"] = DTYPES.__getitem__
_rt_mod.ENUM_OUT["ctorch_layout"] = LAYOUTS.__getitem__
