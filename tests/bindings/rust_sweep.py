#!/usr/bin/env python3
"""Runs a binding's bad-input sweep program (rust_sweep_gen.py for the Rust
crate, go_sweep_gen.py for the Go package) and counts what happened: the
program calls every safe operator of the binding with bad arguments and
prints "B i name" before operator i. A process that dies (a
signal, an abort, a Rust or Go panic) while in operator i is a crash of i: recorded,
and the sweep goes on from i + 1 in a new process. An operator that runs
longer than --timeout seconds is killed and reported as slow (not a crash).
Passes when no safe operator crashed. The sweep runs under a 16 GiB address
space limit, so a huge size fails as an allocation error instead of taking
the shared machine's memory.

Usage: rust_sweep.py [--timeout S] [--lang rust|go|python|node] [--] COMMAND...  (START is appended)
"""
import argparse
import resource
import subprocess
import sys
import threading
import time


def limit():
    resource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(cmd, start, timeout, log):
    """Runs from operator start; returns (last begun index, its name, exit code, done line, timed out)."""
    p = subprocess.Popen(cmd + [str(start)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         preexec_fn=limit, bufsize=1)
    state = {"last": start - 1, "name": None, "t": time.time(), "done": None, "timed_out": False}

    def watch():
        while p.poll() is None:
            if time.time() - state["t"] > timeout:
                state["timed_out"] = True
                p.kill()
                return
            time.sleep(0.5)

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    for line in p.stdout:
        if line.startswith("B "):
            _, i, name = line.split()
            state.update(last=int(i), name=name, t=time.time())
        elif line.startswith("DONE"):
            state["done"] = line.strip()
        else:
            log.append(line.rstrip())
    p.wait()
    w.join()
    return state["last"], state["name"], p.returncode, state["done"], state["timed_out"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", nargs="+")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--lang", default="rust")
    a = ap.parse_args()
    start, crashes, slow, log = 0, [], [], []
    t0 = time.time()
    while True:
        last, name, rc, done, timed_out = run(a.cmd, start, a.timeout, log)
        if done and rc == 0:
            break
        if last < start:
            print(f"FAIL: the sweep died before its first operator (exit {rc})")
            print("\n".join(log[-20:]))
            return 1
        if timed_out:
            slow.append(name)
            print(f"slow (killed after {a.timeout:.0f} s): {name}")
        else:
            why = ("a Rust panic" if a.lang == "rust" and rc == 101 else
                   "a Go panic or fatal runtime error" if a.lang == "go" and rc == 2 else
                   f"signal {-rc}" if rc < 0 else f"exit {rc}")
            crashes.append((name, why))
            print(f"CRASH: {name}: {why}")
            print("  " + "\n  ".join(log[-5:]))
        log.clear()
        start = last + 1
    total = int(done.split()[1])
    print(f"{done}")
    print(f"{a.lang} sweep: {total} safe operators exercised, {len(crashes)} crashed, {len(slow)} slow, "
          f"{time.time() - t0:.0f} s")
    if crashes:
        print("FAIL: safe operators that crash (guard them in C, list them in bindings-gen/unsafe_ops.txt, or fix "
              "the binding's conversion): "
              + ", ".join(n for n, _ in crashes))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
