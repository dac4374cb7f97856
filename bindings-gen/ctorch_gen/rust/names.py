"""Rust binding: names and type mapping shared by its emitters (sys, capi,
methods, nn): Rust identifiers, C types as Rust FFI types, schema arguments
and results as Rust types, the header's text as rustdoc. Imports none of
the emitters."""
from __future__ import annotations

import re
from typing import List, Tuple

from ..apimodel import OpArg, Param, Signature


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


C_PRIM = {"int": "::std::os::raw::c_int", "int32_t": "i32", "int64_t": "i64", "uint64_t": "u64",
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
    r = C_PRIM.get(base, prefix + base)
    if base == "void" and len(parts) == 1:
        return "()"
    consts = [base_const] + ["const" in q for q in parts[1:]]
    for i in range(1, len(parts)):
        r = f"*{'const' if consts[i - 1] else 'mut'} {r}"
    return r


def callback_type(sig: Signature) -> str:
    ps = ", ".join(f"{ident(p.name)}: {rust_c_type(p.c_type)}" for p in sig.params)
    ret = sig.returns.c_type
    return f"Option<unsafe extern \"C\" fn({ps}){'' if ret == 'void' else ' -> ' + rust_c_type(ret)}>"


def param_type(p: Param) -> str:
    t = p.type
    if t.kind == "callback" and t.signature is not None:
        return callback_type(t.signature)
    return rust_c_type(p.c_type)


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


_ENUM_TYPES = {"ctorch_reduction": "Reduction", "ctorch_grid_sampler_interpolation": "GridSamplerInterpolation",
               "ctorch_grid_sampler_padding": "GridSamplerPadding", "ctorch_embedding_bag_mode": "EmbeddingBagMode",
               "ctorch_dtype": "DType", "ctorch_layout": "Layout", "ctorch_memory_format": "MemoryFormat",
               "ctorch_device_type": "DeviceType"}


def enum_type(name: str) -> str:
    return _ENUM_TYPES.get(name) or camel(name[len("ctorch_"):])


def arg_type(a: OpArg) -> str:
    """The Rust type a caller passes for a schema argument."""
    b, opt, lst = a.base, a.optional, a.list
    if lst:
        t = {"Tensor": "&[&Tensor]", "int": "&[i64]", "SymInt": "&[i64]", "float": "&[f64]", "bool": "&[bool]",
             "Scalar": "&[Scalar]", "Dimname": "&[&str]"}[b]
        if b == "Tensor" and a.elements_optional:
            t = "&[Option<&Tensor>]"
        return f"Option<{t}>" if opt else t
    t = {"Tensor": "&Tensor", "int": "i64", "SymInt": "i64", "DeviceIndex": "i64", "float": "f64", "bool": "bool",
         "Scalar": "Scalar", "ScalarType": "DType", "Layout": "Layout", "MemoryFormat": "MemoryFormat",
         "Device": "Device", "str": "&str", "Dimname": "&str", "Generator": "&Generator"}[b]
    if a.enum is not None:
        t = enum_type(a.enum)
    return f"Option<{t}>" if opt else t


def result_type(p: Param) -> Tuple[str, str, str]:
    """(Rust result type, local's initial value, conversion of local r)."""
    tn = p.type.name
    if tn == "ctorch_tensor":
        if p.null_result:
            return "Option<Tensor>", "::std::ptr::null_mut()", "Tensor::own_opt({r})"
        return "Tensor", "::std::ptr::null_mut()", "Tensor::own({r})?"
    if tn == "ctorch_tensor_list":
        if p.elements_null_result:
            return "Vec<Option<Tensor>>", "::std::ptr::null_mut()", "read_tensor_list_opt({r})?"
        return "Vec<Tensor>", "::std::ptr::null_mut()", "read_tensor_list({r})?"
    if tn == "int":
        return ("bool", "0", "{r} != 0") if p.boolean else ("i64", "0", "{r} as i64")
    return {"int64_t": ("i64", "0", "{r}"), "double": ("f64", "0.0", "{r}"),
            "ctorch_scalar": ("Scalar", "sys::ctorch_scalar_int(0)", "Scalar::from_c({r})"),
            "ctorch_dtype": ("DType", "0", "DType({r})")}[tn]


# Handle types named otherwise than hplan.class_name: the TorchScript module
# would be `Module`, as torch.nn's (nn::Module) is; a deprecated alias keeps the old name.
RENAMED = {"ctorch_module": "ScriptModule"}
