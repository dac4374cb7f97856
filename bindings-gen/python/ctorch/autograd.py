"""Autograd beyond Tensor.backward: torch.autograd.grad and grad-mode scopes
(the C functions are the generated _api.autograd_*; this is their Python face:
context managers, decorators and PyTorch's defaults)."""
from . import _api, _capi

_SCOPES = {k[len("CTORCH_SCOPE_"):].lower(): v for k, v in _capi.ENUMS["ctorch_autograd_scope_kind"].items()}


class _Scope:
    """A grad-mode scope (ctorch_autograd_scope_enter/leave) on this thread."""

    def __init__(self, kind):
        self._kind = kind
        self._s = None

    def __enter__(self):
        self._s = _api.autograd_scope_enter(self._kind)
        return self

    def __exit__(self, *exc):
        s, self._s = self._s, None
        _api.autograd_scope_leave(s)
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


is_grad_enabled = _api.autograd_is_grad_enabled


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """torch.autograd.grad: gradients of outputs with respect to inputs (a list)."""
    if retain_graph is None:
        retain_graph = create_graph  # PyTorch's default
    return _api.autograd_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)
