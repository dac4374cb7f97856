#!/usr/bin/env python3
"""examples/vae.c against its Python twin examples/vae.py, same seed and options:

- bit-identical training: the trained weights equal exactly (same keys, same
  order, every element), and the outputs line for line (the per-image loss
  printed at steps 1, 50, 100, ..., the test loss, the last line's metrics to
  9 significant digits; the header, the "saved ..." lines and the throughput
  aside);
- the model learns: --learn "test_loss<BOUND" holds;
- the PNG the C program writes, read back (with Pillow when this Python has
  it, and always with the small zlib + struct reader below, which must agree),
  equals pixel for pixel the uint8 grid vae.py's sample_grid computes from
  the C weights and the same seed; the twin's own PNG equals its grid;
- the C program's TensorBoard file holds that grid as the image "samples"
  (grey, stored RGB) and one train/loss scalar per 10 steps (read with
  TensorBoard's EventAccumulator when the tensorboard package is there, else
  the PNG is found in the file's bytes);
- vae.py evaluating the C weights (--steps 0 --load) prints the same test
  loss and writes the same picture.

Training must be bit-identical on both libtorch versions: ctorch's Adam
takes torch.optim's order of operations (with 2.x: exp_avg.lerp_).

Usage: vae_vs_python.py --c BIN --script PY --learn 'test_loss<BOUND'
                        [--train-images N --test-images M] -- ARGS...
(ARGS must hold --seed S; --samples, --save, --load and --logdir are added here;
--train-images/--test-images: the first N and M images of ARGS' --data only,
as twins_vs_python.py)
"""
import argparse
import glob
import importlib.util
import io
import os
import re
import struct
import sys
import tempfile
import zlib

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from twins_vs_python import run  # noqa: E402  (runs a program, parses its last line)
from fashion_subset import add_options, subset_args  # noqa: E402  (twins_vs_python put tests/train on the path)


def png_decode(data):
    """(width, height, channels, pixel bytes) of an 8-bit non-interlaced PNG, any filter."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] != zlib.crc32(kind + body):
            raise ValueError(f"bad CRC in chunk {kind}")
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, interlace {interlace}")
    ch = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw, stride, out, prev = zlib.decompress(idat), w * ch, bytearray(), bytearray(w * ch)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a, b, c = line[i - ch] if i >= ch else 0, prev[i], prev[i - ch] if i >= ch else 0
            p = a + b - c
            pred = [0, a, b, (a + b) // 2,
                    a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c)
                    else c][f]
            line[i] = (line[i] + pred) & 255
        out += line
        prev = line
    return w, h, ch, bytes(out)


def png_read(data, what):
    """png_decode's answer, checked against Pillow's when Pillow is importable."""
    mine = png_decode(data)
    try:
        import PIL
        from PIL import Image
    except ImportError:
        print(f"{what}: read with zlib + struct (no Pillow here)")
        return mine
    im = Image.open(io.BytesIO(data))
    im.load()
    pil = (im.width, im.height, {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4}[im.mode], im.tobytes())
    if pil != mine:
        sys.exit(f"{what}: Pillow and the zlib + struct reader disagree")
    print(f"{what}: read with Pillow {PIL.__version__} and with zlib + struct")
    return mine


def tensorboard_image(logdir, steps):
    """(PNG bytes of the "samples" image, number of train/loss scalars) of the one event file in logdir."""
    files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    if len(files) != 1:
        sys.exit(f"expected one event file in {logdir}, found {files}")
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        raw = open(files[0], "rb").read()  # the PNG's bytes sit whole in the image record
        start = raw.find(b"\x89PNG\r\n\x1a\n")
        end = raw.find(b"IEND", start) + 8
        print("TensorBoard file: PNG found in its bytes (no tensorboard package here)")
        return raw[start:end] if start >= 0 else b"", raw.count(b"train/loss")
    ea = EventAccumulator(files[0], size_guidance={"images": 0, "scalars": 0})
    ea.Reload()
    imgs = ea.Images("samples")
    if len(imgs) != 1 or imgs[0].step != steps:
        sys.exit(f"TensorBoard: {len(imgs)} 'samples' images, steps {[i.step for i in imgs]}, expected 1 at {steps}")
    print("TensorBoard file: read with TensorBoard's EventAccumulator")
    return imgs[0].encoded_image_string, len(ea.Scalars("train/loss"))


def load_twin(script):
    spec = importlib.util.spec_from_file_location("vae_twin", script)
    twin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(twin)
    return twin


def same_training(c_sd, p_sd, c_out, p_out):
    """None when the weights and outputs are bit-identical, else why not."""
    if list(c_sd) != list(p_sd):
        sys.exit(f"state-dict keys differ:\nC: {list(c_sd)}\nPython: {list(p_sd)}")
    if not all(torch.equal(c_sd[k], p_sd[k]) for k in c_sd):
        diff = max((c_sd[k].double() - p_sd[k].double()).abs().max().item() for k in c_sd)
        return f"the trained weights differ by up to {diff:.3g}"
    if comparable(c_out) != comparable(p_out):
        return "bit-identical weights but different outputs"
    return None


def comparable(out):
    """The output without the header (it names the language), "saved ..." lines and the throughput."""
    return [re.sub(r"images_per_s=\S+", "", l) for l in out.strip().splitlines()[1:] if not l.startswith("saved ")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c", required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--learn", required=True, help="test_loss<BOUND: what the C run must reach")
    add_options(ap)
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    seed = int(a.args[a.args.index("--seed") + 1])
    steps = int(a.args[a.args.index("--steps") + 1])
    twin = load_twin(a.script)
    with tempfile.TemporaryDirectory() as d:
        f = {k: os.path.join(d, k) for k in ("c.pt", "py.pt", "c.png", "py.png", "load.png", "runs")}
        a.args = subset_args(a.args, os.path.join(d, "data"), a.train_images, a.test_images)
        c, c_out, c_last = run([a.c, *a.args, "--save", f["c.pt"], "--samples", f["c.png"], "--logdir", f["runs"]])
        p, p_out, p_last = run([sys.executable, a.script, *a.args, "--save", f["py.pt"], "--samples", f["py.png"]])
        # vae.py evaluating C's weights: run (forked, pyfork.py) before this process computes with torch
        args0 = [x for i, x in enumerate(a.args) if "--steps" not in a.args[max(i - 1, 0):i + 1]]
        l, _, l_last = run([sys.executable, a.script, *args0, "--steps", "0", "--load", f["c.pt"],
                            "--samples", f["load.png"]])
        print(f"C:      {c_last}\nPython: {p_last}")

        c_sd, p_sd = torch.load(f["c.pt"]), torch.load(f["py.pt"])
        why = same_training(c_sd, p_sd, c_out, p_out)
        if why is None:
            print(f"bit-identical after {steps} steps: {len(c_sd)} tensors equal, the output equal line for line")
        else:
            sys.exit(f"{why}\nC:\n{c_out}\nPython:\n{p_out}")
        metric, bound = a.learn.split("<")
        if not c[metric] < float(bound):
            sys.exit(f"did not learn: {metric}={c[metric]}, bound {bound}\n{c_out}")

        def grid_of(sd):  # (width, height, channels, pixels) of vae.py's sample_grid for these weights
            model = twin.VAE()
            model.load_state_dict(sd)
            g = twin.sample_grid(model, seed)
            return g.shape[1], g.shape[0], 1, bytes(g.flatten().tolist())

        want = grid_of(c_sd)
        if png_read(open(f["c.png"], "rb").read(), "C's PNG") != want:
            sys.exit("C's PNG differs from vae.py's sample_grid of the same weights and seed")
        if png_read(open(f["py.png"], "rb").read(), "vae.py's PNG") != grid_of(p_sd):
            sys.exit("vae.py's PNG differs from its sample_grid")
        png, scalars = tensorboard_image(f["runs"], steps)
        w, h, ch, pixels = png_decode(png)
        if (w, h) != want[:2] or ch != 3 or pixels[0::3] != want[3] or pixels[1::3] != want[3] or pixels[2::3] != want[3]:
            sys.exit(f"TensorBoard's image ({w}x{h}, {ch} channels) differs from the grid")
        if scalars != steps // 10:
            sys.exit(f"TensorBoard: {scalars} train/loss scalars, expected {steps // 10}")
        print(f"samples: C's PNG and TensorBoard image equal vae.py's {want[0]}x{want[1]} grid pixel for pixel")

        print(f"Python from C's weights: {l_last}")
        if l["test_loss"] != c["test_loss"]:
            sys.exit(f"test_loss of C's weights in Python: {l['test_loss']}, in C: {c['test_loss']}")
        if png_decode(open(f["load.png"], "rb").read()) != want:
            sys.exit("vae.py from C's weights wrote another picture")
    print("ok")


if __name__ == "__main__":
    main()
