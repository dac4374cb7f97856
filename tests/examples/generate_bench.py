#!/usr/bin/env python3
"""Generation speed: examples/generate.c against transformers' generate
(examples/generate.py) on a GPT-2-small-shaped model (12 layers, n_embd 768,
12 heads, vocab 50257, random weights from a seed, saved with save_pretrained;
nothing downloaded): a 32-id prompt, 128 new ids, greedy, KV cache on, one
intra-op thread. Prints each program's tok/s (128 new ids over the whole
generate call, prompt included; model loading excluded) and whether the ids
are the same. Python runs with the eager attention (generate.c's) and with
transformers' default SDPA. A measurement, not a test: no ctest entry.

Usage: generate_bench.py --c build/examples/generate --script examples/generate.py
                         [--threads 1] [--keep DIR]
"""
import argparse
import os
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
    return float(fields["tok_per_s"]), fields["ids"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--threads", type=int, default=1)
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
        c_rate, c_ids = run([a.c, *args])
        eager_rate, eager_ids = run([sys.executable, a.script, *args, "--attn", "eager"])
        sdpa_rate, sdpa_ids = run([sys.executable, a.script, *args, "--attn", "sdpa"])
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {a.threads} thread(s)")
    print(f"C generate.c:                 {c_rate:8.2f} tok/s")
    print(f"transformers generate, eager: {eager_rate:8.2f} tok/s  (C/Python {c_rate / eager_rate:.3f}), "
          f"ids {'same' if eager_ids == c_ids else 'DIFFERENT'}")
    print(f"transformers generate, sdpa:  {sdpa_rate:8.2f} tok/s  (C/Python {c_rate / sdpa_rate:.3f}), "
          f"ids {'same' if sdpa_ids == c_ids else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
