"""GGUF files for bench/lm/cpu_compare.py, and what a GGUF file reads per token.

    python bench_models.py llama1b SRC.gguf OUT.gguf [--seed 0]
    python bench_models.py info FILE.gguf

llama1b writes TinyLlama-1.1B's shape (llama, 22 layers, width 2048, 32 query
/ 4 KV heads, MLP 5632, context 2048) as F16 with seeded random weights
(normal * 0.02; the RMS norms' weights are ones), and copies SRC's tokenizer
(every tokenizer.* key) so that llama.cpp and ctorch both load it with SRC's
vocabulary. Decode speed depends on the shapes, not on the values, so such a
file measures a 1B model without downloading one.

info prints one JSON object: every tensor's bytes and elements in the file, the token
embedding's bytes, elements and whether it is quantised, whether the output head is tied to the
embedding (no output.weight), the elements held in quantised types, and the
bytes one decode step of llama.cpp reads: every tensor but the token embedding (of which
a step reads one row), or every tensor where the head is tied (the head then
reads the whole embedding).

Needs the gguf and numpy packages (the torch-2.15.0 venv has both).
"""
import argparse
import json

import numpy as np
import gguf

SHAPE = dict(n_layer=22, n_embd=2048, n_head=32, n_head_kv=4, n_ff=5632, n_ctx=2048)


def write_llama1b(src, out, seed):
    reader = gguf.GGUFReader(src)
    vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    w = gguf.GGUFWriter(out, "llama")
    w.add_name("random llama 1.1B shape (TinyLlama), tokenizer of " + src.rsplit("/", 1)[-1])
    w.add_context_length(SHAPE["n_ctx"])
    w.add_embedding_length(SHAPE["n_embd"])
    w.add_block_count(SHAPE["n_layer"])
    w.add_feed_forward_length(SHAPE["n_ff"])
    w.add_head_count(SHAPE["n_head"])
    w.add_head_count_kv(SHAPE["n_head_kv"])
    w.add_rope_freq_base(10000.0)
    w.add_rope_dimension_count(SHAPE["n_embd"] // SHAPE["n_head"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    for key, field in reader.fields.items():
        if key.startswith("tokenizer."):
            sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
            w.add_key_value(key, field.contents(), field.types[0], sub)
    rng = np.random.default_rng(seed)
    e, kv = SHAPE["n_embd"], SHAPE["n_embd"] // SHAPE["n_head"] * SHAPE["n_head_kv"]

    def rand(*shape):  # numpy's (rows, columns): GGUF stores it as ne = (columns, rows)
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    ones = np.ones(e, dtype=np.float32)
    w.add_tensor("token_embd.weight", rand(vocab, e))
    for i in range(SHAPE["n_layer"]):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", ones)
        w.add_tensor(p + "attn_q.weight", rand(e, e))
        w.add_tensor(p + "attn_k.weight", rand(kv, e))
        w.add_tensor(p + "attn_v.weight", rand(kv, e))
        w.add_tensor(p + "attn_output.weight", rand(e, e))
        w.add_tensor(p + "ffn_norm.weight", ones)
        w.add_tensor(p + "ffn_gate.weight", rand(SHAPE["n_ff"], e))
        w.add_tensor(p + "ffn_up.weight", rand(SHAPE["n_ff"], e))
        w.add_tensor(p + "ffn_down.weight", rand(e, SHAPE["n_ff"]))
    w.add_tensor("output_norm.weight", ones)
    w.add_tensor("output.weight", rand(vocab, e))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def info(path):
    r = gguf.GGUFReader(path)
    floats = {gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16, gguf.GGMLQuantizationType.BF16}
    total = sum(int(t.n_bytes) for t in r.tensors)
    embd = next(t for t in r.tensors if t.name == "token_embd.weight")
    tied = not any(t.name == "output.weight" for t in r.tensors)
    types = {}
    for t in r.tensors:
        if t.tensor_type not in floats:
            types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
    return {"tensor_bytes": total, "token_embd_bytes": int(embd.n_bytes), "token_embd_elements": int(embd.n_elements),
            "tied": tied, "elements": sum(int(t.n_elements) for t in r.tensors),
            "token_embd_quantised": embd.tensor_type not in floats,
            "quantised_elements": sum(int(t.n_elements) for t in r.tensors if t.tensor_type not in floats),
            "quantised_types": types,
            "bytes_per_token": total if tied else total - int(embd.n_bytes)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["llama1b", "info"])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.what == "llama1b":
        write_llama1b(a.paths[0], a.paths[1], a.seed)
    else:
        print(json.dumps(info(a.paths[0])))


if __name__ == "__main__":
    main()
