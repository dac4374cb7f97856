#!/usr/bin/env python3
"""GPT-2 greedy generation through ONNX Runtime (the fourth way for the
decoder), with the same command line and output line as
examples/generate.py, so bench/compare/compare.py times it beside
examples/generate.c and compares the ids.

ONNX Runtime has no `generate`: a KV-cached decoder is two graphs, exported
here once per model folder with torch.onnx.export(dynamo=False, opset 17)
from the same transformers GPT2LMHeadModel (SDPA attention):
  prefill.onnx  ids [1, P]                 -> last logits [1, V], 2 x n_layer present keys/values
  step.onnx     id [1, 1], pos [1, 1],
                2 x n_layer past [1, H, T, D] -> last logits [1, V], the presents (T + 1)
The loop feeds each step's presents back as the next step's pasts and takes
the argmax: what transformers' greedy generate does with its DynamicCache.

--int8 runs both graphs after ONNX Runtime's own quantize_dynamic (int8
weights, each call's activations quantised: MatMulInteger on MLAS's u8s8
kernels), made once beside them. Without quant_pre_process: it quantises
the same 49 MatMuls of each graph with or without it, and the graphs ran
alike (bench/results/ort-quant-recipe.json).

Usage: gpt2_ort.py --model DIR --prompt "464,3290" [--new N] [--threads T] [--int8]
"""
import argparse
import os
import time

import numpy as np
import torch


def export(d, prompt_len):
    from transformers import DynamicCache, GPT2LMHeadModel
    pre, step = os.path.join(d, f"ort_prefill_{prompt_len}.onnx"), os.path.join(d, "ort_step.onnx")
    if os.path.exists(pre) and os.path.exists(step):
        return pre, step
    m = GPT2LMHeadModel.from_pretrained(d, attn_implementation="sdpa").eval()
    n = m.config.n_layer
    kv = [f"{w}{i}" for i in range(n) for w in ("k", "v")]

    def flat(cache):
        return [t for layer in cache.layers for t in (layer.keys, layer.values)]

    class Prefill(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, ids):
            out = self.m(input_ids=ids, use_cache=True)
            return (out.logits[:, -1, :], *flat(out.past_key_values))

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, ids, pos, *past):
            cache = DynamicCache()
            for i in range(n):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = self.m(input_ids=ids, position_ids=pos, cache_position=pos[0], past_key_values=cache, use_cache=True)
            return (out.logits[:, -1, :], *flat(out.past_key_values))

    ids = torch.zeros(1, prompt_len, dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(Prefill(), (ids,), pre, dynamo=False, opset_version=17, input_names=["ids"],
                          output_names=["logits"] + [f"present_{x}" for x in kv])
        past = Prefill()(ids)[1:]
        pos = torch.tensor([[prompt_len]])
        torch.onnx.export(Step(), (ids[:, :1], pos, *past), step, dynamo=False, opset_version=17,
                          input_names=["id", "pos"] + [f"past_{x}" for x in kv],
                          output_names=["logits"] + [f"present_{x}" for x in kv],
                          dynamic_axes={f"past_{x}": {2: "past"} for x in kv}
                          | {f"present_{x}": {2: "total"} for x in kv})
    return pre, step


def quantized(f):
    """ONNX Runtime's quantize_dynamic of graph f (int8 weights), cached beside it."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    q = f[:-len(".onnx")] + "_int8.onnx"
    if not os.path.exists(q):
        quantize_dynamic(f, q + ".tmp.onnx", weight_type=QuantType.QInt8)
        os.replace(q + ".tmp.onnx", q)
    return q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--new", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--int8", action="store_true")
    a = ap.parse_args()
    import onnxruntime as ort
    prompt = [int(v) for v in a.prompt.split(",")]
    torch.set_num_threads(max(1, a.threads))
    pre_f, step_f = export(a.model, len(prompt))
    if a.int8:
        pre_f, step_f = quantized(pre_f), quantized(step_f)
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = max(1, a.threads), 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    pre = ort.InferenceSession(pre_f, so, providers=["CPUExecutionProvider"])
    step = ort.InferenceSession(step_f, so, providers=["CPUExecutionProvider"])
    past_names = [i.name for i in step.get_inputs()[2:]]

    new = []
    t0, cpu0 = time.perf_counter(), time.process_time()
    out = pre.run(None, {"ids": np.array([prompt], dtype=np.int64)})
    for i in range(a.new):
        tok = int(np.argmax(out[0][0]))
        new.append(tok)
        if i + 1 == a.new:
            break
        feed = {"id": np.array([[tok]], dtype=np.int64), "pos": np.array([[len(prompt) + i]], dtype=np.int64)}
        feed.update(zip(past_names, out[1:]))
        out = step.run(None, feed)
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
    print(f"GPT-2 through ONNX Runtime {ort.__version__} from {a.model}: greedy")
    print(f"prompt={len(prompt)} new={len(new)} seconds={seconds:.6f} tok_per_s={len(new) / seconds:.2f} "
          f"cpu_seconds={cpu_seconds:.6f} ids={','.join(str(v) for v in new)}")


if __name__ == "__main__":
    main()
