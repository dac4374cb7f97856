#!/usr/bin/env python3
"""Generates everything bindings-gen makes (the operator header and C++
shards, ctorch_boxed.cpp, ops.json, coverage.json, the NULL test and the
sweep, api.json, ctorch_abi.h, and the Python, Node, Go, Rust and Java packages)
from two trees and tells whether the outputs are byte-identical, for each
libtorch's native_functions.yaml (Debian's 1.13 and the 2.15 venv's).

  compare_generated.py HEAD .                 # a refactor of the working tree changes nothing
  compare_generated.py --inputs HEAD OLD NEW  # only the generator code differs between the two

  compare_generated.py --history BASE --keep DIR  # which commit since BASE changed which output

A tree is a git revision or "." (the working tree: its tracked files and the
untracked ones git does not ignore). With --inputs REV, each tree takes only
the generator's code from its revision (bindings-gen/ctorch_gen,
bindings-gen/generate*.py) and everything it reads from REV (ctorch.h, the
guards, unsafe_ops.txt, the nn sources, the binding runtimes): a difference
is then the code's alone. No build is needed: the outputs go to a scratch
directory (--keep DIR keeps them: DIR/a, DIR/b). Exit status 1 when the
outputs differ (a `diff -r` summary is printed), 0 when they are identical.

--history BASE: every commit since BASE (BASE..HEAD) that changed the
generator's code, compared with each of its parents, the inputs fixed
(--inputs, default HEAD): the outputs it changed, by file. Each state of the
code is generated once (DIR/<state>-<inputs>/); where a state cannot read
the fixed inputs (a branch's code before a merge brought what it refuses),
the pair is compared on the commit's own inputs instead, else on BASE's. A
commit that only moved code must change nothing; the others say which
feature changed what.

Not run by ctest (a pair of trees is the question, not one build);
docs/architecture.md ("Changing the generator") says when to use it.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODE = ["bindings-gen/ctorch_gen", "bindings-gen/generate.py", "bindings-gen/generate_api.py",
        "bindings-gen/generate_bindings.py"]
VENV = os.path.expanduser("~/.cache/ctorch/torch-2.15.0")


def torches() -> dict:
    """name -> (native_functions.yaml, ATen/ops directory, --torch-version as CMake gives it)."""
    out = {"1.13": ("/usr/lib/python3/dist-packages/torchgen/packaged/ATen/native/native_functions.yaml",
                    "/usr/include/ATen/ops", "1.13.0")}
    site = glob.glob(os.path.join(VENV, "lib", "python3*", "site-packages"))
    if site:
        out["2.15"] = (os.path.join(site[0], "torchgen/packaged/ATen/native/native_functions.yaml"),
                       os.path.join(site[0], "torch/include/ATen/ops"), "2.15.0")
    return out


def git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", REPO, *args], check=True, stdout=subprocess.PIPE).stdout


def export(rev: str, dest: str, paths=()) -> None:
    """The files of rev (or of the working tree, for ".") under dest."""
    if rev == ".":
        names = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths).split(b"\0")
        for n in filter(None, (x.decode() for x in names)):
            src = os.path.join(REPO, n)
            if os.path.isfile(src):
                os.makedirs(os.path.dirname(os.path.join(dest, n)), exist_ok=True)
                shutil.copy2(src, os.path.join(dest, n))
        return
    tar = subprocess.run(["git", "-C", REPO, "archive", rev, "--", *paths], check=True, stdout=subprocess.PIPE).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=tar, check=True)


def tree(rev: str, inputs, dest: str) -> None:
    os.makedirs(dest)
    export(inputs or rev, dest)
    if inputs and inputs != rev:
        for p in CODE:
            full = os.path.join(dest, p)
            shutil.rmtree(full) if os.path.isdir(full) else (os.path.exists(full) and os.remove(full))
        export(rev, dest, [p for p in CODE if rev == "." or git("ls-tree", rev, "--", p).strip()])


def generate(src: str, out: str, torch: tuple) -> None:
    """What bindings-gen/generate.cmake, api.cmake and bindings.cmake run, into out."""
    yaml, ops_dir, version = torch
    py, bg, gen = sys.executable, os.path.join(src, "bindings-gen"), os.path.join(out, "generated")
    cm = open(os.path.join(src, "CMakeLists.txt"), encoding="utf-8").read()
    proj = re.search(r"project\(ctorch VERSION (\S+)", cm).group(1)
    soname = f"libctorch.so.{proj.split('.')[0]}-torch{'.'.join(version.split('.')[:2])}"
    run = lambda *a: subprocess.run([py, *a], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,  # noqa: E731
                                    text=True, cwd=src)
    run(os.path.join(bg, "generate.py"), "--yaml", yaml, "--out", gen, "--shards", "2", "--torch-version", version,
        "--ctorch-header", os.path.join(src, "include/ctorch.h"), "--aten-ops-dir", ops_dir)
    run(os.path.join(bg, "generate_api.py"), "--header", os.path.join(src, "include/ctorch.h"),
        "--ops", os.path.join(gen, "ops.json"), "--yaml", yaml, "--out", gen, "--torch-version", version,
        "--soname", soname, "--lib-file", f"libctorch.so.{proj}", "--cc", "cc",
        "--include", os.path.join(src, "include"), "--include", gen, "--nn-dir", os.path.join(src, "shim/nn"),
        "--bridge-header", os.path.join(src, "include/ctorch_python.h"),
        "--version-script", os.path.join(src, "shim/ctorch.map"),
        "--bridge-version-script", os.path.join(src, "shim/pybridge/ctorch_python.map"))
    # Fixed stand-ins for the build tree's paths, so that two trees' packages compare.
    for lang in ("python", "node", "go", "rust", "java"):
        if not os.path.isdir(os.path.join(bg, "ctorch_gen", "java" if lang == "java" else ".")):
            continue  # a tree from before the Java binding
        extra = ["--include", "/ctorch/include"] if lang == "go" else []
        run(os.path.join(bg, "generate_bindings.py"), "--api", os.path.join(gen, "api.json"), "--lang", lang,
            "--out", os.path.join(out, "bindings", lang), "--build-lib", "/ctorch/build/libctorch.so", *extra)
    # coverage.json names the yaml it read, which is the same file for both trees.


def code_state(rev: str) -> str:
    """A short name of the generator code's content at rev (the same code, the same name)."""
    ids = []
    for p in CODE:
        r = subprocess.run(["git", "-C", REPO, "rev-parse", "--verify", "-q", f"{rev}:{p}"],
                           stdout=subprocess.PIPE, text=True)
        ids.append(r.stdout.strip() or "-")
    return hashlib.sha1(" ".join(ids).encode()).hexdigest()[:10]


def _changed(d1: str, d2: str) -> list:
    """The files (relative paths) that differ between two output trees, or are in one only."""
    out = set()
    for ln in subprocess.run(["diff", "-rq", d1, d2], stdout=subprocess.PIPE, text=True).stdout.splitlines():
        m = re.match(r"Files (.*) and .* differ$", ln) or re.match(r"Only in (.*): (.*)$", ln)
        path = m.group(1) if m.lastindex == 1 else os.path.join(m.group(1), m.group(2))
        for d in (d1, d2):
            if path.startswith(d + "/"):
                path = path[len(d) + 1:]
        out.add(path)
    return sorted(out)


def history(base: str, inputs: str, want: list, ts: dict, keep: str) -> int:
    revs = git("rev-list", "--topo-order", "--reverse", f"{base}..HEAD", "--", *CODE).decode().split()
    made = {}  # (code state, inputs) -> its output directory, or why it could not be generated

    def make(rev, inp):
        key = (code_state(rev), git("rev-parse", "--short", inp).decode().strip())
        if key not in made:
            work = tempfile.mkdtemp(prefix="ctorch-gen-")
            out = os.path.join(keep, f"{key[0]}-{key[1]}")
            try:
                tree(rev, inp, os.path.join(work, "src"))
                for t in want:
                    generate(os.path.join(work, "src"), os.path.join(out, t), ts[t])
                made[key] = out
            except subprocess.CalledProcessError as e:
                last = (e.stderr or "").strip().splitlines()[-1:] or ["?"]
                made[key] = f"! {os.path.basename(str(e.cmd[1]))}: {last[0][:120]}"
            finally:
                shutil.rmtree(work, ignore_errors=True)
        return made[key]

    changed = 0
    for rev in revs:
        subject = git("log", "-1", "--format=%h %s", rev).decode().strip()[:110]
        for parent in git("rev-parse", f"{rev}^@").decode().split():
            if code_state(parent) == code_state(rev):
                continue
            # The code of both against the fixed inputs; where one cannot read them (a state
            # of a branch that never met those inputs), against the commit's own, else BASE's.
            for inp in (inputs, rev, base):
                new, old = make(rev, inp), make(parent, inp)
                if not new.startswith("!") and not old.startswith("!"):
                    break
            print(f"{subject}\n    vs {parent[:7]}, inputs {git('rev-parse', '--short', inp).decode().strip()}: ",
                  end="")
            if new.startswith("!") or old.startswith("!"):
                print(f"cannot generate: {new if new.startswith('!') else old}")
                continue
            files = _changed(old, new)
            changed += bool(files)
            print(f"{len(files)} outputs differ: {' '.join(files)}" if files else "identical")
    print(f"compare_generated: {len(revs)} commits changed the generator since {base}; {changed} changed an output "
          f"({', '.join(want)}; inputs {inputs}, else the commit's own, else {base}'s)")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", nargs="?", help="git revision or . (the working tree)")
    ap.add_argument("b", nargs="?", help="the second tree (without it: generate a only, into --keep)")
    ap.add_argument("--inputs", help="take all but the generator's code from this revision (or .)")
    ap.add_argument("--torch", action="append", choices=["1.13", "2.15"], help="default: both found")
    ap.add_argument("--keep", help="keep the outputs here (DIR/a, DIR/b)")
    ap.add_argument("--history", metavar="BASE", help="each commit since BASE that changed the generator, "
                    "against its parents (needs --keep)")
    a = ap.parse_args(argv)
    ts = torches()
    want = a.torch or sorted(ts)
    missing = [t for t in want if t not in ts]
    if missing:
        print(f"compare_generated: no torch {missing} (the 2.15 venv is {VENV}: scripts/build 2.15.0 makes it)")
        return 2
    if a.history:
        if not a.keep:
            ap.error("--history needs --keep DIR")
        return history(a.history, a.inputs or "HEAD", want, ts, a.keep)
    if not a.b and not a.keep:
        ap.error("one tree needs --keep (where its outputs go)")
    work = tempfile.mkdtemp(prefix="ctorch-gen-")
    keep = a.keep or work
    rc = 0
    try:
        for side, rev in (("a", a.a), ("b", a.b)):
            if not rev:
                continue
            src = os.path.join(work, "src-" + side)
            tree(rev, a.inputs, src)
            for t in want:
                generate(src, os.path.join(keep, side, t), ts[t])
        if a.b:
            d = subprocess.run(["diff", "-rq", os.path.join(keep, "a"), os.path.join(keep, "b")],
                               stdout=subprocess.PIPE, text=True)
            files = sum(len(fs) for _r, _d, fs in os.walk(os.path.join(keep, "a")))
            if d.returncode:
                print(d.stdout, end="")
                print(f"compare_generated: {a.a} and {a.b} differ ({len(d.stdout.splitlines())} of {files} files)")
                rc = 1
            else:
                print(f"compare_generated: identical, {files} files ({', '.join(want)}; "
                      f"{a.a} vs {a.b}{', inputs ' + a.inputs if a.inputs else ''})")
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the trees (and the outputs, without --keep)
    return rc


if __name__ == "__main__":
    sys.exit(main())
