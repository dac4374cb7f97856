#!/usr/bin/env python3
"""The harness's output check for GPT-2 (bench/compare):
examples/generate.c against bench/compare/gpt2_ort.py (ONNX Runtime running
the prefill and one-step graphs exported from the same transformers
GPT2LMHeadModel, KV cache as graph inputs), greedy, on a small random model
made here (nothing downloaded): 2 layers, n_embd 64, 4 heads, vocab 100,
every parameter moved off its initial value; an 8-id prompt, 40 new ids, one
intra-op thread. Both must produce the same 40 ids, and the ids must not all
be one value (a degenerate model would let a broken cache pass). Times are
not checked (bench/compare/run measures them).

Exit 77 ("skipped: why") when this Python lacks transformers, onnx or
onnxruntime (Debian's Python: no onnxruntime).

Usage: gpt2_vs_ort.py --c BUILD/examples/generate
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torch

try:
    import onnx  # noqa: F401  (torch.onnx.export needs it)
    import onnxruntime  # noqa: F401
    from transformers import GPT2Config, GPT2LMHeadModel
except ImportError as e:
    print(f"skipped: transformers, onnx or onnxruntime cannot be imported with torch {torch.__version__} ({e})")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))


def ids_of(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    f = dict(kv.split("=", 1) for kv in p.stdout.strip().splitlines()[-1].split())
    return [int(v) for v in f["ids"].split(",")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True)
    a = ap.parse_args()
    if int(torch.__version__.split(".")[0]) < 2:
        print(f"skipped: gpt2_ort.py exports with dynamo=False, torch {torch.__version__} has no such option")
        sys.exit(77)
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100, n_positions=64, bos_token_id=None,
                     eos_token_id=None)
    model = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():  # off the initial values: a bias or norm loaded in the wrong place shows
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    prompt = "5,17,30,42,7,99,3,25"
    with tempfile.TemporaryDirectory() as d:
        model.save_pretrained(d, safe_serialization=True)
        args = ["--model", d, "--prompt", prompt, "--new", "40", "--threads", "1"]
        c = ids_of([a.c] + args + ["--eos", "-1"])
        o = ids_of([sys.executable, os.path.join(HERE, "gpt2_ort.py")] + args)
    print(f"generate.c: {c}\nONNX Runtime: {o}")
    if len(set(c)) < 4:
        sys.exit(f"FAIL: the model is degenerate ({len(set(c))} distinct ids): the check would prove nothing")
    if c != o:
        first = next(i for i in range(min(len(c), len(o))) if c[i] != o[i]) if len(c) == len(o) else -1
        sys.exit(f"FAIL: the ids differ (first at {first})")
    print("ok: the same 40 greedy ids")


if __name__ == "__main__":
    main()
