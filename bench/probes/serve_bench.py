#!/usr/bin/env python3
"""Serving one model from N threads: ctorch's C server
(examples/serve.c) against Python threads sharing one torch model and against
N processes each with its own model, same weights, same inputs.

  1. `serve --dump` builds the encoder (a stack of TransformerEncoderLayer)
     from a seed and writes its state dict, its inputs and its single-thread
     outputs to a safetensors file;
  2. Python builds the same nn.Sequential, loads that state dict, checks its
     own single-thread outputs against C's (max abs diff, printed), and
     serves from N threads (queue.Queue, closed loop); every output is
     asserted equal (torch.equal) to Python's single-thread forward;
  3. C threads: `serve --load W --threads 1,2,4` (it asserts its outputs
     equal to its single-thread forward, exit 1 otherwise);
  4. C processes / Python processes: N copies of one worker each with its
     own model, started at the same wall-clock moment (--start-at).

Run it with the Python whose torch is the C build's libtorch:
  ~/.cache/ctorch/torch-2.15.0/bin/python bench/probes/serve_bench.py \
      --serve build-torch2.15.0/examples/serve --out serve-2.15.md
Every worker uses 1 intra-op thread (set in each thread; OMP_NUM_THREADS=1 in
every child), so N workers use N cores. Latency is service time (dequeue to
checked output), throughput is requests / wall time of the serving phase;
CPU ms/req is the workers' thread CPU time per request, which the machine's
other load stretches far less than the clock: if it stays flat from N=1 to
N=4, the workers add no work to each other (no lock spinning, no cache
thrash measurable here), and 16 workers on 16 idle cores would serve about
16 / CPU time per request (the last column; memory bandwidth not modelled).
"""
import argparse
import json
import os
import queue
import struct
import subprocess
import sys
import tempfile
import threading
import time

import torch


def read_safetensors(path):
    """A minimal safetensors reader (float32 only), so no package is needed."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        assert v["dtype"] == "F32", (k, v["dtype"])
        a, b = v["data_offsets"]
        out[k] = torch.frombuffer(bytearray(data[base + a:base + b]), dtype=torch.float32).reshape(v["shape"])
    return out


def make_model(args, weights):
    torch.manual_seed(0)
    layers = [torch.nn.TransformerEncoderLayer(args.d_model, args.heads, args.ffn, dropout=0.0, batch_first=True)
              for _ in range(args.layers)]
    m = torch.nn.Sequential(*layers)
    sd = {k: v for k, v in weights.items() if not k.startswith(("input.", "output."))}
    m.load_state_dict(sd, strict=True)
    return m.eval()


def pct(lat, q):
    lat = sorted(lat)
    return lat[int((len(lat) - 1) * q)]


def py_threads(model, inputs, want, n, requests):
    """N Python threads sharing one model, a queue, outputs checked."""
    q = queue.Queue(maxsize=2 * n)
    lat = [0.0] * requests
    cpu = [0.0] * n
    bad = []
    start = threading.Barrier(n + 1)

    def work(i):
        torch.set_num_threads(1)  # per thread, as serve.c does
        with torch.inference_mode():
            start.wait()
            while True:
                r = q.get()
                if r is None:
                    return
                rid, k = r
                t0, c0 = time.perf_counter(), time.thread_time()
                y = model(inputs[k])
                if not torch.equal(y, want[k]):
                    bad.append(rid)
                lat[rid] = time.perf_counter() - t0
                cpu[i] += time.thread_time() - c0

    th = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in th:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for i in range(requests):
        q.put((i, i % len(inputs)))
    for _ in th:
        q.put(None)
    for t in th:
        t.join()
    secs = time.perf_counter() - t0
    assert not bad, f"python threads: {len(bad)} outputs differ from the single-thread forward"
    return requests / secs, 1e3 * pct(lat, 0.5), 1e3 * pct(lat, 0.99), 1e3 * sum(cpu) / requests


def py_worker(args):
    """One process of the Python-processes row: its own model, one thread."""
    torch.set_num_threads(1)
    w = read_safetensors(args.weights)
    model = make_model(args, w)
    k_in = sorted(k for k in w if k.startswith("input."))
    inputs = [w[k] for k in k_in]
    with torch.inference_mode():
        want = [model(x) for x in inputs]
        while time.time() * 1000 < args.start_at:
            time.sleep(0.001)
        lat = []
        t0, c0 = time.perf_counter(), time.thread_time()
        for i in range(args.requests):
            k = i % len(inputs)
            t1 = time.perf_counter()
            y = model(inputs[k])
            assert torch.equal(y, want[k])
            lat.append(1e3 * (time.perf_counter() - t1))
        secs = time.perf_counter() - t0
        cpu = time.thread_time() - c0
    with open(args.latencies, "a") as f:
        f.write("".join(f"{x:.4f}\n" for x in lat))
    print(f"seconds={secs:.4f} cpu_ms={1e3 * cpu / args.requests:.4f}")


def parse_serve(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def processes(cmd_of, n, requests, env):
    """N processes at once, each with requests/N; (req/s, p50, p99)."""
    with tempfile.TemporaryDirectory() as d:
        lat_path = os.path.join(d, "lat.txt")
        start_at = int(time.time() * 1000) + 8000  # after every model is built
        per = requests // n
        ps = [subprocess.Popen(cmd_of(per, start_at, lat_path), stdout=subprocess.PIPE, text=True, env=env)
              for _ in range(n)]
        secs, cpu = [], []
        for p in ps:
            out, _ = p.communicate()
            assert p.returncode == 0, f"a worker process failed ({p.returncode}): {out}"
            for line in out.splitlines():
                if "seconds=" in line:
                    kv = dict(x.split("=", 1) for x in line.split() if "=" in x)
                    secs.append(float(kv["seconds"]))
                    cpu.append(float(kv["cpu_ms"]))
        with open(lat_path) as f:
            lat = [float(x) for x in f]
    return per * n / max(secs), pct(lat, 0.5), pct(lat, 0.99), sum(cpu) / len(cpu)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", help="examples/serve built against this Python's libtorch")
    ap.add_argument("--out", help="markdown table to write")
    ap.add_argument("--threads", default="1,2,4")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--py-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--weights", help=argparse.SUPPRESS)
    ap.add_argument("--start-at", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--latencies", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.py_worker:
        return py_worker(args)

    ns = [int(x) for x in args.threads.split(",")]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    shape = ["--layers", str(args.layers), "--d-model", str(args.d_model), "--heads", str(args.heads),
             "--ffn", str(args.ffn), "--seq", str(args.seq)]
    rows = []
    load0 = open("/proc/loadavg").read().split()[:3]
    with tempfile.TemporaryDirectory() as d:
        wpath = os.path.join(d, "serve.safetensors")
        subprocess.run([args.serve, *shape, "--dump", wpath, "--threads", "1", "--requests", "8"], check=True,
                       env=env, stdout=subprocess.DEVNULL)
        w = read_safetensors(wpath)
        torch.set_num_threads(1)
        model = make_model(args, w)
        k_in = sorted((k for k in w if k.startswith("input.")), key=lambda k: int(k.split(".")[1]))
        inputs = [w[k] for k in k_in]
        c_out = [w["output." + k.split(".")[1]] for k in k_in]
        with torch.inference_mode():
            want = [model(x) for x in inputs]
        diff = max(float((a - b).abs().max()) for a, b in zip(want, c_out))
        print(f"serve_bench: Python's outputs vs C's, max abs diff {diff:.3g}", flush=True)

        # C threads sharing one model (one process: N = 1, 2, 4 in turn)
        out = subprocess.run([args.serve, *shape, "--load", wpath, "--threads", args.threads,
                              "--requests", str(args.requests)], check=True, env=env, capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            if line.startswith("serve: threads="):
                kv = parse_serve(line)
                rows.append(("ctorch C, threads sharing one model", int(kv["threads"]), float(kv["req_per_s"]),
                             float(kv["p50_ms"]), float(kv["p99_ms"]), float(kv["cpu_ms"])))
        # Python threads sharing one model
        for n in ns:
            rows.append(("Python torch, threads sharing one model", n, *py_threads(model, inputs, want, n,
                                                                                    args.requests)))
        # C processes, each its own model
        for n in ns:
            cmd = lambda per, t, lp: [args.serve, *shape, "--load", wpath, "--threads", "1", "--requests", str(per),
                                      "--start-at", str(t), "--latencies", lp]
            rows.append(("ctorch C, N processes (one model each)", n, *processes(cmd, n, args.requests, env)))
        # Python processes, each its own model
        for n in ns:
            cmd = lambda per, t, lp: [sys.executable, os.path.abspath(__file__), "--py-worker", "--weights", wpath,
                                      *shape, "--requests", str(per), "--start-at", str(t), "--latencies", lp]
            rows.append(("Python torch, N processes (one model each)", n, *processes(cmd, n, args.requests, env)))
    load1 = open("/proc/loadavg").read().split()[:3]

    base = {}
    lines = [f"torch {torch.__version__}; model: {args.layers} x TransformerEncoderLayer(d_model {args.d_model}, "
             f"{args.heads} heads, ffn {args.ffn}), input [1, {args.seq}, {args.d_model}], inference mode; "
             f"{args.requests} requests per point; 1 intra-op thread per worker; load average before "
             f"{' '.join(load0)}, after {' '.join(load1)}; Python vs C outputs max abs diff {diff:.3g}",
             "", "| way | N | req/s | x N=1 | p50 ms | p99 ms | CPU ms/req | 16 cores, req/s |",
             "|---|---|---|---|---|---|---|---|"]
    for way, n, rps, p50, p99, cpu in rows:
        base.setdefault(way, rps)
        # 16 workers on 16 idle cores if each request keeps this CPU cost
        # (what the cost's growth from N=1 to N=4 tests): 16 / CPU time.
        lines.append(f"| {way} | {n} | {rps:.1f} | {rps / base[way]:.2f} | {p50:.2f} | {p99:.2f} | {cpu:.2f} | "
                     f"{16e3 / cpu:.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
