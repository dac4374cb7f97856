"""Lists and version figures the docs state that the source tree knows:
the examples table, the layout table, what scripts/test installs, the
folder tables, scripts/package's kinds, the versions in artifact names and
api.json's format. Each check reads both sides from the files themselves,
so a new example, folder, package or artifact kind fails here until the docs
name it. Called by doc_checks.check_all; each error names the file and what
to write."""
import json
import os
import re
import subprocess


def _read(src, rel):
    with open(os.path.join(src, rel), encoding="utf-8") as f:
        return f.read()


def section(text, heading):
    """The text of the `## ` section whose title matches the regular
    expression heading, up to the next `## ` ("" when there is none)."""
    m = re.search(r"^## " + heading, text, re.M)
    if not m:
        return ""
    j = text.find("\n## ", m.start() + 1)
    return text[m.start():j if j >= 0 else len(text)]


def _top_dirs(src):
    """The repository's top-level folders: git's tracked ones where src is a
    checkout (build folders, dist/ and runs/ are not), else the folders on
    disk but build*, dist and runs."""
    try:
        out = subprocess.run(["git", "-C", src, "ls-files"], capture_output=True, text=True, check=True).stdout
        tops = {ln.split("/", 1)[0] for ln in out.splitlines() if "/" in ln}
        if tops:
            return sorted(t for t in tops if not t.startswith("."))
    except (OSError, subprocess.CalledProcessError):
        pass
    return sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)) and not d.startswith(".")
                  and not d.startswith("build") and d not in ("dist", "runs"))


def _install_list(src):
    """What scripts/test installs for the tests to compare with: the PyPI
    reference packages of scripts/deps (its `installing: NAME==` lines) and
    scripts/torch-env (ref_pkgs, tv_pkg), and the Debian python3-* packages
    of `scripts/deps --test`, by their Python names."""
    names = set()
    env = _read(src, "scripts/torch-env")
    m = re.search(r"^ref_pkgs=\((.*?)\)", env, re.M)
    names.update(re.sub(r"[=<>!].*", "", p) for p in m.group(1).split()) if m else None
    m = re.search(r"^tv_pkg=(\S+)", env, re.M)
    if m:
        names.add(re.sub(r"[=<>!].*", "", m.group(1)))
    deps = _read(src, "scripts/deps")
    names.update(re.findall(r"installing: ([A-Za-z0-9_.-]+)==", deps))
    m = re.search(r"^\(\(tests\)\) && pkgs\+=\((.*?)\)", deps, re.M)
    debian_names = {"pil": "pillow"}
    for p in (m.group(1).split() if m else []):
        if p.startswith("python3-") and p not in ("python3-venv", "python3-pip"):
            n = p[len("python3-"):]
            names.add(debian_names.get(n, n))
    return sorted(n.lower() for n in names)


# Where a user copies an artifact's name: each must carry the project's version.
VERSIONED_DOCS = ["README.md", "docs/install.md", "docs/abi.md", "docs/api-json.md", "bindings-gen/go/README.md",
                  "bindings-gen/python/README.md", "bindings-gen/rust/ctorch/README.md"]


def check_lists(src, api):
    errs = []
    readme = _read(src, "README.md")
    install = _read(src, "docs/install.md")

    # The examples table (examples/README.md): a row per examples/*.c and no row for a missing one.
    progs = sorted(f for f in os.listdir(os.path.join(src, "examples")) if f.endswith(".c"))
    table = section(_read(src, "examples/README.md"), "The examples")
    rows = re.findall(r"^\| `examples/([\w.-]+\.c)` \|", table, re.M)
    for f in progs:
        if f not in rows:
            errs.append(f"examples/README.md: the examples table has no row for `examples/{f}`")
    for f in rows:
        if f not in progs:
            errs.append(f"examples/README.md: the examples table names `examples/{f}`, which is not in examples/")

    # The layout table (docs/architecture.md): a row naming each top-level
    # folder; its examples/ row names every program and every subfolder of examples/.
    layout = section(_read(src, "docs/architecture.md"), r"(?:\d+\. )?Layout\b")
    for d in _top_dirs(src):
        if os.path.isdir(os.path.join(src, d)) and f"`{d}/" not in layout:
            errs.append(f"docs/architecture.md: the layout table has no row for `{d}/`")
    row = next((ln for ln in layout.split("\n") if ln.startswith("| `examples/`")), "")
    for f in progs:
        if f"`{f}`" not in row:
            errs.append(f"docs/architecture.md: the layout table's `examples/` row does not list `{f}`")
    for d in sorted(os.listdir(os.path.join(src, "examples"))):
        if os.path.isdir(os.path.join(src, "examples", d)) and f"`{d}/`" not in row:
            errs.append(f"docs/architecture.md: the layout table's `examples/` row does not list `{d}/`")

    # The install list (docs/install.md) against the scripts that install.
    m = re.search(r"`scripts/test`\s+adds what the tests compare with:(.*?)\)\.\n", install, re.S)
    if not m:
        errs.append("docs/install.md: the sentence listing what `scripts/test` adds is gone; update tests/docs/doc_lists.py")
    else:
        for n in _install_list(src):
            if not re.search(r"(?<![\w-])" + re.escape(n) + r"(?![\w-])", m.group(1), re.I):
                errs.append(f"docs/install.md: what `scripts/test` adds does not name {n} (scripts/deps, scripts/torch-env)")

    # shim/README.md's folder table against shim/'s folders.
    shim_rows = set(re.findall(r"^\| `([\w-]+)/` \|", _read(src, "shim/README.md"), re.M))
    shim_dirs = {d for d in os.listdir(os.path.join(src, "shim")) if os.path.isdir(os.path.join(src, "shim", d))}
    for d in sorted(shim_dirs - shim_rows):
        errs.append(f"shim/README.md: the folder table has no row for `{d}/`")
    for d in sorted(shim_rows - shim_dirs):
        errs.append(f"shim/README.md: the folder table names `{d}/`, which is not in shim/")

    # scripts/package's kinds, and what docs/install.md says it makes.
    pkg = _read(src, "scripts/package")
    kinds = re.search(r"^KINDS=\((.*?)\)", pkg, re.M).group(1).split()
    inst = section(install, "Packages")
    m = re.search(r"`scripts/package ([\w|]+)`", inst)
    if not m or m.group(1).split("|") != kinds:
        errs.append(f"docs/install.md: Packages should name scripts/package's kinds as "
                    f"`scripts/package {'|'.join(kinds)}`, not {m.group(0) if m else 'nothing'}")
    words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven"}
    if not re.search(rf"makes all\s+{words.get(len(kinds), len(kinds))}\s+kinds", inst):
        errs.append(f"docs/install.md: Packages should say scripts/package with no argument "
                    f"makes all {words.get(len(kinds), len(kinds))} kinds")

    # Versions: the project's in artifact names (wherever a user copies one);
    # the PyPI torch the scripts use.
    ver = re.search(r"project\(ctorch VERSION ([0-9.]+)", _read(src, "CMakeLists.txt")).group(1)
    for rel in VERSIONED_DOCS:
        for i, ln in enumerate(_read(src, rel).split("\n"), 1):
            for v in re.findall(r"\bctorch(?:-go|-sys)?[-@]v?(\d+\.\d+\.\d+)|\blibctorch\.so\.(\d+\.\d+\.\d+)", ln):
                v = v[0] or v[1]
                if v != ver:
                    errs.append(f"{rel}:{i}: an artifact of version {v}; the project's is {ver} (CMakeLists.txt)")
    test_torch = re.search(r"CTORCH_TEST_TORCHES:-system ([0-9.]+)\}", _read(src, "scripts/test")).group(1)
    wheel_torch = re.search(r"CTORCH_WHEEL_TORCH:-([0-9.]+)\}", pkg).group(1)
    for rel, text in (("README.md", readme), ("docs/install.md", install)):
        for m in re.finditer(r"(?:against|and) PyPI's torch\s+(\d+\.\d+\.\d+)", text):
            if m.group(1) != test_torch:
                errs.append(f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: says {m.group(1)} for scripts/test's "
                            f"PyPI torch; the script uses {test_torch}")
    for pat, want, what in (
            (r"installed once into\s+`~/\.cache/ctorch/torch-(\d+\.\d+\.\d+)`", test_torch, "scripts/test's venv"),
            (r"PyPI's\s+(\d+\.\d+\.\d+) by default, `CTORCH_WHEEL_TORCH`", wheel_torch, "the wheel's default torch")):
        m = re.search(pat, install)
        if not m:
            errs.append(f"docs/install.md: the sentence giving {what} ({pat!r}) is gone; update tests/docs/doc_lists.py")
        elif m.group(1) != want:
            errs.append(f"docs/install.md:{install.count(chr(10), 0, m.start()) + 1}: says {m.group(1)} for {what}; "
                        f"the script uses {want}")

    # docs/api-json.md: the format version row, and the Linear entry whole.
    bind = _read(src, "docs/api-json.md")
    m = re.search(r'^\| `format`, `format_version`, `format_minor` \| `"ctorch-api"`, `(\d+)`, `(\d+)`', bind, re.M)
    have = (int(m.group(1)), int(m.group(2))) if m else None
    want = (api["format_version"], api.get("format_minor", 0))
    if have != want:
        errs.append(f"docs/api-json.md: the format row says {have}; api.json is format {want[0]}.{want[1]}")
    m = re.search(r"```json\n(\{\"kind\": \"Linear\",.*?)```", bind, re.S)
    entry = next((k for k in api.get("nn_modules", []) if k["kind"] == "Linear"), None)
    if not m:
        errs.append("docs/api-json.md: the Linear entry of nn_modules is gone; update tests/docs/doc_lists.py")
    elif entry is not None and json.loads(m.group(1)) != entry:
        errs.append(f"docs/api-json.md: the Linear entry differs from api.json's; write {json.dumps(entry)}")
    return errs
