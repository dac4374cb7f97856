#!/usr/bin/env python3
"""examples/generate.c against Hugging Face transformers' GPT2LMHeadModel.generate
(through its twin examples/generate.py), on a small random model made here:

- a GPT2Config built in code (2 layers, n_embd 512, 8 heads, vocab 2048,
  64 positions: big enough that the optimiser splits the one-row products
  of its MLP and LM head, whose weights reach its smallest split weight,
  2^20 elements; nothing downloaded),
  GPT2LMHeadModel from a seed, every
  parameter then moved off its initial value (zero biases and LayerNorm 1/0
  would not show one loaded into the wrong place), saved with save_pretrained
  as safetensors (lm_head tied to wte, stored once);
- the twin's generate() (examples/generate.py, imported) on the loaded model
  against the C program, case by case;
- greedy: the same new ids (40 after an 8-id prompt, KV cache on both sides);
- sampling, several seeds and warper settings (temperature, top-k, top-p,
  alone and together): the same ids, since generate.c applies transformers'
  warpers op for op and draws with torch.multinomial from a generator seeded
  as torch.manual_seed seeds the default one; the sampled ids must differ from
  the greedy ones and between seeds (a sampler that ignored its generator or
  returned the argmax would fail);
- an eos id (the 6th greedy id): both stop right after its first occurrence;
- generate.c's default runs the model through ctorch_nn_module_optimize_for_inference
  (one-row Linears split across the intra-op threads, oneDNN for the prompt's rows where
  libtorch has it): the cases above run it at 1 thread, and at 2 threads greedy and
  sampled; --no-optimize (plain Linears, logits bit-identical to transformers') at 1 and
  2 threads, greedy and sampled; --device cpu (the default's ids), and --device cuda:
  transformers' ids on the GPU where there is one, else refused with status 2.
Python runs at one intra-op thread. Where transformers' GPT-2 has no logits_to_keep (4.46),
generate.c runs with --all-logits, as that version computes the prompt's logits.

Exit 77 ("skipped: why") when this Python has no transformers (Debian's torch
1.13 gets transformers 4.46.3 from scripts/deps, the torch venvs theirs from
scripts/torch-env).

Usage: generate_vs_transformers.py --c BIN --script examples/generate.py
"""
import argparse
import importlib.util
import inspect
import os
import subprocess
import sys
import tempfile

import torch

try:
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel
except ImportError as e:
    print(f"skipped: transformers cannot be imported with torch {torch.__version__} ({e})")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/pyfork.py
from pyfork import run_script  # noqa: E402


PROMPT = "5,17,42,99,8,64,3,71"
NEW = 40
# (seed, temperature, top_k, top_p): each warper alone, then all three.
SAMPLING = [(0, 1.0, 0, 1.0), (1, 0.7, 0, 1.0), (2, 1.0, 10, 1.0), (3, 1.0, 0, 0.8), (4, 1.3, 20, 0.9),
            (5, 0.9, 5, 0.95)]


def run(cmd):
    if cmd[0] == sys.executable:  # forked from here (pyfork.py): torch and transformers imported once
        p = run_script(cmd[1], cmd[2:], text=True, timeout=300)
    else:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    last = p.stdout.strip().splitlines()[-1]
    return last, [int(v) for v in last.split("ids=")[1].split(",") if v]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True)
    ap.add_argument("--script", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)  # no OpenMP team in this process: generate.py's run is forked from it

    config = GPT2Config(vocab_size=2048, n_positions=64, n_embd=512, n_layer=2, n_head=8,
                        bos_token_id=None, eos_token_id=None)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    failures = []

    # A GPT-2 without logits_to_keep (transformers 4.46) computes the prompt's
    # logits at every position; generate.c does too with --all-logits (the last
    # row of an 8-row product is not rounded as a 1-row product is).
    c_flags = [] if "logits_to_keep" in inspect.signature(GPT2LMHeadModel.forward).parameters else ["--all-logits"]

    # The twin's generate(), called here on one loaded model (a Python start
    # per case took minutes with the torch 2.x venv); its main() is the same call.
    spec = importlib.util.spec_from_file_location("generate_twin", a.script)
    twin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(twin)

    def both(what, extra, **kw):
        base = ["--model", folder, "--prompt", PROMPT, "--new", str(NEW), "--threads", "1", *extra]
        _, c_ids = run([a.c, *base, *c_flags])
        p_ids = twin.generate(loaded, [int(v) for v in PROMPT.split(",")], NEW, **kw)[0]
        same = c_ids == p_ids
        print(f"{what}: {'same' if same else 'DIFFERENT'}\n  C:      {c_ids}\n  Python: {p_ids}")
        if not same:
            failures.append(what)
        return c_ids

    with tempfile.TemporaryDirectory() as d:
        folder = os.path.join(d, "gpt2")
        model.save_pretrained(folder, safe_serialization=True)
        loaded = GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
        greedy = both("greedy", [])
        cli = run([sys.executable, a.script, "--model", folder, "--prompt", PROMPT, "--new", str(NEW), "--threads", "1"])
        if cli[1] != greedy:
            failures.append(f"generate.py from its command line made {cli[1]}")
        if len(greedy) != NEW:
            failures.append(f"greedy made {len(greedy)} ids, not {NEW}")
        sampled = []
        for seed, t, k, p in SAMPLING:
            sampled.append(both(f"sample seed={seed} temperature={t} top_k={k} top_p={p}",
                                ["--sample", "--seed", str(seed), "--temperature", str(t), "--top-k", str(k),
                                 "--top-p", str(p)], sample=True, seed=seed, temperature=t, top_k=k, top_p=p))
        if any(s == greedy for s in sampled) or len({tuple(s) for s in sampled}) != len(sampled):
            failures.append("sampled ids equal the greedy ones or each other's: the draws do not depend on the seed")
        eos = greedy[5]
        stop = greedy.index(eos) + 1
        ids = both(f"greedy with eos={eos}", ["--eos", str(eos)], eos=eos)
        if ids != greedy[:stop]:
            failures.append(f"with eos {eos}, C made {ids}, expected the greedy ids up to it: {greedy[:stop]}")
        # The default (optimised) at 2 threads: one-row products split across both threads.
        # --no-optimize: the plain Linears, bit-identical logits, at 1 and 2 threads.
        seed, t, k, p = SAMPLING[4]
        sample = ["--sample", "--seed", str(seed), "--temperature", str(t), "--top-k", str(k), "--top-p", str(p)]
        both("--threads 2 greedy (optimised)", ["--threads", "2"])
        both(f"--threads 2 sample seed={seed} (optimised)", ["--threads", "2", *sample], sample=True, seed=seed,
             temperature=t, top_k=k, top_p=p)
        for threads in ("1", "2"):
            both(f"--no-optimize --threads {threads} greedy", ["--no-optimize", "--threads", threads])
            both(f"--no-optimize --threads {threads} sample seed={seed}", ["--no-optimize", "--threads", threads,
                                                                          *sample], sample=True, seed=seed,
                 temperature=t, top_k=k, top_p=p)
        # --device: cpu gives the default's ids; cuda, where a GPU is present, the ids of
        # transformers on it; without one it is refused at once (status 2, naming cuda:0).
        if both("--device cpu greedy", ["--device", "cpu"]) != greedy:
            failures.append("--device cpu changed the greedy ids")
        if torch.cuda.is_available():
            loaded = loaded.to("cuda")
            both("--device cuda greedy", ["--device", "cuda"])
        else:
            p = subprocess.run([a.c, "--model", folder, "--prompt", PROMPT, "--new", "2", "--device", "cuda"],
                               capture_output=True, text=True, timeout=120)
            print(f"--device cuda without a GPU: status {p.returncode}: {p.stderr.strip()}")
            if p.returncode != 2 or "cuda:0" not in p.stderr:
                failures.append(f"--device cuda without a GPU: status {p.returncode}, {p.stderr.strip()!r}")
    if failures:
        sys.exit("failed: " + "; ".join(failures))
    print("ok")


if __name__ == "__main__":
    main()
