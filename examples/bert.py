#!/usr/bin/env python3
"""The Python twin of examples/bert.c: a transformers BertModel loaded from a
save_pretrained folder, in eval mode with the eager attention, run on the same
token rows; the same output lines and the same --out file.

Usage: bert.py --model DIR --ids "101,7,8,102;101,9,102,0" [--mask ROWS] [--types ROWS]
               [--threads T] [--out PATH]
"""
import argparse

import torch
from safetensors.torch import save_file
from transformers import BertModel


def rows(text):
    return torch.tensor([[int(v) for v in row.split(",")] for row in text.split(";")], dtype=torch.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--ids", required=True)
    ap.add_argument("--mask")
    ap.add_argument("--types")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)

    model = BertModel.from_pretrained(a.model, attn_implementation="eager").eval()
    ids = rows(a.ids)
    mask = rows(a.mask) if a.mask else torch.ones_like(ids)
    types = rows(a.types) if a.types else torch.zeros_like(ids)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, token_type_ids=types)
    hidden, pooled = out.last_hidden_state, out.pooler_output

    c = model.config
    print(f"BERT encoder from {a.model}: {c.num_hidden_layers} layers, hidden {c.hidden_size}, "
          f"{c.num_attention_heads} heads")
    if a.out:
        save_file({"last_hidden_state": hidden.contiguous(), "pooler_output": pooled.contiguous()}, a.out)
        print(f"wrote last_hidden_state and pooler_output to {a.out}")
    b, l, h = hidden.shape
    print(f"batch={b} seq={l} hidden={h} sum={hidden.sum().item():.9g} pooled_sum={pooled.sum().item():.9g}")


if __name__ == "__main__":
    main()
