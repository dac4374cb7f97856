"""The Python zygote of the test suites: one interpreter that has
imported torch (and numpy) once, and forks a child for each `python SCRIPT`
or `python -c CODE` a test runs through tests/pyzygote/pyz.c, instead of a
new interpreter that imports torch again (1 s of CPU with Debian's torch
1.13, 1.9 s with PyPI's 2.x; a suite runs about 100 of them).

Started by pyz.c (detached, its own session, stdio on /dev/null) as
    PYTHON pyzygote.py NAME
with the environment of the test that found no zygote; it listens on the
abstract Unix socket NAME, which pyz.c derives from the Python, this file's
path and every environment variable an interpreter or torch reads while it
imports (PYTHON*, OMP_*, MKL_*, LD_*, TORCH*, LC_*, TMPDIR, ...: pyz.c lists
them). So a child starts from the state a fresh interpreter with the test's
environment would reach after `import torch`; a test whose such variables
differ gets (or starts) its own zygote. A zygote that has served no request
for IDLE_S seconds exits.

Only this user's processes are served, and pyz only talks to a zygote of
its own user (SO_PEERCRED, both ends): an abstract socket has no file
permissions. One request, on one connection (pyz.c writes it, with its
stdin, stdout and stderr passed as SCM_RIGHTS):
    "CTZ1\\0" cwd\\0 umask\\0 rlimits\\0 argc\\0 arg\\0... envc\\0 env\\0...
This process answers "F" (fallback: pyz.c then execs the real Python; the
child never started) when the request is not one a fork reproduces: any
interpreter option other than -c, a script that does not import torch (it
gains nothing, and a script that checks what an import brings in must see a
fresh interpreter: "torch" not in sys.modules), other resource limits. Else
it forks, answers "A", and when the child ends sends its status (8 bytes:
kind 0 = exit code, 1 = signal; the number). If the connection closes first
(ctest's timeout killed pyz), the child's process group is killed.

The child: its own process group, the test's stdio, directory, umask and
environment, sys.argv and sys.path[0] as `python SCRIPT` (or -c) sets them;
torch's default generator and numpy's are seeded anew from the OS, as at
an interpreter's import (Python's random reseeds itself after a fork; the
string hash seed is the zygote's). At the end it
does what the interpreter's shutdown does that a test can see (join the
non-daemon threads, flush, run the atexit handlers), then _exit.
"""
import array
import io
import os
import re
import resource
import select
import signal
import socket
import struct
import sys
import time

IDLE_S = 120
MAX_REQUEST = 1 << 20
# A script's own import of torch (`import torch`, `import os, torch.nn as nn`,
# `from torch import ...`, at any indentation): what the zygote saves.
IMPORTS_TORCH = re.compile(rb"^[ \t]*(import[ \t][^#\n]*\btorch\b|from[ \t]+torch\b)", re.M)
RLIMITS = ("RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE",
           "RLIMIT_MEMLOCK", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_STACK")


def main():
    name = sys.argv[1]
    # pyz.c's SENSITIVE: the variables whose values name this zygote. The
    # children get this process's values of them (where the interpreter is a
    # wrapper, those it set), and every other variable from the test.
    prefixes = tuple(p for p in os.environ.pop("CTORCH_PYZ_SENSITIVE", "").split(",") if p)
    own = {k: v for k, v in os.environ.items() if (k + "=").startswith(prefixes)}
    import torch  # noqa: F401  (the point of the zygote)
    try:
        import numpy  # noqa: F401
    except ImportError:
        pass
    base_path = sys.path[1:]  # sys.path[0] is this file's folder
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind("\0" + name)
    except OSError:
        return  # another zygote of this name won the race: it serves
    listener.listen(16)
    # A child's end wakes the loop at once (its status is the test's end).
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children = {}  # pid -> connection
    last = time.monotonic()
    while True:
        reap(children)
        if not children and time.monotonic() - last > IDLE_S:
            return
        ready, _, _ = select.select([listener, wake_r, *children.values()], [], [], 5.0)
        for r in ready:
            if r == wake_r:
                while True:
                    try:
                        os.read(wake_r, 512)
                    except BlockingIOError:
                        break
            elif r is listener:
                conn, _ = listener.accept()
                last = time.monotonic()
                serve(conn, [listener, wake_r, wake_w], children, base_path, prefixes, own)
            else:  # a client gone (pyz killed): so is its child
                pid = next(p for p, c in children.items() if c is r)
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def reap(children):
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        if os.WIFSIGNALED(status):
            msg = struct.pack("<ii", 1, os.WTERMSIG(status))
        else:
            msg = struct.pack("<ii", 0, os.waitstatus_to_exitcode(status))
        try:
            conn.sendall(msg)
        except OSError:
            pass
        conn.close()


def serve(conn, fds_own, children, base_path, prefixes, own_env):
    # An abstract socket has no file permissions: any local user can connect.
    # Only this user's processes are served (the kernel's word, SO_PEERCRED);
    # anyone else's connection is closed unread.
    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if uid != os.getuid():
        conn.close()
        return
    fds = []
    try:
        conn.settimeout(5)
        fields, fds = read_request(conn)
        run = plan(fields, prefixes, own_env)
    except Exception:  # noqa: BLE001  (a malformed request: the client runs the interpreter)
        run = None
    if run is None:
        try:
            conn.sendall(b"F")
        except OSError:
            pass
        conn.close()
        for fd in fds:
            os.close(fd)
        return
    pid = os.fork()
    if pid == 0:
        child(run, fds, fds_own, [conn, *children.values()], base_path)
    try:
        os.setpgid(pid, pid)  # as the child does: whichever runs first
    except OSError:
        pass
    for fd in fds:
        os.close(fd)
    children[pid] = conn
    try:
        conn.sendall(b"A")
    except OSError:
        pass


def read_request(conn):
    fds = array.array("i")
    data, anc, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    fds = list(fds)
    if len(data) < 4:
        raise ValueError("short request")
    size = struct.unpack("<I", data[:4])[0]
    if size > MAX_REQUEST:
        raise ValueError("request too large")
    data = data[4:]
    while len(data) < size:
        more = conn.recv(size - len(data))
        if not more:
            raise ValueError("truncated request")
        data += more
    if len(fds) != 3:
        raise ValueError("want 3 descriptors")
    return data.split(b"\0")[:-1], fds


def plan(fields, prefixes, own_env):
    """What the child runs, or None where a fork would not be the same as `python ...`."""
    it = iter(fields)
    if next(it) != b"CTZ1":
        return None
    cwd = next(it)
    umask = int(next(it))
    if next(it).decode() != own_rlimits():
        return None
    argv = [next(it) for _ in range(int(next(it)))]
    env = dict(e.split(b"=", 1) for e in (next(it) for _ in range(int(next(it)))) if b"=" in e)
    env = {k: v for k, v in env.items() if not (os.fsdecode(k) + "=").startswith(prefixes)}
    env.update((os.fsencode(k), os.fsencode(v)) for k, v in own_env.items())
    if len(argv) < 2:
        return None
    if argv[1] == b"-c" and len(argv) >= 3:
        code = argv[2]
        if not IMPORTS_TORCH.search(code):
            return None
        return {"cwd": cwd, "umask": umask, "env": env, "code": code, "argv": ["-c", *map(os.fsdecode, argv[3:])]}
    if argv[1].startswith(b"-"):
        return None
    script = os.path.join(cwd, argv[1])
    if not os.path.isfile(script):
        return None
    with open(script, "rb") as f:
        source = f.read(MAX_REQUEST)
    if not IMPORTS_TORCH.search(source) or b"not in sys.modules" in source:
        return None
    return {"cwd": cwd, "umask": umask, "env": env, "script": os.fsdecode(argv[1]),
            "argv": list(map(os.fsdecode, argv[1:]))}


def own_rlimits():
    return ",".join("%d:%d" % resource.getrlimit(getattr(resource, n)) for n in RLIMITS)


def child(run, fds, own, conns, base_path):
    code = 1
    try:
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # as in a fresh interpreter
        listener, wake_r, wake_w = own
        listener.close()
        os.close(wake_r)
        os.close(wake_w)
        for c in conns:
            c.close()
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        os.chdir(run["cwd"])
        os.umask(run["umask"])
        os.environ.clear()
        os.environ.update({os.fsdecode(k): os.fsdecode(v) for k, v in run["env"].items()})
        reopen_stdio()
        reseed()
        sys.argv = run["argv"]
        if "code" in run:
            sys.orig_argv = [sys.executable, "-c", os.fsdecode(run["code"]), *sys.argv[1:]]
        else:
            sys.orig_argv = [sys.executable, *sys.argv]
        if "script" in run:
            sys.path[:] = [os.path.dirname(os.path.realpath(run["script"])), *base_path]
        else:
            sys.path[:] = ["", *base_path]
        code = execute(run)
    except BaseException:  # noqa: B036  (the child's own setup failed: say so on the test's stderr)
        import traceback
        print("pyzygote: the child could not start the script", file=sys.stderr)
        traceback.print_exc()
    finally:
        os._exit(code & 0xFF)


def reseed():
    # A fresh interpreter's torch seeds its default generator from the OS at
    # import, and numpy its global RandomState: each child draws its own, as
    # each interpreter would (Python's random reseeds itself after a fork).
    # (The string hash seed stays the zygote's: it is fixed at start.)
    import torch
    torch.default_generator.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()


def reopen_stdio():
    # As the interpreter makes them at start (CPython's create_stdio), with
    # the zygote's own streams (made by the same interpreter, options and
    # environment) as the model: the encoding and errors, -u/PYTHONUNBUFFERED
    # (the raw file, written through), line buffering on a terminal and on
    # stderr, newline "\n".
    made = []
    for fd, old, write in ((0, sys.__stdin__, False), (1, sys.__stdout__, True), (2, sys.__stderr__, True)):
        buffered = not write or hasattr(old.buffer, "raw")
        raw = io.open(fd, "wb" if write else "rb", buffering=-1 if buffered else 0, closefd=False)
        (raw.raw if buffered else raw).name = old.name  # "<stdout>"
        stream = io.TextIOWrapper(raw, encoding=old.encoding, errors=old.errors, newline="\n",
                                  line_buffering=buffered and write and (fd == 2 or os.isatty(fd)),
                                  write_through=not buffered)
        stream.mode = old.mode
        made.append(stream)
    sys.stdin, sys.stdout, sys.stderr = made
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = made


def execute(run):
    import atexit
    import runpy
    import threading
    code = 0
    try:
        if "script" in run:
            runpy.run_path(run["script"], run_name="__main__")
        else:
            import types
            main_mod = types.ModuleType("__main__")  # as the interpreter's, for -c
            main_mod.__builtins__ = __builtins__
            sys.modules["__main__"] = main_mod
            exec(compile(run["code"], "<string>", "exec"), main_mod.__dict__)
    except SystemExit as e:
        code = exit_code(e)
    except BaseException:  # noqa: B036  (as the interpreter: an escape is exit 1)
        kind, value, tb = sys.exc_info()
        ours = (__file__, runpy.__file__, "<frozen runpy>")
        while tb is not None and tb.tb_frame.f_code.co_filename in ours:
            tb = tb.tb_next  # the traceback from the script's own frames, as the interpreter prints it
        sys.excepthook(kind, value.with_traceback(tb), tb)
        code = 1
    # What the interpreter's shutdown does before it exits.
    try:
        threading._shutdown()
    except BaseException:  # noqa: B036
        pass
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: B036  (a closed pipe: as the interpreter, exit 120)
            code = code or 120
    return code


def exit_code(e):
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    print(e.code, file=sys.stderr)  # sys.exit("message")
    return 1


if __name__ == "__main__":
    main()
