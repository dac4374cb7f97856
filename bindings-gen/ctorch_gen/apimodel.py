"""The typed model of api.json that every binding emitter reads (go/, node/,
py/, rust/, through hplan.py's plan of the header functions): one dataclass
per kind of object api.json holds, its fields named as api.json's keys
(`as` is `as_`), plus what the emitters derive from them alike (a function's
unsafe mark, the length parameters a wrapper reads rather than returns, the
list handles).

load_api() reads the document once; a key the model does not know is an
error (api.json grew: the model, and the emitters that read the new fact,
follow). Each object remembers which keys it was read from and in what
order, so to_json() gives back exactly api.json's text of it (the Node
binding copies buffer_size rules and status bit fields as data).

The layer below hplan.py and the language packages; imports nothing of
ctorch_gen.
"""
from __future__ import annotations

import functools
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

_RENAMED_KEYS = {"as": "as_"}  # api.json keys that are Python keywords


@dataclass(eq=False)
class Node:
    """Base of the model's classes: load() from api.json's dict, to_json() back."""
    _keys: typing.ClassVar[tuple] = ()  # the keys api.json gave, in its order (set by load)

    @classmethod
    def load(cls, d: dict):
        if not isinstance(d, dict):
            raise TypeError(f"api.json: {cls.__name__} expected an object, got {type(d).__name__}")
        conv = _converters(cls)
        kw = {}
        for k, v in d.items():
            c = conv.get(k)
            if c is None:
                raise ValueError(f"api.json: {cls.__name__} has no field {k!r} (ctorch_gen/apimodel.py)")
            kw[_RENAMED_KEYS.get(k, k)] = v if v is None else c(v)
        obj = cls(**kw)
        obj._keys = tuple(d)
        return obj

    def has(self, key: str) -> bool:
        """Whether api.json gave this key (even as null)."""
        return key in self._keys

    def to_json(self) -> dict:
        return {k: _to_json(getattr(self, _RENAMED_KEYS.get(k, k))) for k in self._keys}


@functools.lru_cache(maxsize=None)
def _converters(cls) -> Dict[str, Any]:
    """api.json key -> the function reading its value, from cls's type hints (made once
    per class: a document has ~100,000 objects)."""
    back = {v: k for k, v in _RENAMED_KEYS.items()}
    return {back.get(n, n): _converter(tp) for n, tp in typing.get_type_hints(cls).items() if not n.startswith("_")}


def _same(v):
    return v


def _converter(tp):
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Union:
        nodes = [a for a in args if isinstance(a, type) and issubclass(a, Node)]
        rest = [a for a in args if a is not type(None) and a not in nodes]
        if nodes and rest:  # a query argument: a parameter's name, or a nested query
            return lambda v: nodes[0].load(v) if isinstance(v, dict) else v
        return _converter(nodes[0] if nodes else rest[0])
    if origin is list:
        item = _converter(args[0])
        return _same if item is _same else (lambda v: [None if x is None else item(x) for x in v])
    if origin is dict:
        item = _converter(args[1])
        return _same if item is _same else (lambda v: {k: None if x is None else item(x) for k, x in v.items()})
    if isinstance(tp, type) and issubclass(tp, Node):
        return tp.load
    return _same


def _to_json(v):
    if isinstance(v, Node):
        return v.to_json()
    if isinstance(v, list):
        return [_to_json(x) for x in v]
    if isinstance(v, dict):
        return {k: _to_json(x) for k, x in v.items()}
    return v


class _Value:
    """A function result or a struct field: no pointer level of its own (a pointer result's
    c_type says it), read by the emitters like a parameter's C type."""
    pointer = 0


# ---- C types ------------------------------------------------------------------------------

@dataclass(eq=False)
class TypeRef(Node):
    """A parameter's, field's or result's C type, classified (kind: int, float, enum, handle, ...)."""
    kind: Optional[str] = None
    name: Optional[str] = None
    size: Optional[int] = None
    signed: Optional[bool] = None
    signature: Optional["Signature"] = None  # kind "callback": the function pointer's


@dataclass(eq=False)
class SigParam(Node):
    name: Optional[str] = None
    c_type: Optional[str] = None
    type: Optional[TypeRef] = None
    pointer: int = 0


@dataclass(eq=False)
class SigReturn(_Value, Node):
    c_type: Optional[str] = None
    type: Optional[TypeRef] = None


@dataclass(eq=False)
class Signature(Node):
    params: List[SigParam] = field(default_factory=list)
    returns: Optional[SigReturn] = None


@dataclass(eq=False)
class TypeLayout(Node):
    size: Optional[int] = None
    align: Optional[int] = None


# ---- header functions: parameters and results ----------------------------------------------

@dataclass(eq=False)
class QueryCall(Node):
    """A size query: call the function with args (a parameter's name, or a nested query)."""
    call: Optional[str] = None
    args: Dict[str, Union[str, "QueryCall"]] = field(default_factory=dict)


@dataclass(eq=False)
class BufferSize(Node):
    """How big a caller's buffer must be: rule query (a product of queries), reported
    (the call reports the length), filled (a fixed capacity; the count is reported), chosen."""
    rule: Optional[str] = None
    product: List[QueryCall] = field(default_factory=list)
    length: Optional[str] = None
    plus: Optional[int] = None
    unit: Optional[str] = None
    capacity: Optional[int] = None
    count: Optional[str] = None


@dataclass(eq=False)
class ArraySpec(Node):
    length: Optional[str] = None
    unit: Optional[str] = None
    element_length: Optional[str] = None


@dataclass(eq=False)
class FlagConstants(Node):
    prefix: Optional[str] = None
    names: Optional[List[str]] = None


@dataclass(eq=False)
class Param(Node):
    name: Optional[str] = None
    c_type: Optional[str] = None
    c_decl: Optional[str] = None
    type: Optional[TypeRef] = None
    pointer: int = 0
    const: Optional[bool] = None
    const_levels: Optional[List[bool]] = None
    direction: Optional[str] = None
    ownership: Optional[str] = None
    role: Optional[str] = None
    array: Optional[ArraySpec] = None
    length_of: Optional[Any] = None
    length_from: Optional[Any] = None
    element_lengths_of: Optional[str] = None
    buffer_size: Optional[BufferSize] = None
    nullable: Optional[bool] = None
    null_result: Optional[bool] = None
    null_when: Optional[str] = None
    elements_null_result: Optional[bool] = None
    elements_nullable: Optional[bool] = None
    boolean: Optional[bool] = None
    enum: Optional[str] = None
    flag_constants: Optional[FlagConstants] = None
    free: Optional[str] = None
    lifetime: Optional[str] = None
    negative: Optional[Any] = None
    schema_arg: Optional[str] = None
    when: Optional[str] = None

    @property
    def buffer_rule(self) -> Optional[str]:
        return self.buffer_size.rule if self.buffer_size else None

    @property
    def is_seed(self) -> bool:
        """A random seed (a uint64_t named seed): bindings take PyTorch's range
        for it, [-2^63, 2^64-1], a negative seed s meaning 2^64 + s."""
        return (self.name == "seed" and self.pointer == 0 and self.type is not None
                and self.type.name == "uint64_t")


@dataclass(eq=False)
class Returns(_Value, Node):
    c_type: Optional[str] = None
    type: Optional[TypeRef] = None
    kind: Optional[str] = None
    const: Optional[bool] = None
    ownership: Optional[str] = None
    lifetime: Optional[str] = None


@dataclass(eq=False)
class ThreadState(Node):
    """State libtorch keeps per OS thread that this call begins or ends (api_header.THREAD_STATE)."""
    role: Optional[str] = None  # "begin" or "end"
    handle: Optional[str] = None  # the parameter naming the state
    ends: Optional[str] = None  # end: "always" or "unless_refused"


@dataclass(eq=False)
class InlineField(Node):
    field: Optional[str] = None
    param: Optional[str] = None
    value: Optional[Any] = None
    enum: Optional[str] = None
    name: Optional[str] = None
    as_: Optional[str] = None


@dataclass(eq=False)
class InlineBody(Node):
    returns_struct: Optional[str] = None
    fields: List[InlineField] = field(default_factory=list)


# ---- generated operators -------------------------------------------------------------------

@dataclass(eq=False)
class Alias(Node):
    set: Optional[str] = None
    write: Optional[bool] = None
    after: Optional[List[str]] = None


@dataclass(eq=False)
class Default(Node):
    kind: Optional[str] = None
    value: Optional[Any] = None
    text: Optional[str] = None
    enum: Optional[str] = None
    name: Optional[str] = None
    scalar_kind: Optional[str] = None
    expanded_from: Optional[Any] = None
    size_mismatch: Optional[Any] = None
    exceeds_double: Optional[bool] = None
    special: Optional[str] = None  # a float default that JSON cannot hold: inf, -inf, nan


@dataclass(eq=False)
class OpArg(Node):
    name: Optional[str] = None
    schema_type: Optional[str] = None
    base: Optional[str] = None
    optional: Optional[bool] = None
    list: Optional[bool] = None
    size: Optional[int] = None
    elements_optional: Optional[bool] = None
    kwarg_only: Optional[bool] = None
    default: Optional[Default] = None
    enum: Optional[str] = None
    alias: Optional[Alias] = None
    c_params: Optional[List[str]] = None


@dataclass(eq=False)
class OpReturn(Node):
    name: Optional[str] = None
    schema_type: Optional[str] = None
    base: Optional[str] = None
    optional: Optional[bool] = None
    list: Optional[bool] = None
    alias: Optional[Alias] = None
    alias_of: Optional[str] = None
    c_param: Optional[str] = None


@dataclass(eq=False)
class Op(Node):
    """The ATen operator a generated function calls (its schema, parsed)."""
    name: Optional[str] = None
    overload: Optional[str] = None
    qualified_name: Optional[str] = None
    schema: Optional[str] = None
    kind: Optional[str] = None
    args: List[OpArg] = field(default_factory=list)
    returns: List[OpReturn] = field(default_factory=list)
    returns_convention: Optional[str] = None
    variants: List[str] = field(default_factory=list)
    python_module: Optional[str] = None
    public: Optional[bool] = None
    internal_reason: Optional[str] = None
    mutates: Optional[Any] = None
    view: Optional[Any] = None
    tags: Optional[List[str]] = None


@dataclass(eq=False)
class OpsJson(Node):
    unsafe: Optional[bool] = None
    unsafe_reason: Optional[str] = None


@dataclass(eq=False)
class Function(Node):
    name: Optional[str] = None
    origin: Optional[str] = None  # "header" (hand-written C) or "generated" (an operator)
    section: Optional[str] = None
    doc: Optional[str] = None
    line: Optional[int] = None
    params: List[Param] = field(default_factory=list)
    returns: Optional[Returns] = None
    inline: Optional[bool] = None
    inline_body: Optional[InlineBody] = None
    c_only: Optional[str] = None
    op: Optional[Op] = None
    ops_json: Optional[OpsJson] = None
    unsafe: Optional[bool] = None  # a header function whose doc opens with "UNSAFE:" (C-only today)
    unsafe_reason: Optional[str] = None  # ... and the rest of that sentence
    thread_state: Optional[ThreadState] = None

    @property
    def is_unsafe(self) -> bool:
        """api.json marks the function unsafe (an operator's ops_json.unsafe, a header
        function's unsafe): a binding offers it only under a name that says so (Rust
        `unsafe fn`, the others' unchecked forms)."""
        return bool(self.unsafe or (self.ops_json and self.ops_json.unsafe))

    def shared_length_arrays(self, p: Param) -> List[str]:
        """The arrays a caller passes whose one C length is parameter p: p's length_of
        less an array of arrays' element lengths (element_lengths_of, which a binding
        fills from the arrays themselves). Where there are several (names and tensors
        of ctorch_save_dict), a binding checks that the given ones have as many entries:
        one array's length passed for all lets C read past a shorter one or drop the
        longer one's tail."""
        if p.role != "length" or not p.length_of:
            return []
        filled = {q.name for q in self.params if q.element_lengths_of}
        return [a for a in p.length_of if a not in filled]

    @property
    def buffer_counters(self) -> set:
        """The output parameters through which the call reports a caller buffer's length
        (rule "reported") or how many elements it filled (rule "filled"): a wrapper reads
        them to cut its result to size rather than returning them."""
        out = {p.buffer_size.length for p in self.params if p.buffer_rule == "reported"}
        return out | {p.buffer_size.count for p in self.params if p.buffer_rule == "filled"}


# ---- types, handles, callbacks, macros ----------------------------------------------------

@dataclass(eq=False)
class EnumValue(Node):
    name: Optional[str] = None
    value: Optional[int] = None
    doc: Optional[str] = None


@dataclass(eq=False)
class Enum(Node):
    name: Optional[str] = None
    c_type: Optional[str] = None
    doc: Optional[str] = None
    section: Optional[str] = None
    size: Optional[int] = None
    values: List[EnumValue] = field(default_factory=list)


@dataclass(eq=False)
class StructField(_Value, Node):
    name: Optional[str] = None
    c_type: Optional[str] = None
    type: Optional[TypeRef] = None
    offset: Optional[int] = None
    size: Optional[int] = None
    array_length: Optional[int] = None
    doc: Optional[str] = None
    enum: Optional[str] = None


@dataclass(eq=False)
class Struct(Node):
    name: Optional[str] = None
    doc: Optional[str] = None
    section: Optional[str] = None
    size: Optional[int] = None
    align: Optional[int] = None
    fields: List[StructField] = field(default_factory=list)


@dataclass(eq=False)
class Elements(Node):
    """A handle that holds other handles: their type and the size/get (and key) functions."""
    handle: Optional[str] = None
    size: Optional[str] = None
    get: Optional[str] = None
    key: Optional[str] = None


@dataclass(eq=False)
class Handle(Node):
    name: Optional[str] = None
    tag: Optional[str] = None
    free: Optional[str] = None
    doc: Optional[str] = None
    section: Optional[str] = None
    null: Optional[str] = None
    size: Optional[int] = None
    elements: Optional[Elements] = None


@dataclass(eq=False)
class Callback(Node):
    name: Optional[str] = None
    doc: Optional[str] = None
    section: Optional[str] = None
    signature: Optional[Signature] = None


@dataclass(eq=False)
class Bits(Node):
    arg: Optional[str] = None
    shift: Optional[int] = None
    mask: Optional[int] = None
    as_: Optional[str] = None
    result: Optional[str] = None


@dataclass(eq=False)
class Macro(Node):
    name: Optional[str] = None
    doc: Optional[str] = None
    value: Optional[Any] = None
    params: Optional[List[str]] = None
    body: Optional[str] = None
    bits: Optional[Bits] = None


@dataclass(eq=False)
class Library(Node):
    name: Optional[str] = None
    soname: Optional[str] = None
    file: Optional[str] = None
    link_name: Optional[str] = None
    load_names: Optional[List[str]] = None
    torch_abi: Optional[str] = None
    symbol_version: Optional[str] = None
    requires: Optional[str] = None


# ---- torch.nn module kinds ------------------------------------------------------------------

@dataclass(eq=False)
class NnArg(Node):
    name: Optional[str] = None
    type: Optional[str] = None
    optional: Optional[bool] = None
    required: Optional[bool] = None
    default: Optional[str] = None


@dataclass(eq=False)
class NnForward(Node):
    inputs: List[NnArg] = field(default_factory=list)
    kwargs: List[NnArg] = field(default_factory=list)
    outputs: List[NnArg] = field(default_factory=list)


@dataclass(eq=False)
class NnModule(Node):
    kind: Optional[str] = None
    init: List[NnArg] = field(default_factory=list)
    forward: NnForward = field(default_factory=NnForward)


@dataclass(eq=False)
class PythonBridge(Node):
    """libctorch_python's own description (no binding reads it yet)."""
    library: Optional[Library] = None
    header: Optional[str] = None
    cmake_target: Optional[str] = None
    pkg_config: Optional[str] = None
    last_error: Optional[str] = None
    handles: List[Handle] = field(default_factory=list)
    functions: List[Function] = field(default_factory=list)


# ---- the document --------------------------------------------------------------------------

@dataclass(eq=False)
class Api(Node):
    format: Optional[str] = None
    format_version: Optional[int] = None
    format_minor: Optional[int] = None
    ctorch_version: Optional[str] = None
    torch_version: Optional[str] = None
    abi_hash: Optional[str] = None
    library: Optional[Library] = None
    types: Dict[str, TypeLayout] = field(default_factory=dict)
    enums: List[Enum] = field(default_factory=list)
    structs: List[Struct] = field(default_factory=list)
    handles: List[Handle] = field(default_factory=list)
    callbacks: List[Callback] = field(default_factory=list)
    opaque_types: List[str] = field(default_factory=list)
    macros: List[Macro] = field(default_factory=list)
    functions: List[Function] = field(default_factory=list)
    overload_groups: Dict[str, List[str]] = field(default_factory=dict)
    nn_modules: List[NnModule] = field(default_factory=list)
    nn_conventions: Optional[Dict[str, Any]] = None  # read by no binding emitter: kept as api.json's data
    counts: Dict[str, int] = field(default_factory=dict)
    python_bridge: Optional[PythonBridge] = None
    # Not in api.json: the functions only C can call (c_only: variadic, va_list), by name,
    # with the reason; load_api() takes them out of `functions`.
    c_only_functions: Dict[str, str] = field(default_factory=dict)

    @functools.cached_property
    def functions_by_name(self) -> Dict[str, Function]:
        return {f.name: f for f in self.functions}

    @functools.cached_property
    def list_handles(self) -> Dict[str, Elements]:
        """Handles that are lists (handles[].elements without a key): a binding turns each
        into its language's list as soon as a call returns one."""
        return {h.name: h.elements for h in self.handles if h.elements is not None and h.elements.key is None}


# Anything with a C type a binding spells: a parameter, a result, a struct field.
CSlot = Union[Param, SigParam, Returns, SigReturn, StructField]


def load_api(doc: dict, bindings: bool = True) -> Api:
    """The model of api.json's dict. For the bindings (the default), the functions only C
    can call are left out of `functions` (each language formats text itself) and listed
    in c_only_functions."""
    api = Api.load(doc)
    if bindings:
        api.c_only_functions = {f.name: "C only: " + f.c_only for f in api.functions if f.c_only}
        api.functions = [f for f in api.functions if not f.c_only]
    return api
