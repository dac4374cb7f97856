"""A typed model of ATen function schemas, parsed without torchgen.

Independent of torchgen's internals on purpose: the same parser must accept
the 1.13 vocabulary and newer 2.x additions (SymInt, int[1]?, DeviceIndex,
...). Unknown names are still parsed (as BaseType); deciding whether they can
be wrapped is the type mapper's job, so parsing never fails on vocabulary.
Only malformed text raises SchemaError.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple, Union


class SchemaError(ValueError):
    """The schema text is malformed (not merely using unknown types)."""


@dataclass(frozen=True)
class BaseType:
    name: str  # Tensor, int, SymInt, float, Scalar, Dimname, ...

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class OptionalType:
    elem: "Type"

    def __str__(self) -> str:
        return f"{self.elem}?"


@dataclass(frozen=True)
class ListType:
    elem: "Type"
    size: Optional[int] = None  # int[2] -> 2

    def __str__(self) -> str:
        return f"{self.elem}[{'' if self.size is None else self.size}]"


Type = Union[BaseType, OptionalType, ListType]


@dataclass(frozen=True)
class Annotation:
    """Alias annotation: Tensor(a!) -> alias_set=('a',), is_write=True.
    Tensor(a -> *) sets alias_set_after=('*',)."""
    alias_set: Tuple[str, ...]
    is_write: bool
    alias_set_after: Tuple[str, ...] = ()

    def __str__(self) -> str:
        s = "|".join(self.alias_set) + ("!" if self.is_write else "")
        if self.alias_set_after:
            s += " -> " + "|".join(self.alias_set_after)
        return f"({s})"


class _Annotated:
    """What arguments and returns share: a type and an optional alias
    annotation (`Tensor(a!)`)."""
    type: Type
    annotation: Optional[Annotation]

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write

    def type_str(self) -> str:
        return type_to_str(self.type, self.annotation)


@dataclass(frozen=True)
class Argument(_Annotated):
    name: str
    type: Type
    default: Optional[str]
    kwarg_only: bool
    annotation: Optional[Annotation]


@dataclass(frozen=True)
class Return(_Annotated):
    name: Optional[str]
    type: Type
    annotation: Optional[Annotation]


@dataclass
class Function:
    name: str       # "add", "add_", "__and__"
    overload: str   # "Tensor", "out", "" when none
    args: List[Argument]
    returns: List[Return]
    schema: str     # the original text, verbatim
    tags: Tuple[str, ...] = ()
    yaml_fields: dict = field(default_factory=dict)

    @property
    def qualified_name(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @property
    def positional(self) -> List[Argument]:
        return [a for a in self.args if not a.kwarg_only]

    @property
    def kwarg_only(self) -> List[Argument]:
        return [a for a in self.args if a.kwarg_only]

    @property
    def unambiguous_name(self) -> str:
        """`<name>_<overload>` (or `<name>`): also the at::_ops struct name."""
        return f"{self.name}_{self.overload}" if self.overload else self.name


def type_to_str(t: Type, ann: Optional[Annotation] = None) -> str:
    """Renders a type in schema syntax; the annotation follows the base name."""
    if isinstance(t, OptionalType):
        return type_to_str(t.elem, ann) + "?"
    if isinstance(t, ListType):
        return type_to_str(t.elem, ann) + f"[{'' if t.size is None else t.size}]"
    return t.name + (str(ann) if ann else "")


# ---- lexing helpers --------------------------------------------------------

def split_top_level(s: str, sep: str = ",") -> List[str]:
    """Splits on `sep` outside brackets, parentheses and quotes."""
    parts, depth, cur, quote = [], 0, [], None
    i = 0
    while i < len(s):
        c = s[i]
        if quote:
            cur.append(c)
            if c == "\\" and i + 1 < len(s):
                cur.append(s[i + 1])
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
            cur.append(c)
        elif c in "([":
            depth += 1
            cur.append(c)
        elif c in ")]":
            depth -= 1
            if depth < 0:
                raise SchemaError(f"unbalanced '{c}' in {s!r}")
            cur.append(c)
        elif c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    if quote or depth:
        raise SchemaError(f"unterminated quote or bracket in {s!r}")
    parts.append("".join(cur))
    return [p.strip() for p in parts]


_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_ANN_RE = re.compile(r"^\(\s*([A-Za-z0-9_*|]+)\s*(!?)\s*(?:->\s*([A-Za-z0-9_*|]+)\s*)?\)")


def parse_type(text: str) -> Tuple[Type, Optional[Annotation]]:
    """Parses e.g. `Tensor(a!)[]`, `int[1]?`, `Tensor?[]`, `Scalar[]?`."""
    text = text.strip()
    m = re.match(_IDENT, text)
    if not m:
        raise SchemaError(f"bad type {text!r}")
    t: Type = BaseType(m.group(0))
    rest = text[m.end():]
    ann = None
    am = _ANN_RE.match(rest)
    if am:
        ann = Annotation(tuple(am.group(1).split("|")), am.group(2) == "!",
                         tuple(am.group(3).split("|")) if am.group(3) else ())
        rest = rest[am.end():]
    # Suffixes apply left to right: `?` wraps in OptionalType, `[N]` in ListType.
    while rest:
        if rest.startswith("?"):
            t = OptionalType(t)
            rest = rest[1:]
            continue
        lm = re.match(r"^\[\s*(\d*)\s*\]", rest)
        if lm:
            t = ListType(t, int(lm.group(1)) if lm.group(1) else None)
            rest = rest[lm.end():]
            continue
        raise SchemaError(f"bad type suffix {rest!r} in {text!r}")
    return t, ann


def parse_argument(text: str, kwarg_only: bool) -> Argument:
    default = None
    # The default starts at the first '=' outside the type (types have none).
    eq = text.find("=")
    if eq >= 0:
        default = text[eq + 1:].strip()
        text = text[:eq].strip()
        if default == "":
            raise SchemaError(f"empty default in {text!r}")
    # The name is the last identifier; the type is what precedes it.
    m = re.match(r"^(.*\S)\s+(" + _IDENT + r")$", text)
    if not m:
        raise SchemaError(f"bad argument {text!r}")
    t, ann = parse_type(m.group(1))
    return Argument(m.group(2), t, default, kwarg_only, ann)


def parse_returns(text: str) -> List[Return]:
    text = text.strip()
    if text == "()":
        return []
    if text.startswith("("):
        if not text.endswith(")"):
            raise SchemaError(f"bad returns {text!r}")
        items = split_top_level(text[1:-1])
    else:
        items = [text]
    rets = []
    for it in items:
        if not it:
            raise SchemaError(f"empty return in {text!r}")
        m = re.match(r"^(.*\S)\s+(" + _IDENT + r")$", it)
        # A trailing identifier is a name only if what precedes parses as a type.
        if m:
            try:
                t, ann = parse_type(m.group(1))
                rets.append(Return(m.group(2), t, ann))
                continue
            except SchemaError:
                pass
        t, ann = parse_type(it)
        rets.append(Return(None, t, ann))
    return rets


_HEAD_RE = re.compile(r"^\s*(" + _IDENT + r")(?:\.(" + _IDENT + r"))?\s*\(")


def parse_schema(schema: str, tags=(), yaml_fields=None) -> Function:
    m = _HEAD_RE.match(schema)
    if not m:
        raise SchemaError(f"bad schema head in {schema!r}")
    name, overload = m.group(1), m.group(2) or ""
    # Find the ')' closing the argument list.
    depth, i, quote = 1, m.end(), None
    while i < len(schema) and depth:
        c = schema[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        i += 1
    if depth:
        raise SchemaError(f"unbalanced argument list in {schema!r}")
    arg_text = schema[m.end():i - 1]
    tail = schema[i:].strip()
    if not tail.startswith("->"):
        raise SchemaError(f"missing '->' in {schema!r}")
    args: List[Argument] = []
    kw = False
    if arg_text.strip():
        for a in split_top_level(arg_text):
            if a == "*":
                if kw:
                    raise SchemaError(f"two '*' in {schema!r}")
                kw = True
                continue
            args.append(parse_argument(a, kw))
    names = [a.name for a in args]
    if len(set(names)) != len(names):
        raise SchemaError(f"duplicate argument names in {schema!r}")
    return Function(name, overload, args, parse_returns(tail[2:]), schema.strip(),
                    tuple(tags), dict(yaml_fields or {}))


def load_yaml(path: str):
    """Returns [(entry dict)] from a native_functions.yaml (C loader when present)."""
    import yaml
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, encoding="utf-8") as f:
        data = yaml.load(f, Loader=loader)
    if not isinstance(data, list):
        raise SchemaError(f"{path}: expected a list of entries")
    return [e for e in data if isinstance(e, dict) and "func" in e]
