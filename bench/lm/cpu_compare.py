#!/usr/bin/env python3
"""Language-model speed on the CPU: ctorch's lm_bench (packed quantised
matrices, and weights=dequantize) beside llama.cpp (llama-cpp-python) and
transformers (its GGUF loader, dequantised float32) on one GGUF file.

    cpu_compare.py --gguf FILE [--build build --build build-torch2.15.0]
                   [--runs 1x1,1x8,2x1] [--prompt 128] [--new 128]
                   [--rounds 1] [--llama-python PY] [--hf-python PY]
                   [--out bench/results/lm-cpu.json] [--append]

Each implementation: a prompt of --prompt ids (lm_bench.c's generator),
then --new greedy steps of one id per sequence, argmax read back each step;
tokens per second of the prefill and of the steps, resident memory after.
--build none leaves ctorch out (to add another implementation's figures).
llama.cpp and transformers run batch 1 only. A Python without llama_cpp
or transformers (or none given) leaves that column out. The run is added
to --out (bench/results' shape: command, machine, date, figures).
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

LLAMA = r"""
import json, resource, sys, time
import numpy as np
import llama_cpp.llama_cpp as low
from llama_cpp import Llama
path, threads, P, N, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
if sys.argv[6] == "1":  # no extra buffer types: no AMX tiles, no repacked weights
    default = low.llama_model_default_params
    def params():
        p = default()
        p.use_extra_bufts = False
        return p
    low.llama_model_default_params = params
t0 = time.perf_counter()
llm = Llama(model_path=path, n_threads=threads, n_threads_batch=threads, n_ctx=P + N + 8, n_batch=512, verbose=False)
load = time.perf_counter() - t0
x, prompt, mask = 88172645463325252, [], (1 << 64) - 1
for _ in range(P):  # lm_bench.c's generator
    x ^= (x << 13) & mask; x ^= x >> 7; x ^= (x << 17) & mask
    prompt.append(x % llm.n_vocab())
def last():  # the last position's logits (Llama.scores holds them only with logits_all)
    return np.ctypeslib.as_array(low.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),))
pre, dec = [], []
for _ in range(rounds):
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(prompt)
    tok = int(np.argmax(last()))
    t1 = time.perf_counter()
    ids = [tok]
    for _ in range(N - 1):
        llm.eval([tok])
        tok = int(np.argmax(last()))
        ids.append(tok)
    t2 = time.perf_counter()
    pre.append(P / (t1 - t0)); dec.append((N - 1) / (t2 - t1))
import llama_cpp
print(json.dumps({"load_s": round(load, 3), "prefill_tok_s": round(sorted(pre)[len(pre) // 2], 2),
                  "decode_tok_s": round(sorted(dec)[len(dec) // 2], 2),
                  "rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                  "ids": ids, "version": llama_cpp.__version__}))
"""


def run_json(cmd, env=None):
    load = os.getloadavg()[0]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        sys.exit(f"{cmd} exited {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["load"] = load
    return r


def machine():
    info = open("/proc/cpuinfo").read()
    model = next((ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name")), "?")
    flags = next((ln.split(":", 1)[1].split() for ln in info.splitlines() if ln.startswith("flags")), [])
    keep = [f for f in flags if f.startswith(("avx", "amx", "fma", "f16c"))]
    osname = "?"
    if os.path.exists("/etc/os-release"):
        for ln in open("/etc/os-release"):
            if ln.startswith("PRETTY_NAME="):
                osname = ln.split("=", 1)[1].strip().strip('"')
    return {"cpu": model, "flags": " ".join(keep), "cores": os.cpu_count(), "os": osname,
            "kernel": platform.release()}


def libtorch_of(build):
    cache = os.path.join(build, "CMakeCache.txt")
    text = open(cache).read() if os.path.exists(cache) else ""
    for ln in text.splitlines():
        if ln.startswith("CTORCH_TORCH_VERSION") or ln.startswith("Torch_VERSION"):
            return ln.split("=", 1)[1]
    return "2.15.0 (PyPI)" if "2.15.0" in build else "1.13.1 (Debian)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--build", action="append")
    ap.add_argument("--runs", default="1x1,1x8,2x1")
    ap.add_argument("--append", action="store_true")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--llama-python")
    ap.add_argument("--llama-no-extra-bufts", action="store_true",
                    help="llama.cpp without its extra buffer types (AMX, repacked weights): for a machine whose "
                         "CPU lists AMX but faults on it")
    ap.add_argument("--hf-python")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "lm-cpu.json"))
    a = ap.parse_args()
    builds = [b for b in (a.build or [os.path.join(ROOT, "build")]) if b != "none"]
    pairs = [tuple(int(v) for v in p.split("x")) for p in a.runs.split(",")]
    threads = sorted({t for t, b in pairs if b == 1})
    load0 = os.getloadavg()[0]
    rows, ids = [], {}

    def add(impl, t, b, r):
        rows.append([impl, t, b, r["prefill_tok_s"], r["decode_tok_s"], r["rss_mib"], round(r["load"], 1)])
        print(f"{impl:44s} threads {t} batch {b}: prefill {r['prefill_tok_s']:8.2f} tok/s, "
              f"decode {r['decode_tok_s']:7.2f} tok/s, RSS {r['rss_mib']:.0f} MiB", flush=True)

    common = ["--prompt", str(a.prompt), "--new", str(a.new), "--rounds", str(a.rounds)]
    for build in builds:
        bench = os.path.join(build, "bench", "lm_bench")
        for opts, what in (("", "packed"), ("weights=dequantize", "dequantize")):
            for t, b in pairs:
                cmd = [bench, "--model", a.gguf, "--threads", str(t), "--batch", str(b)] + common
                if opts:
                    cmd += ["--options", opts]
                r = run_json(cmd)
                name = f"ctorch {what}, libtorch {libtorch_of(build)}"
                add(name, t, b, r)
                if b == 1:
                    ids[name] = r["ids"]
    if a.llama_python:
        for t in threads:
            r = run_json([a.llama_python, "-c", LLAMA, a.gguf, str(t), str(a.prompt), str(a.new), str(a.rounds),
                          "1" if a.llama_no_extra_bufts else "0"])
            name = f"llama.cpp (llama-cpp-python {r['version']}" + (", no extra buffer types)"
                                                                    if a.llama_no_extra_bufts else ")")
            add(name, t, 1, r)
            ids[name] = r["ids"]
    if a.hf_python:
        for t in threads:
            r = run_json([a.hf_python, os.path.join(HERE, "hf_bench.py"), "--model", a.gguf, "--threads", str(t),
                          "--batch", "1"] + common)
            name = f"transformers {r['torch'].split('+')[0]} eager (GGUF dequantised, float32)"
            add(name, t, 1, r)
            ids[name] = r["ids"]
    first = next(iter(ids.values()), [])
    agree = {k: sum(x == y for x, y in zip(v, first)) for k, v in ids.items()}
    doc = {"benchmark": "lm-cpu",
           "question": "How fast do ctorch's language models decode a quantised GGUF file on the CPU, with the "
                       "packed kernels and dequantised, beside llama.cpp and transformers?",
           "page": "docs/llm.md", "section": "speed", "runs": []}
    if os.path.exists(a.out):
        doc = json.load(open(a.out))
    def arg(x):  # paths as a reader can type them again
        if os.path.isabs(x) and x.startswith(ROOT + os.sep):
            return os.path.relpath(x, ROOT)
        if x == os.path.abspath(a.gguf):
            return os.path.basename(x)
        home = os.path.expanduser("~")
        return "~" + x[len(home):] if x.startswith(home + os.sep) else x
    argv = sys.argv[1:]
    if "--out" in argv and os.path.abspath(a.out) != os.path.join(ROOT, "bench", "results", "lm-cpu.json"):
        i = argv.index("--out")
        argv = argv[:i] + argv[i + 2:]  # a scratch copy: the record's own command writes the record
    command = "bench/lm/cpu_compare.py " + " ".join(arg(x) for x in argv)
    if a.append and doc["runs"]:
        run = doc["runs"][-1]
        run["figures"][0]["rows"] += rows
        run["command"] += "; " + command
        run["greedy_ids_equal_to_first"].update({k: f"{v}/{len(first)}" for k, v in agree.items()})
        run["conditions"] += f"; appended rows: load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after"
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        return
    run = {
        "date": datetime.date.today().isoformat(),
        "command": command,
        "libtorch": " and ".join(libtorch_of(b) for b in builds) or "none",
        "machine": machine(),
        "conditions": (f"a shared machine: load average {load0:.1f} before and {os.getloadavg()[0]:.1f} after "
                       f"(other builds running), so figures move by 10-30% between runs; {a.rounds} round(s) per "
                       f"point, the median; prompt {a.prompt} ids, {a.new} greedy steps; ctorch's default "
                       "kernels for the CPU (CTORCH_LM_KERNELS unset)"),
        "file": os.path.basename(a.gguf),
        "figures": [{
            "caption": "Prefill and decode tokens per second (every sequence counted), resident memory after the run.",
            "columns": ["implementation", "threads", "batch", "prefill tok/s", "decode tok/s", "RSS MiB", "load"],
            "hidden": ["load"],
            "rows": rows,
        }],
        "greedy_ids_equal_to_first": {k: f"{v}/{len(first)}" for k, v in agree.items()},
    }
    doc["runs"].append(run)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("greedy ids equal to the first implementation's:", run["greedy_ids_equal_to_first"])


if __name__ == "__main__":
    main()
