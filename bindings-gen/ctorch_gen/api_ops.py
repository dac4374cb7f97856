"""The generated half of api.json: every wrapped ATen operator (from ops.json
and native_functions.yaml) described for binding generators.

What ops.json gives as schema text is given here as data: typed defaults,
alias (view / in-place / out=) facts, which C parameters each schema
argument became, the function/method variants and Python module from the
yaml, and a public/internal flag. Entries that ops.json carries and this
module does not know are copied as they are (under "ops_json"), so fields
other emitters add to ops.json reach api.json too.
"""
from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional

from .cheader import parse_ctype
from .model import (BaseType, ListType, OptionalType, Type, parse_schema)

# c10 spellings of schema defaults -> ctorch enum values.
DTYPE_DEFAULTS = {
    "bool": "CTORCH_BOOL", "uint8": "CTORCH_UINT8", "int8": "CTORCH_INT8", "int16": "CTORCH_INT16",
    "short": "CTORCH_INT16", "int": "CTORCH_INT32", "int32": "CTORCH_INT32", "long": "CTORCH_INT64",
    "int64": "CTORCH_INT64", "half": "CTORCH_FLOAT16", "float16": "CTORCH_FLOAT16", "bfloat16": "CTORCH_BFLOAT16",
    "float": "CTORCH_FLOAT32", "float32": "CTORCH_FLOAT32", "double": "CTORCH_FLOAT64", "float64": "CTORCH_FLOAT64",
    "complex64": "CTORCH_COMPLEX64", "cfloat": "CTORCH_COMPLEX64", "complex128": "CTORCH_COMPLEX128",
    "cdouble": "CTORCH_COMPLEX128", "uint16": "CTORCH_UINT16", "uint32": "CTORCH_UINT32", "uint64": "CTORCH_UINT64",
    "float8_e5m2": "CTORCH_FLOAT8_E5M2", "float8_e4m3fn": "CTORCH_FLOAT8_E4M3FN",
}
MEMORY_FORMAT_DEFAULTS = {
    "contiguous_format": "CTORCH_MEMORY_CONTIGUOUS", "preserve_format": "CTORCH_MEMORY_PRESERVE",
    "channels_last": "CTORCH_MEMORY_CHANNELS_LAST", "channels_last_3d": "CTORCH_MEMORY_CHANNELS_LAST_3D",
}
LAYOUT_DEFAULTS = {"strided": "CTORCH_LAYOUT_STRIDED", "sparse_coo": "CTORCH_LAYOUT_SPARSE_COO",
                   "sparse_csr": "CTORCH_LAYOUT_SPARSE_CSR", "mkldnn": "CTORCH_LAYOUT_MKLDNN"}
REDUCTION_DEFAULTS = {"None": "CTORCH_REDUCTION_NONE", "Mean": "CTORCH_REDUCTION_MEAN",
                      "Sum": "CTORCH_REDUCTION_SUM"}

# Schema `int` arguments that are PyTorch enums: (op name pattern, arg) -> ctorch enum.
INT_ENUMS = [
    (re.compile(r".*"), "reduction", "ctorch_reduction"),
    (re.compile(r".*grid_sampler.*"), "interpolation_mode", "ctorch_grid_sampler_interpolation"),
    (re.compile(r".*grid_sampler.*"), "padding_mode", "ctorch_grid_sampler_padding"),
    (re.compile(r"^_?embedding_bag.*"), "mode", "ctorch_embedding_bag_mode"),
]

# Why an operator is internal (not part of PyTorch's public Python surface).
INTERNAL_RULES = [
    (lambda n: n.startswith("_"), "leading underscore"),
    (lambda n: "_backward" in n, "backward kernel"),
    (lambda n: n.startswith("native_"), "native_* implementation detail"),
    (lambda n: n.startswith(("fbgemm_", "quantized_")), "quantization internals"),
    (lambda n: n.startswith(("thnn_", "slow_conv", "cudnn_", "miopen_", "mkldnn_")),
     "backend-specific kernel"),
]


def internal_reason(name: str) -> Optional[str]:
    for rule, why in INTERNAL_RULES:
        if rule(name):
            return why
    return None


class DefaultError(ValueError):
    pass


def _base(t: Type) -> Optional[str]:
    return t.name if isinstance(t, BaseType) else None


def _enum_ref(enums: Dict[str, Dict[str, int]], enum: str, name: str, text: str) -> dict:
    return {"kind": "enum", "enum": enum, "name": name, "value": enums[enum][name], "text": text}


def _literal(text: str):
    t = text.strip()
    if t in ("True", "False"):
        return t == "True"
    if t == "None":
        return None
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    if re.fullmatch(r"-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", t):
        return float(t)
    if t in ("inf", "-inf", "nan"):
        return float(t)
    if t[:1] in "\"'":
        return ast.literal_eval(t)
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].strip()
        return [] if not inner else [_literal(x) for x in inner.split(",")]
    raise DefaultError(f"unknown default {text!r}")


def _number(v) -> dict:
    """JSON numbers for finite floats; inf/nan spelled out."""
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return {"value": None, "special": "nan" if v != v else ("inf" if v > 0 else "-inf")}
    return {"value": v}


def typed_default(t: Type, text: str, enum: Optional[str], enums: Dict[str, Dict[str, int]]) -> dict:
    """A schema default as typed JSON, always with its original text."""
    text = text.strip()
    if text == "None":
        return {"kind": "none", "text": text}
    elem = t.elem if isinstance(t, OptionalType) else t
    b = _base(elem)
    if enum:
        name = text.split("::")[-1]
        if enum == "ctorch_reduction":
            if name in REDUCTION_DEFAULTS:
                return _enum_ref(enums, enum, REDUCTION_DEFAULTS[name], text)
        v = _literal(text)
        vals = {val: nm for nm, val in enums[enum].items()}
        if isinstance(v, int) and v in vals:
            return _enum_ref(enums, enum, vals[v], text)
        raise DefaultError(f"default {text!r} is no value of {enum}")
    if b == "ScalarType":
        return _enum_ref(enums, "ctorch_dtype", DTYPE_DEFAULTS[text], text)
    if b == "MemoryFormat":
        return _enum_ref(enums, "ctorch_memory_format", MEMORY_FORMAT_DEFAULTS[text], text)
    if b == "Layout":
        return _enum_ref(enums, "ctorch_layout", LAYOUT_DEFAULTS[text], text)
    if b == "Scalar":
        v = _literal(text)
        if isinstance(v, bool):
            return {"kind": "scalar", "scalar_kind": "BOOL", "value": v, "text": text}
        if isinstance(v, int):
            return {"kind": "scalar", "scalar_kind": "INT", "value": v, "text": text}
        if isinstance(v, float):
            return dict({"kind": "scalar", "scalar_kind": "FLOAT", "text": text}, **_number(v))
        raise DefaultError(f"Scalar default {text!r}")
    if isinstance(elem, ListType):
        v = _literal(text)
        d = {"kind": "list", "text": text}
        if not isinstance(v, list):
            # `int[2] stride=1`: PyTorch repeats a lone number N times.
            n = elem.size or 1
            d["value"] = [v] * n
            d["expanded_from"] = v
        else:
            d["value"] = v
            if elem.size is not None and len(v) not in (0, elem.size):
                d["size_mismatch"] = True
        if elem.size is not None and not d["value"]:
            # `int[2] stride=[]`: an empty list where N values are expected;
            # the operator reads it as "not given" (max_pool: stride = kernel_size).
            d["size_mismatch"] = True
        return d
    v = _literal(text)
    if b == "bool":
        if not isinstance(v, bool):
            raise DefaultError(f"bool default {text!r}")
        return {"kind": "bool", "value": v, "text": text}
    if b in ("int", "SymInt", "DeviceIndex"):
        if not isinstance(v, int) or isinstance(v, bool):
            raise DefaultError(f"int default {text!r}")
        d = {"kind": "int", "value": v, "text": text}
        if abs(v) > 2 ** 53:
            d["exceeds_double"] = True
        return d
    if b == "float":
        return dict({"kind": "float", "text": text}, **_number(float(v)))
    if b in ("str", "Dimname"):
        if not isinstance(v, str):
            raise DefaultError(f"str default {text!r}")
        return {"kind": "str", "value": v, "text": text}
    raise DefaultError(f"no typed default for {t} = {text!r}")


def _alias(ann) -> Optional[dict]:
    if ann is None:
        return None
    d = {"set": list(ann.alias_set), "write": ann.is_write}
    if ann.alias_set_after:
        d["after"] = list(ann.alias_set_after)
    return d


def _schema_kinds(t: Type) -> dict:
    """The schema type as data: base name, optional, list (size), element optional."""
    d: dict = {"optional": False}
    if isinstance(t, OptionalType):
        d["optional"] = True
        t = t.elem
    if isinstance(t, ListType):
        d["list"] = True
        if t.size is not None:
            d["size"] = t.size
        e = t.elem
        if isinstance(e, OptionalType):
            d["elements_optional"] = True
            e = e.elem
        d["base"] = e.name
    else:
        d["base"] = t.name
    return d


# Operators that return an undefined tensor on success other than through an
# output mask, from libtorch's kernels (1.13 and 2.x alike): name -> (the
# schema results that may be undefined, None = all; when).
DOCUMENTED_UNDEFINED = {
    "_native_multi_head_attention": ([1], "the attention weights when need_weights is false"),
    # Found by the differential test's NULL check (binding_python_vs_pytorch).
    "_unpack_dual": ([1], "the tangent when dual has none at that level"),
    # Found by tests/bindings/py_null_results.py: its output_mask does not
    # decide; each result is undefined when the inputs it needs are None.
    "_convolution_double_backward": (None, "ggO when ggI, ggW and ggb are None; gW when ggI is; gI when ggW is"),
    "_thnn_differentiable_lstm_cell_backward": (None, "every gradient when grad_hy and grad_cy are both None"),
    "_thnn_fused_lstm_cell_backward_impl": (None, "every gradient when grad_hy and grad_cy are both None; "
                                                  "the bias gradient when has_bias is false (CUDA)"),
    "_thnn_fused_lstm_cell_backward": (None, "every gradient when grad_hy and grad_cy are both None; "
                                             "the bias gradients when has_bias is false (CUDA)"),
    "_thnn_fused_gru_cell_backward": ([3, 4], "the bias gradients when has_bias is false (CUDA)"),
    "_thnn_differentiable_gru_cell_backward": ([3, 4], "the bias gradients when the biases are None"),
    "batch_norm_backward_reduce": ([0, 1, 2, 3], "the results input_g / weight_g / bias_g did not ask for (CUDA)"),
    "_efficient_attention_backward": ([3], "the bias gradient when bias_requires_grad is false (CUDA)"),
}


# Results a mask does not gate: the kernels compute them whatever the mask
# says (libtorch 1.13 and 2.x, CPU and CUDA), so they are never undefined.
MASK_IGNORED = {
    "grid_sampler_2d_backward": [1],  # grad_grid: always computed
    "grid_sampler_3d_backward": [1],
}


def _mask_arg(f) -> Optional[str]:
    """The `bool[N] output_mask` (or `mask`, `grad_input_mask`) argument
    that says which results a backward operator computes; the others come
    back undefined."""
    for a in f.args:
        t = a.type.elem if isinstance(a.type, OptionalType) else a.type
        if (isinstance(t, ListType) and isinstance(t.elem, BaseType) and t.elem.name == "bool"
                and t.size is not None and a.name in ("output_mask", "mask", "grad_input_mask")):
            return a.name
    return None


def null_results(f) -> Dict[int, str]:
    """schema result index -> why it may be an undefined tensor on success
    (the C output then NULL with CTORCH_OK). Tensor results only; a Tensor[]
    result is a list handle (never NULL on success) whose elements may be."""
    out: Dict[int, str] = {}
    mask = _mask_arg(f)
    documented = DOCUMENTED_UNDEFINED.get(f.name)
    for k, r in enumerate(f.returns):
        t = r.type
        if isinstance(t, OptionalType):
            out[k] = "optional result (Tensor?)"
        elif documented and (documented[0] is None or k in documented[0]):
            out[k] = documented[1]
        elif mask and k not in MASK_IGNORED.get(f.name, ()):
            out[k] = f"not asked for by {mask}"
    return out


def _const(p: dict, ct) -> None:
    """const-ness as data (as api_header.py writes it for the header)."""
    if ct.pointers:
        p["const"] = ct.const_pointee
        p["const_levels"] = [ct.const_base] + list(ct.const_ptrs)


def _c_params(op: dict, describer, nulls: Optional[Dict[int, str]] = None) -> List[dict]:
    """C parameters of a generated function, in the header's format."""
    params = []
    nulls = nulls or {}
    for k, r in enumerate(op["returns"]):
        if not r.get("c_name"):
            continue
        ct = parse_ctype(r["c_type"])
        p = {"name": r["c_name"], "c_type": r["c_type"], "type": describer.type_info(ct),
             "pointer": ct.pointers, "direction": "out", "nullable": False}
        if p["type"]["kind"] == "handle":
            p["ownership"] = "new"
            p["free"] = describer.free_of[p["type"]["name"]]
            # Only where the operator can return an undefined tensor
            # (null_results): NULL on success. A list is never NULL after
            # success; its elements may be.
            is_list = p["type"]["name"] == "ctorch_tensor_list"
            p["null_result"] = bool(k in nulls and not is_list)
            if k in nulls:
                p["null_when"] = nulls[k]
                if is_list:
                    p["elements_null_result"] = True
        else:
            p["ownership"] = "value"
            if ct.base == "int" and r["schema_type"] == "bool":
                p["boolean"] = True
        _const(p, ct)
        params.append(p)
    for a in op["args"]:
        sk = _schema_kinds(parse_type_str(a["schema_type"]))
        for k, (ct_text, cn) in enumerate(zip(a["c_types"], a["c_names"])):
            ct = parse_ctype(ct_text)
            p = {"name": cn, "c_type": ct_text, "type": describer.type_info(ct), "direction": "in",
                 "pointer": ct.pointers - (1 if ct.base == "char" else 0), "schema_arg": a["name"]}
            if k == 1:
                p["role"] = "length"
                p["length_of"] = [a["c_names"][0]]
                p["nullable"] = False
                p["ownership"] = "value"
            else:
                is_list = len(a["c_types"]) == 2
                if is_list:
                    p["array"] = {"length": a["c_names"][1]}
                    # Only a whole optional list (T[]?) may be NULL; Tensor?[]
                    # has optional elements (NULL entries), not a NULL pointer.
                    p["nullable"] = bool(sk["optional"])
                    if sk.get("elements_optional"):
                        p["elements_nullable"] = True
                else:
                    p["nullable"] = bool(sk["optional"]) or (sk["base"] == "Generator")
                p["ownership"] = "borrowed" if (p["pointer"] > 0 or p["type"]["kind"] in ("handle", "string")) \
                    else "value"
                if sk["base"] == "bool" and ct.base == "int":
                    p["boolean"] = True
            _const(p, ct)
            params.append(p)
    return params


def parse_type_str(s: str) -> Type:
    from .model import parse_type
    return parse_type(s)[0]


def describe_op(op: dict, yaml_entry: dict, describer, enums: Dict[str, Dict[str, int]]) -> dict:
    f = parse_schema(op["schema"])
    args = []
    a_by_name = {a["name"]: a for a in op["args"]}
    mutated = [a.name for a in f.args if a.is_write]
    for a in f.args:
        oa = a_by_name[a.name]
        enum = None
        if isinstance(a.type, BaseType) and a.type.name == "int":
            for rx, arg, en in INT_ENUMS:
                if a.name == arg and rx.match(f.name):
                    enum = en
        d = {"name": a.name, "schema_type": a.type_str(), "c_params": oa["c_names"],
             "kwarg_only": a.kwarg_only}
        d.update(_schema_kinds(a.type))
        if enum:
            d["enum"] = enum
        if a.default is not None:
            d["default"] = typed_default(a.type, a.default, enum, enums)
        al = _alias(a.annotation)
        if al:
            d["alias"] = al
        args.append(d)
    rets = []
    c_rets = [r for r in op["returns"]]
    for k, r in enumerate(f.returns):
        d = {"name": r.name, "schema_type": r.type_str()}
        d.update(_schema_kinds(r.type))
        cr = c_rets[k] if k < len(c_rets) else {}
        d["c_param"] = cr.get("c_name")
        al = _alias(r.annotation)
        if al:
            d["alias"] = al
            src = next((x.name for x in f.args if x.annotation and x.annotation.alias_set == r.annotation.alias_set),
                       None)
            d["alias_of"] = src
        rets.append(d)
    is_inplace = f.name.endswith("_") and not f.name.endswith("__") and "self" in mutated
    is_out = bool(mutated) and any(a.kwarg_only for a in f.args if a.is_write)
    views = [r for r in rets if r.get("alias") and not r["alias"]["write"]]
    variants = [v.strip() for v in str(yaml_entry.get("variants", "function")).split(",") if v.strip()]
    why = internal_reason(f.name)
    kind = "out" if is_out else ("inplace" if is_inplace else ("mutating" if mutated else "functional"))
    info = {
        "schema": f.schema, "name": f.name, "overload": f.overload, "qualified_name": f.qualified_name,
        "variants": variants, "python_module": yaml_entry.get("python_module"),
        "public": why is None, "kind": kind, "view": bool(views), "mutates": mutated,
        "returns_convention": op["returns_convention"], "args": args, "returns": rets,
        "tags": _tags(yaml_entry),
    }
    if why:
        info["internal_reason"] = why
    extra = {k: v for k, v in op.items() if k not in KNOWN_OPS_JSON_KEYS}
    params = _c_params(op, describer, null_results(f))
    # The enum of an `int reduction`-style argument, on its C parameter too.
    arg_enum = {a["name"]: a["enum"] for a in args if "enum" in a}
    for p in params:
        if p.get("schema_arg") in arg_enum and p.get("role") != "length":
            p["enum"] = arg_enum[p["schema_arg"]]
    entry = {"name": op["c_name"], "origin": "generated", "section": "ATen operators",
             "doc": f.schema, "returns": {"c_type": "ctorch_status", "type": {"kind": "enum", "name": "ctorch_status"},
                                          "kind": "status"},
             "params": params, "inline": False, "op": info}
    if extra:
        entry["ops_json"] = extra
    return entry


KNOWN_OPS_JSON_KEYS = {"c_name", "schema", "name", "overload", "args", "returns", "returns_convention"}


def _tags(e: dict) -> List[str]:
    t = e.get("tags", ())
    if isinstance(t, str):
        return [x.strip() for x in t.split(",") if x.strip()]
    return list(t or ())


def overload_groups(entries: List[dict]) -> Dict[str, List[str]]:
    """name -> its C functions, in the order a binding should try them: the
    yaml's, except that an overload taking a Tensor where another takes a
    Scalar comes first (PyTorch's argument parser does the same)."""
    groups: Dict[str, List[dict]] = {}
    for e in entries:
        groups.setdefault(e["op"]["name"], []).append(e)

    def rank(e):
        kinds = [a["base"] for a in e["op"]["args"] if not a["kwarg_only"]]
        return sum(1 for k in kinds if k == "Scalar")
    return {n: [e["name"] for e in sorted(es, key=rank)] for n, es in groups.items()}
