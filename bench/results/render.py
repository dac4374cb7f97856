#!/usr/bin/env python3
"""Benchmark pages from benchmark records.

Each file bench/results/<id>.json records one benchmark: the question it
answers, the page that shows it, and its runs, oldest first. The last run is
the current figure; the earlier ones are the history a maintainer compares
against. A run holds:

  date        YYYY-MM-DD
  command     what reproduces it: a shell command line, from the repository root,
              that pastes into bash (checked: `bash -n` and shlex); placeholders in
              capitals (BUILD, PACKAGE) are the reader's to fill in
  how         optional: what the command line leaves out, in prose (how often it
              ran, what varied between runs, what a placeholder stands for)
  machine     {"cpu": model, "flags": the flags that matter (AVX2, AVX-512, AMX...),
               "cores": N, "os": ..., "gpu": model, driver, CUDA where one was used}
  libtorch    the version(s) measured, e.g. "1.13.1 and 2.15.0"
  figures     a list of tables {"caption", "columns", "rows", "hidden"}; a cell
              carries its unit, or the column does; "hidden" columns (a load
              average per row) stay in the record, off the page
  conditions  what the machine was doing (load, other jobs): read the
              figures with it; kept in the record, not on the page
  notes       what the run showed beyond its tables (Markdown); for a run
              kept as history, its whole report
  status      optional: "current" (default for the last run), "superseded",
              "stale" with a reason in "status_note"

A page shows a record between two marker lines:

  <!-- results: ID -->
  ...written by this script...
  <!-- /results: ID -->

and the index of every record between `<!-- results-index -->` and
`<!-- /results-index -->`.

  bench/results/render.py           rewrite the blocks in docs/*.md
  bench/results/render.py --check   exit 1 naming each block that differs from
                                    its record (ctest docs_bench_results)
  bench/results/render.py --self-test --check
                                    first proves on a scratch tree that a
                                    stale block and a broken record are found
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
BLOCK = re.compile(r"^<!-- results: ([\w.-]+) -->\n(.*?)^<!-- /results: \1 -->\n", re.M | re.S)
INDEX = re.compile(r"^<!-- results-index -->\n(.*?)^<!-- /results-index -->\n", re.M | re.S)


def load(results_dir):
    """Every record, keyed by id; and the errors found in them."""
    recs, errs = {}, []
    for f in sorted(os.listdir(results_dir)):
        if not f.endswith(".json"):
            continue
        rel = os.path.join("bench/results", f)
        try:
            with open(os.path.join(results_dir, f), encoding="utf-8") as fp:
                r = json.load(fp)
        except ValueError as e:
            errs.append(f"{rel}: not JSON: {e}")
            continue
        rid = f[:-5]
        for key in ("benchmark", "question", "page", "runs"):
            if key not in r:
                errs.append(f"{rel}: no \"{key}\"")
        if r.get("benchmark") != rid:
            errs.append(f"{rel}: \"benchmark\" is {r.get('benchmark')!r}; the file name says {rid!r}")
        runs = r.get("runs") or []
        if not runs:
            errs.append(f"{rel}: no runs")
        for i, run in enumerate(runs):
            where = f"{rel}: run {i + 1}"
            if not DATE.match(str(run.get("date", ""))):
                errs.append(f"{where}: \"date\" is not YYYY-MM-DD")
            for key in ("command", "libtorch"):
                if not run.get(key):
                    errs.append(f"{where}: no \"{key}\"")
            if run.get("command"):
                why = _not_pasteable(run["command"])
                if why:
                    errs.append(f"{where}: \"command\" does not paste into a shell ({why}): "
                                "keep the command line in \"command\" and move the prose to \"how\"")
            m = run.get("machine") or {}
            if not m.get("cpu") or not m.get("flags"):
                errs.append(f"{where}: \"machine\" needs \"cpu\" and \"flags\"")
            if not run.get("figures") and not run.get("notes"):
                errs.append(f"{where}: neither \"figures\" nor \"notes\"")
            for t in run.get("figures") or []:
                n = len(t.get("columns") or [])
                if not n or any(len(row) != n for row in t.get("rows") or []):
                    errs.append(f"{where}: a table's rows do not match its {n} columns")
        if len(runs) > 1 and [x.get("date", "") for x in runs] != sorted(x.get("date", "") for x in runs):
            errs.append(f"{rel}: runs are not oldest first")
        recs[rid] = r
    return recs, errs


def _not_pasteable(cmd):
    """Why a record's command line would not paste into bash, or None: it must
    parse (`bash -n`) and split as a shell would (shlex)."""
    try:
        shlex.split(cmd)
    except ValueError as e:
        return f"shlex: {e}"
    p = subprocess.run(["bash", "-n", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        return "bash -n: " + p.stdout.strip().split("\n")[0].replace("bash: -c: ", "")
    return None


def _cell(v):
    return str(v).replace("|", "\\|").replace("\n", " ")


def table(t):
    """A figures table in Markdown, less the columns the record keeps for itself ("hidden":
    e.g. each process's load average, which reads the figures but is no figure)."""
    keep = [i for i, c in enumerate(t["columns"]) if c not in (t.get("hidden") or [])]
    out = []
    if t.get("caption"):
        out += [t["caption"], ""]
    out.append("| " + " | ".join(_cell(t["columns"][i]) for i in keep) + " |")
    out.append("|" + "---|" * len(keep))
    out += ["| " + " | ".join(_cell(row[i]) for i in keep) + " |" for row in t.get("rows") or []]
    return out + [""]


def machine(m):
    s = m["cpu"]
    if m.get("cores"):
        s += f", {m['cores']} cores"
    s += " (flags not recorded)" if m["flags"] == "not recorded" else f" ({m['flags']})"
    return s + (f", GPU {m['gpu']}" if m.get("gpu") else "")


def block(rid, r, page):
    run = r["runs"][-1]
    out = [""]
    for t in run.get("figures") or []:
        out += table(t)
    link = os.path.relpath(os.path.join("bench/results", rid + ".json"), os.path.dirname(page))
    how = f" ({run['how']})" if run.get("how") else ""
    line = (f"Measured {run['date']} with `{run['command']}`{how} on {machine(run['machine'])}, "
            f"libtorch {run['libtorch']}.")
    if run.get("status") in ("stale", "superseded"):
        line += f" **{run['status'].capitalize()}**: {run.get('status_note', '')}".rstrip()
    earlier = len(r["runs"]) - 1
    kept = f" and {earlier} earlier run{'s' if earlier > 1 else ''}" if earlier else ""
    line += f" The record{kept}: [bench/results/{rid}.json]({link})."
    return "\n".join(out + [line, ""]) + "\n"


def index(recs, page, src):
    """One row per record: this page's first, then the others', each in the order its page shows them."""
    texts = {}
    def where(r):
        if r["page"] not in texts:
            with open(os.path.join(src, r["page"]), encoding="utf-8") as fp:
                texts[r["page"]] = fp.read()
        return (r["page"] != page, r["page"], texts[r["page"]].find(f"<!-- results: {r['benchmark']} -->"))
    rows = []
    for rid, r in sorted(recs.items(), key=lambda kv: where(kv[1])):
        run = r["runs"][-1]
        target = os.path.relpath(r["page"], os.path.dirname(page)) if r["page"] != page else ""
        target += "#" + r["section"] if r.get("section") else ""
        q = f"[{r['question']}]({target or '#'})"
        status = run.get("status", "current")
        rows.append([q, run["date"], f"`{run['command']}`", run["libtorch"], status])
    t = {"columns": ["question", "measured", "command", "libtorch", "status"], "rows": rows}
    return "\n" + "\n".join(table(t))


def render_page(src, page, recs, errs):
    path = os.path.join(src, page)
    with open(path, encoding="utf-8") as fp:
        text = fp.read()

    def one(m):
        rid = m.group(1)
        if rid not in recs:
            errs.append(f"{page}: a results block names {rid!r}: no bench/results/{rid}.json")
            return m.group(0)
        if recs[rid]["page"] != page:
            errs.append(f"{page}: shows {rid!r}, whose record names the page {recs[rid]['page']}")
        return f"<!-- results: {rid} -->\n{block(rid, recs[rid], page)}<!-- /results: {rid} -->\n"

    new = BLOCK.sub(one, text)
    new = INDEX.sub(lambda m: f"<!-- results-index -->\n{index(recs, page, src)}<!-- /results-index -->\n", new)
    return text, new, {m.group(1) for m in BLOCK.finditer(new)}


def run(src, check):
    recs, errs = load(os.path.join(src, "bench", "results"))
    if errs:
        return errs
    shown, stale = set(), []
    docs = sorted("docs/" + f for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md"))
    for page in docs:
        old, new, ids = render_page(src, page, recs, errs)
        shown |= ids
        if old != new:
            if check:
                stale.append(f"{page}: a results block differs from its record; run bench/results/render.py")
            else:
                with open(os.path.join(src, page), "w", encoding="utf-8") as fp:
                    fp.write(new)
    for rid, r in recs.items():
        if rid not in shown:
            errs.append(f"bench/results/{rid}.json: no page shows it (add <!-- results: {rid} --> to {r['page']})")
    return errs + stale


def self_test():
    """A stale block, a block naming no record, a record without a date and a
    command that does not paste into a shell are all found."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "bench", "results"))
        os.makedirs(os.path.join(d, "docs"))
        rec = {"benchmark": "x", "question": "How fast is x?", "page": "docs/p.md",
               "runs": [{"date": "2026-01-02", "command": "bench/x", "libtorch": "1.13.1",
                         "machine": {"cpu": "Some CPU", "flags": "AVX2"},
                         "figures": [{"columns": ["a", "b"], "rows": [["1 ns", "2 ns"]]}]}]}
        with open(os.path.join(d, "bench", "results", "x.json"), "w") as fp:
            json.dump(rec, fp)
        page = os.path.join(d, "docs", "p.md")
        with open(page, "w") as fp:
            fp.write("# P\n<!-- results: x -->\nold\n<!-- /results: x -->\n")
        problems = []
        if not run(d, True):
            problems.append("a stale block was not found")
        if run(d, False) or run(d, True):
            problems.append("a rendered page does not check clean")
        with open(page) as fp:
            if "| 1 ns | 2 ns |" not in fp.read():
                problems.append("the figures are not on the page")
        with open(page, "a") as fp:
            fp.write("<!-- results: y -->\n<!-- /results: y -->\n")
        if not any("'y'" in e for e in run(d, True)):
            problems.append("a block naming no record was not found")
        del rec["runs"][0]["date"]
        with open(os.path.join(d, "bench", "results", "x.json"), "w") as fp:
            json.dump(rec, fp)
        if not any("date" in e for e in run(d, True)):
            problems.append("a run without a date was not found")
        rec["runs"][0]["date"] = "2026-01-02"
        rec["runs"][0]["command"] = "bench/x (from a fresh clone)"
        with open(os.path.join(d, "bench", "results", "x.json"), "w") as fp:
            json.dump(rec, fp)
        if not any("does not paste" in e for e in run(d, True)):
            problems.append("a command that does not paste into a shell was not found")
        return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        problems = self_test()
        for p in problems:
            print("render.py self-test:", p, file=sys.stderr)
        if problems:
            return 1
    errs = run(a.src, a.check)
    for e in errs:
        print(e, file=sys.stderr)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
