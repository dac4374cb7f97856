"""Range checks for every integer (and the type of every number) that
crosses into C, by parameter name.

ctypes converts a Python int to a C integer by masking: c_int64(2**70) is
0, c_int64(2**64 + 2) is 2, so `zeros([2**64 + 2])` made a tensor of 2
elements and `t + 2**70` added 0. PyTorch refuses such values ("Overflow
when unpacking long"); so does ctorch, at the three places integers enter C:

  - the argtypes of every C function (_capi.PROTOTYPES): each integer type
    is replaced by a subclass whose from_param checks the range (and each
    double by one that checks the type), so the generated header wrappers
    (_api) and the operators' slow paths refuse out-of-range values;
  - the operators' fast path (_ops calls the C function without argtypes and
    builds c_int64(x) itself): _ops._c_int64 becomes i64 below;
  - the runtime's own conversions (_rt.scalar, int_array, int_o).

The error names the parameter: on the error path only, the caller's frame
(the generated function, whose locals are its parameters) is searched for
the local holding the refused value, so the checks cost one comparison on
success.
"""
import ctypes
import operator
import sys
import threading

_RANGES = {}
for _t, _bits, _signed in ((ctypes.c_int64, 64, True), (ctypes.c_uint64, 64, False),
                           (ctypes.c_size_t, 8 * ctypes.sizeof(ctypes.c_size_t), False),
                           (ctypes.c_int32, 32, True), (ctypes.c_uint32, 32, False), (ctypes.c_int16, 16, True),
                           (ctypes.c_uint16, 16, False), (ctypes.c_int8, 8, True), (ctypes.c_uint8, 8, False)):
    _RANGES[_t] = (-(1 << (_bits - 1)), (1 << (_bits - 1)) - 1) if _signed else (0, (1 << _bits) - 1)
# c_int is c_int32 and c_long c_int64 on the platforms ctorch builds for
# (ctypes makes them the same class object there).
_C_NAMES = {}
for _t, _n in ((ctypes.c_int64, "int64_t"), (ctypes.c_uint64, "uint64_t"), (ctypes.c_size_t, "size_t"),
               (ctypes.c_int32, "int32_t"), (ctypes.c_uint32, "uint32_t"), (ctypes.c_int16, "int16_t"),
               (ctypes.c_uint16, "uint16_t"), (ctypes.c_int8, "int8_t"), (ctypes.c_uint8, "uint8_t")):
    _C_NAMES.setdefault(_t, _n)  # c_size_t is c_uint64's class: named uint64_t
I64_MIN, I64_MAX = _RANGES[ctypes.c_int64]


def where(value):
    """'fn(): argument 'name'' for the nearest caller outside this runtime
    (_rt, _ints) that holds value in a local (the generated functions'
    locals are their parameters), else 'fn()'. Called on error paths only."""
    f = sys._getframe(1)
    while f is not None and f.f_globals.get("__name__", "").rpartition(".")[2] in ("_rt", "_ints"):
        f = f.f_back
    if f is None:
        return "ctorch"
    fn = f.f_code.co_name
    if fn.startswith("_o_"):
        fn = fn[3:]
    loc = f.f_locals
    name = next((k for k, v in loc.items() if v is value and not k.startswith("_")), None)
    if name is None:  # an element of a list argument
        name = next((k for k, v in loc.items() if isinstance(v, (list, tuple)) and any(x is value for x in v)), None)
    return f"{fn}(): argument '{name}'" if name else f"{fn}()"


def refuse(value, ctype):
    lo, hi = _RANGES[ctype]
    return OverflowError(f"{where(value)} = {value} is out of range for {_C_NAMES[ctype]} "
                         f"[{lo}, {hi}] (Overflow when unpacking long)")


def as_int(value, ctype):
    """value (an int or anything with __index__, not a float) checked against ctype's range."""
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{where(value)} must be an integer ({_C_NAMES[ctype]}), got "
                        f"{type(value).__name__} {value!r}") from None
    lo, hi = _RANGES[ctype]
    if lo <= v <= hi:
        return v
    raise refuse(value, ctype)


_c_int64 = ctypes.c_int64


def i64(v=0):
    """c_int64(v), refused outside int64 (the operators' fast path)."""
    if I64_MIN <= v <= I64_MAX:
        return _c_int64(v)
    raise refuse(v, ctypes.c_int64)


def i64_list(xs):
    """xs (a non-empty list of integers) as a C int64 array, each element checked."""
    try:
        ok = I64_MIN <= min(xs) and max(xs) <= I64_MAX
    except TypeError:  # not all numbers: element by element below
        ok = False
    if not ok or not all(type(x) is int or type(x) is bool for x in xs):
        xs = [as_int(x, ctypes.c_int64) for x in xs]
    return (_c_int64 * len(xs))(*xs)


# ctypes reports an error raised by an argtype's from_param as
# ctypes.ArgumentError("argument 3: OverflowError: ..."), dropping the error
# itself; the converters below keep it here for unwrap().
_refused = threading.local()


def _keep(e):
    _refused.error = e
    return e


def unwrap(e):
    """The converter's own error (OverflowError, TypeError) that ctypes wrapped
    into the ArgumentError e (the generated _api functions raise it instead:
    one exception type for one error), else e."""
    kept = getattr(_refused, "error", None)
    _refused.error = None
    return kept if kept is not None and str(kept) in str(e) else e


def _checked_int(base):
    class Checked(base):
        @classmethod
        def from_param(cls, v):
            if type(v) is int:
                lo, hi = _RANGES[base]
                if lo <= v <= hi:
                    return base(v)
            elif isinstance(v, ctypes._SimpleCData):
                return v
            try:
                return base(as_int(v, base))
            except (OverflowError, TypeError) as e:
                raise _keep(e)
    Checked.__name__ = f"checked_{base.__name__}"
    return Checked


class _CheckedDouble(ctypes.c_double):
    @classmethod
    def from_param(cls, v):
        if type(v) is float or type(v) is int or isinstance(v, ctypes.c_double):
            return v if isinstance(v, ctypes.c_double) else ctypes.c_double(v)
        if isinstance(v, (str, bytes)) or not hasattr(v, "__float__"):
            raise _keep(TypeError(f"{where(v)} must be a number (double), got {type(v).__name__} {v!r}"))
        return ctypes.c_double(float(v))


_CHECKED = {t: _checked_int(t) for t in _RANGES}
_CHECKED[ctypes.c_double] = _CheckedDouble

SEED_MIN, SEED_MAX = I64_MIN, (1 << 64) - 1


def seed(value):
    """A seed in PyTorch's range [-2^63, 2^64-1] as the uint64 it means: a
    negative seed s is 2^64 + s (torch.manual_seed(-1).initial_seed() is
    2^64 - 1)."""
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{where(value)} must be an integer (a seed), got {type(value).__name__} {value!r}") from None
    if SEED_MIN <= v <= SEED_MAX:
        return v + (1 << 64) if v < 0 else v
    raise OverflowError(f"{where(value)} = {value} is out of range for a seed [{SEED_MIN}, {SEED_MAX}] "
                        f"(Overflow when unpacking long)")


class _Seed(ctypes.c_uint64):
    @classmethod
    def from_param(cls, v):
        if isinstance(v, ctypes.c_uint64):
            return v
        try:
            return ctypes.c_uint64(seed(v))
        except (OverflowError, TypeError) as e:
            raise _keep(e)


def install(lib, prototypes, seeds=None):
    """Replaces the integer and double argtypes of every function in
    prototypes (name -> (restype, argtypes), _capi.PROTOTYPES) by checking
    ones; the seed parameters (name -> positions, _capi.SEEDS) take seeds."""
    if seeds is None:
        from . import _capi
        seeds = getattr(_capi, "SEEDS", {})
    for name, (_res, args) in prototypes.items():
        if any(a in _CHECKED for a in args):
            checked = [_CHECKED.get(a, a) for a in args]
            for i in seeds.get(name, ()):
                checked[i] = _Seed
            getattr(lib, name).argtypes = tuple(checked)
