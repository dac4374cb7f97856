"""A parser for ctorch.h: the declarations of the hand-written C API.

ctorch.h is written in a small, regular subset of C99 (see its contract),
which this parser reads without a C front end: doc comments (`/** ... */`
before a declaration, `/**< ... */` after an enum value or struct field),
section banners and the reference's groups (`@defgroup`), `#define NAME number` constants, function-like macros,
enum / struct / handle / callback typedefs, opaque struct declarations,
`CTORCH_API` functions and `static inline` helpers. Anything else raises
HeaderError, so a declaration the description would miss fails the build
instead of silently vanishing from api.json.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple


class HeaderError(ValueError):
    pass


# Doc comments that shape the generated reference instead of documenting the
# declaration after them: a group's opening or closing, the file's and the
# main page's text.
_REFERENCE_ONLY = re.compile(r"^/\*\*[\s*]*(@\}|@defgroup\b|@file\b|@mainpage\b)")


@dataclass
class CType:
    """A C type as written: base name, pointer depth and const-ness."""
    text: str            # normalised spelling, e.g. "const char *const *"
    base: str            # "char", "ctorch_tensor", "struct DLManagedTensor"
    pointers: int        # number of '*'
    const_base: bool     # `const` applies to the base type
    const_ptrs: Tuple[bool, ...] = ()  # const after each '*', outermost last

    @property
    def const_pointee(self) -> bool:
        """The object pointed to (one level down) is const."""
        if self.pointers == 0:
            return False
        if self.pointers == 1:
            return self.const_base
        return self.const_ptrs[-2]


@dataclass
class Callback:
    """A function-pointer type (inline in a parameter, or a typedef)."""
    returns: CType
    params: List["Param"]


@dataclass
class Param:
    name: str
    type: Optional[CType]
    callback: Optional[Callback] = None
    named: bool = True  # False: the header gives no name (a callback prototype's `void *`), `name` is argN

    @property
    def c_text(self) -> str:
        """The declaration, unnamed parameters as argN: the spelling api.json
        format 3 gave as a function pointer's c_type, kept for the ABI hash."""
        if self.callback:
            ps = ", ".join(p.c_text for p in self.callback.params) or "void"
            return f"{self.callback.returns.text} (*{self.name})({ps})"
        t = self.type.text
        return f"{t}{self.name}" if t.endswith("*") else f"{t} {self.name}"

    def decl(self, name: Optional[str] = "") -> str:
        """The declaration as the header writes it: `name` replaces the
        parameter's name; None gives the abstract type (`void (*)(void *)`,
        `const char *`), which is a C type name, without any name inside."""
        own = self.name if name == "" else name
        if self.callback:
            inner = ", ".join(p.decl(None if name is None or not p.named else "")
                              for p in self.callback.params) or "void"
            return f"{self.callback.returns.text} (*{own or ''})({inner})"
        t = self.type.text
        if not own or self.name == "...":
            return t
        return f"{t}{own}" if t.endswith("*") else f"{t} {own}"


@dataclass
class EnumValue:
    name: str
    value: int
    doc: str = ""


@dataclass
class Enum:
    name: str
    values: List[EnumValue]
    doc: str = ""
    section: str = ""


@dataclass
class Field:
    name: str
    type: CType
    doc: str = ""
    array: int = 0  # `T name[N]`: N elements of type T (0: not an array)


@dataclass
class Struct:
    name: str
    fields: List[Field]
    doc: str = ""
    section: str = ""


@dataclass
class Handle:
    name: str        # ctorch_tensor
    tag: str         # ctorch_tensor_s
    doc: str = ""
    section: str = ""


@dataclass
class CallbackType:
    name: str
    callback: Callback
    doc: str = ""
    section: str = ""


@dataclass
class Function:
    name: str
    returns: CType
    params: List[Param]
    doc: str = ""
    section: str = ""
    inline: bool = False      # static inline helper: no library symbol
    line: int = 0
    body: str = ""            # an inline helper's body, `{ ... }`


@dataclass
class Macro:
    name: str
    params: Optional[List[str]]  # None for object-like macros
    body: str
    doc: str = ""
    value: Optional[int] = None  # object-like numeric constants


@dataclass
class Header:
    enums: List[Enum] = field(default_factory=list)
    structs: List[Struct] = field(default_factory=list)
    handles: List[Handle] = field(default_factory=list)
    callbacks: List[CallbackType] = field(default_factory=list)
    opaque: List[str] = field(default_factory=list)       # struct DLManagedTensor
    functions: List[Function] = field(default_factory=list)
    macros: List[Macro] = field(default_factory=list)
    includes: List[str] = field(default_factory=list)

    def enum(self, name: str) -> Optional[Enum]:
        return next((e for e in self.enums if e.name == name), None)


# ---- comments and statements ----------------------------------------------

def clean_doc(text: str) -> str:
    """The text of a /** ... */ comment without its decoration."""
    body = text[3:-2] if text.startswith("/**") else text[2:-2]
    if body.startswith("<"):
        body = body[1:]
    lines = []
    for ln in body.splitlines():
        ln = ln.strip()
        if ln.startswith("*"):
            ln = ln[1:].strip() if not ln.startswith("*/") else ""
        lines.append(ln)
    return " ".join(l for l in lines if l).strip()


@dataclass
class _Stmt:
    text: str
    doc: str
    line: int
    section: str
    trailing: List[Tuple[int, str]]  # (offset in text, /**< doc */) inside the statement


def _statements(src: str) -> Tuple[List[_Stmt], List[Macro], List[str]]:
    """Splits the header into top-level statements, collecting the doc
    comment that precedes each one, banner sections and #defines."""
    stmts: List[_Stmt] = []
    macros: List[Macro] = []
    includes: List[str] = []
    i, n = 0, len(src)
    cur: List[str] = []
    cur_trailing: List[Tuple[int, str]] = []
    depth = 0
    doc = ""
    section = ""
    start_line = 1
    pending_doc = ""  # doc seen before the statement's first token
    box = 0

    def line_of(pos: int) -> int:
        return src.count("\n", 0, pos) + 1

    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                raise HeaderError("unterminated comment")
            com = src[i:j + 2]
            i = j + 2
            if com.startswith("/**<"):
                cur_trailing.append((len("".join(cur)), clean_doc(com)))
            elif com.startswith("/**") and _REFERENCE_ONLY.search(com) and not "".join(cur).strip():
                # The reference's structure (docs/reference.md): a group's
                # opening names the section of what follows; the others
                # document no declaration.
                m = re.search(r"@defgroup\s+\w+\s+([^\n]*)", com)
                if m:
                    section = m.group(1).strip()
                pending_doc = ""
            elif com.startswith("/**"):
                if "".join(cur).strip():
                    cur_trailing.append((len("".join(cur)), clean_doc(com)))
                else:
                    pending_doc = clean_doc(com)
            elif not "".join(cur).strip() and depth == 0:
                body = com[2:-2].strip()
                # Boxed banners are a dash line, the title, more lines, and a
                # closing dash line; `/* ---- title ---- */` is a sub-banner.
                if body and set(body) <= set("-"):
                    box = 1 if box == 0 else 0
                elif box == 1:
                    section, box = body.split("\n")[0].strip().strip("-").strip(), 2
                elif box == 0 and "\n" not in com and body.startswith("----"):
                    section = body.strip("- ").strip()
                pending_doc = ""  # a plain comment separates a doc from what follows
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "#" and not "".join(cur).strip():
            j = i
            # Directive (with line continuations).
            while True:
                k = src.find("\n", j)
                if k < 0:
                    k = n
                if src[k - 1:k] == "\\":
                    j = k + 1
                    continue
                break
            line = src[i:k].replace("\\\n", " ")
            i = k
            m = re.match(r"#\s*define\s+(\w+)(\(([^)]*)\))?\s*(.*)$", line)
            if m:
                name, params, body = m.group(1), m.group(3), m.group(4).strip()
                body = re.sub(r"/\*.*?\*/", "", body).strip()
                val = None
                # Integer constants with C's suffixes and bases (1u, 0x10, 64UL).
                mv = re.fullmatch(r"(-?)(0[xX][0-9a-fA-F]+|\d+)[uUlL]*", body)
                if params is None and mv:
                    val = int(mv.group(1) + mv.group(2), 0)
                macros.append(Macro(name, [p.strip() for p in params.split(",")] if params is not None else None,
                                    body, pending_doc, val))
                pending_doc = ""
            m = re.match(r'#\s*include\s+[<"]([^>"]+)[>"]', line)
            if m:
                includes.append(m.group(1))
            continue
        if not cur:
            if c.isspace():
                i += 1
                continue
            doc, start_line = pending_doc, line_of(i)
            pending_doc = ""
        cur.append(c)
        i += 1
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                raise HeaderError(f"line {line_of(i)}: unbalanced '}}'")
            text = "".join(cur).strip()
            if depth == 0 and text.startswith("static inline"):
                stmts.append(_Stmt(text, doc, start_line, section, cur_trailing))
                cur, cur_trailing = [], []
        elif c == ";" and depth == 0:
            stmts.append(_Stmt("".join(cur).strip(), doc, start_line, section, cur_trailing))
            cur, cur_trailing = [], []
    if "".join(cur).strip():
        raise HeaderError(f"unterminated declaration: {''.join(cur).strip()[:80]!r}")
    return stmts, macros, includes


# ---- types and declarations -------------------------------------------------

_IDENT = r"[A-Za-z_]\w*"


def parse_ctype(text: str) -> CType:
    """`const char *const *` -> CType. Qualifiers other than const refused."""
    t = re.sub(r"\s+", " ", text.replace("*", " * ")).strip()
    toks = t.split(" ")
    const_base = False
    base_toks: List[str] = []
    pointers = 0
    const_ptrs: List[bool] = []
    for tok in toks:
        if tok == "const":
            if pointers == 0:
                const_base = True
            else:
                const_ptrs[-1] = True
        elif tok == "*":
            pointers += 1
            const_ptrs.append(False)
        elif pointers == 0 and re.fullmatch(_IDENT, tok):
            base_toks.append(tok)
        else:
            raise HeaderError(f"unsupported type {text!r}")
    if not base_toks:
        raise HeaderError(f"type without a name: {text!r}")
    base = " ".join(base_toks)
    norm = ("const " if const_base else "") + base
    for k in range(pointers):
        norm += " *" + ("const" if const_ptrs[k] else "")
    while "* *" in norm:
        norm = norm.replace("* *", "**")
    return CType(norm, base, pointers, const_base, tuple(const_ptrs))


def _split_commas(s: str) -> List[str]:
    out, depth, cur = [], 0, []
    for c in s:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


_FNPTR = re.compile(r"^(.*?)\(\s*\*\s*(" + _IDENT + r")\s*\)\s*\((.*)\)$", re.S)


def parse_params(text: str) -> List[Param]:
    text = text.strip()
    if text in ("", "void"):
        return []
    params = []
    for i, p in enumerate(_split_commas(text)):
        if p.strip() == "...":
            # A variadic function's tail (ctorch_nn_newf): api.json marks it,
            # the bindings leave the function to C (its doc's @c_only).
            params.append(Param("...", CType("...", "...", 0, False)))
            continue
        m = _FNPTR.match(p)
        if m:
            params.append(Param(m.group(2), None, Callback(parse_ctype(m.group(1)), parse_params(m.group(3)))))
            continue
        m = re.match(r"^(.*?)(" + _IDENT + r")$", p.strip())
        if not m or not m.group(1).strip():
            # An unnamed parameter (callback prototypes may omit names).
            params.append(Param(f"arg{i}", parse_ctype(p), named=False))
            continue
        params.append(Param(m.group(2), parse_ctype(m.group(1))))
    return params


def _attach_trailing(names: List[Tuple[int, int]], trailing: List[Tuple[int, str]], body_off: int) -> Dict[int, str]:
    """`/**< doc */` comments belong to the last member named before them.
    names: (offset of the member's name in the body, member index)."""
    docs: Dict[int, str] = {}
    for off, d in trailing:
        rel = off - body_off
        before = [k for pos, k in names if pos < rel]
        if before and before[-1] not in docs:
            docs[before[-1]] = d
    return docs


def _enum_values(body: str, trailing: List[Tuple[int, str]], body_off: int) -> List[EnumValue]:
    vals: List[EnumValue] = []
    names: List[Tuple[int, int]] = []
    pos = 0
    nxt = 0
    for item in body.split(","):
        start = pos
        pos += len(item) + 1
        item_s = item.strip()
        if not item_s:
            continue
        m = re.fullmatch(r"(" + _IDENT + r")\s*(?:=\s*(-?(?:0x[0-9A-Fa-f]+|\d+)))?", item_s)
        if not m:
            raise HeaderError(f"unsupported enumerator {item_s!r}")
        v = int(m.group(2), 0) if m.group(2) else nxt
        nxt = v + 1
        names.append((start + item.index(m.group(1)), len(vals)))
        vals.append(EnumValue(m.group(1), v))
    for k, d in _attach_trailing(names, trailing, body_off).items():
        vals[k].doc = d
    return vals


def _struct_fields(body: str, trailing: List[Tuple[int, str]], body_off: int) -> List[Field]:
    fields: List[Field] = []
    names: List[Tuple[int, int]] = []
    pos = 0
    for decl in body.split(";"):
        start = pos
        pos += len(decl) + 1
        d = decl.strip()
        if not d:
            continue
        arr = re.match(r"^(.*?)(" + _IDENT + r")\s*\[\s*(\d+)\s*\]$", d)
        if arr:  # `char name[256];`: one fixed-size array field
            names.append((start + decl.index(d), len(fields)))
            fields.append(Field(arr.group(2), parse_ctype(arr.group(1)), array=int(arr.group(3))))
            continue
        m = re.match(r"^(.*?)(" + _IDENT + r"(?:\s*,\s*\**\s*" + _IDENT + r")*)$", d)
        if not m:
            raise HeaderError(f"unsupported struct member {d!r}")
        # `double beta1, beta2;` declares two fields of one type.
        base = m.group(1)
        first = len(fields)
        for nm in [x.strip() for x in m.group(2).split(",")]:
            fields.append(Field(nm, parse_ctype(base)))
        names.append((start + decl.index(d), first))
        for k in range(first + 1, len(fields)):
            names.append((start + decl.index(d), k))
    docs = _attach_trailing(names, trailing, body_off)
    # A doc after `double beta1, beta2;` describes both.
    for k, d in docs.items():
        fields[k].doc = d
    pos_of = {k: pos for pos, k in names}
    for k in range(len(fields)):
        if not fields[k].doc:
            fields[k].doc = next((fields[j].doc for j in range(len(fields))
                                  if pos_of[j] == pos_of[k] and fields[j].doc), "")
    return fields


# How the header's conditionals are taken when read as C by a GNU compiler.
_CONDITIONS = {"__cplusplus": False, "__GNUC__": True}


def _condition(line: str, defined: Dict[str, bool]) -> bool:
    m = re.match(r"#\s*(ifdef|ifndef)\s+(\w+)", line)
    if m:
        v = defined.get(m.group(2), False)
        return v if m.group(1) == "ifdef" else not v
    m = re.match(r"#\s*if\s+(!?)\s*defined\s*\(?\s*(\w+)\s*\)?\s*$", line)
    if m:
        v = defined.get(m.group(2), False)
        return not v if m.group(1) else v
    raise HeaderError(f"unsupported conditional {line!r}")


def preprocess(src: str) -> str:
    """Blanks the lines of inactive #if branches (C, GNU compiler), keeping
    line numbers; the include guard counts as taken."""
    defined = dict(_CONDITIONS)
    out, stack = [], []  # stack of (taking_now, branch_taken_already)
    for line in src.split("\n"):
        s = line.strip()
        active = all(t for t, _ in stack)
        if re.match(r"#\s*(if|ifdef|ifndef)\b", s):
            c = _condition(s, defined) if active else False
            stack.append((c, c))
            out.append("")
            continue
        if re.match(r"#\s*else\b", s):
            t, done = stack.pop()
            stack.append((not done, True))
            out.append("")
            continue
        if re.match(r"#\s*endif\b", s):
            stack.pop()
            out.append("")
            continue
        if active:
            m = re.match(r"#\s*define\s+(\w+)", s)
            if m:
                defined[m.group(1)] = True
        out.append(line if active else "")
    if stack:
        raise HeaderError("unterminated #if")
    return "\n".join(out)


def parse_header(src: str) -> Header:
    h = Header()
    stmts, macros, includes = _statements(preprocess(src))
    h.macros, h.includes = macros, includes
    for st in stmts:
        t = re.sub(r"\s+", " ", st.text).strip()
        # typedef enum NAME CTORCH_ENUM_BASE { ... } NAME;
        m = re.match(r"^typedef enum (" + _IDENT + r")(?: CTORCH_ENUM_BASE)? \{", t)
        if m:
            lb = st.text.index("{")
            rb = st.text.rindex("}")
            name = st.text[rb + 1:].strip().rstrip(";").strip()
            h.enums.append(Enum(name, _enum_values(st.text[lb + 1:rb], st.trailing, lb + 1), st.doc, st.section))
            continue
        m = re.match(r"^typedef struct (" + _IDENT + r") \{", t)
        if m:
            lb = st.text.index("{")
            rb = st.text.rindex("}")
            name = st.text[rb + 1:].strip().rstrip(";").strip()
            h.structs.append(Struct(name, _struct_fields(st.text[lb + 1:rb], st.trailing, lb + 1), st.doc,
                                    st.section))
            continue
        m = re.match(r"^typedef struct (" + _IDENT + r") ?\* ?(" + _IDENT + r");$", t)
        if m:
            h.handles.append(Handle(m.group(2), m.group(1), st.doc, st.section))
            continue
        m = re.match(r"^typedef (.*?)\( ?\* ?(" + _IDENT + r") ?\) ?\((.*)\);$", t)
        if m:
            h.callbacks.append(CallbackType(m.group(2), Callback(parse_ctype(m.group(1)), parse_params(m.group(3))),
                                            st.doc, st.section))
            continue
        m = re.match(r"^struct (" + _IDENT + r");$", t)
        if m:
            h.opaque.append("struct " + m.group(1))
            continue
        m = re.match(r"^(CTORCH_API|static inline) (.*?)(" + _IDENT + r") ?\((.*?)\) ?(;|\{.*)$", t)
        if m:
            inline = m.group(1) == "static inline"
            h.functions.append(Function(m.group(3), parse_ctype(m.group(2)), parse_params(m.group(4)), st.doc,
                                        st.section, inline, st.line, m.group(5) if inline else ""))
            continue
        raise HeaderError(f"line {st.line}: unsupported declaration {t[:100]!r}")
    return h
