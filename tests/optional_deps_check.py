#!/usr/bin/env python3
"""Every Python-run test skips visibly without its optional packages.

1. No test under tests/ imports an optional reference package
   (optional_deps.OPTIONAL) at its top level outside optional_deps.need() or
   a try/except ImportError of its own.
2. Each test that calls need() (and each that imports such a test as a
   module, like bindings/py_nn_cases.py imports nn/nn_vs_torch.py) is run
   with each package it needs hidden (a folder first on PYTHONPATH whose
   package raises ModuleNotFoundError, as in a venv without it): it must print
   "skipped:" and exit 77, which ctest reports as skipped.

One interpreter per hidden package: it starts with the package
hidden, imports torch (when that fails, torch itself needs the package, as
Debian's 1.13 needs numpy: its tests are not tried), then runs each test as
`python TEST` would, in a child forked from it (pyfork.py), so torch is
imported once per package, not once per (test, package).

Usage: optional_deps_check.py [--pythonpath DIR]   (DIR: the Python binding,
for the tests that import ctorch; CTORCH_LIB as for those tests)
"""
import argparse
import ast
import glob
import json
import os
import subprocess
import sys
import tempfile

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)
from optional_deps import OPTIONAL  # noqa: E402


def _guarded(tree):
    """Import nodes inside a try whose handlers catch ImportError (or anything)."""
    ok = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Try):
            names = set()
            for h in n.handlers:
                t = h.type
                names |= {getattr(x, "id", getattr(x, "attr", "")) for x in (t.elts if isinstance(t, ast.Tuple) else [t])} \
                    if t is not None else {"*"}
            if names & {"ImportError", "ModuleNotFoundError", "Exception", "*"}:
                for x in n.body:
                    for y in ast.walk(x):
                        ok.add(id(y))
    return ok


def scan(path):
    """(unguarded optional imports at any level, packages passed to need())."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    guarded = _guarded(tree)
    bad, needs = [], set()
    for n in ast.walk(tree):
        mods = []
        if isinstance(n, ast.Import):
            mods = [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
            mods = [n.module]
        for m in mods:
            if m.split(".")[0] in OPTIONAL and id(n) not in guarded:
                bad.append((m.split(".")[0], f"{os.path.relpath(path, TESTS)}:{n.lineno}: imports {m} outside "
                            "optional_deps.need() (and no need() of it first)"))
        if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "need" and n.args and \
                isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str):
            top = n.args[0].value.split(".")[0]
            if top in OPTIONAL:
                needs.add(top)
    local = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    # A lazy import inside a function is fine once need() covered the package.
    return [b for top, b in bad if top not in needs], needs, local


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pythonpath", default="")
    a = ap.parse_args()
    files = sorted(p for p in glob.glob(os.path.join(TESTS, "**", "*.py"), recursive=True)
                   if os.path.basename(p) not in ("optional_deps.py", "optional_deps_check.py"))
    info = {p: scan(p) for p in files}
    problems = [b for p in files for b in info[p][0]]
    by_module = {os.path.splitext(os.path.basename(p))[0]: info[p][1] for p in files if info[p][1]}
    runs = []
    for p in files:
        needs = set(info[p][1])
        for m in info[p][2]:
            needs |= by_module.get(m, set())
        for pkg in sorted(needs):
            runs.append((p, pkg))
    by_pkg = {}
    for p, pkg in runs:
        by_pkg.setdefault(pkg, []).append(p)
    with tempfile.TemporaryDirectory(prefix="ctorch_hide_") as d:
        for pkg, tests in sorted(by_pkg.items()):
            hide = os.path.join(d, pkg)
            os.makedirs(os.path.join(hide, pkg), exist_ok=True)
            with open(os.path.join(hide, pkg, "__init__.py"), "w") as f:
                f.write(f"raise ModuleNotFoundError('{pkg} hidden by tests/optional_deps_check.py', name='{pkg}')\n")
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(x for x in (hide, a.pythonpath) if x),
                       PYTHONDONTWRITEBYTECODE="1")
            env.pop("CTORCH_BINDING_SKIP", None)
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--hidden", pkg, *tests],
                               capture_output=True, text=True, env=env, cwd=d, timeout=300 * (len(tests) + 1))
            results = [json.loads(x[len(RESULT):]) for x in r.stdout.splitlines() if x.startswith(RESULT)]
            if r.returncode != 0 or len(results) != len(tests):
                problems.append(f"the runner with {pkg} hidden: exit {r.returncode}, {len(results)} of {len(tests)} "
                                f"results: {(r.stdout + r.stderr).strip()[-600:]}")
                continue
            for t in results:
                rel = os.path.relpath(t["test"], TESTS)
                if t["torch_needs"]:
                    # Debian's torch 1.13 imports numpy itself: not optional there.
                    print(f"{rel} without {pkg}: not tried, this Python's torch needs {pkg}")
                elif t["code"] != 77 or "skipped:" not in t["stdout"]:
                    out = t["stdout"] + t["stderr"]
                    problems.append(f"{rel} without {pkg}: exit {t['code']}, not a skip: {out.strip()[-300:]}")
                else:
                    line = next(x for x in t["stdout"].splitlines() if x.startswith("skipped:"))
                    print(f"{rel} without {pkg}: exit 77, {line[:140]}")
    print(f"{len(files)} Python files scanned, {len(runs)} runs with a package hidden, {len(problems)} problems")
    for x in problems:
        print("  PROBLEM", x)
    return 1 if problems else 0


RESULT = "optional_deps_check result: "


def hidden(pkg, tests):
    """The runner: started with pkg hidden, prints one RESULT line a test."""
    try:
        import torch  # noqa: F401  (with pkg hidden, as each test's own import would)
        torch_needs = False
    except BaseException:  # noqa: B036  (whatever stops `import torch` here stops the test too)
        torch_needs = True
    from pyfork import run_script
    for t in tests:
        if torch_needs:
            r = {"test": t, "torch_needs": True}
        else:
            p = run_script(t, [], text=True, timeout=300)
            r = {"test": t, "torch_needs": False, "code": p.returncode, "stdout": p.stdout, "stderr": p.stderr}
        print(RESULT + json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--hidden"]:
        sys.exit(hidden(sys.argv[2], sys.argv[3:]))
    sys.exit(main())
