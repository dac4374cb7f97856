#!/usr/bin/env python3
"""The Python twin of examples/generate.c: a transformers GPT2LMHeadModel
loaded from a save_pretrained folder, in eval mode, generating from the same
prompt ids with GPT2LMHeadModel.generate (KV cache on), greedily or by
sampling after torch.manual_seed(seed); the same output lines.

--attn eager (the default) is the attention generate.c computes; --attn sdpa
is transformers' own default (scaled_dot_product_attention), for timing.

--device (default cpu) is where the model, the prompt and its attention mask
live; on CUDA the timing ends after torch.cuda.synchronize(), and sampling
draws from CUDA's default generator (seeded by torch.manual_seed too), so
its ids need not be generate.c's, which draws on the CPU.

Usage: generate.py --model DIR --prompt "464,3290,318" [--new N] [--sample] [--seed S]
                   [--temperature T] [--top-k K] [--top-p P] [--eos ID] [--threads T]
                   [--attn eager|sdpa] [--device cpu|cuda[:N]]
"""
import argparse
import re
import time

import torch
from transformers import GPT2LMHeadModel

try:
    import torch.distributed.fsdp  # noqa: F401  (what generate() imports to ask whether the model is FSDP's)
except Exception:  # Debian's torch 1.13 under Python 3.11: its FSDP package fails to import (a dataclass
    # with a mutable default); the model is not FSDP-managed, so answer generate()'s question without it.
    import transformers.generation.utils as _gen_utils

    _gen_utils.is_fsdp_managed_module = lambda module: False


def generate(model, prompt, new, sample=False, seed=0, temperature=1.0, top_k=0, top_p=1.0, eos=-2):
    """The new ids, and the wall-clock and CPU seconds generate() took. eos -2: the config's; -1: none.
    The prompt is made on the model's device."""
    eos = model.config.eos_token_id if eos == -2 else (None if eos < 0 else eos)
    device = model.device
    prompt = torch.tensor([prompt], dtype=torch.int64, device=device)
    # Every option given explicitly: generate's defaults (top_k 50 when
    # sampling) and the model's generation_config would otherwise apply.
    kwargs = dict(max_new_tokens=new, min_new_tokens=0, do_sample=sample, num_beams=1, use_cache=True,
                  attention_mask=torch.ones_like(prompt), eos_token_id=eos,
                  pad_token_id=eos if eos is not None else 0)
    if sample:
        kwargs.update(temperature=temperature, top_k=top_k, top_p=top_p)
    with torch.no_grad():
        torch.manual_seed(seed)  # multinomial draws from the default generator
        t0, cpu0 = time.perf_counter(), time.process_time()
        out = model.generate(prompt, **kwargs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # the device's work done before the clock is read
        seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
    return out[0, prompt.shape[1]:].tolist(), seconds, cpu_seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--new", type=int, default=20)
    ap.add_argument("--sample", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--top-k", type=int, default=0)
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--eos", type=int, default=-2)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--attn", choices=("eager", "sdpa"), default="eager")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    if not re.fullmatch(r"cpu|cuda(:[0-9]+)?", a.device):
        ap.error(f"--device {a.device}: expected cpu, cuda or cuda:N")
    device = torch.device("cuda:0" if a.device == "cuda" else a.device)  # generate.c's cuda is cuda:0 too
    if device.type == "cuda" and device.index >= torch.cuda.device_count():  # exit status 2, as generate.c
        ap.error(f"--device {a.device}: {device} is not available ({torch.cuda.device_count()} CUDA device(s))")

    model = GPT2LMHeadModel.from_pretrained(a.model, attn_implementation=a.attn).eval().to(device)
    prompt = [int(v) for v in a.prompt.split(",")]
    new, seconds, cpu_seconds = generate(model, prompt, a.new, a.sample, a.seed, a.temperature, a.top_k, a.top_p, a.eos)

    c = model.config
    print(f"GPT-2 from {a.model}: {c.n_layer} layers, n_embd {c.n_embd}, {c.n_head} heads, vocab {c.vocab_size}; "
          f"{'sampling' if a.sample else 'greedy'}{f' on {device}' if device.type == 'cuda' else ''}")
    print(f"prompt={len(prompt)} new={len(new)} seconds={seconds:.6f} "
          f"tok_per_s={len(new) / seconds if seconds > 0 else 0:.2f} cpu_seconds={cpu_seconds:.6f} ids={','.join(str(v) for v in new)}")


if __name__ == "__main__":
    main()
