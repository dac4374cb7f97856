"""Counts and lists in the docs that the build knows, checked against it.
Each check finds a sentence by a pattern and compares its number (or list)
with what the build or the source tree has; a failure names the file, the
line and the number to write."""
import ast
import os
import re

import doc_lists


def _find(src, rel, pattern):
    text = open(os.path.join(src, rel), encoding="utf-8").read()
    m = re.search(pattern, text)
    if not m:
        return None, None
    return m, text.count("\n", 0, m.start()) + 1


def _not_wrapped(build):
    """The header functions the generated bindings leave to hand-written code
    (NOT_WRAPPED in the Python binding's generated _api.py)."""
    text = open(os.path.join(build, "bindings", "python", "ctorch", "_api.py")).read()
    m = re.search(r"^NOT_WRAPPED = (\{.*\})$", text, re.M)
    return ast.literal_eval(m.group(1))


def _nn_cases(src):
    n = 0
    d = os.path.join(src, "tests", "nn", "cases")
    for f in sorted(os.listdir(d)):
        if f.endswith(".txt"):
            n += sum(1 for ln in open(os.path.join(d, f)) if ln.strip() and not ln.lstrip().startswith("#"))
    return n


def _front_door(src):
    """README.md is the front door: short, the two commands CI runs, no
    figures of a particular run, and the way on to the docs index."""
    errs, rel = [], "README.md"
    text = open(os.path.join(src, rel), encoding="utf-8").read()
    lines = text.count("\n")
    if lines > README_MAX_LINES:
        errs.append(f"{rel}: {lines} lines; the front door stays under {README_MAX_LINES} (move detail into docs/)")
    cmds = doc_lists.section(text, r"The two commands\b")
    block = re.search(r"```sh\n(.*?)```", cmds, re.S)
    names = re.findall(r"^(scripts/\S+)", block.group(1), re.M) if block else []
    if names != ["scripts/demo", "scripts/test"]:
        errs.append(f"{rel}: The two commands' block should give scripts/demo and scripts/test, not {names}")
    ci = open(os.path.join(src, ".ci", "run"), encoding="utf-8").read()
    if not re.search(r"^exec scripts/test$", ci, re.M):
        errs.append(".ci/run: does not run README's test command, `scripts/test`")
    for i, ln in enumerate(text.split("\n"), 1):
        if re.search(r"\bload(?: average)?:? \d", ln):
            errs.append(f"{rel}:{i}: gives a load average (figures of a run belong in docs/benchmarks.md)")
    if "](docs/README.md)" not in text:
        errs.append(f"{rel}: does not link the docs index, docs/README.md")
    return errs


def _docs_index(src):
    """docs/README.md links every page of docs/ (and names no missing one)."""
    rel = "docs/README.md"
    pages = sorted(f for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md") and f != "README.md")
    if not os.path.exists(os.path.join(src, rel)):
        return [f"{rel}: the docs index is missing"]
    text = open(os.path.join(src, rel), encoding="utf-8").read()
    linked = set(re.findall(r"\]\(([\w.-]+\.md)(?:#[\w-]*)?\)", text))
    errs = [f"{rel}: does not link docs/{p}" for p in pages if p not in linked]
    errs += [f"{rel}: links {p}, which is not in docs/" for p in sorted(linked) if p not in pages]
    return errs


# The front door: what ctorch is, how it compares, the install, the two commands and
# a first program per language (C and the five bindings), read in about five minutes.
README_MAX_LINES = 210


def check_all(src, build, api, doc_files):
    errs = []

    def number(rel, pattern, want, what):
        m, line = _find(src, rel, pattern)
        if m is None:
            errs.append(f"{rel}: the sentence giving {what} ({pattern!r}) is gone; update tests/docs/doc_checks.py")
        elif int(m.group(1).replace(",", "")) != want:
            errs.append(f"{rel}:{line}: says {m.group(1)} {what}; the build has {want}")

    counts = api["counts"]
    header = [f for f in api["functions"] if f["origin"] == "header"]
    inline = [f for f in header if f.get("inline")]
    nw = _not_wrapped(build)
    number("docs/bindings-languages.md", r"Of the header's (\d+) functions", counts["header_functions"],
           "header functions (api.json counts.header_functions)")
    number("docs/bindings-languages.md", r"(\d+) get a generated wrapper",
           counts["header_functions"] - len(inline) - len(nw), "header functions with a generated wrapper")
    number("docs/bindings-languages.md", r"the (\d+) inline helpers are built", len(inline), "inline helpers")
    number("docs/bindings-languages.md", r"and (\d+) do not \(`NOT_WRAPPED`", len(nw), "functions not wrapped (NOT_WRAPPED)")
    number("docs/bindings-languages.md", r"the (\d+) `\*_free` functions", sum(1 for k in nw if k.endswith("_free")),
           "*_free functions among NOT_WRAPPED")
    if api["torch_version"].startswith("1.13."):  # the sentence gives 1.13.1's figure
        number("docs/api-json.md", r"On libtorch 1\.13\.1, (\d+) operator names have several overloads",
               counts["overloaded_names"], "overloaded operator names (api.json counts.overloaded_names)")
    number("docs/modules.md", r"tests/nn/cases/\*\.txt: (\d+) cases", _nn_cases(src),
           "cases in tests/nn/cases/*.txt")

    # Every repository path the docs name in backticks exists (a line may say it was removed).
    tops = "tests|examples|bench|scripts|shim|bindings-gen|fuzz|include|cmake|pkgconfig|sanitize|docs|abi"
    for rel in doc_files:
        for i, ln in enumerate(open(os.path.join(src, rel), encoding="utf-8"), 1):
            for p in re.findall(r"`((?:%s)/[A-Za-z0-9_./-]*)`" % tops, ln):
                if "*" not in p and not os.path.exists(os.path.join(src, p.rstrip("/"))) and "removed" not in ln:
                    errs.append(f"{rel}:{i}: names `{p}`, which is not in the repository")

    # The layout table (docs/architecture.md) names every capability folder and every script.
    rel = "docs/architecture.md"
    table = doc_lists.section(open(os.path.join(src, rel), encoding="utf-8").read(), r"(?:\d+\. )?Layout\b")
    for d in sorted(os.listdir(os.path.join(src, "shim"))):
        if os.path.isdir(os.path.join(src, "shim", d)) and f"`shim/{d}/`" not in table:
            errs.append(f"{rel}: the layout table does not list `shim/{d}/`")
    row = next((ln for ln in table.split("\n") if ln.startswith("| `scripts/`")), "")
    for s in sorted(os.listdir(os.path.join(src, "scripts"))):
        if os.path.isfile(os.path.join(src, "scripts", s)) and not s.startswith(".") and f"`{s}`" not in row:
            errs.append(f"{rel}: the layout table's `scripts/` row does not list `{s}`")
    errs += _front_door(src)
    errs += _docs_index(src)
    errs += doc_lists.check_lists(src, api)
    return errs
