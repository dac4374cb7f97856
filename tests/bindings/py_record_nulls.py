#!/usr/bin/env python3
"""The sweep's NULL-with-OK record (scripts/sweep --nulls), for the header's
functions: runs Python binding scripts with every header function of
api.json that has a handle output wrapped, records each call that returned
CTORCH_OK with a handle output NULL (check_nulls.py's lines: "c_name<TAB>
result<TAB>-1", result = the index among the outputs), and fails, through
check_nulls.check, on any such result api.json does not flag null_result.
Each script runs in this process, as `python SCRIPT`; a script that exits
77 (skipped) makes the whole run skipped unless another one ran.

    py_record_nulls.py [--nulls FILE] SCRIPT [-- SCRIPT ...]
(CTORCH_API_JSON names api.json; PYTHONPATH has the binding.)
"""
import json
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bindings-gen", "tests"))
import check_nulls  # noqa: E402


def wrap_header_functions(lib, doc, seen):
    """Replaces lib.<f> by a recorder for each header function with handle
    outputs (one handle each, not arrays: arrays are `filled` or `chosen`)."""
    n = 0
    for f in doc["functions"]:
        if f["origin"] != "header" or f["inline"]:
            continue
        outs = [p for p in f["params"] if p["direction"] == "out"]
        watch = [(k, f["params"].index(p)) for k, p in enumerate(outs)
                 if p["type"]["kind"] == "handle" and p["pointer"] == 1 and "array" not in p]
        if not watch:
            continue
        try:
            fn = getattr(lib, f["name"])
        except AttributeError:
            continue

        def rec(*args, _fn=fn, _name=f["name"], _watch=watch):
            st = _fn(*args)
            if st == 0:
                for k, i in _watch:
                    a = args[i] if i < len(args) else None
                    obj = getattr(a, "_obj", a)  # byref(x) -> x
                    if obj is not None and hasattr(obj, "value") and not obj.value:
                        seen.append(f"{_name}\t{k}\t-1\n")
            return st
        setattr(lib, f["name"], rec)
        n += 1
    return n


def main():
    args = sys.argv[1:]
    out = None
    if args[:1] == ["--nulls"]:
        out, args = args[1], args[2:]
    scripts, cur = [], []
    for a in args + ["--"]:
        if a == "--":
            if cur:
                scripts.append(cur)
            cur = []
        else:
            cur.append(a)
    with open(os.environ["CTORCH_API_JSON"], encoding="utf-8") as f:
        doc = json.load(f)
    from ctorch import _rt
    seen = []
    wrapped = wrap_header_functions(_rt.lib, doc, seen)
    ran = 0
    for s in scripts:
        sys.argv = list(s)
        code = 0
        try:
            runpy.run_path(s[0], run_name="__main__")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code == 77:
            print(f"py_record_nulls: {s[0]} skipped itself")
            continue
        if code:
            print(f"py_record_nulls: {s[0]} failed (exit {code})")
            return code
        ran += 1
    if not ran:
        print("skipped: every script skipped itself")
        return 77
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.writelines(seen)
    counts, problems = check_nulls.check(doc, seen)
    print(f"py_record_nulls: {wrapped} header functions watched, {len(seen)} NULL results with CTORCH_OK over "
          f"{len(counts)} (function, result) pairs: {sorted(k[0] for k in counts)}")
    for p in problems:
        print("  UNFLAGGED", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
