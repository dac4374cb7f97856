"""Node binding: names shared by its emitters (capi, dts, nn). Imports none of them."""
from __future__ import annotations


JS_RESERVED = set("""break case catch class const continue debugger default delete do else enum export extends
false finally for function if implements import in instanceof interface let new null package private protected
public return static super switch this throw true try typeof var void while with yield arguments eval""".split())


def js_name(n: str) -> str:
    return n + "_" if n in JS_RESERVED else n
