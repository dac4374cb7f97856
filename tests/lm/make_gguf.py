#!/usr/bin/env python3
"""GGUF files for the tests, written with the gguf package's GGUFWriter.

  make_gguf.py types OUT.gguf [--seed N] [--version 2|3] [--alignment A]
      every tensor type ctorch reads (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K,
      Q6_K), quantised with gguf.quants where it can quantise (Q4_K and Q6_K
      it only dequantises: their blocks are random bytes with finite
      float16 scales), and metadata of every value type, nested arrays and
      a small byte-level vocabulary included.
  make_gguf.py convert FOLDER OUT.gguf [--type f32|f16|bf16|q8_0|q4_0|q4_1] [--pre NAME]
      a Hugging Face llama or qwen2 folder (config.json, model.safetensors,
      tokenizer.json, tokenizer_config.json) as llama.cpp lays it out: its
      tensor names, its metadata keys, and for llama the rows of attn_q and
      attn_k permuted (permute_qk below). Two-dimensional weights take
      --type; norms and biases stay F32, as llama.cpp keeps them.

Imported by the tests (write_types, convert) and by fuzz/make_seeds.py.
"""
import argparse
import json
import os
import sys

import numpy as np

import gguf
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

# ggml's block sizes in elements and bytes.
BLOCK = {t: gguf.GGML_QUANT_SIZES[t] for t in (Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q4_K, Q.Q6_K)}


def finite_halves(rng, n):
    """n float16 values as bytes, finite, of either sign and a spread of magnitudes."""
    return (rng.standard_normal(n) * 10.0 ** rng.integers(-4, 2, n)).astype(np.float16)


def random_k_blocks(rng, qtype, n_blocks):
    """Random blocks of a K-quant (gguf.quants has no quantiser for them):
    random bytes, with each float16 field overwritten by a finite value."""
    elems, nbytes = BLOCK[qtype]
    b = rng.integers(0, 256, (n_blocks, nbytes), dtype=np.uint8)
    if qtype == Q.Q4_K:  # d, dmin at bytes 0..3
        b[:, 0:4] = finite_halves(rng, 2 * n_blocks).view(np.uint8).reshape(n_blocks, 4)
    else:  # Q6_K: d in the last two bytes
        b[:, -2:] = finite_halves(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return b


def quantized(rng, qtype, shape):
    """(bytes as uint8 rows, the float32 tensor in torch's shape gguf dequantises them to)."""
    elems, nbytes = BLOCK[qtype]
    rows = int(np.prod(shape[:-1]))
    if qtype in (Q.Q4_K, Q.Q6_K):
        data = random_k_blocks(rng, qtype, rows * shape[-1] // elems).reshape(*shape[:-1], shape[-1] // elems * nbytes)
    else:
        data = gguf.quants.quantize(rng.standard_normal(shape).astype(np.float32), qtype)
    return data


def write_types(path, seed=0, version=3, alignment=None, big=False):
    """Writes the every-type file; returns {name: (ggml type name, torch shape)}."""
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(path, "llama")
    if alignment:
        w.add_custom_alignment(alignment)
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 3.25)
    w.add_bool("test.bool", True)
    w.add_string("test.string", "héllo ✓ GGUF")
    w.add_uint64("test.u64", 18000000000000000000)
    w.add_int64("test.i64", -9000000000000000000)
    w.add_float64("test.f64", 2.5e-300)
    w.add_array("test.arr_i32", [1, -2, 3])
    w.add_key_value("test.arr_u8", [0, 7, 255], V.ARRAY, sub_type=V.UINT8)
    w.add_key_value("test.arr_i64", [-5, 1 << 40], V.ARRAY, sub_type=V.INT64)
    w.add_key_value("test.arr_f32", [0.5, -1.25, 1e-3], V.ARRAY, sub_type=V.FLOAT32)
    w.add_key_value("test.arr_f64", [0.1, 1e300], V.ARRAY, sub_type=V.FLOAT64)
    w.add_array("test.arr_bool", [True, False, True])
    w.add_array("test.arr_str", ["a", "", "ünïcode", "x" * 300])
    w.add_key_value("test.nested", [[1, 2], [3]], V.ARRAY, sub_type=V.ARRAY)
    w.add_uint32("llama.context_length", 64)
    # A small byte-level vocabulary (what a "gpt2" tokenizer's keys hold).
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(["<|endoftext|>", "a", "b", "ab", "Ġ", "<|im_start|>"])
    w.add_token_types([3, 1, 1, 1, 1, 3])
    w.add_token_merges(["a b"])
    w.add_bos_token_id(5)
    w.add_eos_token_id(0)
    w.add_add_bos_token(False)
    w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")

    shapes = {"f32": (3, 5), "f16": (4, 6), "bf16": (2, 3, 4), "f32_1d": (7,), "f32_4d": (2, 1, 3, 2),
              "q8_0": (3, 64), "q4_0": (2, 96), "q4_1": (5, 32), "q4_k": (2, 512), "q6_k": (3, 256),
              "q4_0_3d": (2, 2, 32)}
    out = {}
    for name, shape in shapes.items():
        kind = name.split("_")[0] if not name.startswith(("q4_", "q6_", "q8_")) else "_".join(name.split("_")[:2])
        if kind == "f32":
            w.add_tensor(name, rng.standard_normal(shape).astype(np.float32))
            out[name] = ("F32", shape)
        elif kind == "f16":
            w.add_tensor(name, rng.standard_normal(shape).astype(np.float16))
            out[name] = ("F16", shape)
        elif kind == "bf16":
            bits = gguf.quants.quantize(rng.standard_normal(shape).astype(np.float32), Q.BF16)
            w.add_tensor(name, bits, raw_dtype=Q.BF16)
            out[name] = ("BF16", shape)
        else:
            qtype = Q[kind.upper()]
            w.add_tensor(name, quantized(rng, qtype, shape), raw_dtype=qtype)
            out[name] = (qtype.name, shape)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if version == 2:  # GGUF v2 differs from v3 only in the number (v3 added big-endian files)
        with open(path, "r+b") as f:
            f.seek(4)
            f.write((2).to_bytes(4, "little"))
    return out


# ---- Hugging Face folder -> GGUF --------------------------------------------

def permute_qk(w, n_head):
    """Rows of q_proj/k_proj from transformers' rotate-half order (the two
    halves of each head's dimension rotated together) to ggml's pairwise
    order (dimensions 2i and 2i+1 rotated together), which llama.cpp's
    "llama" architecture uses: within each head, row h*D + j (j < D/2)
    moves to h*D + 2j and row h*D + D/2 + j to h*D + 2j + 1. n_head: the
    projection's heads (n_head_kv for k_proj)."""
    rows = w.shape[0]
    d = rows // n_head
    return w.reshape(n_head, 2, d // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute_qk(w, n_head):
    """The inverse of permute_qk: ggml's pairwise rows back to rotate-half order."""
    rows = w.shape[0]
    d = rows // n_head
    return w.reshape(n_head, d // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


HF_TO_GGUF = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
LAYER = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def gguf_name(hf):
    if hf in HF_TO_GGUF:
        return HF_TO_GGUF[hf]
    parts = hf.split(".")
    if parts[:2] == ["model", "layers"] and ".".join(parts[3:]) in LAYER:
        return f"blk.{parts[2]}.{LAYER['.'.join(parts[3:])]}"
    raise ValueError(f"no GGUF name for tensor {hf!r}")


def load_weights(folder):
    """name -> float32 numpy array, from model.safetensors or its sharded index."""
    from safetensors import safe_open
    index = os.path.join(folder, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    out = {}
    for fn in files:
        with safe_open(os.path.join(folder, fn), "pt") as f:  # torch: bf16 has no numpy dtype
            for k in f.keys():
                out[k] = f.get_tensor(k).float().numpy()
    return out


def add_vocab(w, folder, pre):
    """tokenizer.json's byte-level BPE (GGUF's "gpt2" model) and
    tokenizer_config.json's specials and chat template."""
    tj = json.load(open(os.path.join(folder, "tokenizer.json"), encoding="utf-8"))
    tc_path = os.path.join(folder, "tokenizer_config.json")
    tc = json.load(open(tc_path, encoding="utf-8")) if os.path.exists(tc_path) else {}
    model = tj["model"]
    if model.get("type") != "BPE" or model.get("byte_fallback"):
        raise ValueError("convert writes byte-level BPE vocabularies (GGUF's gpt2 model) only")
    vocab = dict(model["vocab"])
    added = {t["content"]: t for t in tj.get("added_tokens", [])}
    for t in added.values():
        vocab.setdefault(t["content"], t["id"])
    n = max(vocab.values()) + 1
    tokens, types = [f"[PAD{i}]" for i in range(n)], [5] * n  # holes: unused, as llama.cpp fills them
    for text, i in vocab.items():
        tokens[i] = text
        a = added.get(text)
        types[i] = (3 if a["special"] else 4) if a else 1
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    if merges:
        w.add_token_merges(merges)

    def special_id(name):
        t = tc.get(name)
        t = t.get("content") if isinstance(t, dict) else t
        return vocab.get(t) if t is not None else None

    for name, add in (("bos_token", w.add_bos_token_id), ("eos_token", w.add_eos_token_id),
                      ("unk_token", w.add_unk_token_id), ("pad_token", w.add_pad_token_id)):
        i = special_id(name)
        if i is not None:
            add(i)
    if "add_bos_token" in tc:
        w.add_add_bos_token(bool(tc["add_bos_token"]))
    if "add_eos_token" in tc:
        w.add_add_eos_token(bool(tc["add_eos_token"]))
    if isinstance(tc.get("chat_template"), str):
        w.add_chat_template(tc["chat_template"])


OUT_TYPES = {"f32": Q.F32, "f16": Q.F16, "bf16": Q.BF16, "q8_0": Q.Q8_0, "q4_0": Q.Q4_0, "q4_1": Q.Q4_1}
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q8_0": 7, "bf16": 32}  # llama_ftype


def convert(folder, path, out_type="f32", pre=None):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    arch = cfg["model_type"]
    if arch not in ("llama", "qwen2"):
        raise ValueError(f"convert knows llama and qwen2, not {arch!r}")
    n_head = cfg["num_attention_heads"]
    n_head_kv = cfg.get("num_key_value_heads") or n_head
    n_embd = cfg["hidden_size"]
    head_dim = cfg.get("head_dim") or n_embd // n_head
    w = gguf.GGUFWriter(path, arch)
    w.add_name(os.path.basename(os.path.normpath(folder)))
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(n_embd)
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_freq_base(cfg.get("rope_theta", 10000.0))
    w.add_rope_dimension_count(head_dim)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_vocab_size(cfg["vocab_size"])
    w.add_file_type(FILE_TYPE[out_type])
    if os.path.exists(os.path.join(folder, "tokenizer.json")):
        add_vocab(w, folder, pre or {"llama": "llama-bpe", "qwen2": "qwen2"}[arch])
    qtype = OUT_TYPES[out_type]
    for hf, t in load_weights(folder).items():
        if hf == "lm_head.weight" and cfg.get("tie_word_embeddings"):
            continue  # tied: llama.cpp reads token_embd for the head
        name = gguf_name(hf)
        if arch == "llama" and name.endswith(("attn_q.weight", "attn_q.bias")):
            t = permute_qk(t, n_head)
        elif arch == "llama" and name.endswith(("attn_k.weight", "attn_k.bias")):
            t = permute_qk(t, n_head_kv)
        t = np.ascontiguousarray(t, dtype=np.float32)
        tq = qtype if t.ndim == 2 else Q.F32
        if tq in (Q.Q8_0, Q.Q4_0, Q.Q4_1) and t.shape[-1] % BLOCK[tq][0]:
            tq = Q.F16  # rows not whole blocks: llama.cpp's fallback as well
        if tq == Q.F32:
            w.add_tensor(name, t)
        elif tq == Q.F16:
            w.add_tensor(name, t.astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(t, tq), raw_dtype=tq)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("types")
    t.add_argument("out")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--version", type=int, default=3, choices=(2, 3))
    t.add_argument("--alignment", type=int)
    c = sub.add_parser("convert")
    c.add_argument("folder")
    c.add_argument("out")
    c.add_argument("--type", default="f32", choices=sorted(OUT_TYPES))
    c.add_argument("--pre")
    a = ap.parse_args()
    if a.cmd == "types":
        write_types(a.out, a.seed, a.version, a.alignment)
    else:
        convert(a.folder, a.out, a.type, a.pre)


if __name__ == "__main__":
    sys.exit(main())
