"""The header's hand-written C functions as safe Rust -> ctorch/src/capi_gen.rs
(`ctorch::capi`, as the Python binding's `ctorch.capi` and Node's `ct.capi`).

One safe function per header function that hplan.py wraps (no callbacks, no
DLPack structs, no frees: Drop calls those) and whose parameters all have a
safe Rust form: borrowed handles as `&T` (`Option<&T>` where NULL is allowed),
strings as `&str`, arrays as slices (their C length taken from the slice;
arrays sharing one length are checked to agree), out-parameters returned
(NEW handles owned by their Rust type, strings copied, NULL results as
`Option`), every failure an `Error`. Named as in C without `ctorch_`
(`capi::set_num_threads(2)`, `capi::cuda_is_available()`). What it cannot
write safely (caller buffers sized by a query, arrays of arrays, raw memory,
scope handles that a call frees) is left out and counted by
tests/bindings/rust_reach.py; the runtime (lib.rs, nn/, optim.rs) covers
some of those by hand.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from ..apimodel import Api, Param
from ..hplan import Planned, class_name, func_doc, list_handles, plan
from .names import C_PRIM, RENAMED, doc_lines, enum_type, ident


class Unsupported(Exception):
    pass


def handle_type(name: str) -> str:
    if name == "ctorch_tensor":
        return "Tensor"
    if name == "ctorch_nn_module":
        return "nn::Module"
    return RENAMED.get(name) or class_name(name)


def _prim(p: Param) -> str:
    base = p.type.name
    if base not in C_PRIM or base in ("void", "char"):
        raise Unsupported(f"{p.name}: {p.c_type}")
    return C_PRIM[base]


def _in(p: Param, arrays_len: dict, fn: str) -> Tuple[Optional[str], List[str], str]:
    """(Rust parameter or None, statements, C argument) of an in-parameter."""
    v, t, k, nul = ident(p.name), p.type, p.type.kind, p.nullable
    if p.role in ("length",):
        if p.length_from is not None:
            raise Unsupported("length_from")
        # Arrays sharing one C length must agree (Function.shared_length_arrays).
        arrs = [a for a in p.length_of]
        lens = [arrays_len[a] for a in arrs]
        pre = [f"if {lens[0]} != {x} {{ return Err(Error::binding(format!(\"{fn}: {arrs[0]} has {{}}, {a} has {{}} "
               f"entries; they share one length\", {lens[0]}, {x}))); }}"
               for a, x in zip(arrs[1:], lens[1:])]
        return None, pre, f"{lens[0]} as {_prim(p)}"
    if p.role:
        raise Unsupported("capacity")
    if p.ownership not in ("borrowed", "value"):
        raise Unsupported(p.ownership)
    if p.array:
        if p.pointer != 1 or p.element_lengths_of or p.array.element_length:
            raise Unsupported("array of arrays")
        if k == "handle":
            rt = handle_type(t.name)
            if p.elements_nullable:
                ty, conv = f"&[Option<&{rt}>]", "l.iter().map(|t| t.map_or(::std::ptr::null_mut(), |t| t.h)).collect()"
            else:
                ty, conv = f"&[&{rt}]", "l.iter().map(|t| t.h).collect()"
            if nul:
                return f"{v}: Option<{ty}>", [f"let {v}_h: Option<Vec<_>> = {v}.map(|l| {conv});"], \
                    f"{v}_h.as_ref().map_or(::std::ptr::null(), |l| l.as_ptr())"
            pre = [f"let l = {v};", f"let {v}_h: Vec<_> = {conv};"]
            return f"{v}: {ty}", pre, f"{v}_h.as_ptr()"
        if k == "string":
            pre = [f"let {v}_s = cstrings({v})?;", f"let {v}_p: Vec<*const ::std::os::raw::c_char> = {v}_s.iter().map(|s| s.as_ptr()).collect();"]
            if nul:
                raise Unsupported("nullable string array")
            return f"{v}: &[&str]", pre, f"{v}_p.as_ptr()"
        if k == "void":
            if p.array.unit != "bytes":
                raise Unsupported("void array")
            ty, cast = "&[u8]", ".as_ptr() as *const ::std::ffi::c_void"
        elif k in ("int", "float"):
            ty, cast = f"&[{_prim(p)}]", ".as_ptr()"
        else:
            raise Unsupported(f"array of {k}")
        if nul:
            return f"{v}: Option<{ty}>", [], f"{v}.map_or(::std::ptr::null(), |l| l{cast})"
        return f"{v}: {ty}", [], f"{v}{cast}"
    if k == "handle":
        if p.pointer != 0:
            raise Unsupported("handle pointer")
        rt = handle_type(t.name)
        if nul:
            return f"{v}: Option<&{rt}>", [], f"{v}.map_or(::std::ptr::null_mut(), |x| x.h)"
        return f"{v}: &{rt}", [], f"{v}.h"
    if k == "string":
        if nul:
            return f"{v}: Option<&str>", [f"let {v}_s = {v}.map(cstring).transpose()?;"], \
                f"{v}_s.as_ref().map_or(::std::ptr::null(), |s| s.as_ptr())"
        return f"{v}: &str", [f"let {v}_s = cstring({v})?;"], f"{v}_s.as_ptr()"
    if k == "struct":
        sn = t.name
        rt, conv = {"ctorch_device": ("Device", ".c()"), "ctorch_scalar": ("Scalar", ".c()")}.get(sn, (f"sys::{sn}", ""))
        if p.pointer == 0:
            return f"{v}: {rt}", [], f"{v}{conv}"
        if p.pointer == 1 and conv:
            return f"{v}: Option<{rt}>", [f"let {v}_c = {v}.map(|x| x{conv});"], \
                f"{v}_c.as_ref().map_or(::std::ptr::null(), |x| x as *const _)"
        if p.pointer == 1:
            if nul:
                return f"{v}: Option<&{rt}>", [], f"{v}.map_or(::std::ptr::null(), |x| x as *const _)"
            return f"{v}: &{rt}", [], f"{v} as *const _"
        raise Unsupported("struct pointer")
    if k == "enum":
        if p.pointer != 0 or t.name == "ctorch_status":
            raise Unsupported("enum")
        return f"{v}: {enum_type(t.name)}", [], f"{v}.0"
    if k in ("int", "float"):
        pt = _prim(p)
        if p.pointer == 0:
            if p.enum:
                keep = "-1" if p.negative == "keep" else None
                if keep is None:
                    raise Unsupported("int enum")
                return f"{v}: Option<{enum_type(p.enum)}>", [], f"{v}.map_or({keep}, |x| x.0 as {pt})"
            if p.boolean:
                return f"{v}: bool", [], f"{v} as {pt}"
            if p.is_seed:  # PyTorch's range for seeds (crate::IntoSeed)
                return f"{v}: impl crate::IntoSeed", [], f"crate::IntoSeed::into_seed({v})"
            return f"{v}: {pt}", [], f"{v}"
        if p.pointer == 1:
            return f"{v}: Option<{pt}>", [], f"{v}.as_ref().map_or(::std::ptr::null(), |x| x as *const {pt})"
    raise Unsupported(f"{p.name}: {k}")


def _out(p: Param, lists: dict) -> Tuple[str, str, str, str]:
    """(Rust result type, local declaration, C argument, result expression)."""
    v, t, k = "o_" + p.name, p.type, p.type.kind
    nr = p.null_result
    if p.array or p.ownership == "caller_buffer" or p.pointer != 1:
        raise Unsupported("buffer")
    if k == "handle":
        hn = t.name
        if p.ownership != "new":
            raise Unsupported("a borrowed handle out")  # owning it would free it twice
        decl = f"let mut {v} = ::std::ptr::null_mut();"
        if hn in lists:
            f = "read_tensor_list_opt" if p.elements_null_result else "read_tensor_list"
            if hn != "ctorch_tensor_list":
                raise Unsupported("list")
            rt = "Vec<Option<Tensor>>" if p.elements_null_result else "Vec<Tensor>"
            return rt, decl, f"&mut {v}", f"{f}({v})?"
        if hn == "ctorch_tensor":
            return ("Option<Tensor>", decl, f"&mut {v}", f"Tensor::own_opt({v})") if nr else \
                ("Tensor", decl, f"&mut {v}", f"Tensor::own({v})?")
        if hn == "ctorch_nn_module":
            return ("Option<nn::Module>", decl, f"&mut {v}", f"nn::Module::own({v}).ok()") if nr else \
                ("nn::Module", decl, f"&mut {v}", f"nn::Module::own({v})?")
        rt = handle_type(hn)
        if nr:
            return f"Option<{rt}>", decl, f"&mut {v}", f"unsafe {{ {rt}::from_raw({v}) }}"
        return rt, decl, f"&mut {v}", \
            f"unsafe {{ {rt}::from_raw({v}) }}.ok_or_else(|| Error::binding(\"unexpected NULL {hn}\"))?"
    if k == "string":
        decl = f"let mut {v} = ::std::ptr::null_mut();" if p.ownership == "new" else \
            f"let mut {v}: *const ::std::os::raw::c_char = ::std::ptr::null();"
        read = f"unsafe {{ take_string({v}) }}" if p.ownership == "new" else \
            f"unsafe {{ ::std::ffi::CStr::from_ptr({v}) }}.to_string_lossy().into_owned()"
        if nr or p.nullable:
            return "Option<String>", decl, f"&mut {v}", f"if {v}.is_null() {{ None }} else {{ Some({read}) }}"
        return "String", decl, f"&mut {v}", f"if {v}.is_null() {{ String::new() }} else {{ {read} }}"
    if k == "struct":
        sn = t.name
        decl = f"let mut {v}: sys::{sn} = unsafe {{ ::std::mem::zeroed() }};"
        if sn == "ctorch_device":
            return "Device", decl, f"&mut {v}", f"Device {{ kind: DeviceType({v}.r#type), index: {v}.index }}"
        return f"sys::{sn}", decl, f"&mut {v}", v
    if k == "enum":
        if t.name == "ctorch_status":
            raise Unsupported("status out")
        return enum_type(t.name), f"let mut {v} = 0;", f"&mut {v}", f"{enum_type(t.name)}({v})"
    if k in ("int", "float"):
        pt = _prim(p)
        decl = f"let mut {v}: {pt} = 0 as {pt};"
        if p.boolean:
            return "bool", decl, f"&mut {v}", f"{v} != 0"
        return pt, decl, f"&mut {v}", v
    raise Unsupported(f"out {k}")


def function(e: Planned, lists: dict, doc: Optional[Api] = None) -> str:
    f = e.f
    if f.returns.kind != "status":
        raise Unsupported("returns a value")
    params, pre, cargs, rets, res, decls = [], [], [], [], [], []
    alen = {}
    for p in f.params:
        if p.direction == "in" and p.array:
            v = ident(p.name)
            alen[p.name] = f"{v}.map_or(0, |l| l.len())" if p.nullable else f"{v}.len()"
    for p in f.params:
        if p.direction == "out":
            rt, decl, carg, r = _out(p, lists)
            decls.append(decl)
            cargs.append(carg)
            rets.append(rt)
            res.append(r)
        else:
            rp, s, carg = _in(p, alen, f.name)
            if rp:
                params.append(rp)
            pre += s
            cargs.append(carg)
    ret = "()" if not rets else rets[0] if len(rets) == 1 else f"({', '.join(rets)})"
    out = doc_lines(func_doc(doc.functions_by_name, f) if doc else f.doc) + [f"/// (C: `{f.name}`.)", "#[inline]",
                                 f"pub fn {ident(e.short)}({', '.join(params)}) -> Result<{ret}> {{",
                                 "    abi_once();"]
    out += ["    " + s for s in pre + decls]
    out.append(f"    check(unsafe {{ sys::{f.name}({', '.join(cargs)}) }})?;")
    out.append(f"    Ok({'()' if not res else res[0] if len(res) == 1 else '(' + ', '.join(res) + ')'})")
    out.append("}")
    return "\n".join(out)


def emit(doc: Api) -> Tuple[str, List[str], List[Tuple[str, str]]]:
    """(capi_gen.rs, the functions wrapped, (function, why not) for the others)."""
    lists = list_handles(doc)
    done, left, parts = [], [], []
    for e in plan(doc):
        if e.f.inline:
            continue
        if e.skip:
            left.append((e.name, e.skip))
            continue
        try:
            parts.append(function(e, lists, doc))
            done.append(e.name)
        except Unsupported as x:
            left.append((e.name, str(x)))
    head = ["// GENERATED by bindings-gen (emit_rust_capi.py) from api.json; do not edit.",
            "//! The header's functions as safe Rust, named as in C without `ctorch_`; every",
            f"//! one with a safe form ({len(done)} here; see emit_rust_capi.py for the others).",
            "#![allow(non_snake_case, unused_mut, clippy::all)]",
            "use crate::*;", ""]
    return "\n".join(head + parts) + "\n", done, left
