#!/usr/bin/env python3
"""ctorch API description: ctorch.h + ops.json + native_functions.yaml ->
api.json (every function, enum, struct, handle and callback of the C API)
and ctorch_abi.h (the ABI hash libctorch reports through ctorch_abi_hash).

Run by CMake at build time after the operator generator (see api.cmake).
"""
from __future__ import annotations

import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ctorch_gen import cli, emit_api, nn_sig  # noqa: E402
from ctorch_gen.cheader import parse_header  # noqa: E402
from ctorch_gen.model import load_yaml  # noqa: E402


def main(argv=None) -> int:
    ap = cli.parser(__doc__, "output directory (api.json, ctorch_abi.h)", "unknown")
    ap.add_argument("--header", required=True, help="include/ctorch.h")
    ap.add_argument("--ops", required=True, help="ops.json from generate.py")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"), help="C compiler for the layout program")
    ap.add_argument("--include", action="append", default=[], help="include directories for the layout program")
    ap.add_argument("--soname", default=None, help="the library's SONAME (CMake's; default: derived the same way)")
    ap.add_argument("--lib-file", default=None, help="the library's real file name (libctorch.so.X.Y.Z)")
    ap.add_argument("--bridge-header", default=None,
                    help="include/ctorch_python.h: the Python bridge (libctorch_python), api.json's python_bridge")
    ap.add_argument("--nn-dir", default=None,
                    help="shim/nn: the module kinds (CTORCH_NN_KIND) for api.json's nn_modules")
    ap.add_argument("--version-script", default=None,
                    help="shim/ctorch.map: its version node is api.json's library.symbol_version")
    ap.add_argument("--bridge-version-script", default=None,
                    help="shim/pybridge/ctorch_python.map: python_bridge.library.symbol_version")
    a = ap.parse_args(argv)
    node = (lambda path: emit_api.version_node(cli.read_text(path)) if path else None)

    header = parse_header(cli.read_text(a.header))
    ops = json.loads(cli.read_text(a.ops))
    layouts = emit_api.measure_layouts(header, a.cc, a.include)
    doc = emit_api.build_doc(header, ops, load_yaml(a.yaml), layouts, a.torch_version,
                             soname=a.soname, lib_file=a.lib_file,
                             nn_modules=nn_sig.catalogue(a.nn_dir) if a.nn_dir else [],
                             symbol_version=node(a.version_script))
    if a.nn_dir:
        doc["nn_conventions"] = nn_sig.conventions(a.nn_dir, doc["nn_modules"])
    if a.bridge_header:
        doc["python_bridge"] = emit_api.describe_bridge(cli.read_text(a.header), cli.read_text(a.bridge_header),
                                                        doc["library"], node(a.bridge_version_script))
    os.makedirs(a.out, exist_ok=True)
    cli.write_if_changed(os.path.join(a.out, "api.json"), emit_api.emit_json(doc))
    cli.write_if_changed(os.path.join(a.out, "ctorch_abi.h"), emit_api.emit_abi_header(doc))
    if not a.quiet:
        c = doc["counts"]
        print(f"ctorch api.json: {c['functions']} functions ({c['header_symbols']} hand-written symbols, "
              f"{c['generated_functions']} generated), {c['enums']} enums, {c['structs']} structs, "
              f"{c['handles']} handles, {len(doc['nn_modules'])} nn modules, abi {doc['abi_hash'][:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
