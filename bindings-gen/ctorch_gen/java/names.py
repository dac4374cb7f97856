"""Java binding: names and type mapping shared by its emitters (raw, enums,
ops, handles): Java identifiers, C types as FFM layouts (one letter per way a
value is passed) and Java types, schema arguments and results as Java types,
the header's text as javadoc. Imports none of the emitters."""
from __future__ import annotations

import re
from typing import List

from ..apimodel import OpArg

JAVA_KEYWORDS = set("""abstract assert boolean break byte case catch char class const continue default do double
else enum extends final finally float for goto if implements import instanceof int interface long native new
package private protected public return short static strictfp super switch synchronized this throw throws
transient try void volatile while true false null var record yield sealed permits non-sealed when""".split())

# Locals of the generated bodies; arguments of these names are renamed.
_LOCALS = {"st", "s", "m", "r0", "r1", "r2", "r3", "r4", "r5", "scratch", "mark"}


def ident(n: str) -> str:
    if n in JAVA_KEYWORDS or n in _LOCALS or n == "_":
        return n + "_"
    return n


def camel(s: str, upper: bool = False) -> str:
    """snake_case -> camelCase (CamelCase with upper); leading/trailing underscores kept
    as a mark (`_foo` -> `_foo`, `add_` -> `add_`)."""
    lead = len(s) - len(s.lstrip("_"))
    trail = len(s) - len(s.rstrip("_"))
    core = s.strip("_")
    parts = [p for p in core.split("_") if p]
    if not parts:
        return s
    first = parts[0][:1].upper() + parts[0][1:] if upper else parts[0]
    body = first + "".join(p[:1].upper() + p[1:] for p in parts[1:])
    return "_" * lead + body + "_" * trail


# How a C value is passed through FFM: A an address (pointer or handle), I a 32-bit int
# (an enum too), J a 64-bit int, D a double, S a ctorch_scalar and V a ctorch_device by
# value. One downcall handle per shape (result + params).
JAVA_RAW = {"A": "MemorySegment", "I": "int", "J": "long", "D": "double", "S": "MemorySegment",
            "V": "MemorySegment"}
LAYOUT = {"A": "ADDRESS", "I": "JAVA_INT", "J": "JAVA_LONG", "D": "JAVA_DOUBLE", "S": "Structs.CTORCH_SCALAR",
          "V": "Structs.CTORCH_DEVICE"}
_INT32 = {"int", "int32_t", "uint32_t", "ctorch_status"}
_INT64 = {"int64_t", "uint64_t", "size_t"}


def letter(c_type: str, enums: set) -> str:
    """The pass-by letter of a C type (see LETTERS)."""
    t = c_type.replace("struct ", "").replace("const ", "").strip()
    if "*" in t or "(" in t:
        return "A"
    if t in _INT32 or t in enums:
        return "I"
    if t in _INT64:
        return "J"
    if t == "double":
        return "D"
    if t == "ctorch_scalar":
        return "S"
    if t == "ctorch_device":
        return "V"
    if t == "void":
        return ""
    return "A"  # handles and callbacks: pointers


def enum_class(name: str) -> str:
    """ctorch_dtype -> DType; ctorch_reduction -> Reduction."""
    return {"ctorch_dtype": "DType", "ctorch_device_type": "DeviceType"}.get(name) or camel(name[len("ctorch_"):], True)


def enum_const(c_name: str, prefix: str) -> str:
    cn = c_name[len(prefix):].upper()
    return "_" + cn if cn[:1].isdigit() else cn


def enum_prefix(names: List[str]) -> str:
    pre = names[0]
    for nm in names:
        while not nm.startswith(pre):
            pre = pre[:-1]
    return pre[: pre.rfind("_") + 1] if len(names) > 1 else "CTORCH_"


def arg_type(a: OpArg) -> str:
    """The Java type a caller passes for a schema argument (null = None where optional)."""
    b, opt, lst = a.base, a.optional, a.list
    if lst:
        return {"Tensor": "Tensor[]", "int": "long[]", "SymInt": "long[]", "float": "double[]",
                "bool": "boolean[]", "Scalar": "Number[]", "Dimname": "String[]"}[b]
    if a.enum is not None:
        return enum_class(a.enum)
    t = {"Tensor": "Tensor", "int": "long", "SymInt": "long", "DeviceIndex": "long", "float": "double",
         "bool": "boolean", "Scalar": "Number", "ScalarType": "DType", "Layout": "Layout",
         "MemoryFormat": "MemoryFormat", "Device": "Device", "str": "String", "Dimname": "String",
         "Generator": "Generator"}[b]
    if opt:
        t = {"long": "Long", "double": "Double", "boolean": "Boolean"}.get(t, t)
    return t


def javadoc(text: str, indent: str = "") -> List[str]:
    text = (text or "").strip()
    if not text:
        return []
    # & first: the entities written after it are to stay entities (Javadoc's doclint refuses a bare &).
    text = text.replace("&", "&amp;").replace("*/", "*&#47;").replace("@", "{@literal @}").replace("<", "&lt;").replace(">", "&gt;")
    text = re.sub(r"\\u", r"\\u005Cu", text)
    lines = [f"{indent}/**"] + [f"{indent} * {ln}".rstrip() for ln in text.split("\n")] + [f"{indent} */"]
    return lines


def jstr(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def op_part(name: str) -> str:
    """The raw/typed operator class part of a generated function (javac reads smaller classes faster)."""
    c = name[len("ctorch_"):].lstrip("_")[:1].lower()
    for part, letters in (("AC", "abc"), ("DL", "defghijkl"), ("MR", "mnopqr"), ("SZ", "stuvwxyz")):
        if c in letters:
            return part
    return "AC"

