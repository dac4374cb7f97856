#!/usr/bin/env python3
"""api.json agrees with the library and is complete enough to generate a
binding from: every exported ctorch_* symbol is described and nothing else,
the ABI hash is the one the library reports, every parameter has a
direction and an ownership, every new handle a free function that exists,
every schema default a typed value, every struct field an offset equal to
the C ABI's (recomputed here from sizes and alignments)."""
import argparse
import ctypes
import json
import os
import subprocess
import sys


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    # A name as nm prints it may carry its version node (ctorch_foo@@CTORCH_0: shim/ctorch.map).
    return {ln.split()[-1].split("@")[0] for ln in out.splitlines() if " T " in ln and ln.split()[-1].startswith("ctorch_")}


def symbol_versions(lib):
    """{ctorch_* name: its version node} of the defined functions, as nm -D
    prints them (ctorch_foo@@CTORCH_0; no node: None)."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    got = {}
    for ln in out.splitlines():
        if " T " in ln and ln.split()[-1].startswith("ctorch_"):
            name, _, node = ln.split()[-1].partition("@")
            got[name] = node.lstrip("@") or None
    return got


def check_symbol_version(where, described, lib):
    """Every exported function carries the node api.json's library names."""
    want = described.get("symbol_version")
    if not want:
        return [f"{where}.symbol_version missing"]
    bad = sorted(n for n, v in symbol_versions(lib).items() if v != want)
    return [f"{where}.symbol_version {want!r}: {len(bad)} symbols carry another, e.g. {bad[:3]}"] if bad else []


def elf_soname(lib):
    out = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True).stdout
    for ln in out.splitlines():
        if "(SONAME)" in ln and "[" in ln:
            return ln.split("[", 1)[1].split("]", 1)[0]
    return None


def check_load(doc, lib):
    """The library loads by the names api.json gives, as a binding opens it:
    the SONAME is the built library's, a file of that name sits beside it,
    and ctypes finds it by name alone through the loader's search path (in a
    fresh process, whose LD_LIBRARY_PATH is the build directory)."""
    problems = []
    libd = doc["library"]
    real = os.path.realpath(lib)
    d = os.path.dirname(real)
    so = elf_soname(real)
    if so != libd["soname"]:
        problems.append(f"library.soname: api.json says {libd['soname']!r}, the ELF SONAME is {so!r}")
    if os.path.basename(real) != libd["file"]:
        problems.append(f"library.file: api.json says {libd['file']!r}, the built file is {os.path.basename(real)!r}")
    if libd["soname"] not in libd["load_names"]:
        problems.append("library.load_names does not list the SONAME")
    for name in libd["load_names"]:
        path = os.path.join(d, name)
        if not os.path.exists(path):
            problems.append(f"library.load_names: no {name} beside {real}")
            continue
        if os.path.realpath(path) != real:
            problems.append(f"library.load_names: {path} is not the built library")
        code = ("import ctypes, sys; l = ctypes.CDLL(sys.argv[1]); o = ctypes.c_char_p(); "
                "l.ctorch_abi_hash.argtypes = [ctypes.POINTER(ctypes.c_char_p)]; "
                "assert l.ctorch_abi_hash(ctypes.byref(o)) == 0; print(o.value.decode())")
        env = dict(os.environ, LD_LIBRARY_PATH=d + (":" + os.environ["LD_LIBRARY_PATH"]
                                                  if os.environ.get("LD_LIBRARY_PATH") else ""))
        for how, arg in (("by path", path), ("by name through the search path", name)):
            r = subprocess.run([sys.executable, "-c", code, arg], capture_output=True, text=True, env=env)
            if r.returncode != 0:
                problems.append(f"ctypes.CDLL({arg!r}) ({how}) failed: {r.stderr.strip()[-300:]}")
            elif r.stdout.strip() != doc["abi_hash"]:
                problems.append(f"{arg} ({how}) is another build: abi {r.stdout.strip()!r}")
            else:
                print(f"loaded {arg} {how}: abi {doc['abi_hash']}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--load-only", action="store_true", help="only check that the library loads by its described names")
    ap.add_argument("--bridge-lib", default=None,
                    help="libctorch_python: its exports must be api.json's python_bridge functions")
    a = ap.parse_args()
    with open(a.api, encoding="utf-8") as f:
        doc = json.load(f)
    if a.load_only:
        problems = check_load(doc, a.lib)
        for p in problems:
            print("  " + p)
        return 1 if problems else 0
    problems = []
    funcs = {f["name"]: f for f in doc["functions"]}
    syms = exported(a.lib)
    described = {n for n, f in funcs.items() if not f["inline"]}
    for n in sorted(syms - described):
        problems.append(f"exported but not described: {n}")
    for n in sorted(described - syms):
        problems.append(f"described but not exported: {n}")
    problems += check_symbol_version("library", doc["library"], a.lib)
    if a.bridge_lib:
        problems += check_symbol_version("python_bridge.library", doc["python_bridge"]["library"], a.bridge_lib)
        bridge = {f["name"] for f in doc.get("python_bridge", {}).get("functions", [])}
        bsyms = exported(a.bridge_lib)
        for n in sorted(bsyms - bridge):
            problems.append(f"exported by {a.bridge_lib} but not in python_bridge: {n}")
        for n in sorted(bridge - bsyms):
            problems.append(f"in python_bridge but not exported by {a.bridge_lib}: {n}")
        for f in doc["python_bridge"]["functions"]:
            for p in f["params"]:
                if "ownership" not in p or p.get("direction") not in ("in", "out"):
                    problems.append(f"python_bridge {f['name']}({p['name']}): no ownership or direction")

    lib = ctypes.CDLL(a.lib)
    out = ctypes.c_char_p()
    lib.ctorch_abi_hash.argtypes = [ctypes.POINTER(ctypes.c_char_p)]
    if lib.ctorch_abi_hash(ctypes.byref(out)) != 0 or out.value.decode() != doc["abi_hash"]:
        problems.append(f"abi_hash: library says {out.value!r}, api.json {doc['abi_hash']!r}")
    ver = ctypes.c_char_p()
    lib.ctorch_version.argtypes = [ctypes.POINTER(ctypes.c_char_p)]
    lib.ctorch_version(ctypes.byref(ver))
    if ver.value.decode() != doc["ctorch_version"]:
        problems.append(f"ctorch_version: library {ver.value!r}, api.json {doc['ctorch_version']!r}")

    handles = {h["name"]: h for h in doc["handles"]}
    for f in doc["functions"]:
        names = {p["name"] for p in f["params"]}
        for p in f["params"]:
            where = f"{f['name']}({p['name']})"
            if p.get("direction") not in ("in", "out"):
                problems.append(f"{where}: no direction")
            if "ownership" not in p:
                problems.append(f"{where}: no ownership")
            if p.get("ownership") == "new" and p["type"]["kind"] == "handle":
                free = p.get("free")
                if free not in funcs and free != "ctorch_autograd_scope_leave":
                    problems.append(f"{where}: new handle freed by unknown {free!r}")
            if p.get("lifetime") == "see doc":
                problems.append(f"{where}: lifetime 'see doc'")
            if p["direction"] == "out" and p["type"]["kind"] == "handle" and "null_result" not in p \
                    and p.get("ownership") == "new":
                problems.append(f"{where}: handle output without null_result")
            if p.get("ownership") == "caller_buffer":
                bs = p.get("buffer_size")
                if not bs:
                    problems.append(f"{where}: caller buffer without buffer_size")
                elif bs["rule"] == "reported" and bs["length"] not in names:
                    problems.append(f"{where}: buffer_size length {bs['length']!r} is no parameter")
                elif bs["rule"] == "query":
                    def calls(c):
                        yield c
                        for v in c["args"].values():
                            if isinstance(v, dict):
                                yield from calls(v)
                    for term in bs["product"]:
                        for c in calls(term):
                            if c["call"] not in funcs:
                                problems.append(f"{where}: buffer_size calls unknown {c['call']}")
                            for k, v in c["args"].items():
                                if k not in {q["name"] for q in funcs[c["call"]]["params"]} or \
                                        (isinstance(v, str) and v not in names):
                                    problems.append(f"{where}: buffer_size argument {k}={v!r} does not fit")
            if "array" in p and p["array"]["length"] not in names:
                problems.append(f"{where}: array length {p['array']['length']!r} is no parameter")
        if f["origin"] == "generated":
            for arg in f["op"]["args"]:
                if "default" in arg and arg["default"].get("kind") not in (
                        "none", "bool", "int", "float", "str", "list", "scalar", "enum"):
                    problems.append(f"{f['name']}: untyped default for {arg['name']}")
                for cp in arg["c_params"]:
                    if cp not in names:
                        problems.append(f"{f['name']}: schema arg {arg['name']} -> unknown C param {cp}")
    for h in doc["handles"]:
        if h["free"] and h["free"] not in funcs:
            problems.append(f"handle {h['name']}: free function {h['free']} not described")
        # A container's accessors exist and have the signatures handles[].elements promises.
        el = h.get("elements")
        if el:
            want = {"size": [("out", "size_t"), ("in", h["name"])],
                    "get": [("out", el["handle"]), ("in", h["name"]), ("in", "size_t")],
                    "key": [("out", "char"), ("in", h["name"]), ("in", "size_t")]}
            for role, fn in el.items():
                if role == "handle":
                    continue
                got = [(p["direction"], p["type"].get("name")) for p in funcs[fn]["params"]] if fn in funcs else None
                if got != want[role]:
                    problems.append(f"handle {h['name']}: elements.{role} {fn} is {got}, expected {want[role]}")
    if {h["name"] for h in doc["handles"] if "elements" in h} != {"ctorch_tensor_list", "ctorch_tensor_dict"}:
        problems.append("handles[].elements: expected on ctorch_tensor_list and ctorch_tensor_dict")

    # Struct layouts: the offsets measured by the compiler match the C ABI's
    # natural alignment rule applied to the fields' sizes.
    for s in doc["structs"]:
        off = 0
        align = 1
        for fld in s["fields"]:
            elem = fld["size"] // fld["array_length"] if fld.get("array_length") else fld["size"]
            al = doc["types"].get(fld["c_type"], {"align": elem})["align"]
            off = (off + al - 1) // al * al
            if fld["offset"] != off:
                problems.append(f"struct {s['name']}.{fld['name']}: offset {fld['offset']}, ABI rule says {off}")
            off += fld["size"]
            align = max(align, al)
        size = (off + align - 1) // align * align
        if size != s["size"]:
            problems.append(f"struct {s['name']}: size {s['size']}, ABI rule says {size}")

    c = doc["counts"]
    print(f"api.json: {c['functions']} functions ({c['header_symbols']} hand-written symbols, "
          f"{c['generated_functions']} generated: {c['public_ops']} public, {c['internal_ops']} internal), "
          f"{c['enums']} enums, {c['structs']} structs, {c['handles']} handles, {c['callbacks']} callbacks, "
          f"{c['typed_defaults']} typed defaults, {c['enum_int_args']} enum ints, {c['views']} views, "
          f"{c['overloaded_names']} overloaded names; abi {doc['abi_hash']}")
    if problems:
        print(f"{len(problems)} problems:")
        for p in problems[:200]:
            print("  " + p)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
