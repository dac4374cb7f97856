"""Writes a random-weight Hugging Face folder of a named shape, for bench/lm.

    python make_folder.py NAME DIR [--no-weights]

NAME: smollm2-135m (SmolLM2-135M's shape: llama, 30 layers, width 576,
9 query / 3 KV heads, vocabulary 49,152, tied head) or llama-1b (TinyLlama
1.1B's shape: 22 layers, width 2048, 32 / 4 heads, MLP 5632, vocabulary
32,000). Weights drawn by transformers' own initialisation after
torch.manual_seed(0), saved with save_pretrained; --no-weights writes only
config.json (for ctorch's init=random, which needs no weight files).
"""
import argparse
import os

import torch
from transformers import LlamaConfig, LlamaForCausalLM

SHAPES = {
    "smollm2-135m": dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, rope_theta=100000.0,
                         max_position_embeddings=8192, tie_word_embeddings=True, rms_norm_eps=1e-5),
    "llama-1b": dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                     num_attention_heads=32, num_key_value_heads=4, rope_theta=10000.0,
                     max_position_embeddings=2048, tie_word_embeddings=False, rms_norm_eps=1e-5),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name", choices=sorted(SHAPES))
    ap.add_argument("dir")
    ap.add_argument("--no-weights", action="store_true")
    a = ap.parse_args()
    cfg = LlamaConfig(bos_token_id=1, eos_token_id=2, **SHAPES[a.name])
    os.makedirs(a.dir, exist_ok=True)
    if a.no_weights:
        cfg.save_pretrained(a.dir)
        return
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(a.dir)


if __name__ == "__main__":
    main()
