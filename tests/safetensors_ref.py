"""The Python side of tests/test_safetensors.c, with PyPI's `safetensors`
package (installed by scripts/deps for Debian's Python, by scripts/torch-env
into the PyPI torch venvs).

  safetensors_ref.py DIR          writes, with safetensors.torch.save_file:
      all.safetensors             one tensor of every dtype this torch has
                                  (bf16, fp16, fp8 and uint16/32/64 where it
                                  has them), a 0-d and an empty one, metadata;
      <name>.bin + manifest.txt   each tensor's raw bytes, and one line per
                                  tensor: name dtype nbytes ndim sizes...;
      sharded/                    a checkpoint split as Hugging Face splits
                                  one: model-0000K-of-00002.safetensors and
                                  model.safetensors.index.json.
  safetensors_ref.py check DIR    reads what the C test wrote with
                                  safetensors.torch.load_file: c_one.safetensors
                                  (one metadata entry) must equal all.safetensors's
                                  tensors bit for bit and be byte-identical to
                                  what save_file writes for them;
                                  c_meta.safetensors (three entries) equal, with
                                  the same header as JSON.
Exit 77 when the package is missing (the C test then reports itself skipped).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/optional_deps.py
from optional_deps import need  # noqa: E402

torch = need("torch")
safetensors = need("safetensors")
load_file, save_file = need("safetensors.torch").load_file, need("safetensors.torch").save_file

META_ONE = {"format": "pt"}
META_THREE = {"format": "pt", "note": 'h\u00e9llo "quoted"\n\ttab \u0001', "z": ""}


def tensors():
    g = torch.Generator().manual_seed(0)
    base = torch.randn(3, 5, generator=g, dtype=torch.float64) * 100
    out = {
        "f64": base.clone(),
        "f32": base.float(),
        "f16": base.half(),
        "bf16": base.bfloat16(),
        "i64": (base * 1e6).long(),
        "i32": base.int(),
        "i16": base.short(),
        "i8": base.clamp(-128, 127).to(torch.int8),
        "u8": base.abs().clamp(0, 255).to(torch.uint8),
        "bool": base > 0,
        "c64": torch.complex(base.float(), -base.float()),
        "scalar": torch.tensor(3.25, dtype=torch.float32),
        "empty": torch.zeros(0, 3, dtype=torch.float32),
        "model.layers.0.weight": torch.arange(24, dtype=torch.float32).reshape(2, 3, 4),
    }
    for name, attr in [("u16", "uint16"), ("u32", "uint32"), ("u64", "uint64")]:
        if hasattr(torch, attr):
            out[name] = base.abs().to(torch.int64).to(getattr(torch, attr))
    for name, attr in [("f8_e4m3", "float8_e4m3fn"), ("f8_e5m2", "float8_e5m2")]:
        if hasattr(torch, attr):
            out[name] = base.float().clamp(-200, 200).to(getattr(torch, attr))
    return out


def raw(t):
    t = t.contiguous().reshape(-1)
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    if t.dtype != torch.uint8:
        t = t.view(torch.uint8)
    return bytes(t.tolist())


def header(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(n))


def make(d):
    os.makedirs(d, exist_ok=True)
    ts = tensors()
    save_file(ts, os.path.join(d, "all.safetensors"), metadata=META_THREE)
    with open(os.path.join(d, "manifest.txt"), "w") as m:
        for name, t in ts.items():
            dt = header(os.path.join(d, "all.safetensors"))[name]["dtype"]
            b = raw(t)
            with open(os.path.join(d, name + ".bin"), "wb") as f:
                f.write(b)
            m.write("%s %s %d %d %s\n" % (name, dt, len(b), t.dim(), " ".join(str(s) for s in t.shape)))
    # A sharded checkpoint as transformers' save_pretrained lays it out.
    sd = os.path.join(d, "sharded")
    os.makedirs(sd, exist_ok=True)
    names = sorted(ts)
    shards = [names[: len(names) // 2], names[len(names) // 2:]]
    weight_map, total = {}, 0
    for k, part in enumerate(shards):
        fname = "model-%05d-of-%05d.safetensors" % (k + 1, len(shards))
        save_file({n: ts[n] for n in part}, os.path.join(sd, fname), metadata={"format": "pt"})
        for n in part:
            weight_map[n] = fname
            total += ts[n].numel() * ts[n].element_size()
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(sd, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)
        f.write("\n")
    print("safetensors %s, torch %s: %d tensors" % (safetensors.__version__, torch.__version__, len(ts)))


def same(a, b):
    return a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape) and raw(a) == raw(b)


def check(d):
    want = load_file(os.path.join(d, "all.safetensors"))
    bad = []
    for fname, meta in [("c_one.safetensors", META_ONE), ("c_meta.safetensors", META_THREE)]:
        path = os.path.join(d, fname)
        got = load_file(path)
        if sorted(got) != sorted(want):
            bad.append("%s: names %s != %s" % (fname, sorted(got), sorted(want)))
        for n in want:
            if n in got and not same(got[n], want[n]):
                bad.append("%s: tensor %s differs" % (fname, n))
        with safetensors.safe_open(path, "pt") as f:
            if f.metadata() != meta:
                bad.append("%s: metadata %r != %r" % (fname, f.metadata(), meta))
        ref = os.path.join(d, "py_" + fname)
        save_file(want, ref, metadata=meta)
        c_bytes, py_bytes = open(path, "rb").read(), open(ref, "rb").read()
        if len(meta) <= 1:
            if c_bytes != py_bytes:
                bad.append("%s: not byte-identical to save_file's (%d vs %d bytes)" % (fname, len(c_bytes), len(py_bytes)))
        else:
            if header(path) != header(ref) or len(c_bytes) != len(py_bytes):
                bad.append("%s: header differs from save_file's as JSON" % fname)
            n = int.from_bytes(c_bytes[:8], "little")
            if c_bytes[8 + n:] != py_bytes[8 + n:]:
                bad.append("%s: data differs from save_file's" % fname)
    for b in bad:
        print("FAIL:", b)
    if not bad:
        print("python read %d tensors from each ctorch file: equal, byte-identical where the metadata allows" % len(want))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2]))
    if len(sys.argv) == 2:
        make(sys.argv[1])
        sys.exit(0)
    print(__doc__)
    sys.exit(2)
