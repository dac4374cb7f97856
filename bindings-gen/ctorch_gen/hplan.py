"""What a binding generates for the header's functions (origin "header" in
api.json), shared by the Python, Node and Go emitters so they agree on
which functions become typed wrappers, which handle type each belongs to,
and why a function is left to the language's hand-written runtime.

Reads api.json's facts only: directions, ownership, arrays and their length
or capacity parameters, buffer_size rules, null_result, boolean, lifetime,
inline_body, the handles' free functions.

Also what every language's emitters share beyond the header functions (a
function's doc text, an operator argument's overload kind, the nn module
conventions): the layer below the language packages go/, node/, py/, rust/,
so that none of them imports another.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from .apimodel import Api, Elements, Function, OpArg, Param


def handle_stems(doc: Api) -> List[tuple]:
    """(stem, handle name) longest stem first: ctorch_tensor_list -> tensor_list."""
    out = [(h.name[len("ctorch_"):], h.name) for h in doc.handles]
    return sorted(out, key=lambda x: -len(x[0]))


def class_name(handle: str) -> str:
    """ctorch_lr_scheduler -> LrScheduler."""
    return "".join(p[:1].upper() + p[1:] for p in handle[len("ctorch_"):].split("_"))


def list_handles(doc: Api) -> Dict[str, Elements]:
    """Handles that are lists (handles[].elements without a key): a binding
    turns each into its language's list as soon as a call returns one."""
    return doc.list_handles


def reader_name(handle: str) -> str:
    """The generated reader of a list handle: ctorch_tensor_list -> read_tensor_list."""
    return "read_" + handle[len("ctorch_"):]


def skip_reason(f: Function, lists=()) -> Optional[str]:
    """Why no typed wrapper is generated for header function f (None: one is)."""
    if f.inline:
        return None  # built from inline_body
    if f.returns.kind == "none":
        return "frees: the handle classes' dispose/finalizer call it"
    for p in f.params:
        t = p.type
        if t.kind == "handle" and t.name in lists and p.direction == "in":
            return (f"reads a {t.name}, which the generated {reader_name(t.name)} turns into the "
                    "language's list as soon as a call returns one (handles[].elements)")
        if t.kind == "callback":
            return "takes a C callback (needs a trampoline into the language)"
        if t.kind == "opaque":
            return "DLPack structs: raw memory handed between libraries (hand-written fast path)"
        if p.ownership == "consumed":
            return "takes ownership of raw memory"
        if t.kind == "void" and p.direction == "in" and not p.array:
            return "an untyped void * context"
        if p.direction == "out" and p.array and t.kind == "handle" and \
                p.buffer_rule != "filled":
            return "takes a C callback (needs a trampoline into the language)"
    return None


@dataclass(eq=False)
class Planned:
    """What a binding makes of one header function."""
    f: Function
    name: str
    short: str  # the name without ctorch_
    owner: Optional[str]  # the handle type it is a method of, or None
    method: Optional[str]  # its name as that handle's method
    self: Optional[str]  # the parameter that is the receiver
    skip: Optional[str]  # why no typed wrapper is generated, or None
    ins: List[Param]  # the parameters a caller passes
    outs: List[Param]  # the results a wrapper returns
    params: List[Param]


def plan(doc: Api) -> List[Planned]:
    """One entry per header function: name, short (without ctorch_), owner
    (the handle type it is a method of, or None), method, skip (reason or
    None), ins (the parameters a caller passes: arrays take their length
    from the list, capacities from buffer_size), outs."""
    stems = handle_stems(doc)
    lists = list_handles(doc)
    res = []
    for f in doc.functions:
        if f.origin != "header":
            continue
        short = f.name[len("ctorch_"):]
        params = f.params
        derived = set()
        for p in params:
            if p.role in ("length", "capacity"):
                derived.add(p.name)
        # A buffer's "reported" length and "filled" count outputs are read by
        # the wrapper, not returned (Function.buffer_counters); an array of
        # arrays' element lengths (element_lengths_of) are taken from its elements.
        derived |= f.buffer_counters
        derived |= {p.name for p in params if p.element_lengths_of}
        ins = [p for p in params if p.direction == "in" and p.name not in derived]
        outs = [p for p in params if p.direction == "out" and p.name not in derived]
        owner = method = None
        first = next((p for p in params if p.direction == "in" and p.type.kind == "handle"
                      and not p.pointer), None)
        if first is not None and not f.inline:
            for stem, h in stems:
                if first.type.name == h and short.startswith(stem + "_"):
                    owner, method = h, short[len(stem) + 1:]
                    break
        res.append(Planned(f=f, name=f.name, short=short, owner=owner, method=method,
                           self=first.name if owner else None, skip=skip_reason(f, lists), ins=ins, outs=outs,
                           params=params))
    return res


def func_doc(functions: Dict[str, Function], f: Function) -> str:
    """A function's header text. The header documents each `X_async` with its `X` (one
    comment over the pair, and the section's: a NEW ctorch_work, results after
    ctorch_work_wait), so api.json has no text of its own for them."""
    if f.doc:
        return f.doc
    if f.name.endswith("_async"):
        sync = functions.get(f.name[:-len("_async")])
        if sync and sync.doc:
            return (sync.doc + "\n\nAsynchronous: returns a NEW ctorch_work at once; the results are "
                    "guaranteed only after ctorch_work_wait returns CTORCH_OK.")
    return f"`{f.name}` (C)."


# What a schema argument accepts when overloads are told apart (see _rt / _dispatch).
def kind_of(a: OpArg) -> str:
    b = a.base
    if b in ("SymInt", "DeviceIndex"):
        b = "int"
    if a.list:
        k = b + "[]"
        if a.elements_optional:
            k = b + "?[]"
    else:
        k = b
    if a.optional:
        k += "?"
    return k


def split_groups(doc: Api) -> List[Tuple[str, List[Function], List[Function]]]:
    """api.json's overload groups of operators, each split by the unsafe mark
    (ops_json.unsafe; Function.unsafe): (name, checked members, unchecked members).
    A binding offers the unchecked ones only under a name that says so (Python
    ctorch.unchecked.<name>, Node ct.unchecked.<name>, Go Unchecked<Name>, Rust
    `unsafe fn`): the ordinary name reaches the checked members alone, so no
    caller runs an operator that can crash the process without saying so."""
    funcs = doc.functions_by_name
    out = []
    for g, members in doc.overload_groups.items():
        ms = [funcs[c] for c in members]
        out.append((g, [m for m in ms if not m.unsafe], [m for m in ms if m.unsafe]))
    return out


def public_name(ms: List[Function]) -> Optional[Tuple[str, str]]:
    """Where torch's Python API has a group of overloads ms: (python_module or "", the
    name in it: linalg_svd -> ("linalg", "svd")) when one of them is a public function,
    else None. Every binding exports the group there (ctorch.linalg.svd, ct.linalg.svd)."""
    if not any(m.op.public and "function" in m.op.variants for m in ms):
        return None
    op = ms[0].op
    mod = op.python_module or ""
    return mod, (op.name[len(mod) + 1:] if mod and op.name.startswith(mod + "_") else op.name)


# The containers: every binding writes their classes by hand (their constructors take modules).
HANDWRITTEN = {"Sequential", "ModuleList", "ModuleDict"}


# How the flat outputs of a forward (the C API flattens them) are grouped, as
# output indices nested like the result: LSTM returns (output, (h_n, c_n)).
# Shared by the bindings' emitters (go, node, py, rust nn.py), each in its own syntax.
OUTPUT_GROUPS = {"LSTM": [0, [1, 2]]}
