"""`python SCRIPT ARGS...` without a new interpreter: the script runs as
__main__ in a child forked from this process, which has imported torch
already (each new interpreter's `import torch` costs 1 s of CPU with
Debian's torch 1.13, 2 s with PyPI's 2.x, and a twin test started three).
The child starts from the parent as it is at the fork (torch
imported, nothing computed): the script sets its own seed and threads, as it
does in a fresh interpreter, and its globals die with the child.

run_script returns a subprocess.CompletedProcess (stdout, stderr as bytes,
or str with text=True) with the exit status `python SCRIPT` would give:
0 at the end, sys.exit's code, 1 after an uncaught exception (its traceback
on stderr), -N after signal N; past timeout seconds the child is killed and
subprocess.TimeoutExpired raised, as subprocess.run does.

Fork before the parent computes anything with torch, or after
torch.set_num_threads(1) in the parent (then libtorch starts no OpenMP team):
a libtorch whose OpenMP threads have started is not safe to use in a forked
child (libgomp's pool does not survive fork).
"""
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import time
import traceback


def _child(script, args, out, err):
    code = 1
    try:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.argv = [script, *args]
        sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python SCRIPT` sets it
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:  # sys.exit("message"): the interpreter prints it and exits 1
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: B036  (as the interpreter: any escape is exit 1)
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF)


def run_script(script, args=(), text=False, timeout=None):
    cmd = [sys.executable, script, *args]
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            _child(script, list(args), out, err)
        start = time.monotonic()
        while True:
            done, status = os.waitpid(pid, 0 if timeout is None else os.WNOHANG)
            if done:
                break
            if time.monotonic() - start > timeout:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(cmd, timeout)
            time.sleep(0.05)
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        o, e = out.read(), err.read()
    if text:
        o, e = o.decode("utf-8", "replace"), e.decode("utf-8", "replace")
    return subprocess.CompletedProcess(cmd, code, o, e)
