"""TypeScript declarations of the Node binding (index.d.ts) from api.json.

What each part declares follows what the runtime does with the same data:
- every operator (ops.js): positional arguments in schema order, then an
  optional options object naming any argument; one overload per number of
  trailing defaulted positionals given (the runtime takes a plain object as
  the last argument for the options wherever it stands). Groups of overloads
  (ct.add) declare the union of their members, as the runtime dispatches.
- ct.<name> / ct.<module>.<name> and Tensor methods: emit_node's PUBLIC and
  METHODS lists, less the names index.js defines by hand (HAND_*).
- ct.capi (api.js): each header function's inputs and outputs (hplan.plan),
  its handle classes with their methods, the structs as interfaces.
- ct.nn: the module classes of api.json's nn_modules.
The hand-written runtime (index.js and the modules it requires) is declared in
bindings-gen/node/runtime.d.ts, which this file's text is appended to.
tests/bindings/node_types.js checks every declared name against the loaded
package (same kind: function, class, value), and tsc --strict checks the
examples and a TypeScript program against the declarations.
"""
from __future__ import annotations

import json
import os
from typing import Dict, List

from ..apimodel import Api, Function, OpArg, Param, StructField
from ..hplan import (OUTPUT_GROUPS, Planned, class_handles, class_name, generated_nn_kinds, kind_of, list_handles,
                     plan, public_name, reader_name, split_groups)
from .names import JS_RESERVED, js_name

_LISTS: Dict[str, dict] = {}

# Names the runtime (index.js and its modules) defines over (or beside) the generated ones.
HAND_TOP = {"CtorchError", "Tensor", "ops", "capi", "lib", "config", "version", "abiHash", "scope", "keep",
            "memoryBytes", "flushFrees", "float", "strided", "contiguous_format", "preserve_format",
            "channels_last", "tensor", "manualSeed", "setNumThreads", "noGrad", "inferenceMode", "Generator",
            "save", "load", "saveAsync", "loadAsync", "optim", "data", "nn", "callAsync", "errorOf"}
HAND_NN = {"Module", "Parameter", "Sequential", "ModuleList", "ModuleDict", "utils", "init"}
HAND_METHODS = {"shape", "dtype", "requiresGrad", "grad", "stride", "numel", "item", "toTypedArray", "toArray",
                "backward", "backwardAsync", "detach", "to", "requiresGrad_", "toString", "dispose", "disposed",
                "handle", "constructor"}

_BASE = {"Tensor": "Tensor", "Scalar": "Scalar", "int": "number", "float": "number", "bool": "boolean",
         "str": "string", "Dimname": "string", "ScalarType": "DType", "Layout": "Layout",
         "MemoryFormat": "MemoryFormat", "Device": "DeviceLike", "Generator": "capi.Generator"}


def _enum_names(doc: Api) -> Dict[str, List[str]]:
    """index.js's ENUM_NAMES: the values' names after their common prefix, lower case."""
    out = {}
    for e in doc.enums:
        names = [v.name for v in e.values]
        pre = names[0]
        for n in names:
            while not n.startswith(pre):
                pre = pre[:-1]
        pre = pre[:pre.rfind("_") + 1]
        out[e.name] = [n[len(pre):].lower() for n in names]
    return out


def arg_type(a: OpArg, enums: Dict[str, List[str]]) -> str:
    k = kind_of(a)
    opt = k.endswith("?")
    k = k.rstrip("?") if opt else k
    if k.endswith("[]"):
        el = k[:-2]
        el_opt = el.endswith("?")
        el = el.rstrip("?")
        t = _BASE[el] + (" | null" if el_opt else "")
        t = f"readonly ({t})[]"
        if el in ("int", "float"):
            t = f"number | {t}"  # one number stands for the whole list (stride=2)
        elif el == "bool":
            t = f"boolean | {t}"
    else:
        t = _BASE[k]
        if k == "int" and a.enum is not None:
            t = "number | " + " | ".join(json.dumps(n) for n in enums[a.enum])
    return f"{t} | null" if opt else t


def _ret_type(p: Param) -> str:  # capi._ret
    t = p.type
    if t.kind == "handle" and t.name == "ctorch_tensor":
        return "Tensor | null" if p.null_result else "Tensor"
    if t.kind == "handle":
        return "Tensor[]"
    if t.kind == "struct":
        return "number | boolean"
    if t.kind == "enum":
        return "DType"
    if p.boolean:
        return "boolean"
    return "number"


def op_returns(f: Function, arg_types: Dict[str, str]) -> str:
    op = f.op
    if op.returns_convention == "out_params":
        rs = [_ret_type(p) for p in f.params if p.direction == "out"]
    else:
        rs = [arg_types[r.alias_of] for r in op.returns]
    if not rs:
        return "void"
    return rs[0] if len(rs) == 1 else "[" + ", ".join(rs) + "]"


def op_signatures(f: Function, enums, drop_self: bool = False) -> List[str]:
    """'(params): ret' forms of one operator (drop_self: as a Tensor method)."""
    op = f.op
    types = {a.name: arg_type(a, enums) for a in op.args}
    ret = op_returns(f, types)
    pos = [a for a in op.args if not a.kwarg_only]
    if drop_self:
        pos = pos[1:]
    names = {js_name(a.name) for a in op.args}
    oname = "options" if "options" not in names else "opts_"
    req_kw = [a for a in op.args if a.kwarg_only and a.default is None]
    fields = "; ".join(f"{json.dumps(a.name)}{'' if a in req_kw else '?'}: {types[a.name]}"
                       for a in op.args if not (drop_self and a is op.args[0]))
    opts = f"{oname}{'' if req_kw else '?'}: {{ {fields} }}"
    # Trailing positionals with defaults are optional; an earlier defaulted one may be undefined.
    n_req = len(pos)
    while n_req and pos[n_req - 1].default is not None:
        n_req -= 1
    ps = [f"{js_name(a.name)}: {types[a.name]}" + (" | undefined" if a.default is not None else "")
          for a in pos]
    sigs = []
    for k in range(n_req, len(pos) + 1):
        sigs.append(f"({', '.join(ps[:k] + [opts])}): {ret}")
    return sigs


def emit_ops(doc: Api, enums) -> List[str]:
    top: Dict[str, List[str]] = {}
    methods: Dict[str, List[str]] = {}
    for g, ms, _unsafe in split_groups(doc):  # (the unsafe ones: ct.unchecked, typed any)
        if not ms:
            continue
        pn = public_name(ms)
        if pn:
            mod, pub = pn
            hand = HAND_NN if mod == "nn" else (HAND_TOP if not mod else set())
            if pub not in hand:
                top.setdefault(mod, []).extend(
                    f"  function {pub}{s};" for m in ms for s in op_signatures(m, enums))
        if any("method" in m.op.variants for m in ms) and g not in HAND_METHODS:
            self_first = all(m.op.args and m.op.args[0].name == "self"
                             for m in ms if "method" in m.op.variants)
            if self_first:
                methods[g] = [f"  {g}{s};" for m in ms if m.op.args and m.op.args[0].name == "self"
                              for s in op_signatures(m, enums, drop_self=True)]
            else:  # self goes in the options object; the rest fill the schema's positions
                methods[g] = [f"  {g}(...args: any[]): any;"]
    out = ["/** Every operator as a function of the package (ct.relu) or its module (ct.nn, ct.linalg, ...). */"]
    out.append("export interface TensorMethods {")
    for g in sorted(methods):
        out += methods[g]
    out.append("}")
    renamed = set()
    for mod in sorted(top):
        if mod:
            out.append(f"export namespace {mod} {{")
            out += [s for s in top[mod] if s.split()[1].split("(")[0] not in JS_RESERVED]
            out.append("}")
        else:
            for s in top[mod]:
                name = s.split()[1].split("(")[0]
                if name in JS_RESERVED:  # ct.var: declared as var_, exported under its name
                    renamed.add(name)
                    s = s.replace(f"function {name}(", f"function {name}_(", 1)
                    out.append(s.strip().replace("function ", "declare function ", 1))
                else:
                    out.append("export " + s.strip().replace("function ", "declare function ", 1))
    out += [f"export {{ {n}_ as {n} }};" for n in sorted(renamed)]
    return out


# ---- ct.capi ------------------------------------------------------------------------------

def _capi_in(p: Param) -> str:
    t = p.type
    k = t.kind
    opt = " | null" if p.nullable else ""
    if p.array and p.array.element_length:
        return "readonly (readonly number[])[]" + opt
    if p.array:
        if k == "handle":
            el = "Tensor" if t.name == "ctorch_tensor" else class_name(t.name)
            return f"readonly ({el}{' | null' if p.elements_nullable else ''})[]" + opt
        if k == "int":
            return "number | readonly (number | bigint)[]" + opt
        if k == "float":
            return "number | readonly number[]" + opt
        if k == "string":
            return "readonly string[]" + opt
        return "ArrayBufferView" + opt
    if k == "handle":
        return ("Tensor" if t.name == "ctorch_tensor" else class_name(t.name)) + opt
    if k == "string":
        return "string" + opt
    if k == "struct":
        return ("DeviceLike" if t.name == "ctorch_device" else t.name) + opt
    if p.boolean:
        return "boolean"
    if k == "enum":
        return "number | { readonly value: number }"
    if k in ("int", "float"):
        big = " | bigint" if k == "int" and (t.size if t.has("size") else 4) == 8 else ""
        return f"number{big}" + (" | null" if p.pointer else "")
    return "any"


def _capi_out(p: Param) -> str:
    t = p.type
    k = t.kind
    bs = p.buffer_size
    if bs:
        if bs.rule == "query":
            return "number[]" if bs.unit == "elements" else "Uint8Array"
        if bs.rule == "filled":
            return "(Tensor | null)[]"
        return "string" if k == "string" else "Buffer"
    if k == "struct":
        return t.name
    if k == "handle":
        if t.name == "ctorch_tensor":
            return "Tensor | null" if p.null_result else "Tensor"
        if t.name in _LISTS:
            el = _LISTS[t.name].handle
            return "(Tensor | null)[]" if el == "ctorch_tensor" else f"({class_name(el)} | null)[]"
        return class_name(t.name) + " | null"
    if k == "string":
        return "string | null"
    if k == "enum":
        return "DType" if t.name == "ctorch_dtype" else "number"
    if k == "void" or p.pointer >= 2:
        return "bigint"
    if p.boolean:
        return "boolean"
    return "number"


def capi_signature(e: Planned, drop_first: bool = False) -> str:
    f = e.f
    ins = e.ins[1:] if drop_first else e.ins
    ps = ", ".join(f"{js_name(p.name)}: {_capi_in(p)}" for p in ins)
    if f.inline:
        return f"({ps}): ctorch_scalar"
    if f.returns.kind == "value":
        t = f.returns.type
        rt = "string" if t.kind == "string" else "number"
        return f"({ps}): {rt}"
    rs = [_capi_out(p) for p in e.outs]
    rt = "void" if not rs else rs[0] if len(rs) == 1 else "[" + ", ".join(rs) + "]"
    return f"({ps}): {rt}"


def _struct_field(fl: StructField) -> str:
    t = fl.type
    if fl.array_length:
        return "any"
    if t.kind == "struct":
        return t.name
    if t.kind in ("int", "float", "enum"):
        return "number"
    return "any"


def emit_capi(doc: Api) -> List[str]:
    _LISTS.clear()
    _LISTS.update(list_handles(doc))
    out = ["/** The header's hand-written functions, typed (ct.capi; generated api.js). */",
           "export namespace capi {"]
    for s in doc.structs:
        fields = "; ".join(f"{fl.name}: {_struct_field(fl)}" for fl in s.fields)
        out.append(f"  interface {s.name} {{ {fields} }}")
    for lh, el in _LISTS.items():  # emit_api's readers: a NEW list handle's elements, the handle freed
        item = "Tensor" if el.handle == "ctorch_tensor" else class_name(el.handle)
        out.append(f"  function {reader_name(lh)}(handle: bigint): ({item} | null)[];")
    methods: Dict[str, List[str]] = {}
    for e in plan(doc):
        if e.skip:
            continue
        out.append(f"  /** {e.f.doc[:200].replace('*/', '* /')} */")
        out.append(f"  function {e.short}{capi_signature(e)};")
        if e.receiver and e.owner != "ctorch_tensor":
            methods.setdefault(class_name(e.owner), []).append(
                f"    {e.method}{capi_signature(e, drop_first=True)};")
    for h in class_handles(doc):
        cn = class_name(h.name)
        extra = {"Optimizer": ["    stepAsync(): Promise<void>;"],
                 "DataLoader": ["    nextAsync(): Promise<[Tensor, Tensor | null] | null>;"]}.get(cn, [])
        out += [f"  class {cn} extends Handle {{", f"    constructor(handle: bigint);"] + \
            methods.get(cn, []) + extra + ["  }"]
    out.append("  const NOT_WRAPPED: { [name: string]: string };")
    out.append("  const TENSOR_METHODS: { [name: string]: string };")
    out.append("}")
    return out


# ---- ct.nn's module classes --------------------------------------------------------------

_NN = {"bool": "boolean", "int": "number", "float": "number", "Device": "DeviceLike", "ScalarType": "DType",
       "str": "string", "Module": "Module", "int[]": "readonly number[]", "float[]": "readonly number[]"}


def _nn_type(t: str) -> str:
    parts = []
    for x in t.split("|"):
        if x.startswith("int[") and x != "int[]":
            parts.append("number | readonly number[]")
        else:
            parts.append(_NN.get(x, "any"))
    return " | ".join(parts)


def emit_nn(doc: Api) -> List[str]:
    out = ["export namespace nn {"]
    for k in generated_nn_kinds(doc):
        init = k.init
        n_req = sum(1 for p in init if p.required)
        ps = [f"{js_name(p.name)}{'' if p.required else '?'}: {_nn_type(p.type)}"
              + ("" if p.required or not p.optional else " | null") for p in init]
        fields = "; ".join(f"{p.name}?: {_nn_type(p.type)}{' | null' if p.optional else ''}"
                           for p in init)
        opts = f"options?: {{ [camelOrSnake: string]: unknown; {fields} }}"
        outs = k.forward.outputs
        ret = "Tensor" if len(outs) == 1 and k.kind not in OUTPUT_GROUPS else "any"
        out.append(f"  class {k.kind} extends Builtin {{")
        for j in range(n_req, len(init) + 1):
            out.append(f"    constructor({', '.join(ps[:j] + [opts])});")
        out.append(f"    forward(...inputs: ForwardArg[]): {ret};")
        out.append(f"    call(...inputs: ForwardArg[]): {ret};")
        out.append(f"    forwardAsync(...inputs: ForwardArg[]): Promise<{ret}>;")
        out.append("  }")
    out.append("}")
    return out


def emit(doc: Api, here: str) -> str:
    enums = _enum_names(doc)
    with open(os.path.join(here, "node", "runtime.d.ts"), encoding="utf-8") as f:
        runtime = f.read()
    parts = ["// GENERATED by bindings-gen (emit_node_dts.py) from api.json and bindings-gen/node/runtime.d.ts;",
             f"// do not edit. ctorch {doc.ctorch_version}, libtorch {doc.torch_version}, ABI {doc.abi_hash}.",
             runtime]
    dtypes = next(e for e in doc.enums if e.name == "ctorch_dtype")
    parts += [f"export declare const {v.name[len('CTORCH_'):].lower()}: DType;" for v in dtypes.values]
    parts += emit_ops(doc, enums)
    parts += emit_capi(doc)
    parts += emit_nn(doc)
    parts.append("")
    return "\n".join(parts)
