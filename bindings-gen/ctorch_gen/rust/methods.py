"""Tensor methods of the Rust crate -> ctorch/src/methods_gen.rs.

Every operator whose first schema argument is `Tensor self` becomes a method
of `Tensor` (`x.relu()?`, `a.matmul(&b)?`, `x.add_(&y)?`) that takes only the
arguments without a schema default, in schema order, and passes torch's
default for the others (api.json's `default`), so a call names only what
differs from Python's defaults for positional calls: `logits.cross_entropy_loss(&y)?`.
Every argument spelled out is the free function in `ops` (tch-rs's style; the
method's doc links it).

Names: per operator name, one overload is the method named after the
operator (the overload "" if there is one, else `Tensor`, `self`, `int`,
`dim`, else the first); the others keep the `ops` name (`add_Scalar`). Not
generated: out= overloads (their `ops` functions remain), operators api.json
marks unsafe, and names the hand-written runtime already defines (`size`,
`detach`, ... in lib.rs), which stay reachable as `ops::` functions.

Why not a builder or `_opt` variants per operator: ~1,200 builder types would
double what rustc type-checks, and tch-rs users expect a method per operator
plus the fully explicit form, which `ops::` is.
"""
from __future__ import annotations

import math
from typing import List, Optional

from ..apimodel import Api, Function, OpArg
from .names import arg_type, enum_type, ident, result_type

# Methods lib.rs writes by hand (an operator of the same name stays an `ops::` function).
HANDWRITTEN = {"from_raw_checked", "from_raw_opt", "own", "own_opt", "as_raw", "into_raw", "from_slice",
               "shallow_clone", "dim", "size", "numel", "dtype", "layout", "is_floating_point", "to_vec", "item",
               "to_dtype", "backward", "grad", "requires_grad", "requires_grad_", "detach", "to_device", "device",
               "save", "load"}
PRIMARY = ["", "Tensor", "self", "int", "dim", "input"]


def _float(v: float) -> str:
    if math.isnan(v):
        return "f64::NAN"
    if math.isinf(v):
        return "f64::INFINITY" if v > 0 else "f64::NEG_INFINITY"
    r = repr(float(v))
    return r if ("." in r or "e" in r) else r + ".0"


def default_expr(a: OpArg) -> Optional[str]:
    """The Rust value of a's schema default, or None when it cannot be written."""
    d = a.default
    if d is None:
        return None
    k, b, opt = d.kind, a.base, a.optional
    if k == "none":
        return "None" if opt else None
    if a.list:
        if k != "list" or b not in ("int", "SymInt"):
            return None
        e = "&[" + ", ".join(str(int(x)) for x in d.value) + "]"
    elif k == "bool" and b == "bool":
        e = "true" if d.value else "false"
    elif k == "int" and b in ("int", "SymInt") and a.enum is None:
        e = str(int(d.value))
    elif k == "float" and b == "float":
        e = _float(d.value)
    elif k == "scalar" and b == "Scalar":
        sk = d.scalar_kind
        if sk == "INT":
            e = f"Scalar::Int({int(d.value)})"
        elif sk == "BOOL":
            e = f"Scalar::Bool({'true' if d.value else 'false'})"
        elif sk == "FLOAT":
            e = f"Scalar::Float({_float(d.value)})"
        else:
            return None
    elif k == "str" and b == "str":
        e = '"' + str(d.value).replace("\\", "\\\\").replace('"', '\\"') + '"'
    elif k == "enum":
        t = enum_type(d.enum)
        if t not in arg_type(a):
            return None
        e = f"{t}(sys::{d.name})"
    else:
        return None
    return f"Some({e})" if opt else e


def candidates(doc: Api) -> List[dict]:
    res = []
    for f in doc.functions:
        if f.origin != "generated" or f.unsafe or f.op.kind == "out":
            continue
        args = f.op.args
        if not args or args[0].name != "self" or args[0].base != "Tensor" or args[0].optional \
                or args[0].list:
            continue
        res.append(f)
    return res


def method_names(doc: Api) -> List[tuple]:
    """(function, method name) for every method, names unique."""
    groups = {}
    for f in candidates(doc):
        groups.setdefault(f.op.name, []).append(f)
    taken, res = set(HANDWRITTEN), []
    for name, fs in groups.items():
        by_ov = {f.op.overload: f for f in fs}
        primary = next((by_ov[o] for o in PRIMARY if o in by_ov), fs[0])
        for f in [primary] + [g for g in fs if g is not primary]:
            m = name if f is primary else f.name[len("ctorch_"):]
            if m in taken:
                continue
            taken.add(m)
            res.append((f, m))
    return res


def method(f: Function, m: str) -> str:
    op = f.op
    fname = ident(f.name[len("ctorch_"):])
    params, cargs, dflt = [], ["self"], []
    for a in op.args[1:]:
        v = ident(a.name)
        e = default_expr(a)
        if e is None:
            params.append(f"{v}: {arg_type(a)}")
            cargs.append(v)
        else:
            cargs.append(e)
            dflt.append(f"{a.name}={a.default.text}")
    outs = [p for p in f.params if p.direction == "out"]
    rets = [result_type(p)[0] for p in outs]
    ret = "()" if not rets else rets[0] if len(rets) == 1 else f"({', '.join(rets)})"
    lines = [f"    /// `{op.schema}`"]
    if dflt:
        lines.append(f"    /// torch's defaults: `{', '.join(dflt)}`; every argument: [`ops::{fname}`].")
    else:
        lines.append(f"    /// As [`ops::{fname}`].")
    lines.append("    #[inline]")
    lines.append(f"    pub fn {ident(m)}(&self{''.join(', ' + p for p in params)}) -> Result<{ret}> {{")
    lines.append(f"        ops::{fname}({', '.join(cargs)})")
    lines.append("    }")
    return "\n".join(lines)


def emit(doc: Api) -> str:
    ms = method_names(doc)
    out = ["// GENERATED by bindings-gen (emit_rust_methods.py) from api.json; do not edit.",
           "//! A method of `Tensor` per operator whose first argument is `self`, torch's defaults",
           "//! for the arguments that have one (every argument: the `ops` function).",
           "#![allow(non_snake_case, clippy::all)]",
           "use crate::*;", "",
           f"/// {len(ms)} methods, one per non-out= overload of an operator taking `self` first.",
           "impl Tensor {"]
    out += [method(f, m) for f, m in ms]
    out.append("}")
    return "\n".join(out) + "\n"
