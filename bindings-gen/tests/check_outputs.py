#!/usr/bin/env python3
"""Checks a build's ops.json and coverage.json against each other and against
the symbols libctorch.so actually exports (run by ctest)."""
import argparse
import json
import re
import subprocess
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", required=True)
    ap.add_argument("--coverage", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--min-coverage", type=float, default=95.0)
    ap.add_argument("--header", required=True, help="hand-written ctorch.h")
    a = ap.parse_args()
    with open(a.ops, encoding="utf-8") as f:
        ops = json.load(f)
    with open(a.coverage, encoding="utf-8") as f:
        cov = json.load(f)
    errors = []
    names = [o["c_name"] for o in ops["ops"]]
    if len(set(names)) != len(names):
        errors.append("duplicate c_name in ops.json")
    if cov["wrapped"] != len(names):
        errors.append(f"coverage.json wrapped={cov['wrapped']} but ops.json has {len(names)}")
    if cov["wrapped"] + len(cov["skipped"]) != cov["schemas"]:
        errors.append("wrapped + skipped != schemas")
    if cov["coverage_percent"] < a.min_coverage:
        errors.append(f"coverage {cov['coverage_percent']}% < {a.min_coverage}%")
    for s in cov["skipped"]:
        if not s.get("reason"):
            errors.append(f"skip without reason: {s['schema']}")
    out = subprocess.run(["nm", "-D", "--defined-only", a.lib], capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}  # drop @@CTORCH_0
    missing = [n for n in names if n not in exported]
    if missing:
        errors.append(f"{len(missing)} ops.json functions not exported, e.g. {missing[:5]}")
    # Conversely every exported function is hand-written (declared in
    # ctorch.h) or described by ops.json.
    with open(a.header, encoding="utf-8") as f:
        hand = set(re.findall(r"\b(ctorch_\w+)\s*\(", f.read()))
    undescribed = sorted(n for n in exported if n.startswith("ctorch_") and n not in hand and n not in set(names))
    if undescribed:
        errors.append(f"{len(undescribed)} exported functions missing from ops.json, e.g. {undescribed[:5]}")
    for o in ops["ops"]:
        for arg in o["args"]:
            if len(arg["c_types"]) != len(arg["c_names"]) or not arg["c_types"]:
                errors.append(f"{o['c_name']}: bad C parameters for {arg['name']}")
        if o["returns_convention"] not in ("out_params", "mutated_args", "none"):
            errors.append(f"{o['c_name']}: bad returns_convention")
    for e in errors[:20]:
        print("ERROR:", e)
    print(f"{len(names)} ops described, {len(exported)} symbols exported, coverage {cov['coverage_percent']}%")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
