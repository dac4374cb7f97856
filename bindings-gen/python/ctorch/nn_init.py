"""torch.nn.init through the generated _api.init_* (in place, no graph
recorded): PyTorch's names, defaults and string arguments, returning the tensor."""
from . import _api, _capi

_NL = {k[len("CTORCH_NONLINEARITY_"):].lower(): v for k, v in _capi.ENUMS["ctorch_nonlinearity"].items()}
_FAN = {k[len("CTORCH_"):].lower(): v for k, v in _capi.ENUMS["ctorch_fan_mode"].items()}


def uniform_(t, a=0.0, b=1.0):
    _api.init_uniform_(t, a, b)
    return t


def normal_(t, mean=0.0, std=1.0):
    _api.init_normal_(t, mean, std)
    return t


def constant_(t, val):
    _api.init_constant_(t, val)
    return t


def zeros_(t):
    _api.init_zeros_(t)
    return t


def ones_(t):
    _api.init_ones_(t)
    return t


def xavier_uniform_(t, gain=1.0):
    _api.init_xavier_uniform_(t, gain)
    return t


def xavier_normal_(t, gain=1.0):
    _api.init_xavier_normal_(t, gain)
    return t


def kaiming_uniform_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    _api.init_kaiming_uniform_(t, a, _FAN[mode], _NL[nonlinearity])
    return t


def kaiming_normal_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    _api.init_kaiming_normal_(t, a, _FAN[mode], _NL[nonlinearity])
    return t
