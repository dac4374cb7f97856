"""torch.nn's modules for ctorch: Module (subclass it as in PyTorch: attributes
that are Parameters, Modules or registered buffers become the module's, with
PyTorch's dotted state-dict names), Parameter, the containers and, generated
from api.json's "nn_modules" catalogue (_nn_classes.py), every built-in module
class with torch.nn's constructor arguments and defaults.

Every module is a ctorch_nn_module underneath (include/ctorch.h, "Modules"):
state_dict, load_state_dict, train/eval, to, zero_grad, repr and parameters
are the C library's, so a model built here has the same names, values and
behaviour as the same model built from C, Node or Go. A subclass's forward
runs in Python; when a C container (Sequential) calls it, the library calls
back into Python.
"""
import ast
import collections
import ctypes as _c
import threading
import weakref

from . import _api, _capi, _rt
from ._rt import lib, check, wrap, Tensor, Device

_vp, _sz, _cp = _c.c_void_p, _c.c_size_t, _c.c_char_p
_byref = _c.byref

_IncompatibleKeys = collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _text(v):
    """A Python value as the text ctorch_nn_new parses (a Python literal)."""
    if isinstance(v, _rt.dtype):
        return repr(v._name)
    if isinstance(v, Device):
        return repr(v.type if v.index < 0 else f"{v.type}:{v.index}")
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_text(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    if isinstance(v, bool) or v is None or isinstance(v, (int, float, str)):
        return repr(v)
    raise TypeError(f"cannot pass a {type(v).__name__} as a module option")


def _args_text(pairs):
    return ", ".join(f"{k}={_text(v)}" for k, v in pairs)


def _read_dict(h):
    """An OrderedDict name -> Tensor from a NEW ctorch_tensor_dict handle (freed here)."""
    out = collections.OrderedDict()
    try:
        n = _sz()
        check(lib.ctorch_tensor_dict_size(_byref(n), h))
        for i in range(n.value):
            k, t = _cp(), _vp()
            check(lib.ctorch_tensor_dict_key(_byref(k), h, i))
            check(lib.ctorch_tensor_dict_get(_byref(t), h, i))
            out[k.value.decode()] = wrap(t.value)
    finally:
        lib.ctorch_tensor_dict_free(h)
    return out


def _make_dict(d):
    """A NEW ctorch_tensor_dict handle holding the items of a mapping of Tensors."""
    h = _vp()
    check(lib.ctorch_tensor_dict_new(_byref(h)))
    try:
        for k, v in d.items():
            check(lib.ctorch_tensor_dict_set(h, str(k).encode(), _rt.th(v)))
    except BaseException:
        lib.ctorch_tensor_dict_free(h)
        raise
    return h


def _take_string(p):
    s = p.value.decode() if p.value else ""
    lib.ctorch_string_free(p)
    return s


# ---- Python forwards called by the library ------------------------------------------------

_live = {}             # user_data key -> weakref to the Python module
_live_lock = threading.Lock()
_next_key = [1]
_pending = threading.local()  # the Python exception a callback swallowed, re-raised by the caller


def _kwargs_of(text):
    """The keyword arguments ctorch_nn_module_forward_n passed, as a dict."""
    text = text.decode() if text else ""
    if not text.strip():
        return {}
    call = ast.parse(f"f({text})", mode="eval").body
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def _forward_py(user_data, self_h, inputs, n_in, kwargs, outputs, max_out, n_out):
    try:
        ref = _live.get(user_data)
        mod = ref() if ref else None
        if mod is None:
            raise RuntimeError("the Python module behind this ctorch module is gone")
        ins = []
        for i in range(n_in):
            h = _vp()
            if inputs[i]:
                check(lib.ctorch_tensor_ref(_byref(h), inputs[i]))
            ins.append(wrap(h.value))
        res = mod.forward(*ins, **_kwargs_of(kwargs))
        outs = res if isinstance(res, (tuple, list)) else (res,)
        if len(outs) > max_out:
            raise ValueError(f"{type(mod).__name__}.forward returned {len(outs)} values; the caller takes {max_out}")
        for i, o in enumerate(outs):
            h = _vp()
            if o is not None:
                check(lib.ctorch_tensor_ref(_byref(h), _rt.th(o)))
            outputs[i] = h.value
        n_out[0] = len(outs)
        return 0
    except BaseException as e:  # noqa: BLE001 (nothing may unwind through C)
        _pending.exc = e
        return e.status if isinstance(e, _rt.CtorchError) else _capi.ENUMS["ctorch_status"]["CTORCH_RUNTIME"]


_NO_FREE = lib.ctorch_nn_custom_new.argtypes[4]()  # a NULL free_user_data (ctypes takes no None there)
_forward_cb = _capi.ctorch_nn_forward_fn(_forward_py)  # module-level: lives as long as the library may call it


def _raise_pending():
    """After a call that may have run Python forwards: the exception one raised wins."""
    exc = getattr(_pending, "exc", None)
    _pending.exc = None
    if exc is not None:
        raise exc


# ---- Module ---------------------------------------------------------------------------------


class Parameter(Tensor):
    """nn.Parameter(data, requires_grad=True): the tensor itself, marked so that
    assigning it to a Module attribute registers it as a parameter."""
    __slots__ = ()

    def __new__(cls, data, requires_grad=True):
        h = _vp()
        check(lib.ctorch_tensor_ref(_byref(h), _rt.th(data)))
        p = object.__new__(cls)
        p._h = h
        check(lib.ctorch_tensor_set_requires_grad(h, int(bool(requires_grad))))
        return p

    def __init__(self, *a, **k):
        pass


class Module:
    """torch.nn.Module: subclass it, set Parameters, Modules and buffers as
    attributes in __init__ (after calling super().__init__()), write forward."""

    def __init__(self):
        key = None
        with _live_lock:
            key = _next_key[0]
            _next_key[0] += 1
            _live[key] = weakref.ref(self)
        h = _vp()
        check(lib.ctorch_nn_custom_new(_byref(h), type(self).__name__.encode(), _forward_cb, _vp(key), _NO_FREE))
        object.__setattr__(self, "_h", h)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_modules", collections.OrderedDict())

    @classmethod
    def _adopt(cls, h):
        """A Python object for a NEW handle to a module made by the library (a child of a built-in)."""
        o = object.__new__(_builtin_class(h))
        object.__setattr__(o, "_h", h)
        object.__setattr__(o, "_key", None)
        object.__setattr__(o, "_modules", collections.OrderedDict())
        return o

    def __del__(self):
        h = self.__dict__.get("_h")
        if h:
            lib.ctorch_nn_module_free(h)
        key = self.__dict__.get("_key")
        if key is not None:
            _live.pop(key, None)

    def dispose(self):
        """Releases this object's reference to the module now (as Tensor.dispose
        does for a tensor); the object is unusable afterwards. Children and
        tensors taken from it hold references of their own and stay valid."""
        self.__del__()
        object.__setattr__(self, "_h", None)
        object.__setattr__(self, "_key", None)

    @property
    def handle(self):
        """The borrowed ctorch_nn_module handle, valid while this object lives."""
        return self._h.value

    # -- attributes: parameters, buffers and children live in the library --
    def __setattr__(self, name, value):
        if isinstance(value, Parameter):
            if self._has_tensor(name):
                check(lib.ctorch_nn_module_set_tensor(self._h, name.encode(), value._h))
            else:
                check(lib.ctorch_nn_module_register_parameter(self._h, name.encode(), value._h))
        elif isinstance(value, Module):
            self.add_module(name, value)
        elif (value is None or isinstance(value, Tensor)) and self._has_tensor(name):
            check(lib.ctorch_nn_module_set_tensor(self._h, name.encode(), _rt.th(value) if value is not None else None))
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):  # only for names not found the usual way
        if name.startswith("_"):
            raise AttributeError(name)
        mods = self.__dict__.get("_modules", {})
        if name in mods:
            return mods[name]
        h = _vp()
        st = lib.ctorch_nn_module_tensor(_byref(h), self._h, name.encode())
        if st == 0:
            return wrap(h.value)
        st = lib.ctorch_nn_module_get(_byref(h), self._h, name.encode())
        if st == 0:
            child = Module._adopt(h)
            mods[name] = child
            return child
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _has_tensor(self, name):
        h = _vp()
        if lib.ctorch_nn_module_tensor(_byref(h), self._h, name.encode()) != 0:
            return False
        if h.value:
            lib.ctorch_tensor_free(h)
        return True

    def register_parameter(self, name, param):
        check(lib.ctorch_nn_module_register_parameter(self._h, name.encode(), None if param is None else param._h))

    def register_buffer(self, name, tensor, persistent=True):
        check(lib.ctorch_nn_module_register_buffer(self._h, name.encode(),
                                                   None if tensor is None else _rt.th(tensor), int(persistent)))

    def add_module(self, name, module):
        check(lib.ctorch_nn_module_register_module(self._h, str(name).encode(), module._h))
        self._modules[str(name)] = module

    register_module = add_module

    # -- forward --
    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward")

    def __call__(self, *inputs, **kwargs):
        return self.forward(*inputs, **kwargs)

    # -- what every module can do --
    def named_parameters(self, prefix="", recurse=True):
        h = _vp()
        check(lib.ctorch_nn_module_named_parameters(_byref(h), self._h, int(recurse)))
        for k, v in _read_dict(h).items():
            yield (f"{prefix}.{k}" if prefix else k), v

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        h = _vp()
        check(lib.ctorch_nn_module_named_buffers(_byref(h), self._h, int(recurse)))
        for k, v in _read_dict(h).items():
            yield (f"{prefix}.{k}" if prefix else k), v

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self):
        n = _sz()
        check(lib.ctorch_nn_module_num_children(_byref(n), self._h))
        for i in range(n.value):
            h, name = _vp(), _cp()
            check(lib.ctorch_nn_module_child(_byref(h), _byref(name), self._h, i))
            key = name.value.decode()
            known = self._modules.get(key)
            if known is not None and known._h.value == h.value:
                lib.ctorch_nn_module_free(h)
                yield key, known
            else:
                yield key, self._modules.setdefault(key, Module._adopt(h))

    def children(self):
        for _, c in self.named_children():
            yield c

    def named_modules(self, prefix=""):
        yield prefix, self
        for name, c in self.named_children():
            yield from c.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def state_dict(self):
        h = _vp()
        check(lib.ctorch_nn_module_state_dict(_byref(h), self._h))
        return _read_dict(h)

    def load_state_dict(self, state_dict, strict=True):
        d = _make_dict(state_dict)
        report = _cp()
        try:
            check(lib.ctorch_nn_module_load_state_dict(_byref(report), self._h, d, int(strict)))
        finally:
            lib.ctorch_tensor_dict_free(d)
        missing, unexpected = [], []
        for line in _take_string(report).splitlines():
            kind, _, key = line.partition(": ")
            (missing if kind == "missing" else unexpected).append(key)
        return _IncompatibleKeys(missing, unexpected)

    def train(self, mode=True):
        check(lib.ctorch_nn_module_train(self._h, int(bool(mode))))
        return self

    def eval(self):
        return self.train(False)

    @property
    def training(self):
        v = _c.c_int()
        check(lib.ctorch_nn_module_is_training(_byref(v), self._h))
        return bool(v.value)

    def to(self, *args, **kwargs):
        """to(device), to(dtype), to(device, dtype), or keywords device=, dtype=."""
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, _rt.dtype):
                dtype = a
            else:
                device = a
        dev = None if device is None else _byref(_rt.device_arg(device))
        check(lib.ctorch_nn_module_to(self._h, dev, -1 if dtype is None else int(dtype)))
        return self

    def cuda(self, device=0):
        return self.to(Device("cuda", device))

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=_rt_dtype("CTORCH_FLOAT64"))

    def float(self):
        return self.to(dtype=_rt_dtype("CTORCH_FLOAT32"))

    def requires_grad_(self, requires_grad=True):
        check(lib.ctorch_nn_module_requires_grad(self._h, int(bool(requires_grad))))
        return self

    def zero_grad(self, set_to_none=True):
        check(lib.ctorch_nn_module_zero_grad(self._h, int(bool(set_to_none))))

    def num_parameters(self, only_trainable=False):
        n = _c.c_int64()
        check(lib.ctorch_nn_module_num_parameters(_byref(n), self._h, int(bool(only_trainable))))
        return n.value

    def __repr__(self):
        s = _cp()
        check(lib.ctorch_nn_module_repr(_byref(s), self._h))
        return _take_string(s)

    def clone(self):
        """copy.deepcopy(module): its own parameters, buffers and children."""
        h = _vp()
        check(lib.ctorch_nn_module_clone(_byref(h), self._h))
        return Module._adopt(h)

    __deepcopy__ = lambda self, memo: self.clone()  # noqa: E731

    def shape_check(self, *shapes):
        """Output shapes of every submodule for inputs of these shapes, without
        computing (meta tensors): ctorch's, torch.nn has no such method."""
        return _api.nn_module_shape_check(self, [list(s) for s in shapes])


def _rt_dtype(name):
    from ._dispatch import E
    return E[name]


class _Builtin(Module):
    """A module of one of the library's built-in kinds (the generated classes)."""
    _kind = None
    _structure = None  # how Python groups the flat outputs, e.g. LSTM: (output, (h_n, c_n))

    def __init__(self, *pairs):
        h = _vp()
        # Module-valued arguments (TransformerEncoder's encoder_layer, norm)
        # go by handle: the library copies or keeps them as torch.nn does.
        mods = [(k, v) for k, v in pairs if isinstance(v, Module)]
        text = _args_text([(k, v) for k, v in pairs if not isinstance(v, Module)]).encode()
        if mods:
            names = (_c.c_char_p * len(mods))(*[k.encode() for k, _ in mods])
            hs = (_vp * len(mods))(*[v._h for _, v in mods])
            check(lib.ctorch_nn_new_with_modules(_byref(h), self._kind.encode(), text, names, hs, len(mods)))
        else:
            check(lib.ctorch_nn_new(_byref(h), self._kind.encode(), text))
        object.__setattr__(self, "_h", h)
        object.__setattr__(self, "_key", None)
        object.__setattr__(self, "_modules", collections.OrderedDict())

    def forward(self, *inputs, **kwargs):
        flat = []
        for x in inputs:  # LSTM's hx=(h0, c0) -> h0, c0
            flat.extend(x if isinstance(x, (tuple, list)) else (x,))
        try:  # the generated wrapper (api.json: outputs filled into a caller's array)
            res = tuple(_api.nn_module_forward_n(self, flat, _args_text(kwargs.items()) if kwargs else None))
        except _rt.CtorchError:
            _raise_pending()
            raise
        _pending.exc = None
        if self._structure is not None:
            return self._structure(res)
        return res[0] if len(res) == 1 else res

    __call__ = forward


_BUILTINS = {}


def _builtin_class(h):
    """The Python class of a library-made module: its kind's generated class."""
    k = _cp()
    check(lib.ctorch_nn_module_kind(_byref(k), h))
    return _BUILTINS.get(k.value.decode(), _Builtin)


# ---- containers -------------------------------------------------------------------------------


class Sequential(_Builtin):
    """nn.Sequential(*modules) or nn.Sequential(OrderedDict(name=module))."""
    _kind = "Sequential"

    def __init__(self, *modules):
        _Builtin.__init__(self)
        if len(modules) == 1 and isinstance(modules[0], collections.OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for m in modules:
                self.append(m)

    def append(self, module):
        check(lib.ctorch_nn_module_append(self._h, module._h))
        self._modules[str(len(self._modules))] = module
        return self

    def __len__(self):
        n = _sz()
        check(lib.ctorch_nn_module_num_children(_byref(n), self._h))
        return n.value

    def __getitem__(self, i):
        kids = list(self.children())
        return kids[i]

    def __iter__(self):
        return iter(list(self.children()))


class ModuleList(Sequential):
    """nn.ModuleList(modules=None): holds modules; has no forward."""
    _kind = "ModuleList"

    def __init__(self, modules=None):
        Sequential.__init__(self, *(modules or ()))

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self


class ModuleDict(_Builtin):
    """nn.ModuleDict(modules=None): holds named modules; has no forward."""
    _kind = "ModuleDict"

    def __init__(self, modules=None):
        _Builtin.__init__(self)
        for name, m in (modules or {}).items():
            self.add_module(name, m)

    def __getitem__(self, name):
        return getattr(self, name)

    def __setitem__(self, name, module):
        self.add_module(name, module)

    def __len__(self):
        return len(list(self.named_children()))

    def keys(self):
        return [k for k, _ in self.named_children()]

    def items(self):
        return list(self.named_children())

    def values(self):
        return [m for _, m in self.named_children()]


for _cls in (Sequential, ModuleList, ModuleDict):
    _BUILTINS[_cls._kind] = _cls
