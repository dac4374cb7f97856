#!/usr/bin/env python3
"""A small Transformer encoder classifier in Python PyTorch: the twin of examples/transformer.c.

Fashion-MNIST images as sequences of 28 rows: Linear(28, 64) plus a learned
position embedding, two TransformerEncoderLayer(64, 4, 128, dropout 0.1), the
mean over the rows, Linear(64, 10); AdamW lr 1e-3, batch 64. Same weights
from the same seed as the C program, same batches (lenet5.py's data order),
same dropout masks, same output.

  python3 examples/transformer.py [--steps K] [--batch B] [--seed S] [--threads T]
                                  [--data DIR] [--test-images N] [--save PATH] [--load PATH]
--load PATH starts from a state_dict (e.g. the one transformer.c saved),
loaded strictly; with --steps 0 the program only evaluates it. The last line is
  initial_loss=<nats> final_loss=<nats> test_accuracy=<fraction> images_per_s=<number>
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lenet5 import epoch_seed, load_split  # noqa: E402  (same data, same order)

D_MODEL, LAYERS, EVAL_BATCH = 64, 2, 500


class RowTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, 28, D_MODEL) * 0.02)
        self.embed = nn.Linear(28, D_MODEL)
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(D_MODEL, 4, dim_feedforward=128, batch_first=True)
                                     for _ in range(LAYERS)])
        self.head = nn.Linear(D_MODEL, 10)

    def forward(self, x):
        x = self.embed(x.flatten(1, 2)) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.head(x.mean(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--test-images", type=int, default=0)
    ap.add_argument("--save", default="")
    ap.add_argument("--load", default="")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    train_images, train_y = load_split(a.data, True)
    test_images, test_y = load_split(a.data, False)
    xf = train_images.float() / 255.0
    mean, std = xf.mean(), xf.std()
    train_x = ((train_images.float() / 255.0 - mean) / std).reshape(-1, 1, 28, 28)
    test_x = ((test_images.float() / 255.0 - mean) / std).reshape(-1, 1, 28, 28)
    if a.test_images > 0:
        test_x, test_y = test_x[:a.test_images], test_y[:a.test_images]
    n = train_x.shape[0]
    nbatches = (n + a.batch - 1) // a.batch

    torch.manual_seed(a.seed)
    model = RowTransformer()
    if a.load:
        model.load_state_dict(torch.load(a.load))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    print(f"Transformer encoder ({LAYERS} layers, d_model {D_MODEL}) on Fashion-MNIST rows, {a.steps} steps, "
          f"batch {a.batch}, {torch.get_num_threads()} thread(s), seed {a.seed} [python]", flush=True)
    first = last = 0.0
    t0 = time.perf_counter()
    for step in range(a.steps):
        epoch, b = divmod(step, nbatches)
        if b == 0:  # a new epoch: its permutation, as ctorch's data loader
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(epoch_seed(a.seed, epoch)))
        idx = perm[b * a.batch:(b + 1) * a.batch]
        x, y = train_x.index_select(0, idx), train_y.index_select(0, idx)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        last = loss.item()
        if step == 0:
            first = last
        if step == 0 or (step + 1) % 50 == 0 or step + 1 == a.steps:
            print(f"step {step + 1}/{a.steps} loss {last:.6f}", flush=True)
    dt = time.perf_counter() - t0

    model.eval()  # dropout off
    correct = in5 = 0
    with torch.inference_mode():
        for i in range(0, test_x.shape[0], EVAL_BATCH):
            logits, yb = model(test_x[i:i + EVAL_BATCH]), test_y[i:i + EVAL_BATCH]
            correct += int((logits.argmax(1) == yb).sum())
            in5 += int((logits.topk(5, 1).indices == yb.unsqueeze(1)).sum())
    acc = correct / test_x.shape[0]
    print(f"test accuracy {acc:.4f} ({test_x.shape[0]} images), top-5 {in5 / test_x.shape[0]:.4f}")
    if a.save:
        torch.save(model.state_dict(), a.save)
        print(f"saved weights to {a.save}")
    print(f"initial_loss={first:.6f} final_loss={last:.6f} test_accuracy={acc:.4f} "
          f"images_per_s={a.steps * a.batch / max(dt, 1e-9):.1f}")


if __name__ == "__main__":
    main()
