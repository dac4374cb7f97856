#!/usr/bin/env python3
"""The binding docs (docs/api-json.md and docs/bindings-languages.md, read as
one text) document every key that occurs in api.json: walks the
generated file (every object at every depth; the keys of the maps keyed by names,
`types`, `overload_groups` and `nn_conventions.values`, are names, not keys) and fails on a
key the document never writes inside backticks (`key`, or in a `{"key": ...}`
example). Prints the number of distinct keys and each undocumented one with
a path where it occurs.

    bindings-gen/tests/check_api_doc.py --api build/api.json \
        --doc docs/api-json.md docs/bindings-languages.md
"""
import argparse
import json
import re
import sys

# Objects whose keys are names (a type, an operator), not format keys.
NAME_MAPS = {("types",), ("overload_groups",), ("nn_conventions", "values")}


def walk(v, path, keys):
    if isinstance(v, dict):
        is_map = tuple(path) in NAME_MAPS
        for k, x in v.items():
            if not is_map:
                keys.setdefault(k, ".".join(path + [k]))
            walk(x, path + ([k] if not is_map else ["<name>"]), keys)
    elif isinstance(v, list):
        for x in v:
            walk(x, path + ["[]"], keys)


def documented_words(md: str) -> set:
    words = set()
    for span in re.findall(r"`([^`\n]+)`", md):
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span))
    for block in re.findall(r"```.*?```", md, re.S):
        words.update(re.findall(r"\"([A-Za-z_][A-Za-z0-9_]*)\"\s*:", block))
    return words


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--api", required=True)
    # Several files: the guide was split in two (sections 1-4, 5-8) and the
    # format changes (section 7) moved to the second.
    ap.add_argument("--doc", required=True, nargs="+")
    a = ap.parse_args()
    with open(a.api, encoding="utf-8") as f:
        doc = json.load(f)
    text = ""
    for path in a.doc:
        with open(path, encoding="utf-8") as f:
            text += f.read() + "\n"
    words = documented_words(text)
    docs = ", ".join(a.doc)
    keys = {}
    walk(doc, [], keys)
    missing = sorted(k for k in keys if k not in words)
    print(f"api.json: {len(keys)} distinct keys, {len(keys) - len(missing)} documented in {docs}")
    for k in missing:
        print(f"  UNDOCUMENTED {k!r} (e.g. at {keys[k]})")
    # Section 7 (docs/bindings-languages.md) has an entry for the version
    # this build writes (the bump rule: a new major says what breaks, a minor
    # what it adds).
    ver = f"{doc['format_version']}.{doc.get('format_minor', 0)}"
    has_entry = f"**Version {ver}**" in text
    if not has_entry:
        print(f"  NO ENTRY '**Version {ver}**' in the format changes of {docs} for format {ver}")
    return 1 if missing or not has_entry else 0


if __name__ == "__main__":
    sys.exit(main())
