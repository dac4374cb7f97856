"""Python binding: names shared by its emitters (capi, api, nn). Imports none of them."""
from __future__ import annotations

import keyword


def py_name(n: str) -> str:
    """Schema argument names that are Python keywords get a trailing '_' (from -> from_)."""
    return n + "_" if keyword.iskeyword(n) else n
