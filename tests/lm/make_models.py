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
  mistral  a sliding window of 6 positions (shorter than the prompt),
           rope_type "linear" (factor 2);
  qwen2    q/k/v biases, tied head;
  qwen2_window  qwen2 with use_sliding_window: a window of 5 in the layers
           from max_window_layers (1) on, the whole context before;
  gpt2     LayerNorm, learned positions, Conv1D weights, tied head.

Every parameter is drawn again after construction (norm weights around 1,
biases around 0, matrices with std 0.1): a weight loaded into the wrong
place, a bias dropped or a norm skipped changes the logits. Dimensions are
small (64 wide, 2 layers, 512 ids) so that a test takes seconds.

GGUF files of some of them (save_gguf, with PyPI's gguf package: its
writer, its tensor-name map, its quantisers), written as llama.cpp's
convert_hf_to_gguf.py writes them: {arch}.* metadata, llama's q/k rows
permuted for llama.cpp's interleaved RoPE, gpt2's Conv1D matrices
transposed, Llama 3's RoPE scaling as a rope_freqs tensor of factors, a
tied head without an output tensor; matrices stored in a quantised type
(GGUF_TYPES, some in another one: GGUF_TYPE_OF, as llama.cpp's mixed
files hold them), norms and biases in F32. save_gguf also puts the weights the
file holds back into the model (the quantised matrices dequantised), so the
model is the reference for the file.

Usage: make_models.py OUT_DIR [NAME...]   (every model when no NAME)
"""
import inspect
import os
import sys

import torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/optional_deps.py
from optional_deps import need  # noqa: E402

VOCAB, WIDTH, LAYERS, HEADS, KV_HEADS, FF, POSITIONS = 512, 64, 2, 4, 2, 128, 128
NAMES = ("llama", "llama3", "mistral", "qwen2", "qwen2_window", "gpt2")


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
    need("transformers", "the reference models are its own")
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
        return tf.MistralConfig(**common, sliding_window=6, tie_word_embeddings=False, rms_norm_eps=1e-6,
                                **_rope(tf.MistralConfig, 10000.0, {"rope_type": "linear", "factor": 2.0}))
    if name in ("qwen2", "qwen2_window"):
        window = dict(use_sliding_window=True, sliding_window=5, max_window_layers=1) if name == "qwen2_window" else {}
        return tf.Qwen2Config(**common, tie_word_embeddings=True, rms_norm_eps=1e-6, **window,
                              **_rope(tf.Qwen2Config, 1000000.0, None))
    if name == "gpt2":
        return tf.GPT2Config(vocab_size=VOCAB, n_embd=WIDTH, n_layer=LAYERS, n_head=HEADS, n_positions=POSITIONS,
                             bos_token_id=1, eos_token_id=2)
    raise ValueError(name)


def build(name, seed=0):
    """The model (float32, eval mode) of one case, its weights drawn from seed."""
    need("transformers", "the reference models are its own")
    import transformers as tf
    torch.manual_seed(seed)
    cfg = config(name)
    cls = {"llama": tf.LlamaForCausalLM, "llama3": tf.LlamaForCausalLM, "mistral": tf.MistralForCausalLM,
           "qwen2": tf.Qwen2ForCausalLM, "qwen2_window": tf.Qwen2ForCausalLM, "gpt2": tf.GPT2LMHeadModel}[name]
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


# The type of each case's matrices in its GGUF file.
GGUF_TYPES = {"llama": "Q8_0", "llama3": "F32", "qwen2": "F16", "gpt2": "Q4_1"}
# Matrices of a case in another type (by a part of transformers' name): the
# llama file's v and up projections are Q4_0, so its stacked q/k/v and
# gate/up each hold two formats (llama.cpp's Q4_K_M files mix v this way).
GGUF_TYPE_OF = {"llama": {"v_proj": "Q4_0", "up_proj": "Q4_0"}}


def _llama3_factors(cfg):
    """convert_hf_to_gguf.py's rope_freqs for rope_type llama3."""
    import math
    rp = getattr(cfg, "rope_parameters", None) or cfg.rope_scaling
    theta = rp.get("rope_theta", getattr(cfg, "rope_theta", None))
    dim = cfg.head_dim
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, lo, hi, old = (rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"],
                           rp["original_max_position_embeddings"])
    out = []
    for freq in freqs.tolist():
        wavelen = 2 * math.pi / freq
        if wavelen < old / hi:
            out.append(1.0)
        elif wavelen > old / lo:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(out, dtype=torch.float32)


def save_gguf(name, model, path):
    """Writes model as a GGUF file at path; replaces the model's matrices by
    what the file holds (dequantised)."""
    import gguf
    from make_gguf import permute_qk  # llama.cpp's q/k row order (tests/lm/make_gguf.py)
    cfg = model.config
    arch = {"llama": "llama", "llama3": "llama", "qwen2": "qwen2", "gpt2": "gpt2"}[name]
    qtype = getattr(gguf.GGMLQuantizationType, GGUF_TYPES[name])
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(POSITIONS)
    w.add_embedding_length(WIDTH)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FF if arch != "gpt2" else 4 * WIDTH)
    w.add_head_count(HEADS)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    if arch == "gpt2":
        w.add_layer_norm_eps(cfg.layer_norm_epsilon)
    else:
        rp = getattr(cfg, "rope_parameters", None) or {"rope_theta": cfg.rope_theta}
        w.add_head_count_kv(KV_HEADS)
        w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
        w.add_rope_freq_base(rp["rope_theta"])
        w.add_rope_dimension_count(WIDTH // HEADS)
    names = gguf.get_tensor_name_map(getattr(gguf.MODEL_ARCH, arch.upper()), LAYERS)
    state = model.state_dict()
    with torch.no_grad():
        for hf_name, t in state.items():
            if name in ("llama3", "qwen2", "gpt2") and hf_name == "lm_head.weight":
                continue  # tied: llama.cpp reads token_embd
            if hf_name.endswith(".attn.bias") or hf_name.endswith(".attn.masked_bias"):
                continue
            gname = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
            if gname is None:
                raise ValueError(f"no GGUF name for {hf_name}")
            data = t.float()
            conv = arch == "gpt2" and data.dim() == 2 and (".attn." in hf_name or ".mlp." in hf_name)
            if conv:
                data = data.t().contiguous()
            stored = data
            if arch == "llama" and "q_proj" in hf_name:
                stored = permute_qk(data, HEADS)
            elif arch == "llama" and "k_proj" in hf_name:
                stored = permute_qk(data, KV_HEADS)
            qtype = getattr(gguf.GGMLQuantizationType, next(
                (t for part, t in GGUF_TYPE_OF.get(name, {}).items() if part in hf_name), GGUF_TYPES[name]))
            if data.dim() == 2 and qtype == gguf.GGMLQuantizationType.F16:
                w.add_tensor(gname, stored.numpy().astype("float16"))
                back = data.half().float()
            elif data.dim() == 2 and qtype != gguf.GGMLQuantizationType.F32:
                q = gguf.quants.quantize(stored.numpy(), qtype)
                w.add_tensor(gname, q, raw_shape=q.shape, raw_dtype=qtype)
                # Blocks lie along rows and the permutation moves whole rows:
                # the unpermuted matrix quantised the same way is what the file holds.
                back = torch.from_numpy(gguf.quants.dequantize(gguf.quants.quantize(data.numpy(), qtype), qtype).copy())
            else:
                w.add_tensor(gname, stored.numpy())
                back = data
            t.copy_(back.t() if conv else back)
        if name == "llama3":
            w.add_tensor(gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.ROPE_FREQS] + ".weight", _llama3_factors(cfg).numpy())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    need("transformers", "the reference models are its own")
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for name in sys.argv[2:] or NAMES:
        print(save(name, sys.argv[1])[0])


if __name__ == "__main__":
    main()
