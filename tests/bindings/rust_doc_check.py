#!/usr/bin/env python3
"""binding_rust_doc: `cargo doc` of the generated crates
shows every item with the C header's text for it. Reads the HTML that
`cargo doc -p ctorch -p ctorch-sys --no-deps` wrote (run_rust.sh doc) and
checks, from api.json:

- every header function: ctorch_sys's page of it, and, when the safe crate
  wraps it, the `ctorch::capi` page marked "(C: `name`.)", carry its doc text;
- every generated operator: its `ctorch::ops` page carries its schema;
- every enum: its ctorch_sys type alias and the `ctorch` newtype carry the
  enum's text, and each value's constant page its value's text;
- every handle, struct and callback: its ctorch_sys page carries its text.

The text is compared as the sequence of its words (letters and digits), so
Markdown's rendering (code spans, escapes) does not matter but every word of
the header's sentence must be there, in order. Functions the header documents
together with their synchronous twin (`X_async`) carry the twin's text (the
emitter's func_doc).
Usage: rust_doc_check.py API_JSON DOC_DIR SOURCE_DIR
"""
import html
import json
import os
import re
import sys


def words(text):
    return re.findall(r"[A-Za-z0-9]+", text)


def page_words(path, cache={}):
    if path not in cache:
        if not os.path.exists(path):
            cache[path] = None
        else:
            s = open(path, encoding="utf-8").read()
            s = re.sub(r"<script.*?</script>|<style.*?</style>", " ", s, flags=re.S)
            cache[path] = " " + " ".join(words(html.unescape(re.sub(r"<[^>]+>", " ", s)))) + " "
    return cache[path]


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    api, docdir, src = sys.argv[1:]
    sys.path.insert(0, os.path.join(src, "bindings-gen"))
    from ctorch_gen.apimodel import load_api
    from ctorch_gen.hplan import func_doc
    from ctorch_gen.rust.names import enum_type, ident  # the names and texts the emitter gives
    doc = json.load(open(api, encoding="utf-8"))
    model = load_api(doc, bindings=False).functions_by_name
    fails, counts = [], {}

    def check(kind, name, text, path):
        counts[kind] = counts.get(kind, 0) + 1
        pw = page_words(path)
        if pw is None:
            fails.append(f"{kind} {name}: no page {os.path.relpath(path, docdir)}")
        elif text and " " + " ".join(words(text)) + " " not in pw:
            fails.append(f"{kind} {name}: {os.path.relpath(path, docdir)} lacks the header's text {text[:80]!r}")

    sysd, safe = os.path.join(docdir, "ctorch_sys"), os.path.join(docdir, "ctorch")
    # The capi pages by the C function each one names.
    capi = {}
    for fn in os.listdir(os.path.join(safe, "capi")):
        if fn.startswith("fn."):
            for c in re.findall(r"C: <code>(ctorch_\w+)</code>", open(os.path.join(safe, "capi", fn)).read()):
                capi[c] = os.path.join(safe, "capi", fn)
    wrapped = 0
    for f in doc["functions"]:
        if f.get("c_only"):  # variadic: not declared in Rust (api.json says what a binding does instead)
            counts["C-only function (not in Rust)"] = counts.get("C-only function (not in Rust)", 0) + 1
        elif f["origin"] == "header":
            text = func_doc(model, model[f["name"]])
            check("header function (ctorch-sys)", f["name"], text, os.path.join(sysd, f"fn.{f['name']}.html"))
            if f["name"] in capi:
                wrapped += 1
                check("header function (capi)", f["name"], text, capi[f["name"]])
        else:
            check("operator (ops)", f["name"], f["doc"],
                  os.path.join(safe, "ops", f"fn.{ident(f['name'][len('ctorch_'):]).replace('r#', '')}.html"))
    for e in doc["enums"]:
        check("enum (ctorch-sys)", e["name"], e["doc"], os.path.join(sysd, f"type.{e['name']}.html"))
        for v in e["values"]:
            check("enum value (ctorch-sys)", v["name"], v.get("doc", ""), os.path.join(sysd, f"constant.{v['name']}.html"))
        st = os.path.join(safe, f"struct.{enum_type(e['name'])}.html")
        if os.path.exists(st):
            check("enum (ctorch)", e["name"], e["doc"], st)
            for v in e["values"]:
                check("enum value (ctorch)", v["name"], v.get("doc", ""), st)
    for kind in ("handles", "structs", "callbacks"):
        for h in doc[kind]:
            pre = "struct" if kind == "structs" else "type"
            check(kind[:-1], h["name"], h.get("doc", ""), os.path.join(sysd, f"{pre}.{h['name']}.html"))
    if wrapped != len(capi):
        fails.append(f"{len(capi)} capi pages name a C function but only {wrapped} are api.json's header functions")
    for k, n in sorted(counts.items()):
        print(f"{n:5d} {k}")
    if fails:
        print("\n".join(fails[:60]))
        sys.exit(f"FAIL: {len(fails)} item(s) without the header's text in cargo doc")
    print(f"PASS: every item above shows api.json's text in cargo doc ({wrapped} header functions also in capi)")


if __name__ == "__main__":
    main()
