#!/usr/bin/env python3
"""ctorch bindings generator: native_functions.yaml -> C header, C++ wrapper
shards, ops.json, coverage.json and a NULL-handle C test.

Run by CMake at build time (see generate.cmake). Files are rewritten only
when their content changes, so regenerating recompiles nothing needlessly.
"""
from __future__ import annotations

import os
import re
import sys

# Keep the source tree clean (it may be read-only): no __pycache__ there.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ctorch_gen import cli, emit_cpp, emit_header, emit_json, emit_null_test, emit_sweep  # noqa: E402
from ctorch_gen.model import load_yaml  # noqa: E402
from ctorch_gen.plan import (apply_safety, build, existing_c_names, guard_headers,  # noqa: E402
                            guarded_names, scan_ops_structs, unsafe_reasons)


def main(argv=None) -> int:
    ap = cli.parser(__doc__, "output directory", "0.0.0")
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--ctorch-header", help="hand-written ctorch.h (its names are reserved)")
    ap.add_argument("--aten-ops-dir", help="installed ATen/ops directory (checks every at::_ops struct exists)")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--guards", default=os.path.join(here, os.pardir, "shim", "ops", "guards.h"),
                    help="hand-written guards (ctorch::guard::<op> declarations)")
    ap.add_argument("--unsafe", default=os.path.join(here, "unsafe_ops.txt"),
                    help="functions flagged unsafe, with reasons")
    a = ap.parse_args(argv)

    reserved = existing_c_names(cli.read_text(a.ctorch_header)) if a.ctorch_header else set()
    structs = scan_ops_structs(a.aten_ops_dir) if a.aten_ops_dir else None
    res = build(load_yaml(a.yaml), reserved, structs)
    apply_safety(res.plans, guarded_names(guard_headers(a.guards, cli.read_text)),
                 unsafe_reasons(cli.read_text(a.unsafe)))

    os.makedirs(a.out, exist_ok=True)
    yname = os.path.basename(a.yaml)
    cli.write_if_changed(os.path.join(a.out, "ctorch_ops.h"), emit_header.emit(res.plans, yname, a.torch_version))
    shards = emit_cpp.shard(res.plans, a.shards)
    for k, ps in enumerate(shards):
        cli.write_if_changed(os.path.join(a.out, f"ctorch_ops_{k}.cpp"), emit_cpp.emit_shard(ps, k, len(shards)))
    # Shards left over from a build with more shards would only confuse.
    for fn in os.listdir(a.out):
        m = re.match(r"ctorch_ops_(\d+)\.cpp$", fn)
        if m and int(m.group(1)) >= len(shards):
            os.remove(os.path.join(a.out, fn))
    cli.write_if_changed(os.path.join(a.out, "ctorch_boxed.cpp"), emit_cpp.emit_boxed(res.plans))
    cli.write_if_changed(os.path.join(a.out, "ops.json"), emit_json.emit_ops(res.plans, a.torch_version))
    cli.write_if_changed(os.path.join(a.out, "coverage.json"), emit_json.emit_coverage(res, a.torch_version, a.yaml))
    cli.write_if_changed(os.path.join(a.out, "test_ops_null.c"), emit_null_test.emit(res.plans))
    cli.write_if_changed(os.path.join(a.out, "sweep_ops.c"), emit_sweep.emit(res.plans))

    if not a.quiet:
        cov = emit_json.coverage(res, a.torch_version, a.yaml)
        print(f"ctorch bindings-gen: {cov['wrapped']} of {cov['schemas']} schemas wrapped "
              f"({cov['coverage_percent']}%, {cov['deprecated']} deprecated excluded), "
              f"{len(res.skipped)} skipped, {len(shards)} shards")
        for s in res.skipped:
            print(f"  skipped {s.schema}\n    reason: {s.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
