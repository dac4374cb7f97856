"""Ranks of different PyTorch generations (libtorch 1.x and 2.x) in one group:
the ctorch rank must fail with CTORCH_RUNTIME and a message naming both
versions, never hang.

    mismatch.py PATH/TO/dist_peer

Needs something of the other generation, found at run time:
  - its Python (torch.distributed): CTORCH_OTHER_TORCH_PYTHON, else the first
    python3 on PATH or ${CTORCH_CACHE:-~/.cache/ctorch}/torch-*/bin/python
    (where scripts/torch-env puts PyPI's torch) whose torch is of the other
    generation;
  - a ctorch built against it: CTORCH_OTHER_DIST_PEER, else a dist_peer of
    another build directory beside this one (build*/tests/dist/dist_peer under
    the source directory or next to this build).
Scenarios run for what was found; with nothing found the test prints
"skipped: ..." and exits 77 (ctest counts it as skipped).

The outcome is judged by the C rank's message, not by time; every process is
bounded by a watchdog, and a peer of the other generation left waiting (a
libtorch 1.13 TCPStore client on a 2.x server never times out) is killed once
the C rank has answered.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

from procs import free_port

WATCHDOG_S = 120
SHORT_MS = 8000  # the group timeout where a C master must wait for a rank that cannot come


def torch_version(python):
    try:
        out = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                             text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"(\d+\.\d+\.\d+)", out.stdout.strip()) if out.returncode == 0 else None
    return m.group(1) if m else None


# torch's version as this Python's torch/version.py states it, without
# importing torch (which takes a second or two): enough to pass over a Python
# of this generation; one of the other generation is then asked for real.
_VERSION_FILE = ("import importlib.util, os, re\n"
                 "s = importlib.util.find_spec('torch')\n"
                 "f = os.path.join(os.path.dirname(s.origin), 'version.py')\n"
                 "print(re.search(r\"__version__ = ['\\\"]([^'\\\"]+)\", open(f).read()).group(1))\n")


def torch_version_file(python):
    try:
        out = subprocess.run([python, "-c", _VERSION_FILE], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"(\d+\.\d+\.\d+)", out.stdout.strip()) if out.returncode == 0 else None
    return m.group(1) if m else None


def peer_version(peer):
    try:
        out = subprocess.run([peer, "version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def major(v):
    return v.split(".")[0]


def find_other_python(mine):
    env = os.environ.get("CTORCH_OTHER_TORCH_PYTHON")
    if env:
        return env, torch_version(env)
    cache = os.environ.get("CTORCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ctorch")
    candidates = [os.path.join(d, "python3") for d in os.environ.get("PATH", "").split(":") if d]
    candidates += sorted(glob.glob(os.path.join(cache, "torch-*", "bin", "python")))
    seen = set()
    for py in candidates:
        real = os.path.realpath(py)
        if real in seen or not os.access(py, os.X_OK):
            continue
        seen.add(real)
        v = torch_version_file(py)
        if v and major(v) == major(mine):
            continue  # this generation (its file says so): not imported, 1-2 s of CPU saved
        v = torch_version(py)
        if v and major(v) != major(mine):
            return py, v
    return None, None


def find_other_peer(mine, peer):
    env = os.environ.get("CTORCH_OTHER_DIST_PEER")
    if env:
        return env, peer_version(env)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(peer))))  # the build directory
    roots = {os.path.dirname(here)}
    if os.environ.get("CTORCH_SOURCE_DIR"):
        roots.add(os.environ["CTORCH_SOURCE_DIR"])
    for root in sorted(roots):
        for other in sorted(glob.glob(os.path.join(root, "build*", "tests", "dist", "dist_peer"))):
            if os.path.realpath(other) == os.path.realpath(peer):
                continue
            v = peer_version(other)
            if v and major(v) != major(mine):
                return other, v
    return None, None


def start(cmd, env=None):
    e = dict(os.environ)
    e.pop("GLOO_SOCKET_IFNAME", None)
    e.update(env or {})
    return subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(checked):
    """Waits (bounded) for the checked C rank. Returns its (code, output)."""
    try:
        out, err = checked.communicate(timeout=WATCHDOG_S)
    except subprocess.TimeoutExpired:
        checked.kill()
        out, err = checked.communicate()
        err += f"\nwatchdog: the C rank still ran after {WATCHDOG_S} s (a hang)"
    return checked.returncode, out + err


def stop(others, grace_s=2.0):
    """Peers of the other generation: their own outcome is not judged here.
    They get grace_s together to end, then are killed."""
    deadline = time.monotonic() + grace_s
    for p in others:
        try:
            p.communicate(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()


def judge(name, code, text, must):
    lines = [l for l in text.splitlines() if "CTORCH_" in l] or text.splitlines()[-3:]
    ok = code not in (0, None) and "CTORCH_RUNTIME" in text and all(m in text for m in must)
    print(f"{'PASS' if ok else 'FAIL'}: {name}: exit {code}; wanted CTORCH_RUNTIME naming {must}", flush=True)
    for l in lines:
        print("    " + l[-600:], flush=True)
    return ok


def python_store_master(python, port, size, timeout_s):
    code = ("import sys, time, datetime, torch.distributed as d\n"
            f"s = d.TCPStore('127.0.0.1', {port}, {size}, True, datetime.timedelta(seconds={timeout_s}),"
            " wait_for_workers=False)\n"
            "time.sleep(%d)\n" % (timeout_s + 5))
    return start([python, "-c", code])


def python_store_client_rank(python, port, size, rank, timeout_s):
    code = ("import os, datetime, torch.distributed as d\n"
            "os.environ['GLOO_SOCKET_IFNAME'] = 'lo'\n"
            f"s = d.TCPStore('127.0.0.1', {port}, {size}, False, datetime.timedelta(seconds={timeout_s}))\n"
            f"d.init_process_group('gloo', store=s, rank={rank}, world_size={size},"
            f" timeout=datetime.timedelta(seconds={timeout_s}))\n")
    return start([python, "-c", code])


def python_file_rank(python, path, size, rank, timeout_s):
    code = ("import os, datetime, torch.distributed as d\n"
            "os.environ['GLOO_SOCKET_IFNAME'] = 'lo'\n"
            f"d.init_process_group('gloo', init_method='file://{path}', rank={rank}, world_size={size},"
            f" timeout=datetime.timedelta(seconds={timeout_s}))\n")
    return start([python, "-c", code])


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    peer = sys.argv[1]
    mine = peer_version(peer)
    if not mine:
        print(f"FAIL: {peer} version did not answer")
        return 1
    mine_gen = major(mine) + ".x"
    other_py, py_v = find_other_python(mine)
    other_peer, peer_v = find_other_peer(mine, peer)
    print(f"this ctorch: libtorch {mine}; other Python: {other_py} ({py_v}); other ctorch: {other_peer} ({peer_v})",
          flush=True)
    if not other_py and not other_peer:
        print(f"skipped: no Python or ctorch build of a PyTorch generation other than {mine_gen} found "
              "(set CTORCH_OTHER_TORCH_PYTHON or CTORCH_OTHER_DIST_PEER)", flush=True)
        return 77
    # Every scenario is started first and judged after: each mostly waits
    # (a group timeout of SHORT_MS, a peer's import of torch), so together
    # they take the longest one's time instead of the sum (25.9 s ->
    # 13.8-15.0 s). Each has its own port or store file.
    started = []  # (name, checked C rank, others, wanted in its message)
    tmp = tempfile.TemporaryDirectory()
    timeout = {"CTORCH_DIST_TIMEOUT_MS": str(SHORT_MS)}
    if other_py:
        gen = major(py_v) + ".x"
        # Their TCPStore server, our client: refused at connection.
        port = free_port()
        master = python_store_master(other_py, port, 2, 60)
        c = start([peer, "store", "127.0.0.1", str(port), "1", "2", "0"])
        started.append((f"Python {py_v} TCPStore master, C client", c, [master], [mine, gen]))
        # Our server, their client: it cannot join; the C master says why it may be.
        # Not under ASan with a 1.x server: libtorch 1.13's TCPStore server
        # thread reads a 2.x client's validation handshake as a length and
        # allocates it (~1.9 PB) with operator new, relying on std::bad_alloc,
        # which it catches; ASan's operator new cannot throw and ends the
        # process instead. The plain suites run this scenario.
        if os.environ.get("CTORCH_ASAN_PRELOAD") and major(mine) == "1":
            print(f"skipped under ASan: C TCPStore master {mine}, Python {py_v} client "
                  "(libtorch 1.13's server relies on operator new throwing)", flush=True)
        else:
            port = free_port()
            c = start([peer, "store", "127.0.0.1", str(port), "0", "2", "1"], timeout)
            py = python_store_client_rank(other_py, port, 2, 1, SHORT_MS // 1000)
            started.append((f"C TCPStore master, Python {py_v} client", c, [py], [mine, "another PyTorch version"]))
        # One FileStore (init_method="file://" prefixes it "default_pg"): their
        # Gloo keys, where libtorch of their generation puts them.
        path = os.path.join(tmp.name, "py_store")
        py = python_file_rank(other_py, path, 2, 0, 30)
        c = start([peer, "file", path, "1", "2", "default_pg"], {"CTORCH_DIST_TIMEOUT_MS": "60000"})
        started.append((f"Python {py_v} and C on one FileStore", c, [py], [mine, gen]))
    if other_peer:
        # Two ctorch ranks on one FileStore: each names the other's exact version.
        path = os.path.join(tmp.name, "c_store")
        them = start([other_peer, "file", path, "0", "2"])
        c = start([peer, "file", path, "1", "2"])
        started.append((f"ctorch on {peer_v} and on {mine}, one FileStore", c, [them], [mine, peer_v]))
        # Their TCPStore master (a ctorch), our client.
        port = free_port()
        them = start([other_peer, "store", "127.0.0.1", str(port), "0", "2", "1"], timeout)
        c = start([peer, "store", "127.0.0.1", str(port), "1", "2", "0"])
        started.append((f"ctorch {peer_v} TCPStore master, ctorch {mine} client", c, [them],
                        [mine, major(peer_v) + ".x"]))
    results = [judge(name, *finish(c), must) for name, c, _, must in started]
    stop([p for _, _, others, _ in started for p in others])
    tmp.cleanup()
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
