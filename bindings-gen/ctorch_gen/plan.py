"""Functions -> wrapper plans (or skip reasons): naming, collisions, order."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from .model import Function, SchemaError, load_yaml, parse_schema
from .typemap import (ArgBinding, RetBinding, Unsupported, bind_argument,
                      bind_return, c_ident, returns_convention)


@dataclass
class Plan:
    f: Function
    c_name: str
    args: List[ArgBinding]
    rets: List[RetBinding]
    convention: str
    header: str  # <ATen/ops/HEADER_ops.h>
    # Hand-written pre-check ctorch::guard::<unambiguous name> runs before the
    # call (shim/ops/guards.h); unsafe: why the function may still
    # crash on bad input (bindings-gen/unsafe_ops.txt), else None.
    guard: bool = False
    unsafe: Optional[str] = None
    # Schema `int` arguments ATen reads as an enum: (argument index, allowed
    # range, what the values mean), checked before the call (ENUM_ARGS).
    enums: List["EnumArg"] = field(default_factory=list)

    @property
    def requires_tensor(self) -> bool:
        return any(b.requires_tensor for b in self.args)

    def c_params(self) -> List[Tuple[str, str]]:
        ps = [(r.c_type, r.c_name) for r in self.rets]
        for b in self.args:
            ps.extend(b.c_params)
        return ps


@dataclass
class EnumArg:
    index: int      # position in the schema's arguments
    name: str       # schema name
    lo: int
    hi: int
    meaning: str    # "0 = none, 1 = mean, 2 = sum"
    optional: bool  # int?: None passes


# Schema `int` arguments that ATen reads as an enum: an
# out-of-range value is INVALID_ARGUMENT naming the argument, in the typed
# wrapper and in the by-name call (shim/dispatch/), where ATen would compute
# something anyway (10 of 12 losses took reduction 9; cross_entropy_loss
# summed). (op-name pattern, argument, lo, hi, meaning); found by listing
# every `int` argument name of native_functions.yaml 1.13.1 and 2.15.0
# (docs/ops.md, "Enum arguments"). String "enums" (scatter's reduce, gelu's
# approximate, div's rounding_mode, searchsorted's side, pad modes of stft)
# are checked by ATen itself; ScalarType/Layout/MemoryFormat by ctorch's
# enum conversions.
ENUM_ARGS = [
    (r".*", "reduction", 0, 2, "at::Reduction: 0 = none, 1 = mean, 2 = sum"),
    (r".*grid_sampler.*", "interpolation_mode", 0, 2,
     "GridSamplerInterpolation: 0 = bilinear, 1 = nearest, 2 = bicubic"),
    (r".*grid_sampler.*", "padding_mode", 0, 2, "GridSamplerPadding: 0 = zeros, 1 = border, 2 = reflection"),
    (r"^_?embedding_bag.*", "mode", 0, 2, "EmbeddingBagMode: 0 = sum, 1 = mean, 2 = max"),
    (r"^_pad_enum$", "mode", 0, 3, "at::padding_mode: 0 = reflect, 1 = replicate, 2 = circular, 3 = constant"),
    (r"^_fft_(c2c|c2r|r2c)$", "normalization", 0, 2, "fft_norm_mode: 0 = none, 1 = by 1/sqrt(n), 2 = by 1/n"),
    (r"^(cdist|_cdist_forward)$", "compute_mode", 0, 2,
     "cdist compute_mode: 0 = mm if necessary, 1 = always mm, 2 = never mm"),
    (r"^(_masked_softmax|_native_multi_head_attention|_transformer_encoder_layer_fwd)$", "mask_type", 0, 2,
     "mask_type: 0 = src_mask [L, L], 1 = key padding mask [B, L], 2 = generic [B, H, L, L]"),
    (r"^_efficient_attention_(forward|backward)$", "custom_mask_type", 0, 2,
     "CustomMaskType: 0 = none, 1 = causal from top left, 2 = causal from bottom right"),
    (r"^_batch_norm_impl_index_backward$", "impl_index", 0, 2, "impl_index: 0 = native, 1 = cudnn, 2 = miopen"),
    (r"^(_cudnn_rnn|_cudnn_rnn_backward|_cudnn_rnn_flatten_weight|miopen_rnn|miopen_rnn_backward)$", "mode", 0, 3,
     "RNN mode: 0 = RNN_RELU, 1 = RNN_TANH, 2 = LSTM, 3 = GRU"),
]
_ENUM_RX = [(re.compile(pat), arg, lo, hi, what) for pat, arg, lo, hi, what in ENUM_ARGS]


def enum_args(f: Function) -> List[EnumArg]:
    """The enum-valued `int` arguments of f (ENUM_ARGS)."""
    from .model import OptionalType
    out = []
    for i, a in enumerate(f.args):
        t = a.type
        opt = isinstance(t, OptionalType)
        b = t.elem if opt else t
        if getattr(b, "name", None) not in ("int", "SymInt"):
            continue
        for rx, arg, lo, hi, what in _ENUM_RX:
            if a.name == arg and rx.match(f.name):
                out.append(EnumArg(i, a.name, lo, hi, what, opt))
                break
    return out


@dataclass
class Skip:
    schema: str
    reason: str


def c_name_of(f: Function) -> str:
    """ctorch_<name> or ctorch_<name>_<overload>: from the schema alone."""
    return f"ctorch_{f.unambiguous_name}"


_AUGMENTED = {"add", "sub", "mul", "div", "mod", "pow", "truediv", "floordiv",
              "matmul", "lshift", "rshift", "and", "xor", "or"}


def header_of(f: Function) -> str:
    """Root name of the per-operator header ATen/ops/<root>_ops.h (torchgen's
    rule: dunders lose their underscores, in-place forms their trailing '_')."""
    n = f.name
    if n.startswith("__") and n.endswith("__"):
        n = n[2:-2]
        if n.startswith("i") and n[1:] in _AUGMENTED:
            n = n[1:]
        return n
    if n.endswith("_") and not n.endswith("__"):
        n = n[:-1]
    if n.endswith("_functional"):
        n = n[: -len("_functional")]
    return n


def _unique(name: str, taken: Set[str]) -> str:
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def plan_function(f: Function) -> Plan:
    """Raises Unsupported with the reason when f cannot be wrapped."""
    arg_names = [c_ident(a.name) for a in f.args]
    taken: Set[str] = set(arg_names)
    conv = returns_convention(f)
    rets: List[RetBinding] = []
    if conv == "out_params":
        names = ["ret"] if len(f.returns) == 1 else [f"ret{i}" for i in range(len(f.returns))]
        for r, nm in zip(f.returns, names):
            rets.append(bind_return(r, _unique(nm, taken)))
    args = []
    for a, n in zip(f.args, arg_names):
        len_name = _unique(f"{n}_len", taken) if _is_list(a) else ""
        args.append(bind_argument(a, n, len_name))
    # Locals a_<name> must not shadow a parameter.
    for b in args:
        for p in b.c_params:
            if p[1].startswith("a_") and p[1][2:] in taken:
                raise Unsupported(f"parameter name '{p[1]}' clashes with a generated local")
    return Plan(f, c_name_of(f), args, rets, conv, header_of(f), enums=enum_args(f))


def _is_list(a) -> bool:
    from .model import ListType, OptionalType
    t = a.type
    if isinstance(t, OptionalType):
        t = t.elem
    return isinstance(t, ListType)


@dataclass
class Result:
    plans: List[Plan]
    skipped: List[Skip]
    schemas: int
    deprecated: int = 0


def existing_c_names(header_text: str) -> Set[str]:
    """ctorch_* function names already declared in the hand-written header."""
    return set(re.findall(r"\b(ctorch_\w+)\s*\(", header_text))


def build(entries: List[dict], reserved: Set[str] = frozenset(),
          available_structs: Optional[Dict[str, str]] = None) -> Result:
    """entries: yaml dicts with 'func'. available_structs: at::_ops struct
    name -> header root, as found in the installed headers (None = don't
    check; header names then follow torchgen's rule)."""
    plans, skipped = [], []
    seen: Dict[str, str] = {}
    for e in entries:
        schema = str(e["func"])
        try:
            f = parse_schema(schema, tags=_tags(e), yaml_fields={k: v for k, v in e.items() if k != "func"})
        except SchemaError as ex:
            skipped.append(Skip(schema, f"unparsable schema: {ex}"))
            continue
        try:
            p = plan_function(f)
        except Unsupported as ex:
            skipped.append(Skip(schema, str(ex)))
            continue
        if p.c_name in reserved:
            skipped.append(Skip(schema, f"name collision with {p.c_name} declared in ctorch.h"))
            continue
        if p.c_name in seen:
            skipped.append(Skip(schema, f"name collision with {p.c_name} generated for '{seen[p.c_name]}'"))
            continue
        if available_structs is not None and f.unambiguous_name not in available_structs:
            skipped.append(Skip(schema, f"no at::_ops::{f.unambiguous_name} in the installed ATen headers"))
            continue
        if available_structs is not None:
            p.header = available_structs[f.unambiguous_name]
        seen[p.c_name] = f.qualified_name
        plans.append(p)
    return Result(plans, skipped, len(entries))


def guarded_names(guards_header: str) -> Set[str]:
    """Operators with a hand-written guard: the functions declared in
    namespace ctorch::guard of guards.h (named by unambiguous name)."""
    names = set(re.findall(r"^void\s+(\w+)\s*\(", guards_header, re.M))
    # A family macro declares the guards of a polynomial's six schemas.
    for fam in re.findall(r"^CTORCH_GUARD_POLYNOMIAL\((\w+)\)", guards_header, re.M):
        names.update(fam + s for s in ("", "_out", "_x_scalar", "_x_scalar_out", "_n_scalar", "_n_scalar_out"))
    return names


def unsafe_reasons(text: str) -> Dict[str, str]:
    """unsafe_ops.txt: `c_name: reason` per line; '#' starts a comment."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, reason = line.partition(":")
        out[name.strip()] = reason.strip() or "may crash on bad input"
    return out


# THE RULE: an operator that builds or trusts data it
# does not check is either guarded (shim/ops/guards*.h: the check its checked
# twin does) or marked unsafe in ops.json / api.json ("unsafe": true,
# "unsafe_reason"; Rust makes it an `unsafe fn`, the other bindings follow
# the same mark). Three sources, in this order:
#   1. bindings-gen/unsafe_ops.txt: what the sweeps crashed (with the reason);
#   2. the name: an operator whose name says `unsafe` skips libtorch's checks
#      by its own description (native_functions.yaml: "_sparse_coo_tensor_unsafe
#      ... does not check that indices are in bounds of `size`");
#   3. an argument that turns the checks off (`bool unsafe`: segment_reduce
#      with unsafe=True and lengths past the data reads past it, seen on
#      1.13.1 and 2.15.0; _index_put_impl_ skips CUDA's bound checks).
# A guard lifts 2 and 3 (the guard makes the call checked); 1 stays until
# its line is removed.
#
# Named `unsafe` but memory-safe (their "unsafe" is about autograd's view
# tracking or about compiled code, not about memory), each re-checked on
# 1.13.1 and 2.15.0 with out-of-range input from Python:
NAMED_UNSAFE_BUT_SAFE = {
    # split/chunk whose results autograd does not treat as views of self;
    # the same kernels and bound checks as split/chunk.
    "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk",
    # a view autograd does not track as one: sizes checked like view()
    # ("shape '[4, 3]' is invalid for input of size 6"); reads no data.
    "_unsafe_view",
    # 2.x: eager CPU calls index/index_put, which check bounds ("index 1000000
    # is out of bounds for dimension 0 with size 3"); "unsafe" is for
    # Inductor's generated code.
    "_unsafe_index", "_unsafe_index_put",
    # 2.x: indices are clamped to the size before indexing (out-of-range
    # indices under a true mask give an element, never a read past memory).
    "_unsafe_masked_index", "_unsafe_masked_index_put_accumulate",
}
CHECK_SWITCH_ARGS = {"unsafe"}


def rule_unsafe(f: Function) -> Optional[str]:
    """Why f skips checks by its name or an argument (rules 2 and 3), else None."""
    n = f.name
    if ("_unsafe" in n or n.startswith("unsafe")) and n not in NAMED_UNSAFE_BUT_SAFE:
        return ("builds its result without libtorch's checks (its name says unsafe): inconsistent "
                "input makes a tensor whose later reads go past memory")
    for a in f.args:
        if a.name in CHECK_SWITCH_ARGS and a.type_str() == "bool":
            return (f"its argument '{a.name}' turns libtorch's input checks off: with it true, "
                    "inconsistent input is read past memory")
    return None


def apply_safety(plans: List[Plan], guards: Set[str], unsafe: Dict[str, str]) -> None:
    for p in plans:
        p.guard = p.f.unambiguous_name in guards
        p.unsafe = unsafe.get(p.c_name) or (None if p.guard else rule_unsafe(p.f))


def guard_headers(guards_path: str, read) -> str:
    """guards.h and the guards_*.h it includes (their declarations count too)."""
    import os
    text = read(guards_path)
    parts = [text]
    for inc in re.findall(r'^#include "(guards_\w+\.h)"', text, re.M):
        parts.append(read(os.path.join(os.path.dirname(guards_path), inc)))
    return "\n".join(parts)


def _tags(e) -> Tuple[str, ...]:
    t = e.get("tags", ())
    if isinstance(t, str):
        return tuple(x.strip() for x in t.split(","))
    return tuple(t or ())


def scan_ops_structs(ops_dir: str) -> Dict[str, str]:
    """at::_ops struct name -> root of the ATen/ops/<root>_ops.h declaring it."""
    import os
    names: Dict[str, str] = {}
    rx = re.compile(r"^struct TORCH_API (\w+) \{", re.M)
    for fn in sorted(os.listdir(ops_dir)):
        if fn.endswith("_ops.h"):
            with open(os.path.join(ops_dir, fn), encoding="utf-8") as fh:
                for n in rx.findall(fh.read()):
                    names.setdefault(n, fn[: -len("_ops.h")])
    return names
