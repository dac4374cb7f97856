"""Rust binding emitter: api.json -> two cargo crates (docs/bindings.md).

- ctorch-sys: raw `extern "C"` declarations of every exported function, the
  enums (an integer type alias and a `const` per value), the structs
  (`#[repr(C)]`, size, alignment and every field offset asserted against
  api.json's measurements at compile time), the handles (opaque pointers)
  and callbacks. Its build.rs links through the pkg-config crate.
- ctorch: the safe face. One function per generated operator in `ops`
  (named as the Go binding names it, the C name without `ctorch_`:
  `ops::add_Tensor`, `ops::add__Tensor`), every argument explicit in the
  schema's order (Rust has no defaults: `Option` is None, a slice `[]`),
  results and errors as `Result<T, Error>`; a type per handle with `Drop`
  (handles_gen.rs); the module kinds (emit_rust_nn.py). The hand-written
  runtime (Tensor, Scalar, Error, nn::Module, optimizers) is copied from
  bindings-gen/rust/.

Compile time: every operator wrapper is `#[inline]`, so rustc type-checks
the ~2,500 of them in the ctorch crate but generates machine code only for
those a program calls (in the program's crate).
"""
from __future__ import annotations

import os
import re
from typing import List, Tuple

RUST_KEYWORDS = set("""as break const continue crate else enum extern false fn for if impl in let loop match mod
move mut pub ref return self Self static struct super trait true type unsafe use where while async await dyn
abstract become box do final macro override priv typeof unsized virtual yield try gen""".split())
# Not allowed even as raw identifiers.
_NO_RAW = {"self", "Self", "super", "crate", "_"}
# Locals of the generated bodies; arguments of these names are renamed.
_LOCALS = {"st", "h", "r0", "r1", "r2", "r3", "r4", "r5", "sys"}


def ident(n: str) -> str:
    if n in _NO_RAW or n in _LOCALS:
        return n + "_"
    return "r#" + n if n in RUST_KEYWORDS else n


def camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in s.split("_") if p)


# ---- C types -> Rust (the -sys crate) -----------------------------------------

_PRIM = {"int": "::std::os::raw::c_int", "int32_t": "i32", "int64_t": "i64", "uint64_t": "u64",
         "uint32_t": "u32", "size_t": "usize", "uint8_t": "u8", "double": "f64", "float": "f32",
         "char": "::std::os::raw::c_char", "void": "::std::ffi::c_void"}


def rust_c_type(c_type: str, prefix: str = "") -> str:
    """A C declaration type (`const char *const *`, `ctorch_tensor *`,
    `struct DLManagedTensor **`) as a Rust FFI type."""
    t = c_type.replace("struct ", "").strip()
    parts = t.split("*")
    base = parts[0].strip()
    base_const = base.startswith("const ") or base.endswith(" const")
    base = base.replace("const", "").strip()
    r = _PRIM.get(base, prefix + base)
    if base == "void" and len(parts) == 1:
        return "()"
    consts = [base_const] + ["const" in q for q in parts[1:]]
    for i in range(1, len(parts)):
        r = f"*{'const' if consts[i - 1] else 'mut'} {r}"
    return r


def callback_type(sig: dict) -> str:
    ps = ", ".join(f"{ident(p['name'])}: {rust_c_type(p['c_type'])}" for p in sig["params"])
    ret = sig["returns"]["c_type"]
    return f"Option<unsafe extern \"C\" fn({ps}){'' if ret == 'void' else ' -> ' + rust_c_type(ret)}>"


def param_type(p: dict) -> str:
    t = p["type"]
    if t["kind"] == "callback" and "signature" in t:
        return callback_type(t["signature"])
    return rust_c_type(p["c_type"])


def md_escape(text: str) -> str:
    """The header's text for rustdoc's Markdown: outside `code spans`, backslash-escapes what
    Markdown would read as links, HTML or emphasis (`outputs[i]`, `<pid>`, `a * b`, `__init__`),
    so `cargo doc` shows the C text as written and warns of no broken links or unclosed tags."""
    parts = re.split(r"(`[^`]*`)", text)
    for i in range(0, len(parts), 2):
        t = re.sub(r"([\\\[\]<>*])", r"\\\1", parts[i])
        parts[i] = re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", t)
    return "".join(parts)


def doc_lines(text: str, indent: str = "") -> List[str]:
    text = (text or "").strip()
    if not text:
        return []
    return [f"{indent}/// {ln}".rstrip() for ln in md_escape(text.replace("\t", " ")).split("\n")]


def func_doc(doc: dict, f: dict) -> str:
    """A function's header text. The header documents each `X_async` with its `X` (one
    comment over the pair, and the section's: a NEW ctorch_work, results after
    ctorch_work_wait), so api.json has no text of its own for them."""
    if f.get("doc"):
        return f["doc"]
    if f["name"].endswith("_async"):
        sync = next((g for g in doc["functions"] if g["name"] == f["name"][:-len("_async")]), None)
        if sync and sync.get("doc"):
            return (sync["doc"] + "\n\nAsynchronous: returns a NEW ctorch_work at once; the results are "
                    "guaranteed only after ctorch_work_wait returns CTORCH_OK.")
    return f"`{f['name']}` (C)."


def emit_sys(doc: dict) -> str:
    out = ["// GENERATED by bindings-gen (emit_rust.py) from api.json; do not edit.",
           "//! Raw declarations of libctorch's C API (api.json: every function, enum, struct, handle and",
           "//! callback). Every function is `unsafe`; the `ctorch` crate is the safe face.",
           "#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::all)]",
           "#![allow(rustdoc::all)]", "",
           f"/// api.json's `abi_hash`: what `ctorch_abi_hash()` returns from the library it describes.",
           f"pub const ABI_HASH: &str = \"{doc['abi_hash']}\";",
           f"/// The ctorch version these declarations were generated from.",
           f"pub const VERSION: &str = \"{doc['ctorch_version']}\";",
           f"/// The libtorch the operators' signatures follow.",
           f"pub const TORCH_VERSION: &str = \"{doc['torch_version']}\";",
           f"/// The library's ELF SONAME (a binding built from this file must load this one).",
           f"pub const SONAME: &str = \"{doc['library']['soname']}\";", ""]
    sizes = doc["types"]
    for m in doc["macros"]:
        if "value" in m and isinstance(m["value"], int):
            out += doc_lines(m.get("doc", "") or f"The header's `{m['name']}`.")
            out.append(f"pub const {m['name']}: i64 = {m['value']};")
    out.append("")
    for e in doc["enums"]:
        out += doc_lines(e["doc"])
        out.append(f"pub type {e['name']} = {_PRIM.get(e['c_type'], 'i32')};")
        for v in e["values"]:
            out += doc_lines(v.get("doc", "") or f"`{v['name']}` (= {v['value']}).")
            out.append(f"pub const {v['name']}: {e['name']} = {v['value']};")
        out.append(f"const _: () = assert!(::std::mem::size_of::<{e['name']}>() == {sizes[e['name']]['size']});")
        out.append("")
    for h in doc["handles"]:
        tag = h["tag"]
        out.append(f"/// The opaque object behind a `{h['name']}` handle.")
        out.append("#[repr(C)]")
        out.append(f"pub struct {tag} {{ _data: [u8; 0], _marker: ::std::marker::PhantomData<(*mut u8, "
                   "::std::marker::PhantomPinned)> }")
        out += doc_lines(h.get("doc", "") or f"A {h['name']} handle; freed by {h['free']}.")
        out.append(f"pub type {h['name']} = *mut {tag};")
        out.append("")
    for o in doc["opaque_types"]:
        n = (o["name"] if isinstance(o, dict) else o).replace("struct ", "").strip()
        out.append(f"/// Opaque (used through pointers only).")
        out.append("#[repr(C)]")
        out.append(f"pub struct {n} {{ _data: [u8; 0], _marker: ::std::marker::PhantomData<(*mut u8, "
                   "::std::marker::PhantomPinned)> }")
    out.append("")
    for cb in doc["callbacks"]:
        out += doc_lines(cb["doc"] or f"`{cb['name']}` (C; the header documents it with its neighbour).")
        out.append(f"pub type {cb['name']} = {callback_type(cb['signature'])};")
    out.append("")
    for s in doc["structs"]:
        out += doc_lines(s["doc"])
        out.append("#[repr(C)]")
        out.append("#[derive(Clone, Copy, Debug)]")
        out.append(f"pub struct {s['name']} {{")
        for f in s["fields"]:
            out += doc_lines(f.get("doc", ""), "    ")
            ft = _PRIM.get(f["c_type"], f["c_type"])
            if f.get("array_length"):
                ft = f"[{ft}; {f['array_length']}]"
            out.append(f"    pub {ident(f['name'])}: {ft},")
        out.append("}")
        out.append(f"const _: () = assert!(::std::mem::size_of::<{s['name']}>() == {s['size']});")
        out.append(f"const _: () = assert!(::std::mem::align_of::<{s['name']}>() == {s['align']});")
        for f in s["fields"]:
            out.append(f"const _: () = assert!(::std::mem::offset_of!({s['name']}, {ident(f['name'])}) == "
                       f"{f['offset']});")
        out.append("")
    out.append("#[link(name = \"ctorch\")]")
    out.append("extern \"C\" {")
    for f in doc["functions"]:
        if f["inline"]:
            continue
        out += doc_lines(func_doc(doc, f), "    ")
        ps = ", ".join(f"{ident(p['name'])}: {param_type(p)}" for p in f["params"])
        rt = f["returns"]["c_type"]
        ret = "" if rt == "void" else " -> " + rust_c_type(rt)
        out.append(f"    pub fn {f['name']}({ps}){ret};")
    out.append("}")
    out.append("")
    # The header's static inline helpers, from their inline_body (data in api.json).
    for f in doc["functions"]:
        if not f["inline"] or "inline_body" not in f:
            continue
        body = f["inline_body"]
        out += doc_lines(func_doc(doc, f))
        ps = ", ".join(f"{ident(p['name'])}: {param_type(p)}" for p in f["params"])
        out.append("#[inline]")
        out.append(f"pub fn {f['name']}({ps}) -> {body['returns_struct']} {{")
        fields = []
        st = next(s for s in doc["structs"] if s["name"] == body["returns_struct"])
        ftypes = {x["name"]: _PRIM.get(x["c_type"], x["c_type"]) for x in st["fields"]}
        for x in body["fields"]:
            ty = ftypes[x["field"]]
            if "param" in x:
                v = ident(x["param"])
                val = f"(if {v} != 0 {{ 1 }} else {{ 0 }})" if x.get("as") == "bool" else f"{v} as {ty}"
            else:
                val = f"{x['value']!r}".replace("False", "0").replace("True", "1")
                if ty in ("f64", "f32") and "." not in val:
                    val += ".0"
                val = f"{val} as {ty}"
            fields.append(f"{ident(x['field'])}: {val}")
        out.append(f"    {body['returns_struct']} {{ {', '.join(fields)} }}")
        out.append("}")
    return "\n".join(out) + "\n"


# ---- the safe crate: operators ----------------------------------------------------------------

_ENUM_TYPES = {"ctorch_reduction": "Reduction", "ctorch_grid_sampler_interpolation": "GridSamplerInterpolation",
               "ctorch_grid_sampler_padding": "GridSamplerPadding", "ctorch_embedding_bag_mode": "EmbeddingBagMode",
               "ctorch_dtype": "DType", "ctorch_layout": "Layout", "ctorch_memory_format": "MemoryFormat",
               "ctorch_device_type": "DeviceType"}


def enum_type(name: str) -> str:
    return _ENUM_TYPES.get(name) or camel(name[len("ctorch_"):])


def arg_type(a: dict) -> str:
    """The Rust type a caller passes for a schema argument."""
    b, opt, lst = a["base"], a["optional"], a.get("list")
    if lst:
        t = {"Tensor": "&[&Tensor]", "int": "&[i64]", "SymInt": "&[i64]", "float": "&[f64]", "bool": "&[bool]",
             "Scalar": "&[Scalar]", "Dimname": "&[&str]"}[b]
        if b == "Tensor" and a.get("elements_optional"):
            t = "&[Option<&Tensor>]"
        return f"Option<{t}>" if opt else t
    t = {"Tensor": "&Tensor", "int": "i64", "SymInt": "i64", "DeviceIndex": "i64", "float": "f64", "bool": "bool",
         "Scalar": "Scalar", "ScalarType": "DType", "Layout": "Layout", "MemoryFormat": "MemoryFormat",
         "Device": "Device", "str": "&str", "Dimname": "&str", "Generator": "&Generator"}[b]
    if "enum" in a:
        t = enum_type(a["enum"])
    return f"Option<{t}>" if opt else t


def _conv(a: dict, v: str, cparams: List[dict]) -> Tuple[List[str], List[str]]:
    """(statements before the call, C argument expressions)."""
    b, opt, lst = a["base"], a["optional"], a.get("list")
    if lst:
        if b == "Tensor":
            if a.get("elements_optional"):
                return ([f"let {v}_h: Vec<sys::ctorch_tensor> = {v}.iter().map(|t| t.map_or(::std::ptr::null_mut(), "
                         "|t| t.h)).collect();"], [f"{v}_h.as_ptr()", f"{v}_h.len()"])
            if opt:
                return ([f"let {v}_h: Option<Vec<sys::ctorch_tensor>> = {v}.map(|l| l.iter().map(|t| t.h).collect());"],
                        [f"{v}_h.as_ref().map_or(::std::ptr::null(), |l| l.as_ptr())",
                         f"{v}_h.as_ref().map_or(0, |l| l.len())"])
            return ([f"let {v}_h: Vec<sys::ctorch_tensor> = {v}.iter().map(|t| t.h).collect();"],
                    [f"{v}_h.as_ptr()", f"{v}_h.len()"])
        if b == "bool":
            ct = rust_c_type(cparams[0]["c_type"], "sys::").split(" ")[-1]
            conv = f"let {v}_c: Vec<{ct}> = {v}.iter().map(|&x| x as {ct}).collect();"
            if opt:
                return ([f"let {v}_c: Option<Vec<{ct}>> = {v}.map(|l| l.iter().map(|&x| x as {ct}).collect());"],
                        [f"{v}_c.as_ref().map_or(::std::ptr::null(), |l| l.as_ptr())",
                         f"{v}_c.as_ref().map_or(0, |l| l.len())"])
            return [conv], [f"{v}_c.as_ptr()", f"{v}_c.len()"]
        if b == "Scalar":
            conv = f"{v}.iter().map(|s| s.c()).collect()"
            if opt:
                return ([f"let {v}_c: Option<Vec<sys::ctorch_scalar>> = {v}.map(|l| l.iter().map(|s| s.c()).collect());"],
                        [f"{v}_c.as_ref().map_or(::std::ptr::null(), |l| l.as_ptr())",
                         f"{v}_c.as_ref().map_or(0, |l| l.len())"])
            return [f"let {v}_c: Vec<sys::ctorch_scalar> = {conv};"], [f"{v}_c.as_ptr()", f"{v}_c.len()"]
        if b == "Dimname" and opt:
            return ([f"let {v}_s = {v}.map(cstrings).transpose()?;", f"let {v}_p: Option<Vec<*const ::std::os::raw::c_char>> = "
                     f"{v}_s.as_ref().map(|l| l.iter().map(|s| s.as_ptr()).collect());"],
                    [f"{v}_p.as_ref().map_or(::std::ptr::null(), |l| l.as_ptr())", f"{v}_p.as_ref().map_or(0, |l| l.len())"])
        if b == "Dimname":
            return ([f"let {v}_s = cstrings({v})?;", f"let {v}_p: Vec<*const ::std::os::raw::c_char> = "
                     f"{v}_s.iter().map(|s| s.as_ptr()).collect();"], [f"{v}_p.as_ptr()", f"{v}_p.len()"])
        if opt:
            return [], [f"{v}.map_or(::std::ptr::null(), |l| l.as_ptr())", f"{v}.map_or(0, |l| l.len())"]
        return [], [f"{v}.as_ptr()", f"{v}.len()"]
    if b == "Tensor":
        return [], [f"{v}.map_or(::std::ptr::null_mut(), |t| t.h)" if opt else f"{v}.h"]
    if b == "Generator":
        return [], [f"{v}.map_or(::std::ptr::null_mut(), |g| g.h)" if opt else f"{v}.h"]
    if b in ("str", "Dimname"):
        if opt:
            return [f"let {v}_s = {v}.map(cstring).transpose()?;"], \
                [f"{v}_s.as_ref().map_or(::std::ptr::null(), |s| s.as_ptr())"]
        return [f"let {v}_s = cstring({v})?;"], [f"{v}_s.as_ptr()"]
    ct = rust_c_type(cparams[0]["c_type"], "sys::")
    base_ct = ct.split(" ")[-1] if opt else ct
    if b == "Scalar":
        val, cval = "x.c()", f"{v}.c()"
    elif b == "Device":
        val, cval = "x.c()", f"{v}.c()"
    elif b == "bool":
        val, cval = f"x as {base_ct}", f"{v} as {base_ct}"
    elif b in ("ScalarType", "Layout", "MemoryFormat") or "enum" in a:
        val, cval = f"x.0 as {base_ct}", f"{v}.0 as {base_ct}"
    else:
        val, cval = f"x as {base_ct}", f"{v} as {base_ct}"
    if opt:
        return [f"let {v}_o: Option<{base_ct}> = {v}.map(|x| {val});"], \
            [f"{v}_o.as_ref().map_or(::std::ptr::null(), |x| x as *const {base_ct})"]
    return [], [cval]


def _out(p: dict) -> Tuple[str, str, str]:
    """(Rust result type, local's initial value, conversion of local r)."""
    tn = p["type"]["name"]
    if tn == "ctorch_tensor":
        if p.get("null_result"):
            return "Option<Tensor>", "::std::ptr::null_mut()", "Tensor::own_opt({r})"
        return "Tensor", "::std::ptr::null_mut()", "Tensor::own({r})?"
    if tn == "ctorch_tensor_list":
        if p.get("elements_null_result"):
            return "Vec<Option<Tensor>>", "::std::ptr::null_mut()", "read_tensor_list_opt({r})?"
        return "Vec<Tensor>", "::std::ptr::null_mut()", "read_tensor_list({r})?"
    if tn == "int":
        return ("bool", "0", "{r} != 0") if p.get("boolean") else ("i64", "0", "{r} as i64")
    return {"int64_t": ("i64", "0", "{r}"), "double": ("f64", "0.0", "{r}"),
            "ctorch_scalar": ("Scalar", "sys::ctorch_scalar_int(0)", "Scalar::from_c({r})"),
            "ctorch_dtype": ("DType", "0", "DType({r})")}[tn]


def is_unsafe(f: dict) -> bool:
    """api.json marks the operator unsafe (ops_json.unsafe: the sweep crashed it)."""
    return bool(f.get("ops_json", {}).get("unsafe"))


def op_function(f: dict) -> str:
    op = f["op"]
    name = ident(f["name"][len("ctorch_"):])
    by_arg = {}
    for p in f["params"]:
        if p.get("schema_arg"):
            by_arg.setdefault(p["schema_arg"], []).append(p)
    params, pre, cargs, rets, convs = [], [], [], [], []
    outs = [p for p in f["params"] if p["direction"] == "out"]
    for k, p in enumerate(outs):
        rt, init, conv = _out(p)
        pre.append(f"let mut r{k} = {init};")
        cargs.append(f"&mut r{k}")
        rets.append(rt)
        convs.append(conv.format(r=f"r{k}"))
    for a in op["args"]:
        v = ident(a["name"])
        params.append(f"{v}: {arg_type(a)}")
        p1, c = _conv(a, v, by_arg.get(a["name"], []))
        pre.extend(p1)
        cargs.extend(c)
    lines = [f"/// `{op['schema']}`"]
    for k, p in enumerate(outs):
        if p.get("null_result"):
            lines.append(f"/// Result {k} is None where {p.get('null_when', 'the result is undefined')}.")
    if op["returns_convention"] == "mutated_args":
        lines.append("/// In place / out=: the result is the argument written.")
    unsafe = is_unsafe(f)
    if unsafe:
        # api.json (ops_json.unsafe, from bindings-gen/unsafe_ops.txt): the sweep found
        # arguments that crash or corrupt memory, so a safe fn would be unsound.
        lines += ["///", "/// # Safety", "///",
                  "/// The library does not check this operator's arguments fully; bad ones crash the process or",
                  f"/// corrupt memory (bindings-gen/unsafe_ops.txt): {f['ops_json'].get('unsafe_reason', '')}.",
                  "/// The caller must pass exactly what libtorch's own autograd would (tensors from the",
                  "/// matching forward, of the shapes it made)."]
    ret = rets[0] if len(rets) == 1 else f"({', '.join(rets)})"
    res = convs[0] if len(convs) == 1 else f"({', '.join(convs)})"
    lines.append("#[inline]")
    lines.append(f"pub {'unsafe ' if unsafe else ''}fn {name}({', '.join(params)}) -> Result<{ret}> {{")
    lines += ["    " + s for s in pre]
    lines.append(f"    check(unsafe {{ sys::{f['name']}({', '.join(cargs)}) }})?;")
    lines.append(f"    Ok({res})")
    lines.append("}")
    return "\n".join(lines)


def emit_ops(doc: dict, part: List[dict]) -> str:
    out = ["// GENERATED by bindings-gen (emit_rust.py) from api.json; do not edit.",
           "#![allow(non_snake_case, unused_mut, clippy::all)]",
           "use crate::*;", ""]
    for f in part:
        out.append(op_function(f))
    return "\n".join(out) + "\n"


def op_parts(doc: dict) -> List[Tuple[str, List[dict]]]:
    """The operators in a few files (rustc reads them as one module; smaller
    files keep editors and diffs usable)."""
    ops = [f for f in doc["functions"] if f["origin"] == "generated"]
    groups = [("ops_a_c", "abc_"), ("ops_d_l", "defghijkl"), ("ops_m_r", "mnopqr"), ("ops_s_z", "stuvwxyz")]
    res = []
    for mod, letters in groups:
        res.append((mod, [f for f in ops if f["name"][len("ctorch_"):].lstrip("_")[:1].lower() in letters
                          or (letters == "abc_" and not f["name"][len("ctorch_"):].lstrip("_")[:1].isalpha())]))
    return res


def emit_enums(doc: dict) -> str:
    out = ["// GENERATED by bindings-gen (emit_rust.py) from api.json; do not edit.",
           "//! The C enums as Rust newtypes: `DType::FLOAT32`, `Reduction::MEAN`.", "", "use crate::sys;", ""]
    for e in doc["enums"]:
        if e["name"] == "ctorch_status":
            continue
        rt = enum_type(e["name"])
        names = [v["name"] for v in e["values"]]
        pre = names[0]
        for nm in names:
            while not nm.startswith(pre):
                pre = pre[:-1]
        pre = pre[: pre.rfind("_") + 1] if len(names) > 1 else "CTORCH_"
        out += doc_lines(e["doc"])
        out.append("#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]")
        out.append(f"pub struct {rt}(pub sys::{e['name']});")
        out.append(f"impl {rt} {{")
        for v in e["values"]:
            cn = v["name"][len(pre):].upper()
            if cn[:1].isdigit():
                cn = "_" + cn
            # A value the header leaves undocumented still names its C constant (missing_docs).
            out += doc_lines(v.get("doc", "") or f"`{v['name']}` (= {v['value']}).", "    ")
            out.append(f"    pub const {cn}: {rt} = {rt}(sys::{v['name']});")
        if e["name"] == "ctorch_dtype":
            out.append("    /// torch's name of the dtype (`float32`), as constructor text writes it.")
            out.append("    pub fn python_name(self) -> &'static str {")
            out.append("        match self.0 {")
            for v in e["values"]:
                out.append(f"            {v['value']} => \"{v['name'][len(pre):].lower()}\",")
            out.append("            _ => \"unknown\",")
            out.append("        }")
            out.append("    }")
        out.append("}")
        out.append("")
    return "\n".join(out) + "\n"


# Handle types named otherwise than hplan.class_name: the TorchScript module
# would be `Module`, as torch.nn's (nn::Module) is; a deprecated alias keeps the old name.
RENAMED = {"ctorch_module": "ScriptModule"}
# Handles bound to the thread that made them (scopes restore thread-local modes on
# their own thread; a profiler or tracer session records its thread; an autograd
# ctx is borrowed during one callback): not Send.
NOT_SEND = {"ctorch_handle_scope", "ctorch_autograd_scope", "ctorch_stream_scope", "ctorch_autocast_scope",
            "ctorch_autograd_ctx", "ctorch_profiler", "ctorch_tracer"}


def emit_handles(doc: dict) -> str:
    """A type per handle (but Tensor, written by hand) owning one reference,
    freed by its free function on Drop."""
    from .hplan import class_name
    out = ["// GENERATED by bindings-gen (emit_rust.py) from api.json; do not edit.",
           "//! A type per C handle: owns one reference, freed on Drop by the handle's free function.",
           "use crate::sys;", ""]
    for h in doc["handles"]:
        if h["name"] in ("ctorch_tensor", "ctorch_nn_module"):
            continue  # hand-written: Tensor (lib.rs), nn::Module (nn/mod.rs)
        cn = RENAMED.get(h["name"]) or class_name(h["name"])
        out += doc_lines(h.get("doc", "") or f"Owns a `{h['name']}`.")
        out.append(f"/// Freed on Drop by `{h['free']}`." if h["free"] else
                   "/// Borrowed only (api.json: no free function): valid during the callback that got it.")
        out.append(f"pub struct {cn} {{ pub(crate) h: sys::{h['name']} }}")
        out.append(f"impl {cn} {{")
        out.append(f"    /// Takes ownership of a handle a C call returned (NULL: None).")
        out.append(f"    pub unsafe fn from_raw(h: sys::{h['name']}) -> Option<Self> {{ "
                   f"if h.is_null() {{ None }} else {{ Some({cn} {{ h }}) }} }}")
        out.append(f"    /// The raw handle, still owned by this value.")
        out.append(f"    pub fn as_raw(&self) -> sys::{h['name']} {{ self.h }}")
        out.append(f"    /// Gives up ownership: the caller frees the handle.")
        out.append(f"    pub fn into_raw(self) -> sys::{h['name']} {{ let h = self.h; ::std::mem::forget(self); h }}")
        out.append("}")
        if h["free"]:
            free = h["free"]
            out.append(f"impl Drop for {cn} {{")
            out.append(f"    fn drop(&mut self) {{ unsafe {{ sys::{free}(self.h) }}; }}")
            out.append("}")
        if h["name"] not in NOT_SEND:
            out.append(f"// The C contract (ctorch.h, Threads): any thread may use or free a handle; no Sync, as")
            out.append(f"// concurrent use of one object must be serialised by the caller.")
            out.append(f"unsafe impl Send for {cn} {{}}")
        if h["name"] in RENAMED:
            old = class_name(h["name"])
            out.append(f"/// The former name of [`{cn}`] (it collided with [`crate::nn::Module`]).")
            out.append(f"#[deprecated(note = \"renamed {cn}: nn::Module is torch.nn's module\")]")
            out.append(f"pub type {old} = {cn};")
        out.append("")
    return "\n".join(out) + "\n"


WORKSPACE = """\
# GENERATED by bindings-gen (generate_bindings.py). The two crates as one
# workspace: `cargo package --workspace` packs ctorch against the unpublished
# ctorch-sys beside it (scripts/package rust).
[workspace]
members = ["ctorch-sys", "ctorch"]
resolver = "2"
"""

SYS_CARGO = """\
# GENERATED by bindings-gen (generate_bindings.py) from api.json.
[package]
name = "ctorch-sys"
version = "{version}"
edition = "2021"
rust-version = "1.77"
description = "Raw FFI declarations of libctorch, a C ABI over LibTorch (generated from api.json)"
license = "BSD-3-Clause"
links = "ctorch"
build = "build.rs"
readme = "README.md"
keywords = ["pytorch", "libtorch", "ffi", "tensor"]
categories = ["external-ffi-bindings", "science"]

[build-dependencies]
pkg-config = "0.3"
"""

SAFE_CARGO = """\
# GENERATED by bindings-gen (generate_bindings.py) from api.json.
[package]
name = "ctorch"
version = "{version}"
edition = "2021"
rust-version = "1.77"
description = "PyTorch's operators, autograd, torch.nn modules and optimizers through libctorch's C API"
license = "BSD-3-Clause"
readme = "README.md"
keywords = ["pytorch", "libtorch", "tensor", "deep-learning"]
categories = ["science", "api-bindings"]

[dependencies]
ctorch-sys = {{ path = "../ctorch-sys", version = "={version}" }}
"""


def generate(doc: dict, out: str, copy_tree, write_if_changed, here: str) -> None:
    from .emit_rust_nn import emit as emit_nn
    from .emit_rust_methods import emit as emit_methods
    from .emit_rust_capi import emit as emit_capi
    copy_tree(os.path.join(here, "rust"), out)
    v = doc["ctorch_version"]
    sysd, safe = os.path.join(out, "ctorch-sys"), os.path.join(out, "ctorch")
    write_if_changed(os.path.join(out, "Cargo.toml"), WORKSPACE)
    write_if_changed(os.path.join(sysd, "Cargo.toml"), SYS_CARGO.format(version=v))
    write_if_changed(os.path.join(sysd, "src", "lib.rs"), emit_sys(doc))
    write_if_changed(os.path.join(safe, "Cargo.toml"), SAFE_CARGO.format(version=v))
    parts = op_parts(doc)
    for mod, fs in parts:
        write_if_changed(os.path.join(safe, "src", "ops", f"{mod}.rs"), emit_ops(doc, fs))
    write_if_changed(os.path.join(safe, "src", "ops", "mod.rs"),
                     "// GENERATED by bindings-gen (emit_rust.py) from api.json; do not edit.\n"
                     "//! Every ATen operator of api.json (`origin: generated`), one function per overload,\n"
                     "//! named as in C without `ctorch_` (`add_Tensor`, `add__Tensor`, `add_out`).\n"
                     + "".join(f"mod {m};\npub use {m}::*;\n" for m, _ in parts))
    write_if_changed(os.path.join(safe, "src", "enums_gen.rs"), emit_enums(doc))
    write_if_changed(os.path.join(safe, "src", "handles_gen.rs"), emit_handles(doc))
    write_if_changed(os.path.join(safe, "src", "methods_gen.rs"), emit_methods(doc))
    write_if_changed(os.path.join(safe, "src", "capi_gen.rs"), emit_capi(doc)[0])
    write_if_changed(os.path.join(safe, "src", "nn", "kinds_gen.rs"), emit_nn(doc))
