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


def _section(text, heading):
    """The text of a `## heading` section, up to the next `## `."""
    i = text.index(heading)
    j = text.find("\n## ", i + 1)
    return text[i:j if j >= 0 else len(text)]


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


def check_lists(src, api):
    errs = []
    readme = _read(src, "README.md")

    # The examples table: a row per examples/*.c and no row for a missing one.
    progs = sorted(f for f in os.listdir(os.path.join(src, "examples")) if f.endswith(".c"))
    table = _section(readme, "## Examples")
    rows = re.findall(r"^\| `examples/([\w.-]+\.c)` \|", table, re.M)
    for f in progs:
        if f not in rows:
            errs.append(f"README.md: the examples table has no row for `examples/{f}`")
    for f in rows:
        if f not in progs:
            errs.append(f"README.md: the examples table names `examples/{f}`, which is not in examples/")

    # The layout table: a row naming each top-level folder; its examples/ row
    # names every program and every subfolder of examples/.
    layout = _section(readme, "## Layout")
    for d in _top_dirs(src):
        if os.path.isdir(os.path.join(src, d)) and f"`{d}/" not in layout:
            errs.append(f"README.md: the layout table has no row for `{d}/`")
    row = next((ln for ln in layout.split("\n") if ln.startswith("| `examples/`")), "")
    for f in progs:
        if f"`{f}`" not in row:
            errs.append(f"README.md: the layout table's `examples/` row does not list `{f}`")
    for d in sorted(os.listdir(os.path.join(src, "examples"))):
        if os.path.isdir(os.path.join(src, "examples", d)) and f"`{d}/`" not in row:
            errs.append(f"README.md: the layout table's `examples/` row does not list `{d}/`")

    # The install list of "The two commands" against the scripts that install.
    m = re.search(r"`scripts/test`\s+adds what the tests compare with:(.*?)\):\n", readme, re.S)
    if not m:
        errs.append("README.md: the sentence listing what `scripts/test` adds is gone; update tests/docs/doc_lists.py")
    else:
        for n in _install_list(src):
            if not re.search(r"(?<![\w-])" + re.escape(n) + r"(?![\w-])", m.group(1), re.I):
                errs.append(f"README.md: what `scripts/test` adds does not name {n} (scripts/deps, scripts/torch-env)")

    # shim/README.md's folder table against shim/'s folders.
    shim_rows = set(re.findall(r"^\| `([\w-]+)/` \|", _read(src, "shim/README.md"), re.M))
    shim_dirs = {d for d in os.listdir(os.path.join(src, "shim")) if os.path.isdir(os.path.join(src, "shim", d))}
    for d in sorted(shim_dirs - shim_rows):
        errs.append(f"shim/README.md: the folder table has no row for `{d}/`")
    for d in sorted(shim_rows - shim_dirs):
        errs.append(f"shim/README.md: the folder table names `{d}/`, which is not in shim/")

    # scripts/package's kinds, and what README says it makes.
    pkg = _read(src, "scripts/package")
    kinds = re.search(r"^KINDS=\((.*?)\)", pkg, re.M).group(1).split()
    inst = _section(readme, "## Installing ctorch")
    m = re.search(r"`scripts/package ([\w|]+)`", inst)
    if not m or m.group(1).split("|") != kinds:
        errs.append(f"README.md: Installing ctorch should name scripts/package's kinds as "
                    f"`scripts/package {'|'.join(kinds)}`, not {m.group(0) if m else 'nothing'}")
    words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven"}
    if not re.search(rf"makes all\s+{words.get(len(kinds), len(kinds))}\s+kinds", inst):
        errs.append(f"README.md: Installing ctorch should say scripts/package with no argument "
                    f"makes all {words.get(len(kinds), len(kinds))} kinds")

    # Versions: the project's in artifact names; the PyPI torch the scripts use.
    ver = re.search(r"project\(ctorch VERSION ([0-9.]+)", _read(src, "CMakeLists.txt")).group(1)
    for i, ln in enumerate(readme.split("\n"), 1):
        for v in re.findall(r"\bctorch(?:-go|-sys)?-(\d+\.\d+\.\d+)", ln):
            if v != ver:
                errs.append(f"README.md:{i}: an artifact of version {v}; the project's is {ver} (CMakeLists.txt)")
    test_torch = re.search(r"CTORCH_TEST_TORCHES:-system ([0-9.]+)\}", _read(src, "scripts/test")).group(1)
    wheel_torch = re.search(r"CTORCH_WHEEL_TORCH:-([0-9.]+)\}", pkg).group(1)
    for pat, want, what in (
            (r"against PyPI's torch\s+(\d+\.\d+\.\d+)", test_torch, "scripts/test's PyPI torch"),
            (r"installed once into `~/\.cache/ctorch/torch-(\d+\.\d+\.\d+)`", test_torch, "scripts/test's venv"),
            (r"PyPI's\s+(\d+\.\d+\.\d+) by default, `CTORCH_WHEEL_TORCH`", wheel_torch, "the wheel's default torch")):
        m = re.search(pat, readme)
        if not m:
            errs.append(f"README.md: the sentence giving {what} ({pat!r}) is gone; update tests/docs/doc_lists.py")
        elif m.group(1) != want:
            errs.append(f"README.md:{readme.count(chr(10), 0, m.start()) + 1}: says {m.group(1)} for {what}; "
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
