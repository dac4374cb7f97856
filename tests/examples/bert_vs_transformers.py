#!/usr/bin/env python3
"""examples/bert.c against Hugging Face transformers' BertModel (through its
twin examples/bert.py), on a small random model made here:

- a BertConfig built in code (nothing downloaded), BertModel from a seed, every
  parameter then moved off its initial value (biases 0 and LayerNorm 1/0 would
  not show a bias or norm loaded into the wrong place), saved with
  save_pretrained as safetensors;
- the same token rows for both, with padding under the attention mask and two
  token types; one intra-op thread;
- last_hidden_state and pooler_output must be within --tol (default 0:
  bit-identical) of transformers'; the max abs difference is printed;
- the mask works in C: a padded row's real positions match the same row run
  alone without padding (within 1e-5: other shapes, other summation blocks).

Exit 77 ("skipped: why") when this Python has no transformers (for Debian's
torch 1.13, scripts/deps installs transformers 4.46.3, the last line of 4.x
tried with it; the torch venvs get transformers from scripts/torch-env).

Usage: bert_vs_transformers.py --c BIN --script examples/bert.py [--tol T]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torch

try:
    import transformers
    from safetensors.torch import load_file
    from transformers import BertConfig, BertModel
except ImportError as e:
    print(f"skipped: transformers or safetensors cannot be imported with torch {torch.__version__} ({e})")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/pyfork.py
from pyfork import run_script  # noqa: E402


IDS = [[101, 17, 42, 99, 8, 64, 102], [101, 5, 77, 102, 0, 0, 0], [101, 33, 12, 61, 90, 102, 0]]
MASK = [[1] * 7, [1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1, 0]]
TYPES = [[0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 0, 0, 0], [0, 0, 0, 0, 1, 1, 0]]


def text(rows):
    return ";".join(",".join(str(v) for v in r) for r in rows)


def run(cmd):
    if cmd[0] == sys.executable:  # forked from here (pyfork.py): torch and transformers imported once
        p = run_script(cmd[1], cmd[2:], text=True, timeout=120)
    else:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p.stdout.strip().splitlines()[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--tol", type=float, default=0.0)
    a = ap.parse_args()
    torch.set_num_threads(1)  # no OpenMP team in this process: bert.py's run is forked from it

    # Head size 16: transformers 4.x divides the scores by sqrt(16), 5.x
    # multiplies them by 16**-0.5 (bert.c): the same number only for powers of 4.
    config = BertConfig(vocab_size=128, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                        intermediate_size=96, max_position_embeddings=32, type_vocab_size=2)
    torch.manual_seed(0)
    model = BertModel(config)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)

    with tempfile.TemporaryDirectory() as d:
        folder = os.path.join(d, "bert")
        model.save_pretrained(folder, safe_serialization=True)
        args = ["--model", folder, "--ids", text(IDS), "--mask", text(MASK), "--types", text(TYPES), "--threads", "1"]
        c_out, p_out, alone_out = (os.path.join(d, n) for n in ("c.safetensors", "py.safetensors", "alone.safetensors"))
        c_last = run([a.c, *args, "--out", c_out])
        p_last = run([sys.executable, a.script, *args, "--out", p_out])
        print(f"torch {torch.__version__}, transformers {transformers.__version__}")
        print(f"C:      {c_last}\nPython: {p_last}")
        c, p = load_file(c_out), load_file(p_out)
        worst = 0.0
        for k in ("last_hidden_state", "pooler_output"):
            if c[k].shape != p[k].shape:
                sys.exit(f"{k}: C shape {list(c[k].shape)}, transformers {list(p[k].shape)}")
            diff = (c[k].double() - p[k].double()).abs().max().item()
            same = torch.equal(c[k], p[k])
            print(f"{k} {list(c[k].shape)}: max abs difference {diff:.3g}{' (bit-identical)' if same else ''}")
            if not diff <= a.tol:
                sys.exit(f"{k}: C and transformers {diff:.3g} apart, tolerance {a.tol}")
            worst = max(worst, diff)
        if worst == 0 and c_last != p_last:
            sys.exit("bit-identical tensors but different output lines")

        # Row 1 alone, unpadded: its four real positions must not depend on the padding.
        n = sum(MASK[1])
        run([a.c, "--model", folder, "--ids", text([IDS[1][:n]]), "--types", text([TYPES[1][:n]]),
             "--threads", "1", "--out", alone_out])
        alone = load_file(alone_out)
        diff = (alone["last_hidden_state"][0] - c["last_hidden_state"][1, :n]).abs().max().item()
        print(f"padded row vs the same row alone: max abs difference {diff:.3g}")
        if not diff <= 1e-5:
            sys.exit("the attention mask does not hide the padding in bert.c")
    print("ok")


if __name__ == "__main__":
    main()
