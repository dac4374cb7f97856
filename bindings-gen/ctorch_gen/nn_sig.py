"""The module catalogue (api.json's "nn_modules"): read out of the
CTORCH_NN_KIND("Name", "init signature", "forward signature", make) calls in
shim/nn/*.cpp, and each signature parsed the way shim/nn/args.cpp parses the
same text at runtime (ctorch_nn_catalogue returns the same entries; the test
tests/python/nn_core_vs_torch.py compares the two).

Signature text, written as Python would:
  init:    "in_features: int, out_features: int, bias: bool = True, dtype: ScalarType? = None"
  forward: "query: Tensor, key_padding_mask: Tensor? = None; need_weights: bool = True
            -> attn_output: Tensor, attn_output_weights: Tensor?"
Types: int, float, bool, str, int[N], int[], float[N], float[], Device,
ScalarType, Tensor, unions A|B; a trailing ? allows None. In a forward,
parameters after ';' are keyword-only; outputs follow '->'.
"""
from __future__ import annotations

import glob
import os
import re
from typing import Dict, List, Tuple

MACRO = "CTORCH_NN_KIND"


def _strip_comments(src: str) -> str:
    """C++ source without comments (string and char literals kept intact)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _read_literals(src: str, i: int) -> Tuple[str, int]:
    """Adjacent string literals from src[i:] concatenated (C's rule), and
    the index after them."""
    text = []
    n = len(src)
    while True:
        while i < n and src[i].isspace():
            i += 1
        if i >= n or src[i] != '"':
            break
        j = i + 1
        buf = []
        while src[j] != '"':
            if src[j] == "\\":
                buf.append({"n": "\n", "t": "\t", "\\": "\\", '"': '"'}.get(src[j + 1], src[j + 1]))
                j += 2
            else:
                buf.append(src[j])
                j += 1
        text.append("".join(buf))
        i = j + 1
    if not text:
        raise ValueError(f"{MACRO}: expected a string literal at offset {i}")
    return "".join(text), i


def extract_kinds(src: str, where: str = "") -> List[Tuple[str, str, str]]:
    """(name, init, forward) of every CTORCH_NN_KIND call in one source."""
    s = _strip_comments(src)
    kinds = []
    i = 0
    while True:
        i = s.find(MACRO + "(", i)
        if i < 0:
            return kinds
        # The macro's own #define (module.h) has identifiers, not literals.
        j = i + len(MACRO) + 1
        k = j
        while k < len(s) and s[k].isspace():
            k += 1
        if k >= len(s) or s[k] != '"':
            i = j
            continue
        fields = []
        for _ in range(3):
            text, k = _read_literals(s, k)
            fields.append(text)
            while s[k].isspace():
                k += 1
            if s[k] != ",":
                raise ValueError(f"{where}: {MACRO}({fields[0]!r}, ...) needs its three signatures as string literals")
            k += 1
        kinds.append(tuple(fields))
        i = k


def _split_top(s: str, sep: str) -> List[str]:
    """s split at sep outside brackets and quotes, each part stripped."""
    out, cur, depth, quote = [], [], 0, None
    for c in s:
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(c)
    if "".join(cur).strip() or out:
        out.append("".join(cur).strip())
    return out


def _param(text: str, kw_only: bool) -> dict:
    head, default = text, None
    depth = 0
    for k, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "=" and depth == 0:
            head, default = text[:k].strip(), text[k + 1:].strip()
            break
    name, _, typ = head.partition(":")
    typ = typ.strip()
    optional = typ.endswith("?")
    if optional:
        typ = typ[:-1]
    return {"name": name.strip(), "type": typ, "optional": optional, "default": default, "kw_only": kw_only}


def parse_sig(text: str) -> Dict[str, List[dict]]:
    """{"params": [...], "outputs": [...]}; a param is {name, type,
    optional, default (text or None), kw_only}."""
    inputs, arrow, outs = text.partition("->")
    outputs = []
    if arrow:
        for o in _split_top(outs.strip(), ","):
            outputs.append(_param(o if ":" in o else "output: " + o, False))
    pos, semi, kw = inputs.partition(";")
    params = [_param(a, False) for a in _split_top(pos.strip(), ",") if a]
    if semi:
        params += [_param(a, True) for a in _split_top(kw.strip(), ",") if a]
    return {"params": params, "outputs": outputs}


def _arg(p: dict, output: bool) -> dict:
    d = {"name": p["name"], "type": p["type"], "optional": p["optional"]}
    if not output:
        d["required"] = p["default"] is None
        if p["default"] is not None:
            d["default"] = p["default"]
    return d


def describe(name: str, init: str, forward: str) -> dict:
    """One catalogue entry, as ctorch_nn_catalogue writes it."""
    i = parse_sig(init)
    f = parse_sig(forward)
    return {
        "kind": name,
        "init": [_arg(p, False) for p in i["params"]],
        "forward": {
            "inputs": [_arg(p, False) for p in f["params"] if not p["kw_only"]],
            "kwargs": [_arg(p, False) for p in f["params"] if p["kw_only"]],
            "outputs": [_arg(p, True) for p in f["outputs"]],
        },
    }


def _macro_calls(src: str) -> Dict[str, str]:
    """Kind name -> the whole text of its CTORCH_NN_KIND(...) call (the make
    expression included), comments stripped."""
    s = _strip_comments(src)
    out, i = {}, 0
    while True:
        i = s.find(MACRO + "(", i)
        if i < 0:
            return out
        j = i + len(MACRO) + 1
        depth, k, quote = 1, j, None
        while k < len(s) and depth:
            c = s[k]
            if quote:
                if c == "\\":
                    k += 1
                elif c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            k += 1
        text = s[j:k - 1]
        m = re.match(r'\s*"(\w+)"', text)
        if m:
            out[m.group(1)] = text
        i = k


def conventions(nn_dir: str, entries: List[dict]) -> dict:
    """What the catalogue's entries leave to convention (api.json's
    "nn_conventions"), read from the same sources where the sources say it:
    - module_args: each Module-typed constructor argument and the kind it
      must be (the make expression's layer_arg(a, "arg", "Kind"); null: any
      kind, e.g. TransformerEncoder's norm);
    - values: how a value of each catalogue type is written in the
      constructor text ctorch_nn_new takes (the dtype names from args.cpp's
      table, which is what it accepts);
    - containers: the kinds filled after construction, and by which call;
    - outputs: when an optional (`?`) output is NULL and when it is absent
      (not returned at all: a bool constructor argument return_indices
      decides the count of outputs, as in torch.nn)."""
    calls = {}
    for path in sorted(glob.glob(os.path.join(nn_dir, "*.cpp"))):
        with open(path, encoding="utf-8") as f:
            calls.update(_macro_calls(f.read()))
    module_args = []
    for e in entries:
        for a in e["init"]:
            if a["type"] != "Module":
                continue
            m = re.search(r'layer_arg\(\s*a\s*,\s*"' + re.escape(a["name"]) + r'"\s*,\s*"(\w+)"', calls.get(e["kind"], ""))
            module_args.append({"kind": e["kind"], "arg": a["name"], "module_kind": m.group(1) if m else None})
    with open(os.path.join(nn_dir, "args.cpp"), encoding="utf-8") as f:
        args_src = f.read()
    table = args_src[args_src.index("kDtypeNames[]"):]
    dtypes = re.findall(r'\{"(\w+)",\s*c10::k\w+\}', table[:table.index("};")])
    absent = []
    for e in entries:
        flags = {a["name"] for a in e["init"] if a["type"] == "bool"}
        for o in e["forward"]["outputs"]:
            if o["optional"] and o["name"] == "indices" and "return_indices" in flags:
                absent.append({"kind": e["kind"], "output": o["name"], "present_if": "return_indices"})
    kinds = {e["kind"] for e in entries}
    containers = [c for c in (
        {"kind": "Sequential", "add": "ctorch_nn_module_append", "names": "0, 1, ... in order"},
        {"kind": "ModuleList", "add": "ctorch_nn_module_append", "names": "0, 1, ... in order"},
        {"kind": "ModuleDict", "add": "ctorch_nn_module_register_module", "names": "the name given"},
    ) if c["kind"] in kinds]
    return {
        "values": {
            "int": "3, -1", "float": "0.5, 1e-05, inf, nan, float('inf')", "bool": "True, False",
            "str": "'zeros' (quoted, as in Python)",
            "int[N]": "one int for N copies (3), or a tuple or list of N: (3, 3), [3, 3]",
            "int[]": "a tuple or list: (1, 2), [1, 2]", "float[]": "a tuple or list: (0.5, 0.5)",
            "ScalarType": {"text": "torch.NAME or 'NAME'", "names": dtypes},
            "Device": "'cpu', 'cuda:0' or torch.device('cuda:0')",
            "Module": "passed by handle and name through ctorch_nn_new_with_modules (module_args says which kind)",
            "A|B": "a value of either type", "?": "None (the argument's type allows None)",
        },
        "module_args": module_args,
        "containers": containers,
        "outputs": {
            "optional": "an output whose type ends in ? is NULL where Python returns None "
                        "(MultiheadAttention's weights with need_weights=False), unless listed in absent",
            "absent": absent,
        },
    }


def catalogue(nn_dir: str) -> List[dict]:
    """Every kind declared in nn_dir/*.cpp, sorted by name."""
    entries = {}
    for path in sorted(glob.glob(os.path.join(nn_dir, "*.cpp"))):
        with open(path, encoding="utf-8") as f:
            src = f.read()
        for name, init, forward in extract_kinds(src, path):
            if name in entries:
                raise ValueError(f"{path}: module kind {name!r} declared twice")
            entries[name] = describe(name, init, forward)
    return [entries[k] for k in sorted(entries)]
