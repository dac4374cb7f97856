#!/usr/bin/env python3
"""The map cannot rot: every repository path a document names exists.

ctest `docs_paths` runs this over docs/architecture.md and tests/README.md
(the maintainer's map and the test layout), which name files and folders all
over the tree. Cheap on purpose (no build, no torch): it reads the documents
and the source tree only.

What is checked, outside fenced code blocks:
  - a link [text](target) that is not a URL: the target exists, relative to
    the document's folder; a `#anchor` must be a heading of the target (or
    of the document itself for `(#anchor)`), slugged as GitHub does;
  - a path in backticks: a span without spaces whose first component is a
    top-level entry of the repository (`shim/core/handles.cpp`,
    `tests/docs/`) exists; a glob (`tests/test_*.c`) or braces
    (`shim/ops/ctorch_gen_support.{h,cpp}`) must match something; a trailing
    `:LINE` is ignored. Build outputs (`build/...`), system paths and
    placeholders (`<lang>`) are not repository paths and are not checked.
A span whose first component is not a top-level entry (a header of libtorch,
`ATen/ops/add.h`) is not a repository path: write repository paths from the
root so that they are checked.

docs_run's doc_checks.py applies a looser rule (paths under a fixed list of
folders, "removed" on the line exempts) to every document; this one is strict
for the documents meant to be a map.

Usage: doc_paths.py --src SRC [--self-test] FILE...   (FILE relative to SRC)
"""
import argparse
import glob
import itertools
import os
import re
import sys
import tempfile

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
SPAN = re.compile(r"`([^`\s]+)`")


def slug(heading):
    """GitHub's anchor for a heading's text."""
    s = re.sub(r"[`*]|\]\([^)]*\)|\[", "", heading.strip().lower())
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    out = set()
    fenced = False
    for ln in open(path, encoding="utf-8"):
        if ln.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and ln.startswith("#"):
            out.add(slug(ln.lstrip("#")))
    return out


def expand(p):
    """A{b,c}d -> [Abd, Acd] (one level, any number of groups)."""
    parts = re.split(r"\{([^{}]*)\}", p)
    alts = [[x] if i % 2 == 0 else x.split(",") for i, x in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*alts)]


def exists(root, p):
    full = os.path.join(root, p)
    if any(c in p for c in "*?["):
        return bool(glob.glob(full))
    return os.path.exists(full.rstrip("/"))


def check(src, rel):
    """Errors for one document: 'FILE:LINE: ...'."""
    errs = []
    path = os.path.join(src, rel)
    here = os.path.dirname(path)
    tops = {e for e in os.listdir(src) if not e.startswith((".", "build"))}
    fenced = False
    for i, ln in enumerate(open(path, encoding="utf-8"), 1):
        if ln.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in LINK.findall(ln):
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            file, _, anchor = target.partition("#")
            tpath = os.path.normpath(os.path.join(here, file)) if file else path
            if not os.path.exists(tpath):
                errs.append(f"{rel}:{i}: links to {file}, which is not in the repository")
            elif anchor and tpath.endswith(".md"):
                if anchor not in anchors(tpath):
                    errs.append(f"{rel}:{i}: links to {target}, but {os.path.relpath(tpath, src)} has no such heading")
        for span in SPAN.findall(ln):
            p = re.sub(r":\d+(-\d+)?$", "", span)
            if "/" not in p or any(c in p for c in "<>$~=()"):
                continue
            if p.split("/", 1)[0] not in tops:
                continue
            missing = [x for x in expand(p) if not exists(src, x)]
            if missing:
                errs.append(f"{rel}:{i}: names `{span}`: {', '.join(missing)} is not in the repository")
    return errs


def self_test():
    """The checker finds what it must: a test that cannot fail proves nothing."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "shim", "core"))
        os.makedirs(os.path.join(d, "docs"))
        for f in ("shim/core/handles.cpp", "shim/core/internal.h", "docs/other.md"):
            with open(os.path.join(d, f), "w") as fp:
                fp.write("# Other doc\n## A heading, here\n" if f.endswith(".md") else "")
        with open(os.path.join(d, "docs", "map.md"), "w") as fp:
            fp.write("# Map\n"
                     "ok: `shim/core/handles.cpp`, `shim/core/*.h`, `shim/core/{handles.cpp,internal.h}`, "
                     "`shim/core/handles.cpp:12`, `ATen/ops/add.h`, `build/api.json`, `shim/<lang>/`\n"
                     "ok: [other](other.md#a-heading-here), [self](#map), [web](https://example.org/x)\n"
                     "bad: `shim/core/gone.cpp`\n"
                     "bad: `shim/core/*.py`\n"
                     "bad: `shim/core/{handles.cpp,gone.h}`\n"
                     "bad: [gone](gone.md)\n"
                     "bad: [anchor](other.md#no-such)\n"
                     "```sh\nnot checked: `shim/core/in_a_fence.c`\n```\n")
        errs = check(d, "docs/map.md")
        want = [4, 5, 6, 7, 8]
        got = [int(e.split(":")[1]) for e in errs]
        if got != want:
            print("doc_paths self-test: expected errors on lines", want, "got:", *errs, sep="\n  ")
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    if a.self_test and not self_test():
        return 1
    errs = []
    for rel in a.files:
        errs += check(a.src, rel)
    for e in errs:
        print(e)
    print(f"doc_paths: {len(a.files)} documents, {len(errs)} missing paths")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
