#!/usr/bin/env python3
"""The harness's output check for BERT (bench/compare):
bench/compare/model_bench.c's BERT from C against ONNX Runtime running the
same model exported by torch.onnx, on a small random BertModel made here
(nothing downloaded): two layers, hidden 64, 4 heads; two rows of 16 ids, the
second padded under the attention mask; one intra-op thread. The
last_hidden_state of the two must agree within --tol (default 1e-4: ONNX
Runtime's kernels sum in other orders than libtorch's, so not bit for bit);
the max abs difference is printed. Times are not checked (bench/compare/run
measures them).

Exit 77 ("skipped: why") when this Python lacks transformers, onnx or
onnxruntime.

Usage: bert_vs_ort.py --bin BUILD/bench/compare/compare_model_bench [--tol T]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torch

try:
    import onnxruntime as ort
    import onnx  # noqa: F401  (torch.onnx.export needs it)
    from safetensors.torch import load_file, save_file
    from transformers import BertConfig, BertModel
except ImportError as e:
    print(f"skipped: transformers, onnx or onnxruntime cannot be imported with torch {torch.__version__} ({e})")
    sys.exit(77)


class Wrap(torch.nn.Module):
    """(ids, mask, types) -> last_hidden_state, the order model_bench.c reads."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids, mask, types):
        return self.m(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=64)
    model = BertModel(cfg).eval()
    with torch.no_grad():  # off the initial values: a bias or norm loaded in the wrong place shows
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    ids = torch.randint(103, 500, (2, 16))
    ids[:, 0] = 101
    ids[0, -1] = ids[1, 11] = 102
    mask = torch.ones_like(ids)
    mask[1, 12:] = 0
    types = torch.zeros_like(ids)
    types[:, 8:] = 1
    with tempfile.TemporaryDirectory() as d:
        model.save_pretrained(d, safe_serialization=True)
        inputs = os.path.join(d, "in.safetensors")
        save_file({"in0": ids, "in1": mask, "in2": types}, inputs)
        onnx_path = os.path.join(d, "model.onnx")
        kw = {"dynamo": False} if int(torch.__version__.split(".")[0]) >= 2 else {}
        with torch.no_grad():
            torch.onnx.export(Wrap(model), (ids, mask, types), onnx_path, opset_version=17,
                              input_names=["in0", "in1", "in2"], output_names=["out"], **kw)
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
        want = torch.from_numpy(sess.run(None, {"in0": ids.numpy(), "in1": mask.numpy(), "in2": types.numpy()})[0])
        out = os.path.join(d, "out.safetensors")
        p = subprocess.run([a.bin, "bert", d, inputs, "1", "1", out], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            sys.exit(f"model_bench failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        got = load_file(out)["out"]
    if got.shape != want.shape:
        sys.exit(f"FAIL: shapes differ: C {tuple(got.shape)}, ONNX Runtime {tuple(want.shape)}")
    diff = (got - want).abs().max().item()
    print(f"last_hidden_state {tuple(got.shape)}: max abs diff C vs ONNX Runtime {ort.__version__} = {diff:.3g}")
    if not diff <= a.tol:  # also catches NaN
        sys.exit(f"FAIL: max abs diff {diff} > {a.tol}")
    print("ok")


if __name__ == "__main__":
    main()
