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

    # README's layout table names every capability folder and every script.
    rel = "README.md"
    text = open(os.path.join(src, rel), encoding="utf-8").read()
    table = text[text.index("## Layout"):]
    table = table[:table.index("\n## ", 1)]
    for d in sorted(os.listdir(os.path.join(src, "shim"))):
        if os.path.isdir(os.path.join(src, "shim", d)) and f"`shim/{d}/`" not in table:
            errs.append(f"{rel}: the layout table does not list `shim/{d}/`")
    row = next((ln for ln in table.split("\n") if ln.startswith("| `scripts/`")), "")
    for s in sorted(os.listdir(os.path.join(src, "scripts"))):
        if not s.startswith(".") and f"`{s}`" not in row:
            errs.append(f"{rel}: the layout table's `scripts/` row does not list `{s}`")
    errs += doc_lists.check_lists(src, api)
    return errs
