"""transformers' side of bench/lm: the same measurement as lm_bench.c.

    python hf_bench.py --model DIR|FILE.gguf [--dtype float32|bfloat16] [--device cpu|cuda]
                       [--threads N] [--prompt 128] [--new 128] [--batch 1] [--rounds 3]

Eager transformers (AutoModelForCausalLM, attn_implementation="eager" unless
--sdpa), the prompt ids drawn with lm_bench.c's generator, one forward of the
prompt with a DynamicCache, then greedy steps of one id per sequence with the
cache, argmax read back every step. Prints one JSON object like lm_bench's.
A GGUF file goes through transformers' GGUF loader (dequantised to --dtype;
it needs the gguf and accelerate packages).
"""
import argparse
import json
import resource
import statistics
import time

import torch
from transformers import AutoModelForCausalLM


def prompt_ids(vocab, n):
    x, out, mask = 88172645463325252, [], (1 << 64) - 1
    for _ in range(n):
        x ^= (x << 13) & mask
        x ^= x >> 7
        x ^= (x << 17) & mask
        out.append(x % vocab)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sdpa", action="store_true")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    t0 = time.perf_counter()
    kw = {}
    if a.model.endswith(".gguf"):
        import os
        kw["gguf_file"] = os.path.basename(a.model)
        a.model = os.path.dirname(os.path.abspath(a.model))
    model = AutoModelForCausalLM.from_pretrained(
        a.model, dtype=getattr(torch, a.dtype), attn_implementation="sdpa" if a.sdpa else "eager", **kw).to(dev).eval()
    load_s = time.perf_counter() - t0
    ids = torch.tensor([prompt_ids(model.config.vocab_size, a.prompt)] * a.batch, device=dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    prefill, decode, ttft, first = [], [], [], []
    with torch.inference_mode():
        for _ in range(a.rounds):
            sync()
            t0 = time.perf_counter()
            out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
            step = out.logits[:, -1, :].argmax(-1)
            got = step.tolist()
            t1 = time.perf_counter()
            past, first = out.past_key_values, [got[0]]
            for _ in range(a.new - 1):
                out = model(input_ids=step[:, None], past_key_values=past, use_cache=True)
                past = out.past_key_values
                step = out.logits[:, -1, :].argmax(-1)
                first.append(step.tolist()[0])
            t2 = time.perf_counter()
            ttft.append(t1 - t0)
            prefill.append(a.prompt * a.batch / (t1 - t0))
            decode.append((a.new - 1) * a.batch / (t2 - t1))
    print(json.dumps({
        "load_s": round(load_s, 3), "prompt": a.prompt, "new": a.new, "batch": a.batch, "threads": a.threads,
        "rounds": a.rounds, "prefill_tok_s": round(statistics.median(prefill), 2),
        "decode_tok_s": round(statistics.median(decode), 2), "ttft_ms": round(1e3 * statistics.median(ttft), 2),
        "rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1), "ids": first,
        "torch": torch.__version__, "dtype": a.dtype, "device": a.device}))


if __name__ == "__main__":
    main()
