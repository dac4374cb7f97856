"""Runtime of the generated Python binding: the library, errors, the Tensor
handle class and the argument conversions the generated code (_ops.py)
calls. Everything C-level comes from _capi.py, generated from api.json.

Conventions followed (docs/api-json.md): a tensor handle is owned by
exactly one Tensor object and freed when it is collected (CPython frees
deterministically on the last reference; `del t` or `t.dispose()` frees
at once); an empty Python list becomes a non-NULL pointer of length 0
(PyTorch's []), None a NULL pointer; errors become CtorchError subclasses
carrying the C status and the library's message.
"""
import ctypes
import ctypes.util
import os

from . import _capi, _ints

c_void_p, c_int64, c_double, c_int, c_int32, c_char_p = (ctypes.c_void_p, ctypes.c_int64, ctypes.c_double,
                                                           ctypes.c_int, ctypes.c_int32, ctypes.c_char_p)
byref = ctypes.byref
Scalar = _capi.ctorch_scalar
Device_ = _capi.ctorch_device


def _installed_lib():
    """(path, info): the library CMake's install put beside this package
    (_installed.py: LIB relative to it), or (None, None). info.BUNDLED is
    true in the wheel, whose library is part of the package."""
    try:
        from . import _installed
    except ImportError:
        return None, None
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), _installed.LIB)), _installed


def _preload_torch(path, want):
    """The wheel's library finds libtorch through its RUNPATH,
    $ORIGIN/../../torch/lib: torch in the same site-packages, where pip puts
    both. Where torch sits in another folder of sys.path (a venv over system
    site-packages, --user, PYTHONPATH), its libtorch.so is loaded from there
    first, as `import torch` before an extension does for torchvision (the
    loader then matches libctorch's needs by SONAME), without importing
    torch's Python. The torch found must be the release the wheel was built
    for (pip's requirement, checked again here for --no-deps installs)."""
    import importlib.util
    try:
        from importlib.metadata import version
        got = version("torch")
    except Exception:  # noqa: BLE001 (PackageNotFoundError)
        got = None
    if got is None or not (got == want or got.startswith(want + ".")):
        raise ImportError(f"ctorch: this wheel's library ({path}) is built for torch {want}, and this Python has "
                          f"{'torch ' + got if got else 'no torch'}: pip install 'torch=={want}.*'")
    if os.path.isdir(os.path.join(os.path.dirname(path), "..", "..", "torch", "lib")):
        return
    spec = importlib.util.find_spec("torch")
    tlib = os.path.join(spec.submodule_search_locations[0], "lib", "libtorch.so")
    ctypes.CDLL(tlib, mode=_DLOPEN_MODE)


# RTLD_GLOBAL, not ctypes' default RTLD_LOCAL: an AOTInductor package's
# model library (dlopened by libtorch's loader) has no DT_NEEDED on libtorch
# and expects its aoti_torch_* shim symbols (libtorch_cpu's) in the global
# scope, as a C program linked against libctorch has them. glibc puts the
# library and the dependencies this dlopen loads into the global scope.
# (ctypes adds RTLD_NOW itself.)
_DLOPEN_MODE = os.RTLD_GLOBAL | os.RTLD_NOW


# The system libraries libctorch needs beyond libtorch (image decoding and
# checkpoints' zip), which pip cannot install: the package that has each.
_SYSTEM_LIBS = {
    "libjpeg.so.62": "libjpeg62-turbo on Debian, libjpeg62 on Ubuntu, libjpeg-turbo on Fedora/RHEL",
    "libpng16.so.16": "libpng16-16 (libpng16-16t64 on newer Debian/Ubuntu); libpng on Fedora/RHEL",
    "libz.so.1": "zlib1g on Debian/Ubuntu; zlib on Fedora/RHEL",
}


def _missing_system_lib_hint(msg):
    for so, pkgs in _SYSTEM_LIBS.items():
        if so in msg:
            return f" (the system library {so} is missing; install it with the OS's package manager: {pkgs})"
    return ""


def _load():
    """The library: the wheel's own (beside this package), else $CTORCH_LIB,
    else the installed one (when this package was installed by CMake), else
    the build tree's it was generated in, else ctypes.util.find_library("ctorch"),
    else the SONAME."""
    inst, info = _installed_lib()
    if getattr(info, "BUNDLED", False):
        path = inst
        _preload_torch(path, info.TORCH)
    else:
        path = os.environ.get("CTORCH_LIB")
    if not path:
        for p in (inst, getattr(_capi, "BUILD_LIB", None)):
            if p and os.path.exists(p):
                path = p
                break
        else:
            path = ctypes.util.find_library("ctorch") or _capi.SONAME
    try:
        lib = ctypes.CDLL(path, mode=_DLOPEN_MODE)
    except OSError as e:
        raise ImportError(f"ctorch: cannot load {path}: {e}{_missing_system_lib_hint(str(e))}") from e
    _check_identity(lib, path)  # before bind(): a library of another API lacks some of its symbols
    _capi.bind(lib)
    _ints.install(lib, _capi.PROTOTYPES)  # integers range-checked by parameter name
    return lib, path


def _check_identity(lib, path):
    """The load check every binding makes (docs/packages.md, "The load
    check"): the library refuses when a libtorch of another release is loaded
    beside it; its ctorch and libtorch versions must be those this binding was
    generated for, then its ABI hash. CTORCH_IGNORE_ABI=1 skips the two
    comparisons, never the library's own refusal."""
    lib.ctorch_last_error.restype = c_char_p  # (declared here: _capi.bind comes after)

    def ask(fn):
        out = c_char_p()
        if fn(byref(out)) != 0:
            raise ImportError(f"ctorch: {path}: {lib.ctorch_last_error().decode(errors='replace')}")
        return out.value.decode()
    got = (ask(lib.ctorch_version), ask(lib.ctorch_torch_version), ask(lib.ctorch_abi_hash))
    if os.environ.get("CTORCH_IGNORE_ABI"):
        return
    if got[:2] != (_capi.CTORCH_VERSION, _capi.TORCH_VERSION):
        raise ImportError(f"ctorch: {path} is libctorch {got[0]} built for libtorch {got[1]}; this binding was "
                          f"generated for libctorch {_capi.CTORCH_VERSION} built for libtorch {_capi.TORCH_VERSION} "
                          f"(load that library: CTORCH_LIB, or install the binding generated with it)")
    if got[2] != _capi.ABI_HASH:
        raise ImportError(f"ctorch: the library at {path} has ABI {got[2]}, this binding was generated "
                          f"for {_capi.ABI_HASH} (regenerate it from that library's api.json, or set "
                          f"CTORCH_IGNORE_ABI=1 to load it anyway)")


lib, LIB_PATH = _load()
_tensor_free = lib.ctorch_tensor_free
_free_many = lib.ctorch_tensor_free_many


# ---- errors -----------------------------------------------------------------------

class CtorchError(RuntimeError):
    """A ctorch call failed; .status is the ctorch_status value, .status_name its name."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = _capi.STATUS_NAMES.get(status, "CTORCH_?")
        super().__init__(f"{self.status_name}: {message}")


class InvalidArgument(CtorchError, ValueError):
    pass


class IndexError_(CtorchError, IndexError):
    pass


class TypeError_(CtorchError, TypeError):
    pass


class NotImplemented_(CtorchError, NotImplementedError):
    pass


class OutOfMemory(CtorchError, MemoryError):
    pass


_ERROR_CLASSES = {1: InvalidArgument, 2: IndexError_, 4: TypeError_, 5: NotImplemented_, 6: OutOfMemory}


def raise_status(st):
    """Raises the error of a failed call made on this thread (its message
    copied by the generated ctorch_last_error_copy, sized as api.json says)."""
    from . import _api
    raise _ERROR_CLASSES.get(st, CtorchError)(st, _api.last_error_copy())


def check(st):
    if st:
        raise_status(st)


# ---- tensors ----------------------------------------------------------------------

class Tensor:
    """A ctorch tensor: owns one handle (one reference to a libtorch tensor).
    _h is the handle: always a c_void_p (the one a call wrote it to, or one
    wrap() made), None once disposed. The generated fast paths pass it to
    functions without argtypes (raw_function), where ctypes hands a c_void_p
    over as it is but would pass a Python int as a 32-bit C int.

    Operators, methods, properties and every generated op are installed on
    this class by _ops.py and __init__.py."""
    __slots__ = ("_h", "__weakref__")

    def __init__(self, *a, **k):
        raise TypeError("build tensors with ctorch.tensor(...), ctorch.zeros(...), ctorch.from_buffer(...)")

    def __del__(self):
        # Collected tensors are released in batches of up to FREE_BATCH
        # handles, one foreign call per batch (ctorch_tensor_free_many): a
        # ctypes call costs about as much as a small operator. The batch goes
        # at once when native memory (ctorch's counter, read in place) grew by
        # FLUSH_BYTES since the last release, so dead large tensors are not
        # kept for long. flush_frees() releases them now.
        # (No self._h = None: CPython finalizes an object once, PEP 442.)
        h = self._h
        if h:
            p = _pending
            p.append(h)
            if len(p) >= FREE_BATCH or _counter.value > _flush_above:
                flush_frees()

    def dispose(self):
        """Frees the handle now (the object becomes unusable)."""
        h = self._h
        self._h = None
        if h:
            _tensor_free(h)

    @property
    def handle(self):
        """The borrowed ctorch_tensor handle (an int), valid while this object lives."""
        h = self._h
        return None if h is None else h.value


_new = object.__new__
FREE_BATCH = 64
FLUSH_BYTES = 32 << 20
_pending = []
# ctorch's CPU byte counter, read in place without a call: the generated
# memory_cpu_counter's live view, set by __init__ once _api is loaded (no
# tensor exists before that).
_counter = c_int64(0)
_mem_at_flush = 0
_flush_above = FLUSH_BYTES  # _mem_at_flush + FLUSH_BYTES: one comparison per collected tensor


def flush_frees():
    """Releases the handles of collected tensors not yet released."""
    global _pending, _mem_at_flush, _flush_above
    batch = _pending
    _pending = []  # handles appended meanwhile by another thread land in batch or the new list
    n = len(batch)
    if n:
        _free_many((c_void_p * n)(*batch), n)
    _mem_at_flush = _counter.value
    _flush_above = _mem_at_flush + FLUSH_BYTES


import atexit as _atexit  # noqa: E402
_atexit.register(flush_frees)


def wrap(h):
    """A new Tensor owning handle h, an int or a c_void_p (None for NULL, the undefined tensor)."""
    if not h:
        return None
    t = _new(Tensor)
    t._h = h if type(h) is c_void_p else c_void_p(h)
    return t


def shared_length(fname, items):
    """The length of arrays that share one C length parameter (api.json's
    length_from): items are (name, given, length); the given ones must agree
    (none given: 0)."""
    given = [(n, k) for n, g, k in items if g]
    if len({k for _, k in given}) > 1:
        raise ValueError(f"{fname}: " + ", ".join(f"{n} has {k}" for n, k in given) +
                         " entries; they share one length")
    return given[0][1] if given else 0


def raw_function(name, restype=c_int32):
    """A second function object for `name`, without argtypes, for the
    generated fast paths: they pass only ctypes objects (c_void_p handles,
    byref() outputs, structs, c_int64(...)), None, bytes and Python ints for
    C int parameters, which ctypes then hands over without calling a
    from_param converter per argument (about a third of a small operator's
    ctypes cost). The prototype stays on lib.<name> for everything else."""
    f = lib._FuncPtr((name, lib))
    f.restype = restype
    return f


def th(x):
    """Handle of a required Tensor argument."""
    try:
        return x._h
    except AttributeError:
        raise TypeError(f"expected a ctorch.Tensor, got {type(x).__name__}") from None


def tho(x):
    """Handle of a Tensor? argument (None -> NULL)."""
    return None if x is None else th(x)


_HandleArray = {}


def tensor_array(xs, optional=False):
    """(array, length) for Tensor[] / Tensor?[]."""
    if isinstance(xs, Tensor):
        xs = [xs]
    hs = [(None if x is None else th(x)) if optional else th(x) for x in xs]
    n = len(hs)
    return (c_void_p * max(n, 1))(*hs), n


# ---- numbers, lists, enums -------------------------------------------------------------

_SC_FLOAT, _SC_INT, _SC_BOOL, _SC_COMPLEX = 0, 1, 2, 3
_scalar_caches = {int: {}, float: {}, bool: {}}


def scalar(x):
    """A ctorch_scalar by value, of the kind Python's type says (bool before
    int), built by the header's inline helpers (_capi, from api.json's inline_body)."""
    t = type(x)
    cache = _scalar_caches.get(t)
    if cache is not None:
        s = cache.get(x)
        if s is not None:
            return s
    if t is bool:
        s = _capi.scalar_bool(x)
    elif t is int:
        if not _ints.I64_MIN <= x <= _ints.I64_MAX:
            raise _ints.refuse(x, c_int64)
        s = _capi.scalar_int(x)
    elif t is float:
        s = _capi.scalar_float(x)
    elif t is complex:
        s = _capi.scalar_complex(x.real, x.imag)
    elif isinstance(x, Tensor):
        return scalar(x.item())
    elif isinstance(x, bool):
        s = _capi.scalar_bool(x)
    elif isinstance(x, int):
        s = _capi.scalar_int(_ints.as_int(x, c_int64))
    elif isinstance(x, float):
        s = _capi.scalar_float(float(x))
    else:
        raise TypeError(f"expected a number for a Scalar argument, got {type(x).__name__}")
    if cache is not None and len(cache) < 1024:
        cache[x] = s
    return s


def scalar_o(x):
    return None if x is None else byref(scalar(x))


def scalar_array(xs, optional=False):
    if xs is None:
        return None, 0
    xs = list(xs)
    n = len(xs)
    return (Scalar * max(n, 1))(*[scalar(x) for x in xs]), n


_EMPTY_I64 = (c_int64 * 1)()


def int_array(x, size=None):
    """(array, length) for int[] / int[N]: a lone int is repeated N times (PyTorch's rule)."""
    if isinstance(x, int):
        x = [x] * (size or 1)
    elif isinstance(x, Tensor):
        x = x.tolist()
    n = len(x)
    if n == 0:
        return _EMPTY_I64, 0  # [] is a non-NULL pointer with length 0
    return _ints.i64_list(x), n


def int_arrays(xs):
    """(array of pointers, array of lengths, count) for a list of int lists
    (api.json's array.element_length: shapes); the pointer array holds the
    inner arrays (ctypes keeps what a cast came from)."""
    made = [int_array(x) for x in xs]
    p64 = ctypes.POINTER(c_int64)
    n = len(made)
    ptrs = (p64 * max(n, 1))(*[ctypes.cast(a, p64) for a, _ in made])
    return ptrs, (ctypes.c_size_t * max(n, 1))(*[k for _, k in made]), n


def int_array_o(x, size=None):
    if x is None:
        return None, 0
    return int_array(x, size)


_EMPTY_F64 = (c_double * 1)()


def float_array(x, size=None):
    if isinstance(x, (int, float)):
        x = [x] * (size or 1)
    n = len(x)
    if n == 0:
        return _EMPTY_F64, 0
    return (c_double * n)(*x), n


def float_array_o(x, size=None):
    if x is None:
        return None, 0
    return float_array(x, size)


def bool_array(x, size):
    if isinstance(x, bool):
        x = [x] * size
    return (c_int * max(len(x), 1))(*[1 if v else 0 for v in x]), len(x)


def int_o(x):
    return None if x is None else byref(c_int64(_ints.as_int(x, c_int64)))


def float_o(x):
    return None if x is None else byref(c_double(x))


def bool_o(x):
    return None if x is None else byref(c_int(1 if x else 0))


def str_arg(x):
    if isinstance(x, str):
        return x.encode()
    if isinstance(x, bytes):
        return x
    raise TypeError(f"expected a str, got {type(x).__name__}")


def str_o(x):
    return None if x is None else str_arg(x)


def str_array(xs, optional=False):
    if xs is None:
        return None, 0
    if isinstance(xs, str):
        xs = [xs]
    n = len(xs)
    return (c_char_p * max(n, 1))(*[str_arg(x) for x in xs]), n


class Enum(int):
    """An enum value of the C API (ctorch.float32, ctorch.channels_last, ...)."""
    _names = {}

    def __new__(cls, value, name):
        o = int.__new__(cls, value)
        o._name = name
        return o

    def __repr__(self):
        return f"ctorch.{self._name}"

    __str__ = __repr__


class dtype(Enum):
    pass


class layout(Enum):
    pass


class memory_format(Enum):
    pass


def enum_value(x, table, what):
    """An int-valued enum argument from an Enum, an int or a name ("mean")."""
    if isinstance(x, str):
        try:
            return table[x]
        except KeyError:
            raise ValueError(f"invalid {what} {x!r}; expected one of {sorted(table)}") from None
    return int(x)


def enum_o(x, table, what):
    return None if x is None else byref(c_int32(enum_value(x, table, what)))


# Devices: "cpu", "cuda", "cuda:1", ("cuda", 1) or a Device.
class Device:
    __slots__ = ("type", "index")

    def __init__(self, spec, index=None):
        if isinstance(spec, Device):
            self.type, self.index = spec.type, spec.index
            return
        if isinstance(spec, str):
            name, _, idx = spec.partition(":")
            if name not in _capi.DEVICE_TYPES:
                raise ValueError(f"unknown device type {name!r}")
            self.type = name
            self.index = int(idx) if idx else (-1 if index is None else index)
        else:
            raise TypeError(f"expected a device, got {type(spec).__name__}")

    def c(self):
        return Device_(_capi.DEVICE_TYPES[self.type], self.index)

    def __repr__(self):
        return f"device({self.type!r}{'' if self.index < 0 else ', ' + str(self.index)})"

    def __eq__(self, o):
        try:
            o = Device(o)
        except (TypeError, ValueError):
            return NotImplemented
        return (self.type, self.index) == (o.type, o.index)

    def __hash__(self):
        return hash((self.type, self.index))


def device_arg(x):
    return Device(x).c()


def device_o(x):
    return None if x is None else byref(device_arg(x))


def device_from_c(d):
    name = _capi.DEVICE_TYPE_NAMES.get(d.type, str(d.type))
    return Device(name, d.index) if d.index >= 0 else Device(name)


def gen_o(g):
    return None if g is None else g._h


# ---- results ----------------------------------------------------------------------

def scalar_result(s):
    k = s.kind
    if k == _SC_INT:
        return s.i
    if k == _SC_BOOL:
        return bool(s.i)
    if k == _SC_COMPLEX:
        return complex(s.f, s.imag)
    return s.f


# ---- what the generated header wrappers (_api.py) call --------------------------------------

def h(x):
    """The handle of a handle object (Tensor, Optimizer, ...)."""
    try:
        return x._h
    except AttributeError:
        raise TypeError(f"expected a ctorch handle object, got {type(x).__name__}") from None


def ho(x):
    return None if x is None else h(x)


def str_in(x):
    """Text or a path: str, bytes or os.PathLike."""
    if isinstance(x, str):
        return x.encode()
    if isinstance(x, bytes):
        return x
    if isinstance(x, os.PathLike):
        return os.fsencode(x)
    raise TypeError(f"expected a str, got {type(x).__name__}")


def str_in_o(x):
    return None if x is None else str_in(x)


def bytes_arg(x):
    """(pointer, length in bytes) of any buffer-protocol object (read only)."""
    mv = memoryview(x).cast("B")
    b = mv.tobytes()
    return b, len(b)


def text(v):
    return None if v is None else v.decode(errors="replace")


def query(fn, out, *args):
    """The value a size query (api.json buffer_size) writes to its output."""
    st = fn(byref(out), *args)
    if st:
        raise_status(st)
    return out.value


# Language-level forms of some C structs and enums (filled by _dispatch):
# a device may be given as "cuda:1", a dtype comes back as ctorch.float32.
STRUCT_IN = {"ctorch_device": lambda x: x if isinstance(x, Device_) else device_arg(x)}
STRUCT_OUT = {"ctorch_device": lambda d: device_from_c(d)}
ENUM_OUT = {}


def struct_in(name, x):
    f = STRUCT_IN.get(name)
    return x if f is None else f(x)


def struct_out(name, x):
    f = STRUCT_OUT.get(name)
    return x if f is None else f(x)


def enum_out(name, v):
    f = ENUM_OUT.get(name)
    return v if f is None else f(v)


class Handle:
    """An owned handle of a type other than ctorch_tensor (the generated
    classes in _api: Optimizer, DataLoader, ...): freed by its type's free
    function (api.json handles[].free) when collected or disposed."""
    _free = None

    def __del__(self):
        h = getattr(self, "_h", None)
        if h and self._free is not None:
            self._h = None
            self._free(h)

    def dispose(self):
        """Frees the handle now."""
        self.__del__()

    def _take(self):
        """The handle, which this object no longer frees."""
        h, self._h = self._h, None
        return h

    @property
    def handle(self):
        return self._h


def adopt(cls, h):
    """A new cls owning handle h (None for NULL)."""
    if not h:
        return None
    o = _new(cls)
    o._h = h
    return o
