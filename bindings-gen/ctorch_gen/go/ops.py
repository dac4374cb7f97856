"""Go binding emitter (cgo): api.json -> a Go module whose package ctorch has
one typed function per generated operator (ops_gen.go), Go constants for
every enum (enums_gen.go) and the cgo preamble (cgo_gen.go). The
hand-written runtime (Tensor, Scalar, errors, the hand-written C API's
Go face) is copied from bindings-gen/go/.

Go conventions (docs/bindings-languages.md, "Go"): every function returns an
error (a *ctorch.Error carrying the status and the library's message); tensors are
freed with t.Free() (defer it), a finalizer frees forgotten ones; a nil
slice is None for an optional list and a non-nil empty slice is [];
optional scalars are pointers (nil = None).
"""
from __future__ import annotations

import os
from typing import List, Tuple

from ..apimodel import Api, Function, OpArg, QueryCall
from .names import ENUM_GO, camel, go_arg, go_enum_type, go_op_name, go_type


def _conv(a: OpArg, v: str) -> Tuple[List[str], List[str], List[str]]:
    """(statements before the call, C arguments, statements after it)."""
    b, opt, lst = a.base, a.optional, a.list
    size = a.size or 0
    if lst:
        if b == "Tensor":
            return [f"p__{v}, n__{v} := tensorArray({v}, {str(opt).lower()})"], [f"p__{v}", f"n__{v}"], \
                [f"runtime.KeepAlive({v})"]
        fn = {"int": "int64Array", "SymInt": "int64Array", "float": "float64Array", "bool": "boolArray",
              "Scalar": "scalarArray", "Dimname": "stringArray"}[b]
        extra = ""
        if b == "Dimname":
            return [f"p__{v}, n__{v}, free__{v} := {fn}({v})", f"defer free__{v}()"], [f"p__{v}", f"n__{v}"], []
        return [f"p__{v}, n__{v} := {fn}({v}{extra})"], [f"p__{v}", f"n__{v}"], [f"runtime.KeepAlive(p__{v})"]
    if b == "Tensor":
        return [], [f"{v}.handle()"], [f"runtime.KeepAlive({v})"]
    if b in ("int", "SymInt", "DeviceIndex"):
        if opt:
            return [f"p__{v} := optInt64({v})"], [f"p__{v}"], [f"runtime.KeepAlive(p__{v})"]
        return [], [f"C.int64_t({v})"], []
    if b == "float":
        if opt:
            return [f"p__{v} := optFloat64({v})"], [f"p__{v}"], [f"runtime.KeepAlive(p__{v})"]
        return [], [f"C.double({v})"], []
    if b == "bool":
        if opt:
            return [f"p__{v} := optBool({v})"], [f"p__{v}"], [f"runtime.KeepAlive(p__{v})"]
        return [], [f"cbool({v})"], []
    if b == "Scalar":
        if opt:
            return [f"p__{v} := optScalar({v})"], [f"p__{v}"], [f"runtime.KeepAlive(p__{v})"]
        return [], [f"{v}.c()"], []
    if b in ("ScalarType", "Layout", "MemoryFormat"):
        ct = {"ScalarType": "ctorch_dtype", "Layout": "ctorch_layout", "MemoryFormat": "ctorch_memory_format"}[b]
        if opt:
            return [f"p__{v} := optEnum[C.{ct}]({v})"], [f"p__{v}"], [f"runtime.KeepAlive(p__{v})"]
        return [], [f"C.{ct}({v})"], []
    if b == "Device":
        if opt:
            return [f"p__{v} := optDevice({v})"], [f"p__{v}"], [f"runtime.KeepAlive(p__{v})"]
        return [], [f"{v}.c()"], []
    if b in ("str", "Dimname"):
        if opt:
            return [f"s__{v} := optCString({v})", f"defer freeCString(s__{v})"], [f"s__{v}"], []
        return [f"s__{v} := C.CString({v})", f"defer freeCString(s__{v})"], [f"s__{v}"], []
    if b == "Generator":
        return [], [f"{v}.handle()"], [f"runtime.KeepAlive({v})"]
    raise ValueError(a.schema_type)


_RET_GO = {"ctorch_tensor": ("*Tensor", "C.ctorch_tensor", "wrap({r})"),
           "ctorch_tensor_list": ("[]*Tensor", "C.ctorch_tensor_list", "readTensorList({r})"),
           "int64_t": ("int64", "C.int64_t", "int64({r})"), "double": ("float64", "C.double", "float64({r})"),
           "ctorch_scalar": ("Scalar", "C.ctorch_scalar", "scalarFromC({r})"),
           "ctorch_dtype": ("DType", "C.ctorch_dtype", "DType({r})")}


def op_function(f: Function, tramp=None) -> str:
    """One operator's Go function; its C call goes through tramp's trampolines
    (tramp.Trampolines) when given, else straight to the C function."""
    op = f.op
    name = go_op_name(f)
    params, pre, cargs, post = [], [], [], []
    outs = [p for p in f.params if p.direction == "out"]
    rets, ret_exprs = [], []
    for k, p in enumerate(outs):
        tn = p.type.name
        if tn == "int":
            gt, ct, conv = ("bool", "C.int", "{r} != 0") if p.boolean else ("int64", "C.int", "int64({r})")
        else:
            gt, ct, conv = _RET_GO[tn]
        pre.append(f"var r{k} {ct}")
        cargs.append(f"&r{k}")
        rets.append(gt)
        ret_exprs.append(conv.format(r=f"r{k}"))
    for a in op.args:
        v = go_arg(a.name)
        params.append(f"{v} {go_type(a)}")
        p1, c, p2 = _conv(a, v)
        pre.extend(p1)
        cargs.extend(c)
        post.extend(p2)
    conv = op.returns_convention
    if conv == "mutated_args":
        by = {a.name: go_arg(a.name) for a in op.args}
        for r in op.returns:
            rets.append("*Tensor")
            ret_exprs.append(by[r.alias_of])
    zero = ", ".join({"*Tensor": "nil", "[]*Tensor": "nil", "int64": "0", "float64": "0", "bool": "false",
                      "Scalar": "Scalar{}", "DType": "0"}[r] for r in rets)
    sig = f"({', '.join(rets + ['error'])})" if rets else "error"
    lines = [f"// {name} calls {f.name}: {op.schema}"]
    if f.is_unsafe:  # (go_op_name: only under this name)
        lines.append(f"// Unchecked: bad input can crash the process (api.json ops_json.unsafe): "
                     f"{f.ops_json.unsafe_reason or 'see bindings-gen/unsafe_ops.txt'}.")
    for k, p in enumerate(outs):
        if p.null_result:
            lines.append(f"// Result {k} may be nil (an undefined tensor): {p.null_when or ''}.")
        elif p.elements_null_result:
            lines.append(f"// Result {k}'s elements may be nil: {p.null_when or ''}.")
    lines.append(f"func {name}({', '.join(params)}) {sig} {{")
    lines += ["\t" + s for s in pre]
    call = tramp.call(f, cargs) if tramp else f"C.{f.name}({', '.join(cargs)})"
    lines.append(f"\tst := {call}")
    lines += ["\t" + s for s in post]
    lines.append("\tif st != 0 {")
    lines.append(f"\t\treturn {zero + ', ' if zero else ''}statusError(st)")
    lines.append("\t}")
    lines.append(f"\treturn {', '.join(ret_exprs + ['nil'])}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def emit_ops(doc: Api, tramp=None) -> str:
    """ops_gen.go; with tramp, every call goes through its trampolines (whose
    C side tramp.header() and tramp.source() then give)."""
    out = ["// GENERATED by bindings-gen (emit_go.py) from api.json; do not edit.", "", "package ctorch", "",
           "// #include <stdlib.h>", '// #include "ctorch.h"']
    out += ['// #include "ops_tramp_gen.h"'] if tramp else []
    out += ['import "C"', "", "import (", '\t"runtime"', '\t"unsafe"', ")", "",
            "var _ = runtime.KeepAlive", "var _ unsafe.Pointer", ""]
    for f in doc.functions:
        if f.origin == "generated":
            out.append(op_function(f, tramp))
    return "\n".join(out)


def emit_enums(doc: Api) -> str:
    out = ["// GENERATED by bindings-gen (emit_go.py) from api.json; do not edit.", "", "package ctorch", "",
           f"// ABIHash is the C API this package was generated for (api.json's abi_hash).",
           f"const ABIHash = \"{doc.abi_hash}\"", "",
           f"// Version of ctorch this package was generated from.", f"const Version = \"{doc.ctorch_version}\"", "",
           f"// LibtorchVersion is the libtorch that ctorch was built against.",
           f"const LibtorchVersion = \"{doc.torch_version}\"", ""]
    for e in doc.enums:
        gt = go_enum_type(e.name)
        out.append(f"// {gt} is {e.name}: {e.doc}")
        out.append(f"type {gt} int32" if e.name not in ENUM_GO else f"type {gt} = int64")
        out.append("")
        out.append("const (")
        names = [v.name for v in e.values]
        pre = names[0]
        for nm in names:
            while not nm.startswith(pre):
                pre = pre[:-1]
        pre = pre[: pre.rfind("_") + 1] if len(names) > 1 else "CTORCH_"
        for v in e.values:
            # The Go type name, then the value's own name: DTypeFloat32, ReductionMean.
            cn = gt + camel(v.name[len(pre):].lower())
            out.append(f"\t{cn} {gt} = {v.value}")
        out.append(")")
        out.append("")
        if e.name == "ctorch_dtype":  # for messages: the names torch prints (float32)
            names = ", ".join(f'{v.value}: "{v.name[len("CTORCH_"):].lower()}"' for v in e.values)
            out += [f"var dtypeNames = map[DType]string{{{names}}}", ""]
    return "\n".join(out)


def _go_c_type(c_type: str) -> str:
    """cgo spelling of a C scalar, handle or enum type (no pointers)."""
    t = c_type.replace("const ", "").strip()
    return "C." + t


def _query_code(call: QueryCall, funcs: dict, params: dict, k: List[int], lines: List[str]) -> str:
    """Statements computing one buffer_size query call; returns the variable."""
    f = funcs[call.call]
    out = next(p for p in f.params if p.direction == "out")
    args = []
    for q in f.params:
        if q.direction == "out":
            continue
        src = call.args[q.name]
        args.append(_query_code(src, funcs, params, k, lines) if isinstance(src, QueryCall) else go_arg(src))
    k[0] += 1
    v = f"q{k[0]}"
    lines.append(f"\tvar {v} {_go_c_type(out.c_type.rstrip('*').strip())}")
    lines.append(f"\tif st := C.{f.name}(&{v}, {', '.join(args)}); st != 0 {{")
    lines.append("\t\treturn 0, statusError(st)")
    lines.append("\t}")
    return v


def emit_capi(doc: Api) -> str:
    """What the description gives as data, as Go: the status macros' bit
    fields and, for every caller-buffer output with a "query" size rule, a
    function computing the size (bufLen_<function>_<param>)."""
    out = ["// GENERATED by bindings-gen (emit_go.py) from api.json; do not edit.", "", "package ctorch", "",
           '// #include "ctorch.h"', 'import "C"', ""]
    for m in doc.macros:
        if m.bits is not None:
            b = m.bits
            n = camel(m.name[len("CTORCH_"):].lower())
            out.append(f"// {n[0].lower() + n[1:]} is {m.name}: {m.doc}")
            out.append(f"func {n[0].lower() + n[1:]}(st C.ctorch_status) uint32 {{ return (uint32(st) >> {b.shift}) "
                       f"& {b.mask:#x} }}")
            out.append("")
    funcs = {f.name: f for f in doc.functions}
    for f in doc.functions:
        for p in f.params:
            bs = p.buffer_size
            if not bs or bs.rule in ("filled", "chosen"):  # a fixed capacity, or the caller's: nothing to compute
                continue
            if bs.rule == "reported":
                out.append(f"// {f.name}'s {p.name} needs *{bs.length} + {bs.plus} {bs.unit} "
                           "(api.json buffer_size).")
                out.append(f"const bufPlus_{f.name}_{p.name} = {bs.plus}")
                out.append("")
                continue
            params = {q.name: q for q in f.params}
            used, lines, k = [], [], [0]

            def names(c):
                for v in c.args.values():
                    if isinstance(v, QueryCall):
                        names(v)
                    elif v not in used:
                        used.append(v)
            for term in bs.product:
                names(term)
            vs = [_query_code(term, funcs, params, k, lines) for term in bs.product]
            sig = ", ".join(f"{go_arg(n)} {_go_c_type(params[n].c_type)}" for n in used)
            out.append(f"// bufLen_{f.name}_{p.name}: the {bs.unit} {f.name}'s {p.name} needs "
                       "(api.json buffer_size).")
            out.append(f"func bufLen_{f.name}_{p.name}({sig}) (int, error) {{")
            out.extend(lines)
            out.append(f"\treturn {' * '.join(f'int({v})' for v in vs)}, nil")
            out.append("}")
            out.append("")
    return "\n".join(out)


def emit_cgo(build_lib, include_dirs: List[str], package: str = "ctorch") -> str:
    lines = ["// GENERATED by bindings-gen (emit_go.py); do not edit.", "", f"package {package}", ""]
    if build_lib:
        libdir = os.path.dirname(build_lib)
        inc = " ".join(f"-I{d}" for d in include_dirs)
        lines += [f"// #cgo CFLAGS: {inc}", f"// #cgo LDFLAGS: -L{libdir} -lctorch -Wl,-rpath,{libdir}"]
    else:
        lines += ["// #cgo pkg-config: ctorch"]
    lines += ['import "C"', ""]
    return "\n".join(lines)


