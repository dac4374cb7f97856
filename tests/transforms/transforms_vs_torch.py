"""shim/transforms against torch on the same seeds, bit for bit.

For each pipeline and batch (float32, float64, uint8), runs transforms_dump
and compares its output with:
  1. a reference written here with torch ops (F.pad, slicing, flip,
     F.interpolate bilinear antialias=False, sub/div) drawing, image by
     image, from torch.Generator().manual_seed(seed) exactly as
     torchvision's transforms draw (the order ctorch.h documents);
  2. where torchvision is installed (Debian's python3-torchvision 0.14 for
     torch 1.13): the same draws with torchvision.transforms.functional for
     the deterministic parts (normalize, pad + crop, hflip, resized_crop),
     and torchvision's own transform classes (Compose of RandomCrop,
     RandomHorizontalFlip, RandomResizedCrop(antialias=False), Normalize)
     applied per image after torch.manual_seed(seed): what a DataLoader
     applying them per item gives.
ctorch's run with the default generator after ctorch_manual_seed(seed) and
a second generator with the same seed must give the same tensor.
Usage: transforms_vs_torch.py TRANSFORMS_DUMP.
"""
import math
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as TF

try:
    import torchvision
    import torchvision.transforms as T
    import torchvision.transforms.functional as VF
except ImportError:
    torchvision = None


def draw_crop(g, h, w, th, tw):
    if h == th and w == tw:
        return 0, 0
    i = torch.randint(0, h - th + 1, size=(1,), generator=g).item()
    j = torch.randint(0, w - tw + 1, size=(1,), generator=g).item()
    return i, j


def draw_rrc(g, height, width, scale, ratio):
    area = height * width
    log_ratio = torch.log(torch.tensor(ratio))
    for _ in range(10):
        target_area = area * torch.empty(1).uniform_(scale[0], scale[1], generator=g).item()
        aspect_ratio = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1], generator=g)).item()
        w = int(round(math.sqrt(target_area * aspect_ratio)))
        h = int(round(math.sqrt(target_area / aspect_ratio)))
        if 0 < w <= width and 0 < h <= height:
            i = torch.randint(0, height - h + 1, size=(1,), generator=g).item()
            j = torch.randint(0, width - w + 1, size=(1,), generator=g).item()
            return i, j, h, w
    in_ratio = float(width) / float(height)
    if in_ratio < min(ratio):
        w = width
        h = int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        h = height
        w = int(round(h * max(ratio)))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def pads(p):  # torchvision's reading: left, top, right, bottom
    if len(p) == 0:
        return None
    if len(p) == 1:
        return [p[0]] * 4
    if len(p) == 2:
        return [p[0], p[1], p[0], p[1]]
    return list(p)


def resize_torch(img, size):
    if tuple(img.shape[-2:]) == tuple(size):
        return img
    dt = img.dtype
    x = img.unsqueeze(0)
    cast = dt not in (torch.float32, torch.float64)
    if cast:
        x = x.to(torch.float32)
    x = TF.interpolate(x, size=list(size), mode="bilinear", align_corners=False)
    if cast:
        if not dt.is_floating_point:
            x = torch.round(x)
        x = x.to(dt)
    return x.squeeze(0)


def reference(batch, steps, seed, mean, std, use_tv):
    """Image by image, steps in order, draws from one generator."""
    g = torch.Generator().manual_seed(seed)
    outs = []
    for img in batch:
        x = img
        for s in steps:
            if s[0] == "normalize":
                if use_tv:
                    x = VF.normalize(x, mean, std)
                else:
                    m = torch.as_tensor(mean, dtype=x.dtype).view(-1, 1, 1)
                    sd = torch.as_tensor(std, dtype=x.dtype).view(-1, 1, 1)
                    x = x.sub(m).div(sd)
            elif s[0] == "crop":
                _, th, tw, fill, pad = s
                p = pads(pad)
                if p is not None and any(p):
                    if use_tv:
                        x = VF.pad(x, p, fill=fill, padding_mode="constant")
                    else:
                        x = TF.pad(x, [p[0], p[2], p[1], p[3]], mode="constant", value=float(fill))
                i, j = draw_crop(g, x.shape[-2], x.shape[-1], th, tw)
                x = VF.crop(x, i, j, th, tw) if use_tv else x[..., i:i + th, j:j + tw]
            elif s[0] == "flip":
                if torch.rand(1, generator=g) < s[1]:
                    x = VF.hflip(x) if use_tv else x.flip(-1)
            elif s[0] == "rrc":
                _, th, tw, scale, ratio = s
                i, j, h, w = draw_rrc(g, x.shape[-2], x.shape[-1], scale, ratio)
                if use_tv:
                    x = VF.resized_crop(x, i, j, h, w, [th, tw], T.InterpolationMode.BILINEAR, antialias=False)
                else:
                    x = resize_torch(x[..., i:i + h, j:j + w], (th, tw))
        outs.append(x)
    return torch.stack(outs)


def torchvision_classes(batch, steps, seed, mean, std):
    ts = []
    for s in steps:
        if s[0] == "normalize":
            ts.append(T.Normalize(mean, std))
        elif s[0] == "crop":
            _, th, tw, fill, pad = s
            ts.append(T.RandomCrop((th, tw), padding=list(pad) if pad else None, fill=fill, padding_mode="constant"))
        elif s[0] == "flip":
            ts.append(T.RandomHorizontalFlip(s[1]))
        elif s[0] == "rrc":
            _, th, tw, scale, ratio = s
            ts.append(T.RandomResizedCrop((th, tw), scale=scale, ratio=ratio,
                                          interpolation=T.InterpolationMode.BILINEAR, antialias=False))
    c = T.Compose(ts)
    torch.manual_seed(seed)
    return torch.stack([c(img) for img in batch])


def argv_of(steps):
    a = []
    for s in steps:
        if s[0] == "normalize":
            a.append("normalize")
        elif s[0] == "crop":
            a += ["crop", str(s[1]), str(s[2]), repr(float(s[3])), str(len(s[4]))] + [str(v) for v in s[4]]
        elif s[0] == "flip":
            a += ["flip", repr(s[1])]
        elif s[0] == "rrc":
            a += ["rrc", str(s[1]), str(s[2]), repr(s[3][0]), repr(s[3][1]), repr(s[4][0]), repr(s[4][1])]
    return a


PIPELINES = [
    [("normalize",)],
    [("crop", 24, 24, 0, ())],
    [("crop", 32, 32, 0, (4,))],
    [("crop", 30, 28, 7, (1, 2))],
    [("crop", 33, 35, 3, (0, 1, 3, 2))],
    [("crop", 32, 32, 0, ())],                       # no draw (same size)
    [("crop", 32, 30, 0, ())],                       # same height: still two draws
    [("flip", 0.5)],
    [("flip", 1.0)],
    [("rrc", 24, 24, (0.08, 1.0), (3 / 4, 4 / 3))],
    [("rrc", 40, 20, (0.5, 0.9), (0.2, 5.0))],
    [("rrc", 16, 16, (0.95, 1.0), (2.5, 3.0))],      # often falls back to the central crop
    [("crop", 32, 32, 0, (4,)), ("flip", 0.5), ("normalize",)],
    [("rrc", 28, 28, (0.08, 1.0), (3 / 4, 4 / 3)), ("flip", 0.5), ("normalize",)],
    [("flip", 0.3), ("crop", 30, 30, 2, (2,)), ("rrc", 20, 24, (0.3, 1.0), (0.5, 2.0)), ("normalize",)],
]


def main():
    dump = sys.argv[1]
    gen = torch.Generator().manual_seed(20261123)
    batches = {
        "float32": torch.randn(9, 3, 32, 32, generator=gen),
        "float64": torch.randn(4, 3, 32, 32, generator=gen, dtype=torch.float64),
        "uint8": torch.randint(0, 256, (6, 3, 32, 32), generator=gen, dtype=torch.uint8),
    }
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    checks = failures = tv_checks = 0
    with tempfile.TemporaryDirectory() as tmp:
        # Every pipeline in one run of the dump (its --jobs form), then compared.
        jobs = []
        for bname, batch in batches.items():
            src = os.path.join(tmp, bname + ".pt")
            torch.save({"batch": batch, "mean": torch.tensor(mean, dtype=torch.float64),
                        "std": torch.tensor(std, dtype=torch.float64)}, src)
            for pi, steps in enumerate(PIPELINES):
                if bname == "uint8" and any(s[0] == "normalize" for s in steps):
                    continue
                jobs.append((bname, batch, pi, steps, 1000 + 17 * pi, src, os.path.join(tmp, f"out_{len(jobs)}.pt")))
        jobs_file = os.path.join(tmp, "jobs.txt")
        with open(jobs_file, "w") as f:
            for _, _, _, steps, seed, src, dst in jobs:
                f.write(" ".join([src, dst, str(seed)] + argv_of(steps)) + "\n")
        subprocess.run([dump, "--jobs", jobs_file], check=True)
        for bname, batch, pi, steps, seed, src, dst in jobs:
            got = torch.load(dst)
            refs = {"torch ops": reference(batch, steps, seed, mean, std, False)}
            if torchvision is not None:
                refs["torchvision.functional"] = reference(batch, steps, seed, mean, std, True)
                refs["torchvision classes"] = torchvision_classes(batch, steps, seed, mean, std)
                tv_checks += 2
            refs["same seed again"] = got["out"]
            refs["default generator"] = got["out"]
            for rname, ref in refs.items():
                other = got["default"] if rname == "default generator" else got["again"] if rname == "same seed again" else ref
                mine = got["out"]
                checks += 1
                if mine.dtype != other.dtype or mine.shape != other.shape or not torch.equal(mine, other):
                    failures += 1
                    diff = ((mine.double() - other.double()).abs().max().item()
                            if mine.shape == other.shape else "shape")
                    print(f"FAIL {bname} pipeline {pi} {steps}: ctorch vs {rname}: dtype {mine.dtype}/{other.dtype}"
                          f" shape {tuple(mine.shape)}/{tuple(other.shape)} max diff {diff}")
    tv = f"torchvision {torchvision.__version__}" if torchvision else "torchvision not installed (skipped its checks)"
    print(f"torch {torch.__version__}, {tv}: {checks} comparisons ({tv_checks} with torchvision), "
          f"{failures} not bit-identical")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
