"""Autograd beyond Tensor.backward: torch.autograd.grad and grad-mode scopes."""
import ctypes as _c

from . import _rt
from ._rt import check, lib, wrap_list, tensor_array, byref, c_void_p

_SCOPES = {"no_grad": 0, "enable_grad": 1, "inference_mode": 2}


class _Scope:
    """A grad-mode scope (ctorch_autograd_scope_enter/leave) on this thread."""

    def __init__(self, kind):
        self._kind = kind
        self._h = None

    def __enter__(self):
        h = c_void_p()
        check(lib.ctorch_autograd_scope_enter(byref(h), self._kind))
        self._h = h.value
        return self

    def __exit__(self, *exc):
        h, self._h = self._h, None
        check(lib.ctorch_autograd_scope_leave(h))
        return False

    def __call__(self, fn):
        def wrapped(*a, **k):
            with _Scope(self._kind):
                return fn(*a, **k)
        wrapped.__name__ = getattr(fn, "__name__", "wrapped")
        return wrapped


def no_grad():
    return _Scope(_SCOPES["no_grad"])


def enable_grad():
    return _Scope(_SCOPES["enable_grad"])


def inference_mode():
    return _Scope(_SCOPES["inference_mode"])


def is_grad_enabled():
    v = _c.c_int()
    check(lib.ctorch_autograd_is_grad_enabled(byref(v)))
    return bool(v.value)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """torch.autograd.grad: gradients of outputs with respect to inputs (a list)."""
    outs, n_out = tensor_array(outputs)
    ins, n_in = tensor_array(inputs)
    if grad_outputs is None:
        gos, n_go = None, 0
    else:
        gos, n_go = tensor_array(grad_outputs, optional=True)
    if retain_graph is None:
        retain_graph = create_graph
    lh = c_void_p()
    check(lib.ctorch_autograd_grad(byref(lh), outs, n_out, ins, n_in, gos, n_go, int(bool(retain_graph)),
                                   int(bool(create_graph)), int(bool(allow_unused))))
    return wrap_list(lh.value)
