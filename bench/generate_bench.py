#!/usr/bin/env python3
"""Generation speed: examples/generate.c against transformers' generate
(examples/generate.py) on a GPT-2-small-shaped model (12 layers, n_embd 768,
12 heads, vocab 50257, random weights from a seed, saved with save_pretrained;
nothing downloaded): a 32-id prompt, 128 new ids, greedy, KV cache on, one
intra-op thread. Prints each program's tok/s (128 new ids over the whole
generate call, prompt included; model loading excluded), by the clock and per
CPU second of the process (on a shared machine the clock also counts the
waits for a core), the median of --rounds interleaved rounds, and whether the
ids are the same. Python runs with the eager attention (generate.c's) and
with transformers' default SDPA. A measurement, not a test: no ctest entry.

Usage: bench/generate_bench.py --c build/examples/generate --script examples/generate.py
                         [--threads 1] [--rounds 3] [--keep DIR]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    last = p.stdout.strip().splitlines()[-1]
    fields = dict(kv.split("=", 1) for kv in last.split())
    return float(fields["tok_per_s"]), int(fields["new"]) / float(fields["cpu_seconds"]), fields["ids"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", help="a folder for the model (reused if it holds one)")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory() as d:
        folder = a.keep or os.path.join(d, "gpt2-small")
        if not os.path.exists(os.path.join(folder, "model.safetensors")):
            torch.manual_seed(0)
            config = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024,
                                bos_token_id=None, eos_token_id=None)
            GPT2LMHeadModel(config).save_pretrained(folder, safe_serialization=True)
        g = torch.Generator().manual_seed(1)
        prompt = ",".join(str(v) for v in torch.randint(0, 50257, (32,), generator=g).tolist())
        args = ["--model", folder, "--prompt", prompt, "--new", "128", "--threads", str(a.threads)]
        # transformers refuses SDPA below torch 2.1.1 (Debian's 1.13).
        ways = {"C generate.c": [a.c, *args],
                "transformers generate, eager": [sys.executable, a.script, *args, "--attn", "eager"]}
        if int(torch.__version__.split(".")[0]) >= 2:
            ways["transformers generate, sdpa"] = [sys.executable, a.script, *args, "--attn", "sdpa"]
        rates, cpu_rates, ids = {w: [] for w in ways}, {w: [] for w in ways}, {}
        for r in range(a.rounds):  # interleaved: a shared machine's load hits every way alike
            for w, cmd in ways.items():
                rate, cpu_rate, ids[w] = run(cmd)
                rates[w].append(rate)
                cpu_rates[w].append(cpu_rate)
            print(f"round {r + 1}: " + ", ".join(f"{w} {rates[w][-1]:.2f} ({cpu_rates[w][-1]:.2f} per CPU s)"
                                                 for w in ways), flush=True)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {a.threads} thread(s), "
          f"median of {a.rounds} interleaved rounds: tok/s by the clock / per CPU second")
    c, c_cpu = statistics.median(rates["C generate.c"]), statistics.median(cpu_rates["C generate.c"])
    for w in ways:
        m, m_cpu = statistics.median(rates[w]), statistics.median(cpu_rates[w])
        line = f"{w:30s} {m:8.2f} / {m_cpu:8.2f}"
        if not w.startswith("C "):
            line += (f"  C/Python {c / m:.3f} / {c_cpu / m_cpu:.3f}, "
                     f"ids {'same' if ids[w] == ids['C generate.c'] else 'DIFFERENT'}")
        print(line)

if __name__ == "__main__":
    main()
