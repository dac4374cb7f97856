#!/usr/bin/env python3
"""make_gguf.py's converter against transformers' own GGUF loader.

Usage: gguf_convert_vs_transformers.py GGUF_DUMP

For a small random-weight llama (grouped-query attention, untied head) and
qwen2 (q/k/v biases, tied head), each saved by save_pretrained with a
byte-level BPE tokenizer trained here (no download): the folder converted to
an F32 GGUF reads back through transformers' load_gguf_checkpoint (which
undoes llama.cpp's Q/K permutation and maps its names) as exactly the
folder's weights and configuration; the same folder converted to Q8_0 opens
in ctorch's reader (tests/lm/gguf_dump.cpp) with its vocabulary, special ids
and chat template, 2-D weights Q8_0 and norms F32.
"""
import inspect
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from optional_deps import need  # noqa: E402

np = need("numpy")
need("gguf", "the converter writes with the gguf package")
torch = need("torch")
transformers = need("transformers")
tokenizers = need("tokenizers")
need("safetensors")
import make_gguf  # noqa: E402
from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


TEMPLATE = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"


def save_tokenizer(folder):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    t.train_from_iterator(["hello world", "the quick brown fox jumps over the lazy dog", "ünïcode ✓"] * 10, tr)
    f = transformers.PreTrainedTokenizerFast(tokenizer_object=t, bos_token="<|im_start|>", eos_token="<|im_end|>")
    f.chat_template = TEMPLATE
    f.save_pretrained(folder)
    return t.get_vocab_size()


def make_model(arch, folder):
    n_vocab = save_tokenizer(folder)
    kw = dict(vocab_size=n_vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=50000.0,
              tie_word_embeddings=arch == "qwen2")
    cls = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
           "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM)}[arch]
    torch.manual_seed(0)
    m = cls[1](cls[0](**kw)).eval()
    if arch == "qwen2":  # random biases (zeros at init would hide a permutation of them)
        with torch.no_grad():
            for layer in m.model.layers:
                for p in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                    p.bias.normal_()
    m.save_pretrained(folder)
    return m, n_vocab


def main():
    dump = sys.argv[1]
    # The permutation is its own inverse's inverse, and transformers' inverse undoes it.
    w = np.arange(8 * 16 * 3, dtype=np.float32).reshape(8 * 16, 3)
    check(np.array_equal(make_gguf.unpermute_qk(make_gguf.permute_qk(w, 8), 8), w), "unpermute_qk(permute_qk(w))")
    from transformers.modeling_gguf_pytorch_utils import reverse_permute_weights
    check(np.array_equal(reverse_permute_weights(make_gguf.permute_qk(w, 8), 8, 8), w),
          "transformers' reverse_permute_weights undoes permute_qk")
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ("llama", "qwen2"):
            folder = os.path.join(tmp, arch)
            m, n_vocab = make_model(arch, folder)
            f32 = os.path.join(folder, "f32.gguf")
            make_gguf.convert(folder, f32, "f32")
            kw = {"return_tensors": True}
            if "model_to_load" in inspect.signature(load_gguf_checkpoint).parameters:
                kw["model_to_load"] = m  # transformers 5 maps the names through the model
            back = load_gguf_checkpoint(f32, **kw)
            tied = arch == "qwen2"  # the head is the embedding: neither file holds it
            sd = {k: v for k, v in m.state_dict().items() if not (tied and k == "lm_head.weight")}
            got = {k: torch.as_tensor(v) for k, v in back["tensors"].items() if not (tied and k == "lm_head.weight")}
            check(set(got) == set(sd), f"{arch}: tensor names {sorted(set(got) ^ set(sd))}")
            for k in sd:
                if k in got:
                    check(torch.equal(got[k].float(), sd[k]), f"{arch}: {k} differs after the round trip")
            cfg = back["config"]
            for key in ("hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads",
                        "num_key_value_heads", "max_position_embeddings", "vocab_size"):
                check(cfg.get(key) == getattr(m.config, key), f"{arch}: config {key} {cfg.get(key)}")
            check(abs(cfg["rope_theta"] - 50000.0) < 1e-3, f"{arch}: rope_theta {cfg['rope_theta']}")
            check(abs(cfg["rms_norm_eps"] - 1e-5) < 1e-10, f"{arch}: rms_norm_eps {cfg['rms_norm_eps']}")

            q8 = os.path.join(folder, "q8_0.gguf")
            make_gguf.convert(folder, q8, "q8_0")
            r = subprocess.run([dump, "info", q8], capture_output=True, text=True)
            check(r.returncode == 0, f"{arch}: gguf_dump info: {r.stderr}")
            info = json.loads(r.stdout)
            v = info["vocab"]
            check(v["n_tokens"] == n_vocab and bytes.fromhex(v["model"]) == b"gpt2", f"{arch}: vocabulary {v}")
            check((v["bos"], v["eos"]) == (1, 2), f"{arch}: bos/eos {v['bos']}, {v['eos']}")
            check(bytes.fromhex(v["chat_template"]).decode() == TEMPLATE, f"{arch}: chat template")
            types = {bytes.fromhex(t["name"]).decode(): t["type_name"] for t in info["tensors"]}
            check(types["blk.0.attn_q.weight"] == "Q8_0" and types["blk.0.attn_norm.weight"] == "F32",
                  f"{arch}: tensor types {types}")
            check(("output.weight" in types) == (arch == "llama"), f"{arch}: output.weight present iff untied")
            print(f"{arch}: {len(sd)} tensors and the configuration equal after transformers' GGUF loader; "
                  f"Q8_0 file read by ctorch ({len(types)} tensors, {n_vocab} tokens)")
    if failures:
        print(f"{len(failures)} failures")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
