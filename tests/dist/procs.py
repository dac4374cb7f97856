"""What the Python drivers of tests/dist share: a free loopback port, and a
Python rank run in a child forked from the driver (which imported torch once,
before any of them: a new interpreter per rank imported it each time, most of
a test's time)."""
import os
import socket
import subprocess
import sys
import time
import traceback


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Forked:
    """fn(*args) in a child forked from this process, with env as its whole
    environment; poll/kill/wait as subprocess.Popen's. The child's exit status
    is what an interpreter's would be: 0, SystemExit's code, or 1 for any
    other escape."""

    def __init__(self, env, fn, *args):
        sys.stdout.flush()
        sys.stderr.flush()
        self.returncode = None
        self.pid = os.fork()
        if self.pid == 0:
            code = 1
            try:
                os.environ.clear()
                os.environ.update(env)
                fn(*args)
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
                if not isinstance(e.code, int) and e.code is not None:
                    print(e.code, file=sys.stderr)
            except BaseException:  # noqa: B036  (as an interpreter would: any escape is exit 1)
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self):
        if self.returncode is None:
            os.kill(self.pid, 9)

    def wait(self, timeout=None):
        """The exit status; subprocess.TimeoutExpired after timeout seconds (None: no limit)."""
        if timeout is None:
            if self.returncode is None:
                self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            return self.returncode
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("forked rank", timeout)
            time.sleep(0.02)
        return self.returncode
