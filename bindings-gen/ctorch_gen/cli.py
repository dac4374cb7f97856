"""What the generator's three commands share (generate.py: the operators,
generate_api.py: api.json, generate_bindings.py: the language packages):
their common options, reading inputs and writing outputs only when they
change (so CMake recompiles nothing needlessly)."""
from __future__ import annotations

import argparse
import os


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def write_if_changed(path: str, text: str) -> None:
    """Writes `text` to `path` (making its directory) unless the file already
    holds exactly that; the write goes through a temporary file and a rename,
    so a reader never sees half a file."""
    try:
        if read_text(path) == text:
            return
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def parser(doc: str | None, out_help: str, torch_version: str) -> argparse.ArgumentParser:
    """An argument parser with the options of the commands that read
    native_functions.yaml: --yaml, --out, --torch-version, --quiet."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--yaml", required=True, help="native_functions.yaml")
    ap.add_argument("--out", required=True, help=out_help)
    ap.add_argument("--torch-version", default=torch_version, help="MAJOR.MINOR.PATCH of the libtorch headers")
    ap.add_argument("--quiet", action="store_true")
    return ap
