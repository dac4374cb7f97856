"""Puts PyPI's torch into a fresh venv without downloading it again: hard
links to the files of torch and of everything it requires (by their RECORDs,
as pip installed them) from the site-packages of the Python running this (a
venv of scripts/torch-env) into DEST, the new venv's site-packages. pip's cache
here holds no torch wheel, and a download is about 3 GB. Run by run_wheel.sh.
Usage: python wheel_env.py DEST"""
import importlib.metadata as md
import os
import re
import shutil
import sys

from packaging.requirements import Requirement

dest = sys.argv[1]
# (name, extra) pairs: a requirement with extras (cuda-toolkit[cudart, ...])
# brings the requirements whose marker names one of them.
dists, done, todo = {}, set(), [("torch", "")]
while todo:
    name, extra = todo.pop()
    key = re.sub(r"[-_.]+", "-", name).lower()
    if (key, extra) in done:
        continue
    done.add((key, extra))
    d = dists[key] = md.distribution(name)
    for r in d.requires or []:
        req = Requirement(r)
        if req.marker is None or req.marker.evaluate({"extra": extra}):
            todo += [(req.name, e) for e in ["", *req.extras]]
files = 0
for d in dists.values():
    site = os.path.abspath(str(d.locate_file("")))
    for f in d.files or []:
        src = os.path.abspath(str(d.locate_file(f)))
        rel = os.path.relpath(src, site)
        if rel.startswith("..") or not os.path.isfile(src):  # console scripts in bin/: not needed
            continue
        dst = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        try:
            os.link(src, dst)
        except OSError:  # another file system
            shutil.copy2(src, dst)
        files += 1
print(f"torch {md.version('torch')} and {len(dists) - 1} packages it requires ({files} files) linked into {dest}")
