#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz harnesses (run once; the output is kept
in the repository under fuzz/corpus/, then grown and minimised by scripts/fuzz).
Needs a Python with torch (the build's CTORCH_TORCH_PYTHON).
Usage: make_seeds.py [OUT [HARNESS...]]  (default: fuzz/corpus, every harness).
The optim seeds written by ctorch_optimizer_save need libctorch: set
CTORCH_LIB to its path (else only the torch.save state dicts are written).
The gguf seeds need the gguf package (tests/lm/make_gguf.py writes them)."""
import collections
import ctypes
import gzip
import io
import json
import os
import random
import re
import struct
import sys
import zipfile

import torch

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
only = set(sys.argv[2:])
rng = random.Random(7)


def wanted(harness):
    return not only or harness in only


def write(harness, name, data):
    if not wanted(harness):
        return
    d = os.path.join(out, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def saved(obj):
    b = io.BytesIO()
    torch.save(obj, b)
    return b.getvalue()


def records(zbytes):
    z = zipfile.ZipFile(io.BytesIO(zbytes))
    return {n.split("/", 1)[1]: z.read(n) for n in z.namelist()}


# --- checkpoint: raw files (first byte even) and pickle + storage (odd) ---
lin = torch.nn.Linear(3, 2)
objs = {
    "tensor_f32": torch.arange(6, dtype=torch.float32).reshape(2, 3),
    "tensor_t": torch.arange(6, dtype=torch.float64).reshape(2, 3).t(),
    "state_dict": lin.state_dict(),
    "dict_mixed": {"a": torch.tensor([1, 2, 3]), "b": torch.tensor([True, False]), "c": torch.tensor(2.5, dtype=torch.float16)},
    "param": torch.nn.Parameter(torch.ones(2, 2)),
    "empty": torch.zeros(0, 3),
}
for name, obj in objs.items():
    z = saved(obj)
    write("checkpoint", "raw_" + name, b"\x00" + z)
    r = records(z)
    pkl = r["data.pkl"]
    storage = r.get("data/0", b"")
    write("checkpoint", "pkl_" + name, b"\x01" + struct.pack("<H", len(pkl)) + pkl + storage)

# --- torchscript: raw archive (first byte even), or code/data/constants parts (odd) ---


class M(torch.nn.Module):
    # No submodules: all its code sits in code/__torch__.py, the one code
    # record the "parts" mode of the harness writes.
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2, 2))
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        return torch.relu(x @ self.w) * self.scale


for name, mod in {"scripted": torch.jit.script(M()), "traced": torch.jit.trace(M(), torch.ones(1, 2))}.items():
    b = io.BytesIO()
    torch.jit.save(mod, b)
    z = b.getvalue()
    write("torchscript", "raw_" + name, b"\x00" + z)
    r = records(z)
    code = r.get("code/__torch__.py", b"")
    parts = [code, r.get("data.pkl", b""), r.get("constants.pkl", b"")]
    write("torchscript", "parts_" + name, b"\x01" + b"".join(struct.pack("<H", len(p)) + p for p in parts) + r.get("data/0", b""))

# --- interpreter and DLPack: random programs / descriptions ---
for i in range(24):
    write("interp", "rand_%02d" % i, bytes(rng.randrange(256) for _ in range(rng.choice([32, 96, 200]))))
for i in range(12):
    write("dlpack", "rand_%02d" % i, bytes(rng.randrange(256) for _ in range(48)))


def records_form(zbytes):
    """A zip as fuzz/zip_writer.h's records_archive reads it back:
    [u8 name length][name][u16 length][data] per record."""
    z = zipfile.ZipFile(io.BytesIO(zbytes))
    b = b""
    for n in z.namelist():
        name, data = n.encode(), z.read(n)
        assert len(name) < 256 and len(data) < 65536
        b += bytes([len(name)]) + name + struct.pack("<H", len(data)) + data
    return b


# --- optim: first byte = loader (bit 0) | records form (bit 1) | kind << 2 | two groups (bit 5) ---
KINDS = {"sgd": 0, "adam": 1, "adamw": 2, "rmsprop": 3, "adagrad": 4}


def optim_params():
    w = torch.nn.Parameter(torch.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]]))
    b = torch.nn.Parameter(torch.tensor([0.5, -0.5, 1.0]))
    return w, b


def optim_seed(kind, two_groups, state_dict, zbytes, tag):
    mode = (1 if state_dict else 0) | (KINDS[kind] << 2) | (0x20 if two_groups else 0)
    name = "%s_%s_%s" % ("sd" if state_dict else "archive", kind, "2g" if two_groups else "1g")
    write("optim", "raw_%s%s" % (name, tag), bytes([mode]) + zbytes)
    write("optim", "rec_%s%s" % (name, tag), bytes([mode | 2]) + records_form(zbytes))


if wanted("optim"):
    # Python's state dicts (ctorch_optimizer_load_state_dict), after one step.
    makers = {"sgd": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
              "adam": lambda p: torch.optim.Adam(p, lr=1e-3),
              "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3, amsgrad=True)}
    for kind, make in makers.items():
        for two in (False, True):
            w, b = optim_params()
            opt = make([{"params": [w]}, {"params": [b]}] if two else [w, b])
            (w.sum() * 0.25 + b.sum() * 0.25).backward()
            opt.step()
            optim_seed(kind, two, True, saved(opt.state_dict()), "")
    # ctorch_optimizer_save's archives (ctorch_optimizer_load), every kind.
    lib_path = os.environ.get("CTORCH_LIB")
    if lib_path:
        lib = ctypes.CDLL(lib_path)
        lib.ctorch_last_error.restype = ctypes.c_char_p
        T = ctypes.c_void_p

        def tensor(vals, shape, grad):
            t, g = T(), T()
            arr = (ctypes.c_float * len(vals))(*vals)
            sh = (ctypes.c_int64 * len(shape))(*shape)
            assert lib.ctorch_tensor_from_data(ctypes.byref(t), arr, ctypes.sizeof(arr), sh, len(shape), 9) == 0
            if grad:
                assert lib.ctorch_tensor_set_requires_grad(t, 1) == 0
                gv = (ctypes.c_float * len(vals))(*([0.25] * len(vals)))
                assert lib.ctorch_tensor_from_data(ctypes.byref(g), gv, ctypes.sizeof(gv), sh, len(shape), 9) == 0
                assert lib.ctorch_tensor_set_grad(t, g) == 0
                lib.ctorch_tensor_free(g)
            return t

        path = os.path.join(out, ".optim.tmp")
        for kind, k in KINDS.items():
            for two in (False, True):
                p = (T * 2)(tensor([1, -2, 3, -4, 5, -6], [2, 3], True), tensor([0.5, -0.5, 1], [3], True))
                opt = T()
                assert lib.ctorch_optimizer_new(ctypes.byref(opt), k, p, 1 if two else 2, None) == 0
                if two:
                    assert lib.ctorch_optimizer_add_param_group(opt, ctypes.byref(p, ctypes.sizeof(T)), 1, None) == 0
                st = lib.ctorch_optimizer_step(opt)
                assert st == 0, (kind, two, lib.ctorch_last_error())
                assert lib.ctorch_optimizer_save(opt, path.encode()) == 0
                with open(path, "rb") as f:
                    optim_seed(kind, two, False, f.read(), "")
                if kind in ("sgd", "adam", "adamw"):
                    assert lib.ctorch_optimizer_save_state_dict(opt, path.encode()) == 0
                    with open(path, "rb") as f:
                        optim_seed(kind, two, True, f.read(), "_ctorch")
                lib.ctorch_optimizer_free(opt)
                for t in p:
                    lib.ctorch_tensor_free(T(t))  # ctypes gives the elements as ints
        os.remove(path)

# --- idx: first byte = MNIST pair (bit 0) | gzip here (bit 1) | second member or garbage (bit 2) ---


def idx(code, shape, values):
    fmt = {0x08: "B", 0x09: "b", 0x0B: ">h", 0x0C: ">i", 0x0D: ">f", 0x0E: ">d"}[code]
    head = struct.pack(">BBBB", 0, 0, code, len(shape)) + b"".join(struct.pack(">I", d) for d in shape)
    return head + b"".join(struct.pack(fmt, v) for v in values)


idx_files = {
    "ubyte_3d": idx(0x08, [2, 3, 4], range(24)),
    "byte_1d": idx(0x09, [5], [-2, -1, 0, 1, 2]),
    "short_2d": idx(0x0B, [2, 2], [-300, 300, 1, -1]),
    "int_1d": idx(0x0C, [3], [1 << 20, -7, 0]),
    "float_2d": idx(0x0D, [1, 3], [0.5, -1.5, 3.25]),
    "double_1d": idx(0x0E, [2], [1e300, -2.5]),
    "empty": idx(0x08, [0, 4], []),
}
for name, data in idx_files.items():
    write("idx", "plain_" + name, b"\x00" + data)
    write("idx", "gz_here_" + name, b"\x02" + data)
    write("idx", "gz_file_" + name, b"\x00" + gzip.compress(data, mtime=0))
# Bit 2: an even length gets a second gzip member, an odd one garbage after the first.
assert len(idx_files["ubyte_3d"]) % 2 == 0
write("idx", "gz_two_members", b"\x06" + idx_files["ubyte_3d"])
write("idx", "gz_trailing_garbage", b"\x06" + idx_files["ubyte_3d"] + b"\x00")
images, labels = idx(0x08, [3, 2, 2], range(12)), idx(0x08, [3], [1, 2, 9])
write("idx", "mnist_plain", b"\x01" + struct.pack("<H", len(images)) + images + labels)
write("idx", "mnist_gz_here", b"\x03" + struct.pack("<H", len(images)) + images + labels)
# --- nn_args: first byte = the kind's index in fuzz_nn_args.cpp's kKinds, then the constructor text ---
here = os.path.dirname(os.path.abspath(__file__))
src = open(os.path.join(here, "fuzz_nn_args.cpp")).read()
kinds = re.findall(r'"([A-Za-z0-9]+)"', src[src.index("kKinds[] = {"):src.index("};", src.index("kKinds[] = {"))])
cases_dir = os.path.join(here, "..", "tests", "nn", "cases")
seen = set()
for fname in sorted(os.listdir(cases_dir)):
    for line in open(os.path.join(cases_dir, fname)):
        cols = [c.strip() for c in line.split("|")]
        if line.startswith("#") or len(cols) < 3 or cols[1] not in kinds or (cols[1], cols[2]) in seen:
            continue
        seen.add((cols[1], cols[2]))
        text = "" if cols[2] == "-" else cols[2]
        write("nn_args", f"{cols[0]}", bytes([kinds.index(cols[1])]) + text.encode())
P62 = str(1 << 62)
for name, kind, text in [
        ("lstm_huge_layers", "LSTM", f"10, 20, num_layers={P62}"),
        ("gru_many_layers", "GRU", "1, 1, num_layers=300000"),
        ("enc_huge_layers", "TransformerEncoder", f"torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16), {P62}"),
        ("transformer_huge", "Transformer", f"8, 2, num_encoder_layers={P62}"),
        ("embedding_huge", "Embedding", f"{P62}, 2"),
        ("linear_overflow", "Linear", "4294967296, 4294967297"),
        ("layernorm_overflow", "LayerNorm", "[65536, 65536, 65536, 65536]")]:
    write("nn_args", name, bytes([kinds.index(kind)]) + text.encode())

# --- tb_strings: first byte = entry point (0 scalar, 1 histogram, 2 image, 3 text, 4 hparams, 5 hparams
# with a run name, 6 file-name suffix), then NUL-separated strings ---
tb = {
    "scalar_ascii": (0, [b"train/loss"]),
    "scalar_utf8": (0, ["été/日本/😀".encode()]),
    "scalar_surrogate": (0, [b"a\xed\xa0\x80b"]),
    "histogram_overlong": (1, [b"\xc0\xafw"]),
    "image_max": (2, ["img/􏿿".encode()]),
    "image_past_max": (2, [b"img/\xf4\x90\x80\x80"]),
    "text_body": (3, [b"notes", "hello **world** é".encode()]),
    "text_truncated": (3, [b"notes", b"caf\xc3"]),
    "hparams": (4, [b"lr", b"optimizer", b"adam", b"hparam/acc"]),
    "hparams_bad_value": (4, [b"lr", b"opt", b"\xed\xbf\xbf", b"m"]),
    "hparams_run": (5, [b"lr", b"opt", b"sgd", b"m", "runé".encode()]),
    "hparams_bad_run": (5, [b"lr", b"opt", b"sgd", b"m", b"run\xff"]),
    "suffix": (6, [".v2é".encode()]),
    "suffix_cesu": (6, [b"\xed\xa0\xbd\xed\xb8\x80"]),
}
for name, (op, strings) in tb.items():
    write("tb_strings", name, bytes([op]) + b"\x00".join(strings))
# --- image: first byte = mode (bits 0-2: 1 + value % 5) | ctorch_image_read (bit 3) | pixel limit
# 4,096 (bit 4), then a PNG (tests/image/png_encode.py: every colour type and depth, Adam7, tRNS)
# or a JPEG (Pillow: gray, RGB, progressive, CMYK), truncated copies and bomb headers ---
if wanted("image"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "image"))
    import zlib

    import png_encode

    imgs = {}
    for color, depths in {0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 4, 8], 4: [8], 6: [8, 16]}.items():
        for depth in depths:
            ch = png_encode.CHANNELS[color]
            top = min((1 << depth) - 1, 3) if color == 3 else (1 << depth) - 1
            px = [[tuple(rng.randint(0, top) for _ in range(ch)) for _ in range(5)] for _ in range(4)]
            pal = [(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(4)] if color == 3 else None
            trns = b"\x80\x00" if color == 3 else None
            imgs[f"png_c{color}_d{depth}"] = png_encode.encode(px, 5, 4, color, depth, depth == 8, pal, trns)
    # Bomb headers: the size is checked before anything is allocated.
    imgs["png_bomb"] = (b"\x89PNG\r\n\x1a\n" + png_encode.chunk(b"IHDR", struct.pack(">IIBBBBB", 60000, 60000, 8, 6, 0, 0, 0))
                        + png_encode.chunk(b"IDAT", zlib.compress(b"\x00" * 4096)) + png_encode.chunk(b"IEND", b""))
    try:
        from PIL import Image
        for name, mode, kw in [("jpeg_gray", "L", {}), ("jpeg_rgb", "RGB", {"subsampling": 2}),
                               ("jpeg_rgb444", "RGB", {"subsampling": 0}), ("jpeg_prog", "RGB", {"progressive": True}),
                               ("jpeg_cmyk", "CMYK", {})]:
            im = Image.new(mode, (9, 7))
            im.putdata([tuple(rng.randrange(256) for _ in range(len(mode))) if len(mode) > 1 else rng.randrange(256)
                        for _ in range(63)])
            b = io.BytesIO()
            im.save(b, "JPEG", quality=80, **kw)
            imgs[name] = b.getvalue()
        j = bytearray(imgs["jpeg_rgb"])
        k = j.find(b"\xff\xc0")
        j[k + 5:k + 9] = struct.pack(">HH", 60000, 60000)
        imgs["jpeg_bomb"] = bytes(j)
    except ImportError:
        print("Pillow missing: no JPEG seeds for image")
    for i, (name, data) in enumerate(sorted(imgs.items())):
        write("image", name, bytes([i % 5]) + data)
        write("image", name + "_read_trunc", bytes([8 | (i % 5)]) + data[: len(data) * 2 // 3])
if wanted("gguf"):
    # GGUF files from tests/lm/make_gguf.py (the gguf package's writer):
    # every metadata and tensor type, v2 and v3, two alignments, and a file
    # of metadata alone; small, so the fuzzer's mutations reach every part.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lm"))
    try:
        import tempfile
        import make_gguf
        with tempfile.TemporaryDirectory() as tmp:
            for name, kw in (("types_v3", {}), ("types_v2", {"version": 2}), ("types_align64", {"alignment": 64}),
                             ("types_seed1", {"seed": 1})):
                p = os.path.join(tmp, name)
                make_gguf.write_types(p, **kw)
                write("gguf", name, open(p, "rb").read())
        write("gguf", "header_only", b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 17)
              + b"general.alignment" + struct.pack("<II", 4, 64))
    except ImportError as e:
        print("gguf package missing: no seeds for gguf", e)

# tokenizer: tiny tokenizer.json files of each layout shim/lm reads (trained
# with Hugging Face tokenizers on a few lines: tests/lm/tokenizer_ref.py's
# layouts), each with its tokenizer_config.json and a text; and GGUF-like
# vocabularies (fuzz/fuzz_tokenizer.cpp's odd form).
if wanted("tokenizer"):
    try:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lm"))
        import tokenizer_ref
        lines = ["Hello world, it's 2026!", "  indented\tcode(x) -> y", "Привет мир 😀 日本語", "<s> don't </s>",
                 "<|tool|> [MASK] foo_bar <|im_start|>"] * 4
        text = "Héllo  <s> wörld\n\n😀 12345 <|tool|>[MASK] don't".encode()
        for kind in ["sp_legacy", "sp_metaspace", "llama3_bl", "qwen2_bl", "gpt2_bl"]:
            tk, names = tokenizer_ref.trained(kind, lines)
            tj = tk.to_str().encode()
            cfg = dict(names, clean_up_tokenization_spaces=(kind == "gpt2_bl"))
            if kind == "sp_legacy":
                cfg.update(tokenizer_class="LlamaTokenizer", add_bos_token=True)
            cj = json.dumps(cfg).encode()
            write("tokenizer", kind, b"\x00" + struct.pack("<H", len(tj)) + tj + struct.pack("<H", len(cj)) + cj + text)
    except ImportError:
        print("tokenizers missing: no tokenizer.json seeds")
    def vocab_seed(flags, pre, toks, merges, bos, text):
        b = bytes([1, flags, pre]) + struct.pack("<H", len(toks))
        for t, ty in toks:
            b += bytes([len(t)]) + t + bytes([ty])
        for m in merges:
            b += bytes([len(m)]) + m
        return b + b"\xff" + struct.pack("<H", bos + 1) + text
    toks = [(b"<|endoftext|>", 3), (b"<|im_start|>", 3)] + [(bytes([c]), 1) for c in range(33, 127)] + [("\u0120".encode(), 1)]
    toks += [("\u0120h".encode(), 1), (b"he", 1), (b"ll", 1), (b"hell", 1), (b"hello", 1)]
    merges = ["\u0120 h".encode(), b"h e", b"l l", b"he ll", b"hell o"]
    for pre in range(6):
        write("tokenizer", "gguf_gpt2_pre%d" % pre, vocab_seed(2 | 16, pre, toks, merges, 1, b" hello <|im_start|>hell 123"))
    sp = [(b"<unk>", 2), (b"<s>", 3), (b"</s>", 3)] + [(("<0x%02X>" % i).encode(), 6) for i in range(256)]
    sp += [("\u2581".encode(), 1), (b"h", 1), (b"e", 1), (b"l", 1), (b"o", 1), ("\u2581h".encode(), 1), (b"ll", 1),
           ("\u2581hell".encode(), 1), ("\u2581hello".encode(), 1)]
    write("tokenizer", "gguf_llama", vocab_seed(1 | 2 | 8 | 16, 0, sp, [], 1, "hello <s> héllo 😀".encode()))
    # Decoder chains, the usual and the odd (steps on the joined text, a
    # pattern of two characters, byte tokens a step makes): StreamDecoder's
    # cuts against one decode. The vocabulary mixes what the steps act on
    # (spaces, U+2581, byte tokens, half characters); the text's bytes are
    # also the harness's drawn ids.
    pieces = ["a", "b", " ", "n", "'", "t", ".", "\u2581", "\u2581a", "\u00e9", "\u4e2d", "\U0001F600", "\u0120", "\u0120a",
              "\u010a", "<0x41>", "<0xC3>", "<0xA9>", "<0xE4>", "<0x20>", "<0xFF>", "<0x", "1>", "\u00c3", "\u00a9", "\n"]
    def step(kind, *args):
        if kind == "Replace":
            return {"type": kind, "pattern": {"String": args[0]}, "content": args[1]}
        if kind == "Strip":
            return {"type": kind, "content": args[0], "start": args[1], "stop": args[2]}
        if kind == "Metaspace":
            return {"type": kind, "replacement": "\u2581", "prepend_scheme": args[0], "split": True}
        return {"type": kind}
    chains = [[step("ByteLevel")],
              [step("Replace", "\u2581", " "), step("ByteFallback"), step("Fuse"), step("Strip", " ", 1, 0)],
              [step("ByteFallback"), step("Metaspace", "first")],
              [step("Metaspace", "always")],
              [],
              [step("Fuse"), step("ByteLevel")],
              [step("Strip", "\u2581", 1, 1), step("ByteFallback")],
              [step("ByteLevel"), step("Replace", "ab", " "), step("Fuse"), step("Replace", "\u2581\u2581", "")],
              [step("Strip", "a", 2, 0), step("Fuse"), step("ByteLevel")],
              [step("Replace", " ", "'"), step("ByteFallback"), step("Fuse"), step("Strip", " ", 0, 1)],
              [step("ByteFallback"), step("ByteLevel"), step("ByteFallback")],
              [step("Replace", "a", "<0x41>"), step("ByteFallback"), step("Fuse"), step("Strip", "a", 2, 0)]]
    for i, chain in enumerate(chains):
        vocab = {}
        for _ in range(40):
            vocab.setdefault("".join(rng.choice(pieces) for _ in range(rng.choice([1, 1, 2, 3]))), len(vocab))
        added = [{"id": len(vocab) + k, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": False, "special": k == 0} for k, c in enumerate(["<s>", "<|x|>"])]
        tj = json.dumps({"version": "1.0", "added_tokens": added, "normalizer": None, "pre_tokenizer": None,
                         "post_processor": None, "decoder": {"type": "Sequence", "decoders": chain} if chain else None,
                         "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                                   "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": i % 2 == 1,
                                   "ignore_merges": False, "vocab": vocab, "merges": []}}, ensure_ascii=False).encode()
        cj = json.dumps({"clean_up_tokenization_spaces": i % 3 == 0}).encode()
        ids = b"".join(struct.pack("<H", rng.randrange(len(vocab) + 2) + 1) for _ in range(64))
        write("tokenizer", "decoders_%02d" % i, b"\x00" + struct.pack("<H", len(tj)) + tj + struct.pack("<H", len(cj)) + cj + ids)
print("seeds written under", out)
