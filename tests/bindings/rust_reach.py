#!/usr/bin/env python3
"""Counts the header's functions reachable from safe Rust: those the safe
crate `ctorch` calls (`sys::ctorch_x(` anywhere in its sources: a safe
function, method or Drop), plus the header's inline helpers, which ctorch-sys
writes as safe Rust functions. Prints the count and, with --list, the others.

Usage: rust_reach.py API_JSON CTORCH_CRATE_SRC_DIR [--list]
"""
import json
import os
import re
import sys


def main():
    api, src = sys.argv[1], sys.argv[2]
    doc = json.load(open(api))
    text = ""
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith(".rs"):
                text += open(os.path.join(root, f)).read()
    called = set(re.findall(r"sys::(ctorch_\w+)\s*\(", text))
    header = [f for f in doc["functions"] if f["origin"] == "header"]
    inline = {f["name"] for f in header if f["inline"]}
    reach = [f["name"] for f in header if f["name"] in called or f["name"] in inline]
    print(f"header functions reachable from safe Rust: {len(reach)} of {len(header)} "
          f"({len(inline)} of them inline helpers, safe in ctorch-sys)")
    if "--list" in sys.argv:
        for f in header:
            if f["name"] not in reach:
                print("  not reachable:", f["name"])


if __name__ == "__main__":
    main()
