#!/usr/bin/env python3
"""binding_go_doc: `go doc -all` of the generated Go module
(packages ctorch and nn) shows, for every exported function or method that
wraps a C function (its comment says "Name calls ctorch_x: ..."), the header's
text for that function (api.json's doc; a generated operator's: its schema;
`X_async`: its twin's, as the header documents the pair), in full.

The source's wrappers are found in the module's .go files; each must appear in
go doc's output as its name, "calls", the C name and every word of the text in
order (words: letters and digits, so go doc's re-wrapping does not matter).
Also fails when no wrapper is found, and reports how many header functions
have an exported Go wrapper.
Usage: go_doc_check.py API_JSON GO_MODULE_DIR SOURCE_DIR   (GO: the go command, default go)
"""
import json
import os
import re
import subprocess
import sys


def words(text):
    return re.findall(r"[A-Za-z0-9]+", text)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    api, mod, src = sys.argv[1:]
    sys.path.insert(0, os.path.join(src, "bindings-gen"))
    from ctorch_gen.apimodel import load_api
    from ctorch_gen.hplan import func_doc  # the pair rule for X_async, shared with the emitters
    doc = json.load(open(api, encoding="utf-8"))
    model = load_api(doc, bindings=False).functions_by_name
    funcs = {f["name"]: f for f in doc["functions"]}
    go = os.environ.get("GO", "go")
    shown = ""
    for pkg in (".", "./nn"):
        p = subprocess.run([go, "doc", "-all", pkg], cwd=mod, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if p.returncode != 0:
            print(p.stdout)
            sys.exit(f"FAIL: go doc -all {pkg} exited with {p.returncode}")
        shown += p.stdout + "\n"
    shown = " " + " ".join(words(shown)) + " "
    wrappers = []  # (Go name, C name), exported, from the module's sources
    for root, dirs, files in os.walk(mod):
        dirs[:] = [d for d in dirs if d not in ("internal", "cmd", "testdata")]
        for fn in files:
            if fn.endswith(".go") and not fn.endswith("_test.go"):
                text = open(os.path.join(root, fn), encoding="utf-8").read()
                wrappers += re.findall(r"^// ([A-Z]\w*) calls (ctorch_\w+):", text, re.M)
    if not wrappers:
        sys.exit(f"FAIL: no exported wrapper (// Name calls ctorch_x: ...) under {mod}")
    fails, header, ops = [], set(), 0
    for name, c in wrappers:
        f = funcs.get(c)
        if f is None:
            fails.append(f"{name}: names {c}, which api.json does not have")
            continue
        text = f["op"]["schema"] if f["origin"] == "generated" else func_doc(model, model[f["name"]])
        if f["origin"] == "generated":
            ops += 1
        else:
            header.add(c)
        if " " + " ".join(words(f"{name} calls {c}: {text}")) + " " not in shown:
            fails.append(f"{name} ({c}): go doc does not show the header's text {text[:80]!r}")
    nh = sum(1 for f in doc["functions"] if f["origin"] == "header")
    print(f"{len(wrappers)} exported wrappers: {ops} of operators, {len(header)} of the header's {nh} functions")
    if fails:
        print("\n".join(fails[:60]))
        sys.exit(f"FAIL: {len(fails)} wrapper(s) without the header's text in go doc")
    print("PASS: go doc shows every wrapper with the header's text")


if __name__ == "__main__":
    main()
