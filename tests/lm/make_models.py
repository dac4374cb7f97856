#!/usr/bin/env python3
"""Small random-weight causal language models for the lm tests, made with
transformers from a configuration (nothing downloaded) and saved with
save_pretrained as Hugging Face folders (config.json, model.safetensors,
generation_config.json):

  llama    Llama 2 style: grouped-query attention (4 heads, 2 key/value
           heads), untied output head, default RoPE;
  llama3   Llama 3 style: rope_type "llama3" (factor 8, its original context
           16 so that the three frequency bands each hold some of the 8
           frequencies), RoPE base 500000, tied head, attention and MLP biases;
  mistral  sliding_window null, rope_type "linear" (factor 2);
  qwen2    q/k/v biases, tied head;
  gpt2     LayerNorm, learned positions, Conv1D weights, tied head.

Every parameter is drawn again after construction (norm weights around 1,
biases around 0, matrices with std 0.1): a weight loaded into the wrong
place, a bias dropped or a norm skipped changes the logits. Dimensions are
small (64 wide, 2 layers, 512 ids) so that a test takes seconds.

Usage: make_models.py OUT_DIR [NAME...]   (every model when no NAME)
"""
import inspect
import os
import sys

import torch

VOCAB, WIDTH, LAYERS, HEADS, KV_HEADS, FF, POSITIONS = 512, 64, 2, 4, 2, 128, 128
NAMES = ("llama", "llama3", "mistral", "qwen2", "gpt2")


def _rope(cls, theta, scaling):
    """The RoPE keywords of cls: transformers 5's rope_parameters, or the
    older rope_theta and rope_scaling."""
    params = inspect.signature(cls.__init__).parameters
    if "rope_parameters" in params:
        rp = {"rope_type": "default", "rope_theta": theta}
        rp.update(scaling or {})
        return {"rope_parameters": rp}
    kw = {"rope_theta": theta}
    if scaling:
        kw["rope_scaling"] = dict(scaling)
    return kw


def config(name):
    import transformers as tf
    common = dict(vocab_size=VOCAB, hidden_size=WIDTH, intermediate_size=FF, num_hidden_layers=LAYERS,
                  num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=POSITIONS,
                  bos_token_id=1, eos_token_id=2)
    if name == "llama":
        return tf.LlamaConfig(**common, tie_word_embeddings=False, rms_norm_eps=1e-5, **_rope(tf.LlamaConfig, 10000.0, None))
    if name == "llama3":
        scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 16}
        return tf.LlamaConfig(**common, tie_word_embeddings=True, attention_bias=True, mlp_bias=True,
                              rms_norm_eps=1e-5, **_rope(tf.LlamaConfig, 500000.0, scaling))
    if name == "mistral":
        return tf.MistralConfig(**common, sliding_window=None, tie_word_embeddings=False, rms_norm_eps=1e-6,
                                **_rope(tf.MistralConfig, 10000.0, {"rope_type": "linear", "factor": 2.0}))
    if name == "qwen2":
        return tf.Qwen2Config(**common, tie_word_embeddings=True, rms_norm_eps=1e-6,
                              **_rope(tf.Qwen2Config, 1000000.0, None))
    if name == "gpt2":
        return tf.GPT2Config(vocab_size=VOCAB, n_embd=WIDTH, n_layer=LAYERS, n_head=HEADS, n_positions=POSITIONS,
                             bos_token_id=1, eos_token_id=2)
    raise ValueError(name)


def build(name, seed=0):
    """The model (float32, eval mode) of one case, its weights drawn from seed."""
    import transformers as tf
    torch.manual_seed(seed)
    cfg = config(name)
    cls = {"llama": tf.LlamaForCausalLM, "llama3": tf.LlamaForCausalLM, "mistral": tf.MistralForCausalLM,
           "qwen2": tf.Qwen2ForCausalLM, "gpt2": tf.GPT2LMHeadModel}[name]
    model = cls(cfg).eval()
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if p.dim() == 1 and ("norm" in pname or ".ln_" in pname) and pname.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
    return model


def save(name, out_dir, seed=0):
    """Saves the case as a folder out_dir/name; returns (folder, model)."""
    model = build(name, seed)
    folder = os.path.join(out_dir, name)
    model.save_pretrained(folder)
    return folder, model


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for name in sys.argv[2:] or NAMES:
        print(save(name, sys.argv[1])[0])


if __name__ == "__main__":
    main()
