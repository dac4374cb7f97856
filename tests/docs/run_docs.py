#!/usr/bin/env python3
"""Runs every fenced code block of the documentation (README.md, docs/*.md and
every folder README) against a build, as a newcomer would, and checks the
counts and lists the docs state against the build. The syntax of the
directives (`<!-- doc-test: ... -->` on the line before a fence) and what is
done with each language: tests/docs/README.md.

Usage: run_docs.py --src SRC --build BUILD [--cc CC] [--torch-python PY]
                   [--only FILE[:LINE]] [--keep]
Exit: 0 when every block that could run passed, 1 naming each failing block
(file:line), 2 on a usage error, 77 (skipped) with --skip REASON.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import doc_checks

DIRECTIVE = re.compile(r"^<!-- doc-test: (\w[\w-]*)(?: (.*?))? -->$")
KNOWN = {"excerpt", "fragment", "env", "generated", "rustdoc"}
# Languages by fence tag; untagged blocks are text (output, file formats), not code.
LANGS = {"c": "c", "python": "python", "py": "python", "js": "js", "javascript": "js", "go": "go",
         "sh": "sh", "bash": "sh", "shell": "sh", "json": "json", "cmake": "cmake", "": "text", "text": "text",
         # No runner: excerpts only (tests/package's run_cargo.sh runs the README's Rust program,
         # tests/bindings/java_fresh_project.sh the first Java one with bindings-java.md's pom).
         "rust": "rust", "toml": "toml", "java": "java", "xml": "xml"}
README_DIRS = ["shim", "bindings-gen", "examples", "bench", "tests", "fuzz", "scripts"]


class Block:
    def __init__(self, path, line, lang, text, directive, arg):
        self.path, self.line, self.lang, self.text = path, line, lang, text
        self.directive, self.arg = directive, arg
        self.status, self.why, self.output = None, "", ""

    @property
    def where(self):
        return f"{self.path}:{self.line}"


def doc_files(src):
    files = ["README.md"] + sorted("docs/" + f for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md"))
    for d in README_DIRS:
        for root, dirs, names in os.walk(os.path.join(src, d)):
            dirs[:] = sorted(x for x in dirs if not x.startswith((".", "build")))
            if "README.md" in names:
                files.append(os.path.relpath(os.path.join(root, "README.md"), src))
    return files


def parse(src, rel, errors):
    """The fenced blocks of one file (``` fences, possibly indented)."""
    blocks, lines = [], open(os.path.join(src, rel), encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```\s*([\w+-]*)\s*$", lines[i])
        if not m:
            if lines[i].startswith("<!-- doc-test:") and not DIRECTIVE.match(lines[i]):
                errors.append(f"{rel}:{i + 1}: malformed directive {lines[i]!r}")
            i += 1
            continue
        indent, tag, start = m.group(1), m.group(2).lower(), i
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        i += 1
        prev = lines[start - 1].strip() if start > 0 else ""
        d = DIRECTIVE.match(prev)
        directive, arg = (d.group(1), d.group(2) or "") if d else (None, "")
        if directive and directive not in KNOWN:
            errors.append(f"{rel}:{start}: unknown directive {directive!r} (known: {', '.join(sorted(KNOWN))})")
        if tag not in LANGS:
            errors.append(f"{rel}:{start + 1}: unknown fence language {tag!r}")
            continue
        blocks.append(Block(rel, start + 1, LANGS[tag], "\n".join(body) + "\n", directive, arg))
    return blocks


def run(cmd, cwd, env=None, timeout=300, stdin=None):
    t = time.time()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, text=True, shell=isinstance(cmd, str), stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout, time.time() - t
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or b"").decode(errors="replace") + f"\n[timed out after {timeout} s]", timeout


def expected_outputs(b):
    """What the block says it prints: the trailing comment of a print line."""
    out = []
    for ln in b.text.split("\n"):
        if b.lang == "python" and re.search(r"\bprint\(", ln):
            m = re.search(r"\)\s*#\s*(.+?)\s*$", ln)
        elif b.lang in ("js", "go", "c") and re.search(r"console\.log\(|fmt\.Print|\bputs\(|\bprintf\(", ln):
            m = re.search(r"\)\s*;?\s*(?://\s*(.+?)|/\*\s*prints:?\s*(.+?)\s*\*/)\s*$", ln)
        else:
            m = None
        # Only a comment that reads as output counts (`# 30.0 [...]`, `// prints ...`),
        # not one that explains the line (`// Python's repr`).
        if m:
            e = next(g for g in m.groups() if g)
            e = e[len("prints"):].strip(" :") if e.startswith("prints") else e
            e = re.sub(r"\s+\([a-z][^()]*\)$", "", e)  # a remark after the output: "(rows on lines)"
            if m.group(0).lstrip(") ;#/*").startswith("prints") or re.match(r"[-+0-9\[\]({'\"]", e):
                out.append(e)
    return out


def check_output(b, rc, out):
    b.output = out
    if rc != 0:
        return f"exit status {rc}"
    flat = " ".join(out.split())
    for e in expected_outputs(b):
        if " ".join(e.split()) not in flat:
            return f"the text says it prints {e!r}; it printed {out.strip()[-300:]!r}"
    return None


def lm_model():
    """(path, None) of the chat model the README programs run (they read it
    from $CTORCH_LM_MODEL), or (None, why it is absent): tests/bindings/lm_model.py."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings"))
    import lm_model as finder
    return finder.find()


class Runner:
    def __init__(self, a):
        self.a, self.src, self.build = a, a.src, a.build
        self.lm_path, self.lm_why = lm_model()
        if self.lm_path:
            os.environ["CTORCH_LM_MODEL"] = self.lm_path  # every block's process inherits it
        self.tmp = tempfile.mkdtemp(prefix="ctorch-docs-")
        self.api = json.load(open(os.path.join(self.build, "api.json")))
        self.bindings = os.path.join(self.build, "bindings")
        self.prefix = None

    # ---- the install every C block compiles against
    def install(self):
        self.prefix = os.path.join(self.tmp, "prefix")
        rc, out, dt = run(["cmake", "--install", self.build, "--prefix", self.prefix], self.tmp)
        if rc:
            sys.exit(f"FAIL: cmake --install {self.build} failed:\n{out}")
        pcs = [os.path.join(r, f) for r, _, fs in os.walk(self.prefix) for f in fs if f == "ctorch.pc"]
        self.pcdir = os.path.dirname(pcs[0])
        self.libdir = os.path.dirname(self.pcdir)
        env = dict(os.environ, PKG_CONFIG_PATH=self.pcdir)
        self.cflags = {}
        for pkg in ("ctorch", "ctorch-python"):
            p = subprocess.run(["pkg-config", "--cflags", "--libs", pkg], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
            if p.returncode == 0:
                self.cflags[pkg] = p.stdout.split()
        print(f"installed into {self.prefix} ({dt:.1f} s); pkg-config ctorch: {' '.join(self.cflags['ctorch'])}")

    # ---- C
    def c_source(self, b):
        """A complete program as written, or a fragment wrapped as the body of
        main() after the directive's declarations (#includes and file-scope
        `static` functions hoisted)."""
        if b.directive != "fragment":
            return b.text
        hoisted, top, body, in_top = [], [], [], False
        for ln in b.text.split("\n"):
            if ln.startswith("#include"):
                hoisted.append(ln)
            elif in_top or ln.startswith("static "):
                top.append(ln)
                in_top = ln != "}"
            else:
                body.append(ln)
        prelude = ["#include <math.h>", "#include <stdint.h>", "#include <stdio.h>", "#include <stdlib.h>",
                   "#include <ctorch.h>"]
        if "ctorch_py_" in b.text:
            prelude.append("#include <ctorch_python.h>")
        check = ("#define CHECK(x) do { if ((x) != CTORCH_OK) { fprintf(stderr, \"%s\\n\", ctorch_last_error()); "
                 "exit(1); } } while (0)")
        return "\n".join(prelude + [check] + hoisted + top + ["int main(void) {", b.arg] + body +
                         ["  return 0;", "}", ""])

    def c_block(self, b, n):
        pkg = "ctorch-python" if "ctorch_py_" in b.text else "ctorch"
        if pkg not in self.cflags:
            return "skipped", f"pkg-config {pkg} is not installed by this build"
        d = os.path.join(self.tmp, f"c{n}")
        os.makedirs(d)
        open(os.path.join(d, "doc.c"), "w").write(self.c_source(b))
        flags = ["-Wall", "-Werror=implicit-function-declaration", "-Werror=incompatible-pointer-types",
                 "-Werror=int-conversion", "-I" + os.path.join(self.src, "examples")]
        if b.directive == "fragment":
            rc, out, _ = run([self.a.cc, *flags, "-Wno-unused", "-Wno-uninitialized", "-Wno-maybe-uninitialized",
                              "-fsyntax-only", "doc.c", *self.cflags[pkg]], d)
            b.output = out
            return ("compiled", "") if rc == 0 else ("FAIL", "does not compile (as the body of main after: "
                                                             f"{b.arg})")
        rc, out, _ = run([self.a.cc, *flags, "doc.c", "-o", "doc", *self.cflags[pkg]], d)
        if rc:
            b.output = out
            return "FAIL", "does not compile"
        rc, out, dt = run(["./doc"], d, env=dict(os.environ, LD_LIBRARY_PATH=self.libdir), timeout=120)
        why = check_output(b, rc, out)
        return ("FAIL", why) if why else ("ran", f"{dt:.1f} s")

    # ---- Python: the build's binding, and the Python whose torch matches
    def py_block(self, b, n):
        py = self.a.torch_python
        if not py:
            if re.search(r"^\s*(import|from) torch\b|import .*\btorch\b", b.text, re.M):
                return "skipped", "needs torch: no CTORCH_TORCH_PYTHON in this build"
            py = sys.executable
        d = os.path.join(self.tmp, f"py{n}")
        os.makedirs(d)
        open(os.path.join(d, "doc.py"), "w").write(b.text)
        env = dict(os.environ, PYTHONPATH=os.path.join(self.bindings, "python"), PYTHONDONTWRITEBYTECODE="1",
                   OMP_NUM_THREADS="1")
        rc, out, dt = run([py, "doc.py"], d, env=env, timeout=180)
        why = check_output(b, rc, out)
        return ("FAIL", why) if why else ("ran", f"{dt:.1f} s")

    # ---- Node.js: require('ctorch') and require('./build/bindings/node') both resolve to the build's package
    def js_block(self, b, n):
        if not shutil.which("node"):
            return "skipped", "node is not installed"
        pkg = os.path.join(self.bindings, "node")
        if not os.path.exists(os.path.join(pkg, "node_modules", "koffi", "package.json")):
            rc, out, _ = run([os.path.join(self.src, "tests", "bindings", "run_node.sh"), pkg, "-e", "0"], self.tmp)
            if rc:
                return "skipped", "koffi could not be installed: " + out.strip().split("\n")[-1]
        d = os.path.join(self.tmp, f"js{n}")
        os.makedirs(os.path.join(d, "node_modules"))
        os.symlink(self.build, os.path.join(d, "build"))
        os.symlink(pkg, os.path.join(d, "node_modules", "ctorch"))
        open(os.path.join(d, "doc.js"), "w").write(b.text)
        rc, out, dt = run(["node", "doc.js"], d, timeout=120)
        why = check_output(b, rc, out)
        return ("FAIL", why) if why else ("ran", f"{dt:.1f} s")

    # ---- Go: a block without `package` is the body of main()
    def go_tool(self):
        return shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)

    def go_block(self, b, n):
        go = self.go_tool()
        if not go:
            return "skipped", "no Go toolchain (go, /usr/local/go/bin/go)"
        mod = os.path.join(self.bindings, "go")
        d = os.path.join(self.tmp, f"go{n}")
        os.makedirs(d)
        gomod = open(os.path.join(mod, "go.mod")).read()
        gover = re.search(r"^go (\S+)", gomod, re.M).group(1)
        path = re.search(r"^module (\S+)", gomod, re.M).group(1)  # github.com/ctorch/ctorch-go
        open(os.path.join(d, "go.mod"), "w").write(
            f"module doctest\n\ngo {gover}\n\nrequire {path} v0.0.0\n\nreplace {path} => {mod}\n")
        text = b.text
        if not re.search(r"^package ", text, re.M):
            imports = [p for p, use in (('"fmt"', r"\bfmt\."), ('"os"', r"\bos\."), (f'ctorch "{path}"', r"\bctorch\."),
                                        (f'"{path}/nn"', r"\bnn\."), ('"context"', r"\bcontext\."), ('"log"', r"\blog\."),
                                        (f'"{path}/lm"', r"\blm\.")) if re.search(use, text)]
            text = ("package main\n\nimport (\n" + "".join(f'\t{p}\n' for p in imports) + ")\n\n" +
                    "func main() {\n" + text + "}\n")
        open(os.path.join(d, "main.go"), "w").write(text)
        env = dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN="local", GOPROXY="off", CGO_ENABLED="1")
        rc, out, dt = run([go, "build", "-o", "doc", "."], d, env=env, timeout=600)
        if rc:
            b.output = out
            return "FAIL", "does not build (go build)"
        rc, out, dt2 = run(["./doc"], d, timeout=120)
        why = check_output(b, rc, out)
        return ("FAIL", why) if why else ("ran", f"build {dt:.1f} s, run {dt2:.1f} s")

    # ---- CMake: a consumer project around the block, building the file's C program before it
    def cmake_block(self, b, n):
        m = re.search(r"add_executable\((\w+)(?: PRIVATE)? ([\w.]+)\)", b.text)
        prog = next((p for p in reversed(self.blocks) if p.path == b.path and p.line < b.line and p.lang == "c"
                     and p.directive is None and re.search(r"\bmain\(", p.text)), None)
        if not m or prog is None:
            return "FAIL", "a cmake block needs add_executable(NAME FILE.c) and a C program earlier in its file"
        d = os.path.join(self.tmp, f"cmake{n}")
        os.makedirs(d)
        open(os.path.join(d, m.group(2)), "w").write(prog.text)
        open(os.path.join(d, "CMakeLists.txt"), "w").write(
            "cmake_minimum_required(VERSION 3.18)\nproject(doc C)\n" + b.text)
        rc, out, dt = run(["cmake", "-S", d, "-B", os.path.join(d, "b"), "-DCMAKE_C_COMPILER=" + self.a.cc,
                           "-DCMAKE_PREFIX_PATH=" + self.prefix], d)
        if rc == 0:
            rc, out, dt2 = run(["cmake", "--build", os.path.join(d, "b")], d)
        if rc:
            b.output = out
            return "FAIL", "the CMake project does not configure or build"
        rc, out, dt3 = run([os.path.join(d, "b", m.group(1))], d, env=dict(os.environ, LD_LIBRARY_PATH=self.libdir))
        why = check_output(prog, rc, out)
        return ("FAIL", why) if why else ("ran", f"{prog.where}'s program built with CMake")

    # ---- shell: from the source root, with the directive's environment
    def sh_block(self, b, n):
        env = dict(os.environ)
        if b.directive == "env":
            for kv in b.arg.split():
                k, v = kv.split("=", 1)
                env[k] = v.replace("{build}", self.build)
        rc, out, dt = run(["bash", "-e", "-o", "pipefail", "-c", b.text], self.src, env=env, timeout=300)
        why = check_output(b, rc, out)
        return ("FAIL", why) if why else ("ran", f"{dt:.1f} s")

    # ---- generated code shown in the docs: each piece between `...` lines is in the generated file
    def generated_block(self, b, n):
        path = os.path.join(self.build, b.arg)
        if not os.path.exists(path):
            return "FAIL", f"{b.arg} is not in the build"
        have = open(path).read()
        pieces, cur = [], []
        for ln in b.text.rstrip("\n").split("\n") + ["..."]:
            if ln.strip().startswith("..."):
                if cur:
                    pieces.append("\n".join(cur))
                cur = []
            else:
                cur.append(ln)
        pos = 0
        for p in pieces:
            at = have.find(p, pos)
            if at < 0:
                return "FAIL", f"not in {b.arg} as shown (from: {p.strip().split(chr(10))[0][:80]!r})"
            pos = at + len(p)
        return "checked", f"{len(pieces)} piece(s) found in {b.arg}"

    def rustdoc_block(self, b):
        """A Rust block of the ctorch crate's README that runs as one of the
        crate's doc tests (ctest binding_rust_doctest): the generator put it,
        whole, in the build's src/readme_doctests.rs."""
        if b.lang != "rust":
            return "FAIL", "the rustdoc directive marks ```rust blocks only"
        path = os.path.join(self.bindings, "rust", "ctorch", "src", "readme_doctests.rs")
        if not os.path.exists(path):
            return "FAIL", f"no {os.path.relpath(path, self.build)} in the build (bindings-gen/ctorch_gen/rust/package.py)"
        want = "\n".join(f"/// {ln}".rstrip() for ln in b.text.rstrip("\n").split("\n"))
        if want not in open(path, encoding="utf-8").read():
            return "FAIL", f"not a doc test of the build's crate (not in {os.path.relpath(path, self.build)}): rebuild"
        return "checked", "a doc test of the ctorch crate (binding_rust_doctest runs it)"

    def one(self, b, n):
        if b.directive == "excerpt":
            return "excerpt", ""
        if "CTORCH_LM_MODEL" in b.text and not self.lm_path and b.directive != "rustdoc":
            return "skipped", f"a language-model program: {self.lm_why}"
        if b.directive == "generated":
            return self.generated_block(b, n)
        if b.directive == "rustdoc":
            return self.rustdoc_block(b)
        if b.lang == "text":
            return "text", "output or a format, not code"
        f = {"c": self.c_block, "python": self.py_block, "js": self.js_block, "go": self.go_block,
             "sh": self.sh_block, "cmake": self.cmake_block}.get(b.lang)
        if f is None:
            return "FAIL", f"a {b.lang} block: mark it `<!-- doc-test: excerpt -->` or make it runnable"
        return f(b, n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--torch-python", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--skip", default="", help="report the test skipped (exit 77) for this reason")
    a = ap.parse_args()
    if a.skip:
        print("skipped: " + a.skip)
        return 77
    a.src, a.build = os.path.abspath(a.src), os.path.abspath(a.build)
    t0 = time.time()
    errors, blocks = [], []
    for f in doc_files(a.src):
        blocks += parse(a.src, f, errors)
    if a.only:
        blocks = [b for b in blocks if b.where == a.only or b.path == a.only]
    r = Runner(a)
    r.blocks = blocks
    r.install()
    # Go builds share one cache and C compiles are quick: run blocks two at a time
    # (the project's machines have two cores), Go ones one after another.
    go_blocks = [b for b in blocks if b.lang == "go" and b.directive not in ("excerpt", "generated")]
    others = [b for b in blocks if b not in go_blocks]
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        futs = {ex.submit(r.one, b, i): b for i, b in enumerate(others)}
        gofut = ex.submit(lambda: [(b, r.one(b, 1000 + i)) for i, b in enumerate(go_blocks)])
        for fu, b in futs.items():
            b.status, b.why = fu.result()
        for b, res in gofut.result():
            b.status, b.why = res
    per = {}
    failed = []
    for b in blocks:
        print(f"{b.status:8} {b.where} {b.lang}{(': ' + b.why) if b.why else ''}")
        c = per.setdefault(b.path, {})
        c[b.status] = c.get(b.status, 0) + 1
        if b.status == "FAIL":
            failed.append(b)
    for b in failed:
        print(f"\n---- FAIL {b.where} ({b.lang}): {b.why}\n{b.output.strip()[-3000:]}")
    print("\nper file (ran: executed and output checked; compiled: a fragment, compiled against the install;"
          " checked: shown generated code found in the build):")
    kinds = ["ran", "compiled", "checked", "excerpt", "skipped", "text", "FAIL"]
    for path, c in per.items():
        print(f"  {path}: " + ", ".join(f"{c[k]} {k}" for k in kinds if c.get(k)))
    tot = {k: sum(c.get(k, 0) for c in per.values()) for k in kinds}
    print("total: " + ", ".join(f"{v} {k}" for k, v in tot.items()) + f" of {len(blocks)} blocks")
    if not a.only:
        errors += doc_checks.check_all(a.src, a.build, r.api, doc_files(a.src))
    for e in errors:
        print("FAIL " + e)
    print(f"docs_run: {time.time() - t0:.1f} s")
    if not a.keep:
        shutil.rmtree(r.tmp, ignore_errors=True)
    else:
        print("kept " + r.tmp)
    if failed or errors:
        print(f"docs_run: {len(failed)} block(s) failed, {len(errors)} other problem(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
