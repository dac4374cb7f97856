"""The Python binding's _api.py from api.json: every hand-written C function
of the header (origin "header") as a typed Python function, the handle
classes and the list readers (hplan.py decides which functions, for the
three bindings alike). Split from capi.py, which emits _capi.py and
_ops.py."""
from __future__ import annotations

from typing import Dict, List, Tuple

from ..apimodel import Api, Param
from ..hplan import Planned, SlotWriter, class_handles, class_name, list_handles, plan, reader_name
from .names import py_name

# ---- _api.py: the header's functions as typed Python functions ----------------------------

_OUT_CT = {"int": "_c.c_int", "int32_t": "_c.c_int32", "int64_t": "_c.c_int64", "uint64_t": "_c.c_uint64",
           "uint32_t": "_c.c_uint32", "size_t": "_c.c_size_t", "double": "_c.c_double"}


def _h_out_ctor(p: Param) -> str:
    t = p.type
    k = t.kind
    if k == "int" and p.pointer == 2:  # the address of a number ctorch keeps (lifetime: process)
        return f"_c.POINTER({_OUT_CT[t.name]})()"
    if k == "handle" or (k == "void" and p.pointer == 2):
        return "_c.c_void_p()"
    if k == "string":
        return "_c.c_char_p()"
    if k == "struct":
        return f"_capi.{t.name}()"
    if k == "enum":
        return "_c.c_int32()"
    return f"{_OUT_CT[t.name]}()"


def _h_out_value(p: Param, v: str) -> str:
    t = p.type
    k = t.kind
    if k == "int" and p.pointer == 2:
        return f"{v}.contents"  # a live view: .value reads the number in place
    if k == "handle":
        if t.name == "ctorch_tensor":
            return f"_wrap({v}.value)"
        if t.name in _LISTS:
            return f"{reader_name(t.name)}({v}.value)"
        return f"_adopt({class_name(t.name)}, {v}.value)"
    if k == "string":
        return f"_text({v}.value)"
    if k == "struct":
        return f"_struct_out({t.name!r}, {v})"
    if k == "enum":
        return f"_enum_out({t.name!r}, {v}.value)"
    if k == "void":
        return f"({v}.value or 0)"
    if p.boolean:
        return f"bool({v}.value)"
    return f"{v}.value"


class _Wrapper(SlotWriter):
    """A header function's typed Python wrapper, slot by slot (hplan.SlotWriter)."""

    raw = False  # an argument converted by its argtype (_ints): may raise ctypes.ArgumentError

    def query_arg(self, f, q, src):
        return f"_h({py_name(src)})" if q.type.kind == "handle" else py_name(src)

    def query(self, f, out, args, k):
        v = f"_q{k}"
        self.pre.append(f"{v} = _query(_lib.{f.name}, {_h_out_ctor(out)}, {', '.join(args)})")
        return v

    def query_buffer(self, s):
        p, n, bs = s.p, py_name(s.p.name), s.p.buffer_size
        terms = self.query_terms(s)
        self.pre.append(f"_n_{n} = {' * '.join(terms)}")
        if bs.unit == "elements":
            self.pre.append(f"_r_{n} = ({_OUT_CT[p.type.name]} * max(_n_{n}, 1))()")
            self.rets.append(f"tuple(_r_{n}[:_n_{n}])")
        else:
            self.pre.append(f"_r_{n} = _c.create_string_buffer(max(_n_{n}, 1))")
            self.rets.append(f"_r_{n}.raw[:_n_{n}]")
        self.cargs.append(f"_r_{n}")

    def filled_buffer(self, s):  # handles into an array of bs.capacity; the count is reported
        n, bs = py_name(s.p.name), s.p.buffer_size
        self.pre.append(f"_r_{n} = (_c.c_void_p * {bs.capacity})()")
        self.cargs.append(f"_r_{n}")
        self.rets.append(f"[_wrap(_r_{n}[_i]) for _i in range(_r_{py_name(bs.count)}.value)]")

    def reported_buffer(self, s):
        n, bs = py_name(s.p.name), s.p.buffer_size
        self.cargs.append(f"_r_{n}")
        self.rets.append(f"_r_{n}.value.decode(errors='replace')" if s.p.type.kind == "string"
                         else f"_r_{n}.raw[:_r_{py_name(bs.length)}.value]")

    def out(self, s):
        p, n = s.p, py_name(s.p.name)
        self.pre.append(f"_r_{n} = {_h_out_ctor(p)}")
        self.cargs.append(f"_byref(_r_{n})")
        if s.how == "counter":
            return
        v = _h_out_value(p, f"_r_{n}")
        if p.type.kind == "string" and p.ownership == "new":
            self.post.append(f"_s_{n} = {v}")
            self.post.append(f"_lib.ctorch_string_free(_r_{n})")
            v = f"_s_{n}"
        self.rets.append(v)

    def buffer_length(self, s, b):
        self.cargs.append(f"_n_{py_name(b.p.name)}" if b.how == "query_buffer" else f"_cap_{py_name(b.p.name)}")

    def array_length(self, s):
        self.cargs.append(f"_n_{py_name(s.p.length_of[0])}")

    def shared_length(self, s):
        # One length for several arrays (some may be None): that of the
        # given ones, which must agree, else ValueError before C is called.
        items = ", ".join(f"({q!r}, {py_name(q)} is not None, _n_{py_name(q)})"
                          for q in self.f.shared_length_arrays(s.p))
        self.cargs.append(f"_rt.shared_length({self.f.name!r}, [{items}])")

    def element_lengths(self, s):  # taken from the arrays' lengths (_int_arrays)
        self.cargs.append(f"_l_{py_name(s.p.element_lengths_of)}")

    def argument(self, s):  # "int_arrays", "array", "in"
        p, n = s.p, py_name(s.p.name)
        t = p.type
        k = t.kind
        cargs = self.cargs
        opt = p.nullable
        if p.array and p.array.element_length:  # a list of int lists (shapes)
            self.pre.append(f"_a_{n}, _l_{n}, _n_{n} = _int_arrays({n})")
            cargs.append(f"_a_{n}")
        elif p.array:
            if k == "handle":
                conv = f"_tensor_array({n}, {bool(p.elements_nullable)})"
            elif k == "int":
                conv = f"_int_array({n})"
            elif k == "float":
                conv = f"_float_array({n})"
            elif k == "string":
                conv = f"_str_array({n})"
            elif k == "void":
                conv = f"_bytes_arg({n})"
            else:
                raise ValueError(f"{self.f.name}: array of {k}")
            self.pre.append(f"_a_{n}, _n_{n} = (None, 0) if {n} is None else {conv}" if opt
                            else f"_a_{n}, _n_{n} = {conv}")
            cargs.append(f"_a_{n}")
        elif k == "handle":
            cargs.append(f"_ho({n})" if opt else f"_h({n})")
            if p.ownership == "freed":
                self.post.insert(0, f"{n}._h = None")
        elif k == "string":
            cargs.append(f"_str_o({n})" if opt else f"_str_in({n})")
        elif k == "struct":
            if p.pointer:
                cargs.append(f"(None if {n} is None else _byref(_struct_in({t.name!r}, {n})))")
            else:
                cargs.append(f"_struct_in({t.name!r}, {n})")
        elif k == "float" and p.pointer:
            cargs.append(f"_float_o({n})")
        elif p.boolean:
            cargs.append(f"(1 if {n} else 0)")
        elif p.negative:  # an enum's value held in an int, None = a negative value
            cargs.append(f"(-1 if {n} is None else int({n}))")
            self.raw = True
        else:
            cargs.append(n)
            self.raw = True  # converted by its argtype (_ints): may raise ctypes.ArgumentError


def header_function(e: Planned, funcs: dict) -> Tuple[str, str]:
    """(python name, source) of one header function's typed wrapper."""
    f = e.f
    name = e.short
    sig = [py_name(p.name) for p in e.ins]
    w = _Wrapper(f, funcs).walk()
    cp, pre, post, cargs, rets = w.plan, w.pre, w.post, w.cargs, w.rets
    raw = w.raw
    call = f"_lib.{f.name}({', '.join(cargs)})"
    lines = [f"def {name}({', '.join(sig)}):", f"    {f.doc!r}"]
    lines += ["    " + s for s in pre]
    if cp.reported:
        p = cp.reported.p
        bs = p.buffer_size
        n = py_name(p.name)
        ln = py_name(bs.length)
        # Size reported by the function itself: ask with capacity 0, then again
        # with the reported length (+ plus), until it fits.
        lines += [f"    _cap_{n}, _r_{n} = 0, None", "    while True:", f"        _st = {call}",
                  "        if _st:", "            _raise(_st)",
                  f"        if _r_{n} is not None and _r_{ln}.value + {bs.plus} <= _cap_{n}:", "            break",
                  f"        _cap_{n} = _r_{ln}.value + {bs.plus}",
                  f"        _r_{n} = _c.create_string_buffer(max(_cap_{n}, 1))"]
    elif f.returns.kind == "value":
        # The documented value-returning functions (text, ids, names).
        rt = f.returns.type
        lines.append(f"    return {'_text(' + call + ')' if rt.kind == 'string' else call}")
        return name, "\n".join(_unwrapping(lines) if raw else lines) + "\n"
    else:
        lines.append(f"    _st = {call}")
        if cp.freed_always:
            lines += ["    " + s for s in post if s.endswith("._h = None")]
            post = [s for s in post if not s.endswith("._h = None")]
        lines += ["    if _st:", "        _raise(_st)"]
    lines += ["    " + s for s in post]
    if rets:
        lines.append(f"    return {rets[0] if len(rets) == 1 else '(' + ', '.join(rets) + ')'}")
    return name, "\n".join(_unwrapping(lines) if raw else lines) + "\n"


def _unwrapping(lines: List[str]) -> List[str]:
    """The body (after the def and its docstring) inside a try that raises
    the error an argument's converter raised (_ints: OverflowError,
    TypeError) instead of ctypes.ArgumentError, which wraps it in a text:
    one exception type for one error. The try costs nothing unless raised."""
    return (lines[:2] + ["    try:"] + ["    " + s for s in lines[2:]]
            + ["    except _c.ArgumentError as _e:", "        raise _ints.unwrap(_e) from None"])


_LISTS: Dict[str, dict] = {}


def emit_api(doc: Api) -> str:
    funcs = {f.name: f for f in doc.functions}
    entries = plan(doc)
    out = ['"""GENERATED by bindings-gen (emit_py.py) from api.json; do not edit.',
           "Every hand-written C function of api.json (origin: header) as a typed Python",
           "function: outputs returned (a tuple when several), errors raised, new handles",
           "owned by objects that free them, caller buffers sized by buffer_size, array",
           "lengths taken from the lists. Handle types other than ctorch_tensor get a class",
           '(Optimizer, DataLoader, ...) whose methods are the functions named after it."""',
           "import ctypes as _c", "", "from . import _capi, _ints, _rt",
           "from ._rt import (lib as _lib, wrap as _wrap, raise_status as _raise, "
           "byref as _byref, tensor_array as _tensor_array, int_array as _int_array, float_array as _float_array, int_arrays as _int_arrays, "
           "str_array as _str_array, "
           "float_o as _float_o, h as _h, ho as _ho, str_in as _str_in, str_in_o as _str_o, bytes_arg as _bytes_arg, "
           "text as _text, query as _query, struct_in as _struct_in, struct_out as _struct_out, "
           "enum_out as _enum_out, Handle as _Handle, adopt as _adopt)", ""]
    skipped = {}
    _LISTS.clear()
    _LISTS.update(list_handles(doc))
    for lh, el in _LISTS.items():
        # A list handle becomes a Python list at once (handles[].elements);
        # elements come back as objects of their type, None where NULL.
        wrap = "_wrap" if el.handle == "ctorch_tensor" else f"lambda h: _adopt({class_name(el.handle)}, h)"
        out += [f"def {reader_name(lh)}(h):",
                f"    'The elements of a new {lh} h, as a list; h is freed (api.json handles[].elements).'",
                "    try:", f"        n = _query(_lib.{el.size}, _c.c_size_t(), h)", "        items = []",
                "        for i in range(n):", "            e = _c.c_void_p()",
                f"            st = _lib.{el.get}(_byref(e), h, i)", "            if st:", "                _raise(st)",
                f"            items.append(({wrap})(e.value))", "        return items", "    finally:",
                f"        _lib.{next(x.free for x in doc.handles if x.name == lh)}(h)", "", ""]
    for h in class_handles(doc):
        cn = class_name(h.name)
        out.append(f"class {cn}(_Handle):")
        out.append(f"    {h.doc!r}")
        out.append(f"    _free = {'staticmethod(_lib.' + h.free + ')' if h.free else 'None'}")
        out.append("")
        out.append("")
    names = []
    methods = []
    for e in entries:
        if e.f.inline:
            continue
        if e.skip:
            skipped[e.name] = e.skip
            continue
        n, src = header_function(e, funcs)
        out.append(src)
        names.append(n)
        if e.receiver and e.owner != "ctorch_tensor":
            methods.append((class_name(e.owner), e.method, n))
    for cn, m, n in methods:
        out.append(f"{cn}.{m} = {n}")
    out.append("")
    out.append("FUNCTIONS = " + repr(names))
    out.append("# Not wrapped here, and why (the hand-written runtime covers them where needed).")
    skipped.update(doc.c_only_functions)  # left out before any emitter (generate_bindings.py)
    out.append("NOT_WRAPPED = {" + ", ".join(f"{k!r}: {v!r}" for k, v in skipped.items()) + "}")
    out.append("TENSOR_METHODS = {" + ", ".join(f"{e.method!r}: {e.short}" for e in entries
                                               if e.receiver and e.owner == "ctorch_tensor" and not e.skip)
               + "}")
    out.append("")
    return "\n".join(out)
