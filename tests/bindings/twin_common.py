"""What the twin tests share (go_lenet5_twin.py, vae_twins.py, dqn_twins.py,
char_lstm_twin.py, classify_image_twin.py): each runs an example written
with a binding (the twin) and the C program it copies, and asserts that the
two print the same lines and save the same bytes.

- options: the script's own options, the twin's command and the
  arguments both programs get, split at "--";
- run: a program's exit 77 (no node, Go, cargo, data...) is the test's skip,
  any other unexpected status ends the test with its output shown;
- kept / same_lines: the printed lines, throughput, paths and build noise
  aside, equal, or a side-by-side diff and a failure;
- same_bytes: two saved files equal byte for byte;
- learns: the C program's last line shows a falling loss.
"""
import argparse
import itertools
import os
import re
import subprocess
import sys


def command_line(doc, parts=3):
    """sys.argv split at its first parts-1 "--" into parts lists (the
    script's options first); without them the usage (doc) and exit 1."""
    argv, cuts = sys.argv[1:], []
    for _ in range(parts - 1):
        try:
            cuts.append(argv.index("--", cuts[-1] + 1 if cuts else 0))
        except ValueError:
            sys.exit(doc)
    bounds = [-1] + cuts + [len(argv)]
    return [argv[a + 1:b] for a, b in zip(bounds, bounds[1:])]


def options(doc, parts=3, **more):
    """The script's options parsed, then the twin's command (and, with
    parts=3, the arguments both programs get). Every script takes --c (the C
    program) and --work (a folder); more: --name-with-dashes=default, a
    float where the default is one, else a string."""
    own, *rest = command_line(doc, parts)
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True)
    ap.add_argument("--work", required=True)
    for name, default in more.items():
        ap.add_argument("--" + name.replace("_", "-"), default=default,
                        type=float if isinstance(default, float) else str)
    return (ap.parse_args(own), *rest)


def fresh(work, *names):
    """Paths of names in work (made if missing), none of them left from an
    earlier run, so that a program that saves nothing cannot pass."""
    os.makedirs(work, exist_ok=True)
    paths = {n: os.path.join(work, n) for n in names}
    for p in paths.values():
        if os.path.exists(p):
            os.remove(p)
    return paths


def run(cmd, what, expect=0, stderr=subprocess.STDOUT, timeout=None):
    """Runs cmd (stderr into stdout unless stderr=subprocess.PIPE) and
    returns the CompletedProcess. Exit 77 where success is expected is the
    test's skip (the program's last line says why); a status other than
    expect, or running past timeout seconds, fails the test."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"FAIL: {what} ran past {timeout} s")
    if p.returncode == 77 and expect == 0:
        lines = (p.stdout + (p.stderr or "")).strip().splitlines()
        print(lines[-1] if lines else f"skipped: {what}")
        sys.exit(77)
    if p.returncode != expect:
        print(*(s for s in (p.stdout, p.stderr) if s is not None))
        sys.exit(f"FAIL: {what} exited with {p.returncode}" + (f", expected {expect}" if expect else ""))
    return p


def kept(out, ignore=(), strip=None):
    """The lines of out both programs must print alike: blank lines and
    lines that open with a match of an ignore pattern (paths, headers, build
    noise) left out, and the matches of strip (throughput, time) cut."""
    return [re.sub(strip, "", ln) if strip else ln for ln in out.splitlines()
            if ln.strip() and not any(re.match(pat, ln) for pat in ignore)]


def same_lines(lt, lc, fail, label="twin", min_lines=0):
    """The twin's lines lt equal the C program's lc (and at least min_lines
    of them, so that two empty outputs do not pass); else they are shown
    side by side, "!=" on the lines that differ, and fail ends the test."""
    if lt != lc or len(lc) < min_lines:
        for x, y in itertools.zip_longest(lt, lc, fillvalue=""):
            print(f"{'  ' if x == y else '!='} {label}: {x:<60} C: {y}")
        sys.exit(f"FAIL: {fail}")


def same_bytes(path_twin, path_c, fail):
    """The two files are equal byte for byte (else fail, with both sizes,
    ends the test); returns the C program's file."""
    with open(path_twin, "rb") as f1, open(path_c, "rb") as f2:
        bt, bc = f1.read(), f2.read()
    if bt != bc:
        sys.exit(f"FAIL: {fail} ({len(bt)} and {len(bc)} bytes)")
    return bc


def learns(out, held_out, name, bound):
    """The C program's last line says the model learned: final_loss below
    initial_loss and the held_out loss (named name) below bound; else the
    test fails. Returns the line that says so."""
    m = dict(re.findall(r"(\w+)=(\S+)", out.strip().splitlines()[-1]))
    first, last, held = float(m["initial_loss"]), float(m["final_loss"]), float(m[held_out])
    if not (last < first and held < bound):
        sys.exit(f"FAIL: did not learn: loss {first} -> {last}, {name} {held} (bound {bound})")
    return f"learns: loss {first} -> {last}, {name} {held} < {bound}"
