#!/usr/bin/env python3
"""Compares the generated C API of two ctorch builds (their ops.json files).

ctorch keeps one rule across libtorch versions: a schema `name.overload` is
always the C function ctorch_<name>_<overload>. When the schema's argument or
return types change between libtorch versions, the C signature of that same
name changes too; this tool makes such changes visible instead of silent.

  abi_diff.py OLD/ops.json NEW/ops.json            # text report
  abi_diff.py OLD/ops.json NEW/ops.json --markdown # the report docs/abi.md embeds
  abi_diff.py ... --counts                         # one line: added removed changed

Functions are keyed by C name. "changed" means the C parameter types (or
their number, or the result convention) differ; parameter renames and
schema-only changes that keep the C types (a new default, say) are listed
apart as "schema-only", since they do not break a caller.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Dict, List, Tuple


def c_params(op: dict) -> List[Tuple[str, str]]:
    """(type, name) of every C parameter, out-parameters first, as the header declares them."""
    params = [(r["c_type"], r["c_name"]) for r in op["returns"] if r.get("c_type")]
    for a in op["args"]:
        params.extend(zip(a["c_types"], a["c_names"]))
    return params


def c_signature(op: dict) -> str:
    params = ", ".join(f"{t} {n}" for t, n in c_params(op)) or "void"
    return f"ctorch_status {op['c_name']}({params})"


def type_key(op: dict) -> Tuple:
    return (op.get("returns_convention"), tuple(t for t, _ in c_params(op)))


def load(path: str) -> Tuple[str, Dict[str, dict]]:
    with open(path) as f:
        doc = json.load(f)
    return doc.get("torch_version", "?"), {op["c_name"]: op for op in doc["ops"]}


def diff(old: Dict[str, dict], new: Dict[str, dict]):
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    changed, schema_only = [], []
    for name in sorted(set(old) & set(new)):
        o, n = old[name], new[name]
        if type_key(o) != type_key(n):
            changed.append(name)
        elif o["schema"] != n["schema"]:
            schema_only.append(name)
    return added, removed, changed, schema_only


def report(old_v, new_v, old, new, markdown: bool) -> str:
    added, removed, changed, schema_only = diff(old, new)
    out = []
    if markdown:
        out.append(f"| | count |\n|---|---|\n| functions in {old_v} | {len(old)} |\n| functions in {new_v} | {len(new)} |\n"
                   f"| added | {len(added)} |\n| removed | {len(removed)} |\n| C signature changed | {len(changed)} |\n"
                   f"| schema changed, same C signature | {len(schema_only)} |\n")
        out.append(f"### C signature changed ({len(changed)})\n")
        out.append("Same C name, different C parameter types: code written for one version does not compile "
                   "(or, through an FFI, misbehaves) on the other.\n")
        for name in changed:
            out.append(f"- `{name}`\n  - {old_v}: `{old[name]['schema']}`\n    `{c_signature(old[name])}`\n"
                       f"  - {new_v}: `{new[name]['schema']}`\n    `{c_signature(new[name])}`")
        out.append(f"\n### Removed ({len(removed)})\n")
        out.extend(f"- `{name}`: `{old[name]['schema']}`" for name in removed)
        out.append(f"\n### Added ({len(added)})\n")
        out.extend(f"- `{name}`: `{new[name]['schema']}`" for name in added)
        out.append(f"\n### Schema changed, same C signature ({len(schema_only)})\n")
        for name in schema_only:
            out.append(f"- `{name}`\n  - {old_v}: `{old[name]['schema']}`\n  - {new_v}: `{new[name]['schema']}`")
        return "\n".join(out) + "\n"
    out.append(f"ctorch C API, libtorch {old_v} -> {new_v}: {len(old)} -> {len(new)} functions; "
               f"{len(added)} added, {len(removed)} removed, {len(changed)} changed, "
               f"{len(schema_only)} schema-only")
    for name in changed:
        out.append(f"changed {name}\n  - {c_signature(old[name])}\n  + {c_signature(new[name])}")
    out.extend(f"removed {c_signature(old[name])}" for name in removed)
    out.extend(f"added   {c_signature(new[name])}" for name in added)
    out.extend(f"schema  {name}: {old[name]['schema']}  ->  {new[name]['schema']}" for name in schema_only)
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--counts", action="store_true", help="print 'added removed changed schema_only' only")
    ap.add_argument("--labels", nargs=2, metavar=("OLD", "NEW"),
                    help="names for the two versions (default: each file's torch_version)")
    a = ap.parse_args(argv)
    old_v, old = load(a.old)
    new_v, new = load(a.new)
    if a.labels:
        old_v, new_v = a.labels
    if a.counts:
        print(*map(len, diff(old, new)))
    else:
        sys.stdout.write(report(old_v, new_v, old, new, a.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
