#!/usr/bin/env python3
"""Language bindings generated from api.json alone (one emitter per
language in the package ctorch_gen/<lang>/ (go, java, node, py, rust), hand-written runtime beside the
generated code in bindings-gen/<lang>/):

  python: a pip-installable package (ctypes; no compiled extension)
  node:   an npm package (koffi)
  go:     a Go module (cgo)
  rust:   two cargo crates, ctorch-sys (raw declarations, pkg-config) and ctorch (safe)
  java:   a Maven project, the named module org.ctorch (FFM, Java 22+)
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from ctorch_gen.apimodel import load_api  # noqa: E402
from ctorch_gen.cli import read_text, write_if_changed  # noqa: E402
from ctorch_gen.go import package as go_package  # noqa: E402
from ctorch_gen.java import package as java_package  # noqa: E402
from ctorch_gen.node import package as node_package  # noqa: E402
from ctorch_gen.py import package as py_package  # noqa: E402
from ctorch_gen.rust import package as rust_package  # noqa: E402


def copy_tree(src: str, dst: str) -> None:
    """Copies the hand-written runtime files (only those that changed)."""
    for root, _dirs, files in os.walk(src):
        for fn in files:
            if fn.endswith((".pyc",)) or "__pycache__" in root or "node_modules" in root or "/target" in root:
                continue
            s = os.path.join(root, fn)
            d = os.path.join(dst, os.path.relpath(s, src))
            write_if_changed(d, read_text(s))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--api", required=True, help="api.json")
    ap.add_argument("--lang", required=True, choices=["python", "node", "go", "rust", "java"])
    ap.add_argument("--out", required=True, help="package directory to write")
    ap.add_argument("--build-lib", help="libctorch path the package falls back to (build-tree use)")
    ap.add_argument("--include", help="directory of ctorch.h (go: cgo's include path)")
    a = ap.parse_args(argv)
    # Every emitter reads the typed model (ctorch_gen/apimodel.py), without the
    # functions only C can call (api.json's c_only: variadic, va_list): each
    # language formats text itself.
    doc = load_api(json.loads(read_text(a.api)))
    generate = {"python": py_package.generate, "node": node_package.generate, "go": go_package.generate,
                "rust": rust_package.generate, "java": java_package.generate}[a.lang]
    # (the Rust crates link through pkg-config and ignore build_lib; only cgo takes include)
    generate(doc, a.out, a.build_lib, a.include, copy_tree, write_if_changed, HERE)
    # Every package ships the project's licence file beside its metadata's
    # licence field (each Rust crate is packed from its own folder).
    lic = read_text(os.path.join(HERE, os.pardir, "LICENSE"))
    for d in [os.path.join(a.out, c) for c in ("ctorch-sys", "ctorch")] if a.lang == "rust" else [a.out]:
        write_if_changed(os.path.join(d, "LICENSE"), lic)
    return 0


if __name__ == "__main__":
    sys.exit(main())
