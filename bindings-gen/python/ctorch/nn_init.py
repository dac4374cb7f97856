"""torch.nn.init through ctorch_init_* (in place, no graph recorded)."""
from . import _capi
from ._rt import check, lib

_NL = {k[len("CTORCH_NONLINEARITY_"):].lower(): v for k, v in _capi.ENUMS["ctorch_nonlinearity"].items()}
_FAN = {"fan_in": 0, "fan_out": 1}


def uniform_(t, a=0.0, b=1.0):
    check(lib.ctorch_init_uniform_(t._h, a, b))
    return t


def normal_(t, mean=0.0, std=1.0):
    check(lib.ctorch_init_normal_(t._h, mean, std))
    return t


def constant_(t, val):
    check(lib.ctorch_init_constant_(t._h, val))
    return t


def zeros_(t):
    check(lib.ctorch_init_zeros_(t._h))
    return t


def ones_(t):
    check(lib.ctorch_init_ones_(t._h))
    return t


def xavier_uniform_(t, gain=1.0):
    check(lib.ctorch_init_xavier_uniform_(t._h, gain))
    return t


def xavier_normal_(t, gain=1.0):
    check(lib.ctorch_init_xavier_normal_(t._h, gain))
    return t


def kaiming_uniform_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    check(lib.ctorch_init_kaiming_uniform_(t._h, a, _FAN[mode], _NL[nonlinearity]))
    return t


def kaiming_normal_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    check(lib.ctorch_init_kaiming_normal_(t._h, a, _FAN[mode], _NL[nonlinearity]))
    return t
