"""shim/image and the eval transforms against torchvision and Pillow.

Decoding: PNGs of every layout (tests/image/png_encode.py: colour types
0/2/3/4/6, bit depths 1-16, Adam7, tRNS) and JPEGs written by Pillow (gray,
RGB with three subsamplings, progressive, CMYK), each read by image_dump in
every ImageReadMode, compared with
  1. torchvision.io's decoders where they load (Debian's torchvision 0.14.1
     for torch 1.13: the same libjpeg and libpng, so bit for bit; PyPI's
     0.29.2 in the torch 2.15 venv, with its bundled libraries: its 16-bit
     PNGs are uint16, compared as INT32 values, and it converts CMYK JPEGs
     to GRAY/RGB, which ctorch refuses as 0.14 does: counted, not failed), PNG
     through torch.ops.image.decode_png(data, mode, True) (16-bit allowed,
     as torchvision.io._read_png_16). Where torchvision 0.14 leaves memory
     unwritten or writes alpha (1 << depth) - 1 (a palette without tRNS, or
     1/2/4-bit images, asked for alpha; 1/2/4-bit palette indices) the
     expectation is the decoded pixels with an opaque alpha, checked from
     the pixels written here; the count of such cases is printed.
  2. Pillow, in its own mode, UNCHANGED: PNG bit for bit; JPEG the max
     difference printed (equal where Pillow uses the same libjpeg: Debian's
     python3-pil; PyPI's Pillow bundles its own libjpeg-turbo).
  3. the pixels written here (PNG, UNCHANGED, non-interlaced and Adam7 alike).
Transforms: Resize (bilinear/bicubic, antialias on/off, one size with and
without max_size, two sizes), CenterCrop (smaller and larger than the
image), ConvertImageDtype and a Compose with Normalize on uint8 and float32
batches, against torchvision.transforms.functional where torchvision
imports (its tensor functional is Python over torch's operators), and
always against the same torch operators written out here.
Usage: image_vs_torchvision.py IMAGE_DUMP.
"""
import io
import math
import os
import random
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as TF

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import png_encode  # noqa: E402

try:
    from PIL import Image
except ImportError:
    Image = None
try:
    import torchvision.transforms.functional as VF
    import torchvision
except Exception:  # noqa: BLE001 (a torchvision built for another torch may fail in many ways)
    VF = torchvision = None
tv_decode_png = tv_decode_jpeg = None
tv_decode_note = "torchvision not installed"
if torchvision is not None:
    try:
        from torchvision.io import decode_jpeg as _dj, ImageReadMode as _M
        _probe = torch.tensor(list(png_encode.encode([[(1,)]], 1, 1, 0, 8)), dtype=torch.uint8)
        torch.ops.image.decode_png(_probe, 0, True)
        tv_decode_png = lambda data, mode: torch.ops.image.decode_png(data, mode, True)  # noqa: E731
        tv_decode_jpeg = lambda data, mode: _dj(data, _M(mode))  # noqa: E731
        tv_decode_note = f"torchvision {torchvision.__version__} decoders"
    except Exception as e:  # noqa: BLE001
        tv_decode_note = f"torchvision {torchvision.__version__}'s decoders do not load here ({type(e).__name__})"

MODES = {1: "UNCHANGED", 2: "GRAY", 3: "GRAY_ALPHA", 4: "RGB", 5: "RGB_ALPHA"}
rng = random.Random(38)
failures = 0
counts = {"torchvision": 0, "pillow": 0, "pixels": 0, "tv_divergent": 0, "errors_agree": 0, "tv_cmyk": 0,
          "tv_uint16": 0}
jpeg_pillow_max = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL", msg)


def png_cases():
    """(name, bytes, info) for each layout; info holds the pixels written."""
    cases = []
    depths = {0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16]}
    for color, ds in depths.items():
        for depth in ds:
            for interlace in (False, True):
                for trns in ((False, True) if color in (0, 2, 3) else (False,)):
                    w, h = rng.choice([(7, 5), (9, 11), (1, 1), (16, 3)])
                    ch = png_encode.CHANNELS[color]
                    top = (1 << depth) - 1
                    palette = None
                    trns_bytes = None
                    if color == 3:
                        n = min(1 << depth, 12)
                        top = n - 1
                        palette = [tuple(rng.randrange(256) for _ in range(3)) for _ in range(n)]
                        if trns:
                            trns_bytes = bytes(rng.randrange(256) for _ in range(n // 2 + 1))
                    elif trns:
                        vals = [rng.randrange((1 << depth)) for _ in range(ch)]
                        trns_bytes = b"".join(v.to_bytes(2, "big") for v in vals)
                    px = [[tuple(rng.randint(0, top) for _ in range(ch)) for _ in range(w)] for _ in range(h)]
                    data = png_encode.encode(px, w, h, color, depth, interlace, palette, trns_bytes)
                    name = f"png_c{color}_d{depth}_{'i' if interlace else 'p'}{'_trns' if trns else ''}"
                    cases.append((name, data, dict(kind="png", color=color, depth=depth, px=px, w=w, h=h, interlaced=interlace,
                                                   palette=palette, trns=trns_bytes)))
    return cases


def jpeg_cases():
    if Image is None:
        return []
    cases = []
    w, h = 37, 29
    xs = torch.linspace(0, 1, w).view(1, w)
    ys = torch.linspace(0, 1, h).view(h, 1)
    smooth = torch.stack([xs * ys * 255, (1 - xs) * 255 * ys, (xs + ys) * 127]).clamp(0, 255)
    noise = torch.randint(0, 40, (3, h, w), generator=torch.Generator().manual_seed(5))
    rgb = (smooth + noise).clamp(0, 255).to(torch.uint8).permute(1, 2, 0).contiguous().numpy()
    for sub in (0, 1, 2):
        for prog in (False, True):
            b = io.BytesIO()
            Image.fromarray(rgb).save(b, "JPEG", quality=rng.choice([75, 90, 95]), subsampling=sub, progressive=prog)
            cases.append((f"jpeg_rgb_s{sub}{'_prog' if prog else ''}", b.getvalue(), dict(kind="jpeg", pil="RGB")))
    b = io.BytesIO()
    Image.fromarray(rgb).convert("L").save(b, "JPEG", quality=85)
    cases.append(("jpeg_gray", b.getvalue(), dict(kind="jpeg", pil="L")))
    b = io.BytesIO()
    Image.fromarray(rgb).convert("CMYK").save(b, "JPEG", quality=90)
    cases.append(("jpeg_cmyk", b.getvalue(), dict(kind="jpeg", pil="CMYK")))
    good = cases[0][1]
    cases.append(("jpeg_truncated", good[: len(good) // 2], dict(kind="jpeg", pil=None)))
    return cases


def expected_from_pixels(info, mode):
    """The decode of a PNG written here, where it can be told from the
    pixels alone: UNCHANGED (samples; 1/2/4-bit gray scaled to 8 bits by
    bit replication, as libpng expands), and alpha modes of images without
    colour conversion (opaque alpha added)."""
    c, d, px = info["color"], info["depth"], info["px"]
    t = torch.tensor(px, dtype=torch.int64).permute(2, 0, 1)
    if c == 0 and d < 8:
        t = t * (255 // ((1 << d) - 1))
    dtype = torch.int32 if d == 16 else torch.uint8
    opaque = 65535 if d == 16 else 255
    if mode == 1:
        return t.to(dtype)
    if c == 3 and mode in (4, 5):  # palette -> RGB(A)
        pal = torch.tensor(info["palette"], dtype=torch.int64)
        rgb = pal[t[0]].permute(2, 0, 1)
        if mode == 4:
            return rgb.to(dtype)
        trns = info["trns"] or b""
        alpha = torch.tensor([trns[i] if i < len(trns) else 255 for i in range(len(info["palette"]))])[t[0]]
        return torch.cat([rgb, alpha.unsqueeze(0)]).to(dtype)
    if c == 0 and mode == 3:
        return torch.cat([t, torch.full_like(t, opaque)]).to(dtype)
    if c == 0 and mode == 5:
        return torch.cat([t, t, t, torch.full_like(t, opaque)]).to(dtype)
    return None


def tv_divergent(info, mode):
    """Cases where torchvision 0.14's decode_png leaves memory unwritten,
    writes a non-opaque filler alpha (see the module docstring), or, for
    16-bit Adam7 images, reads each pass into a scratch row that does not
    hold the earlier passes' pixels (so the rows mix in other rows')."""
    c, d = info["color"], info["depth"]
    if d == 16 and info["interlaced"]:  # 0.14 reads each Adam7 pass into a fresh row buffer
        return True
    if c == 3 and d < 8 and mode == 1:
        return True
    if c == 3 and info["trns"] is None and mode in (3, 5):
        return True
    return c == 0 and d < 8 and mode in (3, 5)


def pillow_png(data):
    """Pillow's decode in its own mode, as a CHW tensor, or None for layouts
    Pillow changes on reading (1/2/4-bit gray, 16-bit colour, tRNS)."""
    im = Image.open(io.BytesIO(data))
    im.load()
    if im.mode in ("L", "RGB", "RGBA", "LA", "P"):
        t = torch.tensor(list(im.getdata()))
        if t.dim() == 1:
            t = t.unsqueeze(1)
        return t.t().reshape(-1, im.size[1], im.size[0]).to(torch.uint8)
    if im.mode in ("I;16", "I;16B", "I"):
        t = torch.tensor(list(im.getdata()), dtype=torch.int32)
        return t.reshape(1, im.size[1], im.size[0])
    return None


def compare(name, mode, got, ref, what):
    if got.dtype != ref.dtype or got.shape != ref.shape or not torch.equal(got, ref):
        diff = (got.double() - ref.double()).abs().max().item() if got.shape == ref.shape else "shape"
        fail(f"{name} {MODES[mode]}: ctorch vs {what}: dtype {got.dtype}/{ref.dtype} shape "
             f"{tuple(got.shape)}/{tuple(ref.shape)} max diff {diff}")
        return False
    return True


def check_decoding(dump, tmp):
    global jpeg_pillow_max
    cases = png_cases() + jpeg_cases()
    paths = []
    for i, (name, data, _) in enumerate(cases):
        p = os.path.join(tmp, f"{i}_{name}")
        with open(p, "wb") as f:
            f.write(data)
        paths.append(p)
    for mode in MODES:
        out = os.path.join(tmp, f"dec{mode}.pt")
        r = subprocess.run([dump, "decode", out, str(mode)] + paths, check=True, capture_output=True, text=True)
        lines = dict(ln.split(" ", 1) for ln in r.stdout.splitlines())
        got = torch.load(out)
        for i, (name, data, info) in enumerate(cases):
            status = lines[str(i)]
            mine = got.get(str(i))
            ref, err = None, None
            dec = tv_decode_png if info["kind"] == "png" else tv_decode_jpeg
            if dec is not None:
                try:
                    ref = dec(torch.tensor(list(data), dtype=torch.uint8), mode - 1)
                except RuntimeError as e:
                    err = str(e).splitlines()[0]
            if info["kind"] == "png" and tv_divergent(info, mode):
                counts["tv_divergent"] += 1
                ref = None
            elif ref is not None and info.get("pil") == "CMYK" and mode != 1:
                counts["tv_cmyk"] += 1  # newer torchvision converts CMYK itself; ctorch, as 0.14, refuses
                if mine is not None:
                    fail(f"{name} {MODES[mode]}: ctorch converted a CMYK JPEG")
            elif ref is not None:
                counts["torchvision"] += 1
                if getattr(torch, "uint16", None) is not None and ref.dtype == torch.uint16:
                    counts["tv_uint16"] += 1  # torchvision >= 0.19: 16-bit PNGs as uint16; ctorch: INT32
                    ref = ref.to(torch.int32)
                if mine is None:
                    fail(f"{name} {MODES[mode]}: torchvision decodes it, ctorch: {status}")
                else:
                    compare(name, mode, mine, ref.contiguous(), "torchvision")
            elif err is not None:
                counts["errors_agree"] += 1
                if mine is not None:
                    fail(f"{name} {MODES[mode]}: torchvision fails ({err}), ctorch decodes it")
            if info["kind"] == "png":
                exp = expected_from_pixels(info, mode)
                if exp is not None:
                    counts["pixels"] += 1
                    if mine is None:
                        fail(f"{name} {MODES[mode]}: the pixels are known, ctorch: {status}")
                    else:
                        compare(name, mode, mine, exp, "the pixels written")
                if Image is not None and mode == 1 and info["depth"] >= 8 and info["trns"] is None and \
                        not (info["depth"] == 16 and info["color"] != 0):
                    pil = pillow_png(data)
                    if pil is not None and mine is not None:
                        counts["pillow"] += 1
                        compare(name, mode, mine, pil, "Pillow")
            elif info["pil"] in ("RGB", "L") and mode == 1 and Image is not None:
                im = Image.open(io.BytesIO(data))
                pil = torch.tensor(list(im.getdata()), dtype=torch.int64)
                pil = (pil.unsqueeze(1) if pil.dim() == 1 else pil).t().reshape(-1, im.size[1], im.size[0])
                counts["pillow"] += 1
                if mine is None or mine.shape != pil.shape:
                    fail(f"{name}: ctorch {status} vs Pillow {tuple(pil.shape)}")
                else:
                    jpeg_pillow_max = max(jpeg_pillow_max, (mine.long() - pil).abs().max().item())
            if info["kind"] == "jpeg" and info["pil"] is None and mine is not None:
                fail(f"{name} {MODES[mode]}: a truncated JPEG decoded")
            if info["kind"] == "jpeg" and mode in (3, 5) and not status.startswith("CTORCH_NOT_IMPLEMENTED") and \
                    info["pil"] is not None:
                fail(f"{name} {MODES[mode]}: JPEG with alpha mode gave {status}")


def resize_ref(img, size, bicubic, max_size, antialias):
    """torchvision 0.14's F_t.resize written out with torch operators."""
    h, w = img.shape[-2:]
    if len(size) == 1:
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = size[0], int(size[0] * long / short)
        if max_size and new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
        if (w, h) == (new_w, new_h):
            return img
    else:
        new_h, new_w = size
    dt = img.dtype
    x = img.unsqueeze(0)
    cast = dt not in (torch.float32, torch.float64)
    if cast:
        x = x.to(torch.float32)
    x = TF.interpolate(x, size=[new_h, new_w], mode="bicubic" if bicubic else "bilinear", align_corners=False,
                       antialias=bool(antialias))
    if bicubic and dt == torch.uint8:
        x = x.clamp(0, 255)
    if cast:
        if not dt.is_floating_point:
            x = torch.round(x)
        x = x.to(dt)
    return x.squeeze(0)


def center_ref(img, ch, cw):
    h, w = img.shape[-2:]
    if cw > w or ch > h:
        l, t = (cw - w) // 2 if cw > w else 0, (ch - h) // 2 if ch > h else 0
        r, b = (cw - w + 1) // 2 if cw > w else 0, (ch - h + 1) // 2 if ch > h else 0
        img = TF.pad(img, [l, r, t, b], value=0.0)
        h, w = img.shape[-2:]
        if (h, w) == (ch, cw):
            return img
    top, left = int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0))
    return img[..., top:top + ch, left:left + cw]


DTYPES = {2: torch.uint8, 4: torch.int16, 5: torch.int32, 9: torch.float32, 10: torch.float64, 7: torch.float16}
MAXV = {torch.uint8: 255, torch.int16: 32767, torch.int32: 2**31 - 1}


def convert_ref(img, dt):
    if img.dtype == dt:
        return img
    if img.dtype.is_floating_point:
        return img.to(dt) if dt.is_floating_point else img.mul(float(MAXV[dt]) + 1.0 - 1e-3).to(dt)
    if dt.is_floating_point:
        return img.to(dt) / float(MAXV[img.dtype])
    a, b = float(MAXV[img.dtype]), float(MAXV[dt])
    if a > b:
        return torch.div(img, int((a + 1) // (b + 1)), rounding_mode="floor").to(dt)
    return img.to(dt) * int((b + 1) // (a + 1))


def apply_ref(batch, steps, mean, std, use_tv):
    outs = []
    for img in batch:
        x = img
        for s in steps:
            if s[0] == "resize":
                _, size, interp, max_size, aa = s
                if use_tv:
                    mode = VF.InterpolationMode.BICUBIC if interp == 2 else VF.InterpolationMode.BILINEAR
                    x = VF.resize(x, list(size), mode, max_size=max_size or None, antialias=bool(aa))
                else:
                    x = resize_ref(x, size, interp == 2, max_size, aa)
            elif s[0] == "center":
                x = VF.center_crop(x, [s[1], s[2]]) if use_tv else center_ref(x, s[1], s[2])
            elif s[0] == "convert":
                x = VF.convert_image_dtype(x, DTYPES[s[1]]) if use_tv else convert_ref(x, DTYPES[s[1]])
            elif s[0] == "normalize":
                x = VF.normalize(x, mean, std) if use_tv else \
                    x.sub(torch.tensor(mean, dtype=x.dtype).view(-1, 1, 1)).div(torch.tensor(std, dtype=x.dtype).view(-1, 1, 1))
        outs.append(x)
    return torch.stack(outs)


def argv_of(steps):
    a = []
    for s in steps:
        if s[0] == "resize":
            a += ["resize", str(len(s[1]))] + [str(v) for v in s[1]] + [str(s[2]), str(s[3]), str(s[4])]
        elif s[0] == "center":
            a += ["center", str(s[1]), str(s[2])]
        elif s[0] == "convert":
            a += ["convert", str(s[1])]
        else:
            a.append("normalize")
    return a


PIPELINES = []
for interp in (1, 2):
    for aa in (0, 1):
        PIPELINES += [[("resize", (20,), interp, 0, aa)], [("resize", (13,), interp, 0, aa)],
                      [("resize", (11, 45), interp, 0, aa)], [("resize", (40,), interp, 50, aa)],
                      [("resize", (24,), interp, 0, aa)]]  # 24: the shorter side already: unchanged
PIPELINES += [[("center", 10, 12)], [("center", 24, 31)], [("center", 30, 40)], [("center", 27, 33)],
              [("convert", 9)], [("convert", 10)], [("convert", 4)], [("convert", 5)], [("convert", 7)],
              [("resize", (30,), 1, 0, 1), ("center", 22, 22), ("convert", 9), ("normalize",)],
              [("resize", (16,), 2, 0, 1), ("center", 16, 16), ("convert", 9), ("normalize",)]]


def check_transforms(dump, tmp):
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    g = torch.Generator().manual_seed(2026)
    batches = {"uint8": torch.randint(0, 256, (3, 3, 24, 31), generator=g, dtype=torch.uint8),
               "float32": torch.rand(2, 3, 31, 24, generator=g)}
    n = tv_n = 0
    # Every pipeline in one run of the dump (its --jobs form), then compared.
    jobs = []
    for bname, batch in batches.items():
        src = os.path.join(tmp, bname + "_in.pt")
        torch.save({"batch": batch, "mean": torch.tensor(mean, dtype=torch.float64),
                    "std": torch.tensor(std, dtype=torch.float64)}, src)
        for steps in PIPELINES:
            if bname == "float32" and steps[0][0] == "convert" and steps[0][1] in (5,):
                continue  # float32 -> int32: refused (tested in test_image)
            if bname == "uint8" and any(s[0] == "normalize" for s in steps) and not any(s[0] == "convert" for s in steps):
                continue
            jobs.append((bname, batch, steps, src, os.path.join(tmp, f"out_{len(jobs)}.pt")))
    jobs_file = os.path.join(tmp, "transform_jobs.txt")
    with open(jobs_file, "w") as f:
        for _, _, steps, src, dst in jobs:
            f.write(" ".join(["transform", src, dst] + argv_of(steps)) + "\n")
    subprocess.run([dump, "--jobs", jobs_file], check=True)
    for bname, batch, steps, src, dst in jobs:
        mine = torch.load(dst)["out"]
        refs = {"torch ops": apply_ref(batch, steps, mean, std, False)}
        if VF is not None:
            refs["torchvision.transforms.functional"] = apply_ref(batch, steps, mean, std, True)
        for rname, ref in refs.items():
            n += 1
            tv_n += rname != "torch ops"
            if mine.dtype != ref.dtype or mine.shape != ref.shape or not torch.equal(mine, ref):
                diff = (mine.double() - ref.double()).abs().max().item() if mine.shape == ref.shape else "shape"
                fail(f"transform {bname} {steps}: ctorch vs {rname}: dtype {mine.dtype}/{ref.dtype} shape "
                     f"{tuple(mine.shape)}/{tuple(ref.shape)} max diff {diff}")
    return n, tv_n


def main():
    dump = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        check_decoding(dump, tmp)
        n, tv_n = check_transforms(dump, tmp)
    pil = f"Pillow {Image.__version__ if hasattr(Image, '__version__') else __import__('PIL').__version__}" \
        if Image is not None else "Pillow not installed"
    tvt = f"torchvision {torchvision.__version__} transforms" if VF is not None else "torchvision not installed"
    print(f"torch {torch.__version__}; decoding: {tv_decode_note}: {counts['torchvision']} bit-identical, "
          f"{counts['errors_agree']} refused by both, {counts['tv_divergent']} cases where torchvision leaves "
          f"memory unwritten, alpha non-opaque or 16-bit Adam7 rows mixed (checked against the pixels instead); "
          f"{counts['tv_uint16']} of the bit-identical are 16-bit (torchvision uint16, ctorch INT32), "
          f"{counts['tv_cmyk']} CMYK conversions torchvision makes and ctorch refuses (as 0.14); "
          f"{counts['pixels']} equal to the pixels written; {pil}: {counts['pillow']} compared, JPEG max diff "
          f"{jpeg_pillow_max}; transforms ({tvt}): {n} comparisons ({tv_n} with torchvision); {failures} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
