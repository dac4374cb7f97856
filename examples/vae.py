#!/usr/bin/env python3
"""A variational autoencoder on Fashion-MNIST in Python PyTorch: the twin of examples/vae.c.

The classic PyTorch example (pytorch/examples, vae/main.py): 784-400-(20, 20)
encoder, z = mu + eps * exp(0.5 * logvar), 20-400-784 sigmoid decoder, loss
BCE(sum) + KL, Adam lr 1e-3, batch 128. Same weights from the same seed as
the C program, same batches (lenet5.py's data order), same eps draws, same
output; the test loss (z = mu) and the 8x8 grid of samples (z from a
generator seeded with --seed) as vae.c makes them.

  python3 examples/vae.py [--steps K] [--batch B] [--seed S] [--threads T] [--data DIR]
                          [--test-images N] [--samples PNG] [--logdir DIR] [--save PATH] [--load PATH]
--load PATH starts from a state_dict (e.g. the one vae.c saved); with --steps 0
the program only evaluates it and draws the samples. The last line is
  initial_loss=<nats/image> final_loss=<nats/image> test_loss=<nats/image> images_per_s=<number>
"""
import argparse
import os
import struct
import sys
import time
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lenet5 import epoch_seed, load_split  # noqa: E402  (same data, same order)

LATENT, GRID = 20, 8


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 400)
        self.fc21 = nn.Linear(400, LATENT)
        self.fc22 = nn.Linear(400, LATENT)
        self.fc3 = nn.Linear(LATENT, 400)
        self.fc4 = nn.Linear(400, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x)
        return self.decode(self.reparameterize(mu, logvar)), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def sample_grid(model, seed):
    """uint8 [240, 240]: 64 decoded draws in an 8x8 grid of white-framed 28x28 tiles."""
    with torch.inference_mode():
        z = torch.randn(GRID * GRID, LATENT, generator=torch.Generator().manual_seed(seed))
        x = F.pad(model.decode(z).reshape(GRID * GRID, 28, 28), (1, 1, 1, 1), value=1.0)
        x = x.reshape(GRID, GRID, 30, 30).permute(0, 2, 1, 3).reshape(GRID * 30, GRID * 30)
        return (x * 255.0 + 0.5).clamp(0, 255).to(torch.uint8)  # torchvision's save_image rounding


def write_png(path, grey):
    """An 8-bit grey PNG of a uint8 [H, W] tensor (filter 0 rows, zlib), as vae.c's png_write."""
    h, w = grey.shape
    rows = b"".join(b"\0" + bytes(grey[y].tolist()) for y in range(h))
    chunk = lambda kind, data: (struct.pack(">I", len(data)) + kind + data  # noqa: E731
                                + struct.pack(">I", zlib.crc32(kind + data)))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=4690)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--test-images", type=int, default=0)
    ap.add_argument("--samples", default="vae_samples.png")
    ap.add_argument("--logdir", default="", help="TensorBoard (needs the tensorboard package)")
    ap.add_argument("--save", default="")
    ap.add_argument("--load", default="")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    train_x = (load_split(a.data, True)[0].float() / 255.0).reshape(-1, 784)
    test_x = (load_split(a.data, False)[0].float() / 255.0).reshape(-1, 784)
    if a.test_images > 0:
        test_x = test_x[:a.test_images]
    n = train_x.shape[0]
    nbatches = (n + a.batch - 1) // a.batch

    torch.manual_seed(a.seed)
    model = VAE()
    if a.load:
        model.load_state_dict(torch.load(a.load))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tb = None
    if a.logdir:
        from torch.utils.tensorboard import SummaryWriter
        tb = SummaryWriter(a.logdir)
    print(f"VAE (784-400-{LATENT}) on Fashion-MNIST, {a.steps} steps, batch {a.batch}, "
          f"{torch.get_num_threads()} thread(s), seed {a.seed} [python]", flush=True)
    first = last = 0.0
    t0 = time.perf_counter()
    for step in range(a.steps):
        epoch, b = divmod(step, nbatches)
        if b == 0:  # a new epoch: its permutation, as ctorch's data loader
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(epoch_seed(a.seed, epoch)))
        x = train_x.index_select(0, perm[b * a.batch:(b + 1) * a.batch])
        opt.zero_grad(set_to_none=True)
        recon, mu, logvar = model(x)
        loss = loss_function(recon, x, mu, logvar)
        loss.backward()
        opt.step()
        last = loss.item() / x.shape[0]
        if step == 0:
            first = last
        if step == 0 or (step + 1) % 50 == 0 or step + 1 == a.steps:
            print(f"step {step + 1}/{a.steps} loss {last:.6f}", flush=True)
        if tb and (step + 1) % 10 == 0:
            tb.add_scalar("train/loss", last, step + 1)
    dt = time.perf_counter() - t0

    with torch.inference_mode():
        mu, logvar = model.encode(test_x)
        test_loss = loss_function(model.decode(mu), test_x, mu, logvar).item() / test_x.shape[0]
    print(f"test loss {test_loss:.6f} ({test_x.shape[0]} images, z = mu)")
    grid = sample_grid(model, a.seed)
    if a.samples:
        write_png(a.samples, grid)
        print(f"saved samples to {a.samples}")
    if tb:
        tb.add_image("samples", grid.unsqueeze(0), a.steps)
        tb.add_scalar("test/loss", test_loss, a.steps)
        tb.close()
    if a.save:
        torch.save(model.state_dict(), a.save)
        print(f"saved weights to {a.save}")
    print(f"initial_loss={first:.9g} final_loss={last:.9g} test_loss={test_loss:.9g} "
          f"images_per_s={(a.steps * a.batch / dt) if a.steps else 0.0:.1f}")


if __name__ == "__main__":
    main()
