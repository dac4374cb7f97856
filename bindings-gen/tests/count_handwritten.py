#!/usr/bin/env python3
"""Counts what each binding's hand-written runtime still does by hand with
the C API described in api.json (docs/bindings-languages.md, "What each
binding still writes by hand"): the C functions it calls directly through its FFI
(Python lib.ctorch_*, raw_function("ctorch_*") and module aliases of them;
Node F.ctorch_*; Go C.ctorch_*), the call sites, and the runtime functions
those calls sit in.

    count_handwritten.py [--root bindings-gen] [--api build/api.json] [--list]

Generated files (_capi.py, _ops.py, _api.py, capi.js, ops.js, *_gen.go)
are not in bindings-gen/<lang>/, so everything counted here is hand-written.
"""
import argparse
import ast
import json
import os
import re
import sys

NAME = re.compile(r"ctorch_[a-z0-9_]+")


def python_calls(root):
    """{c function: [runtime function, ...]} for the Python package (AST)."""
    out = {}
    d = os.path.join(root, "python", "ctorch")
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(d, fn), encoding="utf-8").read())
        aliases = {}
        for node in tree.body:  # _free_many = lib.ctorch_tensor_free_many, _to_dlpack = raw_function("ctorch_...")
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                m = NAME.search(ast.unparse(node.value))
                if m and ("lib." in ast.unparse(node.value) or "raw_function" in ast.unparse(node.value)):
                    aliases[node.targets[0].id] = m.group(0)

        def visit(node, owner):
            if isinstance(node, (ast.FunctionDef, ast.Lambda, ast.AsyncFunctionDef)):
                owner = f"{fn}:{getattr(node, 'name', 'lambda@' + str(node.lineno))}"
            if owner:
                if isinstance(node, ast.Attribute) and NAME.fullmatch(node.attr) and \
                        ast.unparse(node.value) in ("lib", "_lib", "_rt.lib"):
                    out.setdefault(node.attr, []).append(owner)
                elif isinstance(node, ast.Name) and node.id in aliases:
                    out.setdefault(aliases[node.id], []).append(owner)
                elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                        NAME.fullmatch(node.value) and node.value != "ctorch_scalar":
                    out.setdefault(node.value, []).append(owner)
            for c in ast.iter_child_nodes(node):
                visit(c, owner)
        for node in tree.body:  # statements run at import count too, as "(module)"
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                visit(node, None)
            elif not (isinstance(node, ast.Assign) and len(node.targets) == 1 and
                      isinstance(node.targets[0], ast.Name) and node.targets[0].id in aliases):
                visit(node, f"{fn}:(module)")
    return out


def _blocks(text, starts):
    """(name, body) of the functions in text: a start line (regex with a
    group for the name) and everything up to its matching closing brace."""
    lines = text.split("\n")
    res = []
    for i, line in enumerate(lines):
        m = starts.match(line)
        if not m:
            continue
        depth, body = 0, []
        for j in range(i, len(lines)):
            body.append(lines[j])
            depth += lines[j].count("{") - lines[j].count("}")
            if depth <= 0 and "{" in "".join(body):
                break
        res.append((m.group(1), "\n".join(body)))
    return res


def node_calls(root):
    """Each F.ctorch_ call site of the runtime's .js files (index.js and its modules),
    owned by the nearest function start at or above it (a function, method,
    getter or arrow function: approximate, JS has no parser here), or the
    module's top level."""
    out = {}
    d = os.path.join(root, "node")
    for fn in sorted(os.listdir(d)):
        if fn.endswith(".js"):
            _node_file(os.path.join(d, fn), fn, out)
    return out


def _node_file(path, fn, out):
    lines = open(path, encoding="utf-8").read().split("\n")
    start = re.compile(r"(?:function\s*\*?\s*(\w*)\s*\(|([\w.\[\]]+)\s*[=:]\s*(?:\([^)]*\)|\w+)\s*=>|"
                       r"(?:^|[{,]\s*)(?:get |set |static |\* ?)?(\[?[\w.]+\]?)\s*\([^)]*\)\s*\{)")
    for i, line in enumerate(lines):
        calls = re.findall(r"F\.(ctorch_[a-z0-9_]+)", line)
        if not calls:
            continue
        owner = f"{fn}:(top level)"
        for j in range(i, max(i - 40, -1), -1):
            if lines[j] and not lines[j][0].isspace() and j < i and not start.search(lines[j]):
                break  # reached a top-level statement that is not a function
            m = start.search(lines[j])
            if m and m.group(0).strip() not in ("if (", "for (", "while ("):
                name = next((g for g in m.groups() if g), "anonymous")
                if name in ("if", "for", "while", "catch", "switch"):
                    continue
                owner = f"{fn}:{name}@{j + 1}"
                break
        for c in calls:
            out.setdefault(c, []).append(owner)


def go_calls(root):
    """C.ctorch_ calls of the runtime's packages (ctorch and ctorch/nn; not
    the cmd/ programs), and the C helpers of their cgo preambles that call
    ctorch_ functions (nn's go_nn_custom_new), owned by the preamble."""
    out = {}
    d = os.path.join(root, "go")
    for sub in ("", "nn"):
        for fn in sorted(os.listdir(os.path.join(d, sub))):
            if not fn.endswith(".go"):
                continue
            rel = os.path.join(sub, fn)
            text = open(os.path.join(d, rel), encoding="utf-8").read()
            for name, body in _blocks(text, re.compile(r"^func\s+(?:\([^)]*\)\s*)?(\w+)")):
                for c in set(re.findall(r"C\.(ctorch_[a-z0-9_]+)\(", body)):
                    out.setdefault(c, []).append(f"{rel}:{name}")
            for c in set(re.findall(r"^//.*\breturn (ctorch_[a-z0-9_]+)\(", text, re.M)):
                out.setdefault(c, []).append(f"{rel}:(cgo preamble)")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--api", help="api.json: only names it describes are counted")
    ap.add_argument("--list", action="store_true", help="list each C function and where it is called")
    a = ap.parse_args(argv)
    described = None
    if a.api:
        described = {f["name"] for f in json.load(open(a.api, encoding="utf-8"))["functions"]}
    res = {}
    for lang, fn in (("python", python_calls), ("node", node_calls), ("go", go_calls)):
        calls = fn(a.root)
        if described is not None:
            calls = {k: v for k, v in calls.items() if k in described}
        owners = {o for v in calls.values() for o in v}
        res[lang] = {"c_functions": len(calls), "call_sites": sum(len(v) for v in calls.values()),
                     "runtime_functions": len(owners)}
        where = "" if lang == "node" else f", from {len(owners)} runtime functions"  # JS: no parser here
        print(f"{lang}: {len(calls)} C functions called by hand ({res[lang]['call_sites']} call sites){where}")
        if a.list:
            for k in sorted(calls):
                print(f"  {k}: {', '.join(sorted(set(calls[k])))}")
    return res


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
