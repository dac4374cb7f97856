#!/usr/bin/env python3
"""A small ResNet on Fashion-MNIST in Python PyTorch: the twin of examples/resnet.c.

Same network (stem conv3x3-BN-ReLU, three basic blocks W, 2W, 4W with
strides 1, 2, 2, global average pool, linear), initialisation (PyTorch's
layer defaults drawn in the same order from the same seed), data order
(randperm seeded with (seed * 1000003 + epoch) mod 2^64), optimiser (SGD lr
0.05, momentum 0.9, weight decay 5e-4), options and output format.

  python examples/resnet.py [--epochs N] [--steps K] [--width W] [--batch B]
                            [--seed S] [--threads T] [--data DIR]
                            [--test-images N] [--save PATH] [--device cpu|cuda[:N]]
                            [--amp none|bf16|fp16]
The last line of output is
  test_accuracy=<fraction> images_per_s=<number>
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lenet5 import autocast, epoch_seed, load_split  # noqa: E402  (same data, same order)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.proj is None else self.proj(x)))


class ResNet(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.stem = nn.Conv2d(1, width, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(width)
        self.layer1 = Block(width, width, 1)
        self.layer2 = Block(width, 2 * width, 2)
        self.layer3 = Block(2 * width, 4 * width, 2)
        self.fc = nn.Linear(4 * width, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.stem(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def evaluate(model, x, y, limit, batch, device, amp):
    n = x.shape[0] if limit <= 0 else min(limit, x.shape[0])
    correct = 0
    model.eval()
    with torch.inference_mode(), autocast(device, amp):
        for i in range(0, n, batch):
            logits = model(x[i:min(i + batch, n)])
            correct += int((logits.argmax(1) == y[i:min(i + batch, n)]).sum())
    model.train()
    return correct / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--test-images", type=int, default=0)
    ap.add_argument("--save", default="", help="where to write the trained state_dict ('' = do not save)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--amp", default="none", choices=["none", "bf16", "fp16"])
    args = ap.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit(f"resnet.py: --device {args.device}: CUDA is not available")
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    train_images, train_y = load_split(args.data, True)
    test_images, test_y = load_split(args.data, False)
    xf = train_images.float() / 255.0
    mean, std = xf.mean(), xf.std()
    train_x = ((train_images.float() / 255.0 - mean) / std).reshape(-1, 1, 28, 28).to(device)
    test_x = ((test_images.float() / 255.0 - mean) / std).reshape(-1, 1, 28, 28).to(device)
    train_y, test_y = train_y.to(device), test_y.to(device)
    n = train_x.shape[0]
    nbatches = (n + args.batch - 1) // args.batch
    if 0 < args.steps < nbatches:
        nbatches = args.steps

    torch.manual_seed(args.seed)
    model = ResNet(args.width).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    scaler = None
    if args.amp == "fp16":
        scaler = (torch.amp.GradScaler(device.type) if hasattr(torch.amp, "GradScaler")
                  else torch.cuda.amp.GradScaler())
    nparams = len(list(model.parameters()))
    print(f"ResNet (width {args.width}, {nparams} parameter tensors) on Fashion-MNIST ({n} images), "
          f"{args.epochs} epoch(s), batch {args.batch}, {torch.get_num_threads()} thread(s), seed {args.seed}, "
          f"{device.type}, {'fp32' if args.amp == 'none' else args.amp} [python]", flush=True)
    acc = 0.0
    train_time, images_seen = 0.0, 0
    for epoch in range(args.epochs):
        gen = torch.Generator().manual_seed(epoch_seed(args.seed, epoch))
        perm = torch.randperm(n, generator=gen).to(device)
        sync(device)
        t0 = time.perf_counter()
        seen = 0
        for b in range(nbatches):
            idx = perm[b * args.batch:(b + 1) * args.batch]
            x, y = train_x.index_select(0, idx), train_y.index_select(0, idx)
            with autocast(device, args.amp):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            seen += y.shape[0]
            if (b + 1) % 20 == 0 or b + 1 == nbatches:
                print(f"epoch {epoch + 1}/{args.epochs} batch {b + 1}/{nbatches} loss {loss.item():.4f} "
                      f"{seen / (time.perf_counter() - t0):.0f} img/s", flush=True)
        sync(device)
        dt = time.perf_counter() - t0
        train_time += dt
        images_seen += seen
        acc = evaluate(model, test_x, test_y, args.test_images, args.batch, device, args.amp)
        print(f"epoch {epoch + 1}/{args.epochs} test_acc={acc:.4f} images_per_s={seen / dt:.1f} time={dt:.1f}s",
              flush=True)
    if args.save:
        torch.save(model.to("cpu").state_dict(), args.save)
        print(f"saved weights to {args.save}")
    print(f"test_accuracy={acc:.4f} images_per_s={images_seen / train_time:.1f}")


if __name__ == "__main__":
    main()
