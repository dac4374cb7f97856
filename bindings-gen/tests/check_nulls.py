#!/usr/bin/env python3
"""The sweep's record of results that came back NULL with CTORCH_OK
(`scripts/sweep ... --nulls FILE`: lines "c_name<TAB>result<TAB>element",
element -1 for the result itself) against api.json: every such result must
be flagged `null_result` (a list's element: `elements_null_result`).
Prints the counts and each unflagged result; exit 1 if there is one.

    bindings-gen/tests/check_nulls.py --api build/api.json --nulls /tmp/nulls.tsv
"""
import argparse
import json
import sys


def check(doc: dict, lines) -> tuple:
    funcs = {f["name"]: f for f in doc["functions"]}
    seen = {}
    for ln in lines:
        parts = ln.rstrip("\n").split("\t")
        if len(parts) != 3:
            continue
        key = (parts[0], int(parts[1]), int(parts[2]) >= 0)
        seen[key] = seen.get(key, 0) + 1
    problems = []
    for (name, k, element), n in sorted(seen.items()):
        f = funcs.get(name)
        outs = [p for p in f["params"] if p["direction"] == "out"] if f else []
        p = outs[k] if k < len(outs) else None
        flag = "elements_null_result" if element else "null_result"
        if p is None or not p.get(flag):
            problems.append(f"{name}: result {k}{' (an element)' if element else ''} came back NULL with CTORCH_OK "
                            f"({n} calls) but api.json does not say {flag}")
    return seen, problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--api", required=True)
    ap.add_argument("--nulls", required=True)
    a = ap.parse_args()
    with open(a.api, encoding="utf-8") as f:
        doc = json.load(f)
    with open(a.nulls, encoding="utf-8") as f:
        seen, problems = check(doc, f)
    flagged = sum(1 for f in doc["functions"] for p in f["params"] if p.get("null_result"))
    print(f"{sum(seen.values())} NULL results with CTORCH_OK over {len(seen)} (function, result) pairs; "
          f"{flagged} outputs flagged null_result in api.json; {len(problems)} unflagged")
    for p in problems:
        print("  UNFLAGGED", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
