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
import subprocess
import sys


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    return {ln.split()[-1] for ln in out.splitlines() if " T " in ln and ln.split()[-1].startswith("ctorch_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True)
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    with open(a.api, encoding="utf-8") as f:
        doc = json.load(f)
    problems = []
    funcs = {f["name"]: f for f in doc["functions"]}
    syms = exported(a.lib)
    described = {n for n, f in funcs.items() if not f["inline"]}
    for n in sorted(syms - described):
        problems.append(f"exported but not described: {n}")
    for n in sorted(described - syms):
        problems.append(f"described but not exported: {n}")

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

    # Struct layouts: the offsets measured by the compiler match the C ABI's
    # natural alignment rule applied to the fields' sizes.
    for s in doc["structs"]:
        off = 0
        align = 1
        for fld in s["fields"]:
            al = doc["types"].get(fld["c_type"], {"align": fld["size"]})["align"]
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
