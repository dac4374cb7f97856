"""Emits ops.json (for binding authors) and coverage.json."""
from __future__ import annotations

import json
from typing import List

from .model import type_to_str
from .plan import Plan, Result


def op_entry(p: Plan) -> dict:
    args = []
    for b in p.args:
        a = b.arg
        args.append({
            "name": a.name,
            "schema_type": a.type_str(),
            "c_types": [t for t, _ in b.c_params],
            "c_names": [n for _, n in b.c_params],
            "default": a.default,
            "kwarg_only": a.kwarg_only,
            "nullable": b.nullable,
            "mutable": a.is_write,
        })
    if p.convention == "out_params":
        rets = [{"schema_type": r.ret.type_str(), "name": r.ret.name,
                 "c_type": r.c_type, "c_name": r.c_name} for r in p.rets]
    else:
        # The result is an argument the caller holds: say which.
        rets = []
        for r in p.f.returns:
            alias = next((a.name for a in p.f.args
                          if a.is_write and a.annotation.alias_set == r.annotation.alias_set), None)
            rets.append({"schema_type": r.type_str(), "name": r.name, "c_type": None,
                         "c_name": None, "alias_of": alias})
    entry = {
        "c_name": p.c_name,
        "schema": p.f.schema,
        "name": p.f.name,
        "overload": p.f.overload,
        "args": args,
        "returns": rets,
        "returns_convention": p.convention,
    }
    if p.unsafe:
        # Bindings should refuse or hide it: bad input may still crash it.
        entry["unsafe"] = True
        entry["unsafe_reason"] = p.unsafe
    return entry


def emit_ops(plans: List[Plan], torch_version: str) -> str:
    doc = {"torch_version": torch_version, "count": len(plans), "ops": [op_entry(p) for p in plans]}
    return json.dumps(doc, indent=1) + "\n"


def coverage(res: Result, torch_version: str, yaml_path: str) -> dict:
    eligible = res.schemas - res.deprecated
    wrapped = len(res.plans)
    return {
        "torch_version": torch_version,
        "yaml": yaml_path,
        "schemas": res.schemas,
        "deprecated": res.deprecated,
        "wrapped": wrapped,
        "coverage_percent": round(100.0 * wrapped / eligible, 2) if eligible else 0.0,
        "skipped": [{"schema": s.schema, "reason": s.reason} for s in res.skipped],
    }


def emit_coverage(res: Result, torch_version: str, yaml_path: str) -> str:
    return json.dumps(coverage(res, torch_version, yaml_path), indent=1) + "\n"
