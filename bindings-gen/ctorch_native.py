#!/usr/bin/env python3
"""Finds an installed libctorch or builds one from ctorch's sources, in the
order docs/packages.md gives (bindings-gen/native_lookup.json says the same
for code). Packages that carry ctorch's sources run it from their install or
build step (the npm package's install script, the Go module's setup command,
the Rust crate's build script); it needs only Python 3's standard library.

    ctorch_native.py find                    an installed library, else exit 1
    ctorch_native.py ensure --source DIR --prefix DIR [--version V]
                                             the installed one, else a build
                                             from DIR installed into --prefix

Prints, on its last line, one JSON object: how ("explicit", "pkg-config",
"built"), libdir, includedir, api_json (a built or pkg-config prefix's
api.json, else null), torch_version. Everything else goes to standard error,
starting with one message saying what was found and what is missing.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

MIN_CMAKE = (3, 18)


def log(msg):
    print(f"ctorch: {msg}", file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


# ---- the library: CTORCH_LIB, then pkg-config ------------------------------------

def find_installed(version=None):
    """{how, libdir, includedir, api_json, torch_version} of a libctorch the
    user installed, or None. CTORCH_LIB wins and is never passed over."""
    lib = os.environ.get("CTORCH_LIB")
    if lib:
        if not os.path.isfile(lib):
            raise SystemExit(f"ctorch: CTORCH_LIB={lib} is not a file")
        libdir = os.path.dirname(os.path.abspath(lib))
        prefix = os.path.dirname(libdir)
        return {"how": "explicit", "lib": lib, "libdir": libdir, "includedir": os.path.join(prefix, "include"),
                "api_json": _existing(os.path.join(prefix, "share", "ctorch", "api.json")), "torch_version": None}
    if not shutil.which("pkg-config"):
        return None
    if run(["pkg-config", "--exists", "ctorch"]).returncode != 0:
        return None
    libdir = run(["pkg-config", "--variable=libdir", "ctorch"]).stdout.strip()
    have = run(["pkg-config", "--modversion", "ctorch"]).stdout.strip()
    if version and have != version:
        log(f"pkg-config finds ctorch {have} in {libdir}, not {version}: not used")
        return None
    prefix = run(["pkg-config", "--variable=prefix", "ctorch"]).stdout.strip()
    return {"how": "pkg-config", "libdir": libdir,
            "includedir": run(["pkg-config", "--variable=includedir", "ctorch"]).stdout.strip(),
            "api_json": _existing(os.path.join(prefix, "share", "ctorch", "api.json")),
            "torch_version": run(["pkg-config", "--variable=torch_version", "ctorch"]).stdout.strip() or None}


def _existing(p):
    return p if os.path.isfile(p) else None


# ---- the libtorch to build against: explicit, the active Python's, the system's ---

def _python_torch(py):
    """torch's version as py imports it, or None. -E: pip's build isolation
    hides the environment's site-packages through PYTHONPATH, and this is
    the environment the user installs into."""
    try:
        r = run([py, "-E", "-c", "import torch; print(torch.__version__)"], timeout=300)
    except OSError:
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def find_libtorch():
    """(CTORCH_TORCH value, description, torch version or None)."""
    for var in ("LIBTORCH", "CTORCH_TORCH"):
        v = os.environ.get(var)
        if v:
            return v, f"${var}={v}", None
    env = os.environ.get("VIRTUAL_ENV") or os.environ.get("CONDA_PREFIX")
    candidates = [os.path.join(env, "bin", "python")] if env else []
    if shutil.which("python3"):
        candidates.append(shutil.which("python3"))
    for py in candidates:
        v = _python_torch(py) if os.path.exists(py) else None
        if v:
            return py, f"the torch {v} of {py}", v
    for cfg in glob.glob("/usr/lib/*/cmake/Torch/TorchConfig.cmake") + glob.glob("/usr/share/cmake/Torch/TorchConfig.cmake"):
        return "", f"the system's libtorch ({os.path.dirname(cfg)})", None
    return None, None, None


def missing_tools():
    """What a build needs and this machine lacks, one phrase each."""
    out = []
    cxx = os.environ.get("CXX") or "c++"
    if not shutil.which(cxx):
        out.append(f"a C++17 compiler ({cxx}: apt-get install g++)")
    cmake = shutil.which("cmake")
    if not cmake:
        out.append("CMake >= %d.%d (apt-get install cmake, or pip install cmake)" % MIN_CMAKE)
    else:
        m = re.search(r"(\d+)\.(\d+)", run([cmake, "--version"]).stdout)
        if not m or (int(m.group(1)), int(m.group(2))) < MIN_CMAKE:
            out.append("CMake >= %d.%d (this one is older)" % MIN_CMAKE)
    if run([sys.executable, "-c", "import yaml"]).returncode != 0:
        out.append(f"PyYAML for {sys.executable} (the generator reads native_functions.yaml: pip install pyyaml)")
    return out


def build(source, prefix, jobs=None):
    spec, desc, _ = find_libtorch()
    missing = missing_tools()
    if spec is None:
        missing.append("a libtorch: set LIBTORCH to one, install torch into the active Python environment "
                       "(pip install torch), or install the system's (apt-get install libtorch-dev python3-torch)")
    log("no installed libctorch (CTORCH_LIB unset; pkg-config ctorch finds none): building it from "
        f"{source}; libtorch: {desc or 'none found'}; missing: {', '.join(missing) or 'nothing'}")
    if missing:
        raise SystemExit(1)
    # The build folder sits in the sources as a checkout's build-*/ folders
    # do, and ccache (where installed) sees paths relative to it: a package's
    # copy of the sources then shares the objects a checkout compiled with
    # the same flags.
    bdir = os.path.join(source, "build-native")
    os.makedirs(bdir, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("CCACHE_BASEDIR", os.path.dirname(os.path.abspath(source)))
    cfg = ["cmake", "-S", source, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release", f"-DCTORCH_TORCH={spec}",
           f"-DCMAKE_INSTALL_PREFIX={prefix}", "-DCMAKE_INSTALL_LIBDIR=lib", "-DCTORCH_BUILD_TESTS=OFF",
           "-DCTORCH_BUILD_EXAMPLES=OFF", "-DCTORCH_BUILD_BENCH=OFF", "-DCTORCH_BUILD_PYTHON_BRIDGE=OFF"]
    # The library alone (its generated headers and api.json come with it),
    # not the bindings of every language a checkout's build generates.
    steps = [cfg, ["cmake", "--build", bdir, "--target", "ctorch", "-j", str(jobs or os.cpu_count() or 2)]]
    steps += [["cmake", "--install", bdir, "--component", c] for c in ("runtime", "dev")]
    for cmd in steps:
        log(" ".join(cmd))
        r = subprocess.run(cmd, env=env, stdout=sys.stderr, stderr=sys.stderr)
        if r.returncode != 0:
            raise SystemExit(f"ctorch: the build failed ({' '.join(cmd[:2])}); its folder is {bdir}")
    api = os.path.join(prefix, "share", "ctorch", "api.json")
    tv = json.load(open(api)).get("torch_version") if os.path.isfile(api) else None
    return {"how": "built", "libdir": os.path.join(prefix, "lib"), "includedir": os.path.join(prefix, "include"),
            "api_json": _existing(api), "torch_version": tv}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("find", "ensure"))
    ap.add_argument("--source", help="ctorch's sources (the folder with CMakeLists.txt)")
    ap.add_argument("--prefix", help="where a build installs (lib/, include/, share/ctorch/)")
    ap.add_argument("--version", help="the ctorch version an installed library must have")
    ap.add_argument("--jobs", type=int)
    a = ap.parse_args(argv)
    found = find_installed(a.version)
    if found is None and a.mode == "ensure":
        if not (a.source and a.prefix):
            ap.error("ensure needs --source and --prefix")
        built = os.path.join(a.prefix, "share", "ctorch", "api.json")
        found = (dict(how="built", libdir=os.path.join(a.prefix, "lib"), includedir=os.path.join(a.prefix, "include"),
                      api_json=built, torch_version=json.load(open(built)).get("torch_version"))
                 if os.path.isfile(built) else build(os.path.abspath(a.source), os.path.abspath(a.prefix), a.jobs))
    if found is None:
        log("no installed libctorch: CTORCH_LIB is unset and pkg-config finds no ctorch.pc")
        return 1
    log(f"libctorch: {found['how']}, {found['libdir']}")
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
