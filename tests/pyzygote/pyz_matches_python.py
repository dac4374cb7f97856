"""tests/pyzygote/pyz (the tests' Python) against the real
interpreter: each case runs `PYTHON ARGS` and `pyz ARGS` on the same input
and must give the same exit status, stdout and stderr, and a case that
imports torch must have been served by a zygote (else the comparison would
be of the interpreter with itself). Then: unseeded draws differ between
runs, another user's connection is refused (as root), and killing pyz kills
its child.
Usage: pyz_matches_python.py PYZ   (run by the real interpreter)
"""
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback

PYZ = sys.argv[1]
PY = sys.executable
# Prints whether this process is a zygote's child (its parent runs pyzygote.py).
SERVED = textwrap.dedent("""\
    def _served():
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            return b"pyzygote.py" in f.read()
""")

# Each case costs a real interpreter's import of torch (1-1.9 s), so what a
# script can show in one run is one case: the first prints what `python
# SCRIPT` sets up, writes text and bytes in order, leaves a thread and an
# atexit handler to the shutdown, shows torch's fresh state, then exits 3.
CASES = {
    "argv, path, cwd, environment, stdin; stdout order; threads and atexit; torch's state; exit code": """\
        import atexit, os, sys, threading, time, torch
        print(sys.argv, sys.path[0] == os.path.dirname(os.path.realpath(__file__)), os.getcwd())
        print(os.environ.get("PYZ_CASE"), sys.stdin.read().upper(), __name__)
        print("to stderr", file=sys.stderr)
        print("text first")
        sys.stdout.buffer.write(b"bytes second\\n")
        sys.stdout.flush()
        print("text third")
        torch.manual_seed(5)
        print(torch.randn(3).tolist(), torch.get_num_threads(), torch.is_grad_enabled())
        print(torch.get_default_dtype(), torch.are_deterministic_algorithms_enabled())
        atexit.register(lambda: print("atexit ran"))
        def late():
            time.sleep(0.2)
            print("thread ended")
        threading.Thread(target=late).start()
        print("main ended")
        sys.exit(3)
    """,
    "sys.exit(message)": """\
        import sys, torch
        sys.exit("a message, exit 1")
    """,
    "uncaught exception: the same traceback": """\
        import torch
        def f():
            raise KeyError("the traceback names this file only")
        f()
    """,
    "killed by a signal": """\
        import os, signal, sys, torch
        print("before", flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
    """,
    "a script that does not import torch runs in the real interpreter": """\
        import sys
        print("no torch here", sys.argv[1:])
    """,
}


def run(exe, script, stdin=b"lower case"):
    """(status, stdout, stderr) with the served line made alike, and whether a zygote served it."""
    env = dict(os.environ, PYZ_CASE="case-env")
    p = subprocess.run([exe, script, "a b", "c"], input=stdin, capture_output=True, env=env,
                       cwd=os.path.dirname(script), timeout=120)
    return (p.returncode, p.stdout, p.stderr.replace(b"served=True", b"served=False")), b"served=True" in p.stderr


def wait_for_zygote(script):
    """The name of the zygote that serves this test (its socket's)."""
    # The first call starts the zygote (and runs in the real interpreter).
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        out = subprocess.run([PYZ, script], capture_output=True, timeout=120).stdout
        if b"served=True" in out:
            return out.split(b"zygote=")[1].split()[0].decode()
        time.sleep(1)
    sys.exit("no zygote served a request within 90 s")


def listening_zygotes(uid):
    """Names of this user's zygote sockets that listen now. /proc/net/unix
    also lists, under the listener's name, each connection it accepted: a
    zygote that has exited can leave one of those behind for a moment."""
    prefix = f"@ctorch-pyz-{uid}-"
    names = set()
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            cols = line.split()
            if len(cols) == 8 and cols[7].startswith(prefix) and int(cols[3], 16) & 0x10000:  # __SO_ACCEPTCON
                names.add(cols[7][1:])
    return names


def other_user_refused(d, own):
    """Every zygote of this user that listens, the test's own (`own`) among
    them, closes another user's connection unanswered. Another test's zygote
    may idle out between the listing and the connection: refused, then, so
    not served either; the test's own zygote must be reached."""
    if os.geteuid() != 0:
        print("not checked: another user's connection (needs root to be another user)")
        return []
    names = listening_zygotes(os.getuid())
    if own not in names:
        return [f"the test's own zygote {own} is not listening ({sorted(names)} are)"]
    marker = os.path.join(d, "ran")
    script = os.path.join(d, "intruder.py")
    with open(script, "w") as f:
        f.write(f"import torch\nopen({marker!r}, 'w').close()\n")
    from pyzygote import own_rlimits  # a request the zygote would run, from its own user
    fields = [b"CTZ1", d.encode(), b"18", own_rlimits().encode(), b"2", PY.encode(), script.encode(), b"0"]
    body = b"".join(x + b"\0" for x in fields)
    failures, gone = [], []
    for name in sorted(names):
        pid = os.fork()
        if pid == 0:  # as nobody: connect, send a request, report what came back
            code = 3
            try:
                os.setgid(65534)
                os.setuid(65534)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                    c.settimeout(10)
                    try:
                        c.connect("\0" + name)
                    except ConnectionRefusedError:  # that zygote has gone
                        os._exit(4 if name == own else 5)
                    try:
                        socket.send_fds(c, [struct.pack("<I", len(body)) + body], [0, 1, 2])
                        code = 0 if c.recv(1) == b"" else 1  # closed unanswered, or answered
                    except (ConnectionResetError, BrokenPipeError):  # closed, the request unread
                        code = 0
            except BaseException:  # noqa: B036  (say why, exit 3)
                traceback.print_exc()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        time.sleep(0.5)
        code = os.waitstatus_to_exitcode(status)
        if code == 5:
            gone.append(name)
        elif code == 4:
            failures.append(f"{name}: the test's own zygote refused the connection (it had gone)")
        elif code != 0 or os.path.exists(marker):
            failures.append(f"{name}: another user's request was answered or run "
                            f"(exit {code}, ran: {os.path.exists(marker)})")
    if not failures:
        print(f"ok: another user's connection is closed unanswered ({len(names) - len(gone)} zygote(s)"
              + (f"; {len(gone)} other had gone" if gone else "") + ")")
    return failures


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        probe = os.path.join(d, "probe.py")
        with open(probe, "w") as f:
            f.write("import os, torch\n" + SERVED + "print(f'served={_served()}')\n"
                    # the zygote's command line: PYTHON pyzygote.py NAME
                    "print('zygote=' + open(f'/proc/{os.getppid()}/cmdline').read().split(chr(0))[2])\n")
        own = wait_for_zygote(probe)
        for i, (name, body) in enumerate(CASES.items()):
            script = os.path.join(d, f"case{i}.py")
            with open(script, "w") as f:
                f.write("import os, sys\n" + SERVED
                        + "print(f'served={_served()}', file=sys.stderr, flush=True)\n"
                        + textwrap.dedent(body))
            (real, _), (via, served) = run(PY, script), run(PYZ, script)
            wants_zygote = "import torch" in body or ", torch" in body
            if real != via:
                failures.append(f"{name}: python gave {real}, pyz gave {via}")
            elif served != wants_zygote:
                failures.append(f"{name}: served by a zygote: {served}, expected {wants_zygote}")
            else:
                print(f"ok: {name} (exit {real[0]}, {'zygote' if served else 'real interpreter'})")
        # Unseeded draws differ from run to run, as in fresh interpreters.
        script = os.path.join(d, "seeds.py")
        with open(script, "w") as f:
            f.write("import random, torch\nprint(torch.initial_seed(), torch.rand(1).item(), random.random())\n")
        draws = {subprocess.run([PYZ, script], capture_output=True, timeout=120).stdout for _ in range(3)}
        if len(draws) != 3:
            failures.append(f"unseeded draws repeat between runs: {draws}")
        else:
            print("ok: each run draws its own seeds")
        # Another user's process that connects is not served (as root, the
        # test can be another user; otherwise this part cannot be checked).
        failures += other_user_refused(d, own)
        # ctest's timeout kills pyz: its child must not outlive it.
        pidfile = os.path.join(d, "pid")
        script = os.path.join(d, "sleeper.py")
        with open(script, "w") as f:
            f.write(f"import os, time, torch\nopen({pidfile!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n")
        p = subprocess.Popen([PYZ, script])
        deadline = time.monotonic() + 30
        while not os.path.exists(pidfile) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        child = int(open(pidfile).read())
        p.send_signal(signal.SIGKILL)
        p.wait()
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{child}") and time.monotonic() < deadline:
            time.sleep(0.05)
        if child != p.pid and os.path.exists(f"/proc/{child}"):
            failures.append(f"the child {child} outlived its killed pyz")
        else:
            print("ok: killing pyz killed its child")
    if failures:
        sys.exit("\n".join(failures))
    print("pyz matches the interpreter in", len(CASES) + 3, "cases")


if __name__ == "__main__":
    main()
