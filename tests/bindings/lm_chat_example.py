#!/usr/bin/env python3
"""A binding's chat program, shown in its documentation and kept as a file
(examples/java/Chat.java in docs/bindings-java.md): the documented block is
the file, verbatim, and the program, run with the real model, prints an
answer and then its finish reason ("stop" or "length") on the last line.

Usage: lm_chat_example.py DOC FILE -- CMD [ARGS...]
The text check runs always; the program runs where CTORCH_LM_MODEL names the
model (tests/bindings/lm_model.py sets it), else exit 77 (skipped) with the reason."""
import os
import subprocess
import sys


def main():
    doc, path = sys.argv[1], sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    prog = open(path, encoding="utf-8").read()
    if f"```{os.path.splitext(path)[1][1:]}\n{prog}```" not in open(doc, encoding="utf-8").read():
        print(f"FAIL: {doc} does not show {path} as it is (a fenced block holding the whole file)")
        return 1
    print(f"{doc} shows {path} verbatim")
    if not os.environ.get("CTORCH_LM_MODEL"):
        print("skipped:", os.environ.get("CTORCH_LM_MODEL_ABSENT", "CTORCH_LM_MODEL is not set"))
        return 77
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    out = p.stdout
    print(out[-3000:])
    if p.returncode == 77:  # the program's runner skips (a sanitizer build, no JDK): so does the test
        return 77
    lines = out.rstrip("\n").split("\n")
    if "not implement" in out and "ctorch_lm_" in out:
        print("skipped: the library does not implement the ctorch_lm_* functions yet")
        return 77
    if p.returncode != 0 or lines[-1] not in ("stop", "length") or not "".join(lines[:-1]).strip():
        print(f"FAIL: exit {p.returncode}; wanted an answer, then 'stop' or 'length' on the last line")
        return 1
    print(f"the program answered ({len(''.join(lines[:-1]).strip())} characters, finish reason {lines[-1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
