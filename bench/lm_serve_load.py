#!/usr/bin/env python3
"""The load test of ctorch-lm-serve (serve/): bounded request loops on
loopback, throughput and latency percentiles, resident memory before and
after to show that nothing leaks.

CLIENTS threads each send REQUESTS streaming chat requests one after the
other (ignore_eos, so every completion is MAX_TOKENS long), round after
round; every fourth request of a client disconnects after its first
chunk, so the cancel path runs under load too. The server's resident
memory (VmRSS) is read after a warm-up round and after each measured
round: a leak shows as growth from round to round.

  bench/lm_serve_load.py --server build/serve/ctorch-lm-serve --model PATH [--load-options TEXT]
  bench/lm_serve_load.py --server build/serve/ctorch-lm-serve --tiny      (a tiny random-weight model)

With --record FILE the run is appended to that benchmark record
(bench/results/lm-serve-load.json; bench/results/render.py shows it on
docs/lm-server.md). Only the Python standard library is used."""
import argparse
import datetime
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "serve_lm"))
from serve_lm_util import tiny_model  # noqa: E402


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def one_request(host, port, body, disconnect):
    """(seconds to the first text, seconds to the end, completion tokens) of one streamed chat."""
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(host, port, timeout=120)
    conn.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
    first, tokens = None, None
    for raw in r:
        line = raw.decode().strip()
        if not line.startswith("data: "):
            continue
        data = line[6:]
        if data == "[DONE]":
            break
        chunk = json.loads(data)
        if chunk.get("usage"):
            tokens = chunk["usage"]["completion_tokens"]
        if chunk["choices"] and chunk["choices"][0]["delta"].get("content") and first is None:
            first = time.perf_counter() - t0
            if disconnect:
                conn.sock.close()
                conn.close()
                return first, None, None
    conn.close()
    return first, time.perf_counter() - t0, tokens


def run_round(host, port, clients, requests, max_tokens, round_no):
    results, errors = [], []
    lock = threading.Lock()

    def client(c):
        for i in range(requests):
            body = {"model": MODEL_ID, "messages": [{"role": "user", "content": f"Story {round_no}.{c}.{i}: once"}],
                    "max_tokens": max_tokens, "temperature": 0.8, "seed": 1000 * c + i, "ignore_eos": True,
                    "stream": True, "stream_options": {"include_usage": True}}
            try:
                r = one_request(host, port, body, disconnect=(i % 4 == 3))
            except Exception as e:  # counted; the run goes on
                with lock:
                    errors.append(repr(e))
                continue
            with lock:
                results.append(r)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors, time.perf_counter() - t0


def pct(values, p):
    v = sorted(values)
    if not v:
        return float("nan")
    k = (len(v) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def health(host, port):
    conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.request("GET", "/health")
    h = json.loads(conn.getresponse().read())
    conn.close()
    return h


def wait_idle(host, port):
    for _ in range(400):
        h = health(host, port)
        if h["busy"] == 0 and h["queued"] == 0:
            return h
        time.sleep(0.05)
    raise RuntimeError(f"still busy: {h}")


def machine():
    cpu, flags = "unknown", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and cpu == "unknown":
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    wanted = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f in flags]
    os_name = "unknown"
    if os.path.exists("/etc/os-release"):
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    os_name = line.split("=", 1)[1].strip().strip('"')
    return {"cpu": cpu, "flags": " ".join(wanted).upper() or "none of AVX2/AVX-512", "cores": os.cpu_count(),
            "os": os_name}


def libtorch_of(server):
    """The libtorch major.minor the server's libctorch was built for (its SONAME's "-torchX.Y")."""
    out = subprocess.run(["ldd", server], capture_output=True, text=True).stdout
    m = re.search(r"libctorch\.so\.[\w.]*-torch(\d+\.\d+)", out)
    return m.group(1) if m else "unknown"


MODEL_ID = "model"


def command_line(argv):
    """The arguments that reproduce the run (the record's own options left out)."""
    out, skip = [], False
    for x in argv:
        if skip:
            skip = False
        elif x in ("--record", "--conditions"):
            skip = True
        else:
            out.append(x)
    return " ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--model")
    g.add_argument("--tiny", action="store_true")
    ap.add_argument("--load-options", default="")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--requests", type=int, default=8, help="per client and round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--record", help="append the run to this benchmark record")
    ap.add_argument("--conditions", default="", help="what the machine was doing, for the record")
    a = ap.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="lm_serve_load_")
    model = tiny_model(os.path.join(tmp.name, "tiny")) if a.tiny else a.model
    load_options = a.load_options or ("init=random,seed=1" if a.tiny else "")
    cmd = [a.server, model, "--port", "0", "--quiet", "--model-name", MODEL_ID, "--slots", str(a.slots),
           "--queue", str(max(16, a.clients)), "--ctx", str(max(256, 128 + a.max_tokens))]
    if load_options:
        cmd += ["--load-options", load_options]
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "http://" not in line:
        sys.exit(f"the server did not start: {line}")
    host, port = line.split("http://", 1)[1].split()[0].rsplit(":", 1)
    port = int(port)
    try:
        run_round(host, port, a.clients, 2, a.max_tokens, 0)  # warm-up
        wait_idle(host, port)
        rss = [rss_mb(proc.pid)]
        rounds = []
        for r in range(1, a.rounds + 1):
            res, errs, wall = run_round(host, port, a.clients, a.requests, a.max_tokens, r)
            wait_idle(host, port)
            rss.append(rss_mb(proc.pid))
            rounds.append((res, errs, wall))
        h = health(host, port)
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    done = [x for res, _, _ in rounds for x in res if x[1] is not None]
    cut = [x for res, _, _ in rounds for x in res if x[1] is None]
    errors = [e for _, errs, _ in rounds for e in errs]
    wall = sum(w for _, _, w in rounds)
    tokens = sum(x[2] for x in done)
    lat = [x[1] * 1000 for x in done]
    ttft = [x[0] * 1000 for x in done + cut]
    rows = [
        ["clients x requests x rounds", f"{a.clients} x {a.requests} x {a.rounds}"],
        ["completed / disconnected on purpose / failed", f"{len(done)} / {len(cut)} / {len(errors)}"],
        ["completion tokens/s (all clients)", f"{tokens / wall:.1f}"],
        ["requests/s", f"{(len(done) + len(cut)) / wall:.2f}"],
        ["latency p50 / p90 / p99, ms", f"{pct(lat, 50):.0f} / {pct(lat, 90):.0f} / {pct(lat, 99):.0f}"],
        ["first text p50 / p90 / p99, ms", f"{pct(ttft, 50):.0f} / {pct(ttft, 90):.0f} / {pct(ttft, 99):.0f}"],
        ["largest batch (sequences in one forward)", str(h["max_batch"])],
        ["resident MB after warm-up / " + " / ".join(f"round {i}" for i in range(1, a.rounds + 1)),
         " / ".join(f"{x:.1f}" for x in rss)],
        ["server's count: served / cancelled / failed", f"{h['served']} / {h['cancelled']} / {h['failed']}"],
    ]
    for k, v in rows:
        print(f"{k:55s} {v}")
    if errors:
        print("errors:", *errors[:5], sep="\n  ")
    if a.record:
        what = os.path.basename(model) if not a.tiny else "a tiny random-weight Llama (tests/serve_lm)"
        run = {
            "date": datetime.date.today().isoformat(),
            "command": "bench/lm_serve_load.py " + command_line(sys.argv[1:]),
            "machine": machine(),
            "libtorch": libtorch_of(a.server),
            "conditions": a.conditions or f"load average {os.getloadavg()[0]:.1f} at the end",
            "figures": [{"caption": f"{what}, {a.max_tokens} tokens a request, {a.slots} slots:",
                         "columns": ["", "value"], "rows": rows}],
        }
        rec = {"benchmark": "lm-serve-load",
               "question": "How many tokens per second does ctorch-lm-serve stream to concurrent clients, at what "
                           "latency, and does its memory stay flat?",
               "page": "docs/lm-server.md", "section": "load-test", "runs": []}
        if os.path.exists(a.record):
            with open(a.record) as f:
                rec = json.load(f)
        rec["runs"].append(run)
        with open(a.record, "w") as f:
            json.dump(rec, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(f"appended to {a.record}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
