#!/usr/bin/env python3
"""The loader's transform stage (ctorch_data_loader_set_transform and
_set_transform_fn) against torch.utils.data.DataLoader over a Dataset whose
__getitem__ applies the same torchvision-style transform to each item (then
torch's default collate), on the same seeds, bit for bit.

transform_dump prints ctorch's batches (see its header for the three
pipelines). Here the same items go through:
  - torchvision's transform classes (T.Compose of ConvertImageDtype,
    RandomCrop / RandomResizedCrop(antialias=False) / CenterCrop,
    RandomHorizontalFlip, Normalize) where torchvision is installed
    (Debian's 0.14 for torch 1.13), and
  - always, the same transforms written here with torch calls drawing from
    the global generator as torchvision's do (torch 2.15 has no torchvision
    on PyPI), checked against torchvision where both exist;
the seeds as ctorch.h documents them: the epoch's order is
randperm(N, Generator().manual_seed(epoch_seed(seed, e))) when shuffling,
and before the first item of batch k, torch.manual_seed(epoch_seed(seed, e)
+ 1 + k) (a batch sampler hands the seed to __getitem__, so Python's
DataLoader workers replay it too).

    transform_vs_torch.py TRANSFORM_DUMP
"""
import math
import subprocess
import sys

import torch
import torch.nn.functional as TF
from torch.utils.data import DataLoader, Dataset

try:
    import torchvision.transforms as T
except ImportError:
    T = None

DUMP = sys.argv[1]
failures = 0
checks = 0


def fail(msg):
    global failures
    failures += 1
    if failures <= 20:
        print("FAIL", msg)


def epoch_seed(seed, epoch):
    return (seed * 1000003 + epoch) % 2 ** 64


def pixel_items(n, shape_of):
    out = []
    for i in range(n):
        c, h, w = shape_of(i)
        ii = torch.full((c, h, w), i, dtype=torch.int64)
        cc = torch.arange(c).view(c, 1, 1)
        hh = torch.arange(h).view(1, h, 1)
        ww = torch.arange(w).view(1, 1, w)
        out.append(((ii * 131 + cc * 31 + hh * 17 + ww * 7) % 256).to(torch.uint8))
    return out


# ---- torchvision's transforms with torch calls (the global generator) ----
class ConvertFloat:
    def __call__(self, x):
        return x.to(torch.float32).div(255)


class RandomCrop:
    def __init__(self, size, padding):
        self.size, self.padding = size, padding

    def __call__(self, x):
        p = self.padding
        x = TF.pad(x, [p, p, p, p], mode="constant", value=0.0)
        h, w = x.shape[-2:]
        if (h, w) == (self.size, self.size):
            return x
        i = torch.randint(0, h - self.size + 1, size=(1,)).item()
        j = torch.randint(0, w - self.size + 1, size=(1,)).item()
        return x[..., i:i + self.size, j:j + self.size]


class RandomResizedCrop:
    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0)):
        self.size, self.scale, self.ratio = size, scale, ratio

    def params(self, height, width):
        area = height * width
        log_ratio = torch.log(torch.tensor(self.ratio))
        for _ in range(10):
            target_area = area * torch.empty(1).uniform_(self.scale[0], self.scale[1]).item()
            aspect = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
            w = int(round(math.sqrt(target_area * aspect)))
            h = int(round(math.sqrt(target_area / aspect)))
            if 0 < w <= width and 0 < h <= height:
                i = torch.randint(0, height - h + 1, size=(1,)).item()
                j = torch.randint(0, width - w + 1, size=(1,)).item()
                return i, j, h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(self.ratio):
            w, h = width, int(round(width / min(self.ratio)))
        elif in_ratio > max(self.ratio):
            h, w = height, int(round(height * max(self.ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def __call__(self, x):
        i, j, h, w = self.params(*x.shape[-2:])
        crop = x[..., i:i + h, j:j + w]
        return TF.interpolate(crop.unsqueeze(0), size=[self.size, self.size], mode="bilinear",
                              align_corners=False).squeeze(0)


class CenterCrop:  # images at least as large as the crop here
    def __init__(self, size):
        self.size = size

    def __call__(self, x):
        h, w = x.shape[-2:]
        top, left = int(round((h - self.size) / 2.0)), int(round((w - self.size) / 2.0))
        return x[..., top:top + self.size, left:left + self.size]


class Flip:
    def __call__(self, x):
        return x.flip(-1) if torch.rand(1) < 0.5 else x


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, x):
        m = torch.as_tensor(self.mean, dtype=x.dtype).view(-1, 1, 1)
        s = torch.as_tensor(self.std, dtype=x.dtype).view(-1, 1, 1)
        return x.sub(m).div(s)


class Compose:
    def __init__(self, ts):
        self.ts = ts

    def __call__(self, x):
        for t in self.ts:
            x = t(x)
        return x


MEAN3, STD3 = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def pipelines(mode, torchvision):
    if torchvision:
        if mode == "gray":
            return T.Compose([T.ConvertImageDtype(torch.float32), T.RandomCrop(8, padding=2),
                              T.RandomHorizontalFlip(), T.Normalize([0.5], [0.25])])
        if mode == "rgb":
            return T.Compose([T.ConvertImageDtype(torch.float32), T.RandomResizedCrop(8, antialias=False),
                              T.RandomHorizontalFlip(), T.Normalize(MEAN3, STD3)])
        return T.Compose([T.ConvertImageDtype(torch.float32), T.CenterCrop(8), T.RandomHorizontalFlip()])
    if mode == "gray":
        return Compose([ConvertFloat(), RandomCrop(8, 2), Flip(), Normalize([0.5], [0.25])])
    if mode == "rgb":
        return Compose([ConvertFloat(), RandomResizedCrop(8), Flip(), Normalize(MEAN3, STD3)])
    return Compose([ConvertFloat(), CenterCrop(8), Flip()])


class Items(Dataset):
    """The dump's items; __getitem__((i, seed)) reseeds first when seed is given."""

    def __init__(self, mode, n, transform):
        self.mode, self.transform = mode, transform
        if mode == "gray":
            self.x = [t.squeeze(0) for t in pixel_items(n, lambda i: (1, 12, 10))]
            self.y = [torch.tensor(i % 10) for i in range(n)]
        elif mode == "rgb":
            self.x, self.y = pixel_items(n, lambda i: (3, 12, 10)), None
        else:
            self.x = pixel_items(n, lambda i: (3, 9 + i % 4, 11 - i % 3))
            self.y = [torch.tensor(i) for i in range(n)]

    def __len__(self):
        return len(self.x)

    def __getitem__(self, key):
        i, seed = key
        if seed is not None:
            torch.manual_seed(seed)
        x = self.x[i]
        if x.dim() == 2:
            x = x.unsqueeze(0)  # a gray image, as ToTensor makes it
        x = self.transform(x)
        if self.mode == "sizes":
            x = x * 2.0  # transform_dump's callback
        if self.y is None:
            return x
        y = self.y[i]
        return x, (y + 100 if self.mode == "gray" else y)  # the gray callback's target transform


class Batches:
    """The loader's order and the per-batch seeds of one epoch."""

    def __init__(self, n, batch, shuffle, seed, drop, epoch):
        es = epoch_seed(seed, epoch)
        order = (torch.randperm(n, generator=torch.Generator().manual_seed(es)) if shuffle
                 else torch.arange(n)).tolist()
        nb = n // batch if drop else -(-n // batch)
        self.batches = [[(order[k * batch + j], (es + 1 + k) % 2 ** 64 if j == 0 else None)
                         for j in range(min(batch, n - k * batch))] for k in range(nb)]

    def __iter__(self):
        return iter(self.batches)

    def __len__(self):
        return len(self.batches)


def torch_batches(mode, n, batch, shuffle, seed, drop, epochs, workers, torchvision):
    ds = Items(mode, n, pipelines(mode, torchvision))
    out = []
    for e in range(epochs):
        dl = DataLoader(ds, batch_sampler=Batches(n, batch, shuffle, seed, drop, e), num_workers=workers)
        for k, b in enumerate(dl):
            x, y = (b if isinstance(b, (list, tuple)) else (b, None))
            out.append((e, k, x, y))
    return out


def ctorch_batches(mode, n, batch, shuffle, seed, drop, workers, epochs):
    args = [DUMP, mode, str(n), str(batch), str(shuffle), str(seed), str(drop), str(workers), str(epochs)]
    lines = subprocess.run(args, text=True, check=True, stdout=subprocess.PIPE).stdout.split("\n")
    out = []
    for a in range(0, len(lines) - 1, 4):
        e, k = map(int, lines[a].split())
        shape = [int(v) for v in lines[a + 1].split()]
        x = torch.tensor([float.fromhex(v) for v in lines[a + 2].split()], dtype=torch.float32).view(shape)
        y = None if lines[a + 3] == "-" else torch.tensor([int(v) for v in lines[a + 3].split()])
        out.append((e, k, x, y))
    return out


def compare(what, got, want):
    global checks
    if len(got) != len(want):
        fail(f"{what}: {len(got)} batches, torch {len(want)}")
        return
    for (e, k, x, y), (we, wk, wx, wy) in zip(got, want):
        checks += 1
        where = f"{what} epoch {e} batch {k}"
        if (e, k) != (we, wk):
            fail(f"{where}: torch's is epoch {we} batch {wk}")
        elif x.shape != wx.shape or x.dtype != wx.dtype:
            fail(f"{where}: {x.dtype} {list(x.shape)}, torch {wx.dtype} {list(wx.shape)}")
        elif not torch.equal(x, wx):
            fail(f"{where}: data differs, max |diff| {(x - wx).abs().max().item():g}")
        elif (y is None) != (wy is None) or (y is not None and not torch.equal(y, wy)):
            fail(f"{where}: targets {y} vs torch {wy}")


def main():
    configs = [
        # mode, n, batch, shuffle, seed, drop_last, epochs
        ("gray", 23, 4, 1, 7, 0, 2),
        ("gray", 23, 5, 0, 2 ** 40, 1, 1),
        ("rgb", 19, 4, 1, 3, 0, 2),
        ("sizes", 17, 3, 1, 11, 0, 2),
    ]
    for mode, n, batch, shuffle, seed, drop, epochs in configs:
        ref = torch_batches(mode, n, batch, shuffle, seed, drop, epochs, 0, False)
        if T is not None:  # the hand-written transforms are torchvision's
            compare(f"{mode} (hand-written vs torchvision)", ref,
                    torch_batches(mode, n, batch, shuffle, seed, drop, epochs, 0, True))
        for workers in (0, 3):
            got = ctorch_batches(mode, n, batch, shuffle, seed, drop, workers, epochs)
            compare(f"{mode} n={n} batch={batch} seed={seed} workers={workers}", got, ref)
    # torch's own DataLoader workers (processes) replay the same batches.
    mode, n, batch, shuffle, seed, drop, epochs = configs[0]
    compare("gray, torch with 2 workers", torch_batches(mode, n, batch, shuffle, seed, drop, epochs, 2, T is not None),
            ctorch_batches(mode, n, batch, shuffle, seed, drop, 2, epochs))
    tv = "torchvision classes and hand-written" if T is not None else "hand-written (torchvision not installed)"
    print(f"torch {torch.__version__}, {tv}: {checks} batches compared, {failures} failures")
    return 1 if failures or checks == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
