"""torch.nn.utils' gradient clipping: over an nn.Module (its parameters,
recursive, as model.parameters(); ctorch_nn_module_clip_grad_norm_/_value_)
or over an iterable of parameters (ctorch_clip_grad_norm_/_value_). The
same arithmetic either way, bit for bit as the installed PyTorch's."""
from . import _api


def _module(parameters):
    from . import nn_modules
    return parameters if isinstance(parameters, nn_modules.Module) else None


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales the gradients in place; returns the total norm before clipping (a float)."""
    m = _module(parameters)
    if m is not None:
        return _api.nn_module_clip_grad_norm_(m, float(max_norm), float(norm_type), error_if_nonfinite)
    return _api.clip_grad_norm_(list(parameters), float(max_norm), float(norm_type), error_if_nonfinite)


def clip_grad_value_(parameters, clip_value):
    """Clamps every gradient to [-clip_value, clip_value] in place."""
    m = _module(parameters)
    if m is not None:
        return _api.nn_module_clip_grad_value_(m, float(clip_value))
    return _api.clip_grad_value_(list(parameters), float(clip_value))
