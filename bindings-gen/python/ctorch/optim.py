"""Optimizers (torch.optim's update rules) and learning-rate schedules: the
generated _api.Optimizer / _api.LrScheduler classes (their methods are the
ctorch_optimizer_* / ctorch_lr_scheduler_* functions), with PyTorch's
constructors: keyword options, betas, properties."""
from . import _api, _capi

_KINDS = {k[len("CTORCH_OPTIM_"):].lower(): v for k, v in _capi.ENUMS["ctorch_optimizer_kind"].items()}


class Optimizer(_api.Optimizer):
    """An optimizer over a list of parameters, or over every parameter of an
    nn.Module (recursive, in model.parameters()'s order: Adam(model) is
    Adam(model.parameters()), step for step); keyword arguments set the
    fields of ctorch_optim_options_v2 (lr, weight_decay, momentum, betas, eps, ...)."""
    kind = None

    def __init__(self, params, **options):
        from . import nn_modules
        module = params if isinstance(params, nn_modules.Module) else None
        params = None if module is not None else list(params)
        self._params = params
        opts = _api.optim_options_default_v2(_KINDS[self.kind])
        betas = options.pop("betas", None)
        if betas is not None:
            options["beta1"], options["beta2"] = betas
        for k, v in options.items():
            if not hasattr(opts, k):
                raise TypeError(f"{type(self).__name__}: unknown option {k!r}")
            setattr(opts, k, v)
        if module is not None:  # ctorch_optimizer_new_from_module_v2: no parameter list is made here
            self._h = _api.optimizer_new_from_module_v2(_KINDS[self.kind], module, opts)._take()
        else:
            self._h = _api.optimizer_new_v2(_KINDS[self.kind], params, opts)._take()

    def zero_grad(self, set_to_none=True):
        _api.optimizer_zero_grad(self, set_to_none)

    @property
    def lr(self):
        return self.get_lr(0)

    @lr.setter
    def lr(self, v):
        for g in range(self.num_param_groups()):
            self.set_lr(g, v)


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


class _Scheduler(_api.LrScheduler):
    def get_last_lr(self):
        return [_api.lr_scheduler_get_last_lr(self, 0)]


class StepLR(_Scheduler):
    def __init__(self, optimizer, step_size, gamma=0.1):
        self._h = _api.lr_scheduler_step_lr(optimizer, step_size, gamma)._take()


class CosineAnnealingLR(_Scheduler):
    def __init__(self, optimizer, T_max, eta_min=0.0):
        self._h = _api.lr_scheduler_cosine(optimizer, T_max, eta_min)._take()
