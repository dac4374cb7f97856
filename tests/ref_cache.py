"""References kept between test runs, in the user's cache.

What a reference package computes from inputs that do not change (the
logits transformers gives for a model file, the ids its tokenizers give for
a corpus) is stored under a key that hashes everything that could change
it: the input files' bytes, the reference packages' versions, the test
code's own sources. A later run, the next libtorch's suite of the same run
or a fresh clone on the same machine, then compares with the stored result
instead of loading the reference package's model again. A changed input,
package or test makes a new key, so a stale result is never read.

Where: ${CTORCH_CACHE:-${XDG_CACHE_HOME:-~/.cache}/ctorch}/refs/ (the cache
the torch venvs live in). Deleting that folder recomputes every reference.
"""
import hashlib
import os
import shutil
import tempfile


def root():
    base = os.environ.get("CTORCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ctorch")
    return os.path.join(base, "refs")


def file_digest(path):
    """sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def key(*parts, files=()):
    """A hex key of the parts (their repr) and the files' contents."""
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode() + b"\0")
    for f in files:
        h.update(file_digest(f).encode() + b"\0")
    return h.hexdigest()[:24]


def folder(name, k, make):
    """The cached folder name-k, made by make(tmp_folder) where absent.
    make fills a fresh temporary folder; it becomes the cached one in one
    rename, so a test running beside this one sees all of it or none. Where
    the cache cannot be written, make's folder is used (and kept) as is."""
    final = os.path.join(root(), f"{name}-{k}")
    if os.path.isdir(final):
        return final
    try:
        os.makedirs(root(), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{name}-", dir=root())
    except OSError:
        tmp = tempfile.mkdtemp(prefix=f"ctorch-{name}-")
        make(tmp)
        return tmp
    try:
        make(tmp)
        os.rename(tmp, final)
    except OSError:
        # Another run made it first (the rename found it there), or the
        # cache is not writable past mkdtemp: use whichever exists.
        if os.path.isdir(final):
            shutil.rmtree(tmp, ignore_errors=True)
            return final
        return tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
