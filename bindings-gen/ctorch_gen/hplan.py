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

from .apimodel import Api, Elements, Function, Handle, NnModule, OpArg, Param, QueryCall


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
    # A method of its owner's class (the receiver is the first parameter a caller passes,
    # and the owner is no list handle, which becomes the language's list instead).
    receiver: bool = False


@dataclass(eq=False)
class Slot:
    """One C parameter of a header function's typed wrapper and what the wrapper does
    with it (call_plan). Each language writes its own text for each `how`:

    out: "query_buffer" (a caller buffer sized by buffer_size.product: the queries are
         called first), "filled_buffer" (handles into an array of buffer_size.capacity,
         the count reported), "reported_buffer" (a buffer whose length the call reports:
         ask, grow, ask again), "counter" (the length or count a buffer rule reports: read
         to cut the result, not returned; `counts` is that buffer), "out" (returned);
    in:  "length" (a length or capacity: of `buffer`, a buffer earlier in the list, else
         of the array p.length_of[0]), "shared_length" (one length for several arrays
         a caller passes, Function.shared_length_arrays: the given ones must agree; some
         may be nullable, length_from), "element_lengths" (taken from an array of arrays'
         elements), "int_arrays" (a list of int lists), "array", "in"."""
    p: Param
    how: str
    buffer: Optional["Slot"] = None
    counts: Optional[Param] = None


@dataclass(eq=False)
class CallPlan:
    slots: List[Slot]
    reported: Optional[Slot]  # the (last) "reported_buffer": the call is repeated until it fits
    freed_always: bool  # the call frees a handle whatever its status (ownership "freed", when "always")


def call_plan(f: Function) -> CallPlan:
    """What Python's, Node's and Go's typed wrapper of header function f does with each
    C parameter, in the C order (a length takes its buffer's size only from a buffer
    before it)."""
    counters = f.buffer_counters
    counted = {p.buffer_size.length: p for p in f.params if p.buffer_rule == "reported"}
    counted.update({p.buffer_size.count: p for p in f.params if p.buffer_rule == "filled"})
    slots, sized, reported = [], {}, None
    for p in f.params:
        if p.direction == "out":
            if p.buffer_size:
                s = Slot(p, {"query": "query_buffer", "filled": "filled_buffer"}.get(p.buffer_rule, "reported_buffer"))
                sized[p.array.length] = s
                if s.how == "reported_buffer":
                    reported = s
            elif p.name in counters:
                s = Slot(p, "counter", counts=counted[p.name])
            else:
                s = Slot(p, "out")
        elif p.role in ("length", "capacity"):
            if p.name in sized:
                s = Slot(p, "length", buffer=sized[p.name])
            elif p.length_from is not None or len(f.shared_length_arrays(p)) > 1:
                s = Slot(p, "shared_length")
            else:
                s = Slot(p, "length")
        elif p.element_lengths_of:
            s = Slot(p, "element_lengths")
        elif p.array and p.array.element_length:
            s = Slot(p, "int_arrays")
        elif p.array:
            s = Slot(p, "array")
        else:
            s = Slot(p, "in")
        slots.append(s)
    freed = any(p.ownership == "freed" and p.when == "always" for p in f.params)
    return CallPlan(slots, reported, freed)


class SlotWriter:
    """One header function's typed wrapper, written slot by slot: the walk of its
    call plan that every language's emitter shares. walk() visits the slots in C
    order and calls the method named by each slot's `how` (Slot), which a
    language's subclass writes: query_buffer, filled_buffer, reported_buffer, out
    (for "counter" slots too), buffer_length (the length or capacity of a query or
    reported buffer: the capacity of a filled one is its literal), array_length,
    shared_length, element_lengths and argument ("int_arrays", "array", "in").
    They append the language's text to pre (before the call), cargs (the C call's
    arguments), post (after it) and rets (what it returns)."""

    def __init__(self, f: Function, funcs: Dict[str, Function]):
        self.f, self.funcs = f, funcs
        self.plan = call_plan(f)
        self.pre: List[str] = []
        self.post: List[str] = []
        self.cargs: List[str] = []
        self.rets: List[str] = []
        self._queries = 0

    def walk(self) -> "SlotWriter":
        for s in self.plan.slots:
            how = s.how
            if how == "counter":
                self.out(s)
            elif how == "length":
                b = s.buffer
                if b is None:
                    self.array_length(s)
                elif b.how == "filled_buffer":
                    self.cargs.append(str(b.p.buffer_size.capacity))
                else:
                    self.buffer_length(s, b)
            elif how in ("int_arrays", "array", "in"):
                self.argument(s)
            else:
                getattr(self, how)(s)
        return self

    def query_terms(self, s: Slot) -> List[str]:
        """The expressions of a query buffer's size terms (buffer_size.product), each
        query's call written before (with query and query_arg)."""
        self._queries = 0
        return [self._query(c) for c in s.p.buffer_size.product]

    def _query(self, call: QueryCall) -> str:
        f = self.funcs[call.call]
        args = []
        for q in f.params:
            if q.direction == "out":
                continue
            src = call.args[q.name]
            args.append(self._query(src) if isinstance(src, QueryCall) else self.query_arg(f, q, src))
        out = next(q for q in f.params if q.direction == "out")
        self._queries += 1
        return self.query(f, out, args, self._queries)

    def query_arg(self, f: Function, q: Param, src: str) -> str:
        """The expression passing the wrapper's parameter src as q of the query function f."""
        raise NotImplementedError

    def query(self, f: Function, out: Param, args: List[str], k: int) -> str:
        """Writes the k-th query (f called with args, its result in out) into pre and
        returns the variable that holds the result."""
        raise NotImplementedError


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
        self_ = first.name if owner else None
        res.append(Planned(f=f, name=f.name, short=short, owner=owner, method=method,
                           self=self_, skip=skip_reason(f, lists), ins=ins, outs=outs, params=params,
                           receiver=bool(owner and ins and self_ == ins[0].name and owner not in lists)))
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


def quick_overloads(ms: List[Function], types, most: int = 3) -> List[Tuple[Function, List[OpArg], List[str]]]:
    """The overloads of a group that its dispatcher (Python's, Node's) tries first by the exact
    types of the positional arguments, before the general matcher: (f, its required arguments,
    their schema types) of the first `most` members whose required arguments are all
    positional and each of a type in `types` (the language's quick tests: Tensor, Scalar,
    int, SymInt, float, bool), neither a list nor optional."""
    out = []
    for f in ms:
        op = f.op
        req = [a for a in op.args if not a.kwarg_only and a.default is None]
        if any(a.kwarg_only and a.default is None for a in op.args):
            continue
        kinds = [a.base if not a.list and not a.optional else None for a in req]
        if not req or None in kinds or any(k not in types for k in kinds) or len(out) >= most:
            continue
        out.append((f, req, kinds))
    return out


def class_handles(doc: Api) -> List[Handle]:
    """The handle types a binding gives a class of their own: all but ctorch_tensor (the
    runtime's Tensor) and the list handles (the language's lists)."""
    lists = doc.list_handles
    return [h for h in doc.handles if h.name != "ctorch_tensor" and h.name not in lists]


def generated_nn_kinds(doc: Api) -> List[NnModule]:
    """The module kinds whose classes the bindings generate (all but the HANDWRITTEN containers)."""
    return [k for k in doc.nn_modules if k.kind not in HANDWRITTEN]


def split_groups(doc: Api) -> List[Tuple[str, List[Function], List[Function]]]:
    """api.json's overload groups of operators, each split by the unsafe mark
    (ops_json.unsafe; Function.is_unsafe): (name, checked members, unchecked members).
    A binding offers the unchecked ones only under a name that says so (Python
    ctorch.unchecked.<name>, Node ct.unchecked.<name>, Go Unchecked<Name>, Rust
    `unsafe fn`): the ordinary name reaches the checked members alone, so no
    caller runs an operator that can crash the process without saying so."""
    funcs = doc.functions_by_name
    out = []
    for g, members in doc.overload_groups.items():
        ms = [funcs[c] for c in members]
        out.append((g, [m for m in ms if not m.is_unsafe], [m for m in ms if m.is_unsafe]))
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
