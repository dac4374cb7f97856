#!/usr/bin/env python3
"""LeNet-5 on Fashion-MNIST in Python PyTorch: the twin of examples/lenet5.c.

Same network, initialisation (PyTorch's layer defaults drawn in the same
order from the same seed), data order (randperm from a generator seeded with
(seed * 1000003 + epoch) mod 2^64, as ctorch_data_epoch_seed), hyper-parameters
(AdamW lr 1e-3, weight decay 0.01, batch 256) and output format, so accuracy
and throughput can be compared side by side. Run it with the Python whose
torch is the libtorch ctorch was built against (the build's
CTORCH_TORCH_PYTHON: Debian's python3 with python3-torch by default).

  python3 examples/lenet5.py [--epochs N] [--data DIR] [--seed S]
                                      [--threads T] [--save PATH] [--load PATH]
                                      [--steps K] [--device cpu|cuda[:N]]
                                      [--amp none|bf16|fp16]

--load PATH loads a state_dict first (e.g. the weights lenet5.c saved);
with --epochs 0 it only evaluates them. The last line of output is
  test_accuracy=<fraction> top5=<fraction> images_per_s=<number>
"""
import argparse
import contextlib
import gzip
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
EVAL_BATCH = 1000

IDX_TYPES = {0x08: torch.uint8, 0x09: torch.int8, 0x0B: torch.int16, 0x0C: torch.int32,
             0x0D: torch.float32, 0x0E: torch.float64}


def read_idx(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    zero, code, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or code not in IDX_TYPES:
        raise ValueError(f"{path}: not an IDX file")
    dims = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    dtype = IDX_TYPES[code]
    t = torch.frombuffer(bytearray(raw[4 + 4 * ndim:]), dtype=dtype)
    width = torch.empty((), dtype=dtype).element_size()
    if width > 1 and sys.byteorder == "little":  # IDX is big-endian
        t = t.view(torch.uint8).view(-1, width).flip(1).contiguous().view(dtype)
    return t.reshape(dims)


def find(directory, base):
    p = os.path.join(directory, base)
    return p + ".gz" if os.path.exists(p + ".gz") else p


def load_split(directory, train):
    prefix = "train" if train else "t10k"
    images = read_idx(find(directory, f"{prefix}-images-idx3-ubyte"))
    labels = read_idx(find(directory, f"{prefix}-labels-idx1-ubyte")).long()
    return images, labels


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(256, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def epoch_seed(seed, epoch):
    return (seed * 1000003 + epoch) % (1 << 64)


def autocast(device, amp):
    """torch.autocast for --amp (a no-op region for none), as lenet5.c's amp_enter."""
    if amp not in ("bf16", "fp16"):
        return contextlib.nullcontext()  # (1.13's CPU autocast refuses float32 even when disabled)
    return torch.autocast(device.type, dtype=torch.bfloat16 if amp == "bf16" else torch.float16)


def evaluate(model, x, y, device=torch.device("cpu"), amp="none"):
    correct = in5 = 0
    with torch.inference_mode(), autocast(device, amp):
        for i in range(0, x.shape[0], EVAL_BATCH):
            logits = model(x[i:i + EVAL_BATCH])
            yb = y[i:i + EVAL_BATCH]
            correct += int((logits.argmax(1) == yb).sum())
            in5 += int((logits.topk(5, 1).indices == yb.unsqueeze(1)).sum())
    return correct / x.shape[0], in5 / x.shape[0]


def progress(tty, epoch, epochs, batch, nbatches, loss, ips):
    if tty:
        width = 30
        filled = width * batch // nbatches
        bar = "".join("=" if i < filled else (">" if i == filled else " ") for i in range(width))
        print(f"\repoch {epoch}/{epochs} [{bar}] {batch}/{nbatches} loss {loss:.4f} {ips:.0f} img/s",
              end="", flush=True)
    elif batch % 50 == 0 or batch == nbatches:
        print(f"epoch {epoch}/{epochs} batch {batch}/{nbatches} loss {loss:.4f} {ips:.0f} img/s", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--save", default="lenet5_py.pt", help="'' = do not save")
    ap.add_argument("--load", default="", help="state_dict to start from (e.g. lenet5.c's lenet5.pt)")
    ap.add_argument("--steps", type=int, default=0, help="stop each epoch after K batches (default all)")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--amp", default="none", choices=["none", "bf16", "fp16"])
    args = ap.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit(f"lenet5.py: --device {args.device}: CUDA is not available")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    tty = sys.stdout.isatty()

    train_images, train_labels = load_split(args.data, True)
    test_images, test_labels = load_split(args.data, False)
    xf = train_images.float() / 255.0
    mean, std = xf.mean(), xf.std()
    del xf
    train_x = ((train_images.float() / 255.0 - mean) / std).reshape(-1, 1, 28, 28)
    test_x = ((test_images.float() / 255.0 - mean) / std).reshape(-1, 1, 28, 28)
    train_x, train_labels = train_x.to(device), train_labels.to(device)
    test_x, test_labels = test_x.to(device), test_labels.to(device)
    n = train_x.shape[0]
    nbatches = (n + BATCH - 1) // BATCH
    if 0 < args.steps < nbatches:
        nbatches = args.steps

    torch.manual_seed(args.seed)
    model = LeNet5()
    if args.load:
        model.load_state_dict(torch.load(args.load))
    model.to(device)  # initialised on the CPU, as lenet5.c does
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # betas (0.9, 0.999), weight decay 0.01
    scaler = None
    if args.amp == "fp16":
        scaler = (torch.amp.GradScaler(device.type) if hasattr(torch.amp, "GradScaler")
                  else torch.cuda.amp.GradScaler())
    where = "cpu" if device.type == "cpu" else f"cuda:{device.index or 0}"
    tag = f" [{where}, {'fp32' if args.amp == 'none' else args.amp}]" if where != "cpu" or args.amp != "none" else ""

    print(f"LeNet-5 on Fashion-MNIST ({n} training images), {args.epochs} epoch(s), batch {BATCH}, "
          f"{torch.get_num_threads()} thread(s), seed {args.seed}{tag} [python]", flush=True)
    acc, top5 = evaluate(model, test_x, test_labels, device, args.amp)
    train_time = 0.0
    images_seen = 0
    for epoch in range(args.epochs):
        gen = torch.Generator().manual_seed(epoch_seed(args.seed, epoch))
        perm = torch.randperm(n, generator=gen).to(device)
        t0 = time.perf_counter()
        loss_sum = 0.0
        correct = seen = 0
        for b in range(nbatches):
            idx = perm[b * BATCH:(b + 1) * BATCH]
            x = train_x.index_select(0, idx)
            y = train_labels.index_select(0, idx)
            with autocast(device, args.amp):
                logits = model(x)
                loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            with torch.no_grad():
                correct += int((logits.argmax(1) == y).sum())
            loss_sum += loss.item() * y.shape[0]
            seen += y.shape[0]
            progress(tty, epoch + 1, args.epochs, b + 1, nbatches, loss_sum / seen,
                     seen / (time.perf_counter() - t0))
        dt = time.perf_counter() - t0
        train_time += dt
        images_seen += seen
        if tty:
            print()
        acc, top5 = evaluate(model, test_x, test_labels, device, args.amp)
        print(f"epoch {epoch + 1}/{args.epochs} loss={loss_sum / seen:.4f} train_acc={correct / seen:.4f} "
              f"test_acc={acc:.4f} top5={top5:.4f} images_per_s={seen / dt:.1f} time={dt:.1f}s", flush=True)

    if args.save and args.epochs > 0:
        torch.save(model.state_dict(), args.save)
        print(f"saved weights to {args.save}")
    ips = images_seen / train_time if train_time > 0 else 0.0
    print(f"test_accuracy={acc:.4f} top5={top5:.4f} images_per_s={ips:.1f}")


if __name__ == "__main__":
    main()
