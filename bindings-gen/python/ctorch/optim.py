"""Optimizers (torch.optim's update rules, through ctorch_optimizer_*) and
learning-rate schedules."""
import ctypes as _c

from . import _capi
from ._rt import check, lib, byref, c_void_p, tensor_array, wrap_list

_KINDS = {k[len("CTORCH_OPTIM_"):].lower(): v for k, v in _capi.ENUMS["ctorch_optimizer_kind"].items()}
_Options = _capi.ctorch_optim_options


class Optimizer:
    """An optimizer over a list of parameters; keyword arguments set the
    fields of ctorch_optim_options (lr, weight_decay, momentum, betas, eps, ...)."""
    kind = None

    def __init__(self, params, **options):
        params = list(params)
        self._params = params
        opts = _Options()
        check(lib.ctorch_optim_options_default(byref(opts), _KINDS[self.kind]))
        betas = options.pop("betas", None)
        if betas is not None:
            options["beta1"], options["beta2"] = betas
        for k, v in options.items():
            if not hasattr(opts, k):
                raise TypeError(f"{type(self).__name__}: unknown option {k!r}")
            setattr(opts, k, v)
        arr, n = tensor_array(params)
        h = c_void_p()
        check(lib.ctorch_optimizer_new(byref(h), _KINDS[self.kind], arr, n, byref(opts)))
        self._h = h.value

    def step(self):
        check(lib.ctorch_optimizer_step(self._h))

    def zero_grad(self, set_to_none=True):
        check(lib.ctorch_optimizer_zero_grad(self._h, 1 if set_to_none else 0))

    @property
    def lr(self):
        v = _c.c_double()
        check(lib.ctorch_optimizer_get_lr(byref(v), self._h, 0))
        return v.value

    @lr.setter
    def lr(self, v):
        n = _c.c_size_t()
        check(lib.ctorch_optimizer_num_param_groups(byref(n), self._h))
        for g in range(n.value):
            check(lib.ctorch_optimizer_set_lr(self._h, g, v))

    def save(self, path):
        check(lib.ctorch_optimizer_save(self._h, str(path).encode()))

    def load(self, path):
        check(lib.ctorch_optimizer_load(self._h, str(path).encode()))

    def __del__(self):
        if getattr(self, "_h", None):
            lib.ctorch_optimizer_free(self._h)
            self._h = None


class SGD(Optimizer):
    kind = "sgd"


class Adam(Optimizer):
    kind = "adam"


class AdamW(Optimizer):
    kind = "adamw"


class RMSprop(Optimizer):
    kind = "rmsprop"


class Adagrad(Optimizer):
    kind = "adagrad"


class _Scheduler:
    def step(self):
        check(lib.ctorch_lr_scheduler_step(self._h))

    def get_last_lr(self):
        v = _c.c_double()
        check(lib.ctorch_lr_scheduler_get_last_lr(byref(v), self._h, 0))
        return [v.value]

    def __del__(self):
        if getattr(self, "_h", None):
            lib.ctorch_lr_scheduler_free(self._h)
            self._h = None


class StepLR(_Scheduler):
    def __init__(self, optimizer, step_size, gamma=0.1):
        h = c_void_p()
        check(lib.ctorch_lr_scheduler_step_lr(byref(h), optimizer._h, step_size, gamma))
        self._h = h.value


class CosineAnnealingLR(_Scheduler):
    def __init__(self, optimizer, T_max, eta_min=0.0):
        h = c_void_p()
        check(lib.ctorch_lr_scheduler_cosine(byref(h), optimizer._h, T_max, eta_min))
        self._h = h.value
