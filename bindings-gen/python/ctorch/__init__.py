"""ctorch for Python: the whole ctorch C API through ctypes (no compiled
extension), generated from api.json.

    import ctorch
    a = ctorch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = (a @ a).relu().sum()
    b.backward()
    print(a.grad)

Every ATen operator is a function with PyTorch's keyword arguments and
defaults (ctorch.add(a, b, alpha=2), ctorch.nn.cross_entropy_loss(...),
ctorch.linalg.norm(...)), a Tensor method where PyTorch has one, and, per
overload, ctorch.ops.<name>_<overload> (ctorch.ops.add_Tensor). Beside them:
autograd (ctorch.autograd), optimizers (ctorch.optim), data loading
(ctorch.data), DLPack exchange with PyTorch and checkpoints in torch.save's
format (ctorch.interop, re-exported here: from_torch, to_torch,
to_dlpack_capsule, save, load, save_dict, load_dict, save_safetensors,
load_safetensors, from_handle).

This is the only Python module called ctorch: the repository's former
python/ctorch.py (DLPack and checkpoints only) is ctorch.interop now; what
changed for its callers is listed there and in docs/interop-tensors.md.
"""
import sys as _sys
import types as _types

from . import _capi, _rt
from ._rt import (CtorchError, Device, Tensor, dtype, layout, memory_format, lib, flush_frees, check as _check,
                  wrap as _wrap, byref as _byref, c_void_p as _vp)
from ._dispatch import E as _E, DTYPES as _DTYPES, LAYOUTS as _LAYOUTS
from . import _ops
from . import _ints
# The operators' fast path builds its int64 arguments with _ops._c_int64:
# the range-checked form (_ints: ctypes would wrap 2**64 + 2 to 2).
_ops._c_int64 = _ints.i64
from . import _api as capi  # every hand-written C function of api.json, typed (ctorch.capi.tensor_dim(t), ...)
_rt._counter = capi.memory_cpu_counter()  # the live counter the collected tensors' release looks at

__version__ = _capi.CTORCH_VERSION
torch_version = _capi.TORCH_VERSION
abi_hash = _capi.ABI_HASH

# ---- enums as module attributes: ctorch.float32, ctorch.channels_last, ... ------------
for _v in _E.values():
    globals()[_v._name] = _v

ops = _types.ModuleType("ctorch.ops", "Every generated operator, as torch.ops.aten names them: ops.add (all "
                        "overloads), ops.add.Tensor, ops.relu.default, ...")
for _n in _ops.GROUPS:
    setattr(ops, _n, getattr(_ops, _n))
_sys.modules["ctorch.ops"] = ops


def _submodule(name, doc):
    m = _types.ModuleType(f"ctorch.{name}", doc)
    _sys.modules[f"ctorch.{name}"] = m
    return m


nn = _submodule("nn", "torch._C._nn's operators (python_module: nn), and nn.init.")
linalg = _submodule("linalg", "torch.linalg")
fft = _submodule("fft", "torch.fft")
special = _submodule("special", "torch.special")
sparse = _submodule("sparse", "torch.sparse")
nested = _submodule("nested", "torch.nested")
for _mod in ("nn", "linalg", "fft", "special", "sparse", "nested"):
    for _n, _f in getattr(_ops, f"PUBLIC_{_mod.upper()}", {}).items():
        setattr(globals()[_mod], _n, _f)
# The operators api.json marks unsafe (ops_json.unsafe: bad input can crash the
# process, as Rust's `unsafe fn`) exist only here, never as ctorch.X, ops.X or a
# Tensor method: ctorch.unchecked._remove_batch_dim(t, 0, 1, 0) says what it risks.
unchecked = _submodule("unchecked", "Operators that do not check their input (api.json ops_json.unsafe): "
                       "a wrong argument can crash the process. Each has its reason in its C doc comment.")
for _n, _f in _ops.UNCHECKED.items():
    setattr(unchecked, _n, _f)

# ---- Tensor: generated methods and operators ------------------------------------------


def _method_self_kw(g):
    def m(self, *args, **kwargs):
        return g(*args, self=self, **kwargs)
    m.__name__ = g.__name__
    m.__doc__ = g.__doc__
    return m


for _n, _g in _ops.METHODS.items():
    setattr(Tensor, _n, _method_self_kw(_g) if _n in _ops.METHODS_SELF_NOT_FIRST else _g)
for _dunder, _n in _ops.OPERATORS.items():
    if hasattr(_ops, _n):
        setattr(Tensor, _dunder, getattr(_ops, _n))
Tensor.__hash__ = object.__hash__  # __eq__ is elementwise, as in PyTorch
Tensor.__radd__ = lambda self, o: _ops.add(self, o)
Tensor.__rmul__ = lambda self, o: _ops.mul(self, o)
Tensor.__rsub__ = lambda self, o: _ops.rsub(self, o)
Tensor.__rtruediv__ = lambda self, o: _ops.mul(_ops.reciprocal(self), o)
Tensor.__rpow__ = lambda self, o: _ops.pow(o, self)

from ._tensor import (tensor, from_buffer, manual_seed, set_num_threads, get_num_threads, memory_bytes,  # noqa: E402
                      device, Generator)
from . import autograd, optim, data, interop, lm  # noqa: E402
from .autograd import no_grad, enable_grad, inference_mode  # noqa: E402
from .interop import (from_torch, to_torch, to_dlpack_capsule, from_dlpack, from_handle, save, load,  # noqa: E402
                      save_dict, load_dict, save_safetensors, load_safetensors,
                      save_npy, load_npy, save_npz, load_npz)
from ._tensor import set_printoptions  # noqa: E402
jit = _submodule("jit", "TorchScript modules as torch.jit loads and saves them: jit.load(f, map_location=None, "
                 "flags=0) and jit.save(m, f), f a path, bytes (load) or a file object such as io.BytesIO.")
jit.load, jit.save = interop.jit_load, interop.jit_save
from . import nn_init as _nn_init  # noqa: E402

nn.init = _nn_init
# torch.nn's module classes: Module, Parameter, the containers, and every
# built-in kind of the library's catalogue (generated: _nn_classes.py).
from . import nn_modules as _nn_modules, _nn_classes  # noqa: E402
for _n in ("Module", "Parameter", "Sequential", "ModuleList", "ModuleDict"):
    setattr(nn, _n, getattr(_nn_modules, _n))
for _n, _cls in _nn_classes.CLASSES.items():
    setattr(nn, _n, _cls)
from . import nn_utils as _nn_utils  # noqa: E402
nn.utils = _nn_utils  # clip_grad_norm_ / clip_grad_value_ over a Module or a parameter list
# torch.nn.parallel's DistributedDataParallel is ctorch.distributed's (that
# module holds the process groups it runs over).
from . import distributed  # noqa: E402
nn.parallel = _submodule("nn.parallel", "torch.nn.parallel: DistributedDataParallel (ctorch.distributed's).")
nn.parallel.DistributedDataParallel = distributed.DistributedDataParallel

# Public operators at the top level (ctorch.add, ctorch.relu, ...), without
# replacing the hand-written names above; then PyTorch's dtype spellings.
for _n, _f in _ops.PUBLIC_TORCH.items():
    if _n not in globals():
        globals()[_n] = _f
float, double, long, int, half, cfloat, cdouble, bool = (  # noqa: A001 (PyTorch's spellings)
    _E["CTORCH_FLOAT32"], _E["CTORCH_FLOAT64"], _E["CTORCH_INT64"], _E["CTORCH_INT32"], _E["CTORCH_FLOAT16"],
    _E["CTORCH_COMPLEX64"], _E["CTORCH_COMPLEX128"], _E["CTORCH_BOOL"])
